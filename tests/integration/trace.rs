//! Runs a command under `strace -f` and reports which files it touched.
//!
//! The annotation check runs every example invocation of every shipped
//! annotation on real temporary files and fails when the command opened,
//! created, renamed or removed a file the annotation did not predict.  This
//! module supplies the mechanics; the caller supplies the prediction.
//!
//! # Tracing
//!
//! [`trace`] runs `strace -f -y -qq -e signal=none --seccomp-bpf -o LOG
//! -e trace=SET -- ARGV` with the environment cleared to exactly the given
//! variables plus `PATH`, then parses the log into [`FileAccess`] records.
//! Only successful calls (result `>= 0`) count: failed probes such as a
//! search along a list of directories that ends in `ENOENT` are dropped.
//!
//! The traced set and how each call is classified:
//!
//! | syscall | path(s) | mode |
//! | --- | --- | --- |
//! | `open`, `openat`, `openat2` | the path | `Write` if the flags hold `O_WRONLY`, `O_RDWR`, `O_CREAT`, `O_TRUNC`, `O_APPEND` or `O_TMPFILE`, else `Read` (also for `O_DIRECTORY` and `O_PATH` opens: a directory listing is a `Read` of the directory) |
//! | `creat`, `truncate`, `mkdir`, `mkdirat`, `mknod`, `mknodat` | the path | `Write` |
//! | `rename`, `renameat`, `renameat2` | source, target | `Delete` of the source and `Write` of the target (`Write` of both for `RENAME_EXCHANGE`) |
//! | `link`, `linkat` | existing, new | `Read` of the existing file and `Write` of the new name |
//! | `symlink`, `symlinkat` | the new name | `Write` (the target is only a string) |
//! | `unlink`, `unlinkat`, `rmdir` | the path | `Delete` |
//! | `chdir`, `fchdir`, `clone`, `clone3`, `fork`, `vfork`, `execve` | none | only used to follow each process's working directory and to see that the command started |
//!
//! Paths are made absolute and lexically normalized (`.` and `..` removed,
//! no symlinks resolved).  A relative path is resolved against the directory
//! that `-y` prints for the directory descriptor (`openat(3</tmp/d>, "x")`),
//! or, for `AT_FDCWD` and the non-`at` calls, against the calling process's
//! working directory: strace 6 prints it as `AT_FDCWD</cwd>`, and otherwise
//! it is followed through `chdir`/`fchdir` and inherited across
//! `fork`/`clone`.  Those directories come from the kernel, so they are
//! canonical: compare against a canonicalized temporary directory
//! (`dir.path().canonicalize()`).
//!
//! # System files
//!
//! [`is_system_path`] is a small explicit list of files that are never user
//! data, so a trace may touch them without the annotation saying so:
//!
//! - `/etc/ld.so.cache`, `/etc/ld.so.preload`, `/lib/`, `/lib64/`,
//!   `/usr/lib/`, `/usr/lib64/`, `/usr/local/lib/`: the dynamic loader and
//!   shared libraries (this also covers `/usr/lib/locale/`, gconv modules,
//!   `/usr/lib/git-core/`, `/usr/lib/file/`, ImageMagick's coders and
//!   terminfo under `/lib/terminfo/`).
//! - `/usr/share/locale/`, `/usr/share/i18n/`, `/etc/locale.alias`: locale
//!   and charset data.
//! - `/proc/`, `/sys/`, `/dev/`: kernel interfaces and devices, not files.
//! - `/etc/localtime`, `/etc/timezone`, `/usr/share/zoneinfo/`: time zone.
//! - `/etc/nsswitch.conf`, `/etc/passwd`, `/etc/group`: user and group
//!   name look-ups (`ls -l`, `tar`, `id`).
//! - `/bin/`, `/sbin/`, `/usr/bin/`, `/usr/sbin/`, `/usr/local/bin/`,
//!   `/usr/libexec/`: the executables themselves (scripts such as `zcat`
//!   are opened by their interpreter).
//! - `/etc/ImageMagick-6/`, `/usr/share/ImageMagick-6/`: ImageMagick's
//!   policy, colour and type configuration.
//! - `/etc/fonts/`, `/usr/share/fonts/`, `/var/cache/fontconfig/`:
//!   fontconfig.
//! - `/etc/gitconfig`, `/usr/share/git-core/`: git's system configuration
//!   and templates.
//! - `/usr/share/misc/magic`, `/usr/share/file/`, `/etc/magic`: `file`'s
//!   magic database.
//! - `/usr/share/terminfo/`, `/etc/terminfo/`: terminal descriptions.
//! - `/etc/mime.types`: MIME types by extension.
//! - `/etc/ssl/`: CA certificates and OpenSSL configuration, which TLS
//!   libraries (curl, git) read at start.
//! - `/etc/hosts`, `/etc/host.conf`, `/etc/resolv.conf`, `/etc/gai.conf`:
//!   name resolver configuration (curl reads it even for `--version`).
//!
//! `/tmp/`, home directories and everything else are user data.
//!
//! # Fixtures
//!
//! [`make_input_fixture`] makes a file whose content fits its name, so an
//! annotation example may name any input word and find a real file there:
//!
//! | word | content |
//! | --- | --- |
//! | ends in `/` | a directory holding `a.txt` and `b.txt` |
//! | `.txt` and anything not below | `apple 1\nbanana 2\ncherry 3\n` (sorted under `LC_ALL=C`) |
//! | `.csv` | `a,b,c\n1,2,3\n4,5,6\n` |
//! | `.tsv` | the same, separated by tabs |
//! | `.json` | three JSON objects, one a line: `{"name":"a","n":1,"tags":["x"]}` … |
//! | `.gz`, `.bz2`, `.xz` | the text above compressed by `gzip`, `bzip2`, `xz` |
//! | `.tar` | a tar of `input/a.txt` and `input/b.txt` |
//! | `.tar.gz`, `.tgz`, `.tar.bz2`, `.tbz2`, `.tar.xz`, `.txz` | the same tar, compressed |
//! | `.zip` | a zip of `input/a.txt` and `input/b.txt` (needs `zip`) |
//! | `.jpg`, `.jpeg`, `.png`, `.gif` | an 8×8 red image (`convert -size 8x8 xc:red`, needs ImageMagick) |
//! | `.wav`, `.mp3`, `.flac`, `.ogg` | one second of sine tone (needs `ffmpeg`) |
//! | `.mp4`, `.mkv`, `.webm` | one second of 32×32 test video (needs `ffmpeg`) |
//! | `.awk` | `{ print $1 }` |
//! | `.sed` | `s/a/b/` |
//! | `.jq` | `.name` |
//!
//! A fixture that needs a tool that is not installed fails with an error
//! naming the tool.  [`make_output_parent`] prepares an output word and
//! [`init_git_repo`] makes a repository with staged history, a modified
//! file and an untracked file.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long one traced command may run before its process group is killed.
pub(crate) const TRACE_TIMEOUT: Duration = Duration::from_secs(60);

