//! The client's view of files a proxy wrote. A proxy writes on the storage host, behind the back
//! of the client's network filesystem, which keeps attributes, pages and directory listings in
//! caches of its own: without help, a `cat` at the client right after `sort big > out.txt` ran at
//! the proxy reads the new bytes cut to the old length (the kernel's cached size), and a glob does
//! not see a file the job created (sshfs's cached listing). So before a remote job's status goes
//! back to bash, each file it wrote is made to read as under bash, by filesystem type:
//!
//! - local filesystems (ext4, xfs, btrfs, tmpfs, overlay, ...): one cache, nothing to do;
//! - FUSE (sshfs): opening the file makes the daemon fetch fresh attributes (sshfs sends a STAT
//!   with every OPEN and stores the answer in its own cache) and drops the kernel's pages (no
//!   `keep_cache`); `statx` with `AT_STATX_FORCE_SYNC` then replaces the kernel's attributes
//!   (size included) with the daemon's (the forced `statx` alone would be answered from sshfs's
//!   stat cache: `sshfs.c`'s `sshfs_open_common`, `cache.c`). A file that was not there before
//!   the job needs none of that: neither the kernel nor sshfs caches an absence, so its first
//!   look-up asks the server. sshfs answers `readdir` from its own listing cache
//!   (`dcache_timeout`, 20 s) and drops a directory's entry only when the directory or a name in
//!   it changes through the mount, so a directory that gains a name gets its times set to now
//!   (`touch`: two round trips, the SETSTAT and the fresh STAT the kernel's reply needs), or,
//!   where that is refused, a transient child directory (made and removed: four);
//! - NFS: close-to-open consistency: an open of the file revalidates it, and a forced `statx` of
//!   its directory revalidates the directory (its changed mtime drops the cached listing and
//!   names);
//! - any other type: the NFS treatment, which is harmless where it is not needed.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use posh_core::library::Library;
use rustix::fs::{AtFlags, CWD, Mode, OFlags, StatxFlags};

use super::PipelineCall;
use super::placement::Step;

/// How a filesystem caches what another host writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsKind {
    /// One cache, the kernel's, which sees every write: nothing to refresh.
    Local,
    /// A FUSE daemon (sshfs) with attribute and listing caches of its own.
    Fuse,
    /// NFS (and, best effort, every other network type): close-to-open revalidation.
    Revalidating,
}

impl FsKind {
    /// The kind of a filesystem type as `/proc/self/mountinfo` names it.
    pub fn of_type(fs_type: &str) -> FsKind {
        const LOCAL: &[&str] = &[
            "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "zfs", "f2fs", "bcachefs", "jfs",
            "reiserfs", "vfat", "msdos", "exfat", "ntfs3", "hfsplus", "squashfs", "iso9660", "erofs", "devtmpfs",
        ];
        if fs_type == "fuse" || fs_type == "fuseblk" || fs_type.starts_with("fuse.") {
            FsKind::Fuse
        } else if LOCAL.contains(&fs_type) {
            FsKind::Local
        } else {
            FsKind::Revalidating
        }
    }
}

/// One file a remote job writes, as the client names it.
#[derive(Debug)]
struct Output {
    path: PathBuf,
    kind: FsKind,
    /// Whether the name existed before the job (only asked on FUSE mounts, where a new name
    /// needs its directory's listing dropped).
    existed: bool,
}

impl Output {
    fn look(types: &MountTypes, path: PathBuf) -> Output {
        let kind = types.kind_of(&path);
        let existed = kind == FsKind::Fuse && exists(&path);
        Output { path, kind, existed }
    }
}

/// Whether a call's redirection targets existed, looked at on a thread of its own when the call
/// came, beside its globs' expansion and its plan, rather than just before its job starts: a
/// name FUSE does not hold is looked up by the daemon (sshfs caches no absence), a round trip
/// that a new output file made every call wait for.
#[derive(Debug)]
pub struct SeenBefore {
    looking: std::sync::Mutex<Option<std::thread::JoinHandle<Vec<Output>>>>,
    seen: std::sync::OnceLock<Vec<Output>>,
}

impl SeenBefore {
    /// Starts looking at `paths` (the caller's redirection targets, joined to its directory).
    pub fn look(paths: Vec<PathBuf>) -> SeenBefore {
        let looking = std::thread::Builder::new().name("posh-seen".into()).spawn(move || {
            let types = MountTypes::read();
            paths.into_iter().map(|path| Output::look(&types, path)).collect()
        });
        SeenBefore { looking: std::sync::Mutex::new(looking.ok()), seen: std::sync::OnceLock::new() }
    }

    /// What was seen, waiting for it if need be (nothing if the thread could not start).
    fn outputs(&self) -> &[Output] {
        self.seen.get_or_init(|| {
            let looking = self.looking.lock().unwrap_or_else(|e| e.into_inner()).take();
            looking.and_then(|thread| thread.join().ok()).unwrap_or_default()
        })
    }
}

