//! One job at the proxy: its commands wired into a pipeline, their redirections applied in
//! bash's order, output files left as bash leaves them (or as they were, if the job does not
//! complete), output and statuses sent back as frames.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;

use anyhow::Result;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use crate::read_buffer::ReadBuffer;

use super::confine::{Checked, CheckedRedirect, PATH, WordChange};
use super::confined_fs::{self, FileId, Root, RootKind};
use super::journal::{self, At, Journal, Outcome, Record};
use super::peer::Expected;
use super::process::{Ending, JobProcesses, Suspender};
use super::protocol::{
    self, Ended, Exit, StartError, TAG_CONTINUE, TAG_EXIT, TAG_PROGRESS, TAG_STDERR, TAG_STDIN, TAG_STDIN_END,
    TAG_STDOUT, TAG_STDOUT_CLOSED, TAG_STOP, WrittenFile, os_message,
};
use super::sandbox::Launch;
use crate::measure::{IoCount, read_counts};

/// SIGPIPE: a command ended by it did its job as far as anyone read (`cat big | head`).
const SIGPIPE: i32 = 13;

/// Below this much free space a filesystem counts as full: a writer that failed there most
/// likely met "No space left on device".
const FULL: u64 = 64 * 1024;

/// An output of the job and what was done to it, to be committed or undone when the job ends.
#[derive(Debug)]
struct PendingOutput {
    command: usize,
    change: Record,
}

/// The job's outputs, each written down in the journal before it is touched. Whatever is not
/// settled when this is dropped (an early return, a dropped job) is undone. It lives on the
/// job's file-work thread ([`FileWork`]), so its copies never hold up the proxy's runtime. All
/// of its file work goes through `confined_fs`, from the export's descriptor.
#[derive(Debug)]
struct Outputs<'a> {
    journal: &'a Journal,
    /// The export, for a job with file work (`None`: [`Outputs::untouched`]).
    export: Option<Root>,
    pending: Vec<PendingOutput>,
    /// The files the job's commands name or read with `<`.
    named: Vec<FileId>,
    /// The regular files its settled outputs left, for the client ([`Ended::written`]).
    written: Vec<WrittenFile>,
}

impl<'a> Outputs<'a> {
    fn new(journal: &'a Journal, export: Root, commands: &[Checked]) -> Outputs<'a> {
        let reads = commands.iter().flat_map(|c| {
            let redirected = c.redirects.iter().filter_map(|r| match r {
                CheckedRedirect::Read { path, .. } => Some(path),
                _ => None,
            });
            c.files.iter().chain(redirected)
        });
        let stat = |path: &PathBuf| export.stat(export.relative(path).ok()?).ok();
        let named = reads.filter_map(stat).map(|s| FileId::of(&s)).collect();
        Outputs { journal, export: Some(export), pending: Vec::new(), named, written: Vec::new() }
    }

    /// For a job without redirections or output words: nothing to record, so none of its files
    /// is looked at (a `stat` each, on the runtime's thread, for nothing).
    fn untouched(journal: &'a Journal) -> Outputs<'a> {
        Outputs { journal, export: None, pending: Vec::new(), named: Vec::new(), written: Vec::new() }
    }

    /// The export, and `path` relative to it.
    fn beneath<'p>(&self, path: &'p Path) -> std::io::Result<(&Root, &'p Path)> {
        let root = self.export.as_ref().ok_or_else(|| std::io::Error::other("the job was not given file work"))?;
        Ok((root, root.relative(path)?))
    }

    /// Whether a command of the job names or reads the file `stat` describes (`sort f > f`).
    fn named_by_job(&self, stat: &rustix::fs::Stat) -> bool {
        self.named.contains(&FileId::of(stat))
    }

    fn record(&mut self, command: usize, change: Record) -> std::io::Result<()> {
        self.journal.note(&change)?;
        self.pending.push(PendingOutput { command, change });
        Ok(())
    }

    /// A new empty file beside `path`, named `.posh-XXXXXXXX.tmp`, written down before it
    /// exists: its id, its path relative to the export, and the file, open for writing.
    fn scratch(&mut self, path: &Path, command: usize) -> std::io::Result<(u64, PathBuf, File)> {
        let id = self.journal.next_id();
        let journal = self.journal;
        let (root, rel) = self.beneath(path)?;
        let at = At::of(root);
        let made = root.create_temp_beside(rel, |temp| {
            journal.note(&Record::Scratch { id, at: at.clone(), temp: temp.to_path_buf() })
        });
        let (temp, file) = match made {
            Ok(made) => made,
            Err(e) => {
                let _ = journal.note(&Record::Settled { id });
                return Err(e.into());
            }
        };
        self.pending.push(PendingOutput { command, change: Record::Scratch { id, at, temp: temp.clone() } });
        Ok((id, temp, file))
    }

    /// Replaces the last change recorded (a scratch file) by what it turned into.
    fn became(&mut self, change: Record) -> std::io::Result<()> {
        self.journal.note(&change)?;
        if let Some(last) = self.pending.last_mut() {
            last.change = change;
        }
        Ok(())
    }

    /// `path` is written from its end on (or created): undone by cutting it back (or removing it).
    fn appended(&mut self, path: &Path, command: usize) -> std::io::Result<()> {
        let (root, rel) = self.beneath(path)?;
        match root.stat_if_present(rel)? {
            Some(stat) => {
                let id = self.journal.next_id();
                let (at, file, len) = (At::of(root), FileId::of(&stat), stat.st_size as u64);
                self.record(command, Record::Appended { id, at, path: rel.to_path_buf(), file, len })
            }
            None => self.created(path, command),
        }
    }

    /// `path` does not exist yet; a command makes it (a file or a directory tree). Undoing removes
    /// the topmost directory the job made on the way (`mkdir -p a/b`: `a`).
    fn created(&mut self, path: &Path, command: usize) -> std::io::Result<()> {
        let (root, rel) = self.beneath(path)?;
        let mut top = rel;
        while let Some(parent) = top.parent().filter(|p| !p.as_os_str().is_empty()) {
            if root.stat_if_present(parent)?.is_some() {
                break;
            }
            top = parent;
        }
        let id = self.journal.next_id();
        let change = Record::Created { id, at: At::of(root), path: top.to_path_buf() };
        self.record(command, change)
    }

    /// `path` is removed or replaced by the command: what it names is kept aside until the job
    /// settles (a hard link beside a file, the mode of an empty directory) and put back if the
    /// job does not complete; a name that names nothing is removed again then (`ln -f` of a new
    /// name). A directory with entries is refused: it could not be put back, and undoing the
    /// name it moved to would remove them (the planner keeps such commands at the client).
    fn removed(&mut self, path: &Path, command: usize) -> std::io::Result<()> {
        let (root, rel) = self.beneath(path)?;
        let Some(stat) = root.stat_if_present(rel)? else { return self.created(path, command) };
        if confined_fs::is_dir(&stat) && !root.entries(rel)?.is_empty() {
            return Err(std::io::Error::other(format!(
                "{} is a directory with entries, which the proxy could not put back; nothing was run",
                path.display()
            )));
        }
        if confined_fs::is_dir(&stat) {
            let id = self.journal.next_id();
            let change =
                Record::RemovedDir { id, at: At::of(root), path: rel.to_path_buf(), mode: stat.st_mode & 0o7777 };
            return self.record(command, change);
        }
        let rel = rel.to_path_buf();
        let (id, kept, scratch) = self.scratch(path, command)?;
        drop(scratch);
        let (root, _) = self.beneath(path)?;
        root.remove_file(&kept)?;
        if let Err(e) = root.hard_link(&rel, &kept) {
            // A filesystem without hard links, or one refusing this one (`protected_hardlinks`):
            // a regular file's content is copied instead.
            if !confined_fs::is_regular(&stat) {
                return Err(e.into());
            }
            drop(root.create_new(&kept)?);
            root.copy_into(&rel, &kept)?;
        }
        let kept_file = FileId::of(&root.stat(&kept)?);
        let at = At::of(root);
        self.became(Record::Kept { id, at, path: rel, kept, kept_file })
    }

    /// A copy of `path`'s old content beside it, restored into it if the job does not complete.
    fn back_up(&mut self, path: &Path, command: usize) -> std::io::Result<()> {
        let (id, backup, copy) = self.scratch(path, command)?;
        let (root, rel) = self.beneath(path)?;
        let old = root.open_regular(rel, rustix::fs::OFlags::RDONLY)?;
        confined_fs::copy_contents(&old, &copy)?;
        let (file, backup_file) = (FileId::of_file(&old)?, FileId::of_file(&copy)?);
        let change = Record::Backup { id, at: At::of(root), path: rel.to_path_buf(), file, backup, backup_file };
        self.became(change)
    }

    /// Undoes the outputs of a job that did not complete or whose writer was killed (the last
    /// made first, as a backup may hold what an earlier command already wrote), then commits the
    /// others in order. Each one is settled now, whatever happens to the others: what could
    /// not be committed (the job's own commands made the target a directory) is undone instead.
    /// Returns what the client should be told: what could be neither committed nor undone.
    fn settle(&mut self, ends: &[Exit], completed: bool) -> Vec<String> {
        let Some(root) = self.export.take() else { return Vec::new() };
        let journal = self.journal;
        let keep = |output: &PendingOutput| {
            let writer = &ends[output.command];
            let killed = writer.signal.is_some_and(|s| s != SIGPIPE);
            // A staged content cut short by a full disk never replaces a file.
            let out_of_space = writer.code.is_some_and(|c| c != 0)
                && matches!(&output.change, Record::Staged { temp, .. } if root.free_space(temp).is_some_and(|f| f < FULL));
            completed && !killed && !out_of_space
        };
        let (kept, undone): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending).into_iter().partition(keep);
        let mut told = Vec::new();
        for output in undone.into_iter().rev() {
            tracing::info!("{:?} undone: the job or its writer did not complete", output.change);
            undo(journal, &root, &output.change, &mut told);
        }
        for output in kept {
            let id = output.change.id();
            if let Err(e) = journal.note(&Record::Commit { id }) {
                tracing::warn!("cannot write down the commit of {:?}: {e}", output.change);
            }
            match journal::roll_forward(&root, &output.change) {
                Ok(Outcome::Done) => {
                    settled(journal, id);
                    self.written.extend(written_file(&root, &output.change));
                }
                // As bash leaves it: its `>` wrote into the file it opened, which the job's own
                // commands then replaced; the name keeps what they made, and nothing is said.
                Ok(Outcome::LeftAlone(why)) => {
                    tracing::info!("{why} ({:?})", output.change);
                    settled(journal, id);
                    self.written.extend(written_file(&root, &output.change));
                }
                Err(e) => {
                    tracing::warn!("cannot commit {:?}: {e}", output.change);
                    told.push(format!("cannot commit the output: {e}"));
                    undo(journal, &root, &output.change, &mut told);
                }
            }
        }
        self.export = Some(root);
        told
    }
}

