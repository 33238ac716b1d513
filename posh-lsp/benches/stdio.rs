//! The language server as an editor meets it: the real binary, driven through the protocol over
//! its standard input and output, on varied 5,000-line scripts (`common::varied_script`: no two
//! blocks alike, so a keystroke's chunk is never found in the cache by chance). First opening:
//! each of `POSH_BENCH_OPENS` (5) scripts of other seeds opened in a server of its own, timed
//! from `didOpen` to the whole file's hints read, with the server's memory then. Then one script
//! is edited one character at a time in its pipelines (a `DEBUG` becomes `DEBUGx`, then back),
//! each edit followed at once by the request an editor sends for the screen it shows (50 lines
//! around the edit); every tenth edit also asks for the whole file. Times are from sending the
//! edit to the whole answer read (parsed as JSON, as a client would). Then memory over many
//! keystrokes and after closing, and the time of one pipeline of growing length.
//!
//! Targets (issues 15 and 38): one screen under 20 ms median and 50 ms p95, the whole file under
//! 100 ms, opening under 100 ms, time linear in a pipeline's length.
//!
//! `cargo bench -p posh-lsp --bench stdio` (`POSH_BENCH_KEYSTROKES=20000` for the memory run;
//! `POSH_LSP=path` measures another build of the server, for before-and-after comparisons run
//! interleaved).

#[path = "../tests/common/client.rs"]
mod client;
#[path = "../tests/common/mod.rs"]
mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const SCREEN_LINES: u32 = 50;
const RESOLVED: [&str; 5] = ["tooltip", "textEdits", "label.tooltip", "label.location", "label.command"];

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(name: &str, mut times: Vec<Duration>) {
    if times.is_empty() {
        // `POSH_BENCH_OPENS=0`, or fewer than ten keystrokes: nothing of this kind was timed.
        println!("{name}: not measured (0 runs)");
        return;
    }
    times.sort();
    println!(
        "{name}: median {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} runs)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3,
        times.last().unwrap().as_secs_f64() * 1e3,
        times.len()
    );
}

/// The server's resident memory and its peak, in MB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Replaces `deleted` characters at `at` by `typed`, as document version `version`.
async fn edit(client: &mut client::Client, uri: &str, version: usize, at: (u32, u32), deleted: u32, typed: &str) {
    let (line, character) = at;
    let range = json!({"start": {"line": line, "character": character}, "end": {"line": line, "character": character + deleted}});
    let changes = json!([{"range": range, "text": typed}]);
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
        )
        .await;
}

fn range(start: u32, end: u32) -> Value {
    json!({"start": {"line": start, "character": 0}, "end": {"line": end, "character": 0}})
}