/// The syscalls traced; a leading `?` keeps strace quiet about a name the
/// architecture lacks (`open`, `fork` and friends do not exist on arm64).
const TRACED: &str = "?open,openat,?openat2,?creat,truncate,?rename,?renameat,?renameat2,\
?link,linkat,?symlink,symlinkat,?unlink,unlinkat,?mkdir,mkdirat,?mknod,mknodat,?rmdir,\
chdir,fchdir,clone,?clone3,?fork,?vfork,execve";

/// `PATH` for the traced command when the test process has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What a command did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum AccessMode {
    /// Opened without write flags (files and directories alike), or the
    /// existing side of a hard link.
    Read,
    /// Opened for writing, created, truncated, made as a directory, or the
    /// target of a rename or link.
    Write,
    /// Unlinked, removed as a directory, or the source of a rename.
    Delete,
}

/// One successful file system call of the traced command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileAccess {
    /// Absolute and lexically normalized.
    pub(crate) path: PathBuf,
    pub(crate) mode: AccessMode,
    /// The syscall's name, such as `openat`.
    pub(crate) syscall: String,
    /// The strace log line (unfinished and resumed halves joined), for
    /// error messages.
    pub(crate) raw: String,
}

/// The result of [`trace`].
#[derive(Debug)]
pub(crate) struct Trace {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    /// In the order the calls started.
    pub(crate) accesses: Vec<FileAccess>,
}

impl Trace {
    /// The accesses to files that [`is_system_path`] does not excuse.
    pub(crate) fn user_accesses(&self) -> impl Iterator<Item = &FileAccess> {
        self.accesses.iter().filter(|a| !is_system_path(&a.path))
    }
}

/// Runs `argv` under strace in `cwd`, with standard input read from `stdin`
/// and the environment cleared to exactly `env` plus `PATH` (the test
/// process's `PATH` unless `env` sets one), and reports every file it
/// touched.  Fails if strace is missing, if strace could not start the
/// command, or if the command ran longer than [`TRACE_TIMEOUT`].
pub(crate) fn trace(argv: &[String], cwd: &Path, stdin: &Path, env: &[(String, String)]) -> io::Result<Trace> {
    trace_with_timeout(argv, cwd, stdin, env, TRACE_TIMEOUT)
}

/// [`trace`] with a chosen wall-clock limit.
pub(crate) fn trace_with_timeout(
    argv: &[String],
    cwd: &Path,
    stdin: &Path,
    env: &[(String, String)],
    timeout: Duration,
) -> io::Result<Trace> {
    if argv.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "trace: empty command"));
    }
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    let strace = find_in_path("strace", &path_var).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "strace is not installed (not found on PATH); the file access check \
             needs it: apt-get install strace",
        )
    })?;
    let cwd =
        cwd.canonicalize().map_err(|e| io::Error::new(e.kind(), format!("trace: working directory {cwd:?}: {e}")))?;
    let stdin_file = File::open(stdin).map_err(|e| io::Error::new(e.kind(), format!("trace: stdin {stdin:?}: {e}")))?;
    let log_dir = tempfile::tempdir()?;
    let log_path = log_dir.path().join("strace.log");

    let mut cmd = Command::new(&strace);
    cmd.args(["-f", "-y", "-qq", "-e", "signal=none", "--seccomp-bpf", "-o"])
        .arg(&log_path)
        .arg("-e")
        .arg(format!("trace={TRACED}"))
        .arg("--")
        .args(argv)
        .current_dir(&cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("PATH", &path_var)
        .stdin(stdin_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| io::Error::new(e.kind(), format!("trace: cannot run {strace:?}: {e}")))?;
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());

    let status = match wait_until(&mut child, Instant::now() + timeout)? {
        Some(status) => status,
        None => {
            kill_group(&mut child);
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("trace: {argv:?} still ran after {} s; its process group was killed", timeout.as_secs_f64()),
            ));
        }
    };
    let stdout = join_reader(out)?;
    let stderr = join_reader(err)?;
    let log = fs::read(&log_path).unwrap_or_default();
    let log = String::from_utf8_lossy(&log);
    let records = parse_log(&log);
    if !records.iter().any(|r| r.name == "execve" && r.result.is_some_and(|n| n >= 0)) {
        return Err(io::Error::other(format!(
            "trace: strace could not start {argv:?} (exit {status}): {}",
            String::from_utf8_lossy(&stderr).trim()
        )));
    }
    let accesses = accesses(&records, &cwd);
    Ok(Trace { status, stdout, stderr, accesses })
}

fn find_in_path(name: &str, path_var: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path_var).map(|dir| dir.join(name)).find(|p| p.is_file())
}

fn reader<R: Read + Send + 'static>(pipe: Option<R>) -> JoinHandle<io::Result<Vec<u8>>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            pipe.read_to_end(&mut buf)?;
        }
        Ok(buf)
    })
}

fn join_reader(handle: JoinHandle<io::Result<Vec<u8>>>) -> io::Result<Vec<u8>> {
    handle.join().map_err(|_| io::Error::other("trace: output reader panicked"))?
}

/// Waits for `child` until `deadline`; `None` when it is still running.
fn wait_until(child: &mut Child, deadline: Instant) -> io::Result<Option<ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Kills the process group that `child` leads (strace and every traced
/// process), without `unsafe`: the shell's `kill` does the signalling.
fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("/bin/sh")
        .args(["-c", "kill -KILL -- \"$1\"", "sh", &group])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether `p` (absolute) is a system file that no annotation needs to
/// predict.  See the module documentation for the list and the reasons.
pub(crate) fn is_system_path(p: &Path) -> bool {
    /// Directories whose whole subtree is ignored.
    const DIRS: &[&str] = &[
        // The dynamic loader's libraries (also locale archives, gconv,
        // git-core helpers, ImageMagick coders, /lib/terminfo).
        "/lib",
        "/lib64",
        "/usr/lib",
        "/usr/lib64",
        "/usr/local/lib",
        // Locale and charset data.
        "/usr/share/locale",
        "/usr/share/i18n",
        // Kernel interfaces and devices.
        "/proc",
        "/sys",
        "/dev",
        // Time zone data.
        "/usr/share/zoneinfo",
        // The executables themselves; interpreters open scripts like zcat.
        "/bin",
        "/sbin",
        "/usr/bin",
        "/usr/sbin",
        "/usr/local/bin",
        "/usr/libexec",
        // ImageMagick's policy, colour and type configuration.
        "/etc/ImageMagick-6",
        "/usr/share/ImageMagick-6",
        // fontconfig.
        "/etc/fonts",
        "/usr/share/fonts",
        "/var/cache/fontconfig",
        // git's system templates and configuration.
        "/usr/share/git-core",
        // file(1)'s magic database.
        "/usr/share/file",
        // Terminal descriptions.
        "/usr/share/terminfo",
        "/etc/terminfo",
        // CA certificates and OpenSSL configuration, read by TLS libraries.
        "/etc/ssl",
    ];
    /// Single files that are ignored.
    const FILES: &[&str] = &[
        // The dynamic loader.
        "/etc/ld.so.cache",
        "/etc/ld.so.preload",
        // Locale aliases (/usr/share/locale/locale.alias links here).
        "/etc/locale.alias",
        // Time zone.
        "/etc/localtime",
        "/etc/timezone",
        // User and group name look-ups.
        "/etc/nsswitch.conf",
        "/etc/passwd",
        "/etc/group",
        // git's system configuration.
        "/etc/gitconfig",
        // file(1)'s magic database.
        "/etc/magic",
        "/etc/magic.mime",
        // MIME types by extension.
        "/etc/mime.types",
        // Name resolver configuration.
        "/etc/hosts",
        "/etc/host.conf",
        "/etc/resolv.conf",
        "/etc/gai.conf",
    ];
    if !p.is_absolute() {
        return false;
    }
    if DIRS.iter().any(|d| p.starts_with(d)) || FILES.iter().any(|f| p == Path::new(f)) {
        return true;
    }
    // file(1)'s magic database: /usr/share/misc/magic, magic.mgc, magic/...
    p.strip_prefix("/usr/share/misc")
        .ok()
        .and_then(|rest| rest.components().next())
        .is_some_and(|c| c.as_os_str().as_bytes().starts_with(b"magic"))
}

// ---------------------------------------------------------------------------
// Log parsing

/// One syscall from the log, with an unfinished call joined to its
/// resumption.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    pid: u32,
    name: String,
    /// The arguments as strace printed them, split at top-level commas.
    args: Vec<String>,
    /// The leading integer of the return value; `None` for `?`.
    result: Option<i64>,
    raw: String,
}

