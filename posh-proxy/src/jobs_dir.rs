//! Where a proxy process keeps its jobs' private directories (each job's `TMPDIR`, and its view),
//! so that a proxy killed with `kill -9` leaves nothing behind for long: its next start (or any
//! other proxy's sharing the directory) removes them, and kills the process groups its jobs led
//! (a second line: each job's supervisor kills everything of its job when the proxy dies, see
//! `supervisor`, unless it was killed with it).
//!
//! Layout under the directory (made 0700): `PID.lock`, held with an exclusive flock(2) by the live
//! proxy process PID; `PID/` holding its jobs' directories `job-XXXX/`, and beside each one
//! `job-XXXX.groups`, the process groups its commands lead, one per line. The groups file lies
//! outside the job's directory, which its commands may write: they must not choose what a later
//! proxy kills. A `PID.lock` whose lock is free belongs to a dead proxy (see `liveness`); `PID/`
//! is made only once its lock is held, so one without its lock file was being removed.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::FileType;

use super::confined_fs::{Root, RootKind};

/// This process's directory of jobs; removed when dropped.
#[derive(Debug)]
pub struct JobsDir {
    own: PathBuf,
    lock: PathBuf,
    _held: File,
    /// Directories that a client's finished jobs left as they got them (empty, or holding just
    /// their view), kept for its next jobs, by client. Making a directory, a view and a file for
    /// every job and removing them after cost the proxy 0.4 to 0.5 ms a job on ext4 (inode
    /// allocation skips recently freed inodes), a good part of a small pipeline's cost. A
    /// directory is kept only once nothing of its job lives (its [`JobLife`] released by the
    /// job's supervisor, which has killed and reaped all of it): no process of an earlier job
    /// can change a kept directory or its view after it was checked. Only the same client's jobs
    /// reuse one all the same. A client has an entry from its first job until it is forgotten
    /// (its last connection closed): what its jobs give back then is removed.
    idle: Mutex<HashMap<String, Vec<Kept>>>,
}

/// Held while any process of a job may live: by the job's supervisor (see `supervisor`) until it
/// has killed and reaped everything of the job. A job's directory is kept for reuse only if its
/// job's life is held by nothing else when the directory is given back.
#[derive(Clone, Debug, Default)]
pub struct JobLife(Arc<()>);

impl JobLife {
    /// Whether another holder than this one is left.
    pub(super) fn held_elsewhere(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }
}

/// The most idle directories kept for one client, and for all.
const IDLE_PER_CLIENT: usize = 8;
const IDLE_IN_ALL: usize = 256;

/// A job directory with its groups file, open, and the view made in it, if any.
#[derive(Debug)]
struct Kept {
    dir: PathBuf,
    groups: PathBuf,
    groups_file: File,
    view: Option<View>,
}

impl Kept {
    fn remove(self) {
        // Its jobs wrote in it: removed from the proxy's own directory's descriptor, no link
        // followed (`confined_fs`).
        if let Some(name) = self.dir.file_name() {
            remove_beneath(self.dir.parent().unwrap_or(Path::new("/")), Path::new(name));
        }
        if let Some(name) = self.groups.file_name() {
            remove_beneath(self.groups.parent().unwrap_or(Path::new("/")), Path::new(name));
        }
    }
}

/// Removes `name` (a tree) from the directory `parent` through `confined_fs`; what cannot be
/// removed is left to the next start, which tries again.
fn remove_beneath(parent: &Path, name: &Path) {
    let removed = Root::open(parent, RootKind::State).and_then(|root| root.remove_tree(name));
    if let Err(e) = removed {
        tracing::warn!("cannot remove a job's directory: {e}");
    }
}

/// A job's view (see `Request::view`): `cwd/AT` in its directory, a symlink to the export.
#[derive(Debug, PartialEq)]
struct View {
    at: String,
    export: PathBuf,
}

