//! The real file system as the language server sees it: sizes of named files only (a directory's
//! size is not walked), listings cut at a bound, the last bytes of a split's seams, every answer
//! cached for a short while, and a time budget per analysis after which unknown paths count as
//! absent. Keystrokes must never wait on a slow disk or a huge directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use posh_core::fs::{FileMeta, FileSystem};

/// At most this many names of one directory are listed (globs see no more).
pub const LISTING_LIMIT: usize = 2_000;

/// The user's configuration directory: `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn user_config_dir() -> Option<PathBuf> {
    posh_core::config::xdg_base_dir(std::env::var_os("XDG_CONFIG_HOME"), std::env::var_os("HOME"), ".config")
}

/// The user's state directory, where posh-exec keeps what it measured: `$XDG_STATE_HOME`, else
/// `~/.local/state`.
pub fn user_state_dir() -> Option<PathBuf> {
    posh_core::config::xdg_base_dir(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"), ".local/state")
}

#[derive(Debug, Clone)]
enum Cached {
    Meta(Option<FileMeta>),
    Listing(Vec<String>),
    EndsWithNewline(Option<bool>),
}

/// What is asked of a path (the cache's key with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Query {
    Meta,
    Listing,
    LastByte,
}

/// A cache shared by every analysis of a workspace; entries expire after `ttl`.
#[derive(Debug)]
pub struct CachedFs {
    ttl: Duration,
    cache: Mutex<HashMap<(PathBuf, Query), (Instant, Cached)>>,
}

impl CachedFs {
    pub fn new(ttl: Duration) -> CachedFs {
        CachedFs { ttl, cache: Mutex::new(HashMap::new()) }
    }

    /// Forgets everything (a watched file changed).
    pub fn clear(&self) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// A view for one analysis that stops touching the disk once `budget` has passed.
    pub fn budgeted(&self, budget: Duration) -> BudgetedFs<'_> {
        BudgetedFs { fs: self, deadline: Instant::now() + budget, ran_out: AtomicBool::new(false) }
    }

    /// The cached answer, or a fresh one before `deadline`; `None` (and `ran_out` set) past it.
    fn lookup(
        &self,
        path: &Path,
        query: Query,
        deadline: Instant,
        ran_out: &AtomicBool,
        load: impl FnOnce() -> Cached,
    ) -> Option<Cached> {
        let key = (path.to_path_buf(), query);
        let now = Instant::now();
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, value)) = cache.get(&key)
                && now.duration_since(*at) < self.ttl
            {
                return Some(value.clone());
            }
        }
        if now > deadline {
            ran_out.store(true, Ordering::Relaxed);
            return None;
        }
        let value = load();
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).insert(key, (now, value.clone()));
        Some(value)
    }
}

/// [`CachedFs`] within one analysis's time budget.
#[derive(Debug)]
pub struct BudgetedFs<'a> {
    fs: &'a CachedFs,
    deadline: Instant,
    /// A question went unanswered because the budget had run out.
    ran_out: AtomicBool,
}

impl BudgetedFs<'_> {
    /// Whether an answer was missing because the budget ran out: what was planned with this view
    /// counted some sizes as 0, and must not be kept.
    pub fn ran_out(&self) -> bool {
        self.ran_out.load(Ordering::Relaxed)
    }
}

impl FileSystem for BudgetedFs<'_> {
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        let load = || Cached::Meta(std::fs::metadata(path).ok().map(|m| FileMeta::of(&m)));
        match self.fs.lookup(path, Query::Meta, self.deadline, &self.ran_out, load) {
            Some(Cached::Meta(meta)) => meta,
            _ => None,
        }
    }

    /// Not walked: the editor's plan must come back within its budget, and a walk through a
    /// network mount would not.
    fn directory_size(&self, _path: &Path) -> Option<u64> {
        None
    }

    fn read_dir(&self, path: &Path) -> Vec<String> {
        let load = || {
            let mut names: Vec<String> = std::fs::read_dir(path)
                .map(|entries| {
                    entries
                        .filter_map(|e| e.ok())
                        .take(LISTING_LIMIT)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            Cached::Listing(names)
        };
        match self.fs.lookup(path, Query::Listing, self.deadline, &self.ran_out, load) {
            Some(Cached::Listing(names)) => names,
            _ => Vec::new(),
        }
    }

    fn read_to_string(&self, path: &Path) -> Option<String> {
        if Instant::now() > self.deadline {
            self.ran_out.store(true, Ordering::Relaxed);
            return None;
        }
        std::fs::read_to_string(path).ok()
    }

    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
        let ends = |path: &PathBuf| {
            let load = || {
                use std::os::unix::fs::FileExt as _;
                let last_byte = || {
                    let file = std::fs::File::open(path).ok()?;
                    let size = file.metadata().ok().filter(|m| m.is_file())?.len();
                    let mut byte = [0u8];
                    file.read_exact_at(&mut byte, size.checked_sub(1)?).ok()?;
                    Some(byte[0] == b'\n')
                };
                Cached::EndsWithNewline(last_byte())
            };
            match self.fs.lookup(path, Query::LastByte, self.deadline, &self.ran_out, load) {
                Some(Cached::EndsWithNewline(ends)) => ends,
                _ => None,
            }
        };
        paths.iter().map(ends).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use posh_core::fs::FileKind;

    #[test]
    fn sizes_are_cached_and_the_budget_stops_new_lookups() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.log");
        std::fs::write(&file, "12345").unwrap();
        let fs = CachedFs::new(Duration::from_secs(60));
        let view = fs.budgeted(Duration::from_secs(5));
        assert_eq!(view.metadata(&file), Some(FileMeta { kind: FileKind::File, size: 5 }));
        assert_eq!(view.metadata(dir.path()).map(|m| m.kind), Some(FileKind::Directory));
        assert_eq!(view.read_dir(dir.path()), vec!["a.log".to_string()]);
        // Cached: a change on disk is seen only after `clear` (a watched-file notification).
        std::fs::write(&file, "1234567890").unwrap();
        assert_eq!(view.metadata(&file).map(|m| m.size), Some(5));
        fs.clear();
        assert_eq!(view.metadata(&file).map(|m| m.size), Some(10));
        // Past its budget a view answers from the cache only.
        let late = fs.budgeted(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(late.metadata(&file).map(|m| m.size), Some(10));
        assert_eq!(late.metadata(&dir.path().join("other")), None);
    }
}