/// The files a remote job writes, looked at before it runs; [`Written::after_job`] makes the
/// client see what the job left in them.
#[derive(Debug, Default)]
pub struct Written {
    outputs: Vec<Output>,
}

impl Written {
    /// Names the files `steps` write (redirection targets, output words by their annotation),
    /// relative to `cwd` (the caller's; `None`: ours), and notes which exist on FUSE mounts,
    /// taking what `seen` looked at when the call came.
    pub async fn before_job(
        library: &Library,
        call: &PipelineCall,
        steps: &[Step],
        cwd: Option<&Path>,
        seen: Option<Arc<SeenBefore>>,
    ) -> Written {
        let paths = written_paths(library, call, steps, cwd);
        if paths.is_empty() {
            return Written::default();
        }
        tokio::task::spawn_blocking(move || {
            let seen = seen.as_deref().map_or(&[][..], SeenBefore::outputs);
            let types = std::sync::LazyLock::new(MountTypes::read);
            let outputs = paths
                .into_iter()
                .map(|path| match seen.iter().find(|o| o.path == path) {
                    Some(output) => Output { path, ..*output },
                    None => Output::look(&types, path),
                })
                .collect();
            Written { outputs }
        })
        .await
        .unwrap_or_default()
    }

    /// After the job ended: refreshes the client's caches of every file it wrote (and of the
    /// directories that gained a name), so that what bash runs next reads what the job wrote.
    pub async fn after_job(self) {
        if self.outputs.iter().all(|o| o.kind == FsKind::Local) {
            return;
        }
        let _ = tokio::task::spawn_blocking(move || self.refresh()).await;
    }

    fn refresh(&self) {
        let mut directories: Vec<(PathBuf, FsKind, bool)> = Vec::new();
        for output in self.outputs.iter().filter(|o| o.kind != FsKind::Local) {
            let Some(parent) = output.path.parent() else { continue };
            let gained = !output.existed;
            match directories.iter_mut().find(|(d, _, _)| d == parent) {
                Some(entry) => entry.2 |= gained,
                None => directories.push((parent.to_path_buf(), output.kind, gained)),
            }
        }
        let remote = || self.outputs.iter().filter(|o| o.kind != FsKind::Local);
        // Independent round trips run at once, so the refresh costs the slowest of them; only
        // NFS-like files wait for their directories (an open then finds a name replaced there).
        std::thread::scope(|scope| {
            for (directory, kind, gained) in &directories {
                scope.spawn(move || refresh_directory(directory, *kind, *gained));
            }
            for output in remote().filter(|o| o.kind == FsKind::Fuse && o.existed) {
                scope.spawn(move || refresh_file(&output.path));
            }
        });
        std::thread::scope(|scope| {
            for output in remote().filter(|o| o.kind == FsKind::Revalidating) {
                scope.spawn(move || refresh_file(&output.path));
            }
        });
    }
}

/// The redirections that write their target.
pub const WRITING: [&str; 5] = [">", ">|", ">>", "&>", "&>>"];

