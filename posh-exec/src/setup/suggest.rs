//! `posh-exec --suggest-config`: a posh.toml for the networked filesystems the client has
//! mounted, one `[[mount]]` each, with link estimates measured on the spot.
//!
//! [`measure`] times a server (TCP handshakes, else lookups through the mount) and a read
//! through its mount, each bounded in time; [`render`] writes the file from what the mount
//! table said and what was measured, and is pure; [`suggest`] does both and checks that
//! posh-core's own parser reads the result.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use posh_core::config::{Config, ConfigError, ProxyAddress, format_bandwidth, format_rtt};

use super::mountinfo::{self, Export, MalformedLine, NetworkKind, NetworkMount, UnknownSource};
use super::probe::{self, Isolation, ReadRate};
use super::{round_bandwidth, round_rtt};

/// How long and how much each measurement may take.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Resolving the server's name.
    pub resolve: Duration,
    /// TCP handshakes with the server, and how long one may take before the server counts as
    /// not answering on that port.
    pub handshakes: u32,
    pub handshake: Duration,
    /// Lookups through the mount when no handshake was answered, all of them within
    /// `lookups_within`.
    pub lookups: u32,
    pub lookups_within: Duration,
    /// Looking for a file to read: entries and time.
    pub search_entries: usize,
    pub search_within: Duration,
    /// The read: bytes and time, and how many bytes after the first answer make a rate.
    pub read_bytes: u64,
    pub read_within: Duration,
    pub min_rate_bytes: u64,
}

impl Default for Limits {
    /// About 7 s per server at most, when everything times out; a fraction of that otherwise.
    fn default() -> Limits {
        Limits {
            resolve: Duration::from_secs(1),
            handshakes: 3,
            handshake: Duration::from_millis(700),
            lookups: 3,
            lookups_within: Duration::from_secs(1),
            search_entries: 2000,
            // The first listing of a cold sshfs mount, from a sandboxed child on a busy machine,
            // took over 1 s now and then (the suite's sshfs test, beside other builds).
            search_within: Duration::from_secs(2),
            read_bytes: 4 << 20,
            read_within: Duration::from_secs(2),
            min_rate_bytes: 256 << 10,
        }
    }
}

/// How a round-trip time was measured.
#[derive(Clone, Debug, PartialEq)]
pub enum RttHow {
    /// The shortest of `tries` TCP handshakes with `addr`.
    Handshakes { addr: SocketAddr, tries: u32 },
    /// The shortest of `tries` lookups of missing names in `dir`, after `handshakes_failed`.
    Lookups { dir: PathBuf, tries: u32, handshakes_failed: String },
}

#[derive(Clone, Debug, PartialEq)]
pub struct RttMeasure {
    pub rtt: Duration,
    pub how: RttHow,
}

/// A read through the mount.
#[derive(Clone, Debug, PartialEq)]
pub struct RateMeasure {
    pub bytes_per_sec: f64,
    pub file: PathBuf,
    pub read: ReadRate,
}

/// What was measured of one server, or why nothing was.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub rtt: Result<RttMeasure, String>,
    pub bandwidth: Result<RateMeasure, String>,
}

/// Measures the link to `mount`'s server: its round-trip time, and the rate of a read through
/// the mount; what touches the mount runs as `isolation` says.
pub fn measure(mount: &NetworkMount, limits: &Limits, isolation: &Isolation) -> Measured {
    Measured { rtt: measure_rtt(mount, limits, isolation), bandwidth: measure_bandwidth(mount, limits, isolation) }
}

fn measure_rtt(mount: &NetworkMount, limits: &Limits, isolation: &Isolation) -> Result<RttMeasure, String> {
    let port = mount.kind.port();
    let handshakes = probe::resolve(&mount.server.host, port, limits.resolve)
        .and_then(|addr| probe::tcp_connect_rtt(addr, limits.handshakes, limits.handshake).map(|rtt| (addr, rtt)));
    match handshakes {
        Ok((addr, rtt)) => Ok(RttMeasure { rtt, how: RttHow::Handshakes { addr, tries: limits.handshakes } }),
        Err(failed) => {
            let failed = failed.to_string();
            match probe::lookup_rtt(isolation, &mount.mount_point, limits.lookups, limits.lookups_within) {
                Ok(rtt) => Ok(RttMeasure {
                    rtt,
                    how: RttHow::Lookups {
                        dir: mount.mount_point.clone(),
                        tries: limits.lookups,
                        handshakes_failed: failed,
                    },
                }),
                Err(lookups) => Err(format!("{failed}; {lookups}")),
            }
        }
    }
}

