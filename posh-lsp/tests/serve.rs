//! The binary as editors start it: `posh-lsp`, `posh-lsp serve`, `posh-lsp --stdio` and
//! `posh-lsp serve --stdio` all speak the protocol on standard input and output, and exit
//! cleanly on `shutdown` then `exit`, with standard input still open.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

#[path = "common/client.rs"]
mod client;
mod common;

/// posh-lsp started in `dir` with `args` and `env`, and a client on its standard streams; `dir`
/// is its home (`common::home_env_in`) unless `env` says otherwise.
fn serve(dir: &Path, args: &[&str], env: &[(&str, PathBuf)]) -> (tokio::process::Child, client::Client) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_posh-lsp"));
    for name in common::REMOVED {
        command.env_remove(name);
    }
    let mut child = command
        .args(args)
        .current_dir(dir)
        .envs(common::home_env_in(dir))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    (child, client::Client::over(stdout, stdin, dir))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_of_starting_the_server_serves_and_exits() {
    for args in [&[][..], &["serve"], &["--stdio"], &["serve", "--stdio"]] {
        let dir = tempfile::tempdir().unwrap();
        let (mut child, mut client) = serve(dir.path(), args, &[("XDG_CONFIG_HOME", dir.path().into())]);
        let answer =
            client.request("initialize", json!({"processId": null, "rootUri": null, "capabilities": {}})).await;
        assert_eq!(answer["serverInfo"]["name"], "posh-lsp", "{args:?}");
        client.notify("initialized", json!({})).await;
        client.send(json!({"jsonrpc": "2.0", "id": 99, "method": "shutdown"})).await;
        assert_eq!(client.receive().await, json!({"jsonrpc": "2.0", "id": 99, "result": null}));
        client.send(json!({"jsonrpc": "2.0", "method": "exit"})).await;
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .unwrap_or_else(|_| panic!("{args:?}: still running after `exit`"))
            .unwrap();
        assert!(status.success(), "{args:?}: {status}");
    }
}

/// A client that can watch files outside the workspace is asked to watch posh-exec's measured
/// ratios; when a run rewrites them, the hover predicts with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ratios_a_run_measures_reach_the_hover_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("data")).unwrap();
    std::fs::File::create(root.join("data/x.log")).unwrap().set_len(50_000_000).unwrap();
    std::fs::write(root.join("posh.toml"), "[[mount]]\npath = \"data\"\nproxy = \"embedded\"\n").unwrap();
    let env = [("XDG_CONFIG_HOME", root.join("config")), ("XDG_STATE_HOME", root.join("state"))];
    let (_child, mut client) = serve(root, &[], &env);
    let uri = format!("file://{}", root.display());
    let watch = json!({"dynamicRegistration": true, "relativePatternSupport": true});
    let init =
        json!({"processId": null, "rootUri": uri, "capabilities": {"workspace": {"didChangeWatchedFiles": watch}}});
    client.request("initialize", init).await;
    client.notify("initialized", json!({})).await;
    let registration = client.expect("client/registerCapability").await;
    let watchers = &registration["params"]["registrations"][0]["registerOptions"]["watchers"];
    let state = format!("file://{}/state/posh/", root.display());
    let relative = json!({"baseUri": "file://ROOT/state/posh/", "pattern": "ratios.json"});
    assert_eq!(watchers[4]["globPattern"], relative, "{watchers}");

    let script = format!("{uri}/s.sh");
    let text = "grep ERROR data/x.log | sort\n";
    let open = json!({"textDocument": {"uri": script, "languageId": "sh", "version": 1, "text": text}});
    client.notify("textDocument/didOpen", open).await;
    let _ = client.diagnostics("file://ROOT/s.sh", 1).await;
    let hover = || json!({"textDocument": {"uri": script}, "position": {"line": 0, "character": 1}});
    let shown = client.request("textDocument/hover", hover()).await;
    assert!(shown.to_string().contains("Output: 50% of its input, assumed"), "{shown}");

    std::fs::create_dir_all(root.join("state/posh")).unwrap();
    let ratios = r#"{"shapes": {"grep ERROR": {"ratio": 0.02, "runs": 1, "last_run": 1}}}"#;
    std::fs::write(root.join("state/posh/ratios.json"), ratios).unwrap();
    let changed = json!({"changes": [{"uri": format!("{state}ratios.json"), "type": 2}]});
    client.notify("workspace/didChangeWatchedFiles", changed).await;
    let _ = client.diagnostics("file://ROOT/s.sh", 1).await;
    let shown = client.request("textDocument/hover", hover()).await;
    assert!(shown.to_string().contains("Output: 2.0% of its input, measured over 1 run"), "{shown}");
}