impl JobsDir {
    /// Cleans what dead proxies left in `parent` (made 0700 if missing), then makes this
    /// process's own directory there.
    #[expect(clippy::disallowed_methods, reason = "the operator's state directory and this process's own in it")]
    pub fn open(parent: &Path) -> io::Result<JobsDir> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        remove_stale(parent);
        let pid = std::process::id();
        let lock = parent.join(format!("{pid}.lock"));
        let held = super::liveness::hold(&lock)?;
        let own = parent.join(pid.to_string());
        // A dead process of the same pid may have left one.
        remove_beneath(parent, Path::new(&pid.to_string()));
        fs::DirBuilder::new().mode(0o700).create(&own)?;
        Ok(JobsDir { own, lock, _held: held, idle: Mutex::default() })
    }

    /// A private directory for one job of `client`: empty, or holding just the view at `view`
    /// (see [`JobDir::view`]) when one of its earlier jobs left that.
    pub fn new_job(self: &Arc<Self>, client: &str, view: Option<&str>) -> io::Result<JobDir> {
        let reused = {
            let mut idle = self.idle();
            let kept = idle.entry(client.to_string()).or_default();
            let same_view = kept.iter().rposition(|k| k.view.as_ref().map(|v| v.at.as_str()) == view);
            let empty = || kept.iter().rposition(|k| k.view.is_none());
            same_view.or_else(empty).map(|at| kept.swap_remove(at))
        };
        let kept = match reused {
            Some(kept) => kept,
            None => {
                // In this process's own directory, which no job may write.
                #[expect(clippy::disallowed_methods, reason = "this proxy's own directory of jobs")]
                let dir = tempfile::Builder::new().prefix("job-").tempdir_in(&self.own)?.keep();
                let groups = dir.with_extension("groups");
                #[expect(clippy::disallowed_methods, reason = "this proxy's own directory of jobs")]
                let groups_file = OpenOptions::new().create(true).append(true).open(&groups)?;
                Kept { dir, groups, groups_file, view: None }
            }
        };
        Ok(JobDir { kept: Some(kept), jobs: self.clone(), client: client.to_string(), life: JobLife::default() })
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Kept>>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps a finished job's directory for `client`'s next job if nothing of the job may live
    /// (`life` held by nothing else), it holds just what the job got (nothing, or its view) and
    /// there is room; removes it otherwise.
    fn give_back(&self, client: String, kept: Kept, life: &JobLife) {
        let as_given = !life.held_elsewhere() && holds_only(&kept.dir, kept.view.as_ref());
        let mut idle = self.idle();
        let room = idle.values().map(Vec::len).sum::<usize>() < IDLE_IN_ALL;
        if let Some(own) = idle.get_mut(&client)
            && as_given
            && room
            && own.len() < IDLE_PER_CLIENT
            && kept.groups_file.set_len(0).is_ok()
        {
            own.push(kept);
            return;
        }
        drop(idle);
        kept.remove();
    }

    /// Removes the directories kept for `client`, whose last connection closed; those its
    /// running jobs give back later are removed too.
    pub fn forget(&self, client: &str) {
        let kept = self.idle().remove(client).unwrap_or_default();
        kept.into_iter().for_each(Kept::remove);
    }

    /// Removes this process's directory now (a process that exits runs no destructors of what
    /// its threads still share).
    pub fn remove(&self) {
        if let (Some(parent), Some(name)) = (self.own.parent(), self.own.file_name()) {
            remove_beneath(parent, Path::new(name));
        }
        #[expect(clippy::disallowed_methods, reason = "this proxy's own lock file")]
        let _ = fs::remove_file(&self.lock);
    }
}

impl Drop for JobsDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// One job's directory; when dropped, kept for its client's next job (see `JobsDir::idle`) or
/// removed with its groups file.
#[derive(Debug)]
pub struct JobDir {
    kept: Option<Kept>,
    jobs: Arc<JobsDir>,
    client: String,
    life: JobLife,
}

impl JobDir {
    fn kept(&self) -> &Kept {
        self.kept.as_ref().expect("held until dropped")
    }

    pub fn path(&self) -> &Path {
        &self.kept().dir
    }

    /// The job's view: a directory standing for the client's working directory when that is
    /// above the mount, holding only the directories down to the mount and, at `at` (a relative
    /// path), a symlink to `export`, so that the client's relative words reach the export. Made
    /// (or, kept from an earlier job, checked) from the job directory's descriptor: a link that
    /// a process of an earlier job planted on the way is refused, never followed.
    pub fn view(&mut self, at: &str, export: &Path) -> io::Result<PathBuf> {
        let kept = self.kept.as_mut().expect("held until dropped");
        let cwd = kept.dir.join("cwd");
        let wanted = View { at: at.to_string(), export: export.to_path_buf() };
        let root = Root::open(&kept.dir, RootKind::JobDir)?;
        let link = Path::new("cwd").join(at);
        if kept.view.as_ref() == Some(&wanted) {
            // What the earlier job left may have been changed since it was checked.
            return match root.read_link(&link) {
                Ok(target) if target == export => Ok(cwd),
                _ => Err(io::Error::other("the job's directory was changed since its last job")),
            };
        }
        if kept.view.is_some() {
            return Err(io::Error::other("the job's directory holds another view"));
        }
        root.create_dir_all(link.parent().unwrap_or(Path::new("cwd")), 0o700)?;
        root.symlink(export, &link)?;
        kept.view = Some(wanted);
        Ok(cwd)
    }

