//! The progress line: while remote work of the run has gone on for a moment, one line on the
//! terminal posh-exec's stderr is, saying per mount what its proxy's jobs have read there, what
//! crossed the network each way, and how fast. It is drawn on the line below the cursor (saved
//! and restored around each draw), so a line the script left unfinished stays as it was; it is
//! erased before the runtime writes anything to that terminal (remote output, bash's messages,
//! `--stats /dev/stderr`) and drawn again after, hidden while a command at the client writes to
//! that terminal itself, and erased when the remote work ends, before bash hears of it.
//! Nothing of it goes anywhere but that terminal: not on another descriptor, not into a file.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use posh_core::config::Mount;
use posh_exec::remote::Traffic;

/// `--progress`: when to draw the line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    /// When stderr is a terminal that can move its cursor (`TERM` set, and not `dumb`).
    #[default]
    Auto,
    /// Whatever stderr is.
    Always,
    Never,
}

impl When {
    /// Whether the line is drawn on a stderr that is or is not a terminal, under `TERM`.
    /// `NO_COLOR` is not asked: the line has no colour.
    pub fn draws(self, stderr_is_terminal: bool, term: Option<&OsStr>) -> bool {
        match self {
            When::Never => false,
            When::Always => true,
            When::Auto => stderr_is_terminal && term.is_some_and(|t| !t.is_empty() && t != "dumb"),
        }
    }
}

/// How long remote work goes on before the line shows: quick runs never see it.
const DELAY: Duration = Duration::from_secs(1);
/// The pause between two draws.
const EVERY: Duration = Duration::from_millis(100);
/// How far back the rate looks.
const RATE_SPAN: Duration = Duration::from_secs(3);

/// Before the line: make room below the cursor (down and up again, scrolling if it is on the
/// last row; the column stays), save the cursor, go down a line and empty it.
const DRAW: &[u8] = b"\x1bD\x1bM\x1b7\x1b[B\r\x1b[2K";
/// After the line: the cursor back where it was.
const RESTORE: &[u8] = b"\x1b8";
/// Empties the line below the cursor, the cursor staying where it is.
const ERASE: &[u8] = b"\x1b7\x1b[B\r\x1b[2K\x1b8";

/// The run's line, once it is started.
static LINE: OnceLock<Line> = OnceLock::new();

#[derive(Debug)]
struct Line {
    /// posh-exec's stderr.
    out: File,
    /// (device, inode) of `out`: a descriptor of the same file writes where the line is drawn.
    file: (u64, u64),
    /// Each mount's name and the run's counters of its jobs, which every pipeline's add to.
    mounts: Vec<(String, Arc<Traffic>)>,
    /// Held while anything is written where the line is drawn.
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    shown: bool,
    /// Remote jobs being waited for.
    remote: usize,
    /// Commands at the client writing to the line's terminal themselves.
    direct: usize,
    /// When the remote work under way began, and each mount's counts then.
    since: Option<(Instant, Vec<Counts>)>,
    /// Recent counts, for the rate.
    samples: VecDeque<(Instant, Vec<Counts>)>,
    /// Not drawn before then (after Ctrl-C).
    quiet_until: Option<Instant>,
    ended: bool,
}

/// One mount's figures at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    read: Option<u64>,
    sent: u64,
    received: u64,
}

impl Line {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn counts(&self) -> Vec<Counts> {
        self.mounts
            .iter()
            .map(|(_, traffic)| {
                let (sent, received) = traffic.totals();
                Counts { read: traffic.read(), sent, received }
            })
            .collect()
    }

    /// Whether `fd` writes where the line is drawn.
    fn is_under(&self, fd: BorrowedFd<'_>) -> bool {
        rustix::fs::fstat(fd).is_ok_and(|stat| (stat.st_dev, stat.st_ino) == self.file)
    }

    fn erase(&self, state: &mut State) {
        if state.shown {
            state.shown = false;
            let _ = (&self.out).write_all(ERASE);
        }
    }

    fn draw(&self, state: &mut State, text: &str) {
        let mut bytes = Vec::with_capacity(DRAW.len() + text.len() + RESTORE.len());
        bytes.extend_from_slice(DRAW);
        bytes.extend_from_slice(text.as_bytes());
        bytes.extend_from_slice(RESTORE);
        state.shown = (&self.out).write_all(&bytes).is_ok();
    }

    fn width(&self) -> usize {
        match rustix::termios::tcgetwinsize(&self.out) {
            Ok(size) if size.ws_col > 0 => usize::from(size.ws_col),
            _ => 80,
        }
    }