/// Malformed messages (cut-short JSON, a byte that is not UTF-8, a lone surrogate, a header
/// without a length) are each answered with a JSON-RPC parse error, with the request's id where
/// it can still be read, and the server goes on; when the client closes its input, the server
/// exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_are_answered_and_a_closed_input_ends_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut client) = serve(dir.path(), &[], &[("XDG_CONFIG_HOME", dir.path().into())]);
    client.request("initialize", json!({"processId": null, "rootUri": null, "capabilities": {}})).await;
    client.notify("initialized", json!({})).await;
    let frame = |body: &[u8]| [format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(), body].concat();
    let malformed: [(&[u8], serde_json::Value); 4] = [
        (br#"{"jsonrpc":"2.0","id":7,"method":"shutdown""#, serde_json::Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"textDocument/hover\",\"params\":\"\xff\"}", json!(8)),
        (br#"{"jsonrpc":"2.0","id":9,"method":"textDocument/hover","params":"\ud800"}"#, json!(9)),
        (b"Content-Type: application/json\r\n\r\n", serde_json::Value::Null),
    ];
    for (bytes, id) in malformed {
        let raw = if bytes.starts_with(b"Content-Type") { bytes.to_vec() } else { frame(bytes) };
        client.send_raw(&raw).await;
        let answer = client.receive().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
    }
    client.send(json!({"jsonrpc": "2.0", "id": 10, "method": "shutdown"})).await;
    assert_eq!(client.receive().await, json!({"jsonrpc": "2.0", "id": 10, "result": null}), "still serving");
    client.close();
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("posh-lsp exits when its input closes")
        .unwrap();
    assert!(status.success(), "{status}");
}

/// An analysis whose file-system budget ran out (here: a budget of 0) answers with what it has,
/// is not kept, and is done again in the background; when that lands the client is asked to
/// fetch the hints again, and gets them whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analysis_short_of_time_is_done_again_and_the_client_asked_to_refresh() {
    let dir = common::workspace();
    let env = [("XDG_CONFIG_HOME", dir.path().into()), ("POSH_LSP_FS_BUDGET_MS", "0".into())];
    let (_child, mut client) = serve(dir.path(), &[], &env);
    let root = format!("file://{}", dir.path().display());
    let capabilities =
        json!({"workspace": {"inlayHint": {"refreshSupport": true}, "codeLens": {"refreshSupport": true}}});
    client.request("initialize", json!({"processId": null, "rootUri": root, "capabilities": capabilities})).await;
    client.notify("initialized", json!({})).await;
    let uri = format!("{root}/late.sh");
    let text = "cat data/ray0.log | grep x | sort > out.txt\n";
    client.open(&uri, "shellscript", text).await;
    let all = json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}});
    let labels = |hints: &serde_json::Value| -> Vec<String> {
        hints
            .as_array()
            .unwrap()
            .iter()
            .map(|h| match &h["label"] {
                serde_json::Value::String(s) => s.clone(),
                parts => parts.as_array().unwrap().iter().map(|p| p["value"].as_str().unwrap()).collect(),
            })
            .collect()
    };
    // Short of the sizes, unless (on a loaded machine) the debounced diagnostics ran out first
    // and their late analysis landed before this request: either way a refresh follows.
    let first = client.request("textDocument/inlayHint", all.clone()).await;
    assert!(!labels(&first).is_empty(), "{first}");
    client.expect("workspace/inlayHint/refresh").await;
    client.expect("workspace/codeLens/refresh").await;
    let again = client.request("textDocument/inlayHint", all).await;
    assert!(labels(&again).contains(&"moves ~250 MB".to_string()), "{again}");
}

/// A client that closes the server's output before its input (tower-lsp panicked when it then
/// had an answer to give): the server exits cleanly, without a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_output_ends_the_server_without_a_panic() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let dir = common::workspace();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_posh-lsp"));
    for name in common::REMOVED {
        command.env_remove(name);
    }
    let mut child = command
        .current_dir(dir.path())
        .envs(common::home_env_in(dir.path()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    let root = format!("file://{}", dir.path().display());
    let script = "cat data/ray0.log | sort\n";
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": null, "rootUri": root, "capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": format!("{root}/a.sh"), "languageId": "sh", "version": 1, "text": script}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": format!("{root}/a.sh")}, "position": {"line": 0, "character": 1}}}),
    ];
    for message in messages {
        let body = message.to_string();
        // The server may be gone already: its input then fails, which is what is tested.
        let _ = stdin.write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await;
    }
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("posh-lsp exits once its output is closed, its input still open")
        .unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).await.unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    drop(stdin);
}
