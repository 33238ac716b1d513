//! A real editor as the client: Emacs in batch mode with eglot (Debian's emacs-nox and
//! elpa-eglot, which .ci/run installs) loads editors/emacs/posh.el, calls `posh-eglot-setup`,
//! opens a script, and prints the inlay hints and code lenses it received from posh-lsp next to
//! what posh.el's `posh-hints-mode` shows of them, the hover as eldoc shows it, and the
//! diagnostics; then an annotation file, in posh.el's `posh-annotation-mode`, with its
//! diagnostics and hover. Hint and lens wording is the server's: the test checks where hints
//! stand and that Emacs shows what the server sent, not what the labels say.

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
    let output = common::isolate_in(&mut Command::new("emacs"), home.path())
        .args(["--batch", "-l"])
        .arg(manifest.join("tests/emacs/eglot-client.el"))
        .current_dir(dir.path())
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
    // A placement hint before `cat`, a byte count at the end of the line (2:37 in UTF-16 code
    // units: the line has a character outside the BMP).
    let hints: Vec<(&str, &str)> = of("HINT ").iter().map(|h| h.split_once(' ').unwrap_or((h, ""))).collect();
    assert_eq!(hints.iter().map(|h| h.0).collect::<Vec<_>>(), vec!["2:0", "2:37"], "{stdout}");
    assert!(hints.iter().all(|h| !h.1.trim().is_empty()), "{stdout}");
    // eglot 1.9 shows no hints: posh-hints-mode's overlays stand where the server's hints are,
    // with their labels.
    let trimmed = |lines: Vec<&str>| -> Vec<String> {
        lines.iter().map(|l| l.split_once(' ').map_or(l.to_string(), |(p, t)| format!("{p} {}", t.trim()))).collect()
    };
    assert_eq!(trimmed(of("SHOWN ")), trimmed(of("HINT ")), "{stdout}");
    // The code lenses, one overlay a line with that line's titles.
    let mut lenses: Vec<(u32, Vec<&str>)> = Vec::new();
    for lens in of("LENS ") {
        let (line, title) = lens.split_once(": ").expect("LENS line: title");
        assert!(!title.trim().is_empty(), "{stdout}");
        let line: u32 = line.parse().unwrap();
        match lenses.iter_mut().find(|(l, _)| *l == line) {
            Some((_, titles)) => titles.push(title),
            None => lenses.push((line, vec![title])),
        }
    }
    assert!(!lenses.is_empty(), "{stdout}");
    lenses.sort_by_key(|(line, _)| *line);
    let expected: Vec<String> = lenses.iter().map(|(line, titles)| format!("{line}: {}", titles.join(" | "))).collect();
    assert_eq!(of("LENSSHOWN "), expected, "{stdout}");
    // Hover as eldoc shows it: posh renders the markdown where markdown-mode is missing.
    let hover_fn = of("HOVERFN ");
    let hover = of("HOVER ").join("\n");
    assert!(hover.contains("grep é🎉"), "{hover}");
    assert!(hover.contains("logs"), "{hover}");
    assert!(hover.contains("bash alone would move 2.5 GB across the network, posh moves ~1.2 GB"), "{hover}");
    match hover_fn.as_slice() {
        ["posh-hover-eldoc-function"] => assert!(!hover.contains("**") && !hover.contains("```"), "{hover}"),
        ["eglot-hover-eldoc-function"] => {}
        other => panic!("hover shown by {other:?}"),
    }
    assert_eq!(
        of("DIAG "),
        vec![
            "3: posh [S003]: this pipeline still moves ~1.2 GB across the network (bash would move 2.5 GB; threshold 100 MB)",
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