/// Client paths of every file the remote of `steps` write: `>`, `>|`, `>>`, `&>`, `&>>`
/// targets and the output words of their annotations (written, removed or replaced),
/// `/dev/null` and `-` aside.
pub(super) fn written_paths(
    library: &Library,
    call: &PipelineCall,
    steps: &[Step],
    cwd: Option<&Path>,
) -> Vec<PathBuf> {
    let mut words: Vec<&OsStr> = Vec::new();
    let mut owned: Vec<String> = Vec::new();
    for step in steps.iter().filter(|s| s.remote.is_some()) {
        let command = &call.commands[step.command];
        for (_, op, target) in &command.redirects {
            if WRITING.contains(&op.as_str()) {
                words.push(target);
            }
        }
        let argv: Option<Vec<String>> = step.argv.iter().map(|w| w.to_str().map(str::to_string)).collect();
        if let Some(invocation) = argv.as_deref().and_then(|argv| library.match_argv(argv).ok()) {
            owned.extend(invocation.output_files());
        }
    }
    let mut paths: Vec<PathBuf> = Vec::new();
    for word in words.into_iter().chain(owned.iter().map(OsStr::new)) {
        if word.is_empty() || word == "-" || word == "/dev/null" {
            continue;
        }
        let path = match cwd {
            Some(cwd) => cwd.join(word),
            None => PathBuf::from(word),
        };
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// Whether `path` names something, asking the kernel's caches only where they are valid.
fn exists(path: &Path) -> bool {
    rustix::fs::statx(CWD, path, AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC, StatxFlags::TYPE).is_ok()
}

/// The attributes of `path` fetched from the filesystem, not from the kernel's cache.
fn force_attributes(path: &Path) -> rustix::io::Result<rustix::fs::Statx> {
    rustix::fs::statx(CWD, path, AtFlags::STATX_FORCE_SYNC, StatxFlags::BASIC_STATS)
}

/// Opens `path` (FUSE: the daemon fetches fresh attributes and the kernel drops the file's
/// pages; NFS: close-to-open revalidation), then has the kernel fetch its attributes again.
fn refresh_file(path: &Path) {
    // Non-blocking: a FIFO must not wait for a writer; the open itself is the point.
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let opened = rustix::fs::open(path, flags, Mode::empty());
    let _ = force_attributes(path);
    drop(opened);
}

fn refresh_directory(directory: &Path, kind: FsKind, gained_a_name: bool) {
    match kind {
        FsKind::Local => {}
        // sshfs drops a directory's cached listing (and its attributes; the kernel drops its own)
        // only when the directory or a name in it changes through the mount. Its times set to
        // now, as the job's new name left them but for the second (SFTP's times are whole
        // seconds); where that is refused (neither its owner nor allowed to write it), a name
        // made in it and taken away again. A directory whose names stayed the same has nothing
        // stale that bash would see.
        FsKind::Fuse if gained_a_name => {
            if rustix::fs::utimensat(CWD, directory, &TIMES_NOW, AtFlags::empty()).is_err() {
                let probe = directory.join(probe_name());
                if std::fs::create_dir(&probe).is_ok() {
                    let _ = std::fs::remove_dir(&probe);
                }
            }
        }
        FsKind::Fuse => {}
        // A changed mtime drops the cached listing and names (NFS).
        FsKind::Revalidating => {
            let _ = force_attributes(directory);
        }
    }
}

/// Both times set to now, what `touch` does: allowed to whoever may write the directory.
const TIMES_NOW: rustix::fs::Timestamps = rustix::fs::Timestamps {
    last_access: rustix::fs::Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_NOW },
    last_modification: rustix::fs::Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_NOW },
};

/// A name no one else uses: the proxy's temporaries start with `.posh-` too.
fn probe_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(".posh-refresh-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Filesystem types by device number, from `/proc/self/mountinfo` (read without touching any
/// network filesystem: `statfs` would ask the server).
#[derive(Debug, Default)]
struct MountTypes {
    by_device: Vec<((u32, u32), String)>,
}

impl MountTypes {
    fn read() -> MountTypes {
        let text = std::fs::read("/proc/self/mountinfo").unwrap_or_default();
        MountTypes::of_table(&text)
    }

    fn of_table(text: &[u8]) -> MountTypes {
        let (entries, _) = posh_exec::setup::mountinfo::parse(text);
        MountTypes { by_device: entries.into_iter().map(|entry| (entry.device, entry.fs_type)).collect() }
    }

    /// The kind of the filesystem `path` is (or would be created) on. Unknown (no directory, no
    /// entry): treated as needing revalidation, which is harmless.
    fn kind_of(&self, path: &Path) -> FsKind {
        self.type_of(path).map_or(FsKind::Revalidating, FsKind::of_type)
    }

    /// The type of the filesystem of `path`'s directory, by its device number.
    fn type_of(&self, path: &Path) -> Option<&str> {
        let directory = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let stat = rustix::fs::statx(CWD, directory, AtFlags::STATX_DONT_SYNC, StatxFlags::TYPE).ok()?;
        let device = (stat.stx_dev_major, stat.stx_dev_minor);
        self.by_device.iter().find(|(d, _)| *d == device).map(|(_, fs_type)| fs_type.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_device_and_type() {
        let table = b"112 30 0:52 / /mnt/netrig rw,nosuid,nodev,relatime shared:61 - fuse.sshfs root@10.77.2.2:/d rw\n\
                      36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n\
                      \n";
        let types = MountTypes::of_table(table);
        assert_eq!(types.by_device, [((0, 52), "fuse.sshfs".to_string()), ((98, 0), "ext3".to_string())]);
    }

    #[test]
    fn filesystem_types_map_to_what_they_cache() {
        assert_eq!(FsKind::of_type("fuse.sshfs"), FsKind::Fuse);
        assert_eq!(FsKind::of_type("fuseblk"), FsKind::Fuse);
        assert_eq!(FsKind::of_type("ext4"), FsKind::Local);
        assert_eq!(FsKind::of_type("tmpfs"), FsKind::Local);
        assert_eq!(FsKind::of_type("nfs4"), FsKind::Revalidating);
        assert_eq!(FsKind::of_type("cifs"), FsKind::Revalidating);
    }

    #[test]
    fn a_directory_is_found_among_the_mounts_by_its_device() {
        let dir = tempfile::tempdir().unwrap();
        let types = MountTypes::read();
        assert!(types.type_of(&dir.path().join("out.txt")).is_some(), "{:?}", types.by_device);
        assert_eq!(types.type_of(Path::new("/no/such/dir/out.txt")), None);
    }
}
