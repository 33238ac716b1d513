//! The client's mount table (`/proc/self/mountinfo`, see proc(5)) and the networked filesystems
//! in it: which server holds each, and which of the server's directories it shows.
//!
//! Pure: the caller reads the text. One line per mount:
//!
//! ```text
//! 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//! (1)(2) (3)  (4)   (5)     (6)      (7)    (8) (9)   (10)       (11)
//! ```
//!
//! mount id, parent id, device, root (the directory of the filesystem the mount shows: `/`
//! unless it binds a subdirectory), mount point, mount options, optional fields up to `-`, type,
//! source, superblock options. The kernel writes a space, tab, newline and backslash in a path or
//! the source as `\040`, `\011`, `\012` and `\134`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};

/// One line of the mount table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    /// The line's number, from 1.
    pub line: usize,
    pub id: u32,
    pub parent: u32,
    /// (major, minor).
    pub device: (u32, u32),
    /// The directory of the filesystem that is the mount's root (`/`, or a bind mount's
    /// subdirectory), unescaped.
    pub root: PathBuf,
    /// Where the client sees it, unescaped.
    pub mount_point: PathBuf,
    /// `nfs4`, `fuse.sshfs`, `ext4`...
    pub fs_type: String,
    /// What was mounted (`host:/export`, `/dev/vda`), unescaped.
    pub source: String,
}

/// A line of the mount table that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("mountinfo line {line}: {problem}")]
pub struct MalformedLine {
    pub line: usize,
    pub problem: &'static str,
}

/// Reads a mount table: the mounts in order, and the lines that are not mounts (which never
/// stop the reading).
pub fn parse(text: &[u8]) -> (Vec<MountEntry>, Vec<MalformedLine>) {
    let mut entries = Vec::new();
    let mut malformed = Vec::new();
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(index + 1, line) {
            Ok(entry) => entries.push(entry),
            Err(problem) => malformed.push(MalformedLine { line: index + 1, problem }),
        }
    }
    (entries, malformed)
}

fn parse_line(line: usize, text: &[u8]) -> Result<MountEntry, &'static str> {
    // Fields are separated by one space each: an empty source shows as two spaces in a row.
    let fields: Vec<&[u8]> = text.split(|&b| b == b' ').collect();
    let separator = fields.iter().position(|f| *f == b"-").ok_or("no ` - ` before the filesystem type")?;
    if separator < 6 {
        return Err("fewer than six fields before ` - `");
    }
    let after = &fields[separator + 1..];
    if after.len() < 2 {
        return Err("no filesystem type and source after ` - `");
    }
    let number = |field: &[u8], what: &'static str| -> Result<u32, &'static str> {
        std::str::from_utf8(field).ok().and_then(|s| s.parse().ok()).ok_or(what)
    };
    let id = number(fields[0], "the mount id is not a number")?;
    let parent = number(fields[1], "the parent id is not a number")?;
    let (major, minor) = fields[2]
        .iter()
        .position(|&b| b == b':')
        .map(|at| (&fields[2][..at], &fields[2][at + 1..]))
        .ok_or("the device is not MAJOR:MINOR")?;
    let device = (number(major, "the device is not MAJOR:MINOR")?, number(minor, "the device is not MAJOR:MINOR")?);
    let path = |field: &[u8], what: &'static str| -> Result<PathBuf, &'static str> {
        let bytes = unescape(field);
        if bytes.first() != Some(&b'/') {
            return Err(what);
        }
        Ok(PathBuf::from(OsString::from_vec(bytes)))
    };
    let root = path(fields[3], "the root is not an absolute path")?;
    let mount_point = path(fields[4], "the mount point is not an absolute path")?;
    let fs_type = String::from_utf8_lossy(&unescape(after[0])).into_owned();
    if fs_type.is_empty() {
        return Err("an empty filesystem type");
    }
    let source = String::from_utf8_lossy(&unescape(after[1])).into_owned();
    Ok(MountEntry { line, id, parent, device, root, mount_point, fs_type, source })
}