async fn hints(client: &mut client::Client, uri: &str, start: u32, end: u32) -> Vec<Value> {
    let answer = client
        .request("textDocument/inlayHint", json!({"textDocument": {"uri": uri}, "range": range(start, end)}))
        .await;
    match answer {
        Value::Array(hints) => hints,
        _ => Vec::new(),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let keystrokes: usize = std::env::var("POSH_BENCH_KEYSTROKES").ok().and_then(|n| n.parse().ok()).unwrap_or(400);
    let opens: u64 = std::env::var("POSH_BENCH_OPENS").ok().and_then(|n| n.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    // What VS Code declares: hints are refreshed, and their tooltips and links resolved when shown.
    let capabilities = json!({
        "workspace": {"inlayHint": {"refreshSupport": true}},
        "textDocument": {"inlayHint": {"resolveSupport": {"properties": RESOLVED}}},
    });

    // Opening: each script in a server of its own (nothing cached, as when an editor starts).
    let (mut opened, mut resident) = (Vec::new(), Vec::new());
    for seed in 1..=opens {
        let text = common::varied_workspace_on_disk(dir.path(), 5_000, 100 + seed);
        let path = proj.join(format!("open{seed}.sh"));
        std::fs::write(&path, &text).unwrap();
        let (child, mut client) = start(&proj, dir.path(), capabilities.clone()).await;
        let uri = format!("file://{}", path.display());
        let started = Instant::now();
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "shellscript", "version": 0, "text": text}}),
            )
            .await;
        let all = hints(&mut client, &uri, 0, text.lines().count() as u32).await;
        opened.push(started.elapsed());
        let (rss, _) = memory(child.id().unwrap());
        resident.push(rss);
        println!(
            "opened a {}-line script ({} bytes): {} hints in {:.0} ms, {rss:.0} MB",
            text.lines().count(),
            text.len(),
            all.len(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    summary("opening, then the whole file's hints", opened);
    resident.sort_by(f64::total_cmp);
    if let (Some(least), Some(most)) = (resident.first(), resident.last()) {
        println!("memory after opening: {least:.0} to {most:.0} MB");
    }

    let text = common::varied_workspace_on_disk(dir.path(), 5_000, 1);
    let path = proj.join("big.sh");
    std::fs::write(&path, &text).unwrap();
    let (child, mut client) = start(&proj, dir.path(), capabilities).await;
    let pid = child.id().unwrap();
    let uri = format!("file://{}", path.display());
    let lines: Vec<&str> = text.lines().collect();
    println!("a {}-line script, {} bytes", lines.len(), text.len());
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "shellscript", "version": 0, "text": text}}),
        )
        .await;
    let started = Instant::now();
    let all = hints(&mut client, &uri, 0, lines.len() as u32).await;
    println!("opened: {} hints for the whole file in {:.0} ms", all.len(), started.elapsed().as_secs_f64() * 1e3);
    let (rss, _) = memory(pid);
    println!("memory after opening: {rss:.0} MB");

    let edited: Vec<(u32, u32)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((i as u32, (l.find("DEBUG")? + "DEBUG".len()) as u32)))
        .collect();
    let (mut screen, mut whole, mut empty) = (Vec::new(), Vec::new(), 0);
    for k in 0..keystrokes {
        // Typed `x`, then deleted, line after line through the file.
        let (line, character) = edited[(k / 2 * 7) % edited.len()];
        let (typed, deleted) = if k % 2 == 0 { ("x", 0) } else { ("", 1) };
        let started = Instant::now();
        edit(&mut client, &uri, k + 1, (line, character), deleted, typed).await;
        let top = line.saturating_sub(SCREEN_LINES / 2);
        let shown = hints(&mut client, &uri, top, top + SCREEN_LINES).await;
        screen.push(started.elapsed());
        if shown.is_empty() {
            empty += 1;
        }
        if k % 10 == 9 {
            let started = Instant::now();
            hints(&mut client, &uri, 0, lines.len() as u32).await;
            whole.push(started.elapsed());
        }
        if keystrokes > 1_000 && (k + 1) % 5_000 == 0 {
            let (rss, peak) = memory(pid);
            println!("memory after {} keystrokes: {rss:.0} MB (peak {peak:.0} MB)", k + 1);
        }
    }
    summary("one screen after a keystroke", screen);
    summary("the whole file after a keystroke", whole);
    println!("screens answered with no hint: {empty} of {keystrokes}");
    let (rss, peak) = memory(pid);
    println!("memory after {keystrokes} keystrokes: {rss:.0} MB (peak {peak:.0} MB)");
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}})).await;
    // A request after the close, so that the close was handled.
    client.request("shutdown", Value::Null).await;
    let (rss, _) = memory(pid);
    println!("memory after closing it: {rss:.0} MB");

    // One pipeline of growing length, opened as a document of its own.
    let log = dir.path().join("mnt/logs/ray0.log");
    drop(child);
    let (_child, mut client) = start(&proj, dir.path(), json!({})).await;
    // A client that resolves nothing (Neovim's hints, Emacs's posh-hints-mode) gets tooltips and
    // links with every hint.
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "shellscript", "version": 0, "text": text}}),
        )
        .await;
    hints(&mut client, &uri, 0, lines.len() as u32).await;
    let mut whole = Vec::new();
    for k in 0..20 {
        let (line, character) = edited[k * 7 % edited.len()];
        let started = Instant::now();
        edit(&mut client, &uri, k + 1, (line, character), 0, "x").await;
        hints(&mut client, &uri, 0, lines.len() as u32).await;
        whole.push(started.elapsed());
    }
    summary("a keystroke, then the whole file, for a client that resolves nothing", whole);
    for stages in [1_000, 2_000, 4_000, 8_000, 16_000] {
        let text = format!("cat {}{}\n", log.display(), " | grep -v DEBUG".repeat(stages - 1));
        let uri = format!("file://{}/long{stages}.sh", proj.display());
        let started = Instant::now();
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "shellscript", "version": 0, "text": text}}),
            )
            .await;
        let shown = hints(&mut client, &uri, 0, 1).await;
        let took = started.elapsed().as_secs_f64();
        println!(
            "a pipeline of {stages} stages: {} hints in {:.0} ms ({:.1} µs a stage)",
            shown.len(),
            took * 1e3,
            took * 1e6 / stages as f64
        );
    }
}

/// posh-lsp started in `proj` (its user directories under `dir`) and initialized.
async fn start(
    proj: &std::path::Path,
    dir: &std::path::Path,
    capabilities: Value,
) -> (tokio::process::Child, client::Client) {
    let binary = std::env::var_os("POSH_LSP").unwrap_or_else(|| env!("CARGO_BIN_EXE_posh-lsp").into());
    let mut child = tokio::process::Command::new(binary)
        .current_dir(proj)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut client = client::Client::over(child.stdout.take().unwrap(), child.stdin.take().unwrap(), proj);
    let root = format!("file://{}", proj.display());
    client.request("initialize", json!({"processId": null, "rootUri": root, "capabilities": capabilities})).await;
    client.notify("initialized", json!({})).await;
    (child, client)
}
