//! The operating system's half of confinement. The proxy checks a request's file words against
//! the export root, but a command may reach files its words do not name (awk's `print > file`,
//! `system()`, GNU sed's `w`): so every command's process restricts itself with Landlock
//! (read-only system directories, its own /proc entries but no other process's, read-write
//! export root and the job's own temporary directory, where no device node may be made; no ioctl on a device it opens, so no keystrokes pushed into a
//! terminal; no signal to and no abstract socket of a process outside its own domain) before it
//! execs, and the restriction is inherited by everything the command starts. It also
//! leaves the proxy's session, and with it any controlling terminal. The proxy builds the
//! ruleset once per job ([`Confinement::new`]); the new process only applies it
//! ([`Confinement::enter`]: a few system calls), so no launcher program is exec'd first.
//!
//! Commands start as `posix_spawn` starts them ([`Ready::start`], called by the job's supervisor,
//! see `supervisor`): the child shares the proxy's memory until it execs (`CLONE_VM |
//! CLONE_VFORK`) instead of copying its page tables, as `fork` does (about 1 ms of a small remote
//! pipeline's 5.8 ms on loopback), with the confinement between clone and exec, which
//! `posix_spawn` has no room for.
//!
//! This module, `supervisor`, `memory` and `privileges` (the user database, and becoming a user
//! on every thread) are the only places of the proxy with `unsafe` code (the workspace denies it
//! elsewhere): here the start of a command's process, and the two Landlock system calls that
//! have no safe wrapper usable between clone and exec.
#![allow(unsafe_code)]

use std::ffi::{CString, c_char, c_int, c_void};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd as _, IntoRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

/// V5 adds ioctls on devices, V6 the scopes; an older kernel enforces what it knows (and
/// `check_enforced` says the sandbox is partial).
const LANDLOCK_ABI: ABI = ABI::V6;
/// What commands may read (and run) outside the export. Not /proc: a command reads its own
/// process's entries (`Confinement::enter`) and the system-wide files of `PROC_READ`, never
/// another process's (its command line, its status: the proxy's, another client's job's). Not
/// all of /etc (`ETC_READ`), nor of /dev (`DEVICES_*`).
const SYSTEM_READ: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt"];
/// What of /etc commands read, each entry for a reason (SECURITY.md, "What a job may read in
/// /etc"); the rest (shadow, gshadow, the ssh host keys, sudoers, ssl/private, the machine's
/// services' own configuration) is no job's business. Rules follow a symbolic link to what it
/// names (resolv.conf into /run); what this system lacks grants nothing.
const ETC_READ: &[&str] = &[
    // The user and host databases: `ls -l`'s owners, `id`, git's committer, name lookups.
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/networks",
    "/etc/rpc",
    // The dynamic linker: where libraries are, and what it preloads.
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    // Time and locale: `date` without TZ, locale names (/usr/share/locale/locale.alias links
    // here on Debian).
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/locale.conf",
    "/etc/os-release",
    // git's system configuration and attributes.
    "/etc/gitconfig",
    "/etc/gitattributes",
    // Certificates for TLS (git over https): the public ones only, never ssl/private.
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust/extracted",
    "/etc/crypto-policies/back-ends",
    // ssh's client configuration and the host keys it trusts (git over ssh), not the host's own.
    "/etc/ssh/ssh_config",
    "/etc/ssh/ssh_config.d",
    "/etc/ssh/ssh_known_hosts",
    // file's local magic; ImageMagick's policy, delegates and types; fonts it draws with.
    "/etc/magic",
    "/etc/magic.mime",
    "/etc/ImageMagick-6",
    "/etc/ImageMagick-7",
    "/etc/fonts",
    // libselinux (linked by coreutils) reads it at load.
    "/etc/selinux/config",
];
/// The system-wide files of /proc that programs read (memory, processors, load, mounts' kinds).
const PROC_READ: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/version",
    "/proc/filesystems",
];
/// Kernel settings, read (`sysctl`, a program sizing itself).
const PROC_DIRS_READ: &[&str] = &["/proc/sys"];
/// Devices commands read: randomness (`shuf`, `sort -R`, TLS).
const DEVICES_READ: &[&str] = &["/dev/random", "/dev/urandom"];
/// Devices commands read and write as a matter of course (`/dev/tty` opens only for a process
/// with a terminal, which no command has). No other device: not the console (`/dev/vcs*`), the
/// kernel's log (`/dev/kmsg`), disks, memory or another terminal.
const DEVICES_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The ruleset for a job's commands: the export `root` and the job's `tmp` directory, and what
/// they need of the system.
fn ruleset(root: &Path, tmp: &Path) -> Result<RulesetCreated, landlock::RulesetError> {
    let all = AccessFs::from_all(LANDLOCK_ABI);
    // Everything in the export and the job's directory, except making device nodes (a job of a
    // proxy running as root could otherwise reach any device through one).
    let own = all & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)?
        .create()?;
    for (fd, access) in system_rules() {
        ruleset = ruleset.add_rule(PathBeneath::new(fd, *access))?;
    }
    for path in [root, tmp] {
        if let Ok(fd) = PathFd::new(path) {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, own))?;
        }
    }
    Ok(ruleset)
}

