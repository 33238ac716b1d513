//! A real editor as the client: Emacs in batch mode with eglot (Debian's emacs-nox and
//! elpa-eglot, which .ci/run installs) loads editors/emacs/posh.el, opens a script, and prints
//! the inlay hints, the hover and the diagnostics it received from posh-lsp; then an annotation
//! file, in posh.el's `posh-annotation-mode`, with its diagnostics and hover.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn emacs_with_eglot_receives_hints_hover_and_diagnostics() {
    if Command::new("emacs").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI must install emacs-nox and elpa-eglot (.ci/run)");
        println!("SKIPPED: emacs is not installed (apt-get install emacs-nox elpa-eglot); the eglot test did not run");
        return;
    }
    let dir = common::workspace();
    let home = tempfile::tempdir().unwrap();
    let script = dir.path().join("count.sh");
    std::fs::write(
        &script,
        "#!/bin/bash\n# Größe 🎉\ncat data/ray*.log | grep 'é🎉' | sort\nmytool data/ray0.log | sort\n",
    )
    .unwrap();
    let annotations = dir.path().join("annotations/csv.posh");
    std::fs::write(&annotations, "csvcut[filters_input]:\n- PARAMS:\n  - type:input_file, size:list, splitable\n")
        .unwrap();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new("emacs")
        .args(["--batch", "-l"])
        .arg(manifest.join("tests/emacs/eglot-client.el"))
        .current_dir(dir.path())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("POSH_LSP", env!("CARGO_BIN_EXE_posh-lsp"))
        .env("POSH_EL", manifest.join("../editors/emacs/posh.el"))
        .env("POSH_SCRIPT", &script)
        .env("POSH_HOVER_AT", "grep")
        .env("POSH_ANNOTATIONS", &annotations)
        .output()
        .expect("emacs runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "emacs failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    let of = |prefix: &str| -> Vec<&str> { lines.iter().filter_map(|l| l.strip_prefix(prefix)).collect() };
    assert_eq!(of("LANGUAGE "), vec!["sh"]);
    assert_eq!(of("SHUTDOWN "), vec!["answered nil", "exit 0"], "{stdout}");
    assert_eq!(of("HINT "), vec!["2:0 @logs ¶", "2:37 ⇄ 1.2 GB"]);
    let hover = of("HOVER ").join("\n");
    assert!(hover.contains("grep é🎉"), "{hover}");
    assert!(hover.contains("Runs at **@logs**: the cheapest place for the data it moves."), "{hover}");
    assert!(hover.contains("bash alone would move 2.5 GB across the network, posh moves 1.2 GB"), "{hover}");
    assert_eq!(
        of("DIAG "),
        vec![
            "3: posh [S003]: this pipeline still moves 1.2 GB across the network (bash would move 2.5 GB; threshold 100 MB)",
            "4: posh [S001]: `mytool` has no annotation, so it runs at the client and its input crosses the network",
        ]
    );
    // The annotation file: posh-annotation-mode, language id `posh`, the validator's diagnostic
    // and the keyword table's hover.
    assert_eq!(of("ALANGUAGE "), vec!["posh"]);
    assert_eq!(of("ADIAG "), vec!["3: posh [A102]: unknown field `splitable`: did you mean `splittable`?"]);
    assert_eq!(of("AHOVER "), vec!["**filters_input** (command option)"]);
    assert_eq!(of("ASHUTDOWN "), vec!["answered nil", "exit 0"], "{stdout}");
}
