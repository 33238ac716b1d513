//! Quick measurements at the client, each bounded in time. A networked mount that went dead
//! can hold a `stat` or a `read` in the kernel for good: once its daemon has taken a FUSE
//! request, no signal ends the wait, and a process whose thread waits so cannot finish exiting.
//! So what touches a mount runs, with [`Isolation::Process`], in a child process (this program
//! again, as `PROGRAM __probe ...`, answered by [`serve`]) that is killed and left behind when it
//! does not answer in time; the network probes run on threads ([`within`]).

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs as _};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Why a measurement gave nothing; `what` names the address, path or file measured.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{what}: no answer within {}", posh_core::config::format_rtt(*limit))]
    TimedOut { what: String, limit: Duration },
    #[error("{what}: {}", crate::remote::protocol::os_message(source))]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}: {problem}")]
    Unusable { what: String, problem: String },
}

impl ProbeError {
    fn io(what: impl std::fmt::Display, source: std::io::Error) -> ProbeError {
        ProbeError::Io { what: what.to_string(), source }
    }
}

/// Runs `work` on a thread of its own and waits for it at most `limit`: `None` when it did not
/// return in time (it is then left to finish, or to end with the process).
pub fn within<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new().name("posh-probe".into()).spawn(move || {
        let _ = tx.send(work());
    });
    if spawned.is_err() {
        return None;
    }
    rx.recv_timeout(limit).ok()
}

/// The first address `host` resolves to, with `port`.
pub fn resolve(host: &str, port: u16, limit: Duration) -> Result<SocketAddr, ProbeError> {
    let what = format!("{host} (port {port})");
    let owned = host.to_string();
    let resolved = within(limit, move || (owned.as_str(), port).to_socket_addrs().map(|mut a| a.next()))
        .ok_or_else(|| ProbeError::TimedOut { what: format!("resolving {host}"), limit })?;
    match resolved {
        Ok(Some(addr)) => Ok(addr),
        Ok(None) => Err(ProbeError::Unusable { what, problem: "resolves to no address".into() }),
        Err(e) => Err(ProbeError::io(format!("resolving {host}"), e)),
    }
}

/// The round-trip time to `addr`: the shortest of `tries` TCP handshakes (a refused connection
/// is a round trip too: the host answered). A handshake that takes longer than `each` ends the
/// measurement.
pub fn tcp_connect_rtt(addr: SocketAddr, tries: u32, each: Duration) -> Result<Duration, ProbeError> {
    let mut shortest: Option<Duration> = None;
    for _ in 0..tries {
        let started = Instant::now();
        match TcpStream::connect_timeout(&addr, each) {
            Ok(stream) => drop(stream),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut || e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(ProbeError::TimedOut { what: format!("TCP connect to {addr}"), limit: each });
            }
            Err(e) => return Err(ProbeError::io(format!("TCP connect to {addr}"), e)),
        }
        let took = started.elapsed();
        shortest = Some(shortest.map_or(took, |s| s.min(took)));
    }
    shortest.ok_or_else(|| ProbeError::Unusable { what: format!("TCP connect to {addr}"), problem: "no tries".into() })
}

/// Where a measurement that touches a mount runs.
#[derive(Clone, Debug)]
pub enum Isolation {
    /// On a thread of this process, given up on after its time: enough where the mount is known
    /// to answer (tests), but a thread a dead mount holds keeps the process from ending.
    Thread,
    /// In a child process running this program (`PROGRAM __probe ...`), killed and not waited
    /// for when it does not answer in time.
    Process(PathBuf),
}

/// A measurement asked of a child process (see [`serve`]).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Probe {
    Lookups { dir: PathBuf, tries: u32 },
    Find { root: PathBuf, max_entries: usize, sample_at_most: u64, within: Duration },
    Read { path: PathBuf, max_bytes: u64, within: Duration },
    Hash { path: PathBuf },
}

/// What a probe found; `Failed` carries the system's message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Lookups(Vec<Duration>),
    Found(Found),
    Read(ReadRate),
    Hashed { size: u64, sha256: String },
    Failed(String),
}

impl Probe {
    /// The words after `__probe`.
    fn to_args(&self) -> Vec<OsString> {
        let text = |n: &dyn std::fmt::Display| OsString::from(n.to_string());
        match self {
            Probe::Lookups { dir, tries } => vec!["lookups".into(), dir.into(), text(tries)],
            Probe::Find { root, max_entries, sample_at_most, within } => {
                vec!["find".into(), root.into(), text(max_entries), text(sample_at_most), text(&within.as_millis())]
            }
            Probe::Read { path, max_bytes, within } => {
                vec!["read".into(), path.into(), text(max_bytes), text(&within.as_millis())]
            }
            Probe::Hash { path } => vec!["hash".into(), path.into()],
        }
    }

