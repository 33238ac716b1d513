//! The oracle: every case of `tests/oracle/*.sh` runs under `bash` and under `posh-exec`, and
//! the two runs must agree on stdout, stderr, exit status and the files left in the working
//! directory.
//!
//! Each run gets a fresh temporary root holding `work/` (the working directory and `$HOME`: a
//! copy of `tests/oracle/data/` as `work/data/` and the case as `work/case.sh`) and `xdg/` (an
//! empty `$XDG_CONFIG_HOME`). Both shells are started as `SHELL ./case.sh ARGS...`, so bash's
//! messages (`./case.sh: line 3: ...`) read the same, with the environment cleared to `PATH`,
//! `LC_ALL=C`, `HOME` and the XDG directories (`crate::isolation`: `XDG_STATE_HOME` is the
//! root's `state/`, cache and data under `work/`). The root's path differs between runs, so it is
//! replaced by `<ROOT>` in outputs and file contents before comparing.
//!
//! Every mode runs twice: with stdout and stderr captured as two pipes, and into one file opened
//! once (`> log 2>&1`), where a remote job's two streams must keep bash's bytes and order.
//!
//! Modes: `local` has no configuration at all; `mounted` puts a `posh.toml` in `work/` that makes
//! `data/` an embedded mount (an in-process proxy) and `data/sub/` another, so posh-exec treats
//! the data as remote storage on two servers; `proxied` starts one real `posh-proxy` process on loopback for the whole suite,
//! exporting the directory that holds every run's root, and the `posh.toml` makes that whole
//! directory its mount: the case's data, its working directory and the files it writes are all
//! on the proxy's side. The case format is described in `tests/oracle/README.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::agreement;

/// The `posh-exec` binary cargo built next to this test executable
/// (`target/<profile>/deps/integration-HASH` → `target/<profile>/posh-exec`).
pub(crate) fn posh_exec() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("the test executable lives in target/<profile>/deps/");
    let binary = profile_dir.join(format!("posh-exec{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.is_file(),
        "{} does not exist: run `cargo test --workspace` (or `cargo build -p posh-exec`) so \
         cargo builds posh-exec next to the tests",
        binary.display()
    );
    static FRESH: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    if let Err(stale) = FRESH.get_or_init(|| built_after_its_sources(&binary)) {
        panic!("{stale}");
    }
    binary
}