/// Undoes the kernel's `\ooo` escapes (three octal digits); any other backslash stays.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\'
            && let Some(digits) = field.get(i + 1..i + 4)
            && digits.iter().all(|d| (b'0'..=b'7').contains(d))
        {
            let value = digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0'));
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(field[i]);
        i += 1;
    }
    out
}

/// The networked filesystems posh knows how to place a proxy beside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NetworkKind {
    /// `nfs`, `nfs4`: `host:/export`.
    Nfs,
    /// `fuse.sshfs`: `[user@]host:[path]`.
    Sshfs,
    /// `cifs`, `smb3`: `//host/share`.
    Cifs,
}

impl NetworkKind {
    /// The kind of a filesystem type as the mount table names it; `None` for the others
    /// (local filesystems, FUSE filesystems other than sshfs, pseudo filesystems).
    pub fn of_type(fs_type: &str) -> Option<NetworkKind> {
        match fs_type {
            "nfs" | "nfs4" => Some(NetworkKind::Nfs),
            "fuse.sshfs" => Some(NetworkKind::Sshfs),
            "cifs" | "smb3" => Some(NetworkKind::Cifs),
            _ => None,
        }
    }

    /// The TCP port the server answers this filesystem's protocol on.
    pub fn port(self) -> u16 {
        match self {
            NetworkKind::Nfs => 2049,
            NetworkKind::Sshfs => 22,
            NetworkKind::Cifs => 445,
        }
    }

    /// What the port serves, for messages.
    pub fn service(self) -> &'static str {
        match self {
            NetworkKind::Nfs => "NFS",
            NetworkKind::Sshfs => "ssh",
            NetworkKind::Cifs => "SMB",
        }
    }
}

/// The machine that serves a mount.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Server {
    /// The login of an sshfs mount (`user@host:`), the one ssh would use.
    pub user: Option<String>,
    /// A name or an address; IPv6 without its brackets.
    pub host: String,
}

impl Server {
    /// `host` or `user@host`, IPv6 in brackets: as ssh takes it.
    pub fn ssh_destination(&self) -> String {
        let host = self.host_for_url();
        match &self.user {
            Some(user) => format!("{user}@{host}"),
            None => host,
        }
    }

    /// The host, IPv6 in brackets (before a port).
    pub fn host_for_url(&self) -> String {
        if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() }
    }
}

/// The server's directory a mount shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Export {
    /// An absolute path on the server.
    Path(PathBuf),
    /// A path relative to the login's home directory on the server (sshfs `host:` or
    /// `host:data`): its absolute path is the server's to tell.
    InHome(PathBuf),
    /// A directory within an SMB share; the share's directory on the server is not in the
    /// mount table.
    Share { share: String, within: PathBuf },
}

/// A networked filesystem the client has mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkMount {
    pub line: usize,
    pub kind: NetworkKind,
    pub fs_type: String,
    /// As the mount table gives it, unescaped.
    pub source: String,
    pub mount_point: PathBuf,
    pub server: Server,
    /// The server's directory the mount point shows (the source's path, and below it the
    /// directory a bind mount shows).
    pub export: Export,
    /// An earlier mount point that shows the same directory of the same server (the export
    /// mounted twice, or a bind mount of it).
    pub same_as: Option<PathBuf>,
}

/// A networked mount whose source says no server posh can name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("mountinfo line {line}: {fs_type} `{source_text}` on {}: {problem}", mount_point.display())]
pub struct UnknownSource {
    pub line: usize,
    pub fs_type: String,
    pub source_text: String,
    pub mount_point: PathBuf,
    pub problem: String,
}

