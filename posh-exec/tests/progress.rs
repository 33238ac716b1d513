//! The progress line: on a terminal (`script`, util-linux, gives the run one) while a remote job
//! runs for more than a second, erased before anything else is written there and at the end,
//! and nothing of it anywhere else: with `--progress never`, `TERM=dumb` or stderr redirected,
//! the terminal and the files get bash's bytes.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

/// What the line's drawing and erasing are made of (see the runtime's `progress`).
const DRAW: &[u8] = b"\x1bD\x1bM\x1b7\x1b[B\r\x1b[2K";
const RESTORE: &[u8] = b"\x1b8";
const ERASE: &[u8] = b"\x1b7\x1b[B\r\x1b[2K\x1b8";

/// A terminal's transcript, the progress line taken apart from everything else written there.
#[derive(Debug, Default)]
struct Transcript {
    /// Each text the line showed, in order.
    lines: Vec<String>,
    /// The rest: what the terminal would show without the line.
    rest: Vec<u8>,
    /// Of the rest, what was written while the line showed (it would have been garbled).
    written_while_shown: Vec<u8>,
    /// The line was still there at the end.
    shown_at_end: bool,
}

fn take_apart(raw: &[u8]) -> Transcript {
    let mut transcript = Transcript::default();
    let mut shown = false;
    let mut at = 0;
    while at < raw.len() {
        let rest = &raw[at..];
        if let Some(text) = rest.strip_prefix(DRAW) {
            let end = text.windows(RESTORE.len()).position(|w| w == RESTORE).expect("a drawn line ends");
            transcript.lines.push(String::from_utf8_lossy(&text[..end]).into_owned());
            at += DRAW.len() + end + RESTORE.len();
            shown = true;
        } else if rest.starts_with(ERASE) {
            at += ERASE.len();
            shown = false;
        } else {
            if shown {
                transcript.written_while_shown.push(raw[at]);
            }
            transcript.rest.push(raw[at]);
            at += 1;
        }
    }
    transcript.shown_at_end = shown;
    transcript
}

/// A directory with `data/` on an embedded mount, and a script whose remote awk prints a line
/// every 0.35 s for about 1.4 s after a line left unfinished.
fn site() -> tempfile::TempDir {
    site_pausing("0.35")
}

/// [`site`] with awk pausing `seconds` before each of its four lines.
fn site_pausing(seconds: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("data")).expect("mkdir");
    let big: String = (0..200_000).map(|i| format!("line {i:09}\n")).collect();
    std::fs::write(dir.path().join("data/big"), big).expect("write");
    std::fs::write(dir.path().join("posh.toml"), "[[mount]]\npath = \"data\"\nproxy = \"embedded\"\n").expect("write");
    let script = "printf 'unfinished '\n\
                  awk 'NR % 50000 == 0 { system(\"sleep PAUSE\"); print NR }' data/big\n\
                  echo \"done $?\"\n";
    std::fs::write(dir.path().join("s.sh"), script.replace("PAUSE", seconds)).expect("write");
    dir
}

