//! The file system as posh-core sees it: a trait the caller supplies (the runtime stats local
//! files, a proxy its export, the language server a cached view, tests a map), so posh-core itself
//! does no I/O.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    File,
    Directory,
    /// A FIFO, socket or device: opening one may wait for its other end, or reach what no
    /// proxy should (`mkfifo s1; sort x > s1 & comm s1 s2`).
    Special,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    pub kind: FileKind,
    /// Bytes for a file; 0 for a directory (see [`FileSystem::directory_size`]).
    pub size: u64,
}

impl FileMeta {
    /// What a `stat` says (a directory's size is 0 here).
    pub fn of(meta: &std::fs::Metadata) -> FileMeta {
        if meta.is_dir() {
            FileMeta { kind: FileKind::Directory, size: 0 }
        } else if meta.is_file() {
            FileMeta { kind: FileKind::File, size: meta.len() }
        } else {
            FileMeta { kind: FileKind::Special, size: 0 }
        }
    }
}

pub trait FileSystem {
    /// `None` when the path does not exist or cannot be read. One `stat`: a directory's size is
    /// 0 here.
    fn metadata(&self, path: &Path) -> Option<FileMeta>;
    /// The bytes of everything below a directory, when the implementation can add them up
    /// cheaply (a walk of a local disk, within a budget). The planner asks it only of directories
    /// at the client: walking one on a mount would cost the client a round trip per entry.
    fn directory_size(&self, path: &Path) -> Option<u64>;
    /// The names in a directory, sorted; empty when it is not a readable directory.
    fn read_dir(&self, path: &Path) -> Vec<String>;
    /// [`FileSystem::read_dir`] of several directories, which a networked file system may answer
    /// in parallel (a listing over sshfs is three round trips).
    fn read_dirs(&self, paths: &[PathBuf]) -> Vec<Vec<String>> {
        paths.iter().map(|p| self.read_dir(p)).collect()
    }
    fn read_to_string(&self, path: &Path) -> Option<String>;
    /// For each file, whether its last byte is a newline; `None` when unknown. A split that runs
    /// line-reading commands on each piece of `cat`'s output needs every seam at a line's end.
    /// Asked for a few files at once, which a networked file system may answer in parallel.
    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>>;
}

/// `inner`, with `fifos` known as FIFOs: the names a script makes with `mkfifo` before the
/// pipeline planned, which do not exist yet when the script is planned before it runs; and
/// `files`, empty files where `inner` has none: the file a loop's `done > out.txt` made before
/// its body runs, which the body's globs list.
pub struct WithFifos<'a> {
    pub inner: &'a dyn FileSystem,
    pub fifos: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
}

impl std::fmt::Debug for WithFifos<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithFifos").field("fifos", &self.fifos).finish_non_exhaustive()
    }
}

impl FileSystem for WithFifos<'_> {
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        if !self.fifos.is_empty() {
            let normal = normalized(path);
            if self.fifos.iter().any(|fifo| fifo.as_path() == &*normal) {
                return Some(FileMeta { kind: FileKind::Special, size: 0 });
            }
        }
        let found = self.inner.metadata(path);
        if found.is_none() && self.files.iter().any(|file| file.as_path() == &*normalized(path)) {
            return Some(FileMeta { kind: FileKind::File, size: 0 });
        }
        found
    }
    fn directory_size(&self, path: &Path) -> Option<u64> {
        self.inner.directory_size(path)
    }
    fn read_dir(&self, path: &Path) -> Vec<String> {
        self.with_files(path, self.inner.read_dir(path))
    }
    fn read_dirs(&self, paths: &[PathBuf]) -> Vec<Vec<String>> {
        let listed = self.inner.read_dirs(paths);
        paths.iter().zip(listed).map(|(path, names)| self.with_files(path, names)).collect()
    }
    fn read_to_string(&self, path: &Path) -> Option<String> {
        self.inner.read_to_string(path)
    }
    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
        self.inner.end_with_newlines(paths)
    }
}

