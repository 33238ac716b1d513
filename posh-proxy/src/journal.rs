//! What the proxy's jobs are doing to output files (staging a new content, appending in place,
//! creating a path, keeping a backup), written down before it is done, so that a proxy killed in
//! the middle of a job (kill -9, a crash) undoes it at its next start.
//!
//! Each proxy process appends JSON lines to its own file, `DIR/journal-PID.jsonl`, and holds an
//! exclusive `flock` on it while it lives; it removes the file when it ends with nothing left
//! unsettled. At start, a proxy replays every other journal in `DIR` whose lock it can take (its
//! proxy is gone) and deletes it; a live proxy's journal is locked and left alone. The records
//! reach the file before the change they describe, with a plain write: they survive the proxy's
//! death, not the machine's (no fsync).
//!
//! A record names the root its paths are below (the export, in practice) and holds paths
//! relative to it, with the device and inode of each file it will touch as they were when it
//! was written. Settling, now or at a replay, goes through `confined_fs` from that root's
//! descriptor, and a file that is no longer the one recorded (a job swapped the name for a link
//! out, or for another file) is left alone: what a job did after the record can never turn the
//! replay into a write outside the export.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::{self, BufRead as _, Write as _};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::OFlags;
use serde::{Deserialize, Serialize};

use super::confined_fs::{self, FileId, FsError, Root, RootKind};

/// The root a record's paths are relative to: which of the proxy's directories, and where it
/// was when the record was written.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct At {
    pub kind: RootKind,
    pub root: PathBuf,
}

impl At {
    /// Where `root`'s paths are.
    pub fn of(root: &Root) -> At {
        At { kind: root.kind(), root: root.path().to_path_buf() }
    }
}

/// One line of a journal. `id` names one output of one job; its last change record says what
/// undoing or committing it means. Paths are relative to `at`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Record {
    /// A temporary file beside an output, not yet holding anything worth keeping: removed either
    /// way (written down before the file exists, so by name alone).
    Scratch { id: u64, at: At, temp: PathBuf },
    /// `temp` (`temp_file`) receives the new content of `target` (`target_file`, the regular
    /// file the job's `>` opened); committing copies it into that file, which keeps its inode
    /// (renames it there when the name is gone), undoing removes it.
    Staged { id: u64, at: At, temp: PathBuf, temp_file: FileId, target: PathBuf, target_file: FileId },
    /// `path` (`file`) is written in place from length `len` on (`>>`, an appending word):
    /// undoing truncates it back to `len`.
    Appended { id: u64, at: At, path: PathBuf, file: FileId, len: u64 },
    /// `path` did not exist: undoing removes it (a directory with everything in it).
    Created { id: u64, at: At, path: PathBuf },
    /// `backup` (`backup_file`) holds the whole old content of `path` (`file`) while a command
    /// rewrites it in place: undoing puts it back, committing removes it.
    Backup { id: u64, at: At, path: PathBuf, file: FileId, backup: PathBuf, backup_file: FileId },
    /// `kept` (`kept_file`) is a hard link to what `path` named (any file but a directory; a
    /// copy of a regular file where the filesystem refuses the link) while a command removes or
    /// replaces the name: undoing renames it back over `path`, committing removes it.
    Kept { id: u64, at: At, path: PathBuf, kept: PathBuf, kept_file: FileId },
    /// `path` was an empty directory of this mode while a command removes or replaces it:
    /// undoing makes it again if it is gone.
    RemovedDir { id: u64, at: At, path: PathBuf, mode: u32 },
    /// The output is being committed: from here on it is rolled forward, never back.
    Commit { id: u64 },
    /// The output is settled (committed or undone).
    Settled { id: u64 },
}