/// The networked filesystems among `entries`, in the table's order: one per mount point (of
/// several mounts on one mount point, the last hides the others, so only it counts, whatever its
/// type), each with its server and the server's directory. Local, pseudo and other FUSE
/// filesystems are left out.
pub fn network_mounts(entries: &[MountEntry]) -> Vec<Result<NetworkMount, UnknownSource>> {
    let visible: Vec<&MountEntry> = entries
        .iter()
        .enumerate()
        .filter(|(i, entry)| !entries[i + 1..].iter().any(|later| later.mount_point == entry.mount_point))
        .map(|(_, entry)| entry)
        .collect();
    let mut found: Vec<Result<NetworkMount, UnknownSource>> = Vec::new();
    for entry in visible {
        let Some(kind) = NetworkKind::of_type(&entry.fs_type) else {
            continue;
        };
        let parsed = match kind {
            NetworkKind::Nfs => nfs_source(&entry.source),
            NetworkKind::Sshfs => sshfs_source(&entry.source),
            NetworkKind::Cifs => cifs_source(&entry.source),
        };
        let (server, export) = match parsed {
            Ok(parsed) => parsed,
            Err(problem) => {
                found.push(Err(UnknownSource {
                    line: entry.line,
                    fs_type: entry.fs_type.clone(),
                    source_text: entry.source.clone(),
                    mount_point: entry.mount_point.clone(),
                    problem,
                }));
                continue;
            }
        };
        // NFS shows the path of the mount's own root in its source (its root field is always
        // `/`); the others show what was mounted, and the root field says which directory of it
        // a bind mount shows.
        let export = below(export, &entry.root);
        let same_as = found
            .iter()
            .flatten()
            .find(|earlier| earlier.kind == kind && earlier.server == server && earlier.export == export)
            .map(|earlier| earlier.mount_point.clone());
        found.push(Ok(NetworkMount {
            line: entry.line,
            kind,
            fs_type: entry.fs_type.clone(),
            source: entry.source.clone(),
            mount_point: entry.mount_point.clone(),
            server,
            export,
            same_as,
        }));
    }
    found
}

/// `export` extended by a bind mount's `root` (`/` adds nothing).
fn below(export: Export, root: &Path) -> Export {
    let Ok(rest) = root.strip_prefix("/") else {
        return export;
    };
    if rest.as_os_str().is_empty() {
        return export;
    }
    match export {
        Export::Path(path) => Export::Path(path.join(rest)),
        Export::InHome(path) => Export::InHome(path.join(rest)),
        Export::Share { share, within } => Export::Share { share, within: within.join(rest) },
    }
}

/// Splits `host:rest` or `[v6]:rest` at the colon after the host.
fn split_host(text: &str) -> Result<(&str, &str), String> {
    if let Some(inside) = text.strip_prefix('[') {
        let (host, after) = inside.split_once(']').ok_or("an IPv6 address without its closing `]`")?;
        let rest = after.strip_prefix(':').ok_or("no `:` after the server's address")?;
        return Ok((host, rest));
    }
    text.split_once(':').ok_or_else(|| "no `:` between the server and its path".to_string())
}

fn check_host(host: &str) -> Result<String, String> {
    if host.is_empty() {
        return Err("no server named".to_string());
    }
    let fits = host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '%'));
    if !fits {
        return Err(format!("`{host}` is not a host name or address"));
    }
    Ok(host.to_string())
}

/// `host:/export` or `[v6]:/export`.
fn nfs_source(source: &str) -> Result<(Server, Export), String> {
    let (host, path) = split_host(source)?;
    if !path.starts_with('/') {
        return Err(format!("the export `{path}` is not an absolute path"));
    }
    Ok((Server { user: None, host: check_host(host)? }, Export::Path(PathBuf::from(path))))
}

/// `[user@]host:[path]`, a relative path (or none) being in the login's home; fstab's old
/// `sshfs#` prefix is allowed.
fn sshfs_source(source: &str) -> Result<(Server, Export), String> {
    let source = source.strip_prefix("sshfs#").unwrap_or(source);
    let (user, rest) = match login_end(source) {
        Some(at) => (Some(&source[..at]), &source[at + 1..]),
        None => (None, source),
    };
    if user.is_some_and(str::is_empty) {
        return Err("an empty login before `@`".to_string());
    }
    let (host, path) = split_host(rest)?;
    let server = Server { user: user.map(str::to_string), host: check_host(host)? };
    let export =
        if path.starts_with('/') { Export::Path(PathBuf::from(path)) } else { Export::InHome(PathBuf::from(path)) };
    Ok((server, export))
}