    /// The job's life, for its supervisor to hold (see [`JobLife`]).
    pub fn life(&self) -> JobLife {
        self.life.clone()
    }

    /// Writes down a process group the job's commands lead, before anything waits on it.
    pub fn record_group(&self, pgid: u32) -> io::Result<()> {
        (&self.kept().groups_file).write_all(format!("{pgid}\n").as_bytes())
    }
}

impl Drop for JobDir {
    fn drop(&mut self) {
        if let Some(kept) = self.kept.take() {
            self.jobs.give_back(std::mem::take(&mut self.client), kept, &self.life);
        }
    }
}

/// Whether `dir` holds exactly `view` (each directory on the way to its link holding only the
/// next one, the link leading to the export), or nothing when there is no view. Looked at from
/// the directory's descriptor (`confined_fs`): a link a job planted is read, never followed.
fn holds_only(dir: &Path, view: Option<&View>) -> bool {
    let Ok(root) = Root::open(dir, RootKind::JobDir) else { return false };
    let only_entry = |rel: &Path| -> Option<std::ffi::OsString> {
        let mut entries = root.entries(rel).ok()?;
        (entries.len() == 1).then(|| entries.remove(0))
    };
    let Some(view) = view else {
        return root.entries(Path::new("")).is_ok_and(|entries| entries.is_empty());
    };
    let mut current = PathBuf::new();
    let steps = std::iter::once(std::path::Component::Normal("cwd".as_ref())).chain(Path::new(&view.at).components());
    for step in steps {
        let std::path::Component::Normal(name) = step else { return false };
        if only_entry(&current).as_deref() != Some(name) {
            return false;
        }
        current.push(name);
    }
    let is_link = root.stat(&current).is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink);
    is_link && root.read_link(&current).is_ok_and(|target| target == view.export)
}