/// `cargo test --test integration` builds this test executable, not the other packages'
/// binaries: a posh-exec older than a source it is built from would test the code before the
/// change (a differential run of 1,200 scripts once did).
fn built_after_its_sources(binary: &Path) -> Result<(), String> {
    let built =
        std::fs::metadata(binary).and_then(|m| m.modified()).map_err(|e| format!("{}: {e}", binary.display()))?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crates = ["posh-exec", "posh-core", "posh-proxy", "posh-wire", "posh-handoff", "posh-cli", "annotations"];
    let mut dirs: Vec<PathBuf> = crates.iter().map(|c| root.join(c)).collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            // Not built from: tests (insta writes `.snap.new` files as they run), benchmarks.
            if ["target", "tests", "benches", "snapshots"].iter().any(|skipped| name == *skipped) {
                continue;
            }
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => dirs.push(path),
                Ok(meta) if meta.modified().is_ok_and(|changed| changed > built) => {
                    return Err(format!(
                        "{} is older than {}: run `cargo build --workspace --bins` first",
                        binary.display(),
                        path.display()
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// How long one run of one case may take before it is killed and reported.
const TIMEOUT: Duration = Duration::from_secs(60);

/// What a process did: its exit status (or the signal that ended it), stdout and stderr.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub status: String,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// How a run's stdout and stderr are captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Capture {
    /// Two pipes, read separately.
    Pipes,
    /// One regular file opened once and given as both, as `> log 2>&1` does: every byte lands
    /// in `Outcome::stdout`, interleaved as written, and `stderr` stays empty.
    OneFile,
}

/// Runs `command` in its own process group, with stdout and stderr captured, killing the whole
/// group after `timeout` (a hung `yes` must not hang the suite).
pub(crate) fn run_with_timeout(command: Command, timeout: Duration) -> Outcome {
    run_captured(command, timeout, Capture::Pipes)
}

/// [`run_with_timeout`], capturing as `capture` says.
pub(crate) fn run_captured(mut command: Command, timeout: Duration, capture: Capture) -> Outcome {
    let log = match capture {
        Capture::Pipes => {
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
            None
        }
        Capture::OneFile => {
            let log = tempfile::tempfile().expect("a temporary file");
            command.stdout(log.try_clone().expect("dup")).stderr(log.try_clone().expect("dup"));
            Some(log)
        }
    };
    command.process_group(0);
    let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let group_alive = |pgid: u32| {
        Command::new("kill")
            .args(["-0", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            // The whole group: the shell and whatever it started.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            break child.wait().expect("wait for the killed child");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    if !timed_out {
        // Background processes still holding the pipes (or, writing into one file, still alive)
        // get the rest of the time budget.
        let deadline = start + timeout;
        let done = || match capture {
            Capture::Pipes => stdout.is_finished() && stderr.is_finished(),
            Capture::OneFile => !group_alive(child.id()),
        };
        while !done() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if !done() {
            timed_out = true;
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
        }
    }
    let mut status = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => format!("{status:?}"),
    };
    if timed_out {
        status = format!("timed out after {timeout:?} ({status})");
    }
    let mut stdout = stdout.join().expect("stdout reader");
    if let Some(mut log) = log {
        use std::io::Seek as _;
        log.rewind().expect("rewind the log");
        log.read_to_end(&mut stdout).expect("read the log");
    }
    Outcome { status, stdout, stderr: stderr.join().expect("stderr reader") }
}

/// One case of the corpus: the script and its header lines.
#[derive(Debug)]
pub(crate) struct Case {
    pub name: String,
    pub source: String,
    pub args: Vec<String>,
    pub stdin: Option<String>,
    pub status: i32,
    /// `# handed: N`: with a mount, the runtime runs exactly N pipelines, some command of them
    /// at a mount's proxy (so a case about what reaches the proxy cannot pass with bash keeping
    /// everything).
    pub handed: Option<usize>,
    /// `# handed-mounted: N`: the same in the mounted mode, where it differs (its two nested
    /// mounts make some pipelines read both, which the plan keeps at the client: bash's).
    pub handed_mounted: Option<usize>,
}

pub(crate) fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle")
}

/// Reads every `tests/oracle/*.sh` (sorted by name), keeping those whose name contains
/// `$POSH_ORACLE_CASE` when it is set.
fn load_cases() -> Vec<Case> {
    let filter = std::env::var("POSH_ORACLE_CASE").ok();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/oracle exists")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sh"))
        .collect();
    paths.sort();
    let mut cases = Vec::new();
    for path in paths {
        let name = path.file_stem().expect("a file name").to_string_lossy().into_owned();
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a case is UTF-8 text");
        cases.push(parse_case(name, source));
    }
    cases
}

/// The header is the leading block of `#` lines; `# args:`, `# stdin:` and `# status:` lines in
/// it are read, other comment lines are prose.
fn parse_case(name: String, source: String) -> Case {
    let mut args = Vec::new();
    let mut stdin = None;
    let mut status = None;
    let mut handed = None;
    let mut handed_mounted = None;
    let count = |key: &str, value: &str| -> usize {
        value.trim().parse().unwrap_or_else(|e| panic!("{name}.sh: bad `# {key}:` line: {e}"))
    };
    for line in source.lines().take_while(|line| line.starts_with('#')) {
        if let Some(value) = line.strip_prefix("# args:") {
            args = shell_words::split(value.trim()).unwrap_or_else(|e| panic!("{name}.sh: bad `# args:` line: {e}"));
        } else if let Some(value) = line.strip_prefix("# stdin:") {
            stdin = Some(value.trim().to_string());
        } else if let Some(value) = line.strip_prefix("# status:") {
            status = Some(value.trim().parse().unwrap_or_else(|e| panic!("{name}.sh: bad `# status:` line: {e}")));
        } else if let Some(value) = line.strip_prefix("# handed:") {
            handed = Some(count("handed", value));
        } else if let Some(value) = line.strip_prefix("# handed-mounted:") {
            handed_mounted = Some(count("handed-mounted", value));
        }
    }
    let status = status.unwrap_or_else(|| panic!("{name}.sh: the header has no `# status:` line"));
    Case { name, source, args, stdin, status, handed, handed_mounted: handed_mounted.or(handed) }
}

/// Copies a directory tree (regular files and directories only).
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create directory");
    for entry in std::fs::read_dir(from).expect("read directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// What a directory holds, by relative path.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Dir,
    File(Vec<u8>),
    Symlink(PathBuf),
    Other(String),
}

fn snapshot(dir: &Path, relative: &Path, into: &mut BTreeMap<String, Node>, normalize: &Normalizer) {
    let mut entries: Vec<_> = std::fs::read_dir(dir.join(relative))
        .expect("read directory")
        .map(|entry| entry.expect("directory entry"))
        .collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = relative.join(entry.file_name());
        let kind = entry.file_type().expect("file type");
        let key = path.to_string_lossy().into_owned();
        if kind.is_dir() {
            into.insert(key, Node::Dir);
            snapshot(dir, &path, into, normalize);
        } else if kind.is_file() {
            let bytes = std::fs::read(entry.path()).expect("read file");
            into.insert(key, Node::File(normalize.apply(&bytes)));
        } else if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).expect("read link");
            into.insert(key, Node::Symlink(target));
        } else if kind.is_fifo() {
            into.insert(key, Node::Other("fifo".into()));
        } else {
            into.insert(key, Node::Other(format!("{kind:?}")));
        }
    }
}

