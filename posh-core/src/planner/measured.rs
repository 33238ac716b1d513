//! What earlier runs measured: the share of its input each command shape wrote, so that the
//! planner predicts `grep IP` by what it kept last time (2% of a log) instead of an assumption
//! (half, for a filter). The runtime records the figures in the user's state directory
//! (`posh/ratios.json`); this module is their model and text form, without I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The file's name in posh's state directory.
pub const FILE_NAME: &str = "ratios.json";

/// Below this many bytes read, what a command reads is mostly its own start-up (the dynamic
/// loader, locale files: 7 to 16 KB for grep, sort, awk, wc): such runs are not recorded.
pub const MIN_MEASURED_READ: u64 = 1 << 20;

/// What a process reads before any of its input: the dynamic loader and locale files (7 to
/// 16 KB for grep, sort, awk, wc). Taken off what each process of a run read, so that a split
/// over a thousand one-line files (a thousand processes reading mostly their own libraries)
/// teaches nothing rather than a ratio near 0.
pub const STARTUP_READ: u64 = 16 << 10;

/// Each earlier figure weighs (WINDOW - 1) / WINDOW of what it did after a run, so that a ratio
/// follows a workload that changes: about this many recent runs of equal size make it.
const WINDOW: u32 = 8;

/// Shapes kept; the least recently run go first.
const MAX_SHAPES: usize = 2000;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    shapes: BTreeMap<String, Measured>,
}

/// Nothing measured: plans from the annotations alone.
pub static NO_RATIOS: Ratios = Ratios { shapes: BTreeMap::new() };

