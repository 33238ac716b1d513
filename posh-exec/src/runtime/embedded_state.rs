//! Where a run's embedded proxies keep their jobs' directories and their output journal: in the
//! run's private directory (`$TMPDIR/posh-run-XXXX`, mode 0700, removed when the run ends), not
//! in the user's home, which a script may list. An embedded proxy lives and dies with its run, so
//! a run needs nothing of them after it ends, unless it was killed (`kill -9`): then its
//! directory stays, with the journal of the outputs its jobs were changing and the process
//! groups its jobs led. The next run that starts an embedded proxy in the same `$TMPDIR` settles
//! those (outputs put back as they were, leftover commands killed) and removes that directory.
//!
//! `RUN/embedded.lock` is held locked (see `posh_proxy::liveness`) by the run from before it makes
//! `RUN/embedded/`, so a run whose lock is free is gone; a run that never started an embedded
//! proxy has no lock file and is left alone.

use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use posh_proxy::{jobs_dir, journal, liveness};

/// The prefix of a run's private directory (`session::RuntimeSocket`).
pub const RUN_DIR_PREFIX: &str = "posh-run-";

/// A run's embedded proxies' directory, in its private directory.
#[derive(Debug)]
pub struct EmbeddedState {
    dir: PathBuf,
    _alive: File,
}

impl EmbeddedState {
    /// Makes `run_dir/embedded`, after settling what killed runs left beside `run_dir`.
    pub fn open(run_dir: &Path) -> io::Result<EmbeddedState> {
        settle_killed_runs(run_dir);
        let alive = liveness::hold_new(&run_dir.join("embedded.lock"))?;
        let dir = run_dir.join("embedded");
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(EmbeddedState { dir, _alive: alive })
    }

    /// The parent of the embedded proxies' jobs' directories (see `posh_proxy::jobs_dir`).
    pub fn jobs(&self) -> PathBuf {
        self.dir.join("jobs")
    }

    /// The embedded proxies' journal directory (see `posh_proxy::journal`).
    pub fn journal(&self) -> PathBuf {
        self.dir.join("journal")
    }
}

/// Settles and removes the private directories, beside `run_dir`, of this user's runs that
/// started an embedded proxy and are gone.
fn settle_killed_runs(run_dir: &Path) {
    let Some(parent) = run_dir.parent() else { return };
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let uid = rustix::process::getuid().as_raw();
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry.file_name().to_str().is_some_and(|n| n.starts_with(RUN_DIR_PREFIX))
            && path != run_dir
            && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if !ours {
            continue;
        }
        let Some(_gone) = liveness::owner_gone(&path.join("embedded.lock")) else { continue };
        let journal = path.join("embedded/journal");
        if journal.is_dir()
            && let Err(e) = journal::recover(&journal)
        {
            tracing::warn!("{}: cannot settle a killed run's outputs: {e}", journal.display());
            continue;
        }
        jobs_dir::remove_stale(&path.join("embedded/jobs"));
        let _ = std::fs::remove_dir_all(&path);
    }
}
