//! The editor packages offer exactly the settings posh-lsp reads.

use std::collections::BTreeSet;
use std::path::Path;

use posh_lsp::ide::Settings;

/// VS Code's settings under `posh.` are the server's options, beside the extension's own (how it
/// finds and starts posh-lsp and posh-exec, and the protocol trace).
#[test]
fn the_vscode_settings_are_the_server_s_options() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../editors/vscode/package.json");
    let package: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    let properties = package["contributes"]["configuration"]["properties"].as_object().expect("contributed settings");
    let extension_own =
        |key: &str| key.starts_with("posh.server.") || key.starts_with("posh.exec.") || key == "posh.trace.server";
    let offered: BTreeSet<&str> = properties
        .keys()
        .filter(|k| !extension_own(k))
        .map(|k| k.strip_prefix("posh.").expect("under posh."))
        .collect();
    let read: BTreeSet<&str> = Settings::OPTIONS.into_iter().collect();
    assert_eq!(offered, read);
    // Each is the kind of value the server reads.
    assert_eq!(properties["posh.placement"]["enum"], serde_json::json!(["cost-based", "greedy"]));
    assert_eq!(properties["posh.copiesPerMount"]["minimum"], 1, "{}", properties["posh.copiesPerMount"]);
}