/// What the runs of one shape wrote per byte read.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Bytes written per byte read.
    pub ratio: f64,
    /// Runs measured (a split command's copies count as one).
    pub runs: u32,
    /// When it last ran, in seconds since the epoch (for pruning).
    pub last_run: u64,
    /// The input bytes behind the ratio, older runs' faded: a run weighs by what it read, so a
    /// large run outweighs many small ones. 0 in files written before it was kept.
    #[serde(default)]
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct RatiosError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Ratios {
    pub fn parse(text: &str) -> Result<Ratios, RatiosError> {
        serde_json::from_str(text).map_err(|e| {
            let message = e.to_string();
            // serde_json ends its message with the place, which `line` and `column` hold.
            let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m).to_string();
            RatiosError { line: e.line(), column: e.column(), message }
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("ratios serialise") + "\n"
    }

    pub fn get(&self, shape: &str) -> Option<&Measured> {
        self.shapes.get(shape)
    }

    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    /// Adds a run of `shape` in `processes` processes (its split copies) that read `read` bytes
    /// and wrote `written`, at `now`. What the processes read of their own start-up
    /// ([`STARTUP_READ`] each) is not input; runs that read too little input to tell are left
    /// out. The ratio is the mean of the runs weighed by the input bytes behind each.
    pub fn record(&mut self, shape: &str, read: u64, written: u64, processes: u32, now: u64) {
        let input = read.saturating_sub(u64::from(processes.max(1)) * STARTUP_READ);
        if input < MIN_MEASURED_READ {
            return;
        }
        let ratio = written as f64 / input as f64;
        let entry =
            self.shapes.entry(shape.to_string()).or_insert(Measured { ratio, runs: 0, last_run: now, bytes: 0 });
        // A figure from a file without `bytes` stands for its runs at the least that counts.
        let behind = if entry.bytes == 0 { u64::from(entry.runs.min(WINDOW)) * MIN_MEASURED_READ } else { entry.bytes };
        let behind = behind as f64 * f64::from(WINDOW - 1) / f64::from(WINDOW);
        entry.ratio = (entry.ratio * behind + ratio * input as f64) / (behind + input as f64);
        entry.bytes = (behind + input as f64).round() as u64;
        entry.runs = entry.runs.saturating_add(1);
        entry.last_run = entry.last_run.max(now);
        if self.shapes.len() > MAX_SHAPES {
            let mut by_age: Vec<(u64, String)> = self.shapes.iter().map(|(s, m)| (m.last_run, s.clone())).collect();
            by_age.sort();
            for (_, old) in by_age.into_iter().take(self.shapes.len() - MAX_SHAPES) {
                self.shapes.remove(&old);
            }
        }
    }
}

/// The shape of a command for its measured ratio: its name and the words that are not files
/// (`grep -c IP` for `grep -c IP a.log b.log`), so that runs over other files share it.
pub fn shape(argv: &[String], files: &[&str]) -> String {
    let Some((name, words)) = argv.split_first() else {
        return String::new();
    };
    let name = crate::matcher::command_name(name).to_string();
    let files: std::collections::HashSet<&str> = files.iter().copied().collect();
    let kept = words.iter().filter(|w| !files.contains(w.as_str())).cloned();
    shell_words::join(std::iter::once(name).chain(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_follows_recent_runs_and_ignores_tiny_ones() {
        let mut ratios = Ratios::default();
        ratios.record("grep IP", 1000, 1000, 1, 1);
        assert!(ratios.is_empty(), "a run reading 1000 bytes tells nothing");
        ratios.record("grep IP", (10 << 20) + STARTUP_READ, 1 << 20, 1, 2);
        assert_eq!(ratios.get("grep IP").map(|m| (m.ratio, m.runs, m.last_run, m.bytes)), Some((0.1, 1, 2, 10 << 20)));
        for now in 3..40 {
            ratios.record("grep IP", (10 << 20) + STARTUP_READ, 3 << 20, 1, now);
        }
        let measured = ratios.get("grep IP").unwrap();
        assert!((measured.ratio - 0.3).abs() < 0.001, "{measured:?}");
        assert_eq!(measured.runs, 38);
        let text = ratios.to_json();
        assert_eq!(Ratios::parse(&text).unwrap(), ratios);
    }

    /// The case that taught `cat` 0.0024: a split over a thousand one-line files, each copy
    /// reading its libraries and locale files (about 10 KB) and one line. Nothing is learned
    /// from it; and a large run weighs more than small ones.
    #[test]
    fn start_up_reads_are_no_input_and_runs_weigh_by_their_bytes() {
        let mut ratios = Ratios::default();
        ratios.record("cat", 1000 * 10_050, 1000 * 50, 1000, 1);
        assert!(ratios.is_empty(), "{ratios:?}");
        // One small run that kept 1%, then one 400 times its size that kept everything.
        ratios.record("cat", (1 << 20) + STARTUP_READ, 10_486, 1, 2);
        ratios.record("cat", (400 << 20) + STARTUP_READ, 400 << 20, 1, 3);
        let measured = ratios.get("cat").unwrap();
        assert!(measured.ratio > 0.99, "{measured:?}");
        // The same two runs equally weighed would say about a half.
        assert_eq!(measured.runs, 2);
        // A file written before `bytes` was kept still reads, its figure standing for little.
        let mut old =
            Ratios::parse("{\"shapes\": {\"sort\": {\"ratio\": 0.01, \"runs\": 3, \"last_run\": 1}}}").unwrap();
        old.record("sort", (100 << 20) + STARTUP_READ, 100 << 20, 1, 2);
        assert!(old.get("sort").unwrap().ratio > 0.95, "{old:?}");
    }

    #[test]
    fn a_broken_file_is_an_error_that_names_its_place() {
        let error = Ratios::parse("{\"shapes\": {\"grep\": {\"ratio\": \"x\"}}}").unwrap_err();
        assert_eq!((error.line, error.column > 0), (1, true));
        assert!(error.to_string().starts_with("1:") && !error.to_string().contains(" at line "), "{error}");
    }

    #[test]
    fn shapes_leave_out_the_files() {
        let argv: Vec<String> = ["/usr/bin/grep", "-c", "an IP", "a.log", "b.log"].map(String::from).to_vec();
        assert_eq!(shape(&argv, &["a.log", "b.log"]), "grep -c 'an IP'");
    }

    #[test]
    fn the_least_recently_run_shapes_go_first() {
        let mut ratios = Ratios::default();
        for i in 0..=MAX_SHAPES as u64 {
            ratios.record(&format!("grep {i}"), (1 << 20) + STARTUP_READ, 0, 1, i);
        }
        assert_eq!(ratios.shapes.len(), MAX_SHAPES);
        assert!(ratios.get("grep 0").is_none());
        assert!(ratios.get(&format!("grep {MAX_SHAPES}")).is_some());
    }
}