/// Replaces a run's temporary paths with placeholders.
pub(crate) struct Normalizer(Vec<(Vec<u8>, &'static [u8])>);

impl Normalizer {
    pub(crate) fn new(paths: &[(&Path, &'static str)]) -> Self {
        let mut pairs = Vec::new();
        for (path, placeholder) in paths {
            for variant in [path.to_path_buf(), path.canonicalize().expect("canonical path")] {
                let bytes = variant.to_string_lossy().into_owned().into_bytes();
                if !pairs.iter().any(|(b, _)| *b == bytes) {
                    pairs.push((bytes, placeholder.as_bytes()));
                }
            }
        }
        // Longest first, so a path is never half-replaced through a shorter one.
        pairs.sort_by_key(|(bytes, _)| std::cmp::Reverse(bytes.len()));
        Normalizer(pairs)
    }

    pub(crate) fn apply(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for (from, to) in &self.0 {
            out = replace_all(&out, from, to);
        }
        out
    }
}

fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// No configuration anywhere: posh-exec must be bash.
    Local,
    /// `work/posh.toml` makes `work/data` an embedded mount, and `work/data/sub` another.
    Mounted,
    /// `work/posh.toml` mounts the runs' parent directory, served by a posh-proxy process.
    Proxied,
}

/// Where runs happen and what `posh.toml` they get (the same for bash and posh-exec, so the
/// files left behind compare equal).
pub(crate) struct Setting {
    /// Runs' roots are made here.
    parent: tempfile::TempDir,
    config: Option<String>,
    /// The proxy of the `proxied` mode, killed when dropped.
    proxy: Option<ProxyProcess>,
    capture: Capture,
    /// How long one run may take before it is killed and reported.
    pub timeout: Duration,
}

impl Setting {
    pub(crate) fn new(mode: Mode, capture: Capture) -> Setting {
        let parent = tempfile::tempdir().expect("tempdir");
        let (config, proxy) = match mode {
            Mode::Local => (None, None),
            Mode::Mounted => (Some(MOUNTED_CONFIG.to_string()), None),
            Mode::Proxied => {
                let proxy = ProxyProcess::start(parent.path());
                let config = format!(
                    "# Every run's root lies under the directory a posh-proxy process exports.\n\
                     [[mount]]\nname = \"shared\"\npath = \"../..\"\nproxy = \"{}\"\n",
                    proxy.addr
                );
                (Some(config), Some(proxy))
            }
        };
        Setting { parent, config, proxy, capture, timeout: TIMEOUT }
    }
}

/// A `posh-proxy` process on loopback serving any client (trust is tested elsewhere).
pub(crate) struct ProxyProcess {
    child: std::process::Child,
    pub addr: String,
    _state: tempfile::TempDir,
}

impl ProxyProcess {
    pub(crate) fn start(export: &Path) -> ProxyProcess {
        use std::io::BufRead as _;
        let state = tempfile::tempdir().expect("tempdir");
        let binary = posh_exec().with_file_name(format!("posh-proxy{}", std::env::consts::EXE_SUFFIX));
        let mut command = Command::new(&binary);
        if running_as_root() {
            hand_over(&[export, state.path()]);
            command.args(["--user", PROXY_USER]);
        }
        let mut child = command
            .arg("--export")
            .arg(export)
            .args(["--listen", "127.0.0.1:0", "--allow-any-client", "--max-jobs", "64", "--state-dir"])
            .arg(state.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let addr = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(rest) = line.strip_prefix("posh-proxy: listening on ") {
                        break rest.split(',').next().expect("an address").to_string();
                    }
                }
                _ => panic!("posh-proxy ended without printing its address"),
            }
        };
        // Keep draining its log, or the proxy would block on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        ProxyProcess { child, addr, _state: state }
    }
}

/// The user the proxy becomes (`--user`): a root proxy refuses to start without one.
pub(crate) const PROXY_USER: &str = "nobody";

/// `dirs` handed over to [`PROXY_USER`] (see `hand_over.rs`).
pub(crate) fn hand_over(dirs: &[&Path]) {
    for dir in dirs {
        crate::hand_over::hand_over(dir, PROXY_USER_ID);
    }
}

/// [`PROXY_USER`]'s uid and group id.
const PROXY_USER_ID: u32 = 65534;

/// Whether the tests run as root, where a proxy must be told which user to become.
pub(crate) fn running_as_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const MOUNTED_CONFIG: &str = "# The oracle's data directory, served by an in-process proxy, and its `sub`\n\
# directory by another (a nested mount: files of both are streamed between the two).\n\
[[mount]]\n\
path = \"data\"\n\
proxy = \"embedded\"\n\
\n\
[[mount]]\n\
name = \"sub\"\n\
path = \"data/sub\"\n\
proxy = \"embedded\"\n";

/// What one shell did with one case.
#[derive(Debug)]
pub(crate) struct Run {
    pub outcome: Outcome,
    pub files: BTreeMap<String, Node>,
    /// posh-exec with a mount: where the runtime ran a command elsewhere than `--explain` said.
    pub plan_disagreements: Vec<String>,
    /// posh-exec with a mount: the pipelines the runtime ran (`--stats` records) and, of their
    /// commands, those that ran at a mount's proxy.
    pub handed: Option<(usize, usize)>,
}

pub(crate) fn run_case(case: &Case, setting: &Setting, shell: &Path) -> Run {
    let root = tempfile::tempdir_in(setting.parent.path()).expect("tempdir");
    let work = root.path().join("work");
    let xdg = root.path().join("xdg");
    std::fs::create_dir_all(&xdg).expect("create xdg dir");
    copy_tree(&corpus_dir().join("data"), &work.join("data"));
    std::fs::write(work.join("case.sh"), &case.source).expect("write case");
    if let Some(config) = &setting.config {
        std::fs::write(work.join("posh.toml"), config).expect("write posh.toml");
    }
    // posh-exec's files handed to the user its proxy runs commands as (the tests run as root),
    // and what it makes at the client later too: the proxy's commands may change them, as
    // bash's own commands would.
    if setting.proxy.is_some() && shell != Path::new("bash") && running_as_root() {
        hand_over(&[root.path()]);
    }
    // posh-exec with a mount also says where it ran each command (`--stats`, outside `work/` so
    // the files compare), to hold against its `--explain` plan.
    let stats = (shell != Path::new("bash") && setting.config.is_some()).then(|| root.path().join("stats.jsonl"));
    let mut command = Command::new(shell);
    if let Some(stats) = &stats {
        command.arg("--stats").arg(stats);
    }
    command
        .arg("./case.sh")
        .args(&case.args)
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LC_ALL", "C");
    crate::isolation::isolate(&mut command, &work, &xdg, &root.path().join("state"));
    match &case.stdin {
        Some(file) => {
            let file =
                std::fs::File::open(work.join(file)).unwrap_or_else(|e| panic!("{}: stdin {file}: {e}", case.name));
            command.stdin(file);
        }
        None => {
            command.stdin(Stdio::null());
        }
    }
    let explained = stats.as_ref().map(|_| agreement::explain_like(&command, Path::new("case.sh"), &case.args));
    let outcome = run_captured(command, setting.timeout, setting.capture);
    let plan_disagreements = match (explained, &stats) {
        (Some(Ok(explain)), Some(stats)) => {
            agreement::disagreements(&explain, &std::fs::read_to_string(stats).unwrap_or_default())
        }
        (Some(Err(e)), _) => vec![e],
        _ => Vec::new(),
    };
    let handed = stats.as_ref().map(|stats| {
        let records = std::fs::read_to_string(stats).unwrap_or_default();
        let records: Vec<Value> = records.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let commands = records.iter().flat_map(|r| r["commands"].as_array().into_iter().flatten());
        (records.len(), commands.filter(|c| c["location"] != "client").count())
    });
    let normalize = Normalizer::new(&[(root.path(), "<ROOT>")]);
    let mut files = BTreeMap::new();
    snapshot(&work, Path::new(""), &mut files, &normalize);
    Run {
        outcome: Outcome {
            status: outcome.status,
            stdout: normalize.apply(&outcome.stdout),
            stderr: normalize.apply(&outcome.stderr),
        },
        files,
        plan_disagreements,
        handed,
    }
}

/// The first few differing lines of two byte streams, as a readable excerpt.
pub(crate) fn short_diff(bash: &[u8], posh: &[u8]) -> String {
    let bash_lines: Vec<&[u8]> = bash.split_inclusive(|&b| b == b'\n').collect();
    let posh_lines: Vec<&[u8]> = posh.split_inclusive(|&b| b == b'\n').collect();
    let mut out = format!(
        "      ({} bytes, {} lines under bash; {} bytes, {} lines under posh-exec)\n",
        bash.len(),
        bash_lines.len(),
        posh.len(),
        posh_lines.len()
    );
    let mut shown = 0;
    for i in 0..bash_lines.len().max(posh_lines.len()) {
        let (b, p) = (bash_lines.get(i), posh_lines.get(i));
        if b == p {
            continue;
        }
        let show = |line: Option<&&[u8]>| match line {
            Some(line) => format!("{:?}", String::from_utf8_lossy(line)),
            None => "(no line)".to_string(),
        };
        let _ = writeln!(out, "      line {}:", i + 1);
        let _ = writeln!(out, "        bash:      {}", show(b));
        let _ = writeln!(out, "        posh-exec: {}", show(p));
        shown += 1;
        if shown == 3 {
            out.push_str("      ...\n");
            break;
        }
    }
    out
}

/// Which part of two runs differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Aspect {
    Status,
    Stdout,
    Stderr,
    Files,
}

