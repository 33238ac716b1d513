//! The operating system's half of confinement. The proxy checks a request's file words against
//! the export root, but a command may reach files its words do not name (awk's `print > file`,
//! `system()`, GNU sed's `w`): so every command's process restricts itself with Landlock
//! (read-only system directories, read-write export root and the job's own temporary directory,
//! where no device node may be made; no ioctl on a device it opens, so no keystrokes pushed into a
//! terminal; no signal to and no abstract socket of a process outside its own domain) between
//! fork and exec, and the restriction is inherited by everything the command starts. It also
//! leaves the proxy's session, and with it any controlling terminal. The proxy builds the
//! ruleset once per job ([`Confinement::new`]); the forked process only applies it
//! ([`Confinement::enter`]: a few system calls), so no launcher program is exec'd first.
//!
//! This module is the only place with `unsafe` code (the workspace denies it elsewhere): the
//! hook that runs between fork and exec, and the one system call that has no safe wrapper.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

/// What commands may read (and run) outside the export.
const SYSTEM_READ: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/proc", "/dev"];
/// Devices commands write to as a matter of course.
const DEVICES_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The ruleset for a job's commands: the export `root` and the job's `tmp` directory, and what
/// they need of the system.
fn ruleset(root: &Path, tmp: &Path) -> Result<RulesetCreated, landlock::RulesetError> {
    // V5 adds ioctls on devices, V6 the scopes; an older kernel enforces what it knows (and
    // `check_enforced` says the sandbox is partial).
    let abi = ABI::V6;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    // Everything in the export and the job's directory, except making device nodes (a job of a
    // proxy running as root could otherwise reach any device through one).
    let own = all & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)?
        .create()?;
    let rules: Vec<(&Path, _)> = SYSTEM_READ
        .iter()
        .map(|p| (Path::new(*p), read))
        // Files take file rights only (no ReadDir), or Landlock would only partly apply the rule.
        .chain(
            DEVICES_WRITE
                .iter()
                .map(|p| (Path::new(*p), AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate)),
        )
        .chain([(root, own), (tmp, own)])
        .collect();
    for (path, access) in rules {
        // A directory this system lacks (/lib32) simply grants nothing.
        if let Ok(fd) = PathFd::new(path) {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, access))?;
        }
    }
    Ok(ruleset)
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

    /// Makes `command` confine itself between fork and exec.
    pub fn apply(self: &Arc<Self>, command: &mut tokio::process::Command) {
        let confinement = Arc::clone(self);
        // SAFETY: `enter` makes only system calls, as a forked child of a threaded process may.
        unsafe { command.pre_exec(move || confinement.enter()) };
    }

    /// Confines the calling process, which is a command's, forked and about to exec: it leads a
    /// session of its own, without a terminal (its process group, which the proxy kills as one,
    /// has its pid for id), dies with the proxy (a proxy killed outright must not leave its jobs
    /// running; what they start in turn is killed by the proxy's next start, see `jobs_dir`),
    /// may not gain privileges, and is restricted by the ruleset. Only system calls, as the time
    /// between fork and exec allows (no allocation, no lock).
    fn enter(&self) -> std::io::Result<()> {
        rustix::process::setsid()?;
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
        self.restrict()
    }

    /// Confines the calling thread: one of the proxy's own, which does a job's file work and
    /// then ends (see `job::FileWork`). A thread's `no_new_privs` and Landlock domain are its
    /// own, so the proxy's other threads stay as they were.
    pub fn enter_thread(&self) -> std::io::Result<()> {
        self.restrict()
    }

    /// `no_new_privs` (which Landlock requires of an unprivileged caller) and the ruleset, on the
    /// calling thread. Only system calls, so that `enter` may use it between fork and exec.
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
