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

    /// Listed at once, as the line ends below are read.
    fn read_dirs(&self, paths: &[PathBuf]) -> Vec<Vec<String>> {
        if paths.len() < 2 {
            return paths.iter().map(|p| self.read_dir(p)).collect();
        }
        at_once(paths, |p| self.read_dir(p))
    }

    fn read_to_string(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    /// Read at once: over sshfs or NFS each read is a round trip or two.
    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
        at_once(paths, |p| last_byte(p).map(|b| b == b'\n'))
    }
}

/// How many threads ask the file system at once: enough that a networked one's round trips
/// overlap, few enough that starting them does not cost more than the questions (a thread per
/// file was a thousand threads for a split across a thousand mounts).
const THREADS_AT_ONCE: usize = 32;

/// `ask` of every path, from up to [`THREADS_AT_ONCE`] threads, the answers in the paths' order
/// (a thread that panics leaves its paths' answers the default).
fn at_once<T: Default + Send>(paths: &[PathBuf], ask: impl Fn(&Path) -> T + Sync) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let threads = paths.len().min(THREADS_AT_ONCE);
    let answered: Vec<Vec<(usize, T)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut answers = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = paths.get(i) else { break answers };
                        answers.push((i, ask(path)));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    });
    let mut answers: Vec<T> = paths.iter().map(|_| T::default()).collect();
    for (i, answer) in answered.into_iter().flatten() {
        answers[i] = answer;
    }
    answers
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
