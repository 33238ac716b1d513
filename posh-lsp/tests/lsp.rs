//! End to end through the protocol: the server runs on one end of an in-memory pipe, a small
//! client on the other speaks JSON-RPC with Content-Length framing, and the tests compare the
//! exact JSON (positions in UTF-16 code units, with non-ASCII text before them).

use std::path::Path;

use serde_json::{Value, json};

#[path = "common/client.rs"]
mod client;
mod common;

use client::Client;
use common::workspace;

async fn initialized(root: &Path, capabilities: Value) -> Client {
    let mut client = Client::start(root).await;
    let uri = format!("file://{}", root.display());
    let result =
        client.request("initialize", json!({"processId": null, "rootUri": uri, "capabilities": capabilities})).await;
    assert_eq!(result["capabilities"]["inlayHintProvider"], json!({"resolveProvider": true}));
    assert_eq!(result["capabilities"]["textDocumentSync"]["change"], json!(2));
    assert_eq!(result["serverInfo"]["name"], json!("posh-lsp"));
    client.notify("initialized", json!({})).await;
    client
}

const SCRIPT: &str = "#!/bin/bash\n# Größe 🎉\ncat data/ray*.log | grep 'é🎉' | sort\nmytool data/ray0.log | sort\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_hints_hover_lenses_and_diagnostics() {
    let dir = workspace();
    let mut client = initialized(dir.path(), json!({})).await;
    let uri = format!("file://{}/count.sh", dir.path().display());
    client.open(&uri, "sh", SCRIPT).await;
    let diagnostics = client.diagnostics("file://ROOT/count.sh", 1).await;
    assert_eq!(
        diagnostics,
        json!([
            {"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 37}},
             "severity": 2, "code": "S003", "source": "posh",
             "message": "this pipeline still moves ~1.2 GB across the network (bash would move 2.5 GB; threshold 100 MB)"},
            {"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 6}},
             "severity": 2, "code": "S001", "source": "posh",
             "message": "`mytool` has no annotation, so it runs at the client and its input crosses the network"}
        ])
    );
    let hints = client
        .request(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 4, "character": 0}}}),
        )
        .await;
    insta::assert_snapshot!("script_inlay_hints", serde_json::to_string_pretty(&hints).unwrap());
    let hover = client
        .request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 2, "character": 22}}))
        .await;
    assert_eq!(hover["range"], json!({"start": {"line": 2, "character": 20}, "end": {"line": 2, "character": 30}}));
    insta::assert_snapshot!("script_hover", hover["contents"]["value"].as_str().unwrap());
    let lenses = client.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
    assert_eq!(
        lenses,
        json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "command": {"title": "posh: 1 of 2 pipelines go to the runtime; 1 stay with bash", "command": ""}},
               {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "command": {"title": "1: `mytool` has no annotation", "command": ""}},
               {"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 37}},
                "command": {"title": "bash moves 2.5 GB, posh moves ~1.2 GB", "command": ""}}])
    );
    // `shutdown` as eglot 1.9 sends it, with `"params": null`.
    assert_eq!(client.request("shutdown", Value::Null).await, Value::Null);
}

/// A client that resolves tooltips and links (VS Code's `resolveSupport`) gets hints without
/// them, and each resolved is the hint a client without it gets; a hint of an older version is
/// handed back as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hints_leave_tooltips_and_links_to_resolve_when_the_client_resolves() {
    let dir = workspace();
    let uri = format!("file://{}/count.sh", dir.path().display());
    let all = json!({"textDocument": {"uri": uri}, "range": range(0, 0, 4, 0)});
    let mut plain = initialized(dir.path(), json!({})).await;
    plain.open(&uri, "sh", SCRIPT).await;
    let full = plain.request("textDocument/inlayHint", all.clone()).await;
    let properties = ["tooltip", "textEdits", "label.tooltip", "label.location", "label.command"];
    let capabilities = json!({"textDocument": {"inlayHint": {"resolveSupport": {"properties": properties}}}});
    let mut client = initialized(dir.path(), capabilities).await;
    client.open(&uri, "sh", SCRIPT).await;
    let lean = client.request("textDocument/inlayHint", all.clone()).await;
    let (full, lean) = (full.as_array().unwrap(), lean.as_array().unwrap());
    assert_eq!(full.len(), lean.len());
    assert!(full.len() >= 2, "{full:?}");
    let text = |v: &Value| v.to_string();
    for (full, lean) in full.iter().zip(lean) {
        assert!(lean.get("tooltip").is_none() && !text(lean).contains("location"), "{lean}");
        assert!(full.get("tooltip").is_some(), "{full}");
        let resolved = client.request("inlayHint/resolve", lean.clone()).await;
        let mut expected = full.clone();
        expected["data"] = lean["data"].clone();
        assert_eq!(resolved, expected);
    }
    // Whole-file answers are where it counts.
    let (lean_bytes, full_bytes) = (text(&Value::from(lean.clone())).len(), text(&Value::from(full.clone())).len());
    assert!(lean_bytes * 2 < full_bytes, "{lean_bytes} {full_bytes}");
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"range": range(0, 0, 0, 0), "text": "\n"}]}),
        )
        .await;
    assert_eq!(client.request("inlayHint/resolve", lean[0].clone()).await, lean[0]);
}