/// One difference between two runs: what differs, and a paragraph saying how.
#[derive(Debug)]
pub(crate) struct Difference {
    pub aspect: Aspect,
    pub text: String,
}

/// Differences between the bash run and the posh-exec run, one paragraph each.
pub(crate) fn compare(bash: &Run, posh: &Run) -> Vec<Difference> {
    let mut problems = Vec::new();
    let mut differ = |aspect, text| problems.push(Difference { aspect, text });
    if bash.outcome.status != posh.outcome.status {
        differ(
            Aspect::Status,
            format!("    exit status: bash {}, posh-exec {}\n", bash.outcome.status, posh.outcome.status),
        );
    }
    for (aspect, what, b, p) in [
        (Aspect::Stdout, "stdout", &bash.outcome.stdout, &posh.outcome.stdout),
        (Aspect::Stderr, "stderr", &bash.outcome.stderr, &posh.outcome.stderr),
    ] {
        if b != p {
            differ(aspect, format!("    {what} differs:\n{}", short_diff(b, p)));
        }
    }
    for (path, node) in &bash.files {
        match (node, posh.files.get(path)) {
            (_, None) => differ(Aspect::Files, format!("    file {path}: only after bash\n")),
            (node, Some(other)) if other == node => {}
            (Node::File(b), Some(Node::File(p))) => {
                differ(Aspect::Files, format!("    file {path} differs:\n{}", short_diff(b, p)));
            }
            (node, Some(other)) => differ(
                Aspect::Files,
                format!("    file {path}: {} under bash, {} under posh-exec\n", describe(node), describe(other)),
            ),
        }
    }
    for path in posh.files.keys() {
        if !bash.files.contains_key(path) {
            differ(Aspect::Files, format!("    file {path}: only after posh-exec\n"));
        }
    }
    problems
}