    /// Draws the line every [`EVERY`] while remote work goes on, until the run ends.
    fn keep_drawn(&self) {
        let mut spin = 0;
        let mut state = self.lock();
        loop {
            while !state.ended && state.remote == 0 {
                state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if state.ended {
                return;
            }
            state = self.wake.wait_timeout(state, EVERY).unwrap_or_else(|e| e.into_inner()).0;
            let now = Instant::now();
            let quiet = state.quiet_until.is_some_and(|until| now < until);
            let Some((since, base)) = state.since.clone().filter(|(since, _)| now >= *since + DELAY) else { continue };
            if state.ended || state.remote == 0 || state.direct > 0 || quiet {
                self.erase(&mut state);
                continue;
            }
            let counts = self.counts();
            state.samples.push_back((now, counts.clone()));
            while state.samples.len() > 2 && state.samples.front().is_some_and(|(at, _)| now - *at > RATE_SPAN) {
                state.samples.pop_front();
            }
            let (first_at, first) = state.samples.front().cloned().unwrap_or((now, counts.clone()));
            let span = now - first_at;
            let mounts = self
                .mounts
                .iter()
                .zip(counts.iter().zip(&base).zip(&first))
                .filter(|(_, ((now, base), _))| now != base)
                .map(|((name, _), ((now, base), first))| MountStatus {
                    name,
                    read: now.read.map(|read| read.saturating_sub(base.read.unwrap_or(0))),
                    sent: now.sent.saturating_sub(base.sent),
                    received: now.received.saturating_sub(base.received),
                    rate: rate(first, now, span),
                })
                .collect();
            let text = render(&Status { elapsed: now - since, spin, mounts }, self.width());
            self.draw(&mut state, &text);
            spin += 1;
        }
    }
}

/// Bytes per second between two counts `span` apart: of what the proxy read when it says, else
/// of what crossed the network; `None` over too short a span to tell.
fn rate(first: &Counts, now: &Counts, span: Duration) -> Option<u64> {
    if span < Duration::from_millis(200) {
        return None;
    }
    let moved = match (first.read, now.read) {
        (first_read, Some(read)) => read.saturating_sub(first_read.unwrap_or(0)),
        (_, None) => (now.sent + now.received).saturating_sub(first.sent + first.received),
    };
    Some((moved as f64 / span.as_secs_f64()) as u64)
}

/// Starts the line for the run if `when` says so for posh-exec's stderr; it is erased and ends
/// when the returned value is dropped.
pub fn start(when: When, mounts: &[Mount]) -> Option<Started> {
    let stderr = std::io::stderr();
    let term = std::env::var_os("TERM");
    if !when.draws(rustix::termios::isatty(&stderr), term.as_deref()) {
        return None;
    }
    let out = File::from(stderr.as_fd().try_clone_to_owned().ok()?);
    let stat = rustix::fs::fstat(&out).ok()?;
    let line = Line {
        out,
        file: (stat.st_dev, stat.st_ino),
        mounts: mounts.iter().map(|m| (m.name.clone(), Arc::default())).collect(),
        state: Mutex::default(),
        wake: Condvar::new(),
    };
    LINE.set(line).ok()?;
    let line = LINE.get()?;
    std::thread::Builder::new().name("posh-progress".into()).spawn(|| line.keep_drawn()).ok()?;
    Some(Started(()))
}

/// The line of a run; ended and erased when dropped.
#[derive(Debug)]
pub struct Started(());

impl Drop for Started {
    fn drop(&mut self) {
        end();
    }
}

/// Erases the line for good: the run ends.
pub fn end() {
    if let Some(line) = LINE.get() {
        let mut state = line.lock();
        state.ended = true;
        line.erase(&mut state);
        line.wake.notify_all();
    }
}

/// Whether jobs ask their proxies for progress reports: only for a line that shows them.
pub fn reporting() -> bool {
    LINE.get().is_some()
}

/// A counter for the traffic of mount `index`'s jobs in one pipeline, which also adds to the
/// run's (what the line shows).
pub fn traffic(index: usize) -> Arc<Traffic> {
    match LINE.get().and_then(|line| line.mounts.get(index)) {
        Some((_, run)) => Arc::new(Traffic::within(run.clone())),
        None => Arc::default(),
    }
}

/// Says that the run waits for a remote job while this lives (the line may show).
pub fn remote_work() -> Option<Working> {
    let line = LINE.get()?;
    let mut state = line.lock();
    if state.remote == 0 {
        state.since = Some((Instant::now(), line.counts()));
        state.samples.clear();
    }
    state.remote += 1;
    line.wake.notify_all();
    Some(Working { direct: false })
}

/// Says that a command at the client writes to the line's terminal itself while this lives,
/// when `stdout` (its standard output) is that terminal: the line then hides, since no one
/// would erase it before that command writes.
pub fn writes_directly(stdout: Option<&OwnedFd>) -> Option<Working> {
    if !LINE.get()?.is_under(stdout?.as_fd()) {
        return None;
    }
    hidden()
}

/// Hides the line while the returned guard lives: a pipeline that its caller suspended (Ctrl-Z
/// at posh's prompt) is no longer in the terminal's foreground, where bash's prompt is.
pub fn hidden() -> Option<Working> {
    let line = LINE.get()?;
    let mut state = line.lock();
    state.direct += 1;
    line.erase(&mut state);
    Some(Working { direct: true })
}

/// Remote work, or a command writing to the terminal, under way (see [`remote_work`] and
/// [`writes_directly`]).
#[derive(Debug)]
pub struct Working {
    direct: bool,
}

impl Drop for Working {
    fn drop(&mut self) {
        let Some(line) = LINE.get() else { return };
        let mut state = line.lock();
        if self.direct {
            state.direct -= 1;
            return;
        }
        state.remote -= 1;
        if state.remote == 0 {
            // Before the status goes back to bash, which may write next.
            state.since = None;
            line.erase(&mut state);
        }
    }
}

/// When `fd` writes where the line is drawn: the line, erased, held off while the returned
/// guard lives (the caller writes meanwhile). Dropped, it is drawn again at the next turn.
pub fn pause(fd: BorrowedFd<'_>) -> Option<Paused> {
    let line = LINE.get().filter(|line| line.is_under(fd))?;
    Some(line_paused(line))
}

/// [`pause`] for a descriptor already known to be under the line (see [`is_under`]).
pub fn pause_line() -> Option<Paused> {
    LINE.get().map(line_paused)
}

fn line_paused(line: &'static Line) -> Paused {
    let mut state = line.lock();
    line.erase(&mut state);
    Paused { _held: state }
}

/// Whether `fd` writes where the line is drawn (and there is a line).
pub fn is_under(fd: BorrowedFd<'_>) -> bool {
    LINE.get().is_some_and(|line| line.is_under(fd))
}

/// Writes a line of posh-exec's own to its stderr, the progress line erased first.
pub fn eprintln(line: std::fmt::Arguments<'_>) {
    let stderr = std::io::stderr();
    let _paused = pause(stderr.as_fd());
    let _ = writeln!(stderr.lock(), "{line}");
}

/// A notice of posh's own about where work went (a proxy busy, refusing or out of reach, a pipe
/// relayed): said only on the terminal the progress line is drawn on, where a person reads it.
/// The script's stderr stays what bash would write there (a log, a pipe, a test compare it);
/// `--stats` records every departure with its reason.
pub fn notice(line: std::fmt::Arguments<'_>) {
    if LINE.get().is_some() {
        eprintln(line);
    }
}

/// See [`pause`].
#[derive(Debug)]
pub struct Paused {
    _held: MutexGuard<'static, State>,
}

/// Ctrl-C: the line goes at once, and for a moment, while bash decides what happens next.
pub fn interrupted() {
    if let Some(line) = LINE.get() {
        let mut state = line.lock();
        state.quiet_until = Some(Instant::now() + DELAY);
        line.erase(&mut state);
    }
}

/// What the line says at one moment.
#[derive(Debug)]
pub struct Status<'a> {
    /// Since the remote work began.
    pub elapsed: Duration,
    /// How many times the line was drawn before (turns the spinner).
    pub spin: usize,
    /// The mounts whose proxies did something since.
    pub mounts: Vec<MountStatus<'a>>,
}