/// The file a committed output left, when it is a regular file below the export: a name the
/// job wrote into, appended to or made (not one it removed).
fn written_file(root: &Root, change: &Record) -> Option<WrittenFile> {
    let path = match change {
        Record::Staged { target, .. } => target,
        Record::Appended { path, .. } | Record::Created { path, .. } | Record::Backup { path, .. } => path,
        _ => return None,
    };
    let stat = root.stat(path).ok().filter(confined_fs::is_regular)?;
    Some(WrittenFile { path: path.to_str()?.to_string(), size: u64::try_from(stat.st_size).ok()? })
}

/// Undoes `change` now and writes down that it is settled; one that cannot be undone stays in
/// the journal, for the replay at the next start (whose checks hold as these do).
fn undo(journal: &Journal, root: &Root, change: &Record, told: &mut Vec<String>) {
    match journal::roll_back(root, change) {
        Ok(outcome) => {
            if let Outcome::LeftAlone(why) = outcome {
                tracing::info!("{why} ({change:?})");
            }
            settled(journal, change.id());
        }
        Err(e) => {
            tracing::warn!("cannot undo {change:?}: {e}");
            told.push(format!("cannot undo an output: {e}"));
        }
    }
}

fn settled(journal: &Journal, id: u64) {
    if let Err(e) = journal.note(&Record::Settled { id }) {
        tracing::warn!("cannot write down that output {id} is settled: {e}");
    }
}

impl Drop for Outputs<'_> {
    fn drop(&mut self) {
        let Some(root) = &self.export else { return };
        for output in self.pending.drain(..).rev() {
            match journal::roll_back(root, &output.change) {
                Ok(_) => settled(self.journal, output.change.id()),
                // Left to the journal's replay at the next start.
                Err(e) => tracing::warn!("cannot undo {:?}: {e}", output.change),
            }
        }
    }
}

/// Opens `path` for a `>` (`>|` with `clobber`) or `>>` redirection. `>>` appends in place, its
/// old length recorded; `>` writes a staged file that replaces the content when the job
/// completes, or, with no room for it beside the old file, truncates in place as bash does.
fn open_output(
    path: &Path,
    append: bool,
    clobber: bool,
    noclobber: bool,
    command: usize,
    outputs: &mut Outputs<'_>,
) -> std::io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    if path == Path::new(DEV_NULL) {
        return confined_fs::open_dev_null(true);
    }
    let (root, rel) = outputs.beneath(path)?;
    let old = root.stat_if_present(rel)?;
    let write = if append { OFlags::WRONLY | OFlags::APPEND } else { OFlags::WRONLY };
    // A device, a FIFO, a directory: nothing to replace atomically, it is written in place.
    if old.as_ref().is_some_and(|s| !confined_fs::is_regular(s)) {
        return Ok(root.open_without_waiting(rel, write, Mode::empty())?);
    }
    if noclobber && !clobber && !append && old.is_some() {
        return Err(std::io::Error::other("cannot overwrite existing file"));
    }
    if append {
        outputs.appended(path, command)?;
        let (root, rel) = outputs.beneath(path)?;
        return Ok(root.open_without_waiting(rel, write | OFlags::CREATE, Mode::from_raw_mode(0o666))?);
    }
    let Some(old) = old else {
        // A new file appears as the job starts, as bash creates it (a script may look for the
        // output of a job it put in the background); it is removed if the job does not complete.
        outputs.created(path, command)?;
        let (root, rel) = outputs.beneath(path)?;
        return Ok(root.create_new(rel)?);
    };
    // Opened now, as bash opens it: a file the proxy may not write fails here, not at commit.
    let file = root.open_without_waiting(rel, write, Mode::empty())?;
    let opened = rustix::fs::fstat(&file)?;
    // Under bash the job's own commands read the file already emptied (`sort f > f`).
    let read_by_job = outputs.named_by_job(&opened);
    let room = root.free_space(rel).is_none_or(|free| free >= (old.st_size as u64).saturating_mul(2));
    if read_by_job || !room || !confined_fs::is_regular(&opened) {
        tracing::info!("{}: truncated in place (read by the job, or no room beside it)", path.display());
        file.set_len(0)?;
        return Ok(file);
    }
    let (target, target_file) = (rel.to_path_buf(), FileId::of(&opened));
    let (id, temp, staged) = outputs.scratch(path, command)?;
    let (root, _) = outputs.beneath(path)?;
    let (at, temp_file) = (At::of(root), FileId::of_file(&staged)?);
    outputs.became(Record::Staged { id, at, temp, temp_file, target, target_file })?;
    // `>` does not open for appending (a program may seek), as bash opens it.
    Ok(staged)
}

