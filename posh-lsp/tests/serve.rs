//! The binary as editors start it: `posh-lsp`, `posh-lsp serve`, `posh-lsp --stdio` and
//! `posh-lsp serve --stdio` all speak the protocol on standard input and output, and exit
//! cleanly on `shutdown` then `exit`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn frame(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

fn read_message(reader: &mut impl BufRead) -> serde_json::Value {
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn every_way_of_starting_the_server_serves_and_exits() {
    for args in [&[][..], &["serve"], &["--stdio"], &["serve", "--stdio"]] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_posh-lsp"))
            .args(args)
            .current_dir(dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}"#;
        stdin.write_all(frame(initialize).as_bytes()).unwrap();
        let answer = read_message(&mut stdout);
        assert_eq!(answer["result"]["serverInfo"]["name"], "posh-lsp", "{args:?}");
        stdin.write_all(frame(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#).as_bytes()).unwrap();
        stdin.write_all(frame(r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#).as_bytes()).unwrap();
        assert_eq!(read_message(&mut stdout), serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": null}));
        // `exit` with standard input still open: the server ends by itself.
        stdin.write_all(frame(r#"{"jsonrpc":"2.0","method":"exit"}"#).as_bytes()).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                child.kill().unwrap();
                panic!("{args:?}: still running after `exit`");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(status.success(), "{args:?}: {status}");
        drop(stdin);
    }
}
