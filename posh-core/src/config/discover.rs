//! Finding the configuration file, the way git finds its repository.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Config, ConfigError, ConfigErrorKind};
use crate::fs::{FileKind, FileSystem};

/// The name of a configuration file, in a project directory and in the user's configuration
/// directory alike.
pub const FILE_NAME: &str = "posh.toml";

/// Finds the configuration file and reads it; `Ok(None)` means the default configuration (no
/// mounts).
///
/// The first of these wins:
/// 1. `explicit` (`--config FILE`): it must exist;
/// 2. `env_config` (`$POSH_CONFIG`; the caller passes `None` when it is unset; an empty path counts
///    as unset): it must exist;
/// 3. the nearest `posh.toml` in `cwd` or one of its ancestors, up to the root;
/// 4. `user_config_dir/posh/posh.toml` (`user_config_dir` is `$XDG_CONFIG_HOME`, usually
///    `~/.config`).
///
/// Relative `explicit` and `env_config` paths are taken relative to `cwd`. In steps 3 and 4 a
/// directory called `posh.toml` is passed over. A file that exists
/// but cannot be read as text is an error, never skipped: skipping it would silently run with
/// another configuration.
pub fn discover(
    fs: &dyn FileSystem,
    explicit: Option<&Path>,
    env_config: Option<&Path>,
    cwd: &Path,
    user_config_dir: Option<&Path>,
) -> Result<Option<(PathBuf, String)>, ConfigError> {
    let named = [(explicit, "given with --config"), (env_config, "named by $POSH_CONFIG")];
    for (path, how) in named {
        let Some(path) = path.filter(|p| !p.as_os_str().is_empty()) else {
            continue;
        };
        let path = cwd.join(path);
        return match fs.metadata(&path) {
            None => Err(ConfigError::file(ConfigErrorKind::NotFound, &path, format!("config file not found ({how})"))),
            Some(_) => read(fs, path).map(Some),
        };
    }
    for dir in cwd.ancestors() {
        let path = dir.join(FILE_NAME);
        if fs.metadata(&path).is_some_and(|m| m.kind == FileKind::File) {
            return read(fs, path).map(Some);
        }
    }
    if let Some(dir) = user_config_dir {
        let path = dir.join("posh").join(FILE_NAME);
        if fs.metadata(&path).is_some_and(|m| m.kind == FileKind::File) {
            return read(fs, path).map(Some);
        }
    }
    Ok(None)
}

/// An XDG base directory from the values of its variable and `$HOME`: the variable when set and
/// not empty, else `HOME/fallback` (`.config`, `.local/state`). `None` when neither is known.
/// The caller reads the environment; posh-core does not.
pub fn xdg_base_dir(variable: Option<OsString>, home: Option<OsString>, fallback: &str) -> Option<PathBuf> {
    match variable.filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home.filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(fallback)),
    }
}

/// [`discover`] and [`Config::parse`]: the configuration to run with.
pub fn load(
    fs: &dyn FileSystem,
    explicit: Option<&Path>,
    env_config: Option<&Path>,
    cwd: &Path,
    user_config_dir: Option<&Path>,
) -> Result<Config, ConfigError> {
    match discover(fs, explicit, env_config, cwd, user_config_dir)? {
        Some((path, text)) => Config::parse(&text, &path),
        None => Ok(Config::default()),
    }
}

fn read(fs: &dyn FileSystem, path: PathBuf) -> Result<(PathBuf, String), ConfigError> {
    if fs.metadata(&path).is_some_and(|m| m.kind == FileKind::Directory) {
        return Err(ConfigError::file(ConfigErrorKind::Unreadable, &path, "is a directory, not a config file"));
    }
    match fs.read_to_string(&path) {
        Some(text) => Ok((path, text)),
        None => Err(ConfigError::file(ConfigErrorKind::Unreadable, &path, "cannot read the config file as UTF-8 text")),
    }
}
