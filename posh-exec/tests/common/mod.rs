//! What the posh-exec tests share: every process a test starts (posh-exec, posh-proxy, and bash
//! to compare with) gets a home of the test's own through [`isolate`] (see `isolation.rs`).
#![allow(dead_code)] // each test binary uses some of it

use std::path::Path;
use std::process::Command;

#[path = "isolation.rs"]
mod isolation;
#[allow(unused_imports)] // each test binary uses some of it
pub use isolation::isolate;

/// `program` (bash, or posh-exec) to run in `dir` in the C locale, with `dir` as its home, its
/// config and its state directory (see [`isolate`]).
pub fn isolated(program: &str, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir).env("LC_ALL", "C");
    isolate(&mut command, dir, dir, dir);
    command
}

/// A copy of `binaries` (paths) in a fresh directory's `bin/`, with nothing beside it: what a
/// binary looks for beside itself (`../lib/posh/`, `posh-run`) is there only if the test puts
/// it there, never found in a shared parent such as `/tmp`.
pub fn copied_alone(binaries: &[&Path]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("bin")).expect("mkdir bin");
    for binary in binaries {
        let name = binary.file_name().expect("a file name");
        std::fs::copy(binary, dir.path().join("bin").join(name)).expect("copy");
    }
    dir
}
