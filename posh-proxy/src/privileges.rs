//! Whose rights a proxy's jobs have. A proxy started as root refuses to serve unless told which
//! user to become (`posh-proxy --user`): a job of a root proxy read `/etc/shadow`, the ssh host
//! keys and the console (issue 37, E5), and Landlock cannot take back what root's rights give
//! outside its rules. Told one, the proxy opens as root what only root may (its socket, its
//! host key), then becomes that user for good before it reads any request: groups, group, user,
//! and a check that the way back is closed. The embedded proxies of posh-exec are not concerned:
//! they run as the user who runs posh-exec, by that user's own choice.
//!
//! `unsafe` here: the C library's user database (`getpwnam_r`, `getpwuid_r`, `initgroups`) and
//! its `setresgid`/`setresuid`, which change every thread of the process (the raw system calls,
//! and rustix's wrappers of them, change only the calling thread).
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char};
use std::mem::MaybeUninit;
use std::path::Path;
use std::ptr;

/// A user to become, as the system's user database gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: u32,
    /// Its primary group.
    pub gid: u32,
}

impl std::fmt::Display for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (uid {})", self.name, self.uid)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PrivilegeError {
    #[error(
        "refusing to run as root without --user: jobs would have root's rights (every file, every \
         device). Pass --user NAME, a user (a name or a uid) that can read and write the export: \
         the proxy becomes it once its socket and host key are open (over ssh: log in as another \
         user, or add the option to the mount's `proxy_program`)"
    )]
    RootWithoutUser,
    #[error("--user {0}: no such user in the user database")]
    NoSuchUser(String),
    #[error("--user {spec}: cannot look it up: {source}")]
    Lookup { spec: String, source: std::io::Error },
    #[error("--user {0} is root: name the user the proxy's jobs run as")]
    Root(String),
    #[error("--user {user}: only root can become another user, and posh-proxy runs as uid {uid}")]
    NotRoot { user: User, uid: u32 },
    #[error("cannot become user {user}: {step} failed: {source}")]
    Change { user: User, step: &'static str, source: std::io::Error },
    #[error("became user {user}, but {what}: refusing to serve")]
    NotForGood { user: User, what: String },
    #[error("{what} {path}: user {user} must {needs} it: {source}")]
    Unusable { what: &'static str, path: String, user: User, needs: &'static str, source: std::io::Error },
    #[error("cannot make the state directory {path} for user {user}: {source}")]
    StateDir { path: String, user: User, source: std::io::Error },
}

/// The user the proxy must become: `requested` (`--user`, a name or a uid) looked up; `None`
/// when there is nothing to change (not root and nothing asked, or asked to stay who it is).
/// Root without `requested` is refused, and so is becoming root.
pub fn user_to_become(requested: Option<&str>) -> Result<Option<User>, PrivilegeError> {
    let running = rustix::process::geteuid();
    let Some(spec) = requested else {
        return if running.is_root() { Err(PrivilegeError::RootWithoutUser) } else { Ok(None) };
    };
    let user = lookup(spec)?;
    if user.uid == 0 {
        return Err(PrivilegeError::Root(spec.to_string()));
    }
    match running.as_raw() {
        0 => Ok(Some(user)),
        uid if uid == user.uid => Ok(None),
        uid => Err(PrivilegeError::NotRoot { user, uid }),
    }
}

/// `spec` in the user database: a name, or else a uid (a name made of digits is a name first, as
/// chown(1) reads it).
pub fn lookup(spec: &str) -> Result<User, PrivilegeError> {
    let failed = |source| PrivilegeError::Lookup { spec: spec.to_string(), source };
    let Ok(name) = CString::new(spec) else { return Err(PrivilegeError::NoSuchUser(spec.to_string())) };
    if let Some(user) = passwd_entry(Key::Name(&name)).map_err(failed)? {
        return Ok(user);
    }
    match spec.parse::<u32>() {
        Ok(uid) => passwd_entry(Key::Uid(uid)).map_err(failed)?,
        Err(_) => None,
    }
    .ok_or_else(|| PrivilegeError::NoSuchUser(spec.to_string()))
}

enum Key<'a> {
    Name(&'a CStr),
    Uid(u32),
}