fn describe(node: &Node) -> String {
    match node {
        Node::Dir => "a directory".into(),
        Node::File(bytes) => format!("a file of {} bytes", bytes.len()),
        Node::Symlink(target) => format!("a symlink to {}", target.display()),
        Node::Other(kind) => kind.clone(),
    }
}

fn run_oracle(mode: Mode, capture: Capture) {
    let posh = posh_exec();
    let cases = load_cases();
    if std::env::var_os("POSH_ORACLE_CASE").is_none() {
        assert!(cases.len() >= 40, "the oracle corpus has only {} cases", cases.len());
    }
    if mode == Mode::Mounted {
        assert_mount_is_seen(&posh);
    }
    let setting = Setting::new(mode, capture);
    let start = Instant::now();
    let mut report = String::new();
    let mut failed = 0;
    for case in &cases {
        let bash = run_case(case, &setting, Path::new("bash"));
        let posh_run = run_case(case, &setting, &posh);
        let mut problems = Vec::new();
        let expected = format!("exit {}", case.status);
        if bash.outcome.status != expected {
            problems.push(format!(
                "    the case says `# status: {}` but bash ended with {} (a corpus or harness \
                 problem, not a posh one)\n",
                case.status, bash.outcome.status
            ));
        }
        problems.extend(compare(&bash, &posh_run).into_iter().map(|d| d.text));
        problems
            .extend(posh_run.plan_disagreements.iter().map(|d| format!("    --explain and --stats disagree: {d}\n")));
        let (key, handed) =
            if mode == Mode::Mounted { ("handed-mounted", case.handed_mounted) } else { ("handed", case.handed) };
        if let (Some(expected), Some((pipelines, at_proxies))) = (handed, posh_run.handed)
            && (pipelines != expected || at_proxies == 0)
        {
            problems.push(format!(
                "    `# {key}: {expected}`, but the runtime ran {pipelines} pipelines, {at_proxies} commands at a proxy\n"
            ));
        }
        if !problems.is_empty() {
            failed += 1;
            let _ = writeln!(report, "  {}.sh:", case.name);
            for problem in problems {
                report.push_str(&problem);
            }
        }
    }
    println!("oracle ({mode:?}, {capture:?}): {} cases, {failed} differ, {:.1?}", cases.len(), start.elapsed());
    assert!(
        failed == 0,
        "oracle ({mode:?} mode, {capture:?}): {failed} of {} cases differ between bash and posh-exec \
         (POSH_ORACLE_CASE=NAME runs only cases whose name contains NAME):\n{report}",
        cases.len()
    );
}