    fn from_args(args: &[OsString]) -> Option<Probe> {
        let number = |i: usize| -> Option<u64> { args.get(i)?.to_str()?.parse().ok() };
        let path = |i: usize| args.get(i).map(PathBuf::from);
        Some(match args.first()?.to_str()? {
            "lookups" => Probe::Lookups { dir: path(1)?, tries: u32::try_from(number(2)?).ok()? },
            "find" => Probe::Find {
                root: path(1)?,
                max_entries: usize::try_from(number(2)?).ok()?,
                sample_at_most: number(3)?,
                within: Duration::from_millis(number(4)?),
            },
            "read" => Probe::Read { path: path(1)?, max_bytes: number(2)?, within: Duration::from_millis(number(3)?) },
            "hash" => Probe::Hash { path: path(1)? },
            _ => return None,
        })
    }

    /// Does it, blocking: in the child process, or on a thread of its own.
    fn run(&self) -> Answer {
        let answer = match self {
            Probe::Lookups { dir, tries } => lookups(dir, *tries).map(Answer::Lookups),
            Probe::Find { root, max_entries, sample_at_most, within } => {
                walk(root, *max_entries, *sample_at_most, Instant::now() + *within).map(Answer::Found)
            }
            Probe::Read { path, max_bytes, within } => read_rate(path, *max_bytes, *within).map(Answer::Read),
            Probe::Hash { path } => hash(path).map(|(size, sha256)| Answer::Hashed { size, sha256 }),
        };
        answer.unwrap_or_else(|e| Answer::Failed(crate::remote::protocol::os_message(&e)))
    }

    /// Runs it as `isolation` says, waiting at most `limit`.
    fn ask(self, isolation: &Isolation, limit: Duration, what: &str) -> Result<Answer, ProbeError> {
        let timed_out = || ProbeError::TimedOut { what: what.to_string(), limit };
        let answer = match isolation {
            Isolation::Thread => within(limit, move || self.run()).ok_or_else(timed_out)?,
            Isolation::Process(program) => {
                let mut child = Command::new(program)
                    .arg("__probe")
                    .args(self.to_args())
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| ProbeError::io(format!("{what}: cannot start {}", program.display()), e))?;
                let deadline = Instant::now() + limit;
                loop {
                    match child.try_wait() {
                        Ok(Some(_)) => break,
                        Ok(None) if Instant::now() >= deadline => {
                            // Not waited for: a child a dead mount holds ends when the mount
                            // answers, and this process need not be there then.
                            let _ = child.kill();
                            return Err(timed_out());
                        }
                        Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                        Err(e) => return Err(ProbeError::io(what, e)),
                    }
                }
                let mut text = String::new();
                if let Some(mut stdout) = child.stdout.take() {
                    stdout.read_to_string(&mut text).map_err(|e| ProbeError::io(what, e))?;
                }
                serde_json::from_str(&text).map_err(|e| ProbeError::Unusable {
                    what: what.to_string(),
                    problem: format!("the probe process answered {text:?}: {e}"),
                })?
            }
        };
        match answer {
            Answer::Failed(problem) => Err(ProbeError::Unusable { what: what.to_string(), problem }),
            answer => Ok(answer),
        }
    }
}

/// The child's side of [`Isolation::Process`]: `args` are the words after `__probe`; the answer
/// goes to standard output as one JSON line. Returns the exit status: 2 for words that are no
/// probe.
pub fn serve(args: &[OsString]) -> u8 {
    let Some(probe) = Probe::from_args(args) else {
        eprintln!("__probe: not a probe: {args:?}");
        return 2;
    };
    let answer = probe.run();
    let mut stdout = std::io::stdout().lock();
    match serde_json::to_writer(&mut stdout, &answer).map(|()| stdout.write_all(b"\n")) {
        Ok(Ok(())) => 0,
        _ => 1,
    }
}

/// The answer was not of the probe's kind (a child of another version of this program).
fn unexpected(what: &str, answer: &Answer) -> ProbeError {
    ProbeError::Unusable { what: what.to_string(), problem: format!("unexpected answer {answer:?}") }
}