/// The entry of `key` in the user database (files, LDAP: whatever nsswitch.conf says), if any.
fn passwd_entry(key: Key) -> std::io::Result<Option<User>> {
    let mut buffer = vec![0u8; 1024];
    loop {
        let mut entry = MaybeUninit::<libc::passwd>::uninit();
        let mut found: *mut libc::passwd = ptr::null_mut();
        let (text, len) = (buffer.as_mut_ptr().cast::<c_char>(), buffer.len());
        // SAFETY: the entry, the buffer (of `len` bytes) and `found` are ours and outlive the
        // call, which writes the entry's strings into the buffer and sets `found` to the entry
        // or to null.
        let code = unsafe {
            match key {
                Key::Name(name) => libc::getpwnam_r(name.as_ptr(), entry.as_mut_ptr(), text, len, &mut found),
                Key::Uid(uid) => libc::getpwuid_r(uid, entry.as_mut_ptr(), text, len, &mut found),
            }
        };
        match code {
            libc::ERANGE if buffer.len() < 1 << 20 => buffer.resize(buffer.len() * 4, 0),
            0 if found.is_null() => return Ok(None),
            0 => {
                // SAFETY: the call succeeded and filled the entry, whose name points into
                // `buffer`, still alive.
                let (name, uid, gid) = unsafe {
                    let entry = entry.assume_init_ref();
                    (CStr::from_ptr(entry.pw_name).to_string_lossy().into_owned(), entry.pw_uid, entry.pw_gid)
                };
                return Ok(Some(User { name, uid, gid }));
            }
            code => return Err(std::io::Error::from_raw_os_error(code)),
        }
    }
}

/// Becomes `user` for good, every thread of the process: its groups (from the group database),
/// its primary group, then its uid (real, effective and saved); then checks that every thread
/// runs as it with no capability left, may gain none through exec (`no_new_privs`, which the
/// caller set before it started a thread: see [`forbid_new_privileges`]), and cannot become
/// root again.
pub fn become_user(user: &User) -> Result<(), PrivilegeError> {
    let change = |step, done: libc::c_int| match done {
        0 => Ok(()),
        _ => Err(PrivilegeError::Change { user: user.clone(), step, source: std::io::Error::last_os_error() }),
    };
    let name = CString::new(user.name.as_str()).map_err(|_| PrivilegeError::NoSuchUser(user.name.clone()))?;
    // SAFETY: a NUL-terminated name we own; the C library reads the group database and calls
    // setgroups for every thread.
    change("initgroups", unsafe { libc::initgroups(name.as_ptr(), user.gid) })?;
    // SAFETY: plain system calls, which the C library makes on every thread of the process.
    change("setresgid", unsafe { libc::setresgid(user.gid, user.gid, user.gid) })?;
    // SAFETY: as above.
    change("setresuid", unsafe { libc::setresuid(user.uid, user.uid, user.uid) })?;
    check_for_good(user)
}

/// That every thread of the process runs as `user` (its real, effective, saved and file system
/// ids), holds no capability, has `no_new_privs`, and that the calling thread cannot take root's
/// uid or gid back.
#[expect(
    clippy::disallowed_methods,
    reason = "the proxy's own /proc entries and the operator's state directory, before any job runs"
)]
fn check_for_good(user: &User) -> Result<(), PrivilegeError> {
    let not = |what: String| PrivilegeError::NotForGood { user: user.clone(), what };
    let threads = std::fs::read_dir("/proc/self/task").map_err(|e| not(format!("/proc/self/task: {e}")))?;
    let mut seen = 0;
    for thread in threads {
        let path = thread.map_err(|e| not(format!("/proc/self/task: {e}")))?.path().join("status");
        let status = match std::fs::read_to_string(&path) {
            Ok(status) => status,
            // A thread that ended meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(not(format!("{}: {e}", path.display()))),
        };
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).unwrap_or("");
        let all = |text: &str, id: u32| {
            let ids: Vec<&str> = text.split_whitespace().collect();
            ids.len() == 4 && ids.iter().all(|i| *i == id.to_string())
        };
        let none = |caps: &str| !caps.is_empty() && caps.bytes().all(|b| b == b'0');
        if !all(field("Uid:"), user.uid) || !all(field("Gid:"), user.gid) {
            return Err(not(format!("{} says Uid {}, Gid {}", path.display(), field("Uid:"), field("Gid:"))));
        }
        if !none(field("CapPrm:")) || !none(field("CapEff:")) {
            return Err(not(format!("{} holds capabilities {}", path.display(), field("CapPrm:"))));
        }
        if field("NoNewPrivs:") != "1" {
            return Err(not(format!("{} may gain privileges through exec (no_new_privs unset)", path.display())));
        }
        seen += 1;
    }
    if seen == 0 {
        return Err(not("/proc/self/task lists no thread".to_string()));
    }
    if rustix::thread::set_thread_uid(rustix::process::Uid::ROOT).is_ok() {
        return Err(not("it could become root again (setuid(0) succeeded)".to_string()));
    }
    if rustix::thread::set_thread_gid(rustix::process::Gid::ROOT).is_ok() {
        return Err(not("it could take root's group again (setgid(0) succeeded)".to_string()));
    }
    Ok(())
}