/// The system's directories and devices with what a job may do there, opened once per process
/// rather than for every job's ruleset. A directory this system lacks (/lib32) grants nothing.
fn system_rules() -> &'static [(PathFd, BitFlags<AccessFs>)] {
    static RULES: std::sync::OnceLock<Vec<(PathFd, BitFlags<AccessFs>)>> = std::sync::OnceLock::new();
    RULES.get_or_init(|| {
        let read = AccessFs::from_read(LANDLOCK_ABI);
        // Files take file rights only (no ReadDir), or Landlock would only partly apply the rule.
        let read_file = BitFlags::from(AccessFs::ReadFile);
        let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        let system = SYSTEM_READ.iter().chain(PROC_DIRS_READ).map(|p| (*p, read));
        let files = PROC_READ.iter().chain(DEVICES_READ).map(|p| (*p, read_file));
        let rules = system.chain(files).chain(DEVICES_WRITE.iter().map(|p| (*p, device)));
        let mut opened: Vec<_> = rules.filter_map(|(path, access)| Some((PathFd::new(path).ok()?, access))).collect();
        // In /etc, a directory is read whole and a file as a file (what it is, as opened).
        for path in ETC_READ {
            let Ok(fd) = PathFd::new(path) else { continue };
            let is_dir =
                rustix::fs::fstat(&fd).is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir());
            opened.push((fd, if is_dir { read } else { read_file }));
        }
        opened
    })
}

/// What confines the commands of one job.
#[derive(Debug)]
pub struct Confinement {
    /// The Landlock ruleset; `None` on a kernel without Landlock (the proxy warned at start).
    ruleset: Option<OwnedFd>,
}

impl Confinement {
    pub fn new(root: &Path, tmp: &Path) -> Result<Confinement, landlock::RulesetError> {
        Ok(Confinement { ruleset: ruleset(root, tmp)?.into() })
    }