impl Record {
    /// The output it is about.
    pub fn id(&self) -> u64 {
        match self {
            Record::Scratch { id, .. }
            | Record::Staged { id, .. }
            | Record::Appended { id, .. }
            | Record::Created { id, .. }
            | Record::Backup { id, .. }
            | Record::Kept { id, .. }
            | Record::RemovedDir { id, .. }
            | Record::Commit { id }
            | Record::Settled { id } => *id,
        }
    }

    /// The root its paths are relative to (none for a commit or a settlement).
    pub fn at(&self) -> Option<&At> {
        match self {
            Record::Scratch { at, .. }
            | Record::Staged { at, .. }
            | Record::Appended { at, .. }
            | Record::Created { at, .. }
            | Record::Backup { at, .. }
            | Record::Kept { at, .. }
            | Record::RemovedDir { at, .. } => Some(at),
            Record::Commit { .. } | Record::Settled { .. } => None,
        }
    }
}

/// How settling an output went, when it did not fail.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// A file was not the one recorded any more, and was left as it is: why.
    LeftAlone(String),
}

/// Makes the output's change permanent: the new content in place, temporary files gone.
/// Idempotent: a proxy that died halfway does it again at its next start. `root` is the one the
/// record's `at` names.
pub fn roll_forward(root: &Root, record: &Record) -> Result<Outcome, FsError> {
    match record {
        Record::Scratch { temp, .. } => remove_scratch(root, temp),
        Record::Backup { backup: temp, backup_file: file, .. } | Record::Kept { kept: temp, kept_file: file, .. } => {
            remove_ours(root, temp, *file)
        }
        Record::Staged { temp, temp_file, target, target_file, .. } => {
            let Some(temp_now) = root.stat_if_present(temp)? else {
                return Ok(Outcome::Done); // renamed or copied and removed already
            };
            if FileId::of(&temp_now) != *temp_file {
                return Ok(not_the_one(root, temp, "the temporary file"));
            }
            match root.stat_if_present(target)? {
                // The job removed the name: the new content takes it.
                None => root.rename_new(temp, target).map(|()| Outcome::Done),
                Some(now) if FileId::of(&now) == *target_file && confined_fs::is_regular(&now) => {
                    // As bash's `>`: the file keeps its inode, owner, mode, links and attributes.
                    match copy_over(root, (temp, *temp_file), (target, *target_file))? {
                        Copied::Done => Ok(Outcome::Done),
                        Copied::SourceChanged => Ok(not_the_one(root, temp, "the temporary file")),
                        Copied::TargetChanged => {
                            remove_ours(root, temp, *temp_file)?;
                            Ok(not_the_one(root, target, "the file the job's `>` opened"))
                        }
                    }
                }
                // The job's own commands made it another file (a directory, a link): as under
                // bash, whose `>` wrote into the file it opened, the name keeps what they made.
                Some(_) => {
                    remove_ours(root, temp, *temp_file)?;
                    Ok(not_the_one(root, target, "the file the job's `>` opened"))
                }
            }
        }
        Record::Appended { .. }
        | Record::Created { .. }
        | Record::RemovedDir { .. }
        | Record::Commit { .. }
        | Record::Settled { .. } => Ok(Outcome::Done),
    }
}

/// What [`copy_over`] did.
enum Copied {
    Done,
    /// The file to copy from is no longer the one recorded: nothing was copied.
    SourceChanged,
    /// The file to copy into is no longer the one recorded: nothing was copied.
    TargetChanged,
}

/// Copies `source`'s content into `target` (which keeps its inode) and removes `source`, each
/// opened from `root` and checked to be the file recorded (its device and inode) first.
fn copy_over(root: &Root, source: (&Path, FileId), target: (&Path, FileId)) -> Result<Copied, FsError> {
    let from = root.open_regular(source.0, OFlags::RDONLY)?;
    let to = root.open_regular(target.0, OFlags::WRONLY)?;
    if FileId::of_file(&from).ok() != Some(source.1) {
        return Ok(Copied::SourceChanged);
    }
    if FileId::of_file(&to).ok() != Some(target.1) {
        return Ok(Copied::TargetChanged);
    }
    confined_fs::copy_contents(&from, &to).map_err(|e| FsError::Os { place: root.place(target.0), source: e })?;
    root.remove_file(source.0)?;
    Ok(Copied::Done)
}