fn range(line: u32, start: u32, end_line: u32, end: u32) -> Value {
    json!({"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}})
}

/// The hints' positions and labels, compactly.
fn hint_summary(hints: &Value) -> Vec<String> {
    hints
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let label = match &h["label"] {
                Value::String(s) => s.clone(),
                parts => parts.as_array().unwrap().iter().map(|p| p["value"].as_str().unwrap()).collect(),
            };
            format!("{}:{} {label}", h["position"]["line"], h["position"]["character"])
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_apply_in_order_and_a_broken_edit_keeps_the_hints() {
    let dir = workspace();
    let mut client = initialized(dir.path(), json!({})).await;
    let uri = format!("file://{}/edit.sh", dir.path().display());
    // sort writes a file off the mount, so it runs at the client: hints on both machines.
    let text = "# é🎉\ncat data/ray0.log | grep x | sort > out.txt\n";
    client.open(&uri, "shellscript", text).await;
    let all = json!({"textDocument": {"uri": uri}, "range": range(0, 0, 9, 0)});
    let hints = client.request("textDocument/inlayHint", all.clone()).await;
    assert_eq!(hint_summary(&hints), vec!["1:0 on logs", "1:28 moves ~250 MB", "1:29 on client"]);
    // Two edits in one notification, applied in order: a line inserted at the top, then two
    // spaces at the start of what is now line 2.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
                {"range": range(0, 0, 0, 0), "text": "echo ü\n"},
                {"range": range(2, 0, 2, 0), "text": "  "},
            ]}),
        )
        .await;
    let diags = client.diagnostics("file://ROOT/edit.sh", 2).await;
    assert_eq!(diags[0]["range"], range(2, 2, 2, 45));
    assert_eq!(diags[0]["code"], "S003");
    let hints = client.request("textDocument/inlayHint", all.clone()).await;
    assert_eq!(hint_summary(&hints), vec!["2:2 on logs", "2:30 moves ~250 MB", "2:31 on client"]);
    // Typing `if ((` at the top leaves text no closer repairs: the last good hints stay, shifted.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
                {"range": range(0, 0, 0, 0), "text": "if (( )\n"},
            ]}),
        )
        .await;
    let hints = client.request("textDocument/inlayHint", all.clone()).await;
    assert_eq!(hint_summary(&hints), vec!["3:2 on logs", "3:30 moves ~250 MB", "3:31 on client"]);
    // A stale version is ignored; closing clears the diagnostics.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": "garbage"}]}),
        )
        .await;
    let hints = client.request("textDocument/inlayHint", all).await;
    assert_eq!(hint_summary(&hints).len(), 3);
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}})).await;
    let cleared = client.expect("textDocument/publishDiagnostics").await;
    let cleared = if cleared["params"]["diagnostics"] == json!([]) {
        cleared
    } else {
        client.expect("textDocument/publishDiagnostics").await
    };
    assert_eq!(cleared["params"]["diagnostics"], json!([]));
}