/// Parses a whole `strace -f -y` log into records, in the order the calls
/// started.
fn parse_log(log: &str) -> Vec<Record> {
    // A slot per started call: an unfinished call keeps its place until it
    // is resumed.
    let mut slots: Vec<Option<Record>> = Vec::new();
    let mut pending: HashMap<u32, (usize, String)> = HashMap::new();
    for line in log.lines() {
        let Some((pid, body)) = split_pid(line) else {
            continue;
        };
        let (index, text) = if let Some(rest) = body.strip_prefix("<... ") {
            // `<... openat resumed>, O_RDONLY) = 3</x>`
            let Some(end) = rest.find(" resumed>") else {
                continue;
            };
            let Some((index, head)) = pending.remove(&pid) else {
                continue;
            };
            (index, format!("{head}{}", &rest[end + " resumed>".len()..]))
        } else {
            slots.push(None);
            (slots.len() - 1, body.to_owned())
        };
        if let Some(head) = text.strip_suffix("<unfinished ...>") {
            pending.insert(pid, (index, head.trim_end().to_owned()));
            continue;
        }
        slots[index] = parse_call(pid, &text);
    }
    slots.into_iter().flatten().collect()
}

/// Splits `"1234  openat(...)"` into the pid and the rest.
fn split_pid(line: &str) -> Option<(u32, &str)> {
    let digits = line.find(|c: char| !c.is_ascii_digit())?;
    let pid = line[..digits].parse().ok()?;
    Some((pid, line[digits..].trim_start()))
}