impl WithFifos<'_> {
    /// `names` (of the directory `dir`, sorted) with the `files` made in it.
    fn with_files(&self, dir: &Path, mut names: Vec<String>) -> Vec<String> {
        let dir = normalized(dir);
        for file in &self.files {
            let name = file.file_name().and_then(|n| n.to_str());
            if let (Some(name), Some(parent)) = (name, file.parent())
                && parent == &*dir
                && let Err(at) = names.binary_search_by(|n| n.as_str().cmp(name))
            {
                names.insert(at, name.to_string());
            }
        }
        names
    }
}

/// Lexical normalization: drops `.` components and trailing slashes, and resolves `..` against
/// the component before it (`/..` is `/`). Symbolic links are not consulted, so `a/link/..` may
/// name another directory than the file system would; an empty relative result is `.`.
pub fn normalize_path(path: &Path) -> PathBuf {
    normalized(path).into_owned()
}

/// [`normalize_path`], borrowing `path` when it is normal already: most paths a plan asks about
/// are (a glob's 2,000 names, each asked of several times), and a lookup needs no copy.
pub fn normalized(path: &Path) -> std::borrow::Cow<'_, Path> {
    match is_normal(path) {
        true => std::borrow::Cow::Borrowed(path),
        false => std::borrow::Cow::Owned(rebuilt(path)),
    }
}

/// `path` rebuilt component by component, `.` dropped and `..` taken back.
fn rebuilt(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `path` is `prefix` or lies under it, for a normal `path` (as [`normalize_path`] returns):
/// compared as bytes when `prefix` is normal too, else component by component.
pub fn is_under(path: &Path, prefix: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    if !is_normal(prefix) {
        return path.starts_with(prefix);
    }
    let (path, prefix) = (path.as_os_str().as_bytes(), prefix.as_os_str().as_bytes());
    path.starts_with(prefix) && path.get(prefix.len()).is_none_or(|&b| b == b'/')
}

/// Whether `normalize_path` gives `path` back as it is: not empty, no `.` or `..` component, no
/// empty one (`a//b`, a trailing `/`) but the root's.
fn is_normal(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let bytes = path.as_os_str().as_bytes();
    !bytes.is_empty()
        && !bytes
            .split(|&b| b == b'/')
            .enumerate()
            .any(|(i, part)| (part.is_empty() && i > 0) || part == b"." || part == b"..")
}

/// Remembers what another file system answered, for the length of one plan: planning a pipeline
/// asks of the same files many times (globs, sizes, reach, a second build unsplit), and over a
/// mount each first question is a round trip. Only for as long as nothing is written: a plan is
/// made before its pipeline runs.
pub struct Memo<'a> {
    fs: &'a dyn FileSystem,
    metadata: RefCell<Remembered<Option<FileMeta>>>,
    directory_sizes: RefCell<Remembered<Option<u64>>>,
    listings: RefCell<Remembered<Vec<String>>>,
    line_ends: RefCell<Remembered<Option<bool>>>,
}

/// What a [`Memo`] knows by path, hashed by FxHash: a plan over 2,000 files asks about each
/// several times, and SipHash over every path was a visible part of the plan.
type Remembered<T> = HashMap<PathBuf, T, rustc_hash::FxBuildHasher>;

impl<'a> Memo<'a> {
    pub fn new(fs: &'a dyn FileSystem) -> Memo<'a> {
        Memo {
            fs,
            metadata: RefCell::default(),
            directory_sizes: RefCell::default(),
            listings: RefCell::default(),
            line_ends: RefCell::default(),
        }
    }
}

impl std::fmt::Debug for Memo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo").field("metadata", &self.metadata.borrow().len()).finish_non_exhaustive()
    }
}