const ANNOTATIONS: &str = "# Größe 🎉\ncsvcut[filters_input]:\n- PARAMS:\n  - type:input_file, size:list, splitable\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotation_files_diagnostics_fixes_completion_format_symbols_tokens() {
    let dir = workspace();
    let mut client = initialized(dir.path(), json!({})).await;
    let uri = format!("file://{}/annotations/csv.posh", dir.path().display());
    client.open(&uri, "posh", ANNOTATIONS).await;
    let diagnostics = client.diagnostics("file://ROOT/annotations/csv.posh", 1).await;
    assert_eq!(
        diagnostics,
        json!([{"range": range(3, 32, 3, 41), "severity": 1, "code": "A102", "source": "posh",
                "message": "unknown field `splitable`: did you mean `splittable`?"}])
    );
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": range(3, 35, 3, 35), "context": {"diagnostics": []}}),
        )
        .await;
    assert_eq!(
        actions,
        json!([{"title": "Replace with `splittable`", "kind": "quickfix", "isPreferred": true,
                "diagnostics": diagnostics,
                "edit": {"changes": {"file://ROOT/annotations/csv.posh": [{"range": range(3, 32, 3, 41), "newText": "splittable"}]}}}])
    );
    let completion = client
        .request(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": 9}}),
        )
        .await;
    let labels: Vec<&str> = completion.as_array().unwrap().iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(labels, vec!["input_file", "output_file", "removed_file", "str"]);
    assert_eq!(completion[0]["textEdit"], json!({"range": range(3, 9, 3, 9), "newText": "input_file"}));
    let hover = client
        .request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 1, "character": 10}}))
        .await;
    assert_eq!(hover["range"], range(1, 7, 1, 20));
    assert!(hover["contents"]["value"].as_str().unwrap().starts_with("**filters_input** (command option)"));
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}})).await;
    assert_eq!(
        symbols,
        json!([{"name": "csvcut[filters_input]", "detail": "PARAMS", "kind": 12,
                "range": range(1, 0, 3, 41), "selectionRange": range(1, 0, 1, 6)}])
    );
    let tokens = client.request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": uri}})).await;
    // The comment (9 UTF-16 units: `Größe` and the emoji count 1 and 2), the name, an option...
    assert_eq!(
        tokens["data"].as_array().unwrap()[..15],
        json!([0, 0, 10, 6, 0, 1, 0, 6, 0, 0, 0, 7, 13, 2, 0]).as_array().unwrap()[..]
    );
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
                {"range": range(3, 32, 3, 41), "text": "splittable"},
            ]}),
        )
        .await;
    assert_eq!(client.diagnostics("file://ROOT/annotations/csv.posh", 2).await, json!([]));
    let formatted = client
        .request(
            "textDocument/formatting",
            json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
        )
        .await;
    assert_eq!(formatted, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watched_files_reload_and_refresh_only_when_supported() {
    let dir = workspace();
    for refresh in [true, false] {
        let capabilities = json!({"workspace": {"inlayHint": {"refreshSupport": refresh},
                                                "didChangeWatchedFiles": {"dynamicRegistration": true}}});
        let mut client = initialized(dir.path(), capabilities).await;
        let registration = client.expect("client/registerCapability").await;
        assert_eq!(registration["params"]["registrations"][0]["method"], "workspace/didChangeWatchedFiles");
        let uri = format!("file://{}/w.sh", dir.path().display());
        let text = "csvstat data/ray0.log | head\n";
        client.open(&uri, "bash", text).await;
        let _ = client.diagnostics("file://ROOT/w.sh", 1).await;
        let all = json!({"textDocument": {"uri": uri}, "range": range(0, 0, 1, 0)});
        let hints = client.request("textDocument/inlayHint", all.clone()).await;
        assert_eq!(hint_summary(&hints), vec!["0:0 on logs", "0:28 moves 1.0 KB"]);
        // The project's annotation for csvstat links to its file (from `on`).
        assert_eq!(hints[0]["label"][0]["location"]["uri"], "file://ROOT/annotations/tools.posh");
        // Without the mount, nothing is remote any more.
        let config = dir.path().join("posh.toml");
        let saved = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, "# nothing mounted\n").unwrap();
        client
            .notify(
                "workspace/didChangeWatchedFiles",
                json!({"changes": [{"uri": "file://ROOT/posh.toml", "type": 2}]}),
            )
            .await;
        let _ = client.diagnostics("file://ROOT/w.sh", 1).await;
        let hints = client.request("textDocument/inlayHint", all).await;
        assert_eq!(hints, json!([]));
        // A refresh is asked for only from a client that said it supports it.
        assert_eq!(client.has_pending("workspace/inlayHint/refresh"), refresh);
        std::fs::write(&config, saved).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threshold_comes_from_the_client() {
    let dir = workspace();
    let mut client = Client::start(dir.path()).await;
    let uri = format!("file://{}", dir.path().display());
    let init = json!({"processId": null, "rootUri": uri, "capabilities": {}, "initializationOptions": {"maxMovedBytes": 10_000_000_000u64}});
    client.request("initialize", init).await;
    client.notify("initialized", json!({})).await;
    let script = format!("{uri}/t.sh");
    client.open(&script, "sh", "cat data/ray0.log | sort\n").await;
    assert_eq!(client.diagnostics("file://ROOT/t.sh", 1).await, json!([]));
    client.notify("workspace/didChangeConfiguration", json!({"settings": {"posh": {"maxMovedBytes": 1000}}})).await;
    let diagnostics = client.diagnostics("file://ROOT/t.sh", 1).await;
    assert_eq!(diagnostics[0]["code"], "S003");
    assert!(diagnostics[0]["message"].as_str().unwrap().ends_with("threshold 1.0 KB)"), "{diagnostics}");
}

/// Typing a quote, a `$(` or a `{` opens something that runs to the end of the file until it is
/// closed: the hints of the other pipelines stay where they were meanwhile (no flicker).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_quote_or_block_keeps_the_other_hints() {
    let dir = workspace();
    let mut client = initialized(dir.path(), json!({})).await;
    let uri = format!("file://{}/typing.sh", dir.path().display());
    let text = "cat data/ray0.log | grep x | sort > a.txt\necho hi\ncat data/ray1.log | grep y | sort > b.txt\n";
    client.open(&uri, "shellscript", text).await;
    let all = json!({"textDocument": {"uri": uri}, "range": range(0, 0, 9, 0)});
    let before = hint_summary(&client.request("textDocument/inlayHint", all.clone()).await);
    assert_eq!(before.len(), 6, "{before:?}");
    for (version, opened) in [(2, "\""), (3, "'"), (4, "$("), (5, "{ ")] {
        // Typed after `echo ` on the middle line, then taken back.
        client
            .notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version * 2}, "contentChanges": [
                    {"range": range(1, 5, 1, 5), "text": opened},
                ]}),
            )
            .await;
        let typing = hint_summary(&client.request("textDocument/inlayHint", all.clone()).await);
        assert_eq!(typing, before, "with `{opened}` open");
        client
            .notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version * 2 + 1}, "contentChanges": [
                    {"range": range(1, 5, 1, 5 + opened.len() as u32), "text": ""},
                ]}),
            )
            .await;
    }
}