/// Parses `name(arg, arg) = result ...`.
fn parse_call(pid: u32, text: &str) -> Option<Record> {
    let open = text.find('(')?;
    let name = &text[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let (args, after) = split_args(&text[open + 1..])?;
    let ret = after.trim_start().strip_prefix('=')?.trim_start();
    let digits =
        ret.char_indices().find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-'))).map_or(ret.len(), |(i, _)| i);
    Some(Record { pid, name: name.to_owned(), args, result: ret[..digits].parse().ok(), raw: format!("{pid}  {text}") })
}

/// Splits the text after `name(` into top-level arguments and the text
/// after the closing parenthesis.  Quoted strings and `-y` decorations
/// (`3</path>`) are opaque; brackets and braces nest.
fn split_args(s: &str) -> Option<(Vec<String>, &str)> {
    let bytes = s.as_bytes();
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = skip_delimited(bytes, i, b'"'),
            b'<' => i = skip_delimited(bytes, i, b'>'),
            b'(' | b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b')' if depth == 0 => {
                let last = s[start..i].trim();
                if !last.is_empty() || !args.is_empty() {
                    args.push(last.to_owned());
                }
                return Some((args, &s[i + 1..]));
            }
            b')' => depth -= 1,
            b',' if depth == 0 => {
                args.push(s[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// From the opening delimiter at `i`, the index of the closing `close`,
/// skipping backslash escapes.
fn skip_delimited(bytes: &[u8], mut i: usize, close: u8) -> usize {
    i += 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b if b == close => return i,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// Decodes strace's C-style escapes (`\n`, `\"`, `\\`, `\377`, `\x41`).
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        i += 1;
        let c = b[i];
        i += 1;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'e' => out.push(0x1b),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2 && i < b.len() && b[i].is_ascii_hexdigit() {
                    v = v * 16 + char::from(b[i]).to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                out.push((v & 0xff) as u8);
            }
            other => out.push(other),
        }
    }
    out
}

fn bytes_to_path(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(bytes))
}

/// A quoted string argument, decoded.
fn string_arg(arg: &str) -> Option<PathBuf> {
    let inner = arg.strip_prefix('"')?;
    let end = skip_delimited(arg.as_bytes(), 0, b'"');
    let inner = inner.get(..end.checked_sub(1)?)?;
    Some(bytes_to_path(unescape(inner)))
}

/// The directory a descriptor argument names.
#[derive(Debug, PartialEq, Eq)]
enum Dir {
    /// `AT_FDCWD`, with the working directory when `-y` printed it.
    Cwd(Option<PathBuf>),
    /// A descriptor, with its path when `-y` printed one.
    Fd(Option<PathBuf>),
}

/// Parses `AT_FDCWD`, `AT_FDCWD</cwd>`, `3` or `3</dir>`.
fn dir_arg(arg: &str) -> Dir {
    let (head, decoration) = match arg.find('<') {
        Some(lt) => {
            let inner = &arg[lt + 1..];
            let inner = inner.strip_suffix('>').unwrap_or(inner);
            (&arg[..lt], Some(inner))
        }
        None => (arg, None),
    };
    // Only a path is a usable directory, not `socket:[123]` and the like.
    let path = decoration.filter(|d| d.starts_with('/')).map(|d| bytes_to_path(unescape(d)));
    if head.trim() == "AT_FDCWD" { Dir::Cwd(path) } else { Dir::Fd(path) }
}

/// Removes `.` and `..` and repeated slashes without touching the disk.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

/// Whether open flags such as `O_WRONLY|O_CREAT|O_TRUNC` write.
fn open_writes(flags: &str) -> bool {
    flags
        .split(['|', ' ', ',', '{', '}', '='])
        .any(|f| matches!(f.trim(), "O_WRONLY" | "O_RDWR" | "O_CREAT" | "O_TRUNC" | "O_APPEND" | "O_TMPFILE"))
}

/// Follows each process's working directory through the records.
#[derive(Debug)]
struct Cwds {
    initial: PathBuf,
    known: HashMap<u32, PathBuf>,
    /// A forked child's working directory, taken when its parent forked.
    inherited: HashMap<u32, PathBuf>,
}

impl Cwds {
    fn of(&mut self, pid: u32) -> &PathBuf {
        let inherited = &mut self.inherited;
        let initial = &self.initial;
        self.known.entry(pid).or_insert_with(|| inherited.remove(&pid).unwrap_or_else(|| initial.clone()))
    }

    /// The base for a path given with directory argument `dir`.
    fn base(&mut self, pid: u32, dir: Dir) -> PathBuf {
        match dir {
            Dir::Cwd(Some(cwd)) => {
                self.known.insert(pid, cwd.clone());
                cwd
            }
            Dir::Fd(Some(path)) => path,
            // No decoration: the best guess is the working directory.
            Dir::Cwd(None) | Dir::Fd(None) => self.of(pid).clone(),
        }
    }

    fn resolve(&mut self, pid: u32, dir: Dir, path: &Path) -> PathBuf {
        if path.is_absolute() {
            if let Dir::Cwd(Some(cwd)) = dir {
                self.known.insert(pid, cwd);
            }
            return normalize(path);
        }
        let base = self.base(pid, dir);
        normalize(&base.join(path))
    }
}

/// Turns records into file accesses, following working directories.
fn accesses(records: &[Record], initial_cwd: &Path) -> Vec<FileAccess> {
    // Which child each successful fork/clone record made.
    let mut cwds = Cwds { initial: initial_cwd.to_path_buf(), known: HashMap::new(), inherited: HashMap::new() };
    let mut out = Vec::new();
    for r in records {
        let Some(result) = r.result.filter(|&n| n >= 0) else {
            continue;
        };
        let pid = r.pid;
        let arg = |i: usize| r.args.get(i).map(String::as_str).unwrap_or("");
        let cwd_dir = || Dir::Cwd(None);
        // (directory argument, path argument, mode) for each path touched.
        let mut touched: Vec<(Dir, Option<PathBuf>, AccessMode)> = Vec::new();
        match r.name.as_str() {
            "clone" | "clone3" | "fork" | "vfork" => {
                if let Ok(child) = u32::try_from(result) {
                    let cwd = cwds.of(pid).clone();
                    cwds.inherited.insert(child, cwd);
                }
            }
            "chdir" => {
                if let Some(p) = string_arg(arg(0)) {
                    let new = cwds.resolve(pid, cwd_dir(), &p);
                    cwds.known.insert(pid, new);
                }
            }
            "fchdir" => {
                if let Dir::Fd(Some(p)) = dir_arg(arg(0)) {
                    cwds.known.insert(pid, p);
                }
            }
            "open" => {
                let mode = if open_writes(arg(1)) { AccessMode::Write } else { AccessMode::Read };
                touched.push((cwd_dir(), string_arg(arg(0)), mode));
            }
            "openat" | "openat2" => {
                let mode = if open_writes(arg(2)) { AccessMode::Write } else { AccessMode::Read };
                touched.push((dir_arg(arg(0)), string_arg(arg(1)), mode));
            }
            "creat" | "truncate" | "mkdir" | "mknod" => {
                touched.push((cwd_dir(), string_arg(arg(0)), AccessMode::Write));
            }
            "mkdirat" | "mknodat" => {
                touched.push((dir_arg(arg(0)), string_arg(arg(1)), AccessMode::Write));
            }
            "unlink" | "rmdir" => {
                touched.push((cwd_dir(), string_arg(arg(0)), AccessMode::Delete));
            }
            "unlinkat" => {
                touched.push((dir_arg(arg(0)), string_arg(arg(1)), AccessMode::Delete));
            }
            "rename" => {
                touched.push((cwd_dir(), string_arg(arg(0)), AccessMode::Delete));
                touched.push((cwd_dir(), string_arg(arg(1)), AccessMode::Write));
            }
            "renameat" | "renameat2" => {
                let source = if arg(4).contains("RENAME_EXCHANGE") { AccessMode::Write } else { AccessMode::Delete };
                touched.push((dir_arg(arg(0)), string_arg(arg(1)), source));
                touched.push((dir_arg(arg(2)), string_arg(arg(3)), AccessMode::Write));
            }
            "link" => {
                touched.push((cwd_dir(), string_arg(arg(0)), AccessMode::Read));
                touched.push((cwd_dir(), string_arg(arg(1)), AccessMode::Write));
            }
            "linkat" => {
                touched.push((dir_arg(arg(0)), string_arg(arg(1)), AccessMode::Read));
                touched.push((dir_arg(arg(2)), string_arg(arg(3)), AccessMode::Write));
            }
            "symlink" => {
                touched.push((cwd_dir(), string_arg(arg(1)), AccessMode::Write));
            }
            "symlinkat" => {
                touched.push((dir_arg(arg(1)), string_arg(arg(2)), AccessMode::Write));
            }
            _ => {}
        }
        for (dir, path, mode) in touched {
            let Some(path) = path else { continue };
            let path = cwds.resolve(pid, dir, &path);
            out.push(FileAccess { path, mode, syscall: r.name.clone(), raw: r.raw.clone() });
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Fixtures

/// The text every text-like fixture holds: sorted under `LC_ALL=C`.
pub(crate) const FIXTURE_TEXT: &str = "apple 1\nbanana 2\ncherry 3\n";
/// The second file of a fixture directory, tar or zip.
const FIXTURE_TEXT_B: &str = "banana 2\ndate 4\n";
const FIXTURE_CSV: &str = "a,b,c\n1,2,3\n4,5,6\n";
const FIXTURE_TSV: &str = "a\tb\tc\n1\t2\t3\n4\t5\t6\n";
const FIXTURE_JSON: &str = "{\"name\":\"a\",\"n\":1,\"tags\":[\"x\"]}\n\
{\"name\":\"b\",\"n\":2,\"tags\":[\"y\"]}\n\
{\"name\":\"c\",\"n\":3,\"tags\":[\"x\",\"y\"]}\n";

/// Makes an input file (or directory) at `path` whose content fits the
/// word's form; see the table in the module documentation.  Parent
/// directories are created; an existing file is replaced.
pub(crate) fn make_input_fixture(path: &Path) -> io::Result<()> {
    let path = std::path::absolute(path)?;
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if ends_with_slash(&path) || name.is_empty() {
        fs::create_dir_all(&path)?;
        return write_pair(&path);
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let ext = |e: &str| name.ends_with(e);
    if ext(".tar") {
        make_tar(&path, "-cf")
    } else if ext(".tar.gz") || ext(".tgz") {
        make_tar(&path, "-czf")
    } else if ext(".tar.bz2") || ext(".tbz2") {
        make_tar(&path, "-cjf")
    } else if ext(".tar.xz") || ext(".txz") {
        make_tar(&path, "-cJf")
    } else if ext(".gz") {
        compress("gzip", &path)
    } else if ext(".bz2") {
        compress("bzip2", &path)
    } else if ext(".xz") {
        compress("xz", &path)
    } else if ext(".zip") {
        make_zip(&path)
    } else if [".jpg", ".jpeg", ".png", ".gif"].iter().any(|e| ext(e)) {
        let mut cmd = Command::new("convert");
        cmd.args(["-size", "8x8", "xc:red"]).arg(&path);
        run_tool(cmd, "convert (ImageMagick: apt-get install imagemagick)", &path)
    } else if [".wav", ".mp3", ".flac", ".ogg"].iter().any(|e| ext(e)) {
        ffmpeg(&path, "sine=duration=1", &[])
    } else if [".mp4", ".mkv", ".webm"].iter().any(|e| ext(e)) {
        ffmpeg(&path, "testsrc=duration=1:size=32x32", &["-pix_fmt", "yuv420p"])
    } else if ext(".csv") {
        fs::write(&path, FIXTURE_CSV)
    } else if ext(".tsv") {
        fs::write(&path, FIXTURE_TSV)
    } else if ext(".json") {
        fs::write(&path, FIXTURE_JSON)
    } else if ext(".awk") {
        fs::write(&path, "{ print $1 }\n")
    } else if ext(".sed") {
        fs::write(&path, "s/a/b/\n")
    } else if ext(".jq") {
        fs::write(&path, ".name\n")
    } else {
        fs::write(&path, FIXTURE_TEXT)
    }
}

/// Prepares an output word: creates its parent directory, and the directory
/// itself when the word ends in `/`.
pub(crate) fn make_output_parent(path: &Path) -> io::Result<()> {
    if ends_with_slash(path) {
        return fs::create_dir_all(path);
    }
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fs::create_dir_all(parent),
        _ => Ok(()),
    }
}

/// Makes `dir` a git repository with one commit of `a.txt` and `b.txt`,
/// then modifies `a.txt` and adds an untracked `c.txt`, so status, diff,
/// add and commit have something to do.  The repository has its own
/// `user.name` and `user.email`; the branch is `main`.
pub(crate) fn init_git_repo(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let git = |args: &[&str]| {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z");
        run_tool(cmd, "git (apt-get install git)", dir)
    };
    git(&["init", "-q", "-b", "main"])?;
    git(&["config", "user.name", "Posh Test"])?;
    git(&["config", "user.email", "posh-test@example.invalid"])?;
    git(&["config", "commit.gpgsign", "false"])?;
    write_pair(dir)?;
    git(&["add", "a.txt", "b.txt"])?;
    git(&["commit", "-q", "-m", "initial"])?;
    let mut a = fs::OpenOptions::new().append(true).open(dir.join("a.txt"))?;
    a.write_all(b"date 4\n")?;
    fs::write(dir.join("c.txt"), FIXTURE_TEXT)
}

fn ends_with_slash(p: &Path) -> bool {
    p.as_os_str().as_bytes().ends_with(b"/")
}

/// Writes `a.txt` and `b.txt` into `dir`.
fn write_pair(dir: &Path) -> io::Result<()> {
    fs::write(dir.join("a.txt"), FIXTURE_TEXT)?;
    fs::write(dir.join("b.txt"), FIXTURE_TEXT_B)
}

/// Runs a fixture tool; a missing tool or a failure is an error naming it.
fn run_tool(mut cmd: Command, tool: &str, target: &Path) -> io::Result<()> {
    let output = cmd.stdin(Stdio::null()).output().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            io::Error::new(e.kind(), format!("fixture {target:?} needs {tool}, which is not installed"))
        } else {
            io::Error::new(e.kind(), format!("fixture {target:?}: running {tool}: {e}"))
        }
    })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "fixture {target:?}: {tool} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// Writes the fixture text compressed by `tool -c` to `path`.
fn compress(tool: &str, path: &Path) -> io::Result<()> {
    let out = File::create(path)?;
    let mut child =
        Command::new(tool).arg("-c").stdin(Stdio::piped()).stdout(out).stderr(Stdio::piped()).spawn().map_err(|e| {
            io::Error::new(e.kind(), format!("fixture {path:?} needs {tool}, which could not run: {e}"))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(FIXTURE_TEXT.as_bytes())?;
    }
    let output = child.wait_with_output()?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "fixture {path:?}: {tool} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// A scratch directory holding `input/a.txt` and `input/b.txt`.
fn staged_input() -> io::Result<tempfile::TempDir> {
    let stage = tempfile::tempdir()?;
    let input = stage.path().join("input");
    fs::create_dir(&input)?;
    write_pair(&input)?;
    Ok(stage)
}

fn make_tar(path: &Path, flags: &str) -> io::Result<()> {
    let stage = staged_input()?;
    let mut cmd = Command::new("tar");
    cmd.arg(flags).arg(path).arg("-C").arg(stage.path()).arg("input");
    run_tool(cmd, "tar", path)
}

fn make_zip(path: &Path) -> io::Result<()> {
    let stage = staged_input()?;
    // zip adds to an existing archive; start afresh.
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut cmd = Command::new("zip");
    cmd.args(["-q", "-r"]).arg(path).arg("input").current_dir(stage.path());
    run_tool(cmd, "zip (apt-get install zip)", path)
}

fn ffmpeg(path: &Path, source: &str, extra: &[&str]) -> io::Result<()> {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", source])
        .args(extra)
        .arg(path);
    run_tool(cmd, "ffmpeg (apt-get install ffmpeg)", path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    /// A canonical temporary directory holding `a.txt`.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonicalize");
        fs::write(root.join("a.txt"), FIXTURE_TEXT).expect("write a.txt");
        (dir, root)
    }

    fn run(argv: &[&str], cwd: &Path) -> Trace {
        let env = [("LC_ALL".to_owned(), "C".to_owned())];
        let t = trace(&s(argv), cwd, Path::new("/dev/null"), &env).expect("trace");
        assert!(t.status.success(), "{argv:?} failed: {}", String::from_utf8_lossy(&t.stderr));
        t
    }

    fn user(t: &Trace) -> Vec<(PathBuf, AccessMode)> {
        t.user_accesses().map(|a| (a.path.clone(), a.mode)).collect()
    }

    fn has(t: &Trace, path: &Path, mode: AccessMode) -> bool {
        t.accesses.iter().any(|a| a.path == path && a.mode == mode)
    }

    #[test]
    fn cat_reads_the_absolute_file() {
        let (_d, root) = scratch();
        let t = run(&["cat", "a.txt"], &root);
        assert_eq!(t.stdout, FIXTURE_TEXT.as_bytes());
        assert_eq!(user(&t), vec![(root.join("a.txt"), AccessMode::Read)]);
        let a = t.user_accesses().next().expect("one access");
        assert_eq!(a.syscall, "openat");
        assert!(a.raw.contains("a.txt"), "{}", a.raw);
    }

    #[test]
    fn shell_redirection_writes() {
        let (_d, root) = scratch();
        let t = run(&["sh", "-c", "echo x > out.txt"], &root);
        assert_eq!(user(&t), vec![(root.join("out.txt"), AccessMode::Write)]);
    }

    #[test]
    fn cd_in_a_shell_moves_relative_paths() {
        let (_d, root) = scratch();
        fs::create_dir(root.join("sub")).expect("mkdir");
        fs::write(root.join("sub/a.txt"), "x\n").expect("write");
        let t = run(&["sh", "-c", "cd sub && cat a.txt && (cat ../a.txt)"], &root);
        let u = user(&t);
        assert!(u.contains(&(root.join("sub/a.txt"), AccessMode::Read)), "{u:?}");
        assert!(u.contains(&(root.join("a.txt"), AccessMode::Read)), "{u:?}");
        assert_eq!(u.len(), 2, "{u:?}");
    }

    #[test]
    fn non_at_calls_follow_chdir() {
        let (_d, root) = scratch();
        // mkdir -p uses mkdir() relative to a chdir'd and fchdir'd cwd.
        let t = run(&["mkdir", "-p", "x/y/z"], &root);
        let u = user(&t);
        for d in ["x", "x/y", "x/y/z"] {
            assert!(u.contains(&(root.join(d), AccessMode::Write)), "{d}: {u:?}");
        }
        assert!(root.join("x/y/z").is_dir());
    }

    #[test]
    fn failed_opens_are_ignored() {
        let (_d, root) = scratch();
        let env = [];
        let t = trace(&s(&["cat", "missing.txt"]), &root, Path::new("/dev/null"), &env).expect("trace");
        assert!(!t.status.success());
        assert!(!t.stderr.is_empty());
        assert!(t.accesses.iter().all(|a| !a.path.ends_with("missing.txt")), "{:?}", t.accesses);
    }

    #[test]
    fn odd_names_are_unescaped() {
        let (_d, root) = scratch();
        let name = "a b\"c'd\\e\tf>g<h,i(j).txt";
        fs::write(root.join(name), "x\n").expect("write");
        let t = run(&["cat", name], &root);
        assert_eq!(user(&t), vec![(root.join(name), AccessMode::Read)]);
        let bytes = OsString::from_vec(b"caf\xe9 \xff\n.txt".to_vec());
        fs::write(root.join(&bytes), "x\n").expect("write");
        // argv is String, so a non-UTF-8 name comes in through a glob.
        let t = run(&["sh", "-c", "cp caf*.txt copy.txt"], &root);
        let u = user(&t);
        assert!(u.contains(&(root.join(&bytes), AccessMode::Read)), "{u:?}");
        assert!(u.contains(&(root.join("copy.txt"), AccessMode::Write)), "{u:?}");
    }

    #[test]
    fn sort_reads_input_and_writes_output() {
        let (_d, root) = scratch();
        fs::write(root.join("in.txt"), "b\na\n").expect("write");
        let t = run(&["sort", "-o", "out.txt", "in.txt"], &root);
        let u = user(&t);
        assert!(u.contains(&(root.join("in.txt"), AccessMode::Read)), "{u:?}");
        assert!(u.contains(&(root.join("out.txt"), AccessMode::Write)), "{u:?}");
        assert!(u.iter().all(|(p, _)| p == &root.join("in.txt") || p == &root.join("out.txt")), "{u:?}");
    }

    #[test]
    fn mv_deletes_source_and_writes_target() {
        let (_d, root) = scratch();
        let t = run(&["mv", "a.txt", "b.txt"], &root);
        assert!(has(&t, &root.join("a.txt"), AccessMode::Delete), "{t:?}");
        assert!(has(&t, &root.join("b.txt"), AccessMode::Write), "{t:?}");
        let r = t.accesses.iter().find(|a| a.mode == AccessMode::Delete).expect("delete");
        assert!(r.syscall.starts_with("rename"), "{}", r.syscall);
    }

    #[test]
    fn rm_ln_and_directories() {
        let (_d, root) = scratch();
        fs::create_dir(root.join("d")).expect("mkdir");
        fs::write(root.join("d/x"), "x").expect("write");
        let t = run(&["sh", "-c", "ln a.txt hard && ln -s a.txt soft && rm -r d && ls"], &root);
        assert!(has(&t, &root.join("hard"), AccessMode::Write), "{t:?}");
        assert!(has(&t, &root.join("a.txt"), AccessMode::Read), "{t:?}");
        assert!(has(&t, &root.join("soft"), AccessMode::Write), "{t:?}");
        assert!(has(&t, &root.join("d/x"), AccessMode::Delete), "{t:?}");
        assert!(has(&t, &root.join("d"), AccessMode::Delete), "{t:?}");
        // ls lists the working directory: a Read of the directory itself.
        assert!(has(&t, &root, AccessMode::Read), "{t:?}");
    }

    #[test]
    fn python_rename_and_relative_dirfd() {
        let (_d, root) = scratch();
        if find_in_path("python3", &std::env::var_os("PATH").unwrap_or_default()).is_none() {
            return;
        }
        fs::create_dir(root.join("d")).expect("mkdir");
        let prog = "import os\n\
fd = os.open('d', os.O_RDONLY | os.O_DIRECTORY)\n\
f = os.open('new.txt', os.O_WRONLY | os.O_CREAT, dir_fd=fd)\n\
os.close(f)\n\
os.chdir('d')\n\
os.rename('new.txt', '../moved.txt')\n\
os.unlink('../a.txt')\n\
os.mkdir('e')\n\
os.rmdir('e')\n";
        let t = run(&["python3", "-I", "-S", "-c", prog], &root);
        let u = user(&t);
        let want = [
            (root.join("d"), AccessMode::Read),
            (root.join("d/new.txt"), AccessMode::Write),
            (root.join("d/new.txt"), AccessMode::Delete),
            (root.join("moved.txt"), AccessMode::Write),
            (root.join("a.txt"), AccessMode::Delete),
            (root.join("d/e"), AccessMode::Write),
            (root.join("d/e"), AccessMode::Delete),
        ];
        for w in &want {
            assert!(u.contains(w), "{w:?} missing from {u:?}");
        }
    }

    #[test]
    fn pipelines_and_background_jobs() {
        let (_d, root) = scratch();
        fs::create_dir(root.join("sub")).expect("mkdir");
        let t = run(&["sh", "-c", "(cd sub; cat ../a.txt > o1 &) ; cat a.txt | (cd sub && cat > o2); wait"], &root);
        let u = user(&t);
        assert!(u.contains(&(root.join("sub/o2"), AccessMode::Write)), "{u:?}");
        assert!(u.contains(&(root.join("a.txt"), AccessMode::Read)), "{u:?}");
        // The background job may still be running when sh exits, but strace
        // -f waits for it.
        assert!(u.contains(&(root.join("sub/o1"), AccessMode::Write)), "{u:?}");
    }

    #[test]
    fn concurrent_children_keep_their_own_cwd() {
        let (_d, root) = scratch();
        fs::create_dir(root.join("sub")).expect("mkdir");
        let t = run(
            &[
                "sh",
                "-c",
                "for i in 1 2 3 4 5 6 7 8; do (cd sub && cat ../a.txt > o$i) & done; \
                 cat a.txt > top; wait",
            ],
            &root,
        );
        let u = user(&t);
        for i in 1..=8 {
            let o = root.join(format!("sub/o{i}"));
            assert!(u.contains(&(o, AccessMode::Write)), "o{i}: {u:?}");
        }
        assert!(u.contains(&(root.join("top"), AccessMode::Write)), "{u:?}");
        let stray: Vec<_> = u
            .iter()
            .filter(|(p, _)| !(p == &root.join("a.txt") || p == &root.join("top") || p.starts_with(root.join("sub"))))
            .collect();
        assert!(stray.is_empty(), "{stray:?}");
    }

    #[test]
    fn stdin_env_and_path() {
        let (_d, root) = scratch();
        let env = [("GREETING".to_owned(), "hi there".to_owned())];
        let t = trace(&s(&["sh", "-c", "echo \"$GREETING\"; env | sort; cat"]), &root, &root.join("a.txt"), &env)
            .expect("trace");
        let out = String::from_utf8_lossy(&t.stdout);
        assert!(out.starts_with("hi there\n"), "{out}");
        assert!(out.contains("PATH="), "{out}");
        assert!(!out.contains("HOME="), "{out}");
        assert!(out.ends_with(FIXTURE_TEXT), "{out}");
        // The stdin file was opened by us, not by the command.
        assert!(t.user_accesses().next().is_none(), "{:?}", t.accesses);
    }

    #[test]
    fn exit_status_is_the_commands() {
        let (_d, root) = scratch();
        let t = trace(&s(&["sh", "-c", "exit 3"]), &root, Path::new("/dev/null"), &[]).expect("trace");
        assert_eq!(t.status.code(), Some(3));
    }

    #[test]
    fn unknown_command_is_an_error() {
        let (_d, root) = scratch();
        let e = trace(&s(&["no-such-command-posh"]), &root, Path::new("/dev/null"), &[]).expect_err("must fail");
        assert!(e.to_string().contains("could not start"), "{e}");
        let e = trace(&[], &root, Path::new("/dev/null"), &[]).expect_err("empty");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn missing_strace_is_a_clear_error() {
        let (_d, root) = scratch();
        let env = [("PATH".to_owned(), root.display().to_string())];
        let e = trace(&s(&["true"]), &root, Path::new("/dev/null"), &env).expect_err("no strace on this PATH");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("strace is not installed"), "{e}");
    }

    #[test]
    fn hung_command_is_killed() {
        let (_d, root) = scratch();
        let start = Instant::now();
        let e = trace_with_timeout(
            &s(&["sh", "-c", "sleep 30 & sleep 30"]),
            &root,
            Path::new("/dev/null"),
            &[],
            Duration::from_millis(500),
        )
        .expect_err("must time out");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(TRACE_TIMEOUT >= Duration::from_secs(30));
    }

    #[test]
    fn parses_split_lines_and_decorations() {
        let log = "\
100   openat(AT_FDCWD</w>, \"a b\\\"c\\303\\251.txt\", O_RDONLY <unfinished ...>
101   openat(3</w/d\\76x>, \"in\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 4</w/d\\76x/in>
100   <... openat resumed>)             = 5</w/a b\\\"c\\303\\251.txt>
101   openat(AT_FDCWD, \"../miss\", O_RDONLY) = -1 ENOENT (No such file or directory)
100   chdir(\"sub\" <unfinished ...>
101   +++ exited with 0 +++
100   <... chdir resumed>)              = 0
100   vfork( <unfinished ...>
102   openat(AT_FDCWD, \"x/./y/../z\", O_RDONLY|O_DIRECTORY) = 3</w/sub/x/z>
100   <... vfork resumed>)              = 102
100   openat2(AT_FDCWD, \"q\", {flags=O_RDWR|O_CLOEXEC, resolve=0}, 24) = 3
100   renameat2(AT_FDCWD, \"q\", 7</e>, \"r\", RENAME_EXCHANGE) = 0
100   unlink(\"/abs//p\") = 0
100   execve(\"/bin/x\", [\"x\"], 0x0 /* 0 vars */) = ?
";
        let records = parse_log(log);
        assert_eq!(records.len(), 10, "{records:#?}");
        assert_eq!(records[0].pid, 100);
        assert_eq!(records[0].result, Some(5));
        assert_eq!(records[2].result, Some(-1));
        assert_eq!(records[9].result, None);
        assert_eq!(records[7].args.len(), 5);
        let got: Vec<(PathBuf, AccessMode)> =
            accesses(&records, Path::new("/w")).into_iter().map(|a| (a.path, a.mode)).collect();
        let p = |s: &str| PathBuf::from(s);
        let odd = bytes_to_path(b"/w/a b\"c\xc3\xa9.txt".to_vec());
        assert_eq!(
            got,
            vec![
                (odd, AccessMode::Read),
                (p("/w/d>x/in"), AccessMode::Write),
                // pid 102 inherited /w/sub from its parent's vfork.
                (p("/w/sub/x/z"), AccessMode::Read),
                (p("/w/sub/q"), AccessMode::Write),
                (p("/w/sub/q"), AccessMode::Write),
                (p("/e/r"), AccessMode::Write),
                (p("/abs/p"), AccessMode::Delete),
            ]
        );
    }

    #[test]
    fn unescape_and_helpers() {
        assert_eq!(unescape(r#"a\"b\\c\n\t\101\x42\0"#), b"a\"b\\c\n\tAB\0");
        assert_eq!(string_arg("\"x y\""), Some(PathBuf::from("x y")));
        assert_eq!(string_arg("NULL"), None);
        assert_eq!(dir_arg("AT_FDCWD"), Dir::Cwd(None));
        assert_eq!(dir_arg("AT_FDCWD</t>"), Dir::Cwd(Some(PathBuf::from("/t"))));
        assert_eq!(dir_arg("3<socket:[9]>"), Dir::Fd(None));
        assert_eq!(normalize(Path::new("/a/./b/../../../c//d/")), p("/c/d"));
        assert!(open_writes("O_WRONLY|O_CREAT|O_TRUNC"));
        assert!(open_writes("{flags=O_RDONLY|O_APPEND, resolve=0}"));
        assert!(!open_writes("O_RDONLY|O_CLOEXEC|O_DIRECTORY"));
        assert!(!open_writes("O_RDONLY|O_WRONLYX"));
        fn p(s: &str) -> PathBuf {
            PathBuf::from(s)
        }
    }

    #[test]
    fn system_paths() {
        for yes in [
            "/etc/ld.so.cache",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/lib/locale/C.utf8/LC_CTYPE",
            "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache",
            "/usr/share/locale/locale.alias",
            "/proc/self/status",
            "/dev/null",
            "/etc/localtime",
            "/usr/share/zoneinfo/UTC",
            "/etc/passwd",
            "/usr/bin/zcat",
            "/bin/sh",
            "/etc/ImageMagick-6/policy.xml",
            "/etc/fonts/fonts.conf",
            "/etc/gitconfig",
            "/usr/share/misc/magic.mgc",
            "/usr/share/terminfo/x/xterm",
            "/etc/mime.types",
            "/etc/resolv.conf",
            "/etc/ssl/certs/ca-certificates.crt",
        ] {
            assert!(is_system_path(Path::new(yes)), "{yes}");
        }
        for no in [
            "/tmp/x/a.txt",
            "/tmp",
            "/home/u/.bashrc",
            "/etc/hostname",
            "/etc/ssl2/x",
            "/usr/share/misc/other",
            "/usr/library/x",
            "/libx/y",
            "/etc/passwd.bak",
            "a.txt",
        ] {
            assert!(!is_system_path(Path::new(no)), "{no}");
        }
    }

    fn check(tool: &str, args: &[&str], file: &Path) {
        let out = Command::new(tool).args(args).arg(file).output().expect(tool);
        assert!(out.status.success(), "{tool} {args:?} {file:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn head(p: &Path, n: usize) -> Vec<u8> {
        let mut b = fs::read(p).expect("read fixture");
        b.truncate(n);
        b
    }

    #[test]
    fn text_fixtures() {
        let (_d, root) = scratch();
        let make = |w: &str| {
            let p = root.join(w);
            make_input_fixture(&p).expect(w);
            p
        };
        let read = |w: &str| fs::read_to_string(make(w)).expect(w);
        assert_eq!(read("deep/er/in.txt"), FIXTURE_TEXT);
        assert_eq!(read("notes"), FIXTURE_TEXT);
        assert_eq!(read("x.weird"), FIXTURE_TEXT);
        assert_eq!(read("t.csv"), "a,b,c\n1,2,3\n4,5,6\n");
        assert_eq!(read("t.tsv"), "a\tb\tc\n1\t2\t3\n4\t5\t6\n");
        assert_eq!(read("p.awk"), "{ print $1 }\n");
        assert_eq!(read("p.sed"), "s/a/b/\n");
        assert_eq!(read("p.jq"), ".name\n");
        let json = read("t.json");
        assert_eq!(json.lines().count(), 3);
        assert!(json.starts_with("{\"name\":\"a\",\"n\":1,\"tags\":[\"x\"]}\n"));
        check("jq", &["-e", "-s", "length == 3"], &make("u.json"));
        let mut lines: Vec<&str> = FIXTURE_TEXT.lines().collect();
        lines.sort_unstable();
        assert_eq!(lines.join("\n") + "\n", FIXTURE_TEXT);
        let dir = make("data/");
        assert!(dir.join("a.txt").is_file() && dir.join("b.txt").is_file());
    }

    #[test]
    fn archive_fixtures() {
        let (_d, root) = scratch();
        let make = |w: &str| {
            let p = root.join(w);
            make_input_fixture(&p).expect(w);
            p
        };
        for (w, tool) in [("a.gz", "gzip"), ("a.bz2", "bzip2"), ("a.xz", "xz")] {
            let p = make(w);
            check(tool, &["-t"], &p);
            let out = Command::new(tool).arg("-dc").arg(&p).output().expect(tool);
            assert_eq!(out.stdout, FIXTURE_TEXT.as_bytes(), "{w}");
        }
        for w in ["a.tar", "a.tar.gz", "a.tgz", "a.tar.bz2", "a.tar.xz"] {
            let p = make(w);
            let out = Command::new("tar").arg("-tf").arg(&p).output().expect("tar");
            assert!(out.status.success(), "{w}");
            let list = String::from_utf8_lossy(&out.stdout);
            assert!(
                list.lines().any(|l| l == "input/a.txt") && list.lines().any(|l| l == "input/b.txt"),
                "{w}: {list}"
            );
        }
        // Making it twice replaces it rather than appending.
        make("a.zip");
        let p = make("a.zip");
        let out = Command::new("unzip").arg("-Z1").arg(&p).output();
        match out {
            Ok(out) => {
                let list = String::from_utf8_lossy(&out.stdout);
                assert!(list.lines().any(|l| l == "input/a.txt"), "{list}");
            }
            Err(_) => assert_eq!(head(&p, 4), b"PK\x03\x04"),
        }
    }

    #[test]
    fn media_fixtures() {
        let (_d, root) = scratch();
        let make = |w: &str| {
            let p = root.join(w);
            make_input_fixture(&p).expect(w);
            p
        };
        assert_eq!(head(&make("i.png"), 8), b"\x89PNG\r\n\x1a\n");
        assert_eq!(head(&make("i.jpg"), 2), b"\xff\xd8");
        assert_eq!(head(&make("i.jpeg"), 2), b"\xff\xd8");
        assert_eq!(head(&make("i.gif"), 4), b"GIF8");
        assert_eq!(head(&make("s.wav"), 4), b"RIFF");
        assert_eq!(head(&make("s.flac"), 4), b"fLaC");
        assert_eq!(head(&make("s.ogg"), 4), b"OggS");
        let mp3 = head(&make("s.mp3"), 3);
        assert!(mp3 == b"ID3" || mp3[0] == 0xff, "{mp3:?}");
        assert_eq!(&head(&make("v.mp4"), 8)[4..], b"ftyp");
        assert_eq!(head(&make("v.mkv"), 4), b"\x1a\x45\xdf\xa3");
        assert_eq!(head(&make("v.webm"), 4), b"\x1a\x45\xdf\xa3");
        for w in ["s.wav", "s.mp3", "v.mp4"] {
            check("ffprobe", &["-v", "error", "-show_entries", "format=duration"], &root.join(w));
        }
    }

    #[test]
    fn missing_tool_is_named() {
        let e =
            run_tool(Command::new("no-such-tool-posh"), "no-such-tool-posh (apt-get install it)", Path::new("x.png"))
                .expect_err("missing");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("no-such-tool-posh"), "{e}");
        let e = run_tool(Command::new("false"), "false", Path::new("x")).expect_err("fails");
        assert!(e.to_string().contains("false failed"), "{e}");
    }

    #[test]
    fn output_parents() {
        let (_d, root) = scratch();
        make_output_parent(&root.join("o/p/out.txt")).expect("parent");
        assert!(root.join("o/p").is_dir() && !root.join("o/p/out.txt").exists());
        make_output_parent(&root.join("q/r/")).expect("dir");
        assert!(root.join("q/r").is_dir());
        make_output_parent(Path::new("plain.txt")).expect("no parent");
    }

    #[test]
    fn git_repo_fixture() {
        let (_d, root) = scratch();
        let repo = root.join("repo");
        init_git_repo(&repo).expect("git repo");
        let out = Command::new("git").args(["status", "--porcelain"]).current_dir(&repo).output().expect("git status");
        let status = String::from_utf8_lossy(&out.stdout);
        assert!(status.contains(" M a.txt"), "{status}");
        assert!(status.contains("?? c.txt"), "{status}");
        assert!(!status.contains("b.txt"), "{status}");
        let out = Command::new("git").args(["log", "--format=%an %s"]).current_dir(&repo).output().expect("git log");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "Posh Test initial\n");
        // Traced git status touches only the repository and system files.
        let t = run(&["git", "status", "--short"], &repo);
        let stray: Vec<_> = t.user_accesses().filter(|a| !a.path.starts_with(&repo)).collect();
        assert!(stray.is_empty(), "{stray:#?}");
    }
}