impl FileSystem for Memo<'_> {
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        remembered(&self.metadata, path, || self.fs.metadata(path))
    }

    fn directory_size(&self, path: &Path) -> Option<u64> {
        remembered(&self.directory_sizes, path, || self.fs.directory_size(path))
    }

    fn read_dir(&self, path: &Path) -> Vec<String> {
        remembered(&self.listings, path, || self.fs.read_dir(path))
    }

    fn read_dirs(&self, paths: &[PathBuf]) -> Vec<Vec<String>> {
        batch(&self.listings, paths, |unknown| self.fs.read_dirs(unknown))
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect()
    }

    fn read_to_string(&self, path: &Path) -> Option<String> {
        self.fs.read_to_string(path)
    }

    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
        batch(&self.line_ends, paths, |unknown| self.fs.end_with_newlines(unknown))
            .into_iter()
            .map(Option::flatten)
            .collect()
    }
}

/// What `cache` knows of `path`, asking it first if need be.
fn remembered<T: Clone>(cache: &RefCell<Remembered<T>>, path: &Path, ask: impl FnOnce() -> T) -> T {
    if let Some(known) = cache.borrow().get(path) {
        return known.clone();
    }
    let answer = ask();
    cache.borrow_mut().insert(path.to_path_buf(), answer.clone());
    answer
}

/// What `cache` knows of each path, asking the paths it does not know all at once (so that they
/// are still answered in parallel) and remembering the answers.
fn batch<T: Clone>(
    cache: &RefCell<Remembered<T>>,
    paths: &[PathBuf],
    ask: impl FnOnce(&[PathBuf]) -> Vec<T>,
) -> Vec<Option<T>> {
    let unknown: Vec<PathBuf> = {
        let known = cache.borrow();
        paths.iter().filter(|p| !known.contains_key(*p)).cloned().collect()
    };
    if !unknown.is_empty() {
        let answers = ask(&unknown);
        cache.borrow_mut().extend(unknown.into_iter().zip(answers));
    }
    let known = cache.borrow();
    paths.iter().map(|p| known.get(p).cloned()).collect()
}

/// An in-memory file system for tests and for what-if planning.
#[derive(Clone, Debug, Default)]
pub struct MemoryFileSystem {
    files: BTreeMap<PathBuf, (u64, Option<String>)>,
    special: std::collections::BTreeSet<PathBuf>,
}

impl MemoryFileSystem {
    pub fn new() -> MemoryFileSystem {
        MemoryFileSystem::default()
    }

    /// Adds a file of `size` bytes (its parents exist implicitly).
    pub fn add_file(&mut self, path: impl Into<PathBuf>, size: u64) -> &mut Self {
        self.files.insert(path.into(), (size, None));
        self
    }

    /// Adds a FIFO (or device).
    pub fn add_special(&mut self, path: impl Into<PathBuf>) -> &mut Self {
        self.special.insert(path.into());
        self
    }

    /// Adds a file with text content.
    pub fn add_text(&mut self, path: impl Into<PathBuf>, text: &str) -> &mut Self {
        self.files.insert(path.into(), (text.len() as u64, Some(text.to_string())));
        self
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.below(path).next().is_some()
    }

    /// The files below directory `path`, in order: paths sort component by component, so they
    /// follow it in one run (a planner test or bench with a hundred thousand files asks often).
    fn below<'s>(&'s self, path: &'s Path) -> impl Iterator<Item = (&'s PathBuf, &'s (u64, Option<String>))> + 's {
        let after = self.files.range::<Path, _>((std::ops::Bound::Excluded(path), std::ops::Bound::Unbounded));
        after.take_while(move |(f, _)| f.starts_with(path))
    }
}

