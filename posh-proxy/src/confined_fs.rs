//! The one place where the proxy touches the file system on a job's behalf, or with names a
//! client influenced: outputs staged, committed and undone, the journal's replay, homes, views
//! and the FIFOs other proxies feed.
//!
//! Everything is done relative to a [`Root`]: an open descriptor of the export, of a job's
//! directory or of the state directory. A path is a relative one below it, walked by the kernel
//! with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` to the parent directory, and the final
//! name is then acted on with the `*at` call (`mkdirat`, `unlinkat`, `renameat`, `linkat`,
//! `mknodat`, `symlinkat`, `statat` without following it). The checker (`confine::resolve`)
//! hands on canonical paths, free of symbolic links: a link met here was put there since, by a
//! job, so it is refused instead of followed, whatever it points at. Nothing here follows the
//! final component either, and a FIFO is never waited on.

// This module is the layer: it opens its roots (an operator's or the proxy's own directories,
// never a client's name) by path, and nothing else.
#![allow(clippy::disallowed_methods)]

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::hash::{BuildHasher as _, Hasher as _};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags, Stat};
use serde::{Deserialize, Serialize};

/// Which of the proxy's directories a [`Root`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootKind {
    /// The directory the proxy serves.
    Export,
    /// A job's private directory (its `TMPDIR`, homes, view).
    JobDir,
    /// The proxy's state directory.
    State,
}

impl std::fmt::Display for RootKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RootKind::Export => "the export",
            RootKind::JobDir => "the job's directory",
            RootKind::State => "the state directory",
        })
    }
}

/// What went wrong, and where: the full path of the name acted on.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The system call failed as the OS says.
    #[error("{}: {}", place.display(), super::protocol::os_message(source))]
    Os {
        place: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The layer refused: the name leaves its root, or changed since it was checked.
    #[error("{}: {why}", place.display())]
    Refused { place: PathBuf, why: &'static str },
}

/// A symbolic link or a way out met on the way: what a job swapped in after the check.
const SWAPPED: &str = "a symbolic link or a way out of its directory is on the way (changed since it was checked)";
/// A FIFO is never opened for a job (its other end would be waited for).
pub const NOT_A_FIFO: &str = "a FIFO cannot be redirected to or from at a proxy";

impl FsError {
    /// The OS error, or `None` for a refusal.
    pub fn os_error(&self) -> Option<&io::Error> {
        match self {
            FsError::Os { source, .. } => Some(source),
            FsError::Refused { .. } => None,
        }
    }

    /// Whether the name does not exist (or a directory on its way does not).
    pub fn is_not_found(&self) -> bool {
        self.os_error().is_some_and(|e| e.kind() == io::ErrorKind::NotFound)
    }
}

/// As a job's redirection reports it: what bash would say, without the path (the client names
/// the word itself).
impl From<FsError> for io::Error {
    fn from(error: FsError) -> io::Error {
        match error {
            FsError::Os { source, .. } => source,
            FsError::Refused { why, .. } => io::Error::new(io::ErrorKind::PermissionDenied, why),
        }
    }
}

/// A file's identity: its device and inode, as when it was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub fn of(stat: &Stat) -> FileId {
        FileId { dev: stat.st_dev, ino: stat.st_ino }
    }

    /// The identity of the open file `file`.
    pub fn of_file(file: impl AsFd) -> io::Result<FileId> {
        Ok(FileId::of(&rustix::fs::fstat(file)?))
    }
}

/// Whether `stat` describes a regular file.
pub fn is_regular(stat: &Stat) -> bool {
    FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
}

/// Whether `stat` describes a directory.
pub fn is_dir(stat: &Stat) -> bool {
    FileType::from_raw_mode(stat.st_mode) == FileType::Directory
}

/// The walk from a root: beneath it, no symbolic link at all, no magic link.
const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS).union(ResolveFlags::NO_MAGICLINKS);

/// An open directory that paths are relative to, with its path for messages.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
    kind: RootKind,
}

