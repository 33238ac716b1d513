//! The file system as posh-core sees it: a trait the caller supplies (the runtime stats local
//! files, a proxy its export, the language server a cached view, tests a map), so posh-core itself
//! does no I/O.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    File,
    Directory,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    pub kind: FileKind,
    /// Bytes for a file; 0 for a directory (see [`FileSystem::directory_size`]).
    pub size: u64,
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
    fn read_to_string(&self, path: &Path) -> Option<String>;
    /// For each file, whether its last byte is a newline; `None` when unknown. A split that runs
    /// line-reading commands on each piece of `cat`'s output needs every seam at a line's end.
    /// Asked for a few files at once, which a networked file system may answer in parallel.
    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>>;
}

/// Lexical normalization: drops `.` components and trailing slashes, and resolves `..` against
/// the component before it (`/..` is `/`). Symbolic links are not consulted, so `a/link/..` may
/// name another directory than the file system would; an empty relative result is `.`.
pub fn normalize_path(path: &Path) -> PathBuf {
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

/// An in-memory file system for tests and for what-if planning.
#[derive(Clone, Debug, Default)]
pub struct MemoryFileSystem {
    files: BTreeMap<PathBuf, (u64, Option<String>)>,
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

    /// Adds a file with text content.
    pub fn add_text(&mut self, path: impl Into<PathBuf>, text: &str) -> &mut Self {
        self.files.insert(path.into(), (text.len() as u64, Some(text.to_string())));
        self
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.files.keys().any(|f| f.starts_with(path) && f != path)
    }
}

impl FileSystem for MemoryFileSystem {
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        if let Some((size, _)) = self.files.get(path) {
            return Some(FileMeta { kind: FileKind::File, size: *size });
        }
        self.is_dir(path).then_some(FileMeta { kind: FileKind::Directory, size: 0 })
    }

    fn directory_size(&self, path: &Path) -> Option<u64> {
        self.is_dir(path).then(|| self.files.iter().filter(|(f, _)| f.starts_with(path)).map(|(_, (s, _))| s).sum())
    }

    fn read_dir(&self, path: &Path) -> Vec<String> {
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter_map(|f| f.strip_prefix(path).ok())
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
}