/// The one redirection target outside the export the checker lets through.
const DEV_NULL: &str = "/dev/null";

/// Records the output files named by the command's words before it runs, which then writes them
/// itself as under bash (a directory stays a directory: `cp -r`, `tar -C`). An existing regular
/// file the command appends to (`tee -a`) has its length recorded, as for `>>`; one it may
/// rewrite is backed up when there is room, else its length is recorded too; a missing path is
/// removed again if the job does not complete.
fn record_output_words(checked: &Checked, command: usize, outputs: &mut Outputs<'_>) -> std::io::Result<()> {
    for (path, change) in &checked.outputs {
        if *change == WordChange::Removed {
            outputs.removed(path, command)?;
            continue;
        }
        let (root, rel) = outputs.beneath(path)?;
        let stat = root.stat_if_present(rel)?;
        let room = |len: i64| root.free_space(rel).is_none_or(|free| free >= (len as u64).saturating_mul(2));
        match stat {
            None => outputs.created(path, command)?,
            Some(s) if confined_fs::is_regular(&s) && *change == WordChange::Appended => {
                outputs.appended(path, command)?
            }
            Some(s) if confined_fs::is_regular(&s) && room(s.st_size) => outputs.back_up(path, command)?,
            Some(s) if confined_fs::is_regular(&s) => outputs.appended(path, command)?,
            // A directory is written into (its old entries are not kept); a device is no file.
            Some(_) => {}
        }
    }
    Ok(())
}

/// Applies `redirects` in order over `fds` (0, 1, 2).
fn apply_redirects(
    checked: &Checked,
    fds: &mut [Option<OwnedFd>; 3],
    noclobber: bool,
    command: usize,
    outputs: &mut Outputs<'_>,
) -> Result<(), StartError> {
    for (index, redirect) in checked.redirects.iter().enumerate() {
        let fail = |e: std::io::Error| StartError { redirect: Some(index), message: os_message(&e), status: 1 };
        let (fd, file) = match redirect {
            CheckedRedirect::Read { fd, path } => (*fd, OwnedFd::from(open_input(path, outputs).map_err(fail)?)),
            CheckedRedirect::Write { fd, path, append, clobber } => {
                let file = open_output(path, *append, *clobber, noclobber, command, outputs).map_err(fail)?;
                (*fd, OwnedFd::from(file))
            }
            CheckedRedirect::Dup { fd, source } => {
                let copy = fds[*source as usize]
                    .as_ref()
                    .ok_or_else(|| std::io::Error::from_raw_os_error(9))
                    .and_then(|f| f.try_clone())
                    .map_err(fail)?;
                (*fd, copy)
            }
        };
        fds[fd as usize] = Some(file);
    }
    Ok(())
}

/// A job's file work at the proxy: opening its redirections' targets, staging and backing up
/// its outputs, making its commands' homes, and at its end committing or undoing its outputs.
/// It runs on a thread of its own that first confines itself with the job's Landlock ruleset:
/// a path the proxy checked by name and one of the client's commands then swapped (a directory
/// replaced by a symlink to `/root`) is refused by the kernel when it is opened, instead of
/// reaching outside the export. The thread also keeps an open that waits (a FIFO) from holding
/// up the proxy's runtime. Dropped, it ends its thread, which undoes what was not settled.
struct FileWork {
    tasks: std::sync::mpsc::Sender<FileTask>,
}

type FileTask = Box<dyn for<'j> FnOnce(&mut Outputs<'j>) + Send>;

impl FileWork {
    fn start(
        journal: std::sync::Arc<Journal>,
        export: &Path,
        commands: Vec<Checked>,
        confinement: std::sync::Arc<super::sandbox::Confinement>,
    ) -> std::io::Result<FileWork> {
        let export = Root::open(export, RootKind::Export)?;
        let (tasks, queue) = std::sync::mpsc::channel::<FileTask>();
        std::thread::Builder::new().name("posh-job-files".into()).spawn(move || {
            if let Err(e) = confinement.enter_thread() {
                // Nothing is done unconfined: the tasks are dropped, and each caller told.
                tracing::warn!("cannot confine the job's file work: {e}");
                return;
            }
            let mut outputs = Outputs::new(&journal, export, &commands);
            for task in queue {
                task(&mut outputs);
            }
        })?;
        Ok(FileWork { tasks })
    }

    /// Runs `work` on the confined thread and waits for its result.
    async fn run<R: Send + 'static>(
        &self,
        work: impl for<'j> FnOnce(&mut Outputs<'j>) -> R + Send + 'static,
    ) -> std::io::Result<R> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let task: FileTask = Box::new(move |outputs| {
            let _ = reply.send(work(outputs));
        });
        let unconfined = || std::io::Error::other("the job's file work could not be confined");
        self.tasks.send(task).map_err(|_| unconfined())?;
        answer.await.map_err(|_| unconfined())
    }
}

/// Opens `path` for a `<` redirection, beneath the export, without waiting for a FIFO's other
/// end (which would hold the job, and whoever waits for it, for as long as nobody comes), and
/// refuses one: a proxy does not hand a job's redirection a pipe that another job made.
fn open_input(path: &Path, outputs: &Outputs<'_>) -> std::io::Result<File> {
    if path == Path::new(DEV_NULL) {
        return confined_fs::open_dev_null(false);
    }
    let (root, rel) = outputs.beneath(path)?;
    Ok(root.open_without_waiting(rel, rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty())?)
}

/// Command `index`'s own home in the job's private directory, holding its configuration files
/// (checked relative paths), readable by it alone. Made from the directory's descriptor: a link
/// an earlier job's process planted there is refused, not followed.
fn make_home(job_dir: &Path, index: usize, files: &[(PathBuf, String)]) -> std::io::Result<PathBuf> {
    let root = Root::open(job_dir, RootKind::JobDir)?;
    let home = PathBuf::from(format!("home-{index}"));
    root.create_dir_all(&home, 0o700)?;
    for (path, text) in files {
        let file = home.join(path);
        if let Some(parent) = file.parent() {
            root.create_dir_all(parent, 0o700)?;
        }
        root.write(&file, text.as_bytes())?;
    }
    Ok(job_dir.join(home))
}