/// posh.toml speaks for itself: the one in use, when broken, gets `C001` where it goes wrong; a
/// nested one, which the editor does not plan with, gets `C002`; fixed, they are cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_and_nested_configurations_get_diagnostics_in_the_file() {
    let dir = workspace();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/posh.toml"), "[[mount]]\npath = \"/srv\"\nproxy = \"10.0.0.9:4433\"\n")
        .unwrap();
    let mut client = initialized(dir.path(), json!({})).await;
    let of = async |client: &mut Client, file: &str| loop {
        let message = client.expect("textDocument/publishDiagnostics").await;
        if message["params"]["uri"] == format!("file://ROOT/{file}") {
            let diags = message["params"]["diagnostics"].as_array().unwrap().clone();
            return diags
                .iter()
                .map(|d| {
                    format!(
                        "{}:{} {}",
                        d["range"]["start"]["line"],
                        d["code"].as_str().unwrap(),
                        d["message"].as_str().unwrap()
                    )
                })
                .collect::<Vec<_>>();
        }
    };
    let nested = of(&mut client, "sub/posh.toml").await;
    assert_eq!(nested.len(), 1, "{nested:?}");
    assert!(nested[0].starts_with("0:C002 the editor plans with ROOT/posh.toml"), "{nested:?}");
    let config = dir.path().join("posh.toml");
    let saved = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{saved}rtt = 30\n")).unwrap();
    client
        .notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": "file://ROOT/posh.toml", "type": 2}]}))
        .await;
    let broken = of(&mut client, "posh.toml").await;
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(broken[0].starts_with("4:C001 `mount[1].rtt`"), "{broken:?}");
    std::fs::write(&config, saved).unwrap();
    client
        .notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": "file://ROOT/posh.toml", "type": 2}]}))
        .await;
    assert_eq!(of(&mut client, "posh.toml").await, Vec::<String>::new());
}

/// While an edit leaves a `$(`, an `if ...; then` or a `{` open, bash rejects the text and
/// nothing would be handed over: the summary atop the script stays as it was (in Emacs the text
/// below it jumped a line), and comes back computed once the text parses again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_lens_stays_while_a_block_is_open() {
    let dir = workspace();
    let mut client = initialized(dir.path(), json!({})).await;
    let uri = format!("file://{}/open.sh", dir.path().display());
    let text = "cat data/ray0.log | grep x | sort > a.txt\necho hi\n\ncat data/ray1.log | grep y | sort > b.txt\n";
    client.open(&uri, "shellscript", text).await;
    let lenses = async |client: &mut Client| -> Vec<String> {
        let lenses = client.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
        let at_top = lenses.as_array().unwrap().iter().filter(|l| l["range"]["start"]["line"] == 0);
        at_top.map(|l| l["command"]["title"].as_str().unwrap().to_string()).collect()
    };
    let before = lenses(&mut client).await;
    assert!(before.iter().any(|t| t.starts_with("posh: 2 of 3 pipelines")), "{before:?}");
    for (version, opened) in [(2, "x=$("), (3, "if true; then "), (4, "{ ")] {
        client
            .notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version * 2}, "contentChanges": [
                    {"range": range(2, 0, 2, 0), "text": opened},
                ]}),
            )
            .await;
        let typing = lenses(&mut client).await;
        assert!(typing.starts_with(&before[..1]), "with `{opened}` open: {typing:?}");
        client
            .notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version * 2 + 1}, "contentChanges": [
                    {"range": range(2, 0, 2, opened.len() as u32), "text": ""},
                ]}),
            )
            .await;
        assert_eq!(lenses(&mut client).await, before);
    }
}