impl Root {
    /// Opens the directory `path` (an operator's or the proxy's own, never a client's name) as
    /// a root. Its final component is not followed: a job that replaced a directory it may
    /// write (a view's `cwd`) by a link is refused here.
    pub fn open(path: &Path, kind: RootKind) -> Result<Root, FsError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, Mode::empty())
            .map_err(|e| FsError::Os { place: path.to_path_buf(), source: e.into() })?;
        Ok(Root { fd, path: path.to_path_buf(), kind })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn kind(&self) -> RootKind {
        self.kind
    }

    /// The full path of `rel`, for messages.
    pub fn place(&self, rel: &Path) -> PathBuf {
        self.path.join(rel)
    }

    /// `path` (absolute, as the checker resolved it) relative to this root; refused when it is
    /// not below it.
    pub fn relative<'p>(&self, path: &'p Path) -> Result<&'p Path, FsError> {
        let rel = path.strip_prefix(&self.path).map_err(|_| FsError::Refused {
            place: path.to_path_buf(),
            why: match self.kind {
                RootKind::Export => "not under the export",
                RootKind::JobDir => "not under the job's directory",
                RootKind::State => "not under the state directory",
            },
        })?;
        checked(&self.path, rel)?;
        Ok(rel)
    }

    fn os(&self, rel: &Path) -> impl FnOnce(rustix::io::Errno) -> FsError + '_ {
        let place = self.place(rel);
        move |errno| match errno {
            // What RESOLVE_NO_SYMLINKS and RESOLVE_BENEATH answer.
            rustix::io::Errno::LOOP | rustix::io::Errno::XDEV => FsError::Refused { place, why: SWAPPED },
            errno => FsError::Os { place, source: errno.into() },
        }
    }

    /// The directory holding `rel`'s final name, and that name.
    fn parent<'r>(&self, rel: &'r Path) -> Result<(OwnedFd, &'r OsStr), FsError> {
        checked(&self.path, rel)?;
        let name = rel.file_name().ok_or_else(|| FsError::Refused { place: self.place(rel), why: "names no file" })?;
        let parent = match rel.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat2(&self.fd, parent, flags, Mode::empty(), BENEATH).map_err(self.os(parent))?;
        Ok((fd, name))
    }

    /// Opens `rel` as `flags` say (`mode` for a file it creates), never following a link.
    pub fn open_beneath(&self, rel: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, FsError> {
        checked(&self.path, rel)?;
        let rel_or_here = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
        // openat2 refuses (EINVAL) what open ignores: a mode without O_CREAT, flags beside O_PATH.
        let mut flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        if !flags.contains(OFlags::PATH) {
            flags |= OFlags::NOCTTY;
        }
        let mode = if flags.contains(OFlags::CREATE) { mode } else { Mode::empty() };
        rustix::fs::openat2(&self.fd, rel_or_here, flags, mode, BENEATH).map_err(self.os(rel))
    }

    /// Opens `rel` without waiting for a FIFO's other end (which would hold the job, and
    /// whoever waits for it, for as long as nobody comes), and refuses a FIFO.
    pub fn open_without_waiting(&self, rel: &Path, flags: OFlags, mode: Mode) -> Result<File, FsError> {
        let not_a_fifo = || FsError::Refused { place: self.place(rel), why: NOT_A_FIFO };
        let fd = match self.open_beneath(rel, flags | OFlags::NONBLOCK, mode) {
            Ok(fd) => fd,
            // A FIFO opened for writing without a reader.
            Err(e) if e.os_error().and_then(io::Error::raw_os_error) == Some(libc::ENXIO) => {
                let fifo = self.stat(rel).is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Fifo);
                return Err(if fifo { not_a_fifo() } else { e });
            }
            Err(e) => return Err(e),
        };
        let os = |e: rustix::io::Errno| FsError::Os { place: self.place(rel), source: e.into() };
        let stat = rustix::fs::fstat(&fd).map_err(os)?;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Fifo {
            return Err(not_a_fifo());
        }
        let flags = rustix::fs::fcntl_getfl(&fd).map_err(os)?;
        rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK).map_err(os)?;
        Ok(fd.into())
    }

    /// A new file at `rel`, opened for writing; refused if the name exists (as a link too).
    /// Created as bash creates a file: mode 0666 less the umask.
    pub fn create_new(&self, rel: &Path) -> Result<File, FsError> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        Ok(self.open_beneath(rel, flags, Mode::from_raw_mode(0o666))?.into())
    }

    /// A new file beside `rel`, named `.posh-XXXXXXXX.tmp`: its relative path and the file,
    /// opened for writing. `note` is called with each name before it is made.
    pub fn create_temp_beside(
        &self,
        rel: &Path,
        mut note: impl FnMut(&Path) -> io::Result<()>,
    ) -> Result<(PathBuf, File), FsError> {
        let dir = rel.parent().unwrap_or(Path::new(""));
        let mut last = None;
        for _ in 0..16 {
            // Randomly keyed per process, and a new key each time.
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(u64::from(std::process::id()));
            let temp = dir.join(format!(".posh-{:08x}.tmp", hasher.finish() as u32));
            note(&temp).map_err(|e| FsError::Os { place: self.place(&temp), source: e })?;
            match self.create_new(&temp) {
                Ok(file) => return Ok((temp, file)),
                Err(e) if e.os_error().is_some_and(|e| e.kind() == io::ErrorKind::AlreadyExists) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(FsError::Refused { place: self.place(dir), why: "no free temporary name" }))
    }

    /// The status of `rel` itself (a link is not followed).
    pub fn stat(&self, rel: &Path) -> Result<Stat, FsError> {
        if rel.as_os_str().is_empty() {
            return rustix::fs::fstat(&self.fd).map_err(self.os(rel));
        }
        let (parent, name) = self.parent(rel)?;
        rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW).map_err(self.os(rel))
    }

    /// [`Root::stat`], `None` when nothing has that name.
    pub fn stat_if_present(&self, rel: &Path) -> Result<Option<Stat>, FsError> {
        match self.stat(rel) {
            Ok(stat) => Ok(Some(stat)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes the name `rel` (anything but a directory); `false` when it was not there.
    pub fn remove_file(&self, rel: &Path) -> Result<bool, FsError> {
        let (parent, name) = match self.parent(rel) {
            Err(e) if e.is_not_found() => return Ok(false),
            other => other?,
        };
        match rustix::fs::unlinkat(&parent, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(self.os(rel)(e)),
        }
    }

    /// Removes `rel` and, when it is a directory, everything in it; links are removed, never
    /// followed. `false` when it was not there.
    pub fn remove_tree(&self, rel: &Path) -> Result<bool, FsError> {
        let (parent, name) = match self.parent(rel) {
            Err(e) if e.is_not_found() => return Ok(false),
            other => other?,
        };
        let stat = match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(rustix::io::Errno::NOENT) => return Ok(false),
            Err(e) => return Err(self.os(rel)(e)),
        };
        if is_dir(&stat) {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let dir = rustix::fs::openat(&parent, name, flags, Mode::empty()).map_err(self.os(rel))?;
            empty_tree(dir.as_fd()).map_err(self.os(rel))?;
        }
        let flags = if is_dir(&stat) { AtFlags::REMOVEDIR } else { AtFlags::empty() };
        match rustix::fs::unlinkat(&parent, name, flags) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(true),
            Err(e) => Err(self.os(rel)(e)),
        }
    }

    /// The names in the directory `rel` (`.` and `..` left out).
    pub fn entries(&self, rel: &Path) -> Result<Vec<OsString>, FsError> {
        let dir = self.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        let entries = rustix::fs::Dir::read_from(&dir).map_err(self.os(rel))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(self.os(rel))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsStr::from_bytes(name).to_os_string());
            }
        }
        Ok(names)
    }

    /// Makes the directory `rel` with exactly `mode` (the umask left out).
    pub fn create_dir_with_mode(&self, rel: &Path, mode: u32) -> Result<(), FsError> {
        let (parent, name) = self.parent(rel)?;
        rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(mode)).map_err(self.os(rel))?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let made = rustix::fs::openat2(&parent, name, flags, Mode::empty(), BENEATH).map_err(self.os(rel))?;
        rustix::fs::fchmod(&made, Mode::from_raw_mode(mode)).map_err(self.os(rel))
    }

    /// Makes `rel` and the directories on its way that are missing, each with `mode` (less the
    /// umask); an existing directory is fine, anything else on the way is refused.
    pub fn create_dir_all(&self, rel: &Path, mode: u32) -> Result<(), FsError> {
        checked(&self.path, rel)?;
        let mut current = self.open_beneath(Path::new(""), OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
        let mut walked = PathBuf::new();
        for component in rel.components() {
            let Component::Normal(name) = component else { continue };
            walked.push(name);
            match rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(mode)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(self.os(&walked)(e)),
            }
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            current = rustix::fs::openat2(&current, name, flags, Mode::empty(), BENEATH).map_err(self.os(&walked))?;
        }
        Ok(())
    }

    /// Renames `from` to `to` (both below this root), replacing what `to` names.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<(), FsError> {
        self.rename_with(from, to, RenameFlags::empty())
    }

    /// Renames `from` to `to` only if `to` names nothing.
    pub fn rename_new(&self, from: &Path, to: &Path) -> Result<(), FsError> {
        self.rename_with(from, to, RenameFlags::NOREPLACE)
    }

    fn rename_with(&self, from: &Path, to: &Path, flags: RenameFlags) -> Result<(), FsError> {
        let (from_parent, from_name) = self.parent(from)?;
        let (to_parent, to_name) = self.parent(to)?;
        rustix::fs::renameat_with(&from_parent, from_name, &to_parent, to_name, flags).map_err(self.os(to))
    }

    /// A second name `new` for what `existing` names (a link itself, never what it points at).
    pub fn hard_link(&self, existing: &Path, new: &Path) -> Result<(), FsError> {
        let (old_parent, old_name) = self.parent(existing)?;
        let (new_parent, new_name) = self.parent(new)?;
        rustix::fs::linkat(&old_parent, old_name, &new_parent, new_name, AtFlags::empty()).map_err(self.os(new))
    }

    /// A FIFO at `rel`.
    pub fn make_fifo(&self, rel: &Path, mode: u32) -> Result<(), FsError> {
        let (parent, name) = self.parent(rel)?;
        rustix::fs::mknodat(&parent, name, FileType::Fifo, Mode::from_raw_mode(mode), 0).map_err(self.os(rel))
    }

    /// A symbolic link at `rel` holding `target` (made by the proxy, followed only by jobs,
    /// which Landlock confines).
    pub fn symlink(&self, target: &Path, rel: &Path) -> Result<(), FsError> {
        let (parent, name) = self.parent(rel)?;
        rustix::fs::symlinkat(target, &parent, name).map_err(self.os(rel))
    }

    /// What the symbolic link `rel` holds.
    pub fn read_link(&self, rel: &Path) -> Result<PathBuf, FsError> {
        let (parent, name) = self.parent(rel)?;
        let target = rustix::fs::readlinkat(&parent, name, Vec::new()).map_err(self.os(rel))?;
        Ok(PathBuf::from(OsStr::from_bytes(target.to_bytes())))
    }

    /// Writes `text` as the whole content of the file `rel` (made if missing, mode 0666 less
    /// the umask).
    pub fn write(&self, rel: &Path, text: &[u8]) -> Result<(), FsError> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC;
        let file = self.open_without_waiting(rel, flags, Mode::from_raw_mode(0o666))?;
        io::Write::write_all(&mut &file, text).map_err(|e| FsError::Os { place: self.place(rel), source: e })
    }

    /// Replaces the content of the regular file `target` by that of the regular file `source`,
    /// in the same inode (it keeps its owner, mode, links).
    pub fn copy_into(&self, source: &Path, target: &Path) -> Result<(), FsError> {
        let from = self.open_regular(source, OFlags::RDONLY)?;
        let to = self.open_regular(target, OFlags::WRONLY)?;
        copy_contents(&from, &to).map_err(|e| FsError::Os { place: self.place(target), source: e })
    }

    /// Opens `rel` as `flags` say if it is a regular file (checked on the open descriptor).
    pub fn open_regular(&self, rel: &Path, flags: OFlags) -> Result<File, FsError> {
        let file = self.open_without_waiting(rel, flags, Mode::empty())?;
        let stat = rustix::fs::fstat(&file).map_err(self.os(rel))?;
        if !is_regular(&stat) {
            return Err(FsError::Refused { place: self.place(rel), why: "not a regular file" });
        }
        Ok(file)
    }

    /// Bytes the proxy may still write on the filesystem holding `rel` (root may use the
    /// reserved blocks); `None` when that cannot be told.
    pub fn free_space(&self, rel: &Path) -> Option<u64> {
        let (parent, _) = self.parent(rel).ok()?;
        let vfs = rustix::fs::fstatvfs(&parent).ok()?;
        let blocks = if rustix::process::geteuid().is_root() { vfs.f_bfree } else { vfs.f_bavail };
        Some(blocks.saturating_mul(vfs.f_frsize))
    }
}