    /// `launch` made ready to start (see [`Ready::start`]): every pointer its process needs
    /// until exec, made now, as the process that starts it may not allocate.
    pub(super) fn ready(&self, launch: Launch) -> Ready<'_> {
        let pointers = |strings: &[CString]| -> Vec<*const c_char> {
            strings.iter().map(|s| s.as_ptr()).chain([ptr::null()]).collect()
        };
        let Launch { program, argv, env, cwd, fds } = launch;
        let (argv_pointers, env_pointers) = (pointers(&argv), pointers(&env));
        // Its descriptors are the starter's to close once the command has its copies.
        let fds: Vec<RawFd> = fds.into_iter().map(|fd| fd.into_raw_fd()).collect();
        let handoff = Handoff {
            confinement: self,
            program: program.as_ptr(),
            argv: argv_pointers.as_ptr(),
            envp: env_pointers.as_ptr(),
            cwd: cwd.as_ptr(),
            fds: fds.as_ptr(),
            fd_count: fds.len(),
            errno: AtomicI32::new(0),
        };
        Ready {
            handoff,
            _strings: (program, argv, env, cwd),
            _pointers: (argv_pointers, env_pointers),
            fds,
            fds_closed: AtomicBool::new(false),
        }
    }

    /// Confines the calling process, which is a command's, started and about to exec: it leads a
    /// session of its own, without a terminal (its process group has its pid for id), dies with
    /// the job's supervisor, its parent (which, alive, kills everything of the job when the job
    /// or the proxy ends, see `supervisor`), may not gain privileges, and is restricted by the
    /// ruleset. Only system calls, as the time between clone and exec allows (no allocation, no
    /// lock).
    fn enter(&self) -> std::io::Result<()> {
        rustix::process::setsid()?;
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
        // The proxy is not dumpable (`forbid_inspection`); a job of a proxy running as root would
        // still read its environment, and other processes' (other clients' jobs), with any of
        // CAP_SYS_PTRACE, CAP_SYS_ADMIN or CAP_PERFMON (the last two grant reading a process as
        // /proc/PID/environ does): not after exec without them in the bounding set. A proxy that
        // is not root cannot drop them, nor has them.
        for inspecting in INSPECTING_CAPABILITIES {
            let _ = rustix::thread::remove_capability_from_bounding_set(inspecting);
        }
        self.allow_own_proc()?;
        self.restrict()
    }

    /// Adds the calling process's own /proc entries (read) to the ruleset before it applies it:
    /// a command reads its `/proc/self` (its status, its mounts) and no other process's. What it
    /// starts in turn has no entries of its own to read (see SECURITY.md). Only system calls.
    #[expect(clippy::disallowed_methods, reason = "the command's own /proc entry, by a fixed name")]
    fn allow_own_proc(&self) -> std::io::Result<()> {
        let Some(ruleset) = &self.ruleset else { return Ok(()) };
        let flags = rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
        let own = rustix::fs::open(c"/proc/self", flags, rustix::fs::Mode::empty())?;
        let rule = PathBeneathAttr {
            allowed_access: (AccessFs::ReadFile | AccessFs::ReadDir).bits(),
            parent_fd: own.as_raw_fd(),
        };
        // SAFETY: landlock_add_rule(2) reads `rule`, laid out as the kernel's struct, and takes
        // descriptors this process holds; it writes no memory of ours.
        let done = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                LANDLOCK_RULE_PATH_BENEATH,
                ptr::from_ref(&rule),
                0u32,
            )
        };
        if done != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Confines the calling thread: one of the proxy's own, which does a job's file work and
    /// then ends (see `job::FileWork`). A thread's `no_new_privs` and Landlock domain are its
    /// own, so the proxy's other threads stay as they were.
    pub fn enter_thread(&self) -> std::io::Result<()> {
        self.restrict()
    }

    /// `no_new_privs` (which Landlock requires of an unprivileged caller) and the ruleset, on the
    /// calling thread. Only system calls, so that `enter` may use it between clone and exec.
    fn restrict(&self) -> std::io::Result<()> {
        rustix::thread::set_no_new_privs(true)?;
        if let Some(ruleset) = &self.ruleset {
            // SAFETY: landlock_restrict_self(2) takes a ruleset descriptor, which this one is
            // (kept open by `self`), and flags 0; it touches no memory of ours.
            let done = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
            if done != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// `struct landlock_path_beneath_attr` (packed, as in `linux/landlock.h`).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: RawFd,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const LANDLOCK_RULE_PATH_BENEATH: c_int = 1;

/// The child's stack until it execs: what `enter`, `dup2` and `execve` need, with room to spare.
const CHILD_STACK: usize = 64 * 1024;

/// A command ready to start: every string the child needs is made beforehand, as the child, which
/// shares the proxy's memory until it execs, may not allocate.
#[derive(Debug)]
pub struct Launch {
    /// The program's path, found on the proxy's `PATH`.
    program: CString,
    argv: Vec<CString>,
    /// `NAME=value`, the whole environment.
    env: Vec<CString>,
    cwd: CString,
    /// Its stdin, stdout, stderr and any further descriptors (3, 4, ...), in order; each one a
    /// descriptor above the last of them, so that no `dup2` in the child overwrites another.
    fds: Vec<OwnedFd>,
}

impl Launch {
    pub fn new<'a>(
        program: &Path,
        argv: &[String],
        env: impl IntoIterator<Item = (&'a str, &'a std::ffi::OsStr)>,
        cwd: &Path,
        stdio: [OwnedFd; 3],
        inherited: Vec<OwnedFd>,
    ) -> std::io::Result<Launch> {
        let c_string = |bytes: &[u8]| {
            CString::new(bytes)
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in a word"))
        };
        let env = env
            .into_iter()
            .map(|(name, value)| c_string(&[name.as_bytes(), b"=", value.as_bytes()].concat()))
            .collect::<Result<_, _>>()?;
        Ok(Launch {
            program: c_string(program.as_os_str().as_bytes())?,
            argv: argv.iter().map(|word| c_string(word.as_bytes())).collect::<Result<_, _>>()?,
            env,
            cwd: c_string(cwd.as_os_str().as_bytes())?,
            fds: lifted(stdio.into_iter().chain(inherited).collect())?,
        })
    }
}

/// `fds` with each one that lies below their count moved above it (the others are kept).
fn lifted(fds: Vec<OwnedFd>) -> std::io::Result<Vec<OwnedFd>> {
    let count = fds.len() as RawFd;
    let lift = |fd: OwnedFd| match fd.as_raw_fd() < count {
        true => Ok(rustix::io::fcntl_dupfd_cloexec(&fd, count)?),
        false => Ok(fd),
    };
    fds.into_iter().map(lift).collect()
}

/// A command ready to start ([`Confinement::ready`]), owning what its process reads until exec
/// and the descriptors it gets, which [`Ready::start`] closes once the command has its copies
/// (or dropping it, if it never started).
#[derive(Debug)]
pub(super) struct Ready<'a> {
    handoff: Handoff<'a>,
    /// What `handoff` points to: heap buffers, which stay where they are when moved here.
    _strings: (CString, Vec<CString>, Vec<CString>, CString),
    _pointers: (Vec<*const c_char>, Vec<*const c_char>),
    fds: Vec<RawFd>,
    fds_closed: AtomicBool,
}