/// Puts the output back as it was before the job. Idempotent, like [`roll_forward`].
pub fn roll_back(root: &Root, record: &Record) -> Result<Outcome, FsError> {
    match record {
        Record::Scratch { temp, .. } => remove_scratch(root, temp),
        Record::Staged { temp, temp_file, .. } => remove_ours(root, temp, *temp_file),
        Record::Appended { path, file, len, .. } => {
            let Some(now) = root.stat_if_present(path)? else { return Ok(Outcome::Done) };
            // Another file now lives there: not ours to cut.
            if FileId::of(&now) != *file || !confined_fs::is_regular(&now) {
                return Ok(not_the_one(root, path, "the file appended to"));
            }
            if now.st_size as u64 > *len {
                let opened = root.open_regular(path, OFlags::WRONLY)?;
                if FileId::of_file(&opened).ok() != Some(*file) {
                    return Ok(not_the_one(root, path, "the file appended to"));
                }
                opened.set_len(*len).map_err(|source| FsError::Os { place: root.place(path), source })?;
            }
            Ok(Outcome::Done)
        }
        Record::Created { path, .. } => root.remove_tree(path).map(|_| Outcome::Done),
        Record::Backup { path, file, backup, backup_file, .. } => {
            let Some(backup_now) = root.stat_if_present(backup)? else { return Ok(Outcome::Done) };
            if FileId::of(&backup_now) != *backup_file {
                return Ok(not_the_one(root, backup, "the backup"));
            }
            match root.stat_if_present(path)? {
                // Gone or replaced by another file: the backup takes the name back (a rename
                // replaces the name itself, never what a link there points at).
                None => root.rename_new(backup, path).map(|()| Outcome::Done),
                Some(now) if FileId::of(&now) == *file && confined_fs::is_regular(&now) => {
                    match copy_over(root, (backup, *backup_file), (path, *file))? {
                        Copied::Done => Ok(Outcome::Done),
                        Copied::SourceChanged | Copied::TargetChanged => {
                            Ok(not_the_one(root, path, "the file backed up"))
                        }
                    }
                }
                Some(now) if !confined_fs::is_dir(&now) => root.rename(backup, path).map(|()| Outcome::Done),
                Some(_) => {
                    remove_ours(root, backup, *backup_file)?;
                    Ok(not_the_one(root, path, "the file backed up"))
                }
            }
        }
        Record::Kept { path, kept, kept_file, .. } => {
            let Some(kept_now) = root.stat_if_present(kept)? else { return Ok(Outcome::Done) };
            if FileId::of(&kept_now) != *kept_file {
                return Ok(not_the_one(root, kept, "the link kept aside"));
            }
            // Replaces the name itself, whatever the job put there (a link is not followed).
            root.rename(kept, path)?;
            // Two names of one file, the command having left it: rename does nothing then.
            remove_ours(root, kept, *kept_file)
        }
        Record::RemovedDir { path, mode, .. } => match root.stat_if_present(path)? {
            Some(_) => Ok(Outcome::Done),
            None => root.create_dir_with_mode(path, *mode).map(|()| Outcome::Done),
        },
        Record::Commit { .. } | Record::Settled { .. } => Ok(Outcome::Done),
    }
}

/// Removes `temp` if it is still the file `id` recorded.
fn remove_ours(root: &Root, temp: &Path, id: FileId) -> Result<Outcome, FsError> {
    match root.stat_if_present(temp)? {
        None => Ok(Outcome::Done),
        Some(now) if FileId::of(&now) == id => root.remove_file(temp).map(|_| Outcome::Done),
        Some(_) => Ok(not_the_one(root, temp, "the file recorded")),
    }
}