#[derive(Debug)]
pub struct MountStatus<'a> {
    pub name: &'a str,
    /// What its jobs' commands read at the proxy; `None` when its proxy does not report it.
    pub read: Option<u64>,
    /// Bytes sent to and received from its proxy.
    pub sent: u64,
    pub received: u64,
    /// Bytes per second: of `read` when known, else of the network's.
    pub rate: Option<u64>,
}

/// The line's text, at most `width - 1` characters (the last column would wrap on some
/// terminals), all ASCII: `- posh 0:07 data: read 1.21 GiB (172 MiB/s), moved 12.0 KiB up,
/// 3.40 MiB down`.
pub fn render(status: &Status<'_>, width: usize) -> String {
    let spinner = ['-', '\\', '|', '/'][status.spin % 4];
    let mut text = format!("{spinner} posh {}", clock(status.elapsed));
    if status.mounts.is_empty() {
        text.push_str(" waiting for the proxies");
    }
    for (k, mount) in status.mounts.iter().enumerate() {
        text.push_str(if k == 0 { " " } else { "; " });
        text.push_str(mount.name);
        text.push(':');
        let rate = mount.rate.map(|r| format!(" ({}/s)", size(r))).unwrap_or_default();
        let moved = format!("moved {} up, {} down", size(mount.sent), size(mount.received));
        match mount.read {
            Some(read) => text.push_str(&format!(" read {}{rate}, {moved}", size(read))),
            None => text.push_str(&format!(" {moved}{rate}")),
        }
    }
    // Counted in characters: a mount's name may be any text.
    let room = width.saturating_sub(1).max(4);
    if text.chars().count() > room {
        text = text.chars().take(room - 3).chain("...".chars()).collect();
    }
    text
}