impl Ready<'_> {
    /// Starts the command, confined, in a process sharing the caller's memory until it execs
    /// (`posix_spawn`'s way), on `stack`; then closes its descriptors here. Returns its pid
    /// (also its process group's and session's), or the errno of why it could not start (the
    /// program, the directory, the sandbox), as `exec` gave it. Only system calls and no
    /// allocation: the job's supervisor calls it (see `supervisor`), with every signal blocked,
    /// so that no handler runs in the child on the shared memory.
    pub(super) fn start(&self, stack: &mut ChildStack) -> Result<rustix::process::Pid, i32> {
        self.handoff.errno.store(0, Ordering::Relaxed);
        // SAFETY: the child runs `start_child` on `stack` with `handoff`, both alive until clone
        // returns, which is after the child exec'd or exited (CLONE_VFORK).
        let pid = unsafe {
            libc::clone(
                start_child,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                ptr::from_ref(&self.handoff).cast_mut().cast::<c_void>(),
            )
        };
        let clone_errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EAGAIN);
        self.close_fds();
        let Some(pid) = (pid > 0).then(|| rustix::process::Pid::from_raw(pid)).flatten() else {
            return Err(clone_errno);
        };
        match self.handoff.errno.load(Ordering::Relaxed) {
            0 => Ok(pid),
            errno => {
                let _ =
                    rustix::process::waitid(rustix::process::WaitId::Pid(pid), rustix::process::WaitIdOptions::EXITED);
                Err(errno)
            }
        }
    }

    /// Closes the command's descriptors, once: only its process (and what it starts) holds
    /// them after, so a pipe's reader sees its end when the command's writers are gone.
    fn close_fds(&self) {
        if !self.fds_closed.swap(true, Ordering::Relaxed) {
            for fd in &self.fds {
                // SAFETY: descriptors this `Ready` owns (taken from the launch's `OwnedFd`s) and
                // closes once.
                unsafe { libc::close(*fd) };
            }
        }
    }
}