/// The round-trip time through the mount at `dir`: the shortest of `tries` lookups of names that
/// do not exist (a fresh name each time, so neither the kernel's nor a FUSE daemon's cache can
/// answer: the server must).
pub fn lookup_rtt(isolation: &Isolation, dir: &Path, tries: u32, limit: Duration) -> Result<Duration, ProbeError> {
    let what = format!("lookups in {}", dir.display());
    match (Probe::Lookups { dir: dir.to_path_buf(), tries }).ask(isolation, limit, &what)? {
        Answer::Lookups(times) => {
            times.into_iter().min().ok_or_else(|| ProbeError::Unusable { what, problem: "no tries".into() })
        }
        other => Err(unexpected(&what, &other)),
    }
}

fn lookups(dir: &Path, tries: u32) -> std::io::Result<Vec<Duration>> {
    // A missing directory would answer every lookup at once.
    std::fs::metadata(dir)?;
    let mut times = Vec::new();
    for n in 0..tries {
        let name = dir.join(format!(".posh-rtt-{}-{n}-{}", std::process::id(), nanos()));
        let started = Instant::now();
        match std::fs::symlink_metadata(&name) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        times.push(started.elapsed());
    }
    Ok(times)
}

fn nanos() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
}

/// A regular file under a mount.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSample {
    /// Relative to the directory searched.
    #[serde(with = "path_bytes")]
    pub path: PathBuf,
    pub size: u64,
}

/// Paths as their bytes, which need not be UTF-8.
mod path_bytes {
    use super::*;

    pub fn serialize<S: serde::Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(path.as_os_str().as_bytes())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<PathBuf, D::Error> {
        let bytes: Vec<u8> = Vec::deserialize(deserializer)?;
        Ok(PathBuf::from(OsString::from_vec(bytes)))
    }
}

/// What a bounded search of a directory tree found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// The first non-empty regular file of at most the size asked, whose name is plain UTF-8
    /// (no newline or backslash, not starting with `-`), in a directory of fewer than
    /// [`SAMPLE_DIR_ENTRIES`] entries: a file both ends can name and list.
    pub sample: Option<FileSample>,
    /// The largest regular file seen.
    pub largest: Option<FileSample>,
    /// Entries looked at.
    pub visited: usize,
    /// The walk stopped at its deadline, not at its end or its number of entries.
    pub out_of_time: bool,
}

/// A sample lies in a directory with fewer entries than this, so that a proxy's listing of it
/// (bounded at 20,000 entries) is whole.
pub const SAMPLE_DIR_ENTRIES: usize = 1000;

/// Searches the tree at `root` breadth first, looking at most at `max_entries` entries and
/// for about `limit`, without following symbolic links; `.posh-` names (posh's own temporaries)
/// are passed over.
pub fn find_files(
    isolation: &Isolation,
    root: &Path,
    max_entries: usize,
    sample_at_most: u64,
    limit: Duration,
) -> Result<Found, ProbeError> {
    let what = format!("listing {}", root.display());
    // The walk stops itself a little before the caller stops waiting.
    let within = limit.mul_f64(0.7);
    match (Probe::Find { root: root.to_path_buf(), max_entries, sample_at_most, within })
        .ask(isolation, limit, &what)?
    {
        Answer::Found(found) => Ok(found),
        other => Err(unexpected(&what, &other)),
    }
}

fn walk(root: &Path, max_entries: usize, sample_at_most: u64, deadline: Instant) -> std::io::Result<Found> {
    let mut found = Found::default();
    let mut pending = std::collections::VecDeque::from([PathBuf::new()]);
    let mut first = true;
    while let Some(relative) = pending.pop_front() {
        let entries = match std::fs::read_dir(root.join(&relative)) {
            Ok(entries) => entries,
            // The root must be readable; a subdirectory that is not is passed over.
            Err(e) if first => return Err(e),
            Err(_) => continue,
        };
        first = false;
        let mut files = Vec::new();
        let mut count = 0;
        for entry in entries {
            found.out_of_time = Instant::now() >= deadline;
            if found.visited >= max_entries || found.out_of_time {
                break;
            }
            found.visited += 1;
            count += 1;
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            if name.as_bytes().starts_with(b".posh-") {
                continue;
            }
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                pending.push_back(relative.join(&name));
            } else if kind.is_file()
                && let Ok(metadata) = entry.metadata()
            {
                files.push(FileSample { path: relative.join(&name), size: metadata.len() });
            }
        }
        for file in &files {
            if found.largest.as_ref().is_none_or(|l| file.size > l.size) {
                found.largest = Some(file.clone());
            }
        }
        if found.sample.is_none() && count < SAMPLE_DIR_ENTRIES {
            found.sample =
                files.iter().find(|f| f.size > 0 && f.size <= sample_at_most && plain_name(&f.path)).cloned();
        }
        found.out_of_time = Instant::now() >= deadline;
        if found.visited >= max_entries || found.out_of_time {
            break;
        }
    }
    Ok(found)
}