/// `m:ss`, or `h:mm:ss` from an hour on.
fn clock(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 { format!("{h}:{m:02}:{s:02}") } else { format!("{m}:{s:02}") }
}

/// Bytes in binary units, three significant digits: `512 B`, `12.0 KiB`, `1.21 GiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let digits = if value < 10.0 {
        2
    } else if value < 100.0 {
        1
    } else {
        0
    };
    format!("{value:.digits$} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_draws_on_a_terminal_that_can_move_its_cursor() {
        let term = |t: &str| Some(OsStr::new(t).to_owned());
        for (when, terminal, t, draws) in [
            (When::Auto, true, term("xterm-256color"), true),
            (When::Auto, true, term("dumb"), false),
            (When::Auto, true, term(""), false),
            (When::Auto, true, None, false),
            (When::Auto, false, term("xterm"), false),
            (When::Always, false, term("dumb"), true),
            (When::Never, true, term("xterm"), false),
        ] {
            assert_eq!(when.draws(terminal, t.as_deref()), draws, "{when:?} {terminal} {t:?}");
        }
    }

    #[test]
    fn sizes_keep_three_digits() {
        let sizes: Vec<String> =
            [0, 1023, 1024, 12_288, 1_048_575, 180_355_072, 1_299_227_607, u64::MAX].map(size).to_vec();
        assert_eq!(sizes, ["0 B", "1023 B", "1.00 KiB", "12.0 KiB", "1024 KiB", "172 MiB", "1.21 GiB", "16.0 EiB"]);
    }

    fn status(mounts: Vec<MountStatus<'_>>) -> Status<'_> {
        Status { elapsed: Duration::from_secs(7), spin: 0, mounts }
    }

    fn data(read: Option<u64>, rate: Option<u64>) -> MountStatus<'static> {
        MountStatus { name: "data", read, sent: 12_288, received: 3_565_158, rate }
    }

    #[test]
    fn one_mount_whose_proxy_reports_what_it_read() {
        let line = render(&status(vec![data(Some(1_299_227_607), Some(180_355_072))]), 120);
        insta::assert_snapshot!(line, @"- posh 0:07 data: read 1.21 GiB (172 MiB/s), moved 12.0 KiB up, 3.40 MiB down");
    }

    #[test]
    fn a_proxy_that_does_not_report_reads_shows_the_network_only() {
        let line = render(&status(vec![data(None, Some(1_258_291))]), 120);
        insta::assert_snapshot!(line, @"- posh 0:07 data: moved 12.0 KiB up, 3.40 MiB down (1.20 MiB/s)");
    }

    #[test]
    fn several_mounts_share_the_line_and_a_narrow_terminal_cuts_it() {
        let logs = MountStatus { name: "logs", read: Some(52_428_800), sent: 300, received: 90_000, rate: None };
        let mut status = status(vec![data(Some(1_299_227_607), Some(180_355_072)), logs]);
        status.elapsed = Duration::from_secs(3 * 3600 + 62);
        status.spin = 5;
        insta::assert_snapshot!(render(&status, 200), @r"\ posh 3:01:02 data: read 1.21 GiB (172 MiB/s), moved 12.0 KiB up, 3.40 MiB down; logs: read 50.0 MiB, moved 300 B up, 87.9 KiB down");
        let narrow = render(&status, 40);
        insta::assert_snapshot!(narrow, @r"\ posh 3:01:02 data: read 1.21 GiB (...");
        assert_eq!(narrow.len(), 39, "the last column stays free");
        let accents = MountStatus { name: "été", read: None, sent: 0, received: 0, rate: None };
        assert_eq!(render(&Status { mounts: vec![accents], ..status }, 21), "\\ posh 3:01:02 ét...");
    }

    #[test]
    fn before_any_proxy_answers_the_line_says_so() {
        insta::assert_snapshot!(render(&status(Vec::new()), 80), @"- posh 0:07 waiting for the proxies");
    }

    #[test]
    fn the_rate_is_of_what_was_read_when_known() {
        let counts = |read, sent, received| Counts { read, sent, received };
        let second = Duration::from_secs(1);
        assert_eq!(rate(&counts(Some(100), 0, 0), &counts(Some(300), 10, 10), second * 2), Some(100));
        assert_eq!(rate(&counts(None, 0, 0), &counts(Some(300), 10, 10), second), Some(300));
        assert_eq!(rate(&counts(None, 100, 100), &counts(None, 300, 300), second * 4), Some(100));
        assert_eq!(rate(&counts(None, 0, 0), &counts(None, 300, 300), Duration::from_millis(100)), None);
    }
}