/// A command ready to start: its program found, its streams after its redirections, its home.
struct Prepared {
    program: PathBuf,
    fds: [Option<OwnedFd>; 3],
    home: Option<PathBuf>,
}

/// Prepares each of a job's `commands` from its `streams` (the pipes between them), in the order
/// bash takes: redirections, then the program's lookup; a command that cannot start has its exit.
fn prepare_commands(
    commands: &[Checked],
    streams: Vec<[Option<OwnedFd>; 3]>,
    noclobber: bool,
    job_dir: &Path,
    outputs: &mut Outputs<'_>,
) -> Vec<Result<Prepared, Exit>> {
    let prepare = |(i, (command, mut fds)): (usize, (&Checked, [Option<OwnedFd>; 3]))| {
        let start_error = |error| Exit { error: Some(error), ..Exit::default() };
        apply_redirects(command, &mut fds, noclobber, i, outputs).map_err(start_error)?;
        record_output_words(command, i, outputs)
            .map_err(|e| start_error(StartError { redirect: None, message: os_message(&e), status: 1 }))?;
        let program = find_program(&command.argv[0]).ok_or_else(|| failed("command not found", 127))?;
        let home = command.home.as_ref().map(|files| make_home(job_dir, i, files));
        let home = home.transpose().map_err(|e| failed(&format!("cannot make its home: {}", os_message(&e)), 126))?;
        Ok(Prepared { program, fds, home })
    };
    commands.iter().zip(streams).enumerate().map(prepare).collect()
}

/// The exit of a command that could not start.
fn failed(message: &str, status: i32) -> Exit {
    Exit { error: Some(StartError { redirect: None, message: message.into(), status }), ..Exit::default() }
}

/// Where `program` is on the proxy's `PATH` (the first executable file of that name).
#[expect(clippy::disallowed_methods, reason = "the proxy's PATH directories and /dev/null, no client's name")]
pub(super) fn find_program(program: &str) -> Option<PathBuf> {
    PATH.split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|path| std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The standard streams of a command, `/dev/null` where the job gives none.
#[expect(clippy::disallowed_methods, reason = "the proxy's PATH directories and /dev/null, no client's name")]
fn null_for_none(fds: [Option<OwnedFd>; 3]) -> std::io::Result<[OwnedFd; 3]> {
    let null = || File::options().read(true).write(true).open("/dev/null").map(OwnedFd::from);
    let [stdin, stdout, stderr] = fds.map(|fd| fd.map_or_else(null, Ok));
    Ok([stdin?, stdout?, stderr?])
}

/// Where the job runs and how to launch a confined command.
#[derive(Debug)]
pub struct JobPlace<'a> {
    pub export: &'a Path,
    pub cwd: &'a Path,
    /// The job's private directory (its `TMPDIR`), where its process groups are written down.
    pub dir: &'a super::jobs_dir::JobDir,
    /// Where the job's output changes are written down (see [`Journal`]).
    pub journal: &'a std::sync::Arc<Journal>,
}

/// The request's shell options for the job.
#[derive(Clone, Copy, Debug, Default)]
pub struct JobOptions {
    /// bash's `noclobber`.
    pub noclobber: bool,
    /// Every command's stderr goes into the job's output stream (see `Request`).
    pub stderr_with_stdout: bool,
    /// Progress frames are sent (see `Request::progress`).
    pub progress: bool,
}

impl JobOptions {
    /// The options `request` asks for.
    pub fn of(request: &protocol::Request) -> JobOptions {
        JobOptions {
            noclobber: request.noclobber,
            stderr_with_stdout: request.stderr_with_stdout,
            progress: request.progress,
        }
    }
}

/// What a job's commands have read first-hand, for its progress reports (`Request::progress`):
/// the kernel's `rchar` (bytes through read(2) and its kin, files and pipes alike) of each
/// command whose standard input is not the output of the command before it (the first, and any
/// redirected from a file), less what the proxy itself wrote into the first one's input from the
/// client. So `cat big | grep x` counts `big` once, not again as grep's input. A running
/// command is read live from `/proc/PID/io`, one that ended by its last figures.
#[derive(Debug)]
struct ReadMeter {
    /// (command, pid, what it read when last looked at) of the counted commands still running.
    running: Vec<(usize, u32, u64)>,
    /// What the counted commands that ended read in all.
    ended: u64,
    /// The first command reads the pipe the proxy feeds with the client's input.
    first_reads_client: bool,
    /// The figure last reported: reports only grow.
    reported: u64,
}

impl ReadMeter {
    /// `counted[i]`: command `i`'s reads count; `children`: the commands that started, with
    /// their pids.
    fn new(counted: &[bool], children: &[(usize, u32)], first_reads_client: bool) -> ReadMeter {
        let running = children.iter().filter(|(i, _)| counted[*i]).map(|(i, pid)| (*i, *pid, 0)).collect();
        ReadMeter { running, ended: 0, first_reads_client, reported: 0 }
    }

    /// Command `command` ended (and was reaped) having read as `io` says.
    fn ended(&mut self, command: usize, io: Option<IoCount>) {
        if let Some(at) = self.running.iter().position(|(c, _, _)| *c == command) {
            let (_, _, last_seen) = self.running.remove(at);
            self.ended += io.map_or(last_seen, |io| io.read);
        }
    }

    /// The report to send when the figure grew since the last one; `fed`: the bytes of the
    /// client's input written into the first command's pipe so far.
    fn report(&mut self, fed: u64) -> Option<Vec<u8>> {
        for (_, pid, seen) in &mut self.running {
            // Unreadable (a command that made itself undumpable): its last figure stands.
            if let Some(io) = read_counts(*pid) {
                *seen = io.read;
            }
        }
        let total = self.ended + self.running.iter().map(|(_, _, seen)| seen).sum::<u64>();
        let read = if self.first_reads_client { total.saturating_sub(fed) } else { total };
        if read <= self.reported {
            return None;
        }
        self.reported = read;
        serde_json::to_vec(&protocol::Progress { read }).ok()
    }
}

/// A job's ends that another proxy holds instead of the client (see `peer`).
#[derive(Debug, Default)]
pub struct PeerEnds {
    /// The first command's stdin, fed by another proxy's stream; input frames are then ignored.
    pub stdin: Option<OwnedFd>,
    /// Further inputs of the first command, fed by other proxies' streams: its descriptors 3,
    /// 4, ..., named by the words `/dev/fd/3`, `/dev/fd/4`, ... after its own (`Joined::Apart`).
    pub inputs: Vec<OwnedFd>,
    /// The last command's stdout goes to the proxy that comes for it.
    pub output: Option<Expected>,
}