/// `command` (a shell command line) on a terminal of its own, with `TERM`; what the terminal
/// got.
fn on_terminal(dir: &Path, command: &str, term: &str) -> Vec<u8> {
    let out = common::isolated("script", dir)
        .env("TERM", term)
        .args(["-qec", command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    assert!(out.status.success(), "{command}: {out:?}");
    out.stdout
}

fn posh_exec() -> &'static str {
    env!("CARGO_BIN_EXE_posh-exec")
}

#[test]
fn on_a_terminal_the_line_shows_while_the_job_runs_and_leaves_what_bash_leaves() {
    let dir = site();
    let bash = on_terminal(dir.path(), "bash s.sh", "xterm");
    assert_eq!(String::from_utf8_lossy(&bash), "unfinished 50000\r\n100000\r\n150000\r\n200000\r\ndone 0\r\n");
    let raw = on_terminal(dir.path(), &format!("'{}' s.sh", posh_exec()), "xterm");
    let transcript = take_apart(&raw);
    let read = transcript.lines.iter().filter(|l| l.contains(" posh 0:0") && l.contains(" data: read "));
    assert!(read.clone().any(|l| l.contains(" MiB")), "what the proxy read, as it goes: {transcript:?}");
    assert!(read.count() >= 2, "redrawn: {transcript:?}");
    assert_eq!(String::from_utf8_lossy(&transcript.rest), String::from_utf8_lossy(&bash));
    assert_eq!(transcript.written_while_shown, b"", "erased before each write: {transcript:?}");
    assert!(!transcript.shown_at_end, "erased at the end");

    // Asked not to draw, or on a terminal that cannot move its cursor: bash's bytes alone.
    let never = on_terminal(dir.path(), &format!("'{}' --progress never s.sh", posh_exec()), "xterm");
    assert_eq!(String::from_utf8_lossy(&never), String::from_utf8_lossy(&bash));
    let dumb = on_terminal(dir.path(), &format!("'{}' s.sh", posh_exec()), "dumb");
    assert_eq!(String::from_utf8_lossy(&dumb), String::from_utf8_lossy(&bash));
}

/// With stderr (or both) in a file, the terminal and the file get what bash gives them;
/// `--stats /dev/stderr` on the terminal is written whole, between drawings; `always` draws
/// wherever stderr goes, as asked.
#[test]
fn a_redirected_stderr_and_the_statistics_get_nothing_of_the_line() {
    let dir = site();
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap_or_default();
    for redirection in ["2> err.log", "> out.log 2>&1"] {
        let bash = on_terminal(dir.path(), &format!("bash s.sh {redirection}"), "xterm");
        let bash_files = (read("err.log"), read("out.log"));
        let posh = on_terminal(dir.path(), &format!("'{}' s.sh {redirection}", posh_exec()), "xterm");
        assert_eq!(String::from_utf8_lossy(&posh), String::from_utf8_lossy(&bash), "{redirection}");
        assert_eq!((read("err.log"), read("out.log")), bash_files, "{redirection}");
    }

    let bash = on_terminal(dir.path(), "bash s.sh", "xterm");
    let raw = on_terminal(dir.path(), &format!("'{}' --stats /dev/stderr s.sh", posh_exec()), "xterm");
    let transcript = take_apart(&raw);
    assert!(!transcript.lines.is_empty() && !transcript.shown_at_end, "{transcript:?}");
    assert_eq!(transcript.written_while_shown, b"", "{transcript:?}");
    let text = String::from_utf8_lossy(&transcript.rest).into_owned();
    let (stats, rest): (Vec<&str>, Vec<&str>) = text.split_inclusive('\n').partition(|l| l.starts_with('{'));
    assert_eq!(rest.concat(), String::from_utf8_lossy(&bash));
    let record: serde_json::Value = serde_json::from_str(stats.concat().trim_end()).expect("one whole JSON line");
    assert_eq!(record["commands"][0]["location"], "data", "{record}");

    on_terminal(dir.path(), &format!("'{}' --progress always s.sh 2> err.log", posh_exec()), "dumb");
    let drawn = take_apart(&read("err.log"));
    assert!(drawn.lines.iter().any(|l| l.contains(" data: read ")) && !drawn.shown_at_end, "{drawn:?}");
}

/// Ctrl-C while the line shows: bash ends as it would, and the line is gone from the terminal.
#[test]
fn ctrl_c_erases_the_line() {
    // Long enough that Ctrl-C comes while the job runs, however loaded the machine.
    let dir = site_pausing("1.5");
    let mut child = common::isolated("script", dir.path())
        .env("TERM", "xterm")
        .args(["-qec", &format!("'{}' s.sh", posh_exec()), "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut buf) {
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen.lock().unwrap().windows(DRAW.len()).any(|w| w == DRAW) {
        assert!(Instant::now() < deadline, "no line drawn: {:?}", String::from_utf8_lossy(&seen.lock().unwrap()));
        std::thread::sleep(Duration::from_millis(20));
    }
    // The terminal's interrupt character: SIGINT to its foreground job.
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"\x03").expect("write");
    let status = child.wait().expect("script ends");
    drop(stdin);
    reader.join().expect("read");
    assert_eq!(status.code(), Some(130), "bash ended by SIGINT");
    let transcript = take_apart(&seen.lock().unwrap());
    assert!(!transcript.shown_at_end, "{transcript:?}");
    let text = String::from_utf8_lossy(&transcript.rest);
    assert!(text.starts_with("unfinished ") && !text.contains("done"), "{text:?}");
}

/// A tmux server of its own for one test, killed when dropped.
struct Tmux {
    dir: std::path::PathBuf,
    socket: String,
}

impl Tmux {
    fn new(dir: &Path, name: &str) -> Tmux {
        Tmux { dir: dir.to_path_buf(), socket: format!("posh-progress-{}-{name}", std::process::id()) }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        common::isolated("tmux", &self.dir)
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Runs `command` after enough lines to fill the screen (so the line's room is made by
    /// scrolling), until it says END; returns the screen then, and whether `midway` showed on
    /// it before.
    fn screen_after(&self, command: &str, midway: &str) -> (String, bool) {
        let shell = format!("seq 1 30; {command}; echo END; sleep 60");
        let started = self.run(&["new-session", "-d", "-x", "100", "-y", "12", &shell]);
        assert!(started.status.success(), "{started:?}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = false;
        loop {
            let screen = String::from_utf8_lossy(&self.run(&["capture-pane", "-p"]).stdout).into_owned();
            seen |= screen.contains(midway);
            if screen.contains("END") {
                return (screen, seen);
            }
            assert!(Instant::now() < deadline, "{command} did not end: {screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// On a terminal emulator (tmux), the line shows while the job runs, and the screen after the
/// run is the one bash leaves: the unfinished line kept, every line in its place, nothing of the
/// line left.
#[test]
fn the_screen_after_the_run_is_the_one_bash_leaves() {
    let dir = site();
    let (bash, _) = Tmux::new(dir.path(), "bash").screen_after("bash s.sh", "");
    assert!(bash.contains("unfinished 50000\n100000\n"), "{bash}");
    let posh = format!("'{}' s.sh", posh_exec());
    let (screen, shown) = Tmux::new(dir.path(), "posh").screen_after(&posh, " data: read ");
    assert!(shown, "the line showed while the job ran");
    assert_eq!(screen, bash);
}