impl FileSystem for MemoryFileSystem {
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        if self.special.contains(path) {
            return Some(FileMeta { kind: FileKind::Special, size: 0 });
        }
        if let Some((size, _)) = self.files.get(path) {
            return Some(FileMeta { kind: FileKind::File, size: *size });
        }
        self.is_dir(path).then_some(FileMeta { kind: FileKind::Directory, size: 0 })
    }

    fn directory_size(&self, path: &Path) -> Option<u64> {
        self.is_dir(path).then(|| self.below(path).map(|(_, (s, _))| s).sum())
    }

    fn read_dir(&self, path: &Path) -> Vec<String> {
        let mut names: Vec<String> = self
            .below(path)
            .filter_map(|(f, _)| f.strip_prefix(path).ok())
            .filter_map(|rest| rest.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        names.dedup();
        names
    }

    fn read_to_string(&self, path: &Path) -> Option<String> {
        self.files.get(path).and_then(|(_, text)| text.clone())
    }

    /// A file added by size ends with a newline; one added with text, as its text does.
    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
        let ends =
            |path: &PathBuf| self.files.get(path).map(|(_, text)| text.as_ref().is_none_or(|t| t.ends_with('\n')));
        paths.iter().map(ends).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_file_system_has_implicit_directories() {
        let mut fs = MemoryFileSystem::new();
        fs.add_file("/mnt/logs/a.log", 10).add_file("/mnt/logs/b.log", 5).add_text("/home/u/posh.toml", "x");
        assert_eq!(fs.metadata(Path::new("/mnt/logs")), Some(FileMeta { kind: FileKind::Directory, size: 0 }));
        assert_eq!(fs.directory_size(Path::new("/mnt/logs")), Some(15));
        assert_eq!(fs.metadata(Path::new("/mnt/logs/a.log")), Some(FileMeta { kind: FileKind::File, size: 10 }));
        assert_eq!(fs.metadata(Path::new("/mnt/nothing")), None);
        assert_eq!(fs.read_dir(Path::new("/mnt")), ["logs"]);
        assert_eq!(fs.read_dir(Path::new("/mnt/logs")), ["a.log", "b.log"]);
        assert_eq!(fs.read_to_string(Path::new("/home/u/posh.toml")).as_deref(), Some("x"));
    }

    /// Every path of up to `depth` of `parts`, absolute and relative, with `` and `/`.
    fn paths_of(parts: &[&str], depth: usize) -> Vec<String> {
        let mut paths = vec![String::new(), "/".to_string()];
        let mut layer = vec![String::new()];
        for _ in 0..depth {
            layer = layer.iter().flat_map(|p| parts.iter().map(move |q| format!("{p}/{q}"))).collect();
            paths.extend(layer.iter().cloned());
            paths.extend(layer.iter().map(|p| p[1..].to_string()));
        }
        paths
    }

    /// A path taken as normal is the one the rebuild gives: every path of up to four parts
    /// among names, `.`, `..`, empty ones (`//`, a trailing `/`), absolute and relative.
    #[test]
    fn a_path_kept_as_it_is_is_the_rebuilt_one() {
        let paths = paths_of(&["a", "bc", ".", "..", "", ".d"], 4);
        let mut kept = 0;
        for path in &paths {
            let path = Path::new(path);
            assert_eq!(normalize_path(path), rebuilt(path), "{path:?}");
            kept += usize::from(is_normal(path));
        }
        assert!(kept > 100, "only {kept} paths were normal");
    }

    /// A normal path is under a prefix, compared as bytes, exactly when `Path::starts_with` says
    /// so: every pair of the paths above whose first is normal.
    #[test]
    fn under_a_prefix_as_bytes_is_under_it_by_components() {
        let paths = paths_of(&["a", "ab", "b", ".", "..", ""], 3);
        let mut under = 0;
        for path in paths.iter().map(Path::new).filter(|p| is_normal(p)) {
            for prefix in paths.iter().map(Path::new) {
                assert_eq!(is_under(path, prefix), path.starts_with(prefix), "{path:?} under {prefix:?}");
                under += usize::from(is_under(path, prefix));
            }
        }
        assert!(under > 100, "only {under} pairs were under");
    }
}
