//! `posh-lsp check` and `posh-lsp explain`, run as a user runs them.

use std::path::Path;
use std::process::{Command, Output};

mod common;

/// posh-lsp run in `cwd`, with a home of its own (see `common::isolate`).
fn posh_lsp(args: &[&str], cwd: &Path) -> Output {
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(env!("CARGO_BIN_EXE_posh-lsp"));
    common::isolate_in(&mut command, home.path()).args(args).current_dir(cwd).output().expect("posh-lsp runs")
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn reports_like_a_compiler_and_fails_on_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "good.posh", "cat: PARAMS:[(type:input_file,size:list,splittable)]\n");
    write(
        dir.path(),
        "lib/bad.posh",
        "# two mistakes\ncat: PARAMS:[(type:input_file,splitable)]\ngrep PARAMS:[(type:str)]\nwc[merge:sum]: PARAMS:[(type:input_file,size:list)]\n",
    );
    write(dir.path(), "lib/notes.txt", "not an annotation file: skipped when a directory is searched\n");
    let out = posh_lsp(&["check", "good.posh", "lib"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r"
    lib/bad.posh:2:31: error[A102]: unknown field `splitable`: did you mean `splittable`?
      help: Replace with `splittable`
    lib/bad.posh:3:6: error[A003]: expected `:` after the command name
    lib/bad.posh:4:1: warning[A203]: `merge` is set but the entry can never be split: add `splittable_across_input` or a `splittable` argument
    ");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "checked 2 file(s): 2 error(s), 1 warning(s)\n");
}

#[test]
fn clean_files_pass_and_warnings_fail_only_when_denied() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "w.posh", "wc[merge:sum]: PARAMS:[(type:input_file,size:list)]\n");
    assert_eq!(posh_lsp(&["check", "w.posh"], dir.path()).status.code(), Some(0));
    assert_eq!(posh_lsp(&["check", "--deny-warnings", "w.posh"], dir.path()).status.code(), Some(1));
}

#[test]
fn the_shipped_library_is_clean() {
    let annotations = concat!(env!("CARGO_MANIFEST_DIR"), "/../annotations");
    let out = posh_lsp(&["check", "--deny-warnings", annotations], Path::new("."));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_missing_path_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = posh_lsp(&["check", "nowhere.posh"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("nowhere.posh: error: "));
}

#[test]
fn explain_prints_a_code_s_documentation() {
    let out = posh_lsp(&["explain", "a106"], Path::new("."));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("A106 (second-splittable, error)\n\nAt most one argument"), "{text}");
    assert_eq!(posh_lsp(&["explain", "Z999"], Path::new(".")).status.code(), Some(2));
}

#[test]
fn scripts_get_the_language_server_s_diagnostics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "posh.toml", "[[mount]]\nname = \"logs\"\npath = \"data\"\nproxy = \"10.0.0.1:4433\"\n");
    std::fs::create_dir(root.join("data")).unwrap();
    std::fs::File::create(root.join("data/big.log")).unwrap().set_len(400_000_000).unwrap();
    write(root, "scripts/report.sh", "#!/bin/bash\n# Größe 🎉\ncat data/big.log | sort\nmytool data/big.log | wc -l\n");
    write(root, "scripts/quiet.bash", "grep -c x data/big.log\n");
    write(root, "scripts/run", "#!/usr/bin/env bash\nsort --bogus data/big.log\n");
    let run = |args: &[&str]| posh_lsp(args, root);
    let out = run(&["check", "scripts", "scripts/run"]);
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r"
    scripts/report.sh:3:1: warning[S003]: this pipeline still moves ~400 MB across the network (bash would move 400 MB; threshold 100 MB)
    scripts/report.sh:4:1: warning[S001]: `mytool` has no annotation, so it runs at the client and its input crosses the network
    scripts/run:2:1: warning[S002]: no annotation entry of `sort` fits: the annotation does not know the option `--bogus`, so it runs at the client
    ");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "checked 3 file(s): 0 error(s), 3 warning(s)\n");
    // Warnings only: success, unless denied.
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(run(&["check", "--deny-warnings", "scripts"]).status.code(), Some(1));
}