/// Removes a scratch file, known by name only (it was recorded before it existed): a regular
/// file there is removed, anything else left.
fn remove_scratch(root: &Root, temp: &Path) -> Result<Outcome, FsError> {
    match root.stat_if_present(temp)? {
        Some(now) if !confined_fs::is_regular(&now) => Ok(not_the_one(root, temp, "the temporary file")),
        Some(_) => root.remove_file(temp).map(|_| Outcome::Done),
        None => Ok(Outcome::Done),
    }
}

fn not_the_one(root: &Root, path: &Path, what: &str) -> Outcome {
    Outcome::LeftAlone(format!("{} is no longer {what}: left as it is", root.place(path).display()))
}

#[derive(Debug)]
struct Open {
    /// `None`: nothing is written down.
    file: Option<File>,
    /// Where `file` is, removed once the journal closes with nothing unsettled.
    path: Option<PathBuf>,
    next_id: u64,
    /// Outputs recorded and not yet settled: when none is left, the file is emptied.
    unsettled: BTreeSet<u64>,
}

/// A proxy process's journal (posh-proxy: `STATE_DIR/journal`; posh-exec's embedded proxies:
/// one per run in the run's private directory, see `runtime::embedded_state`); [`Journal::none`] records nothing.
#[derive(Debug)]
pub struct Journal {
    open: Mutex<Open>,
}

impl Journal {
    /// A journal that keeps nothing (none could be opened): jobs still undo their outputs, but a
    /// killed process cannot.
    pub fn none() -> Journal {
        Journal { open: Mutex::new(Open { file: None, path: None, next_id: 0, unsettled: BTreeSet::new() }) }
    }

