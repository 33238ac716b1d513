//! The protocol's framing between the client and tower-lsp, checked before tower-lsp sees it.
//!
//! tower-lsp's reader stops at the first message it cannot decode: a body that is not UTF-8 is
//! decoded again and again, and any other error ends its input stream, after which the server
//! answers nothing (a client waits forever). So every message is read here first: a well-formed
//! one is passed on unchanged; a malformed one (a header without `Content-Length`, a body that is
//! not UTF-8 or not JSON, a lone surrogate, a body larger than [`MAX_BODY`]) is answered with a
//! JSON-RPC parse error, carrying the request's `id` when it can still be read, and dropped.
//! Answers are written between whole frames of tower-lsp's output, never inside one.
//!
//! An edit (`textDocument/didChange`) that cannot be read this way, or whose params are not an
//! edit (tower-lsp would drop it with a line in its log), leaves the server's copy of the text
//! out of step with the editor's, and every later edit would land in the wrong place: it is
//! passed on as [`LOST_CHANGE`] instead, naming the document when its URI can still be read, and
//! the server says so (see `Backend::lost_change`).
//!
//! The end of the client's input is the end of the server: tower-lsp alone would wait for every
//! task still holding its client handle.

use serde::Deserialize as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::mpsc;

/// The largest body read whole; a larger one is skipped unread and answered with an error
/// (memory stays bounded whatever a client sends).
pub const MAX_BODY: usize = 64 << 20;
/// The largest header line.
const MAX_HEADER_LINE: usize = 8 << 10;

/// The notification an unreadable edit is passed on as: `{"uri": ..., "why": ...}` (`uri` when it
/// could be read).
pub const LOST_CHANGE: &str = "posh/lostChange";

/// One message read from the client.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A well-formed message, with its framing.
    Message(Vec<u8>),
    /// A malformed one: the error answer to send the client (`None` for a notification).
    Malformed { answer: Option<Vec<u8>>, why: String },
    /// An edit that could not be read: [`LOST_CHANGE`] to pass on in its place.
    LostChange { notification: Vec<u8>, why: String },
    /// The client closed its output.
    End,
}

