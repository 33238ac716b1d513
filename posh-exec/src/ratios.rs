//! The client's measured ratios (`posh_core::planner::measured`) in its state directory: read
//! once per run before anything is planned, so that `--explain`, the hand-over and the runtime
//! plan alike; updated after each pipeline under a lock, so that runs side by side keep each
//! other's figures. The file is a cache: a broken one is warned about and
//! replaced by the next figure recorded.
//!
//! Figures are recorded only where the state directory already exists: a run makes it when it
//! reaches a separate proxy (the client's identity lives there) and `--print-identity` makes
//! it, but a run whose mounts are all embedded leaves the user's home as it found it (a script
//! may list it). `mkdir -p ~/.local/state/posh` has such runs learn too.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use posh_core::planner::measured::{FILE_NAME, MIN_MEASURED_READ, Ratios};

pub fn file(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE_NAME)
}

/// The figures in `path`; none when it does not exist, or (with a warning naming the place)
/// when it cannot be read.
pub fn load(path: &Path) -> Ratios {
    match std::fs::read_to_string(path) {
        Ok(text) => Ratios::parse(&text).unwrap_or_else(|e| {
            eprintln!("posh-exec: {}:{e}; planning without measured ratios", path.display());
            Ratios::default()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ratios::default(),
        Err(e) => {
            eprintln!("posh-exec: {}: {e}; planning without measured ratios", path.display());
            Ratios::default()
        }
    }
}

/// Adds `runs` (shape, bytes read, bytes written, processes) to the file at `path`, when its directory
/// exists. A failure (a full disk, a read-only home) costs only the figures, so it is logged,
/// not reported.
pub fn record(path: &Path, runs: &[(String, u64, u64, u32)]) {
    // Most pipelines read too little to tell: they leave the file alone.
    if runs.iter().all(|(_, read, _, _)| *read < MIN_MEASURED_READ) {
        return;
    }
    if let Err(e) = try_record(path, runs) {
        tracing::debug!("cannot record measured ratios in {}: {e}", path.display());
    }
}

fn try_record(path: &Path, runs: &[(String, u64, u64, u32)]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Ok(());
    }
    let lock = std::fs::OpenOptions::new().create(true).append(true).open(path.with_extension("lock"))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)?;
    let mut ratios = std::fs::read_to_string(path).ok().and_then(|t| Ratios::parse(&t).ok()).unwrap_or_default();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    for (shape, read, written, processes) in runs {
        ratios.record(shape, *read, *written, *processes, now);
    }
    // Replaced whole, so a reader never sees half a file.
    let mut staged = tempfile::NamedTempFile::new_in(dir)?;
    staged.write_all(ratios.to_json().as_bytes())?;
    staged.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use posh_core::planner::measured::STARTUP_READ;

    #[test]
    fn runs_are_added_to_what_the_file_holds_and_a_broken_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        assert!(load(&path).is_empty());
        record(&path, &[("grep IP".into(), (10 << 20) + STARTUP_READ, 1 << 20, 1)]);
        record(&path, &[("sort".into(), (4 << 20) + STARTUP_READ, 4 << 20, 1)]);
        let ratios = load(&path);
        assert_eq!(ratios.get("grep IP").map(|m| (m.ratio, m.runs)), Some((0.1, 1)));
        assert_eq!(ratios.get("sort").map(|m| (m.ratio, m.runs)), Some((1.0, 1)));
        std::fs::write(&path, "{ broken").unwrap();
        assert!(load(&path).is_empty());
        record(&path, &[("sort".into(), (4 << 20) + STARTUP_READ, 2 << 20, 1)]);
        assert_eq!(load(&path).get("sort").map(|m| (m.ratio, m.runs)), Some((0.5, 1)));
    }

    #[test]
    fn nothing_is_recorded_where_the_state_directory_does_not_exist() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(&dir.path().join("posh"));
        record(&path, &[("grep IP".into(), (10 << 20) + STARTUP_READ, 1 << 20, 1)]);
        assert!(!dir.path().join("posh").exists());
    }
}