/// Where the login of `[user@]host:path` ends: the last `@` before the host's end (its `:`, or
/// the `]` of an IPv6 address in brackets), since a path may hold `@` itself.
fn login_end(source: &str) -> Option<usize> {
    let colon = source.find(':')?;
    let host_end = match source.find('[') {
        Some(open) if open < colon => open + source[open..].find(']')?,
        _ => colon,
    };
    source[..host_end].rfind('@')
}

/// `//host/share[/directory]` (backslashes taken as slashes).
fn cifs_source(source: &str) -> Result<(Server, Export), String> {
    let unc = source.replace('\\', "/");
    let rest = unc.strip_prefix("//").ok_or("not `//server/share`")?;
    let (host, path) = rest.split_once('/').ok_or("no share after the server")?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let (share, within) = path.split_once('/').unwrap_or((path, ""));
    if share.is_empty() {
        return Err("no share after the server".to_string());
    }
    let within = PathBuf::from(within.trim_start_matches('/'));
    Ok((Server { user: None, host: check_host(host)? }, Export::Share { share: share.to_string(), within }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mount table as a client with NFS, sshfs and SMB mounts shows it, and a container's
    /// usual pseudo and FUSE filesystems around them.
    const TABLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
42 27 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw,discard
48 27 0:50 / /mnt/logs rw,relatime shared:30 - nfs4 10.0.0.5:/srv/logs rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.5
49 27 0:51 / /mnt/old\\040data rw,relatime shared:31 - nfs storage-1.example.org:/export/old\\040data rw,vers=3,rsize=65536,wsize=65536,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr=10.0.0.6,mountvers=3,mountport=20048,mountproto=udp,local_lock=none,addr=10.0.0.6
112 27 0:52 / /mnt/netrig rw,nosuid,nodev,relatime shared:61 - fuse.sshfs root@10.77.2.2:/d rw,user_id=0,group_id=0
113 27 0:52 /sub /home/u/work rw,nosuid,nodev,relatime shared:61 - fuse.sshfs root@10.77.2.2:/d rw,user_id=0,group_id=0
60 27 0:60 / /mnt/share rw,relatime shared:40 - cifs //fileserver/projects rw,vers=3.1.1,cache=strict,username=u,uid=0,noforceuid,gid=0,noforcegid,addr=192.168.1.10,file_mode=0755,dir_mode=0755
70 27 0:61 / /run/user/1000/gvfs rw,nosuid,nodev,relatime shared:50 - fuse.gvfsd-fuse gvfsd-fuse rw,user_id=1000,group_id=1000
71 27 0:62 / /var/lib/lxcfs rw,nosuid,nodev,relatime shared:51 - fuse.lxcfs lxcfs rw,user_id=0,group_id=0
80 27 0:70 / /mnt/logs-again rw,relatime shared:80 - nfs4 10.0.0.5:/srv/logs rw,vers=4.2,addr=10.0.0.5
";

    fn network(table: &str) -> Vec<NetworkMount> {
        let (entries, malformed) = parse(table.as_bytes());
        assert_eq!(malformed, []);
        network_mounts(&entries).into_iter().map(Result::unwrap).collect()
    }

    #[test]
    fn lines_are_read_with_their_escapes_undone() {
        let (entries, malformed) = parse(TABLE.as_bytes());
        assert_eq!(malformed, []);
        assert_eq!(entries.len(), 11);
        let old = &entries[4];
        assert_eq!(
            old,
            &MountEntry {
                line: 5,
                id: 49,
                parent: 27,
                device: (0, 51),
                root: PathBuf::from("/"),
                mount_point: PathBuf::from("/mnt/old data"),
                fs_type: "nfs".into(),
                source: "storage-1.example.org:/export/old data".into(),
            }
        );
        assert_eq!(entries[6].root, Path::new("/sub"));
        // Tabs, newlines and backslashes too; a backslash that starts no escape stays.
        assert_eq!(unescape(br"a\011b\012c\134d\e\04"), b"a\tb\nc\\d\\e\\04");
    }

    #[test]
    fn networked_filesystems_are_found_with_their_servers_and_exports() {
        let found = network(TABLE);
        let summary: Vec<(&str, &str, String, &Export)> = found
            .iter()
            .map(|m| (m.mount_point.to_str().unwrap(), m.fs_type.as_str(), m.server.ssh_destination(), &m.export))
            .collect();
        let path = |p: &str| Export::Path(PathBuf::from(p));
        assert_eq!(
            summary,
            [
                ("/mnt/logs", "nfs4", "10.0.0.5".to_string(), &path("/srv/logs")),
                ("/mnt/old data", "nfs", "storage-1.example.org".to_string(), &path("/export/old data")),
                ("/mnt/netrig", "fuse.sshfs", "root@10.77.2.2".to_string(), &path("/d")),
                // A bind mount of a directory of the sshfs mount shows that directory.
                ("/home/u/work", "fuse.sshfs", "root@10.77.2.2".to_string(), &path("/d/sub")),
                (
                    "/mnt/share",
                    "cifs",
                    "fileserver".to_string(),
                    &Export::Share { share: "projects".into(), within: PathBuf::new() }
                ),
                ("/mnt/logs-again", "nfs4", "10.0.0.5".to_string(), &path("/srv/logs")),
            ]
        );
        // The export mounted a second time is said to be the first mount's directory; the bind
        // mount of a subdirectory is not.
        assert_eq!(found[5].same_as.as_deref(), Some(Path::new("/mnt/logs")));
        assert_eq!(found[3].same_as, None);
        assert!(found.iter().take(5).all(|m| m.same_as.is_none()));
        assert_eq!(found.iter().map(|m| m.kind.port()).collect::<Vec<_>>(), [2049, 2049, 22, 22, 445, 2049]);
    }

    #[test]
    fn of_mounts_stacked_on_one_mount_point_only_the_last_counts() {
        let twice = "\
48 27 0:50 / /mnt/logs rw,relatime - nfs4 10.0.0.5:/srv/logs rw,addr=10.0.0.5
90 48 0:90 / /mnt/logs rw,relatime - nfs4 10.0.0.7:/srv/logs rw,addr=10.0.0.7
";
        let found = network(twice);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].server.host, "10.0.0.7");
        // A local filesystem mounted over a networked one hides it.
        let hidden = "\
48 27 0:50 / /mnt/logs rw,relatime - nfs4 10.0.0.5:/srv/logs rw,addr=10.0.0.5
91 48 0:91 / /mnt/logs rw,relatime - tmpfs tmpfs rw
";
        assert_eq!(network(hidden), []);
    }

    #[test]
    fn sources_of_every_spelling_name_their_server() {
        let one = |fs_type: &str, source: &str| {
            let line = format!("1 0 0:1 / /m rw - {fs_type} {source} rw\n");
            let (entries, _) = parse(line.as_bytes());
            network_mounts(&entries).remove(0)
        };
        let server = |user: Option<&str>, host: &str| Server { user: user.map(str::to_string), host: host.to_string() };
        let ok = |fs_type: &str, source: &str| {
            let mount = one(fs_type, source).unwrap();
            (mount.server, mount.export)
        };
        let path = |p: &str| Export::Path(PathBuf::from(p));
        let home = |p: &str| Export::InHome(PathBuf::from(p));
        assert_eq!(ok("nfs4", "[fd00::5]:/srv"), (server(None, "fd00::5"), path("/srv")));
        assert_eq!(ok("nfs", "nas:/"), (server(None, "nas"), path("/")));
        assert_eq!(ok("fuse.sshfs", "u@h.example:/data/x@y:z"), (server(Some("u"), "h.example"), path("/data/x@y:z")));
        assert_eq!(ok("fuse.sshfs", "u@h:/a@[b]"), (server(Some("u"), "h"), path("/a@[b]")));
        assert_eq!(ok("fuse.sshfs", "h:"), (server(None, "h"), home("")));
        assert_eq!(ok("fuse.sshfs", "me@h:data"), (server(Some("me"), "h"), home("data")));
        assert_eq!(ok("fuse.sshfs", "sshfs#me@h:/srv"), (server(Some("me"), "h"), path("/srv")));
        assert_eq!(ok("fuse.sshfs", "me@[::1]:/srv"), (server(Some("me"), "::1"), path("/srv")));
        assert_eq!(ok("fuse.sshfs", "[::1]:/srv"), (server(None, "::1"), path("/srv")));
        assert_eq!(
            ok("smb3", "//nas.lan/team/sub/dir"),
            (server(None, "nas.lan"), Export::Share { share: "team".into(), within: PathBuf::from("sub/dir") })
        );
        assert_eq!(
            ok("cifs", r"\\nas\team"),
            (server(None, "nas"), Export::Share { share: "team".into(), within: "".into() })
        );
        assert_eq!(server(Some("me"), "::1").ssh_destination(), "me@[::1]");

        let problem = |fs_type: &str, source: &str| one(fs_type, source).unwrap_err().problem;
        assert_eq!(problem("nfs4", "nas"), "no `:` between the server and its path");
        assert_eq!(problem("nfs4", "nas:export"), "the export `export` is not an absolute path");
        assert_eq!(problem("nfs4", "[fd00::5:/srv"), "an IPv6 address without its closing `]`");
        assert_eq!(problem("fuse.sshfs", "@h:/x"), "an empty login before `@`");
        assert_eq!(problem("cifs", "nas/team"), "not `//server/share`");
        assert_eq!(problem("cifs", "//nas"), "no share after the server");
        assert_eq!(problem("nfs", ":/srv"), "no server named");
        assert_eq!(problem("nfs", "a\\040b:/srv"), "`a b` is not a host name or address");
        let error = one("nfs", "nas").unwrap_err();
        assert_eq!(error.to_string(), "mountinfo line 1: nfs `nas` on /m: no `:` between the server and its path");
    }

    #[test]
    fn malformed_lines_are_reported_and_the_rest_is_read() {
        let table = "\
garbage
1 2 3:4 / /a rw shared:1 nfs h:/x rw
x 2 3:4 / /a rw - nfs h:/x rw
1 x 3:4 / /a rw - nfs h:/x rw
1 2 34 / /a rw - nfs h:/x rw
1 2 3:x / /a rw - nfs h:/x rw
1 2 3:4 rel /a rw - nfs h:/x rw
1 2 3:4 / rel rw - nfs h:/x rw
1 2 3:4 / /a rw -
1 2 3:4 / /a - nfs h:/x rw
1 2 3:4 / /a rw -  h:/x rw

48 27 0:50 / /mnt/logs rw,relatime - nfs4 10.0.0.5:/srv/logs rw
";
        let (entries, malformed) = parse(table.as_bytes());
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].line, 13);
        let problems: Vec<(usize, &str)> = malformed.iter().map(|m| (m.line, m.problem)).collect();
        assert_eq!(
            problems,
            [
                (1, "no ` - ` before the filesystem type"),
                (2, "no ` - ` before the filesystem type"),
                (3, "the mount id is not a number"),
                (4, "the parent id is not a number"),
                (5, "the device is not MAJOR:MINOR"),
                (6, "the device is not MAJOR:MINOR"),
                (7, "the root is not an absolute path"),
                (8, "the mount point is not an absolute path"),
                (9, "no filesystem type and source after ` - `"),
                (10, "fewer than six fields before ` - `"),
                (11, "an empty filesystem type"),
            ]
        );
        assert_eq!(malformed[0].to_string(), "mountinfo line 1: no ` - ` before the filesystem type");
        // Bytes that are not UTF-8 in a path are kept as they are.
        let (entries, _) = parse(b"1 2 3:4 / /mnt/\xff rw - nfs h:/x rw\n");
        assert_eq!(entries[0].mount_point.as_os_str().as_encoded_bytes(), b"/mnt/\xff");
    }

    #[test]
    fn an_empty_source_is_a_field_of_its_own() {
        let (entries, malformed) = parse(b"1 2 3:4 / /a rw - nfs  rw\n");
        assert_eq!(malformed, []);
        assert_eq!(entries[0].source, "");
        let found = network_mounts(&entries);
        assert_eq!(found[0].as_ref().unwrap_err().problem, "no `:` between the server and its path");
    }
}
