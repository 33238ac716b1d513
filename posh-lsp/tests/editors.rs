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

/// The editor packages link to the project only where the project names a real URL: the root
/// Cargo.toml's `repository`. While that is a placeholder (a host under `.invalid`), they link
/// nowhere rather than to a made-up address.
#[test]
fn the_editor_packages_link_only_to_the_project_s_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let repository = manifest
        .lines()
        .find_map(|l| l.strip_prefix("repository = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("the workspace's repository");
    let host = repository.split("://").nth(1).and_then(|rest| rest.split('/').next()).unwrap_or_default();
    let real = (!host.ends_with(".invalid")).then_some(repository);
    let package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("editors/vscode/package.json")).unwrap()).unwrap();
    let vscode = package["repository"]["url"].as_str().map(|u| u.trim_end_matches(".git").to_string());
    assert_eq!(vscode.as_deref(), real, "editors/vscode/package.json's repository");
    let emacs = std::fs::read_to_string(root.join("editors/emacs/posh.el")).unwrap();
    let url = emacs.lines().find_map(|l| l.strip_prefix(";; URL: "));
    assert_eq!(url, real, "editors/emacs/posh.el's URL header");
    for (path, text) in [("editors/vscode/package.json", package.to_string()), ("editors/emacs/posh.el", emacs)] {
        for link in text.split(['"', ' ', '\n', ')']).filter(|w| w.starts_with("http")) {
            assert!(real.is_some_and(|r| link.starts_with(r)), "{path} links to {link}");
        }
    }
}
