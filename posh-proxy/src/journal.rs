//! What the proxy's jobs are doing to output files (staging a new content, appending in place,
//! creating a path, keeping a backup), written down before it is done, so that a proxy killed in
//! the middle of a job (kill -9, a crash) undoes it at its next start.
//!
//! Each proxy process appends JSON lines to its own file, `DIR/journal-PID.jsonl`, and holds an
//! exclusive `flock` on it while it lives. At start, a proxy replays every other journal in `DIR`
//! whose lock it can take (its proxy is gone) and deletes it; a live proxy's journal is locked
//! and left alone. The records reach the file before the change they describe, with a plain
//! write: they survive the proxy's death, not the machine's (no fsync).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// One line of a journal. `id` names one output of one job; its last change record says what
/// undoing or committing it means.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Record {
    /// A temporary file beside an output, not yet holding anything worth keeping: removed either way.
    Scratch { id: u64, temp: PathBuf },
    /// `temp` receives the new content of `target`; committing moves it there (copied into the
    /// existing file, which keeps its inode, or renamed when there is none), undoing removes it.
    Staged { id: u64, temp: PathBuf, target: PathBuf },
    /// `path` (inode `dev`:`ino`) is written in place from length `len` on (`>>`, an appending
    /// word): undoing truncates it back to `len`.
    Appended { id: u64, path: PathBuf, dev: u64, ino: u64, len: u64 },
    /// `path` did not exist: undoing removes it (a directory with everything in it).
    Created { id: u64, path: PathBuf },
    /// `backup` holds `path`'s whole old content while a command rewrites it in place: undoing
    /// copies it back into `path` (same inode), committing removes it.
    Backup { id: u64, path: PathBuf, backup: PathBuf },
    /// `kept` is a hard link to what `path` named (any file but a directory; a copy of a regular
    /// file where the filesystem refuses the link) while a command removes or replaces the name:
    /// undoing renames it back over `path`, committing removes it.
    Kept { id: u64, path: PathBuf, kept: PathBuf },
    /// `path` was an empty directory of this mode while a command removes or replaces it:
    /// undoing makes it again if it is gone.
    RemovedDir { id: u64, path: PathBuf, mode: u32 },
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
}

/// Makes the output's change permanent: the new content in place, temporary files gone.
/// Idempotent: a proxy that died halfway does it again at its next start.
pub fn roll_forward(record: &Record) -> io::Result<()> {
    match record {
        Record::Scratch { temp, .. } | Record::Backup { backup: temp, .. } | Record::Kept { kept: temp, .. } => {
            remove_if_present(temp)
        }
        Record::Staged { temp, target, .. } => {
            if !temp.exists() {
                return Ok(()); // renamed or copied and removed already
            }
            if std::fs::metadata(target).is_ok_and(|m| m.is_file()) {
                // As bash's `>`: the file keeps its inode, owner, mode, links and attributes.
                copy_into(temp, target)?;
                remove_if_present(temp)
            } else {
                std::fs::rename(temp, target)
            }
        }
        Record::Appended { .. }
        | Record::Created { .. }
        | Record::RemovedDir { .. }
        | Record::Commit { .. }
        | Record::Settled { .. } => Ok(()),
    }
}

/// Puts the output back as it was before the job. Idempotent, like [`roll_forward`].
pub fn roll_back(record: &Record) -> io::Result<()> {
    match record {
        Record::Scratch { temp, .. } | Record::Staged { temp, .. } => remove_if_present(temp),
        Record::Appended { path, dev, ino, len, .. } => {
            let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
            // Another file now lives there: not ours to cut.
            if meta.dev() == *dev && meta.ino() == *ino && meta.len() > *len {
                OpenOptions::new().write(true).open(path)?.set_len(*len)?;
            }
            Ok(())
        }
        Record::Created { path, .. } => match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
            Ok(_) => remove_if_present(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        },
        Record::Backup { path, backup, .. } => {
            if backup.exists() {
                copy_into(backup, path)?;
            }
            remove_if_present(backup)
        }
        Record::Kept { path, kept, .. } => {
            match std::fs::rename(kept, path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            // Two names of one file, the command having left it: rename does nothing then.
            remove_if_present(kept)
        }
        Record::RemovedDir { path, mode, .. } => match std::fs::create_dir(path) {
            Ok(()) => std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e),
        },
        Record::Commit { .. } | Record::Settled { .. } => Ok(()),
    }
}

