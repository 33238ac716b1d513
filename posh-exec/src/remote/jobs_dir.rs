//! Where a proxy process keeps its jobs' private directories (each job's `TMPDIR`, and its view),
//! so that a proxy killed with `kill -9` leaves nothing behind for long: its next start (or any
//! other proxy's sharing the directory) removes them, and kills what its jobs left running.
//!
//! Layout under the directory (made 0700): `PID.lock`, held with an exclusive flock(2) by the live
//! proxy process PID; `PID/` holding its jobs' directories `job-XXXX/`, and beside each one
//! `job-XXXX.groups`, the process groups its commands lead, one per line. The groups file lies
//! outside the job's directory, which its commands may write: they must not choose what a later
//! proxy kills. A `PID.lock` whose lock is free belongs to a dead proxy (see `liveness`); `PID/`
//! is made only once its lock is held, so one without its lock file was being removed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

/// This process's directory of jobs; removed when dropped.
#[derive(Debug)]
pub struct JobsDir {
    own: PathBuf,
    lock: PathBuf,
    _held: File,
}

impl JobsDir {
    /// Cleans what dead proxies left in `parent` (made 0700 if missing), then makes this
    /// process's own directory there.
    pub fn open(parent: &Path) -> io::Result<JobsDir> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        remove_stale(parent);
        let pid = std::process::id();
        let lock = parent.join(format!("{pid}.lock"));
        let held = super::liveness::hold(&lock)?;
        let own = parent.join(pid.to_string());
        // A dead process of the same pid may have left one.
        let _ = fs::remove_dir_all(&own);
        fs::DirBuilder::new().mode(0o700).create(&own)?;
        Ok(JobsDir { own, lock, _held: held })
    }

    /// A private directory for one job.
    pub fn new_job(&self) -> io::Result<JobDir> {
        let dir = tempfile::Builder::new().prefix("job-").tempdir_in(&self.own)?;
        let groups = dir.path().with_extension("groups");
        let groups_file = OpenOptions::new().create(true).append(true).open(&groups)?;
        Ok(JobDir { dir, groups, groups_file })
    }
}

impl JobsDir {
    /// Removes this process's directory now (a process that exits runs no destructors of what
    /// its threads still share).
    pub fn remove(&self) {
        let _ = fs::remove_dir_all(&self.own);
        let _ = fs::remove_file(&self.lock);
    }
}

impl Drop for JobsDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// One job's directory; removed, with its groups file, when dropped.
#[derive(Debug)]
pub struct JobDir {
    dir: tempfile::TempDir,
    groups: PathBuf,
    /// Open for the job's life: one open per job, not one per command.
    groups_file: File,
}

impl JobDir {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes down a process group the job's commands lead, before anything waits on it.
    pub fn record_group(&self, pgid: u32) -> io::Result<()> {
        (&self.groups_file).write_all(format!("{pgid}\n").as_bytes())
    }
}

impl Drop for JobDir {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.groups);
    }
}

/// Removes the directories of proxies that are gone, killing the process groups their jobs led.
fn remove_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    let names: Vec<String> = entries.flatten().filter_map(|e| e.file_name().into_string().ok()).collect();
    for name in &names {
        let Some(pid) = name.strip_suffix(".lock") else { continue };
        let path = parent.join(name);
        let Some(_dead) = super::liveness::owner_gone(&path) else { continue };
        remove_jobs_of(&parent.join(pid));
        let _ = fs::remove_file(&path);
    }
    for name in &names {
        let lonely = name.parse::<u32>().is_ok() && !names.contains(&format!("{name}.lock"));
        if lonely {
            remove_jobs_of(&parent.join(name));
        }
    }
}

fn remove_jobs_of(own: &Path) {
    if let Ok(entries) = fs::read_dir(own) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "groups") {
                let text = fs::read_to_string(&path).unwrap_or_default();
                for pgid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    if let Some(pgid) = rustix::process::Pid::from_raw(pgid) {
                        tracing::info!("killing process group {pgid} left by a proxy that is gone");
                        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
                    }
                }
            }
        }
    }
    if own.exists() {
        tracing::info!("removing {}, left by a proxy that is gone", own.display());
        let _ = fs::remove_dir_all(own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::FlockOperation;

    #[test]
    fn a_dead_proxys_jobs_are_removed_and_a_live_ones_kept() {
        let parent = tempfile::tempdir().unwrap();
        let live = JobsDir::open(parent.path()).unwrap();
        let job = live.new_job().unwrap();
        // A proxy that died: its lock file is free, its job directory still there.
        fs::create_dir_all(parent.path().join("999999/job-x")).unwrap();
        fs::write(parent.path().join("999999.lock"), "").unwrap();
        fs::create_dir_all(parent.path().join("888888/job-y")).unwrap();
        // Another process's live directory (its lock held elsewhere): left alone.
        fs::create_dir_all(parent.path().join("777777/job-z")).unwrap();
        let held = File::create(parent.path().join("777777.lock")).unwrap();
        let other = File::open(parent.path().join("777777.lock")).unwrap();
        rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive).unwrap();
        remove_stale(parent.path());
        assert!(!parent.path().join("999999").exists() && !parent.path().join("999999.lock").exists());
        assert!(!parent.path().join("888888").exists());
        assert!(parent.path().join("777777/job-z").exists());
        assert!(job.path().is_dir(), "our own job stays");
        drop((job, held, other));
        drop(live);
        let mut left: Vec<_> = fs::read_dir(parent.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        left.sort();
        assert_eq!(left, ["777777", "777777.lock"], "ours is gone once dropped");
    }
}