fn measure_bandwidth(mount: &NetworkMount, limits: &Limits, isolation: &Isolation) -> Result<RateMeasure, String> {
    let found = probe::find_files(isolation, &mount.mount_point, limits.search_entries, 0, limits.search_within)
        .map_err(|e| e.to_string())?;
    let enough = limits.min_rate_bytes * 2;
    let Some(largest) = found.largest.filter(|file| file.size >= enough) else {
        if found.visited == 0 && found.out_of_time {
            return Err(format!(
                "listing {} gave no entry in the {} the search has (a busy machine or server)",
                mount.mount_point.display(),
                format_rtt(limits.search_within)
            ));
        }
        if found.visited == 0 {
            return Err(format!("{} lists nothing", mount.mount_point.display()));
        }
        return Err(format!(
            "no file of {} or more among the first {} entries of {}",
            bytes(enough),
            found.visited,
            mount.mount_point.display()
        ));
    };
    let file = mount.mount_point.join(&largest.path);
    let read = probe::timed_read(isolation, &file, limits.read_bytes, limits.read_within).map_err(|e| e.to_string())?;
    match read.bytes_per_sec(limits.min_rate_bytes) {
        Some(bytes_per_sec) => Ok(RateMeasure { bytes_per_sec, file, read }),
        None => Err(format!(
            "reading {} gave {} in {}, too little to tell a rate",
            file.display(),
            bytes(read.bytes),
            format_rtt(read.elapsed)
        )),
    }
}

/// `4 MiB`, `300 KiB`, `12 bytes`.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1 << 20)),
        n if n >= 1 << 10 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// A suggestion posh-core's parser would not read: a fault of this code, never of the mounts.