/// Replaces `to`'s content by `from`'s (from its start), in `to`'s inode.
pub fn copy_contents(from: &File, to: &File) -> io::Result<()> {
    to.set_len(0)?;
    let (mut from, mut to) = (from, to);
    io::Seek::rewind(&mut to)?;
    io::Seek::rewind(&mut from)?;
    // copy_file_range under the hood: the kernel copies (or shares extents, where it can).
    io::copy(&mut from, &mut to)?;
    Ok(())
}

/// `/dev/null`, for a redirection to it (the one target the checker lets name something outside
/// the export: a fixed name, no client's).
pub fn open_dev_null(write: bool) -> io::Result<File> {
    let flags = if write { OFlags::WRONLY } else { OFlags::RDONLY };
    Ok(rustix::fs::open("/dev/null", flags | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty())?.into())
}

/// `rel` must be relative and without `..`: a way out is refused before the kernel sees it.
fn checked(root: &Path, rel: &Path) -> Result<(), FsError> {
    let fine = rel.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if fine { Ok(()) } else { Err(FsError::Refused { place: root.join(rel), why: "not a path below its directory" }) }
}

/// Removes everything in the directory `dir`, not following links.
fn empty_tree(dir: BorrowedFd<'_>) -> rustix::io::Result<()> {
    let names: Vec<std::ffi::CString> = rustix::fs::Dir::read_from(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_owned())
        .filter(|name| name.as_bytes() != b"." && name.as_bytes() != b"..")
        .collect();
    for name in names {
        let stat = match rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(e),
        };
        if is_dir(&stat) {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let sub = rustix::fs::openat(dir, &name, flags, Mode::empty())?;
            empty_tree(sub.as_fd())?;
        }
        let flags = if is_dir(&stat) { AtFlags::REMOVEDIR } else { AtFlags::empty() };
        match rustix::fs::unlinkat(dir, &name, flags) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root with a file, a directory, and ways out planted in it: a link to a directory
    /// outside, a link to a file outside.
    fn planted() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let [root, outside] = ["root", "outside"].map(|d| dir.path().join(d));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(root.join("sub/f.txt"), "inside\n").unwrap();
        std::fs::write(outside.join("secret.txt"), "outside\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("secret-link")).unwrap();
        let opened = Root::open(&root, RootKind::Export).unwrap();
        (dir, opened)
    }

    fn refused<T: std::fmt::Debug>(result: Result<T, FsError>) -> String {
        match result {
            Err(e @ FsError::Refused { .. }) => e.to_string(),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_symlink_on_the_way_or_at_the_end_is_refused_whatever_it_points_at() {
        let (dir, root) = planted();
        let outside = dir.path().join("outside");
        let write = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC;
        let mode = Mode::from_raw_mode(0o644);
        assert!(
            refused(root.open_beneath(Path::new("out/secret.txt"), OFlags::RDONLY, mode)).contains("symbolic link")
        );
        refused(root.open_beneath(Path::new("out/new.txt"), write, mode));
        refused(root.open_beneath(Path::new("secret-link"), write, mode));
        refused(root.create_dir_all(Path::new("out/a/b"), 0o700));
        refused(root.make_fifo(Path::new("out/fifo"), 0o600));
        refused(root.symlink(Path::new("/"), Path::new("out/link")));
        refused(root.rename(Path::new("sub/f.txt"), Path::new("out/moved.txt")));
        refused(root.hard_link(Path::new("sub/f.txt"), Path::new("out/linked.txt")));
        refused(root.copy_into(Path::new("sub/f.txt"), Path::new("secret-link")));
        refused(root.remove_file(Path::new("out/secret.txt")));
        refused(root.stat(Path::new("out/secret.txt")));
        // The link itself is a name in the root: it may be looked at and removed, as a link.
        assert_eq!(FileType::from_raw_mode(root.stat(Path::new("out")).unwrap().st_mode), FileType::Symlink);
        assert!(root.remove_tree(Path::new("out")).unwrap());
        let left: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["secret.txt"], "nothing made or removed outside");
        assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "outside\n");
    }

    #[test]
    fn dot_dot_and_absolute_paths_are_refused_before_the_kernel_sees_them() {
        let (dir, root) = planted();
        let escapes = ["../outside/secret.txt", "sub/../../outside/secret.txt", "/etc/passwd", "sub/.."];
        for path in escapes {
            let why = refused(root.open_beneath(Path::new(path), OFlags::RDONLY, Mode::empty()));
            assert!(why.contains("not a path below its directory"), "{path}: {why}");
            refused(root.stat(Path::new(path)));
            refused(root.remove_tree(Path::new(path)));
        }
        let outside = dir.path().join("outside/secret.txt");
        assert!(refused(root.relative(&outside)).contains("not under the export"));
        assert_eq!(root.relative(&root.place(Path::new("sub/f.txt"))).unwrap(), Path::new("sub/f.txt"));
        assert!(outside.exists());
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_its_other_end() {
        let (_dir, root) = planted();
        root.make_fifo(Path::new("sub/fifo"), 0o600).unwrap();
        // Either way: a reader would wait for a writer, a writer get ENXIO.
        for flags in [OFlags::RDONLY, OFlags::WRONLY, OFlags::WRONLY | OFlags::APPEND] {
            let why = refused(root.open_without_waiting(Path::new("sub/fifo"), flags, Mode::empty()));
            assert!(why.contains("FIFO"), "{why}");
        }
        let file = root.open_without_waiting(Path::new("sub/f.txt"), OFlags::RDONLY, Mode::empty()).unwrap();
        let flags = rustix::fs::fcntl_getfl(&file).unwrap();
        assert!(!flags.contains(OFlags::NONBLOCK), "a file is handed on blocking, as bash opens it");
    }

    #[test]
    fn files_are_made_copied_renamed_and_removed_below_the_root() {
        let (_dir, root) = planted();
        root.create_dir_all(Path::new("a/b/c"), 0o700).unwrap();
        root.create_dir_all(Path::new("a/b/c"), 0o700).unwrap();
        let (temp, file) = root.create_temp_beside(Path::new("a/b/out.txt"), |_| Ok(())).unwrap();
        assert!(temp.starts_with("a/b") && temp.to_string_lossy().ends_with(".tmp"), "{temp:?}");
        io::Write::write_all(&mut &file, b"new\n").unwrap();
        assert!(root.create_new(&temp).is_err(), "never over an existing name");
        root.write(Path::new("a/b/out.txt"), b"old content\n").unwrap();
        let before = FileId::of(&root.stat(Path::new("a/b/out.txt")).unwrap());
        root.copy_into(&temp, Path::new("a/b/out.txt")).unwrap();
        assert_eq!(std::fs::read_to_string(root.place(Path::new("a/b/out.txt"))).unwrap(), "new\n");
        assert_eq!(FileId::of(&root.stat(Path::new("a/b/out.txt")).unwrap()), before, "the same inode");
        root.hard_link(&temp, Path::new("a/kept")).unwrap();
        assert!(root.rename_new(Path::new("a/kept"), Path::new("a/b/out.txt")).is_err(), "no replacing");
        root.rename(Path::new("a/kept"), Path::new("a/b/c/moved")).unwrap();
        assert!(root.remove_file(&temp).unwrap());
        assert!(!root.remove_file(&temp).unwrap(), "gone already");
        root.create_dir_with_mode(Path::new("a/exact"), 0o750).unwrap();
        assert_eq!(root.stat(Path::new("a/exact")).unwrap().st_mode & 0o7777, 0o750);
        root.symlink(Path::new("/"), Path::new("a/b/c/link")).unwrap();
        assert_eq!(root.read_link(Path::new("a/b/c/link")).unwrap(), Path::new("/"));
        let mut names = root.entries(Path::new("a")).unwrap();
        names.sort();
        assert_eq!(names, ["b", "exact"]);
        assert!(root.free_space(Path::new("a/b/out.txt")).is_some_and(|free| free > 0));
        assert!(root.remove_tree(Path::new("a")).unwrap());
        assert!(root.stat_if_present(Path::new("a")).unwrap().is_none());
    }

    #[test]
    fn a_root_whose_own_name_is_a_link_is_refused() {
        let (dir, _root) = planted();
        let refused = Root::open(&dir.path().join("root/out"), RootKind::JobDir).unwrap_err();
        assert!(refused.to_string().contains("/root/out"), "{refused}");
    }
}