/// A name both ends spell alike in a command's words and its output: UTF-8, without newlines
/// or backslashes (which `sha256sum` escapes), no component starting with `-` (an option).
fn plain_name(path: &Path) -> bool {
    path.components()
        .all(|c| c.as_os_str().to_str().is_some_and(|s| !s.starts_with('-') && !s.contains(['\n', '\\', '\r'])))
}

/// A timed read of a file.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadRate {
    pub bytes: u64,
    pub elapsed: Duration,
    /// What the first read returned, and when: the first answer's latency is a round trip, not
    /// a rate.
    pub first_bytes: u64,
    pub first_elapsed: Duration,
}

impl ReadRate {
    /// Bytes per second after the first read, once at least `min_bytes` came after it.
    pub fn bytes_per_sec(&self, min_bytes: u64) -> Option<f64> {
        let bytes = self.bytes.checked_sub(self.first_bytes)?;
        let seconds = self.elapsed.checked_sub(self.first_elapsed)?.as_secs_f64();
        (bytes >= min_bytes && seconds > 0.0).then(|| bytes as f64 / seconds)
    }
}

/// The size of one read: small enough that the first answer is one round trip and a little,
/// not the whole file.
const READ_CHUNK: usize = 64 * 1024;

/// Reads up to `max_bytes` of `path` for about `limit` at most, its pages in the client's cache
/// dropped first (`posix_fadvise(DONTNEED)`), so that the bytes come through the mount.
pub fn timed_read(isolation: &Isolation, path: &Path, max_bytes: u64, limit: Duration) -> Result<ReadRate, ProbeError> {
    let what = format!("reading {}", path.display());
    let within = limit.mul_f64(0.7);
    match (Probe::Read { path: path.to_path_buf(), max_bytes, within }).ask(isolation, limit, &what)? {
        Answer::Read(rate) => Ok(rate),
        other => Err(unexpected(&what, &other)),
    }
}

fn read_rate(path: &Path, max_bytes: u64, within: Duration) -> std::io::Result<ReadRate> {
    let mut file = std::fs::File::open(path)?;
    let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed);
    let mut buffer = vec![0u8; READ_CHUNK];
    let started = Instant::now();
    let mut rate = ReadRate { bytes: 0, elapsed: Duration::ZERO, first_bytes: 0, first_elapsed: Duration::ZERO };
    while rate.bytes < max_bytes && started.elapsed() < within {
        let want = usize::try_from(max_bytes - rate.bytes).unwrap_or(READ_CHUNK).min(READ_CHUNK);
        let n = file.read(&mut buffer[..want])?;
        if n == 0 {
            break;
        }
        rate.bytes += n as u64;
        rate.elapsed = started.elapsed();
        if rate.first_bytes == 0 {
            rate.first_bytes = rate.bytes;
            rate.first_elapsed = rate.elapsed;
        }
    }
    Ok(rate)
}

/// The size and SHA-256 (lowercase hex) of the file at `path`, read whole within `limit`.
pub fn sha256_file(isolation: &Isolation, path: &Path, limit: Duration) -> Result<(u64, String), ProbeError> {
    let what = format!("reading {}", path.display());
    match (Probe::Hash { path: path.to_path_buf() }).ask(isolation, limit, &what)? {
        Answer::Hashed { size, sha256 } => Ok((size, sha256)),
        other => Err(unexpected(&what, &other)),
    }
}