#[derive(Debug, thiserror::Error)]
#[error("the suggested posh.toml does not parse: {0}")]
pub struct SuggestError(#[source] pub ConfigError);

/// The suggestion for the mount table `table` (read from `source`): the posh.toml text, and how
/// many mounts it declares. Every networked mount's server is measured once, within `limits`,
/// what touches a mount running as `isolation` says.
pub fn suggest(
    table: &[u8],
    source: &Path,
    limits: &Limits,
    isolation: &Isolation,
) -> Result<(String, usize), SuggestError> {
    let (entries, malformed) = mountinfo::parse(table);
    let mut mounts = Vec::new();
    let mut unknown = Vec::new();
    for found in mountinfo::network_mounts(&entries) {
        match found {
            Ok(mount) => mounts.push(mount),
            Err(source) => unknown.push(source),
        }
    }
    // One measurement per server and filesystem: mounts of one server share its link.
    let mut servers: Vec<((NetworkKind, String), Measured)> = Vec::new();
    let mut measured = Vec::with_capacity(mounts.len());
    for mount in &mounts {
        let key = (mount.kind, mount.server.host.clone());
        let index = match servers.iter().position(|(k, _)| *k == key) {
            Some(index) => index,
            None => {
                servers.push((key, measure(mount, limits, isolation)));
                servers.len() - 1
            }
        };
        measured.push(index);
    }
    let pairs: Vec<(&NetworkMount, &Measured)> =
        mounts.iter().zip(&measured).map(|(mount, &index)| (mount, &servers[index].1)).collect();
    let text = render(source, &pairs, &unknown, &malformed);
    let config = Config::parse(&text, Path::new("posh.toml")).map_err(SuggestError)?;
    Ok((text, config.mounts.len()))
}

/// The posh.toml for `mounts` (each with its server's measurements), found in the mount table
/// read from `source`; mounts whose source names no server, and lines that are no mounts, are
/// said in comments.
pub fn render(
    source: &Path,
    mounts: &[(&NetworkMount, &Measured)],
    unknown: &[UnknownSource],
    malformed: &[MalformedLine],
) -> String {
    let mut out = String::new();
    let source = comment(&source.display().to_string());
    let _ = writeln!(out, "# posh.toml suggested by `posh-exec --suggest-config` from {source}:");
    out.push_str(HEADER);
    if mounts.is_empty() {
        out.push_str("\n# No networked filesystem (NFS, sshfs, SMB/CIFS) is mounted here: nothing to declare.\n");
    }
    let mut names: Vec<String> = Vec::new();
    for (mount, measured) in mounts {
        out.push('\n');
        out.push_str(&mount_block(mount, measured, &mut names));
    }
    let mut left_out: Vec<(usize, String)> = unknown.iter().map(|u| (u.line, u.to_string())).collect();
    left_out.extend(malformed.iter().map(|m| (m.line, m.to_string())));
    left_out.sort();
    if !left_out.is_empty() {
        out.push_str("\n# Left out:\n");
        for (_, why) in left_out {
            let _ = writeln!(out, "# - {}", comment(&why));
        }
    }
    out
}

const HEADER: &str = "\
# one [[mount]] per networked filesystem mounted here (NFS, sshfs, SMB/CIFS).
#
# Each mount's proxy is started for each run through your own ssh (`proxy = \"ssh://...\"`: your
# ssh configuration, agent and known_hosts decide how the server is reached), exporting the
# server's directory the mount shows; posh-proxy must be installed there (docs/running.md). The
# destination is the mount's server and login: change it when you reach that server by ssh
# under another name, or set `proxy = \"host:4433\"` where a posh-proxy runs as a service
# (docs/proxy.md). Then run `posh-exec --check`.
#
# rtt and bandwidth were measured just now, a few seconds at most per server:
# - rtt: the shortest of 3 TCP handshakes with the server's port for the filesystem (NFS 2049,
#   ssh 22, SMB 445), or, when none was answered, of 3 lookups of missing names through the
#   mount (each the server's to answer);
# - bandwidth: a read of up to 4 MiB of the largest file among the mount's first 2000 entries,
#   its pages dropped from the client's cache first, timed from the first answer on. That is
#   what the filesystem moves over the link, often less than the link carries (`posh-exec
#   --check` measures the proxy's).
# A mount without a measurement takes the [client] estimates (by default 100 Mbit/s, 10 ms).
";

/// One mount's block: what it is and what was measured in comments, then its table; the table
/// commented out too when posh.toml cannot say it.
fn mount_block(mount: &NetworkMount, measured: &Measured, names: &mut Vec<String>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} {} on {} (mountinfo line {})",
        mount.fs_type,
        comment(&mount.source),
        comment(&mount.mount_point.display().to_string()),
        mount.line
    );
    if let Some(first) = &mount.same_as {
        let _ = writeln!(
            out,
            "# the same directory as {} (mounted again, or bound here): scripts may name either",
            comment(&first.display().to_string())
        );
    }
    let mut keys = Vec::new();
    let Some(path) = mount.mount_point.to_str() else {
        let _ = writeln!(out, "# left out: the mount point is not UTF-8 text, which posh.toml cannot hold");
        return out;
    };
    keys.push(format!("name = {}", toml_string(&unique_name(&mount.mount_point, names))));
    keys.push(format!("path = {}", toml_string(path)));
    let proxy = format!("ssh://{}", mount.server.ssh_destination());
    let proxy_ok = ProxyAddress::parse(&proxy);
    keys.push(format!("proxy = {}", toml_string(&proxy)));
    match &mount.export {
        Export::Path(export) => match export.to_str() {
            Some(export) => keys.push(format!("export = {}", toml_string(export))),
            None => {
                let _ = writeln!(out, "# export: the server's path is not UTF-8 text; set `export` to it");
            }
        },
        Export::InHome(relative) => {
            let login = mount.server.user.as_deref().map_or("the login".to_string(), |u| format!("{u}'s"));
            let _ = writeln!(
                out,
                "# export: `~/{}` in {login} home on the server: set `export` to its absolute path",
                comment(&relative.display().to_string())
            );
        }
        Export::Share { share, within } => {
            let within = if within.as_os_str().is_empty() {
                String::new()
            } else {
                format!(", directory `{}`", within.display())
            };
            let _ = writeln!(
                out,
                "# export: the server's directory of the share `{}`{}: set `export` to its path",
                comment(share),
                comment(&within)
            );
        }
    }
    match &measured.rtt {
        Ok(RttMeasure { rtt, how }) => {
            let how = match how {
                RttHow::Handshakes { addr, tries } => format!("the shortest of {tries} TCP handshakes with {addr}"),
                RttHow::Lookups { dir, tries, handshakes_failed } => {
                    format!("the shortest of {tries} lookups through {} ({})", dir.display(), handshakes_failed)
                }
            };
            let _ = writeln!(out, "# rtt: {}", comment(&how));
            keys.push(format!("rtt = {}", toml_string(&format_rtt(round_rtt(*rtt)))));
        }
        Err(why) => {
            let _ = writeln!(out, "# rtt: not measured: {}", comment(why));
        }
    }
    match &measured.bandwidth {
        Ok(RateMeasure { bytes_per_sec, file, read }) => {
            let _ = writeln!(
                out,
                "# bandwidth: read {} of {} in {} ({} after the first answer, in {})",
                bytes(read.bytes),
                comment(&file.display().to_string()),
                format_rtt(round_rtt(read.elapsed)),
                bytes(read.bytes - read.first_bytes),
                format_rtt(round_rtt(read.elapsed.saturating_sub(read.first_elapsed)))
            );
            keys.push(format!("bandwidth = {}", toml_string(&format_bandwidth(round_bandwidth(*bytes_per_sec)))));
        }
        Err(why) => {
            let _ = writeln!(out, "# bandwidth: not measured: {}", comment(why));
        }
    }
    match proxy_ok {
        Ok(_) => {
            out.push_str("[[mount]]\n");
            for key in keys {
                out.push_str(&key);
                out.push('\n');
            }
        }
        Err(why) => {
            let _ = writeln!(
                out,
                "# left out: `{}` is no proxy address ({}); set `proxy` by hand",
                comment(&proxy),
                comment(&why)
            );
            out.push_str("# [[mount]]\n");
            for key in keys {
                out.push_str("# ");
                out.push_str(&key);
                out.push('\n');
            }
        }
    }
    out
}