    /// Opens this process's journal in `dir` (made 0700 if missing), after undoing the journals of
    /// proxies that are gone.
    #[expect(clippy::disallowed_methods, reason = "the operator's state directory")]
    pub fn open(dir: &Path) -> io::Result<Journal> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        recover(dir)?;
        let path = dir.join(format!("journal-{}.jsonl", std::process::id()));
        let file = super::liveness::hold(&path)?;
        file.set_len(0)?;
        let open = Open { file: Some(file), path: Some(path), next_id: 0, unsettled: BTreeSet::new() };
        Ok(Journal { open: Mutex::new(open) })
    }

    /// A fresh output id.
    pub fn next_id(&self) -> u64 {
        let mut open = self.lock();
        open.next_id += 1;
        open.next_id
    }

    /// Writes `record` down before the change it describes is made.
    pub fn note(&self, record: &Record) -> io::Result<()> {
        let mut open = self.lock();
        let emptied = match record {
            Record::Settled { id } => {
                open.unsettled.remove(id);
                open.unsettled.is_empty()
            }
            Record::Commit { .. } => false,
            change => {
                open.unsettled.insert(change.id());
                false
            }
        };
        let Some(file) = &mut open.file else { return Ok(()) };
        if emptied {
            // Nothing in flight: the whole history can go.
            return file.set_len(0);
        }
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        file.write_all(&line)
    }

    /// At a clean exit: removes the file when nothing is left unsettled (what is, a job the
    /// proxy could not end, stays for the next start to settle). Records after this are kept
    /// nowhere.
    pub fn close(&self) {
        let mut open = self.lock();
        if !open.unsettled.is_empty() {
            tracing::warn!("{} output(s) left unsettled for the next start", open.unsettled.len());
            return;
        }
        open.file = None;
        let Some(path) = open.path.take() else { return };
        let (dir, name) = (path.parent().unwrap_or(Path::new(".")), path.file_name().unwrap_or_default());
        let removed = Root::open(dir, RootKind::State).and_then(|state| state.remove_file(Path::new(name)));
        if let Err(e) = removed {
            tracing::warn!("cannot remove the journal: {e}");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

/// Replays and deletes the journals in `dir` whose proxy is gone (their lock is free).
/// `Journal::open` does it first; a run settling what another, killed, left does it alone.
pub fn recover(dir: &Path) -> io::Result<()> {
    let state = Root::open(dir, RootKind::State).map_err(io::Error::other)?;
    for name in state.entries(Path::new("")).map_err(io::Error::other)? {
        let text = name.to_str().unwrap_or("");
        if !(text.starts_with("journal-") && text.ends_with(".jsonl")) {
            continue;
        }
        let path = dir.join(&name);
        let Some(file) = super::liveness::owner_gone(&path) else { continue };
        // Only a regular file is read: a FIFO planted here would hold the start for ever.
        if file.metadata().is_ok_and(|m| m.is_file()) {
            replay(&file, &path);
        } else {
            tracing::warn!("{}: not a regular file, not replayed", path.display());
        }
        state.remove_file(Path::new(&name)).map_err(io::Error::other)?;
    }
    Ok(())
}

/// Settles every output a dead proxy left unsettled: committed ones forward, the rest back,
/// each from its root's descriptor.
fn replay(file: &File, path: &Path) {
    let mut outputs: BTreeMap<u64, (Option<Record>, bool, bool)> = BTreeMap::new();
    for line in io::BufReader::new(file).lines().map_while(Result::ok) {
        // A line cut by the proxy's death is the last one, and its change was never made.
        let Ok(record) = serde_json::from_str::<Record>(&line) else { continue };
        let output = outputs.entry(record.id()).or_default();
        match record {
            Record::Commit { .. } => output.1 = true,
            Record::Settled { .. } => output.2 = true,
            change => output.0 = Some(change),
        }
    }
    let mut roots: HashMap<At, Result<Root, String>> = HashMap::new();
    // Later outputs first, as a job undoes them (two appends to one file: the first length wins).
    for (_, (change, committed, settled)) in outputs.into_iter().rev() {
        let Some(change) = change.filter(|_| !settled) else { continue };
        let Some(at) = change.at() else { continue };
        // The root by its path, its final component not followed.
        let root = roots
            .entry(at.clone())
            .or_insert_with(|| Root::open(&at.root, at.kind).map_err(|e| format!("{}: {e}", at.kind)));
        let root = match root {
            Ok(root) => root,
            Err(e) => {
                tracing::warn!("{}: cannot settle {change:?}: {e}", path.display());
                continue;
            }
        };
        let result = if committed { roll_forward(root, &change) } else { roll_back(root, &change) };
        match result {
            Ok(Outcome::Done) => tracing::info!("{}: settled {change:?} left by a proxy that died", path.display()),
            Ok(Outcome::LeftAlone(why)) => tracing::warn!("{}: {why} ({change:?})", path.display()),
            Err(e) => tracing::warn!("{}: cannot settle {change:?}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt as _;

    use super::*;

    fn id_of(path: &Path) -> FileId {
        let meta = std::fs::symlink_metadata(path).unwrap();
        FileId { dev: meta.dev(), ino: meta.ino() }
    }

    /// Replays the journals in `state` as a starting proxy does, until none is left. A journal
    /// this test dropped to play a dead proxy can stay locked for a moment: a child that another
    /// test of this process forked meanwhile holds its descriptor until it execs (in a real crash
    /// the process and its descriptors are gone). Left locked, the replay skipped it, and the next
    /// journal of this process, of the same name, emptied it.
    fn replay_once_unlocked(state: &Path) {
        let journals = || {
            let names = std::fs::read_dir(state).unwrap().map(|e| e.unwrap().file_name());
            names.filter(|n| n.to_string_lossy().starts_with("journal-")).count()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while journals() > 0 {
            recover(state).unwrap();
            assert!(std::time::Instant::now() < deadline, "a journal stayed locked");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// An export beside the state directory, opened as a root.
    fn export(dir: &Path) -> (Root, At) {
        std::fs::create_dir(dir.join("export")).unwrap();
        let root = Root::open(&dir.join("export"), RootKind::Export).unwrap();
        let at = At::of(&root);
        (root, at)
    }

    #[test]
    fn a_dead_proxys_append_is_cut_back_and_its_temporary_removed() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("journal");
        let (root, at) = export(dir.path());
        let log = root.place(Path::new("log"));
        std::fs::write(&log, "old\n").unwrap();
        let temp = root.place(Path::new(".posh-1.tmp"));
        {
            let dead = Journal::open(&state).unwrap();
            let id = dead.next_id();
            let file = id_of(&log);
            dead.note(&Record::Appended { id, at: at.clone(), path: "log".into(), file, len: 4 }).unwrap();
            let id = dead.next_id();
            dead.note(&Record::Scratch { id, at: at.clone(), temp: ".posh-1.tmp".into() }).unwrap();
            std::fs::write(&temp, "new").unwrap();
            std::fs::write(root.place(Path::new("out")), "old out\n").unwrap();
            let (temp_file, target_file) = (id_of(&temp), id_of(&root.place(Path::new("out"))));
            let target = "out".into();
            dead.note(&Record::Staged {
                id,
                at: at.clone(),
                temp: ".posh-1.tmp".into(),
                temp_file,
                target,
                target_file,
            })
            .unwrap();
            std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"appended\n").unwrap();
            // Dropped without settling: its lock goes, as when the process dies.
        }
        replay_once_unlocked(&state);
        let _next = Journal::open(&state).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "old\n");
        assert!(!temp.exists());
        assert_eq!(std::fs::read_to_string(root.place(Path::new("out"))).unwrap(), "old out\n");
    }

    #[test]
    fn a_committed_output_is_finished_and_a_live_journal_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("journal");
        let (root, at) = export(dir.path());
        let target = root.place(Path::new("out"));
        std::fs::write(&target, "old content\n").unwrap();
        let inode = id_of(&target);
        let temp = root.place(Path::new(".posh-2.tmp"));
        let live = Journal::open(&state).unwrap();
        let id = live.next_id();
        live.note(&Record::Scratch { id, at: at.clone(), temp: ".posh-2.tmp".into() }).unwrap();
        std::fs::write(&temp, "new").unwrap();
        let staged = Record::Staged {
            id,
            at: at.clone(),
            temp: ".posh-2.tmp".into(),
            temp_file: id_of(&temp),
            target: "out".into(),
            target_file: inode,
        };
        live.note(&staged).unwrap();
        live.note(&Record::Commit { id }).unwrap();
        // Another proxy starting beside a live one: the lock keeps it away.
        std::fs::rename(state.join(format!("journal-{}.jsonl", std::process::id())), state.join("journal-1.jsonl"))
            .unwrap();
        let other = Journal::open(&state).unwrap();
        assert!(temp.exists() && std::fs::read_to_string(&target).unwrap() == "old content\n");
        drop((live, other));
        replay_once_unlocked(&state);
        let _next = Journal::open(&state).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(id_of(&target), inode);
        assert!(!temp.exists());
    }

    /// Issue 37, E1: a commit left unfinished, its target then swapped by a job for a link to a
    /// file outside the export (or for another file) and its temporary rewritten. The replay
    /// writes nothing outside, and nothing into a file that is not the one recorded.
    #[test]
    fn a_replay_leaves_alone_a_target_swapped_for_a_link_or_another_file() {
        for swap in ["link to a file outside", "another file", "link on the way"] {
            let dir = tempfile::tempdir().unwrap();
            let state = dir.path().join("journal");
            let (root, at) = export(dir.path());
            std::fs::create_dir(root.place(Path::new("d"))).unwrap();
            let outside = dir.path().join("authorized-clients");
            std::fs::write(&outside, "SHA256:operator\n").unwrap();
            let target = root.place(Path::new("d/out"));
            std::fs::write(&target, "old\n").unwrap();
            let temp = root.place(Path::new("d/.posh-3.tmp"));
            std::fs::write(&temp, "new\n").unwrap();
            {
                let dead = Journal::open(&state).unwrap();
                let id = dead.next_id();
                dead.note(&Record::Staged {
                    id,
                    at: at.clone(),
                    temp: "d/.posh-3.tmp".into(),
                    temp_file: id_of(&temp),
                    target: "d/out".into(),
                    target_file: id_of(&target),
                })
                .unwrap();
                dead.note(&Record::Commit { id }).unwrap();
            }
            // What a later job does before the proxy restarts.
            std::fs::write(&temp, "SHA256:attacker\n").unwrap();
            match swap {
                "link to a file outside" => {
                    std::fs::remove_file(&target).unwrap();
                    std::os::unix::fs::symlink(&outside, &target).unwrap();
                }
                "another file" => {
                    // Made before the old one goes, so that it cannot get the old inode number.
                    std::fs::write(root.place(Path::new("d/new")), "the job's own\n").unwrap();
                    std::fs::rename(root.place(Path::new("d/new")), &target).unwrap();
                }
                _ => {
                    // The directory itself becomes a link to one outside holding `out`.
                    let elsewhere = dir.path().join("elsewhere");
                    std::fs::create_dir(&elsewhere).unwrap();
                    std::fs::write(elsewhere.join("out"), "outside\n").unwrap();
                    std::fs::rename(root.place(Path::new("d")), root.place(Path::new("d.real"))).unwrap();
                    std::os::unix::fs::symlink(&elsewhere, root.place(Path::new("d"))).unwrap();
                }
            }
            replay_once_unlocked(&state);
            let _next = Journal::open(&state).unwrap();
            assert_eq!(std::fs::read_to_string(&outside).unwrap(), "SHA256:operator\n", "{swap}");
            match swap {
                "another file" => {
                    assert_eq!(std::fs::read_to_string(&target).unwrap(), "the job's own\n");
                    assert!(!temp.exists(), "the temporary is removed: {swap}");
                }
                "link on the way" => {
                    assert_eq!(std::fs::read_to_string(dir.path().join("elsewhere/out")).unwrap(), "outside\n")
                }
                _ => assert!(!temp.exists(), "the temporary is removed: {swap}"),
            }
        }
    }

    #[test]
    fn the_journal_empties_once_nothing_is_in_flight_and_goes_at_a_clean_exit() {
        let dir = tempfile::tempdir().unwrap();
        let (_root, at) = export(dir.path());
        let journal = Journal::open(&dir.path().join("journal")).unwrap();
        let file = dir.path().join(format!("journal/journal-{}.jsonl", std::process::id()));
        let (first, second) = (journal.next_id(), journal.next_id());
        journal.note(&Record::Created { id: first, at: at.clone(), path: "a".into() }).unwrap();
        journal.note(&Record::Created { id: second, at: at.clone(), path: "b".into() }).unwrap();
        journal.note(&Record::Settled { id: first }).unwrap();
        assert!(std::fs::metadata(&file).unwrap().len() > 0, "`b` is still in flight");
        journal.close();
        assert!(file.exists(), "kept while `b` is unsettled");
        journal.note(&Record::Settled { id: second }).unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 0);
        journal.close();
        assert!(!file.exists(), "removed at a clean exit");
    }

    #[test]
    fn a_fifo_among_the_journals_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("journal");
        std::fs::create_dir(&state).unwrap();
        let root = Root::open(&state, RootKind::State).unwrap();
        root.make_fifo(Path::new("journal-1.jsonl"), 0o600).unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(Journal::open(&state).map(drop).map_err(|e| e.to_string())));
        let opened = finished.recv_timeout(std::time::Duration::from_secs(10)).expect("the start did not hang");
        assert_eq!(opened, Ok(()));
        assert!(!dir.path().join("journal/journal-1.jsonl").exists());
    }
}