/// Runs the checked commands as one pipeline; the stream carries input frames in, output frames
/// and the final statuses out. With `peers.output`, the last command's stdout goes to the proxy
/// that comes for it instead, and that stream finishes only if the job completed and (unless
/// it is a pipe) its last command succeeded. `kill` turning true aborts the job (shutdown, a
/// broken input stream).
pub async fn run<R, W>(
    place: &JobPlace<'_>,
    commands: &[Checked],
    options: JobOptions,
    recv: &mut R,
    send: &mut W,
    peers: PeerEnds,
    mut kill: watch::Receiver<bool>,
) -> Result<Ended>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let JobOptions { noclobber, stderr_with_stdout, progress } = options;
    let PeerEnds { stdin: peer_stdin, inputs: mut peer_inputs, output: peer_output } = peers;
    // Whose reads the progress reports count (see `ReadMeter`): not those of another proxy's
    // output, which that proxy's job read and reported.
    let redirects_stdin = |c: &Checked| c.redirects.iter().any(|r| matches!(r, CheckedRedirect::Read { fd: 0, .. }));
    let peer_fed = peer_stdin.is_some() || !peer_inputs.is_empty();
    let counted: Vec<bool> =
        commands.iter().enumerate().map(|(i, c)| redirects_stdin(c) || (i == 0 && !peer_fed)).collect();
    let first_reads_client = !peer_fed && !redirects_stdin(&commands[0]);
    let output_is_pipe = peer_output.as_ref().is_some_and(|expected| expected.pipe);
    let (stdin_read, stdin_write) = match peer_stdin {
        Some(stdin) => (stdin, None),
        None => {
            let (reader, writer) = std::io::pipe()?;
            (reader.into(), Some(writer))
        }
    };
    let (stdout_read, stdout_write) = std::io::pipe()?;
    // A larger pipe lets the command run ahead of the network by more than 64 KiB (best effort).
    let _ = rustix::pipe::fcntl_setpipe_size(&stdout_read, 1 << 20);
    let (stderr_read, stderr_write) = std::io::pipe()?;
    let mut ends: Vec<Option<Exit>> = vec![None; commands.len()];
    // The commands that started, with their pids.
    let mut children: Vec<(usize, u32)> = Vec::new();
    let mut next_stdin: Option<OwnedFd> = Some(stdin_read);
    let last = commands.len() - 1;
    // Each command's standard streams before its redirections: the pipes between them.
    let mut streams = Vec::with_capacity(commands.len());
    for i in 0..commands.len() {
        let stdin = next_stdin.take();
        let stdout = if i == last {
            OwnedFd::from(stdout_write.try_clone()?)
        } else {
            let (reader, writer) = std::io::pipe()?;
            next_stdin = Some(reader.into());
            writer.into()
        };
        let stderr = if stderr_with_stdout { stdout_write.try_clone()? } else { stderr_write.try_clone()? };
        streams.push([stdin, Some(stdout), Some(OwnedFd::from(stderr))]);
    }
    let confinement = super::sandbox::Confinement::new(place.export, place.dir.path())
        .map(std::sync::Arc::new)
        .map_err(|e| format!("cannot confine the command: {e}"));
    let none_starts = |message: &str| commands.iter().map(|_| Err(failed(message, 126))).collect::<Vec<_>>();
    // Redirections, output words and homes, all of the job's on its confined file-work thread
    // (see `FileWork`), which a job without any does without.
    let has_file_work = commands.iter().any(|c| !c.redirects.is_empty() || !c.outputs.is_empty() || c.home.is_some());
    let (files, prepared) = match &confinement {
        Err(message) => (None, none_starts(message)),
        Ok(_) if !has_file_work => {
            let mut untouched = Outputs::untouched(place.journal);
            (None, prepare_commands(commands, streams, noclobber, place.dir.path(), &mut untouched))
        }
        Ok(confinement) => {
            match FileWork::start(place.journal.clone(), place.export, commands.to_vec(), confinement.clone()) {
                Ok(files) => {
                    let (commands, job_dir) = (commands.to_vec(), place.dir.path().to_path_buf());
                    let prepare = move |outputs: &mut Outputs<'_>| {
                        prepare_commands(&commands, streams, noclobber, &job_dir, outputs)
                    };
                    let prepared = files.run(prepare).await.unwrap_or_else(|e| none_starts(&os_message(&e)));
                    (Some(files), prepared)
                }
                Err(e) => (None, none_starts(&format!("cannot confine the command: {e}"))),
            }
        }
    };
    // The pipes' ends the proxy keeps, made ready before anything starts: once it has, the job
    // ends only through its supervisor (see `JobProcesses::end`).
    let mut stdin = stdin_write.map(|w| tokio::net::unix::pipe::Sender::from_owned_fd(w.into())).transpose()?;
    let mut stdout = Some(tokio::net::unix::pipe::Receiver::from_owned_fd(stdout_read.into())?);
    let mut stderr = Some(tokio::net::unix::pipe::Receiver::from_owned_fd(stderr_read.into())?);
    let mut launches = Vec::with_capacity(commands.len());
    for (i, prepared) in prepared.into_iter().enumerate() {
        let Prepared { program, fds, home } = match (&confinement, prepared) {
            (Ok(_), Ok(prepared)) => prepared,
            (_, Err(exit)) => {
                ends[i] = Some(exit);
                continue;
            }
            (Err(message), Ok(_)) => {
                ends[i] = Some(failed(message, 126));
                continue;
            }
        };
        let checked = &commands[i];
        let env = checked
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), std::ffi::OsStr::new(v)))
            .chain([("TMPDIR", place.dir.path().as_os_str())])
            .chain(home.as_ref().map(|home| ("HOME", home.as_os_str())));
        // Only the first command of a job that merges apart gets more words (and descriptors).
        let (argv, inherited): (std::borrow::Cow<'_, [String]>, _) = match i {
            0 if !peer_inputs.is_empty() => {
                let named = (3..3 + peer_inputs.len()).map(|fd| format!("/dev/fd/{fd}"));
                (checked.argv.iter().cloned().chain(named).collect(), std::mem::take(&mut peer_inputs))
            }
            _ => (checked.argv.as_slice().into(), Vec::new()),
        };
        match null_for_none(fds).and_then(|stdio| Launch::new(&program, &argv, env, place.cwd, stdio, inherited)) {
            Ok(launch) => launches.push((i, launch)),
            Err(e) => ends[i] = Some(failed(&os_message(&e), 126)),
        }
    }
    // Every command that can start starts under the job's supervisor, which ends with the job
    // and kills whatever of it is left then (see `supervisor`).
    let mut processes = None;
    // Where each command is among those the supervisor started (the reports' numbering): a
    // command that could not start (a failed redirection) has no place there.
    let mut launched_as = vec![usize::MAX; commands.len()];
    if let Ok(confinement) = &confinement
        && !launches.is_empty()
    {
        let (indices, launches): (Vec<usize>, Vec<Launch>) = launches.into_iter().unzip();
        match JobProcesses::start(confinement.clone(), launches, place.dir.life()).await {
            Ok((started_processes, started)) => {
                for (launched, (i, started)) in indices.into_iter().zip(started).enumerate() {
                    launched_as[i] = launched;
                    match started {
                        Ok(pid) => {
                            // Written down before anything waits: a proxy killed with its
                            // supervisor leaves its successor the groups to kill (see `jobs_dir`).
                            if let Err(e) = place.dir.record_group(pid) {
                                tracing::warn!("cannot write down process group {pid}: {e}");
                            }
                            children.push((i, pid));
                        }
                        Err(e) => ends[i] = Some(failed(&os_message(&e), 126)),
                    }
                }
                processes = Some(started_processes);
            }
            Err(e) => {
                let message = format!("cannot start the job's commands: {}", os_message(&e));
                indices.into_iter().for_each(|i| ends[i] = Some(failed(&message, 126)));
            }
        }
    }
    // Only the children hold the write ends now: EOF comes when they are done.
    drop((stdout_write, stderr_write));
    tracing::info!("running {}", Summary(commands));

    let (closed_tx, mut closed) = watch::channel(false);
    let mut meter = progress.then(|| ReadMeter::new(&counted, &children, first_reads_client));
    let mut ticks =
        tokio::time::interval_at(tokio::time::Instant::now() + protocol::PROGRESS_EVERY, protocol::PROGRESS_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let fed = std::sync::atomic::AtomicU64::new(0);
    let fed_by_input = &fed;
    // The client's job suspended and resumed: every process of this job stopped and continued.
    let suspender = match &processes {
        Some(processes) => Some(processes.suspender()?),
        None => None,
    };
    // Frames are read by one long-lived future: a frame read is not safe to cancel halfway.
    let input = async move {
        while let Some((tag, bytes)) = protocol::read_frame(recv).await? {
            match tag {
                TAG_STDIN => {
                    // A command that stopped reading no longer wants its input.
                    if let Some(pipe) = &mut stdin {
                        match pipe.write_all(&bytes).await {
                            Ok(()) => _ = fed_by_input.fetch_add(bytes.len() as u64, Relaxed),
                            Err(_) => stdin = None,
                        }
                    }
                }
                TAG_STDIN_END => stdin = None,
                TAG_STDOUT_CLOSED => {
                    let _ = closed_tx.send(true);
                }
                TAG_STOP => suspender.iter().for_each(Suspender::stop),
                TAG_CONTINUE => suspender.iter().for_each(Suspender::resume),
                tag => anyhow::bail!("unexpected frame {tag} from the client"),
            }
        }
        // A plain end of the client's side is the end of the job's input (a half-close: the
        // pipe closes as this future ends); the job goes on and its output is still wanted. A
        // client that drops a job resets its side instead, which the read above returns as an
        // error, and the job must not run on.
        Ok(())
    };
    let output = async {
        let mut out_buf = ReadBuffer::new(256 * 1024);
        let mut err_buf = ReadBuffer::new(64 * 1024);
        // Nothing is read from the last command before its reader is here (it waits in its pipe).
        let mut peer = match peer_output {
            Some(mut expected) => Some(expected.arrival().await?),
            None => None,
        };
        while stdout.is_some() || stderr.is_some() {
            tokio::select! {
                // Output before errors when both are waiting: GNU tools flush stdout before they
                // report an error, so that is the order they wrote in (exact only when the two
                // are one pipe, see `JobOptions::stderr_with_stdout`).
                biased;
                // First, or a job that never stops writing would never report.
                _ = ticks.tick(), if meter.is_some() => {
                    if let Some(report) = meter.as_mut().and_then(|m| m.report(fed.load(Relaxed))) {
                        protocol::write_frame(send, TAG_PROGRESS, &report).await?;
                    }
                }
                // Only a "stdout closed" frame: an input that ended (its sender gone) is no
                // reader that left.
                _ = async {
                    if closed.wait_for(|c| *c).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }, if stdout.is_some() => stdout = None,
                n = read_some(&mut stdout, out_buf.space()), if stdout.is_some() => match n? {
                    0 => stdout = None,
                    n => {
                        let n = fill(stdout.as_ref(), out_buf.space(), n);
                        match &mut peer {
                            // The other proxy's command stopped reading, as a closed stdout.
                            Some(sink) => if sink.write_all(out_buf.data(n)).await.is_err() {
                                stdout = None;
                            },
                            None => {
                                protocol::write_frame(send, TAG_STDOUT, out_buf.data(n)).await?;
                            }
                        }
                        out_buf.grow_if_filled(n);
                    }
                },
                n = read_some(&mut stderr, err_buf.space()), if stderr.is_some() => match n? {
                    0 => stderr = None,
                    n => {
                        protocol::write_frame(send, TAG_STDERR, err_buf.data(n)).await?;
                        err_buf.grow_if_filled(n);
                    }
                },
            }
        }
        Ok::<_, anyhow::Error>(peer)
    };
    let io = async {
        tokio::pin!(input, output);
        let mut input_done = false;
        loop {
            tokio::select! {
                result = &mut output => return result,
                result = &mut input, if !input_done => {
                    input_done = true;
                    result?;
                }
            }
        }
    };
    let mut lost = None;
    let mut peer = None;
    let completed = tokio::select! {
        result = io => match result {
            Ok(sink) => {
                peer = sink;
                true
            }
            Err(e) => {
                lost = Some(e);
                false
            }
        },
        _ = kill.wait_for(|k| *k) => false,
    };
    if !completed {
        tracing::info!("aborting the job: {}", lost.as_ref().map_or("shutdown".to_string(), |e| format!("{e:#}")));
        if let Some(processes) = &mut processes {
            processes.abort();
        }
    }
    for (i, _) in children {
        let Some(processes) = &mut processes else { break };
        // Commands that write nothing back (`sort big > out`) are reported on while they run.
        let Ending { code, signal, io } = loop {
            tokio::select! {
                ending = processes.wait(launched_as[i]) => break ending?,
                _ = ticks.tick(), if completed && meter.is_some() => {
                    if let Some(report) = meter.as_mut().and_then(|m| m.report(fed.load(Relaxed)))
                        && protocol::write_frame(send, TAG_PROGRESS, &report).await.is_err()
                    {
                        // The client is gone; the exit frame will not reach it either.
                        meter = None;
                    }
                }
            }
        };
        if let Some(meter) = &mut meter {
            meter.ended(i, io);
        }
        ends[i] = Some(Exit { code, signal, error: None, io });
    }
    // What the commands left running dies now, before their outputs are settled: nothing of
    // the job may change the export or its directory after (nor hold a slot).
    if let Some(processes) = processes {
        processes.end().await?;
    }
    let ends: Vec<Exit> = ends.into_iter().map(|e| e.unwrap_or_default()).collect();
    // The other proxy reads a whole file only from a job that completed; dropped, it is reset.
    if let Some(sink) = peer
        && completed
        && (output_is_pipe || ends.last().is_some_and(|e| e.status() == 0))
    {
        sink.complete();
    }
    // Without file work, nothing was touched. Whatever happens to its outputs, the job's exit
    // frame goes: what could not be committed is undone, and the client told on stderr.
    let mut written = Vec::new();
    if let Some(files) = &files {
        let settled_ends = ends.clone();
        let settling = move |outputs: &mut Outputs| {
            let told = outputs.settle(&settled_ends, completed);
            (told, std::mem::take(&mut outputs.written))
        };
        let told = match files.run(settling).await {
            Ok((told, files)) => {
                written = files;
                told
            }
            Err(e) => vec![format!("the job's outputs were not settled: {}", os_message(&e))],
        };
        for message in told {
            if lost.is_none() {
                protocol::write_frame(send, TAG_STDERR, format!("posh-proxy: {message}\n").as_bytes()).await?;
            }
        }
    }
    if let Some(e) = lost {
        return Err(e);
    }
    // The last report, with every count final, comes before the exit frame, which ends a job.
    if let Some(report) = meter.as_mut().and_then(|m| m.report(fed.load(Relaxed))) {
        protocol::write_frame(send, TAG_PROGRESS, &report).await?;
    }
    // Killed at shutdown, the client still learns how its commands ended.
    let ended = Ended { commands: ends, written };
    protocol::write_frame(send, TAG_EXIT, &serde_json::to_vec(&ended)?).await?;
    Ok(ended)
}