/// A mount name from the mount point's last component (letters, digits, `-`, `_` and `.`,
/// starting with a letter or digit), unique among `taken`, which it joins; never `client`.
fn unique_name(mount_point: &Path, taken: &mut Vec<String>) -> String {
    let last = mount_point.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Each run of other characters becomes one `-`.
    let mut cleaned = String::new();
    let mut replaced = false;
    for c in last.chars() {
        if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
            cleaned.push(c);
            replaced = false;
        } else if !replaced {
            cleaned.push('-');
            replaced = true;
        }
    }
    let trimmed = cleaned.trim_start_matches(|c: char| !c.is_alphanumeric());
    let base = if trimmed.is_empty() { "mount" } else { trimmed };
    let mut name = base.to_string();
    let mut n = 1;
    while name == "client" || taken.contains(&name) {
        n += 1;
        name = format!("{base}-{n}");
    }
    taken.push(name.clone());
    name
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text safe on one comment line: control characters (a newline in a path) escaped.
fn comment(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::mountinfo::Server;

    fn mount(line: usize, fs_type: &str, source: &str, at: &str, export: Export) -> NetworkMount {
        let kind = NetworkKind::of_type(fs_type).unwrap();
        let (user, host) = match source.split_once('@') {
            Some((user, rest)) => (Some(user.to_string()), rest.split(':').next().unwrap().to_string()),
            None => (None, source.trim_start_matches('/').split([':', '/']).next().unwrap().to_string()),
        };
        NetworkMount {
            line,
            kind,
            fs_type: fs_type.into(),
            source: source.into(),
            mount_point: at.into(),
            server: Server { user, host },
            export,
            same_as: None,
        }
    }

    fn measured(rtt_ms: f64, rate: f64) -> Measured {
        Measured {
            rtt: Ok(RttMeasure {
                rtt: Duration::from_secs_f64(rtt_ms / 1e3),
                how: RttHow::Handshakes { addr: "10.0.0.5:2049".parse().unwrap(), tries: 3 },
            }),
            bandwidth: Ok(RateMeasure {
                bytes_per_sec: rate,
                file: "/mnt/logs/big.log".into(),
                read: ReadRate {
                    bytes: 4 << 20,
                    elapsed: Duration::from_millis(60),
                    first_bytes: 64 << 10,
                    first_elapsed: Duration::from_millis(20),
                },
            }),
        }
    }

    /// Every kind of mount and every way a measurement or a field can fail, in one file that
    /// posh-core reads back.
    #[test]
    fn the_suggestion_says_what_was_found_and_measured_and_parses() {
        let path = |p: &str| Export::Path(PathBuf::from(p));
        let logs = mount(4, "nfs4", "10.0.0.5:/srv/logs", "/mnt/logs", path("/srv/logs"));
        let mut again = mount(9, "nfs4", "10.0.0.5:/srv/logs", "/srv/mirror/logs", path("/srv/logs"));
        again.same_as = Some("/mnt/logs".into());
        let home = mount(5, "fuse.sshfs", "u@h.example:data", "/home/u/my \"data\"\\x", Export::InHome("data".into()));
        let share = mount(
            6,
            "cifs",
            "//nas/projects/2024",
            "/mnt/client",
            Export::Share { share: "projects".into(), within: "2024".into() },
        );
        let mut scoped = mount(7, "nfs4", "[fe80::1%eth0]:/srv", "/mnt/scoped\nline", path("/srv"));
        scoped.server.host = "fe80::1%eth0".into();
        let v6 = mount(8, "nfs4", "[fd00::5]:/srv", "/", path("/srv"));
        let mut v6 = v6;
        v6.server.host = "fd00::5".into();
        let unmeasured = Measured {
            rtt: Err("10.0.0.9 (port 22): no answer within 700 ms; lookups in /m: no answer within 1 s".into()),
            bandwidth: Err("no file of 512 KiB or more among the first 3 entries of /m".into()),
        };
        let lookups = Measured {
            rtt: Ok(RttMeasure {
                rtt: Duration::from_micros(2500),
                how: RttHow::Lookups {
                    dir: "/home/u/x".into(),
                    tries: 3,
                    handshakes_failed: "TCP connect to 10.0.0.9:22: no answer within 700 ms".into(),
                },
            }),
            bandwidth: unmeasured.bandwidth.clone(),
        };
        let fast = measured(0.412, 120e6);
        let unknown = UnknownSource {
            line: 3,
            fs_type: "nfs".into(),
            source_text: "nas".into(),
            mount_point: "/mnt/odd".into(),
            problem: "no `:` between the server and its path".into(),
        };
        let malformed = MalformedLine { line: 2, problem: "no ` - ` before the filesystem type" };
        let text = render(
            Path::new("/proc/self/mountinfo"),
            &[
                (&logs, &fast),
                (&home, &lookups),
                (&share, &unmeasured),
                (&scoped, &fast),
                (&v6, &fast),
                (&again, &fast),
            ],
            &[unknown],
            &[malformed],
        );
        insta::assert_snapshot!(text);
        let config = Config::parse(&text, Path::new("posh.toml")).unwrap();
        let summary: Vec<(&str, &str, String, &str)> = config
            .mounts
            .iter()
            .map(|m| (m.name.as_str(), m.path.to_str().unwrap(), m.proxy.to_string(), m.export.to_str().unwrap()))
            .collect();
        assert_eq!(
            summary,
            [
                ("logs", "/mnt/logs", "ssh://10.0.0.5".to_string(), "/srv/logs"),
                ("my-data-x", "/home/u/my \"data\"\\x", "ssh://u@h.example".to_string(), "/home/u/my \"data\"\\x"),
                // `client` is reserved.
                ("client-2", "/mnt/client", "ssh://nas".to_string(), "/mnt/client"),
                ("mount", "/", "ssh://[fd00::5]".to_string(), "/srv"),
                ("logs-2", "/srv/mirror/logs", "ssh://10.0.0.5".to_string(), "/srv/logs"),
            ]
        );
        let logs = &config.mounts[0].link;
        assert_eq!(logs.rtt, Duration::from_micros(412));
        assert_eq!(logs.bandwidth_bytes_per_sec, 120e6);
        // Unmeasured: the [client] defaults.
        assert_eq!(config.mounts[2].link, posh_core::config::Link::default());
        assert_eq!(config.mounts[1].link.rtt, Duration::from_micros(2500));
    }

    #[test]
    fn with_nothing_mounted_the_suggestion_is_an_empty_configuration() {
        let text = render(Path::new("/proc/self/mountinfo"), &[], &[], &[]);
        assert!(text.contains("# No networked filesystem"), "{text}");
        assert_eq!(Config::parse(&text, Path::new("posh.toml")).unwrap().mounts, []);
    }

    /// The mount table alone, measured for real: a server that answers no handshake (a closed
    /// port on loopback does answer, with a reset), a mount point with a file to read.
    #[test]
    fn a_suggestion_measures_the_mounts_it_finds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.bin"), vec![3u8; 2 << 20]).unwrap();
        let at = dir.path().to_str().unwrap().replace(' ', "\\040");
        let table = format!(
            "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
             48 27 0:50 / {at} rw,relatime - nfs4 127.0.0.1:/srv/logs rw,addr=127.0.0.1\n"
        );
        let (text, mounts) =
            suggest(table.as_bytes(), Path::new("mountinfo"), &Limits::default(), &Isolation::Thread).unwrap();
        assert_eq!(mounts, 1);
        assert!(text.contains("# rtt: the shortest of 3 TCP handshakes with 127.0.0.1:2049\n"), "{text}");
        assert!(text.contains(&format!("# bandwidth: read 2 MiB of {}/big.bin in ", dir.path().display())), "{text}");
        let config = Config::parse(&text, Path::new("posh.toml")).unwrap();
        assert_eq!(config.mounts[0].export, Path::new("/srv/logs"));
        assert!(config.mounts[0].link.rtt < Duration::from_millis(100));
    }
}
