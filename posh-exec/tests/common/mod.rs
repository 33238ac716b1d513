//! What the posh-exec tests share.

use std::path::Path;
use std::process::Command;

/// `program` (bash, or posh-exec) to run in `dir` in the C locale, isolated from the caller's posh
/// configuration: posh-exec reads `$POSH_CONFIG` and the user's config directory, bash does not.
pub fn isolated(program: &str, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env_remove("POSH_CONFIG")
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_STATE_HOME", dir);
    command
}
