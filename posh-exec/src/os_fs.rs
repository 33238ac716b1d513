//! The real file system behind posh-core's `FileSystem` trait.

use std::path::{Path, PathBuf};

use posh_core::fs::{FileMeta, FileSystem};
/// How many entries a directory's size walk visits before it settles for what it has seen: a
/// plan must come back in milliseconds, even for a home directory. A proxy asked the same walks
/// as far.
use posh_proxy::metadata::WALK_LIMIT;

#[derive(Debug, Default)]
pub struct OsFileSystem;

impl FileSystem for OsFileSystem {
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        std::fs::metadata(path).ok().map(|meta| FileMeta::of(&meta))
    }

    fn directory_size(&self, path: &Path) -> Option<u64> {
        let mut budget = WALK_LIMIT;
        std::fs::metadata(path).ok().filter(|m| m.is_dir()).map(|_| walk(path, &mut budget))
    }

    fn read_dir(&self, path: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .map(|entries| {
                entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// One thread per directory, as for the line ends below.
    fn read_dirs(&self, paths: &[PathBuf]) -> Vec<Vec<String>> {
        if paths.len() < 2 {
            return paths.iter().map(|p| self.read_dir(p)).collect();
        }
        std::thread::scope(|scope| {
            let lists: Vec<_> = paths.iter().map(|p| scope.spawn(move || self.read_dir(p))).collect();
            lists.into_iter().map(|l| l.join().unwrap_or_default()).collect()
        })
    }

    fn read_to_string(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    /// One thread per file: over sshfs or NFS each read is a round trip or two.
    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
        std::thread::scope(|scope| {
            let reads: Vec<_> = paths.iter().map(|p| scope.spawn(move || last_byte(p).map(|b| b == b'\n'))).collect();
            reads.into_iter().map(|r| r.join().unwrap_or(None)).collect()
        })
    }
}

/// The last byte of a non-empty regular file.
fn last_byte(path: &Path) -> Option<u8> {
    use std::os::unix::fs::FileExt as _;
    let file = std::fs::File::open(path).ok()?;
    let size = file.metadata().ok().filter(|m| m.is_file())?.len();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, size.checked_sub(1)?).ok()?;
    Some(byte[0])
}

fn walk(path: &Path, budget: &mut usize) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.filter_map(|e| e.ok()) {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        // symlink_metadata: a link is not followed, so a cycle cannot trap the walk.
        match entry.path().symlink_metadata() {
            Ok(meta) if meta.is_dir() => total += walk(&entry.path(), budget),
            Ok(meta) => total += meta.len(),
            Err(_) => {}
        }
    }
    total
}