/// Removes the directories of proxies that are gone, killing the process groups their jobs led.
/// `JobsDir::open` does it first; a run settling what another, killed, left does it alone.
#[expect(
    clippy::disallowed_methods,
    reason = "the operator's state directory: the lock and groups files only this proxy writes"
)]
pub fn remove_stale(parent: &Path) {
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

#[expect(
    clippy::disallowed_methods,
    reason = "the operator's state directory: the lock and groups files only this proxy writes"
)]
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
    if let (Some(parent), Some(name)) = (own.parent(), own.file_name()) {
        tracing::info!("removing {}, left by a proxy that is gone", own.display());
        remove_beneath(parent, Path::new(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::FlockOperation;

    #[test]
    fn an_empty_job_directory_is_kept_for_its_clients_next_job_only() {
        let parent = tempfile::tempdir().unwrap();
        let jobs = Arc::new(JobsDir::open(parent.path()).unwrap());
        let first = jobs.new_job("a", None).unwrap();
        let path = first.path().to_path_buf();
        first.record_group(4242).unwrap();
        drop(first);
        assert!(path.is_dir(), "kept");
        assert_eq!(fs::read_to_string(path.with_extension("groups")).unwrap(), "", "its groups forgotten");
        // Another client's job gets a directory of its own.
        let other = jobs.new_job("b", None).unwrap();
        assert_ne!(other.path(), path);
        let again = jobs.new_job("a", None).unwrap();
        assert_eq!(again.path(), path);
        // A job that left something behind: its directory goes.
        fs::write(again.path().join("spill"), "x").unwrap();
        drop(again);
        assert!(!path.exists() && !path.with_extension("groups").exists());
        // At most a few idle directories per client.
        let many: Vec<JobDir> = (0..IDLE_PER_CLIENT + 3).map(|_| jobs.new_job("c", None).unwrap()).collect();
        drop(many);
        assert_eq!(jobs.idle()["c"].len(), IDLE_PER_CLIENT);
        let dirs = fs::read_dir(parent.path().join(std::process::id().to_string())).unwrap();
        assert_eq!(dirs.flatten().filter(|e| e.path().is_dir()).count(), IDLE_PER_CLIENT + 1, "c's and b's");
    }

    #[test]
    fn a_job_directory_is_kept_only_once_nothing_of_its_job_lives() {
        let parent = tempfile::tempdir().unwrap();
        let jobs = Arc::new(JobsDir::open(parent.path()).unwrap());
        // A job's supervisor still holds its life as the job gives its directory back.
        let job = jobs.new_job("a", None).unwrap();
        let held = job.life();
        let path = job.path().to_path_buf();
        drop(job);
        assert!(!path.exists(), "removed: something of its job may still live");
        drop(held);
        // Released first: kept, and the client's next job gets it.
        let job = jobs.new_job("a", None).unwrap();
        let (path, life) = (job.path().to_path_buf(), job.life());
        drop(life);
        drop(job);
        assert!(path.is_dir());
        assert_eq!(jobs.new_job("a", None).unwrap().path(), path);
    }

    #[test]
    fn a_job_directory_keeps_its_view_only_as_it_was_made() {
        let parent = tempfile::tempdir().unwrap();
        let export = parent.path().join("export");
        fs::create_dir(&export).unwrap();
        let jobs = Arc::new(JobsDir::open(&parent.path().join("jobs")).unwrap());
        let mut first = jobs.new_job("a", Some("m/data")).unwrap();
        let cwd = first.view("m/data", &export).unwrap();
        assert_eq!(fs::read_link(cwd.join("m/data")).unwrap(), export);
        let path = first.path().to_path_buf();
        drop(first);
        // The same view again: the same directory, its view untouched.
        let mut again = jobs.new_job("a", Some("m/data")).unwrap();
        assert_eq!(again.path(), path);
        assert_eq!(again.view("m/data", &export).unwrap(), cwd);
        // Something beside the view: the directory goes.
        fs::write(cwd.join("m/spill"), "x").unwrap();
        drop(again);
        assert!(!path.exists());
        // A view replaced by another link: the directory goes.
        let mut third = jobs.new_job("a", Some("data")).unwrap();
        let cwd = third.view("data", &export).unwrap();
        let path = third.path().to_path_buf();
        fs::remove_file(cwd.join("data")).unwrap();
        std::os::unix::fs::symlink("/", cwd.join("data")).unwrap();
        drop(third);
        assert!(!path.exists());
        // An empty directory serves a job with a view, or without; one with a view only that view.
        drop(jobs.new_job("a", None).unwrap());
        let mut viewed = jobs.new_job("a", Some("data")).unwrap();
        viewed.view("data", &export).unwrap();
        drop(viewed);
        let plain = jobs.new_job("a", None).unwrap();
        assert_eq!(fs::read_dir(plain.path()).unwrap().count(), 0, "a fresh one: the kept one has a view");
        // The client's last connection closes: what is kept goes, and so does what a job still
        // running gives back after.
        let kept = jobs.idle()["a"].iter().map(|k| k.dir.clone()).collect::<Vec<_>>();
        assert!(!kept.is_empty());
        let running = plain.path().to_path_buf();
        jobs.forget("a");
        drop(plain);
        assert!(kept.iter().chain([&running]).all(|dir| !dir.exists()), "nothing left of a");
        assert!(!jobs.idle().contains_key("a"));
    }

    /// Issue 37, E2: a link planted in a kept directory (by a process an earlier job left) is
    /// refused, not followed, whether the directory was kept empty or with its view.
    #[test]
    fn a_view_is_never_made_or_taken_through_a_planted_link() {
        let parent = tempfile::tempdir().unwrap();
        let [export, outside] = ["export", "outside"].map(|d| parent.path().join(d));
        fs::create_dir(&export).unwrap();
        fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&export, outside.join("data")).unwrap();
        let jobs = Arc::new(JobsDir::open(&parent.path().join("jobs")).unwrap());
        let empty = jobs.new_job("a", None).unwrap();
        std::os::unix::fs::symlink(&outside, empty.path().join("cwd")).unwrap();
        let mut viewed = empty;
        assert!(viewed.view("m/data", &export).is_err(), "no directory made through the link");
        drop(viewed);
        let mut first = jobs.new_job("a", Some("data")).unwrap();
        let cwd = first.view("data", &export).unwrap();
        drop(first);
        fs::remove_file(cwd.join("data")).unwrap();
        fs::remove_dir(&cwd).unwrap();
        std::os::unix::fs::symlink(&outside, &cwd).unwrap();
        let mut again = jobs.new_job("a", Some("data")).unwrap();
        assert_eq!(again.path(), cwd.parent().unwrap(), "the kept directory");
        let refused = again.view("data", &export).unwrap_err();
        assert!(refused.to_string().contains("changed since its last job"), "{refused}");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 1, "nothing made outside");
    }

    #[test]
    fn a_dead_proxys_jobs_are_removed_and_a_live_ones_kept() {
        let parent = tempfile::tempdir().unwrap();
        let live = Arc::new(JobsDir::open(parent.path()).unwrap());
        let job = live.new_job("client", None).unwrap();
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
        drop(Arc::try_unwrap(live).unwrap());
        let mut left: Vec<_> = fs::read_dir(parent.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        left.sort();
        assert_eq!(left, ["777777", "777777.lock"], "ours is gone once dropped");
    }
}
