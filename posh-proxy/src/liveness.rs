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

/// Creates `path`, which does not exist yet, and holds it locked: it is made under another name
/// and renamed once locked, so nobody ever finds it unlocked while its owner lives. (A run's
/// private directory is cleaned by other runs when its lock is free: between a plain creation
/// and the lock, a starting run's directory was taken for a dead one's and removed under it.)
#[expect(clippy::disallowed_methods, reason = "lock files in the operator's state directory")]
pub fn hold_new(path: &Path) -> io::Result<File> {
    let mut staged = path.as_os_str().to_owned();
    staged.push(".new");
    let staged = std::path::PathBuf::from(staged);
    let file = OpenOptions::new().create_new(true).read(true).append(true).open(&staged)?;
    file.lock()?;
    std::fs::rename(&staged, path)?;
    Ok(file)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_lock_appears_held_and_is_free_once_its_owner_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embedded.lock");
        let held = hold_new(&path).unwrap();
        assert!(path.is_file());
        assert!(owner_gone(&path).is_none(), "a live owner's lock is not taken");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["embedded.lock"], "nothing left under the staging name");
        drop(held);
        assert!(owner_gone(&path).is_some(), "a gone owner's lock is free");
    }
}