fn hash(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buffer = vec![0u8; READ_CHUNK];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        context.update(&buffer[..n]);
    }
    Ok((size, hex(context.finish().as_ref())))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn a_call_that_does_not_return_is_given_up_on() {
        let started = Instant::now();
        assert_eq!(within(Duration::from_millis(50), || std::thread::sleep(Duration::from_secs(5))), None);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(within(Duration::from_secs(5), || 7), Some(7));
    }

    #[test]
    fn the_search_finds_a_plain_small_file_and_the_largest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("-option"), "x").unwrap();
        std::fs::write(root.join("empty"), "").unwrap();
        std::fs::write(root.join("big.bin"), vec![7u8; 300_000]).unwrap();
        std::fs::write(root.join(".posh-tmp"), vec![7u8; 900_000]).unwrap();
        std::fs::write(root.join("a/b/small.txt"), "hello\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
        let found = find_files(&Isolation::Thread, root, 100, 1000, Duration::from_secs(5)).unwrap();
        assert_eq!(found.sample, Some(FileSample { path: "a/b/small.txt".into(), size: 6 }));
        assert_eq!(found.largest, Some(FileSample { path: "big.bin".into(), size: 300_000 }));
        // Bounded by entries.
        let found = find_files(&Isolation::Thread, root, 3, 1000, Duration::from_secs(5)).unwrap();
        assert_eq!((found.visited, found.out_of_time), (3, false));
        assert_eq!(found.sample, None);
        // Bounded by time: a deadline already past stops the walk before its first entry.
        let found = walk(root, 100, 1000, Instant::now()).unwrap();
        assert_eq!((found.visited, found.out_of_time), (0, true));
        let error = find_files(&Isolation::Thread, &root.join("nothing"), 3, 1000, Duration::from_secs(5)).unwrap_err();
        assert!(error.to_string().ends_with("/nothing: No such file or directory"), "{error}");
    }

    #[test]
    fn a_read_is_timed_and_a_file_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, vec![1u8; 1_000_000]).unwrap();
        let rate = timed_read(&Isolation::Thread, &file, 500_000, Duration::from_secs(5)).unwrap();
        assert_eq!(rate.bytes, 500_000);
        assert_eq!(rate.first_bytes, READ_CHUNK as u64);
        assert!(rate.bytes_per_sec(1).is_some());
        assert_eq!(rate.bytes_per_sec(1_000_000), None);
        std::fs::write(&file, "abc").unwrap();
        let (size, hash) = sha256_file(&Isolation::Thread, &file, Duration::from_secs(5)).unwrap();
        assert_eq!((size, hash.as_str()), (3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    }

    #[test]
    fn round_trips_are_measured_by_handshakes_and_lookups() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let rtt = tcp_connect_rtt(addr, 3, Duration::from_secs(1)).unwrap();
        assert!(rtt < Duration::from_secs(1));
        drop(listener);
        // A closed port answers too.
        assert!(tcp_connect_rtt(addr, 2, Duration::from_secs(1)).is_ok());
        let dir = tempfile::tempdir().unwrap();
        assert!(
            lookup_rtt(&Isolation::Thread, dir.path(), 3, Duration::from_secs(2)).unwrap() < Duration::from_secs(1)
        );
        assert!(lookup_rtt(&Isolation::Thread, &dir.path().join("gone"), 3, Duration::from_secs(2)).is_err());
        assert_eq!(resolve("127.0.0.1", 22, Duration::from_secs(2)).unwrap(), "127.0.0.1:22".parse().unwrap());
    }

    /// What a child process is asked and answers survives the trip, paths that are not UTF-8
    /// included.
    #[test]
    fn probes_and_answers_cross_to_a_child_and_back() {
        let odd = PathBuf::from(OsStr::from_bytes(b"/mnt/\xff dir"));
        let probes = [
            Probe::Lookups { dir: odd.clone(), tries: 3 },
            Probe::Find {
                root: odd.clone(),
                max_entries: 2000,
                sample_at_most: 1 << 20,
                within: Duration::from_millis(700),
            },
            Probe::Read { path: odd.clone(), max_bytes: 4 << 20, within: Duration::from_millis(1400) },
            Probe::Hash { path: odd.clone() },
        ];
        for probe in probes {
            assert_eq!(Probe::from_args(&probe.to_args()), Some(probe));
        }
        assert_eq!(Probe::from_args(&["find".into(), "/x".into()]), None);
        assert_eq!(serve(&["nothing".into()]), 2);
        let found = Answer::Found(Found {
            sample: Some(FileSample { path: odd.clone(), size: 3 }),
            largest: None,
            visited: 7,
            out_of_time: false,
        });
        let text = serde_json::to_string(&found).unwrap();
        assert_eq!(serde_json::from_str::<Answer>(&text).unwrap(), found);
    }

    /// A child that does not answer in time is killed and left: the caller goes on at once.
    #[test]
    fn a_probe_process_that_does_not_answer_is_given_up_on() {
        let dir = tempfile::tempdir().unwrap();
        // `yes` writes its words until its output pipe is full, and then waits for good.
        let started = Instant::now();
        let error = sha256_file(&Isolation::Process("yes".into()), dir.path(), Duration::from_millis(200)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(error.to_string(), format!("reading {}: no answer within 200 ms", dir.path().display()));
        // A program that is not there.
        let error = sha256_file(&Isolation::Process(dir.path().join("gone")), dir.path(), Duration::from_secs(1));
        assert!(error.unwrap_err().to_string().contains("cannot start"));
    }
}