/// Reads the next message of `input`.
pub async fn read_message(input: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Incoming> {
    Ok(match read_frame(input).await? {
        Frame::Body(body) => check_body(body),
        Frame::Unframed(why) => malformed(Recovered::Unknown, why),
        Frame::End => Incoming::End,
    })
}

/// A frame's body, unchecked.
enum Frame {
    Body(Vec<u8>),
    /// Its header was wrong, or its body too large (skipped).
    Unframed(String),
    End,
}

async fn read_frame(input: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Frame> {
    let mut length: Option<Result<usize, String>> = None;
    let mut line = Vec::new();
    let mut saw_header = false;
    loop {
        line.clear();
        let n = (&mut *input).take(MAX_HEADER_LINE as u64).read_until(b'\n', &mut line).await?;
        if n == 0 {
            return Ok(Frame::End);
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.is_empty() {
            if saw_header {
                break;
            }
            // Blank lines between messages are tolerated.
            continue;
        }
        saw_header = true;
        let Some((name, value)) = std::str::from_utf8(text).ok().and_then(|t| t.split_once(':')) else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            length = Some(value.trim().parse().map_err(|_| format!("Content-Length `{}` is no number", value.trim())));
        }
    }
    let length = match length {
        Some(Ok(length)) => length,
        Some(Err(why)) => return Ok(Frame::Unframed(why)),
        None => return Ok(Frame::Unframed("a message without Content-Length".to_string())),
    };
    if length > MAX_BODY {
        tokio::io::copy(&mut (&mut *input).take(length as u64), &mut tokio::io::sink()).await?;
        return Ok(Frame::Unframed(format!("a message of {length} bytes (at most {MAX_BODY})")));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await?;
    Ok(Frame::Body(body))
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    framed.extend_from_slice(body);
    framed
}

/// The message of `body` if it is one tower-lsp can take, else the error to answer.
fn check_body(body: Vec<u8>) -> Incoming {
    let why = match std::str::from_utf8(&body) {
        Err(e) => format!("the body is not UTF-8 (byte {})", e.valid_up_to()),
        Ok(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(message)) if message.get("method").and_then(Value::as_str) == Some(DID_CHANGE) => {
                let params = message.get("params").unwrap_or(&Value::Null);
                match tower_lsp::lsp_types::DidChangeTextDocumentParams::deserialize(params) {
                    Ok(_) => return Incoming::Message(framed(&body)),
                    Err(e) => {
                        let uri = params.pointer("/textDocument/uri").and_then(Value::as_str).map(str::to_string);
                        return lost_change(uri, format!("an edit that is not one: {e}"));
                    }
                }
            }
            Ok(Value::Object(_)) => return Incoming::Message(framed(&body)),
            Ok(_) => "the body is no JSON object".to_string(),
            Err(e) => format!("the body is no JSON: {e}"),
        },
    };
    match recover(&body) {
        Recovered::Edit(uri) => lost_change(uri, why),
        recovered => malformed(recovered, why),
    }
}

const DID_CHANGE: &str = "textDocument/didChange";

fn lost_change(uri: Option<String>, why: String) -> Incoming {
    let body = json!({"jsonrpc": "2.0", "method": LOST_CHANGE, "params": {"uri": uri, "why": why}}).to_string();
    Incoming::LostChange { notification: framed(body.as_bytes()), why }
}

/// What can still be read of a malformed body.
enum Recovered {
    Request(Value),
    Notification,
    /// An edit, of the document with this URI when it can be read.
    Edit(Option<String>),
    Unknown,
}

fn recover(body: &[u8]) -> Recovered {
    let lossy = String::from_utf8_lossy(body);
    let Ok(value) = serde_json::from_str::<Value>(&without_lone_surrogates(&lossy)) else {
        // Cut short: an edit still says so near its start.
        if lossy.contains(&format!("\"method\":\"{DID_CHANGE}\"")) {
            return Recovered::Edit(None);
        }
        return Recovered::Unknown;
    };
    match (value.get("method"), value.get("id")) {
        (Some(method), None) if method == DID_CHANGE => {
            Recovered::Edit(value.pointer("/params/textDocument/uri").and_then(Value::as_str).map(str::to_string))
        }
        (Some(_), Some(id)) => Recovered::Request(id.clone()),
        (Some(_), None) => Recovered::Notification,
        _ => Recovered::Unknown,
    }
}

/// `\uD800`-style escapes not paired as UTF-16 would have them, replaced by U+FFFD.
fn without_lone_surrogates(text: &str) -> String {
    let escape = |s: &str| -> Option<u16> {
        let hex = s.strip_prefix("\\u").or_else(|| s.strip_prefix("\\U"))?.get(..4)?;
        u16::from_str_radix(hex, 16).ok()
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\\u") {
        // An escaped backslash before it makes it no escape.
        let backslashes = rest[..at].chars().rev().take_while(|&c| c == '\\').count();
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let unit = if backslashes % 2 == 0 { escape(rest) } else { None };
        match unit {
            Some(0xD800..=0xDBFF) if matches!(rest.get(6..).and_then(escape), Some(0xDC00..=0xDFFF)) => {
                out.push_str(&rest[..12]);
                rest = &rest[12..];
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str("\\uFFFD");
                rest = &rest[6..];
            }
            _ => {
                out.push_str(&rest[..2]);
                rest = &rest[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn malformed(recovered: Recovered, why: String) -> Incoming {
    // A notification is answered by nothing; a message whose kind cannot be told is answered
    // with `id: null`, as JSON-RPC says for a parse error.
    let answer = match recovered {
        Recovered::Request(id) => Some(error_frame(id, &why)),
        Recovered::Notification | Recovered::Edit(_) => None,
        Recovered::Unknown => Some(error_frame(Value::Null, &why)),
    };
    Incoming::Malformed { answer, why }
}

fn error_frame(id: Value, why: &str) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": -32700, "message": format!("posh-lsp could not read the message: {why}") },
    })
    .to_string();
    framed(body.as_bytes())
}

/// A line on standard error, if it can be written (a client may have closed it: `eprintln!` would
/// panic).
pub fn log(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "posh-lsp: {line}");
}

/// Passes the client's messages from `input` to `server_input`, sends the answers to malformed
/// ones to `answers`, and returns when the client's input ends (or `server_input` closes).
pub async fn filter_input(
    input: impl AsyncRead + Unpin,
    mut server_input: impl AsyncWrite + Unpin,
    answers: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut input = tokio::io::BufReader::new(input);
    loop {
        match read_message(&mut input).await {
            Ok(Incoming::Message(framed)) => {
                if server_input.write_all(&framed).await.is_err() {
                    return;
                }
            }
            Ok(Incoming::LostChange { notification, why }) => {
                log(&format!("an edit from the client could not be read: {why}"));
                if server_input.write_all(&notification).await.is_err() {
                    return;
                }
            }
            Ok(Incoming::Malformed { answer, why }) => {
                log(&format!("a malformed message from the client: {why}"));
                if let Some(answer) = answer {
                    let _ = answers.send(answer);
                }
            }
            Ok(Incoming::End) | Err(_) => return,
        }
    }
}

/// Copies tower-lsp's output `server_output` to `output` frame by frame, with the frames of
/// `answers` written between them; returns when both have ended. When `output` cannot be
/// written to any more (the client closed it), `gone` is told, and what follows is read and
/// dropped: tower-lsp panics when its output fails while it still has answers to give.
pub async fn merge_output(
    server_output: impl AsyncRead + Unpin + Send + 'static,
    mut output: impl AsyncWrite + Unpin,
    mut answers: mpsc::UnboundedReceiver<Vec<u8>>,
    gone: tokio::sync::oneshot::Sender<()>,
) {
    let (frames_tx, mut frames) = mpsc::unbounded_channel();
    let split = tokio::spawn(async move {
        let mut server_output = tokio::io::BufReader::new(server_output);
        // tower-lsp's own output is well formed: only cut into frames, not checked.
        while let Ok(Frame::Body(body)) = read_frame(&mut server_output).await {
            if frames_tx.send(framed(&body)).is_err() {
                return;
            }
        }
    });
    let (mut frames_open, mut answers_open) = (true, true);
    let mut gone = Some(gone);
    while frames_open || answers_open {
        let frame = tokio::select! {
            frame = frames.recv(), if frames_open => frame.or_else(|| { frames_open = false; None }),
            answer = answers.recv(), if answers_open => answer.or_else(|| { answers_open = false; None }),
        };
        if let Some(frame) = frame.filter(|_| gone.is_some())
            && (output.write_all(&frame).await.is_err() || output.flush().await.is_err())
            && let Some(gone) = gone.take()
        {
            let _ = gone.send(());
        }
    }
    split.abort();
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: &[u8]) -> Vec<Incoming> {
        let mut input = tokio::io::BufReader::new(bytes);
        let mut all = Vec::new();
        loop {
            match read_message(&mut input).await.unwrap() {
                Incoming::End => return all,
                other => all.push(other),
            }
        }
    }

    fn answer_of(incoming: &Incoming) -> Value {
        let Incoming::Malformed { answer: Some(answer), .. } = incoming else { panic!("{incoming:?}") };
        let text = String::from_utf8(answer.clone()).unwrap();
        serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap()
    }

    #[tokio::test]
    async fn well_formed_messages_pass_unchanged_and_malformed_ones_get_their_error() {
        let good = br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;
        let mut stream = framed(good);
        stream.extend(framed(br#"{"jsonrpc":"2.0","id":2,"method":"shutdown""#));
        stream.extend(framed(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":\"\xff\"}"));
        stream.extend(framed(br#"{"jsonrpc":"2.0","id":4,"method":"x","params":"\ud800"}"#));
        stream.extend(b"Content-Type: x\r\n\r\n");
        stream.extend(framed(good));
        let all = read(&stream).await;
        assert_eq!(all.len(), 6, "{all:?}");
        assert_eq!(all[0], Incoming::Message(framed(good)));
        assert_eq!(answer_of(&all[1])["id"], Value::Null, "cut short: no id to be read");
        assert_eq!(answer_of(&all[2])["id"], 3);
        assert_eq!(answer_of(&all[2])["error"]["code"], -32700);
        assert_eq!(answer_of(&all[3])["id"], 4);
        assert_eq!(answer_of(&all[4])["id"], Value::Null);
        assert_eq!(all[5], Incoming::Message(framed(good)), "the stream goes on after each");
    }

    /// An edit that cannot be read, whatever is wrong with it, is passed on as a lost change,
    /// naming its document when it still can.
    #[tokio::test]
    async fn an_unreadable_edit_is_passed_on_as_a_lost_change() {
        let good = br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///a.sh","version":2},"contentChanges":[{"text":"x"}]}}"#;
        let mut stream = framed(good);
        // A lone surrogate in the new text: not JSON.
        stream.extend(framed(br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///a.sh","version":3},"contentChanges":[{"text":"\ud800"}]}}"#));
        // JSON, but no edit: a range of words.
        stream.extend(framed(br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///b.sh","version":3},"contentChanges":[{"range":"x","text":""}]}}"#));
        // Cut short, its URI not readable.
        stream.extend(framed(br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDoc"#));
        let all = read(&stream).await;
        assert_eq!(all[0], Incoming::Message(framed(good)));
        let lost: Vec<Value> = all[1..]
            .iter()
            .map(|m| {
                let Incoming::LostChange { notification, .. } = m else { panic!("{m:?}") };
                let text = String::from_utf8(notification.clone()).unwrap();
                serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap()
            })
            .collect();
        let uris: Vec<&Value> = lost.iter().map(|l| &l["params"]["uri"]).collect();
        assert_eq!(uris, [&json!("file:///a.sh"), &json!("file:///b.sh"), &Value::Null]);
        assert!(lost.iter().all(|l| l["method"] == LOST_CHANGE), "{lost:?}");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_skipped_unread() {
        let mut stream = format!("Content-Length: {}\r\n\r\n", MAX_BODY + 1).into_bytes();
        stream.extend(std::iter::repeat_n(b' ', MAX_BODY + 1));
        stream.extend(framed(b"{}"));
        let all = read(&stream).await;
        assert!(matches!(&all[0], Incoming::Malformed { why, .. } if why.contains("at most")), "{all:?}");
        assert_eq!(all[1], Incoming::Message(framed(b"{}")));
    }

    #[test]
    fn only_lone_surrogates_are_replaced() {
        assert_eq!(
            without_lone_surrogates(r#""\ud83c\udf89 \ud800 \\ud800 \u00e9""#),
            r#""\ud83c\udf89 \uFFFD \\ud800 \u00e9""#
        );
    }
}