/// An edit the server cannot read leaves its text out of step with the editor's: it says so
/// (a message and `S005`), shows nothing it would place wrongly, and is back in step once the
/// editor sends the whole text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_edit_is_said_and_the_whole_text_resynchronises() {
    let dir = workspace();
    let mut client = initialized(dir.path(), json!({})).await;
    let uri = format!("file://{}/lost.sh", dir.path().display());
    let text = "cat data/ray0.log | grep x | sort > a.txt\n";
    client.open(&uri, "shellscript", text).await;
    let all = json!({"textDocument": {"uri": uri}, "range": range(0, 0, 9, 0)});
    assert_eq!(hint_summary(&client.request("textDocument/inlayHint", all.clone()).await).len(), 3);
    // The opened version's own diagnostics first: they may come after the hints, and the
    // unreadable edit's are published for the same version (CI once took these for those).
    client.diagnostics("file://ROOT/lost.sh", 1).await;
    // A lone surrogate: no JSON reader takes it.
    let body = format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didChange","params":{{"textDocument":{{"uri":"{uri}","version":2}},"contentChanges":[{{"range":{{"start":{{"line":0,"character":0}},"end":{{"line":0,"character":0}}}},"text":"\ud800"}}]}}}}"#
    );
    client.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await;
    let message = client.expect("window/showMessage").await;
    assert!(message["params"]["message"].as_str().unwrap().contains("lost.sh"), "{message}");
    let diagnostics = client.diagnostics("file://ROOT/lost.sh", 1).await;
    assert_eq!(diagnostics.as_array().unwrap().len(), 1, "{diagnostics}");
    assert_eq!(diagnostics[0]["code"], "S005");
    assert_eq!(client.request("textDocument/inlayHint", all.clone()).await, json!([]));
    // Edits by ranges cannot land right: still out of step.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"range": range(0, 0, 0, 0), "text": "\n"}]}),
        )
        .await;
    assert_eq!(client.diagnostics("file://ROOT/lost.sh", 3).await[0]["code"], "S005");
    // The whole text puts it back in step.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": format!("\n{text}")}]}),
        )
        .await;
    let diagnostics = client.diagnostics("file://ROOT/lost.sh", 4).await;
    assert!(diagnostics.as_array().unwrap().iter().all(|d| d["code"] != "S005"), "{diagnostics}");
    assert_eq!(
        hint_summary(&client.request("textDocument/inlayHint", all).await),
        vec!["1:0 on logs", "1:28 moves ~250 MB", "1:29 on client"]
    );
}

/// An annotation file put in a directory made after the server started (which a client
/// watching the directories it found at registration never reports) is seen at the next save.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_annotation_file_in_a_new_directory_is_seen_at_the_next_save() {
    let dir = workspace();
    let mut client = initialized(dir.path(), json!({})).await;
    let uri = format!("file://{}/new.sh", dir.path().display());
    client.open(&uri, "shellscript", "mytool2 data/ray0.log | sort\n").await;
    let codes = |diagnostics: &Value| -> Vec<String> {
        diagnostics.as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap().to_string()).collect()
    };
    assert!(codes(&client.diagnostics("file://ROOT/new.sh", 1).await).contains(&"S001".to_string()));
    std::fs::create_dir(dir.path().join(".posh")).unwrap();
    std::fs::write(
        dir.path().join(".posh/more.posh"),
        "mytool2[filters_input]:\n- PARAMS:\n  - type:input_file, size:list\n",
    )
    .unwrap();
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri}})).await;
    let diagnostics = client.diagnostics("file://ROOT/new.sh", 1).await;
    assert!(!codes(&diagnostics).contains(&"S001".to_string()), "{diagnostics}");
    let hints = client
        .request("textDocument/inlayHint", json!({"textDocument": {"uri": uri}, "range": range(0, 0, 1, 0)}))
        .await;
    assert_eq!(hint_summary(&hints)[0], "0:0 on logs");
}