/// Tops up `buf` (holding `n` bytes) with what the pipe has ready without waiting: larger frames
/// cost less per byte than one frame per pipe read.
fn fill(pipe: Option<&tokio::net::unix::pipe::Receiver>, buf: &mut [u8], mut n: usize) -> usize {
    let Some(pipe) = pipe else { return n };
    while n < buf.len() {
        match pipe.try_read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(more) => n += more,
        }
    }
    n
}

async fn read_some(pipe: &mut Option<tokio::net::unix::pipe::Receiver>, buf: &mut [u8]) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

/// A job's commands as its log shows them: `cat a b | grep x`, each command's words cut after
/// [`Summary::WORDS_SHOWN`] characters with how many words it has, so that a job over 2,000
/// files logs a line, not 40 KB.
struct Summary<'a>(&'a [Checked]);

impl Summary<'_> {
    const WORDS_SHOWN: usize = 160;
}

impl std::fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, command) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            let words = format!("{:?}", command.argv.join(" "));
            match words.char_indices().nth(Summary::WORDS_SHOWN) {
                Some((cut, _)) => write!(f, "{}... ({} words)", &words[..cut], command.argv.len())?,
                None => f.write_str(&words)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::fs::OpenOptions;
    use std::io::Write as _;
    use std::os::unix::fs::MetadataExt as _;

    use super::*;

    fn export(dir: &Path) -> Root {
        Root::open(dir, RootKind::Export).unwrap()
    }

    #[test]
    fn a_jobs_log_line_is_bounded_whatever_its_words() {
        let command = |argv: Vec<String>| Checked {
            argv,
            env: Vec::new(),
            redirects: Vec::new(),
            outputs: Vec::new(),
            files: Vec::new(),
            home: None,
        };
        let files = (0..2000).map(|i| format!("logs/worker-{i:04}.log"));
        let cat = command(std::iter::once("cat".to_string()).chain(files).collect());
        let grep = command(vec!["grep".into(), "SLOW é".into()]);
        let line = Summary(&[cat, grep]).to_string();
        assert!(line.len() < 300, "{line}");
        assert!(line.starts_with("\"cat logs/worker-0000.log logs/worker-0001.log"), "{line}");
        assert!(line.ends_with("... (2001 words) | \"grep SLOW é\""), "{line}");
    }

    fn exited(code: i32) -> Exit {
        Exit { code: Some(code), ..Exit::default() }
    }

    #[test]
    fn an_append_is_made_in_place_and_cut_back_when_the_job_does_not_complete() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "old\n").unwrap();
        let journal = Journal::none();
        for (completed, expected) in [(false, "old\n"), (true, "old\nnew\n")] {
            let mut outputs = Outputs::new(&journal, export(dir.path()), &[]);
            let mut file = open_output(&log, true, false, false, 0, &mut outputs).unwrap();
            file.write_all(b"new\n").unwrap();
            // No copy beside it: the bytes went into the file itself.
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
            assert_eq!(outputs.settle(&[exited(0)], completed), Vec::<String>::new());
            assert_eq!(std::fs::read_to_string(&log).unwrap(), expected);
        }
    }

    #[test]
    fn a_rewrite_keeps_the_inode_and_links_and_a_killed_writer_keeps_the_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "old\n").unwrap();
        std::fs::hard_link(&file, dir.path().join("link")).unwrap();
        let inode = std::fs::metadata(&file).unwrap().ino();
        let journal = Journal::none();
        let killed = Exit { signal: Some(9), ..Exit::default() };
        for (end, expected) in [(killed, "old\n"), (exited(1), "new\n")] {
            let mut outputs = Outputs::new(&journal, export(dir.path()), &[]);
            open_output(&file, false, false, false, 0, &mut outputs).unwrap().write_all(b"new\n").unwrap();
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n", "staged until the job ends");
            assert_eq!(outputs.settle(&[end], true), Vec::<String>::new());
            assert_eq!(std::fs::read_to_string(dir.path().join("link")).unwrap(), expected);
        }
        assert_eq!(std::fs::metadata(&file).unwrap().ino(), inode);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary left");
    }

    #[test]
    fn an_appending_output_word_is_appended_in_place_without_a_backup() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "old\n").unwrap();
        let journal = Journal::none();
        let checked = Checked {
            argv: vec!["tee".into(), "-a".into(), log.to_str().unwrap().into()],
            env: Vec::new(),
            redirects: Vec::new(),
            outputs: vec![(log.clone(), WordChange::Appended)],
            files: vec![log.clone()],
            home: None,
        };
        for (completed, expected) in [(false, "old\n"), (true, "old\nnew\n")] {
            let mut outputs = Outputs::new(&journal, export(dir.path()), std::slice::from_ref(&checked));
            record_output_words(&checked, 0, &mut outputs).unwrap();
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no copy beside the log");
            OpenOptions::new().append(true).open(&log).unwrap().write_all(b"new\n").unwrap();
            assert_eq!(outputs.settle(&[exited(0)], completed), Vec::<String>::new());
            assert_eq!(std::fs::read_to_string(&log).unwrap(), expected);
        }
    }

    /// Issue 13, class 1: a redirection's target checked by name while `d` was a directory, and
    /// then, a client's command having made `d` a symlink out of the export, opened. The file
    /// work refuses it, whatever the name check saw: `confined_fs` first, Landlock behind it.
    #[tokio::test(flavor = "multi_thread")]
    async fn file_work_cannot_leave_the_export_through_a_swapped_directory() {
        // On a thread of its own: the check confines the thread that makes it.
        let enforced = std::thread::spawn(super::super::sandbox::check_enforced).join().unwrap();
        assert_eq!(enforced, 0, "this kernel does not enforce Landlock");
        let dir = tempfile::tempdir().unwrap();
        let [export, outside, tmp] = ["export", "outside", "tmp"].map(|d| dir.path().join(d));
        for d in [&export, &outside, &tmp] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(outside.join("secret.txt"), "host key\n").unwrap();
        std::os::unix::fs::symlink("../outside", export.join("d")).unwrap();
        let cat = |redirect| Checked {
            argv: vec!["cat".into()],
            env: Vec::new(),
            redirects: vec![redirect],
            outputs: Vec::new(),
            files: Vec::new(),
            home: None,
        };
        let write = |path: PathBuf, append| CheckedRedirect::Write { fd: 1, path, append, clobber: false };
        let commands = vec![
            cat(CheckedRedirect::Read { fd: 0, path: export.join("d/secret.txt") }),
            cat(write(export.join("d/planted.txt"), false)),
            cat(write(export.join("d/secret.txt"), true)),
            cat(write(export.join("inside.txt"), false)),
        ];
        let confinement = std::sync::Arc::new(super::super::sandbox::Confinement::new(&export, &tmp).unwrap());
        let journal = std::sync::Arc::new(Journal::none());
        let files = FileWork::start(journal, &export, commands.clone(), confinement).unwrap();
        let mut opened = Vec::new();
        for (i, command) in commands.into_iter().enumerate() {
            let open = move |outputs: &mut Outputs<'_>| {
                let mut fds = [None, None, None];
                apply_redirects(&command, &mut fds, false, i, outputs).map_err(|e| e.message)
            };
            opened.push(files.run(open).await.unwrap());
        }
        // The first wall: `confined_fs` meets the link and refuses it.
        let refused = |r: &Result<(), String>| r.as_ref().is_err_and(|m| m.contains("symbolic link"));
        assert!(opened[..3].iter().all(refused), "{opened:?}");
        assert_eq!(opened[3], Ok(()), "inside the export it works");
        // The second: the thread itself is confined, whatever code on it opens by name.
        let secret = outside.join("secret.txt");
        let by_name = files.run(move |_| std::fs::read_to_string(secret).map_err(|e| e.kind())).await.unwrap();
        assert_eq!(by_name, Err(std::io::ErrorKind::PermissionDenied));
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "nothing made outside");
        assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "host key\n");
    }

    #[test]
    fn outputs_dropped_unsettled_are_undone() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("made");
        let journal = Journal::none();
        let checked = Checked {
            argv: vec!["cp".into(), "-r".into(), "src".into(), made.to_str().unwrap().into()],
            env: Vec::new(),
            redirects: Vec::new(),
            outputs: vec![(made.join("deeper"), WordChange::Written)],
            files: vec![made.join("deeper")],
            home: None,
        };
        let mut outputs = Outputs::new(&journal, export(dir.path()), &[]);
        record_output_words(&checked, 0, &mut outputs).unwrap();
        std::fs::create_dir_all(made.join("deeper/still")).unwrap();
        drop(outputs);
        assert!(!made.exists(), "the directories the job made are gone");
    }

    /// What `rm`, `rmdir` and `ln -f` remove or replace is put back when the job does not
    /// complete, and only its old name is left when it does; a name that named nothing is
    /// removed again.
    #[test]
    fn removed_names_are_put_back_unless_the_job_completes() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        let journal = Journal::none();
        for completed in [false, true] {
            std::fs::write(at("file"), "old\n").unwrap();
            std::fs::create_dir(at("empty")).unwrap();
            std::fs::set_permissions(at("empty"), std::fs::Permissions::from_mode(0o750)).unwrap();
            std::os::unix::fs::symlink("file", at("link")).unwrap();
            let inode = std::fs::metadata(at("file")).unwrap().ino();
            let removed = ["file", "empty", "link", "new"].map(|name| (at(name), WordChange::Removed));
            let checked = Checked {
                argv: vec!["rm".into()],
                env: Vec::new(),
                redirects: Vec::new(),
                outputs: removed.to_vec(),
                files: Vec::new(),
                home: None,
            };
            let mut outputs = Outputs::new(&journal, export(dir.path()), std::slice::from_ref(&checked));
            record_output_words(&checked, 0, &mut outputs).unwrap();
            // What the commands do: remove, replace, make.
            std::fs::remove_file(at("file")).unwrap();
            std::fs::remove_dir(at("empty")).unwrap();
            std::fs::remove_file(at("link")).unwrap();
            std::os::unix::fs::symlink("elsewhere", at("link")).unwrap();
            std::fs::write(at("new"), "made\n").unwrap();
            assert_eq!(outputs.settle(&[exited(0)], completed), Vec::<String>::new());
            let mut left: Vec<String> =
                std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
            left.sort();
            if completed {
                assert_eq!(left, ["link", "new"], "nothing kept aside is left");
                assert_eq!(std::fs::read_link(at("link")).unwrap(), Path::new("elsewhere"));
                std::fs::remove_file(at("link")).unwrap();
                std::fs::remove_file(at("new")).unwrap();
            } else {
                assert_eq!(left, ["empty", "file", "link"], "each name as it was, the new one gone");
                assert_eq!(std::fs::read_to_string(at("file")).unwrap(), "old\n");
                assert_eq!(std::fs::metadata(at("file")).unwrap().ino(), inode, "the same file, not a copy");
                assert_eq!(std::fs::metadata(at("empty")).unwrap().permissions().mode() & 0o7777, 0o750);
                assert_eq!(std::fs::read_link(at("link")).unwrap(), Path::new("file"));
                for name in left {
                    let path = at(&name);
                    if path.is_dir() { std::fs::remove_dir(path) } else { std::fs::remove_file(path) }.unwrap();
                }
            }
        }
    }

    /// A name the command did not remove after all (`rm` refused it) keeps its file and loses
    /// the link kept aside, whichever way the job ends.
    #[test]
    fn a_name_left_in_place_loses_only_the_link_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        let journal = Journal::none();
        for completed in [false, true] {
            std::fs::write(&file, "old\n").unwrap();
            let checked = Checked {
                argv: vec!["rm".into()],
                env: Vec::new(),
                redirects: Vec::new(),
                outputs: vec![(file.clone(), WordChange::Removed)],
                files: Vec::new(),
                home: None,
            };
            let mut outputs = Outputs::new(&journal, export(dir.path()), std::slice::from_ref(&checked));
            record_output_words(&checked, 0, &mut outputs).unwrap();
            assert_eq!(std::fs::metadata(&file).unwrap().nlink(), 2, "kept aside by a hard link");
            assert_eq!(outputs.settle(&[exited(1)], completed), Vec::<String>::new());
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
            assert_eq!(std::fs::metadata(&file).unwrap().nlink(), 1);
        }
    }

    /// A client that sends `mv full-directory new` anyway (the planner keeps it at the client)
    /// is refused: undoing the new name would remove what the directory holds.
    #[test]
    fn a_directory_with_entries_is_not_removed_at_a_proxy() {
        let dir = tempfile::tempdir().unwrap();
        let full = dir.path().join("full");
        std::fs::create_dir(&full).unwrap();
        std::fs::write(full.join("data.txt"), "keep\n").unwrap();
        let journal = Journal::none();
        let checked = Checked {
            argv: vec!["mv".into()],
            env: Vec::new(),
            redirects: Vec::new(),
            outputs: vec![(full.clone(), WordChange::Removed), (dir.path().join("new"), WordChange::Removed)],
            files: Vec::new(),
            home: None,
        };
        let mut outputs = Outputs::new(&journal, export(dir.path()), std::slice::from_ref(&checked));
        let refused = record_output_words(&checked, 0, &mut outputs).unwrap_err().to_string();
        assert!(refused.contains("a directory with entries"), "{refused}");
        drop(outputs);
        assert_eq!(std::fs::read_to_string(full.join("data.txt")).unwrap(), "keep\n");
    }
}