impl Drop for Ready<'_> {
    fn drop(&mut self) {
        self.close_fds();
    }
}

/// The stack of a process that shares the proxy's memory (a command until it execs, a job's
/// supervisor): its own, as the thread that started it is only suspended (CLONE_VFORK).
#[derive(Debug)]
pub(super) struct ChildStack(Vec<MaybeUninit<u8>>);

impl ChildStack {
    pub(super) fn new() -> ChildStack {
        ChildStack(Vec::with_capacity(CHILD_STACK))
    }

    /// Where the stack starts (it grows down): one past its end, rounded down to the 16 bytes
    /// the ABI wants.
    pub(super) fn top(&mut self) -> *mut c_void {
        // SAFETY: one past the end of the allocation, which is `CHILD_STACK` long.
        let top = unsafe { self.0.as_mut_ptr().add(CHILD_STACK) };
        top.wrapping_sub(top as usize % 16).cast::<c_void>()
    }
}

/// What the child reads, and writes back when it cannot exec.
#[derive(Debug)]
struct Handoff<'a> {
    confinement: &'a Confinement,
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    /// What becomes descriptor 0, 1, 2, ... (see `Launch::fds`).
    fds: *const RawFd,
    fd_count: usize,
    /// Why the child could not exec; 0 when it did.
    errno: AtomicI32,
}

/// The child's first and last function: it returns only by exec or `_exit`.
extern "C" fn start_child(handoff: *mut c_void) -> c_int {
    // SAFETY: `spawn` passes its `Handoff`, alive until this process has exec'd or exited.
    let handoff = unsafe { &*handoff.cast_const().cast::<Handoff>() };
    let error = handoff.exec();
    handoff.errno.store(error.raw_os_error().unwrap_or(libc::EINVAL), Ordering::Relaxed);
    // SAFETY: ends this process (not the proxy: the child is a process of its own).
    unsafe { libc::_exit(127) }
}

impl Handoff<'_> {
    /// In the child: confinement, standard streams, working directory, signals as a new program
    /// expects them, and exec. Returns only with the reason it failed.
    fn exec(&self) -> std::io::Error {
        let failed = std::io::Error::last_os_error;
        if let Err(e) = self.confinement.enter() {
            return e;
        }
        // SAFETY: system calls on descriptors of this process, and reads of the descriptors'
        // array (`fd_count` long) and strings that `spawn` keeps alive.
        unsafe {
            // Every source lies above every target (`lifted`): no dup2 overwrites another's.
            for target in 0..self.fd_count {
                if libc::dup2(*self.fds.add(target), target as c_int) < 0 {
                    return failed();
                }
            }
            if libc::chdir(self.cwd) != 0 {
                return failed();
            }
            // The proxy's handlers are meaningless here and its ignored SIGPIPE must not reach
            // the command (Rust ignores it); the mask that `spawn` set is lifted last.
            for signal in 1..=libc::SIGRTMAX() {
                let mut old = MaybeUninit::<libc::sigaction>::zeroed();
                if libc::sigaction(signal, ptr::null(), old.as_mut_ptr()) != 0 {
                    continue;
                }
                let handler = old.assume_init_ref().sa_sigaction;
                if signal == libc::SIGPIPE || (handler != libc::SIG_DFL && handler != libc::SIG_IGN) {
                    let default = MaybeUninit::<libc::sigaction>::zeroed();
                    libc::sigaction(signal, default.as_ptr(), ptr::null_mut());
                }
            }
            let mut none = MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(none.as_mut_ptr());
            libc::sigprocmask(libc::SIG_SETMASK, none.as_ptr(), ptr::null_mut());
            libc::execve(self.program, self.argv, self.envp);
        }
        failed()
    }
}

