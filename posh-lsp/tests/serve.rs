//! The binary as editors start it: `posh-lsp`, `posh-lsp serve`, `posh-lsp --stdio` and
//! `posh-lsp serve --stdio` all speak the protocol on standard input and output, and exit
//! cleanly on `shutdown` then `exit`, with standard input still open.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

#[path = "common/client.rs"]
mod client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_of_starting_the_server_serves_and_exits() {
    for args in [&[][..], &["serve"], &["--stdio"], &["serve", "--stdio"]] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_posh-lsp"))
            .args(args)
            .current_dir(dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let mut client = client::Client::over(stdout, stdin, dir.path());
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
