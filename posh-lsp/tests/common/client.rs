//! A small LSP client for the tests: JSON-RPC with Content-Length framing over any pair of
//! streams, answering the server's own requests with `null`.

#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

pub struct Client {
    write: Box<dyn AsyncWrite + Unpin + Send>,
    read: BufReader<Box<dyn AsyncRead + Unpin + Send>>,
    next_id: i64,
    /// Messages from the server not yet asked for: notifications and its own requests.
    pending: Vec<Value>,
    /// The workspace directory, replaced by `ROOT` in what the tests compare.
    root: String,
}

impl Client {
    /// A server in this process, on one end of an in-memory pipe, reading none of the user's
    /// directories (no user posh.toml, no learned ratios).
    pub async fn start(root: &Path) -> Client {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(theirs);
        let nowhere = posh_lsp::server::UserDirPaths::default();
        tokio::spawn(posh_lsp::server::serve_with(server_read, server_write, Duration::from_millis(20), nowhere));
        let (read, write) = tokio::io::split(ours);
        Client::over(read, write, root)
    }

    /// A server at the other end of these streams (a child process's standard output and input).
    pub fn over(
        read: impl AsyncRead + Unpin + Send + 'static,
        write: impl AsyncWrite + Unpin + Send + 'static,
        root: &Path,
    ) -> Client {
        Client {
            write: Box::new(write),
            read: BufReader::new(Box::new(read)),
            next_id: 0,
            pending: Vec::new(),
            root: root.display().to_string(),
        }
    }

    /// Bytes as they are, framing included.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.write.write_all(bytes).await.unwrap();
    }

    /// Closes the server's input (dropped: a pipe's shutdown does not close it).
    pub fn close(&mut self) {
        self.write = Box::new(tokio::io::sink());
    }

    pub async fn send(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.write.write_all(frame.as_bytes()).await.unwrap();
    }

    pub async fn receive(&mut self) -> Value {
        let read = async {
            let mut length = 0;
            loop {
                let mut line = String::new();
                self.read.read_line(&mut line).await.unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(n) = line.strip_prefix("Content-Length: ") {
                    length = n.parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            self.read.read_exact(&mut body).await.unwrap();
            String::from_utf8(body).unwrap()
        };
        let body = tokio::time::timeout(Duration::from_secs(20), read).await.expect("the server answers");
        serde_json::from_str(&body.replace(&self.root, "ROOT")).unwrap()
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let mut message = self.receive().await;
            if message.get("method").is_none() && message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                // Taken, not copied: an opening's answer holds thousands of hints, and the
                // benchmarks time this client as an editor's.
                return message["result"].take();
            }
            self.answer_if_request(&message).await;
            self.pending.push(message);
        }
    }

    /// Answers a request from the server (registrations, refreshes) with `null`.
    pub async fn answer_if_request(&mut self, message: &Value) {
        if message.get("method").is_some() && message.get("id").is_some() {
            self.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": null})).await;
        }
    }

    /// `textDocument/didOpen` of `text` as version 1.
    pub async fn open(&mut self, uri: &str, language_id: &str, text: &str) {
        let document = json!({"uri": uri, "languageId": language_id, "version": 1, "text": text});
        self.notify("textDocument/didOpen", json!({"textDocument": document})).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// The next message from the server with this method (notification or request).
    pub async fn expect(&mut self, method: &str) -> Value {
        if let Some(i) = self.pending.iter().position(|m| m["method"] == method) {
            return self.pending.remove(i);
        }
        loop {
            let message = self.receive().await;
            self.answer_if_request(&message).await;
            if message["method"] == method {
                return message;
            }
            self.pending.push(message);
        }
    }

    /// Diagnostics published for `uri` at `version`.
    pub async fn diagnostics(&mut self, uri: &str, version: i64) -> Value {
        loop {
            let message = self.expect("textDocument/publishDiagnostics").await;
            if message["params"]["uri"] == uri && message["params"]["version"] == version {
                return message["params"]["diagnostics"].clone();
            }
        }
    }

    pub fn has_pending(&self, method: &str) -> bool {
        self.pending.iter().any(|m| m["method"] == method)
    }
}