/// Replaces `target`'s content by `source`'s, in the same inode.
pub fn copy_into(source: &Path, target: &Path) -> io::Result<()> {
    let mut from = File::open(source)?;
    let mut to = OpenOptions::new().write(true).truncate(true).open(target)?;
    // copy_file_range under the hood: the kernel copies (or shares extents, where it can).
    io::copy(&mut from, &mut to)?;
    Ok(())
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[derive(Debug)]
struct Open {
    /// `None`: nothing is written down.
    file: Option<File>,
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
        Journal { open: Mutex::new(Open { file: None, next_id: 0, unsettled: BTreeSet::new() }) }
    }

    /// Opens this process's journal in `dir` (made 0700 if missing), after undoing the journals of
    /// proxies that are gone.
    pub fn open(dir: &Path) -> io::Result<Journal> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        recover(dir)?;
        let path = dir.join(format!("journal-{}.jsonl", std::process::id()));
        let file = super::liveness::hold(&path)?;
        file.set_len(0)?;
        Ok(Journal { open: Mutex::new(Open { file: Some(file), next_id: 0, unsettled: BTreeSet::new() }) })
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Replays and deletes the journals in `dir` whose proxy is gone (their lock is free).
/// `Journal::open` does it first; a run settling what another, killed, left does it alone.
pub fn recover(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.starts_with("journal-") && name.ends_with(".jsonl")) {
            continue;
        }
        let Some(file) = super::liveness::owner_gone(&path) else { continue };
        replay(&file, &path);
        std::fs::remove_file(&path)?;
    }
    Ok(())
}

/// Settles every output a dead proxy left unsettled: committed ones forward, the rest back.
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
    // Later outputs first, as a job undoes them (two appends to one file: the first length wins).
    for (_, (change, committed, settled)) in outputs.into_iter().rev() {
        let Some(change) = change.filter(|_| !settled) else { continue };
        let result = if committed { roll_forward(&change) } else { roll_back(&change) };
        match result {
            Ok(()) => tracing::info!("{}: settled {change:?} left by a proxy that died", path.display()),
            Err(e) => tracing::warn!("{}: cannot settle {change:?}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_proxys_append_is_cut_back_and_its_temporary_removed() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("journal");
        let log = dir.path().join("log");
        std::fs::write(&log, "old\n").unwrap();
        let meta = std::fs::metadata(&log).unwrap();
        let temp = dir.path().join(".posh-1.tmp");
        {
            let dead = Journal::open(&state).unwrap();
            let id = dead.next_id();
            dead.note(&Record::Appended { id, path: log.clone(), dev: meta.dev(), ino: meta.ino(), len: 4 }).unwrap();
            let id = dead.next_id();
            dead.note(&Record::Scratch { id, temp: temp.clone() }).unwrap();
            std::fs::write(&temp, "new").unwrap();
            dead.note(&Record::Staged { id, temp: temp.clone(), target: dir.path().join("out") }).unwrap();
            OpenOptions::new().append(true).open(&log).unwrap().write_all(b"appended\n").unwrap();
            // Dropped without settling: its lock goes, as when the process dies.
        }
        let _next = Journal::open(&state).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "old\n");
        assert!(!temp.exists());
        assert!(!dir.path().join("out").exists());
    }

    #[test]
    fn a_committed_output_is_finished_and_a_live_journal_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("journal");
        let target = dir.path().join("out");
        std::fs::write(&target, "old content\n").unwrap();
        let inode = std::fs::metadata(&target).unwrap().ino();
        let temp = dir.path().join(".posh-2.tmp");
        let live = Journal::open(&state).unwrap();
        let id = live.next_id();
        live.note(&Record::Scratch { id, temp: temp.clone() }).unwrap();
        std::fs::write(&temp, "new").unwrap();
        live.note(&Record::Staged { id, temp: temp.clone(), target: target.clone() }).unwrap();
        live.note(&Record::Commit { id }).unwrap();
        // Another proxy starting beside a live one: the lock keeps it away.
        std::fs::rename(state.join(format!("journal-{}.jsonl", std::process::id())), state.join("journal-1.jsonl"))
            .unwrap();
        let other = Journal::open(&state).unwrap();
        assert!(temp.exists() && std::fs::read_to_string(&target).unwrap() == "old content\n");
        drop((live, other));
        let _next = Journal::open(&state).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::metadata(&target).unwrap().ino(), inode);
        assert!(!temp.exists());
    }

    #[test]
    fn the_journal_empties_once_nothing_is_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        let file = dir.path().join(format!("journal-{}.jsonl", std::process::id()));
        let (first, second) = (journal.next_id(), journal.next_id());
        journal.note(&Record::Created { id: first, path: dir.path().join("a") }).unwrap();
        journal.note(&Record::Created { id: second, path: dir.path().join("b") }).unwrap();
        journal.note(&Record::Settled { id: first }).unwrap();
        assert!(std::fs::metadata(&file).unwrap().len() > 0, "`b` is still in flight");
        journal.note(&Record::Settled { id: second }).unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 0);
    }
}
