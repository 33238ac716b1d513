//! The home every process a test starts gets (posh-exec, posh-proxy, posh-lsp, an editor, and
//! bash to compare with), so that nothing of the machine's user (a posh.toml, learned ratios in
//! `~/.local/state/posh`, an identity) reaches a test and a test leaves nothing in the user's
//! home. One file for every test binary of the workspace: posh-exec's (`common`), posh-lsp's
//! and the root package's include it by path.
#![allow(dead_code)] // each test binary uses some of it

use std::path::{Path, PathBuf};
use std::process::Command;

/// What [`isolate`] removes from the environment: a configuration named outside the home, and
/// the runtime directory (as on a machine without one; Neovim would want one that exists).
pub const REMOVED: [&str; 2] = ["POSH_CONFIG", "XDG_RUNTIME_DIR"];

/// `HOME` and every XDG base directory: data and cache under `home`, config and state as given
/// (tests look into those). The directories need not exist: posh makes what it needs.
pub fn home_env(home: &Path, config: &Path, state: &Path) -> [(&'static str, PathBuf); 5] {
    [
        ("HOME", home.to_path_buf()),
        ("XDG_CONFIG_HOME", config.to_path_buf()),
        ("XDG_STATE_HOME", state.to_path_buf()),
        ("XDG_CACHE_HOME", home.join(".cache")),
        ("XDG_DATA_HOME", home.join(".local/share")),
    ]
}

/// [`home_env`] with everything under `home`, as a user's would be.
pub fn home_env_in(home: &Path) -> [(&'static str, PathBuf); 5] {
    home_env(home, &home.join(".config"), &home.join(".local/state"))
}

/// `command` with [`home_env`], without [`REMOVED`].
pub fn isolate<'a>(command: &'a mut Command, home: &Path, config: &Path, state: &Path) -> &'a mut Command {
    for name in REMOVED {
        command.env_remove(name);
    }
    command.envs(home_env(home, config, state))
}

/// [`isolate`] with everything under `home`.
pub fn isolate_in<'a>(command: &'a mut Command, home: &Path) -> &'a mut Command {
    isolate(command, home, &home.join(".config"), &home.join(".local/state"))
}