/// The `mounted` mode is only worth something if posh-exec reads the `posh.toml`: its plan of
/// a pipeline over `data/` must place a command on the mount.
fn assert_mount_is_seen(posh: &Path) {
    let root = tempfile::tempdir().expect("tempdir");
    let work = root.path().join("work");
    copy_tree(&corpus_dir().join("data"), &work.join("data"));
    std::fs::write(work.join("posh.toml"), MOUNTED_CONFIG).expect("write posh.toml");
    std::fs::write(work.join("probe.sh"), "cat data/words.txt | sort | head -n 1\n").expect("write probe");
    std::fs::create_dir_all(root.path().join("xdg")).expect("create xdg dir");
    let mut command = Command::new(posh);
    command
        .args(["--explain", "probe.sh"])
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null());
    crate::isolation::isolate(&mut command, &work, &root.path().join("xdg"), &root.path().join("state"));
    let outcome = run_with_timeout(command, TIMEOUT);
    let text = String::from_utf8_lossy(&outcome.stdout);
    assert!(
        outcome.status == "exit 0" && text.contains("[@data]"),
        "posh-exec --explain does not place anything on the `data` mount, so the mounted mode \
         would test nothing ({}):\n{text}{}",
        outcome.status,
        String::from_utf8_lossy(&outcome.stderr)
    );
}

#[test]
fn oracle_local() {
    run_oracle(Mode::Local, Capture::Pipes);
}

#[test]
fn oracle_mounted() {
    run_oracle(Mode::Mounted, Capture::Pipes);
}

#[test]
fn oracle_proxied() {
    run_oracle(Mode::Proxied, Capture::Pipes);
}

// stdout and stderr into one file (`> log 2>&1`): a remote job's two streams share one offset.

#[test]
fn oracle_local_one_file() {
    run_oracle(Mode::Local, Capture::OneFile);
}

#[test]
fn oracle_mounted_one_file() {
    run_oracle(Mode::Mounted, Capture::OneFile);
}

#[test]
fn oracle_proxied_one_file() {
    run_oracle(Mode::Proxied, Capture::OneFile);
}
