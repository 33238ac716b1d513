//! Per-process state that outlives a process killed outright: a file the live process holds
//! locked (flock(2), through `File::lock`), so that any other process can tell a dead owner's
//! leftovers (the lock is free) from a live one's (it is held), and clean them up. The proxy's
//! journal and its jobs' directories are kept this way.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// Creates (or opens) `path` and holds it locked for as long as the returned file lives. Waits
/// while another process cleaning up a dead owner's file of the same name holds it; if that
/// process then deleted it, makes another.
#[expect(clippy::disallowed_methods, reason = "lock files in the operator's state directory")]
pub fn hold(path: &Path) -> io::Result<File> {
    loop {
        let file = OpenOptions::new().create(true).read(true).append(true).open(path)?;
        file.lock()?;
        if file.metadata()?.nlink() > 0 {
            return Ok(file);
        }
    }
}

/// `path` opened and locked if its owner is gone (its lock is free and nobody removed it
/// meanwhile): the caller may then clean up after it, and removes the file last. `None` for a
/// live owner's file, or one that is gone.
#[expect(clippy::disallowed_methods, reason = "lock files in the operator's state directory")]
pub fn owner_gone(path: &Path) -> Option<File> {
    let file = OpenOptions::new().read(true).write(true).open(path).ok()?;
    file.try_lock().ok()?;
    (file.metadata().ok()?.nlink() > 0).then_some(file)
}