/// The capabilities by which a process reads another's `/proc/PID/environ` or memory, or traces
/// it; no job of a proxy running as root keeps them.
const INSPECTING_CAPABILITIES: [rustix::thread::CapabilitySet; 3] = [
    rustix::thread::CapabilitySet::SYS_PTRACE,
    rustix::thread::CapabilitySet::SYS_ADMIN,
    rustix::thread::CapabilitySet::PERFMON,
];

/// Keeps the proxy's own process from its jobs' eyes: not dumpable, so a process of the same
/// user without the inspecting capabilities (every job: see `Confinement::enter`) can neither
/// read its `/proc/PID/environ` nor its memory, nor trace it. Landlock denies that to a confined
/// process towards processes outside its domain, but not to one that holds CAP_SYS_ADMIN or
/// CAP_PERFMON (measured on Linux 6.18: a root job read every process's environment).
pub fn forbid_inspection() -> std::io::Result<()> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    Ok(())
}

/// `posh-proxy __sandbox-check`: exits 0 when this kernel enforces the sandbox fully.
pub const CHECK_ARG: &str = "__sandbox-check";

pub fn check_enforced() -> u8 {
    let tmp = std::env::temp_dir();
    match ruleset(Path::new("/nonexistent-export"), &tmp).and_then(|r| r.restrict_self()).map(|s| s.ruleset) {
        Ok(RulesetStatus::FullyEnforced) => 0,
        other => {
            eprintln!("posh-proxy: sandbox: {other:?}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a job may open outside the export and its directory (issue 37, E5: a root proxy's
    /// job read /etc/shadow, the ssh host keys, /dev/vcs1 and /dev/kmsg). Tried on a thread under
    /// a job's ruleset, as the proxy's own file work for a job runs: as root (the tests here and
    /// in CI), the files' modes would let everything through, so what is refused is Landlock's.
    #[test]
    fn a_job_reads_only_what_is_listed_of_etc_and_dev() {
        let export = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let (export, tmp) = (export.path().to_path_buf(), tmp.path().to_path_buf());
        // Listed before the thread confines itself: /etc/ssh is no job's to list.
        let host_keys: Vec<String> = std::fs::read_dir("/etc/ssh")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().to_string_lossy().into_owned())
            .filter(|p| p.contains("ssh_host_"))
            .collect();
        let tried = std::thread::spawn(move || {
            let status = ruleset(&export, &tmp).unwrap().restrict_self().unwrap();
            assert_eq!(status.ruleset, RulesetStatus::FullyEnforced, "this kernel does not enforce Landlock ABI 6");
            let read = |path: &str| std::fs::File::open(path).map(drop);
            let write = |path: &str| std::fs::OpenOptions::new().write(true).open(path).map(drop);
            let denied = |path: &str, opened: std::io::Result<()>| match opened {
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                other => panic!("{path}: {other:?}, not refused"),
            };
            let secrets = ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/machine-id", "/etc/fstab"];
            let devices = ["/dev/kmsg", "/dev/vcs1", "/dev/console", "/dev/tty1", "/dev/mem", "/dev/loop0", "/dev/vda"];
            let mut refused = Vec::new();
            for path in secrets.into_iter().chain(devices).map(String::from).chain(host_keys) {
                if denied(&path, read(&path)) {
                    refused.push(path);
                }
            }
            assert!(denied("/etc", std::fs::read_dir("/etc").map(drop)), "/etc is not listed");
            assert!(denied("/dev/urandom", write("/dev/urandom")), "randomness is read only");
            for path in ["/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/ld.so.cache", "/dev/urandom"] {
                read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            }
            std::fs::read_dir("/etc/ssl/certs").unwrap();
            for path in ["/dev/null", "/dev/zero", "/dev/full"] {
                write(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            }
            refused
        });
        let refused = tried.join().unwrap();
        assert!(refused.iter().any(|p| p == "/etc/shadow"), "{refused:?}");
        eprintln!("refused: {refused:?}");
    }
}