/// Sets `no_new_privs`: nothing the process execs gains privileges (set-user-ID programs, file
/// capabilities). Per thread, and inherited by the threads it starts later: call it while the
/// process has one thread, before its runtime starts.
pub fn forbid_new_privileges() -> std::io::Result<()> {
    rustix::thread::set_no_new_privs(true)?;
    Ok(())
}

/// Makes the missing state directory `dir` (mode 0700) owned by `user`, which the proxy becomes
/// later and which writes its journal and job directories there. A directory that exists is
/// left as it is (whether `user` can use it is checked once it has become `user`).
#[expect(
    clippy::disallowed_methods,
    reason = "the proxy's own /proc entries and the operator's state directory, before any job runs"
)]
pub fn make_state_dir_for(dir: &Path, user: &User) -> Result<(), PrivilegeError> {
    use std::os::unix::fs::DirBuilderExt as _;
    let unusable = |source| PrivilegeError::StateDir { path: dir.display().to_string(), user: user.clone(), source };
    if dir.symlink_metadata().is_ok() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(unusable)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        // Another proxy started at once on the same fresh directory made it first (eight of
        // them racing, the faults suite saw one exit here). Each racer gives it to its user, so
        // none becomes its user before the directory is that user's; a name that is not a
        // directory (a link raced in) is refused, and never followed.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let made = dir.symlink_metadata().map_err(unusable)?;
            if !made.is_dir() {
                return Err(unusable(e));
            }
        }
        Err(e) => return Err(unusable(e)),
    }
    std::os::unix::fs::lchown(dir, Some(user.uid), Some(user.gid)).map_err(unusable)
}

/// What the proxy needs of a directory, once it runs as `user`: the export read and searched
/// (written too, for outputs: without it only reading jobs work, and the proxy warns), the
/// state directory written and searched.
#[derive(Clone, Copy, Debug)]
pub enum Use {
    Export,
    State,
}

/// Checks, as the user the proxy now runs as, that `path` allows what `use_` needs; `Ok(false)`
/// for an export it may read but not write.
pub fn check_usable(path: &Path, use_: Use, user: &User) -> Result<bool, PrivilegeError> {
    use rustix::fs::Access;
    let (what, needs, access) = match use_ {
        Use::Export => ("the export", "read and search", Access::READ_OK | Access::EXEC_OK),
        Use::State => ("the state directory", "write and search", Access::WRITE_OK | Access::EXEC_OK),
    };
    rustix::fs::access(path, access).map_err(|e| PrivilegeError::Unusable {
        what,
        path: path.display().to_string(),
        user: user.clone(),
        needs,
        source: e.into(),
    })?;
    Ok(rustix::fs::access(path, Access::WRITE_OK).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_found_by_name_and_by_uid() {
        let root = lookup("root").unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
        assert_eq!(lookup("0").unwrap(), root);
        let missing = lookup("no-such-user-posh-37").unwrap_err();
        assert_eq!(missing.to_string(), "--user no-such-user-posh-37: no such user in the user database");
        assert!(matches!(lookup("nul\0byte"), Err(PrivilegeError::NoSuchUser(_))));
    }

    #[test]
    fn root_is_never_the_user_to_become() {
        assert!(matches!(user_to_become(Some("root")), Err(PrivilegeError::Root(_))));
        assert!(matches!(user_to_become(Some("0")), Err(PrivilegeError::Root(_))));
        let running = rustix::process::geteuid();
        let without = user_to_become(None);
        match running.is_root() {
            true => assert!(matches!(without, Err(PrivilegeError::RootWithoutUser))),
            false => assert!(matches!(without, Ok(None))),
        }
    }
}
