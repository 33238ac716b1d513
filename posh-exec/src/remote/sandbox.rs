//! The operating system's half of confinement. The proxy checks a request's file words against
//! the export root, but a command may reach files its words do not name (awk's `print > file`,
//! `system()`, GNU sed's `w`): so every command runs as `LAUNCHER __sandbox ROOT TMP -- ARGV`,
//! which restricts itself with Landlock (read-only system directories, read-write export root and
//! the job's own temporary directory) and then execs the command. The restriction is inherited by
//! everything the command starts. The launcher is `posh-sandbox` beside the proxy's executable
//! when it is installed (a small program: it starts 0.3 ms sooner than the proxy's own, once per
//! command), else the proxy's executable itself.

use std::ffi::OsString;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus,
};

/// The argument that makes `posh-proxy` a sandbox launcher instead of a server.
pub const SANDBOX_ARG: &str = "__sandbox";

/// The executable that launches confined commands: `posh-sandbox` beside this one, else this one.
pub fn launcher() -> std::io::Result<std::path::PathBuf> {
    crate::helper("posh-sandbox")
}

/// What commands may read (and run) outside the export.
const SYSTEM_READ: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/proc", "/dev"];
/// Devices commands write to as a matter of course.
const DEVICES_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

fn restrict(root: &Path, tmp: &Path) -> Result<RulesetStatus, landlock::RulesetError> {
    let abi = ABI::V3;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort).handle_access(all)?.create()?;
    let rules: Vec<(&Path, _)> = SYSTEM_READ
        .iter()
        .map(|p| (Path::new(*p), read))
        // Files take file rights only (no ReadDir), or Landlock would only partly apply the rule.
        .chain(
            DEVICES_WRITE
                .iter()
                .map(|p| (Path::new(*p), AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate)),
        )
        .chain([(root, all), (tmp, all)])
        .collect();
    for (path, access) in rules {
        // A directory this system lacks (/lib32) simply grants nothing.
        if let Ok(fd) = PathFd::new(path) {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, access))?;
        }
    }
    Ok(ruleset.restrict_self()?.ruleset)
}

/// `posh-proxy __sandbox ROOT TMP -- ARGV...`: restricts this process, then becomes the command.
/// Returns only on failure, with the exit status to use (127: cannot run, as a shell says).
pub fn exec_confined(args: &[OsString]) -> u8 {
    use std::os::unix::process::CommandExt as _;
    let [root, tmp, dashes, program, rest @ ..] = args else {
        eprintln!("posh-proxy: {SANDBOX_ARG} ROOT TMP -- COMMAND...");
        return 2;
    };
    if dashes != "--" {
        eprintln!("posh-proxy: {SANDBOX_ARG} ROOT TMP -- COMMAND...");
        return 2;
    }
    // The command dies with the proxy that started it: a proxy killed outright must not leave its
    // jobs running (what they start in turn is killed by the proxy's next start, see jobs_dir).
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    match restrict(Path::new(root), Path::new(tmp)) {
        // Partially or not enforced: the kernel lacks some of Landlock; the proxy warned at start.
        Ok(_) => {}
        Err(e) => {
            eprintln!("posh-proxy: cannot confine the command: {e}");
            return 126;
        }
    }
    let error = std::process::Command::new(program).args(rest).exec();
    eprintln!("posh-proxy: {}: {error}", program.to_string_lossy());
    127
}

/// `posh-proxy __sandbox-check`: exits 0 when this kernel enforces the sandbox fully.
pub const CHECK_ARG: &str = "__sandbox-check";

pub fn check_enforced() -> u8 {
    let tmp = std::env::temp_dir();
    match restrict(Path::new("/nonexistent-export"), &tmp) {
        Ok(RulesetStatus::FullyEnforced) => 0,
        other => {
            eprintln!("posh-proxy: sandbox: {other:?}");
            1
        }
    }
}
