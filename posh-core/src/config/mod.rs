//! `posh.toml`: mounts, their proxies and link estimates, and how the file is found.
//!
//! [`Config::parse`] reads the text of a file (the caller or [`discover`] reads it: posh-core does
//! no I/O), [`Config::mount_for`] tells which mount, if any, holds a path, and
//! [`Mount::to_export`] maps a client path to the proxy's path. `docs/configuration.md` is the
//! user's reference; keep the two in step.

mod discover;
mod units;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::fs::normalize_path;
use crate::text::{LineIndex, Span};

pub use discover::{FILE_NAME, discover, load, xdg_base_dir};
pub use units::{
    DEFAULT_BANDWIDTH_BYTES_PER_SEC, DEFAULT_RTT, format_bandwidth, format_rtt, parse_bandwidth, parse_linger,
    parse_rtt,
};

/// A loaded configuration. The default has no mounts: nothing is remote and posh behaves like
/// bash.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Config {
    /// In the order of the file.
    pub mounts: Vec<Mount>,
    /// The client's own link (`[client]`), defaults applied.
    pub client: Link,
    /// The file the configuration came from; `None` for the default configuration.
    pub origin: Option<PathBuf>,
    /// How scripts are run (`[[run]]`): the environment and arguments the editor plans a script
    /// with, as `posh-exec --explain` plans with its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunConfig>,
    /// `mounts` by name and by path, made on the first look-up (see [`MountIndex`]).
    #[serde(skip)]
    index: MountIndex,
}

/// The mounts of a [`Config`] by name and by path, so that a look-up costs the same with a
/// thousand mounts as with one (the planner asks for every file and every edge). Made on the
/// first look-up from the mounts as they are then; a look-up that finds mounts added or removed
/// since, or the entry it found no longer matching, searches them one by one instead. (A mount
/// renamed or moved in place after a look-up is not seen: nothing does that, `--proxy` changes a
/// mount's proxy only.) A clone starts without one.
#[derive(Default)]
struct MountIndex(std::sync::OnceLock<Index>);

/// Up to this many mounts, a path's mount is found by comparing it with each: hashing each of a
/// path's ancestors costs more (a plan over 2,000 files with one mount spent a seventh of its
/// time there).
const SCANNED_MOUNTS: usize = 8;

struct Index {
    /// How many mounts it was made from.
    count: usize,
    by_name: std::collections::HashMap<String, usize>,
    by_path: std::collections::HashMap<PathBuf, usize>,
}

impl Clone for MountIndex {
    fn clone(&self) -> MountIndex {
        MountIndex::default()
    }
}

/// An index says nothing of the configuration: two configurations with the same mounts are
/// equal whether or not either was looked into.
impl PartialEq for MountIndex {
    fn eq(&self, _: &MountIndex) -> bool {
        true
    }
}

impl fmt::Debug for MountIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MountIndex")
    }
}

impl MountIndex {
    /// The index of `mounts`, made now if not yet; `None` when `mounts` changed since it was made.
    fn of(&self, mounts: &[Mount]) -> Option<&Index> {
        let index = self.0.get_or_init(|| Index {
            count: mounts.len(),
            by_name: mounts.iter().enumerate().map(|(i, m)| (m.name.clone(), i)).collect(),
            by_path: mounts.iter().enumerate().map(|(i, m)| (m.path.clone(), i)).collect(),
        });
        (index.count == mounts.len()).then_some(index)
    }
}

/// One `[[run]]`: a script, and what it is run with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunConfig {
    /// Absolute (a relative `script` is relative to the configuration file's directory) and
    /// lexically normalized.
    pub script: PathBuf,
    /// Its arguments (`$1`...).
    pub args: Vec<String>,
    /// Variables of its environment; the others are not known (an editor's environment is not
    /// the run's).
    pub env: std::collections::BTreeMap<String, String>,
}

impl Config {
    /// What the configuration says `script` (an absolute path) is run with, if it names it.
    pub fn run_of(&self, script: &Path) -> Option<&RunConfig> {
        let script = normalize_path(script);
        self.runs.iter().find(|run| run.script == script)
    }
}

/// One `[[mount]]`: a client path prefix served by a proxy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mount {
    /// Unique among the mounts; never `client`.
    pub name: String,
    /// The client path prefix: absolute and lexically normalized (no `.`, `..` or trailing `/`).
    pub path: PathBuf,
    pub proxy: ProxyAddress,
    /// The proxy's path for [`Mount::path`]: absolute and lexically normalized.
    pub export: PathBuf,
    /// The link between the client and this proxy, defaults applied.
    pub link: Link,
    /// Only for [`ProxyAddress::Ssh`]: the program ssh runs on the host (`proxy_program`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_program: Option<String>,
    /// Only for [`ProxyAddress::Ssh`]: how long the proxy stays up, idle, after the run that
    /// started it, for the next runs to use (`linger`); `None`: it ends with its run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linger: Option<Duration>,
}

/// The program ssh runs on the host when the mount names none.
pub const DEFAULT_PROXY_PROGRAM: &str = "posh-proxy";

/// Where a mount's proxy runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ProxyAddress {
    /// An in-process proxy on loopback (`proxy = "embedded"`).
    Embedded,
    /// `host` is a name or an IP address, IPv6 without its brackets.
    Remote { host: String, port: u16 },
    /// A proxy posh-exec starts for the run through the user's own `ssh`
    /// (`proxy = "ssh://[user@]host[:port]"`); `host` may be a `Host` alias of the ssh
    /// configuration, IPv6 without its brackets; no port: ssh's own choice.
    Ssh { user: Option<String>, host: String, port: Option<u16> },
}

/// Link estimates for the planner.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Link {
    pub bandwidth_bytes_per_sec: f64,
    #[serde(rename = "rtt_ms", serialize_with = "serialize_ms")]
    pub rtt: Duration,
}

fn serialize_ms<S: serde::Serializer>(rtt: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(rtt.as_secs_f64() * 1e3)
}

impl Default for Link {
    /// 100 Mbit/s and 10 ms: a conservative WAN link, assumed when nothing is known.
    fn default() -> Link {
        Link { bandwidth_bytes_per_sec: DEFAULT_BANDWIDTH_BYTES_PER_SEC, rtt: DEFAULT_RTT }
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, rtt {}", format_bandwidth(self.bandwidth_bytes_per_sec), format_rtt(self.rtt))
    }
}

impl ProxyAddress {
    /// Parses `embedded`, `host:port`, `10.0.0.5:4433`, `[::1]:4433` or
    /// `ssh://[user@]host[:port]`.
    pub fn parse(text: &str) -> Result<ProxyAddress, String> {
        if text == "embedded" {
            return Ok(ProxyAddress::Embedded);
        }
        if let Some(rest) = text.strip_prefix("ssh://") {
            return parse_ssh(rest);
        }
        if text.contains("://") {
            return Err(format!("unknown scheme in \"{text}\"; the one scheme is ssh://[user@]host[:port]"));
        }
        if text.eq_ignore_ascii_case("embedded") {
            return Err(format!("unknown proxy \"{text}\"; did you mean \"embedded\"?"));
        }
        let expected = "expected \"host:port\" or \"embedded\"";
        if text.is_empty() {
            return Err(format!("{expected}, found an empty string"));
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (address, after) =
                rest.split_once(']').ok_or_else(|| format!("missing `]` after the IPv6 address in \"{text}\""))?;
            if address.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!("`{address}` is not an IPv6 address"));
            }
            let port = after.strip_prefix(':').ok_or_else(|| format!("missing port in \"{text}\"; {expected}"))?;
            (address, port)
        } else {
            let (host, port) =
                text.rsplit_once(':').ok_or_else(|| format!("missing port in \"{text}\"; {expected}"))?;
            if host.contains(':') {
                return Err(format!("an IPv6 address goes in brackets: \"[{host}]:{port}\""));
            }
            if host.is_empty() {
                return Err(format!("missing host in \"{text}\"; {expected}"));
            }
            if !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
                return Err(format!("`{host}` is not a host name or IP address"));
            }
            (host, port)
        };
        let port = match port.parse::<u16>() {
            Ok(0) | Err(_) => {
                return Err(format!("`{port}` is not a port; expected a number from 1 to 65535"));
            }
            Ok(port) => port,
        };
        Ok(ProxyAddress::Remote { host: host.to_string(), port })
    }
}

/// A user or host name as ssh takes it on its command line: never taken for an option (no
/// leading `-`), nor for anything but one name.
fn ssh_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// `[user@]host[:port]` after `ssh://`.
fn parse_ssh(rest: &str) -> Result<ProxyAddress, String> {
    let expected = "expected \"ssh://[user@]host[:port]\"";
    if let Some((_, path)) = rest.split_once('/') {
        return Err(format!(
            "\"ssh://{rest}\" names a path (/{path}); set the host's directory with `export` and write \
             \"ssh://[user@]host[:port]\""
        ));
    }
    let (user, host_port) = match rest.split_once('@') {
        Some((user, host_port)) => {
            if !ssh_name(user) {
                return Err(format!("`{user}` is not a user name; {expected}"));
            }
            (Some(user.to_string()), host_port)
        }
        None => (None, rest),
    };
    let (host, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
        let (address, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("missing `]` after the IPv6 address in \"ssh://{rest}\""))?;
        if address.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("`{address}` is not an IPv6 address"));
        }
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or_else(|| format!("`{after}` after `]`; {expected}"))?),
        };
        (address, port)
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Err(format!("missing host; {expected}"));
    }
    if !host.contains(':') && !ssh_name(host) {
        return Err(format!("`{host}` is not a host name or IP address"));
    }
    let port = match port.map(str::parse::<u16>) {
        None => None,
        Some(Ok(port)) if port > 0 => Some(port),
        Some(_) => {
            return Err(format!("`{}` is not a port; expected a number from 1 to 65535", port.unwrap_or_default()));
        }
    };
    Ok(ProxyAddress::Ssh { user, host: host.to_string(), port })
}

impl std::str::FromStr for ProxyAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<ProxyAddress, String> {
        ProxyAddress::parse(text)
    }
}

/// `embedded`, `host:port`, `[v6]:port` or `ssh://[user@]host[:port]`: the spelling [`ProxyAddress::parse`] reads.
impl fmt::Display for ProxyAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyAddress::Embedded => f.write_str("embedded"),
            ProxyAddress::Remote { host, port } if host.contains(':') => {
                write!(f, "[{host}]:{port}")
            }
            ProxyAddress::Remote { host, port } => write!(f, "{host}:{port}"),
            ProxyAddress::Ssh { user, host, port } => {
                f.write_str("ssh://")?;
                if let Some(user) = user {
                    write!(f, "{user}@")?;
                }
                if host.contains(':') {
                    write!(f, "[{host}]")?
                } else {
                    f.write_str(host)?
                }
                match port {
                    Some(port) => write!(f, ":{port}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Serialized as its [`Display`](fmt::Display) string.
impl Serialize for ProxyAddress {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Config {
    /// Parses the text of a configuration file; `origin` is its path, for error messages and
    /// [`Config::origin`]. The first error, in the order of the file, is returned.
    pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        Parser::new(text, origin).parse()
    }

    /// The mount holding an absolute `path`: the one whose path is the longest component-wise
    /// prefix of `path` after lexical normalization (`/mnt/logs2/x` is not under `/mnt/logs`).
    /// `None` for a relative path (resolve it against the working directory first) and for a
    /// path under no mount (a local path).
    pub fn mount_for(&self, path: &Path) -> Option<&Mount> {
        self.mount_index_for(path).map(|i| &self.mounts[i])
    }

    /// The index in [`Config::mounts`] of the mount holding `path` (see [`Config::mount_for`]).
    pub fn mount_index_for(&self, path: &Path) -> Option<usize> {
        let path = crate::fs::normalized(path);
        if !path.is_absolute() {
            return None;
        }
        let scan = || {
            let under = self.mounts.iter().enumerate().filter(|(_, mount)| crate::fs::is_under(&path, &mount.path));
            under.max_by_key(|(_, mount)| mount.path.components().count()).map(|(i, _)| i)
        };
        // A few mounts are compared faster than the path's ancestors are hashed.
        if self.mounts.len() <= SCANNED_MOUNTS {
            return scan();
        }
        let Some(index) = self.index.of(&self.mounts) else { return scan() };
        // The longest prefix first: the path itself, then each directory above it.
        let found = path.ancestors().find_map(|prefix| index.by_path.get(prefix).map(|&i| (prefix, i)));
        match found {
            Some((prefix, i)) if self.mounts[i].path == prefix => Some(i),
            Some(_) => scan(),
            None => None,
        }
    }

    /// The mount called `name`.
    pub fn mount_named(&self, name: &str) -> Option<&Mount> {
        self.mount_index_named(name).map(|i| &self.mounts[i])
    }

    /// The index in [`Config::mounts`] of the mount called `name`.
    pub fn mount_index_named(&self, name: &str) -> Option<usize> {
        let indexed = self.index.of(&self.mounts).and_then(|index| index.by_name.get(name).copied());
        match indexed {
            Some(i) if self.mounts[i].name == name => Some(i),
            _ => self.mounts.iter().position(|mount| mount.name == name),
        }
    }
}

impl Mount {
    /// Maps a client path under this mount to the proxy's path under [`Mount::export`]
    /// (`/mnt/logs/a.log` to `/srv/logs/a.log`). `None` when the path, lexically normalized, is
    /// not under [`Mount::path`]. With nested mounts, ask [`Config::mount_for`] which mount
    /// serves a path first: this only maps prefixes.
    pub fn to_export(&self, client_path: &Path) -> Option<PathBuf> {
        let path = normalize_path(client_path);
        let rest = path.strip_prefix(&self.path).ok()?;
        Some(join_rest(&self.export, rest))
    }

    /// The inverse of [`Mount::to_export`]: a proxy path under [`Mount::export`] to the client's.
    pub fn to_client(&self, export_path: &Path) -> Option<PathBuf> {
        let path = normalize_path(export_path);
        let rest = path.strip_prefix(&self.export).ok()?;
        Some(join_rest(&self.path, rest))
    }
}

fn join_rest(base: &Path, rest: &Path) -> PathBuf {
    if rest.as_os_str().is_empty() { base.to_path_buf() } else { base.join(rest) }
}

/// What went wrong, for callers that branch on it; the message says it to the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ConfigErrorKind {
    /// The text is not TOML.
    Syntax,
    /// A key posh does not know (usually a typo).
    UnknownKey,
    /// A value of the wrong TOML type.
    WrongType,
    /// A required key is missing.
    MissingKey,
    /// A value of the right type that does not make sense (a relative path, a bad unit...).
    InvalidValue,
    /// Two mounts with the same path or name.
    Duplicate,
    /// A file named by `--config` or `$POSH_CONFIG` does not exist.
    NotFound,
    /// A configuration file exists but cannot be read as text (or is a directory).
    Unreadable,
}

/// An error in a configuration file, located in it.
///
/// Displayed as ``path:line:col: key `mount[2].proxy`: message``, or without the key part when
/// the error is not about one key, or as `path: message` when it is about the file as a whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", render_error(self))]
pub struct ConfigError {
    pub kind: ConfigErrorKind,
    /// The configuration file.
    pub path: PathBuf,
    /// 1-based; 0 when the error concerns the file as a whole.
    pub line: usize,
    /// 1-based, counting characters; 0 when the error concerns the file as a whole.
    pub column: usize,
    /// The bytes of the file the error points at.
    pub span: Option<Span>,
    /// The dotted key, mounts numbered from 1 in the order of the file: `mount[2].proxy`.
    pub key: Option<String>,
    pub message: String,
}

fn render_error(error: &ConfigError) -> String {
    let mut out = error.path.display().to_string();
    if error.line > 0 {
        out.push_str(&format!(":{}:{}", error.line, error.column));
    }
    out.push_str(": ");
    if let Some(key) = &error.key {
        out.push_str(&format!("key `{key}`: "));
    }
    out.push_str(&error.message);
    out
}

impl ConfigError {
    /// An error about the file as a whole (not found, unreadable).
    pub(crate) fn file(kind: ConfigErrorKind, path: &Path, message: impl Into<String>) -> Self {
        ConfigError {
            kind,
            path: path.to_path_buf(),
            line: 0,
            column: 0,
            span: None,
            key: None,
            message: message.into(),
        }
    }
}

const TOP_KEYS: &[&str] = &["mount", "client", "run"];
const RUN_KEYS: &[&str] = &["script", "args", "env"];
const MOUNT_KEYS: &[&str] = &["path", "proxy", "name", "export", "bandwidth", "rtt", "proxy_program", "linger"];
const CLIENT_KEYS: &[&str] = &["bandwidth", "rtt"];

/// The name no mount may take: plans say `@client` for the client.
const RESERVED_NAME: &str = "client";

type Value<'i> = Spanned<DeValue<'i>>;

/// A table's entries in the order of the file (toml's map is sorted by key).
fn in_file_order<'t, 'i>(table: &'t DeTable<'i>) -> Vec<(&'t str, Span, &'t Value<'i>)> {
    let mut entries: Vec<_> =
        table.iter().map(|(key, value)| (key.get_ref().as_ref(), to_span(key.span()), value)).collect();
    entries.sort_by_key(|&(_, span, _)| span.start);
    entries
}

fn to_span(range: std::ops::Range<usize>) -> Span {
    Span::new(range.start, range.end)
}

/// A mount being read, before the link defaults are applied.
/// The paths and names of the mounts parsed so far, each with its index: a thousand mounts are
/// each checked against those before them by look-up, not by a scan.
#[derive(Default)]
struct TakenByMounts {
    paths: HashMap<PathBuf, usize>,
    names: HashMap<String, usize>,
}

struct PartialMount {
    mount: Mount,
    bandwidth: Option<f64>,
    rtt: Option<Duration>,
    /// Where the mount's table starts, for "already used by mount[1] (line 2)".
    line: usize,
}

struct Parser<'a> {
    text: &'a str,
    origin: &'a Path,
    lines: LineIndex,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, origin: &'a Path) -> Parser<'a> {
        Parser { text, origin, lines: LineIndex::new(text) }
    }

    fn error(&self, kind: ConfigErrorKind, span: Span, key: Option<String>, message: impl Into<String>) -> ConfigError {
        let (line, column) = self.lines.line_col(self.text, span.start);
        ConfigError {
            kind,
            path: self.origin.to_path_buf(),
            line,
            column,
            span: Some(span),
            key,
            message: message.into(),
        }
    }

    fn line_of(&self, span: Span) -> usize {
        self.lines.line_of(span.start) + 1
    }

    fn parse(&self) -> Result<Config, ConfigError> {
        let root = DeTable::parse(self.text).map_err(|e| self.syntax_error(&e))?;
        let mut mounts: Vec<PartialMount> = Vec::new();
        let mut client = (None, None);
        let mut runs = Vec::new();
        for (key, key_span, value) in in_file_order(root.get_ref()) {
            match key {
                "run" => {
                    let DeValue::Array(array) = value.get_ref() else {
                        return Err(self.wrong_type("run", value, "an array of tables (`[[run]]`)"));
                    };
                    for item in array.iter() {
                        runs.push(self.run(runs.len() + 1, item)?);
                    }
                }
                "mount" => {
                    let DeValue::Array(array) = value.get_ref() else {
                        return Err(self.wrong_type("mount", value, "an array of tables (`[[mount]]`)"));
                    };
                    let mut taken = TakenByMounts::default();
                    for item in array.iter() {
                        let mount = self.mount(mounts.len() + 1, item, &mounts, &taken)?;
                        taken.paths.insert(mount.mount.path.clone(), mounts.len());
                        taken.names.insert(mount.mount.name.clone(), mounts.len());
                        mounts.push(mount);
                    }
                }
                "client" => {
                    let table = self.table("client", value, "a table (`[client]`)")?;
                    client = self.link("client", table, CLIENT_KEYS)?;
                }
                _ => return Err(self.unknown_key(key.to_string(), key, key_span, TOP_KEYS)),
            }
        }
        let client = Link {
            bandwidth_bytes_per_sec: client.0.unwrap_or(DEFAULT_BANDWIDTH_BYTES_PER_SEC),
            rtt: client.1.unwrap_or(DEFAULT_RTT),
        };
        let mounts = mounts
            .into_iter()
            .map(|partial| Mount {
                link: Link {
                    bandwidth_bytes_per_sec: partial.bandwidth.unwrap_or(client.bandwidth_bytes_per_sec),
                    rtt: partial.rtt.unwrap_or(client.rtt),
                },
                ..partial.mount
            })
            .collect();
        Ok(Config { mounts, client, origin: Some(self.origin.to_path_buf()), runs, index: MountIndex::default() })
    }

    fn syntax_error(&self, error: &toml::de::Error) -> ConfigError {
        let span = error.span().map_or(Span::empty(self.text.len()), to_span);
        let message = match error.message() {
            "duplicate key" if !span.is_empty() => {
                format!("duplicate key `{}`", span.text(self.text))
            }
            message => message.to_string(),
        };
        self.error(ConfigErrorKind::Syntax, span, None, message)
    }

    fn unknown_key(&self, dotted: String, key: &str, span: Span, known: &[&str]) -> ConfigError {
        let message = match suggest(key, known) {
            Some(near) => format!("unknown key; did you mean `{near}`?"),
            None => format!(
                "unknown key; expected one of {}",
                known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ),
        };
        self.error(ConfigErrorKind::UnknownKey, span, Some(dotted), message)
    }

    fn wrong_type(&self, key: &str, value: &Value<'_>, expected: &str) -> ConfigError {
        let found = value.get_ref().type_str();
        let article = if found.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
        self.error(
            ConfigErrorKind::WrongType,
            to_span(value.span()),
            Some(key.to_string()),
            format!("expected {expected}, found {article} {found}"),
        )
    }

    fn invalid(&self, key: &str, value: &Value<'_>, message: impl Into<String>) -> ConfigError {
        self.error(ConfigErrorKind::InvalidValue, to_span(value.span()), Some(key.to_string()), message)
    }

    fn table<'t, 'i>(&self, key: &str, value: &'t Value<'i>, expected: &str) -> Result<&'t DeTable<'i>, ConfigError> {
        match value.get_ref() {
            DeValue::Table(table) => Ok(table),
            _ => Err(self.wrong_type(key, value, expected)),
        }
    }

    fn string<'t>(&self, key: &str, value: &'t Value<'_>) -> Result<&'t str, ConfigError> {
        value.get_ref().as_str().ok_or_else(|| self.wrong_type(key, value, "a string"))
    }

    fn absolute_path(&self, key: &str, value: &Value<'_>) -> Result<PathBuf, ConfigError> {
        let text = self.string(key, value)?;
        if !Path::new(text).is_absolute() {
            return Err(self.invalid(key, value, format!("expected an absolute path, found \"{text}\"")));
        }
        Ok(normalize_path(Path::new(text)))
    }

    /// A mount's client path: absolute, or relative to the configuration file's directory (so
    /// a project can carry its own posh.toml).
    fn client_path(&self, key: &str, value: &Value<'_>) -> Result<PathBuf, ConfigError> {
        let text = self.string(key, value)?;
        match self.origin.parent().filter(|dir| dir.is_absolute()) {
            Some(dir) if !text.is_empty() && Path::new(text).is_relative() => Ok(normalize_path(&dir.join(text))),
            _ => self.absolute_path(key, value),
        }
    }

    fn bandwidth(&self, key: &str, value: &Value<'_>) -> Result<f64, ConfigError> {
        let parsed = match value.get_ref() {
            DeValue::String(text) => parse_bandwidth(text),
            DeValue::Integer(integer) => {
                let digits = integer.as_str().replace('_', "");
                match i64::from_str_radix(&digits, integer.radix()) {
                    Ok(n) if n > 0 => Ok(n as f64),
                    Ok(_) => Err("bandwidth must be greater than zero".to_string()),
                    Err(_) => Err("bandwidth out of range".to_string()),
                }
            }
            DeValue::Float(float) => match float.as_str().replace('_', "").parse::<f64>() {
                Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
                _ => Err("bandwidth must be a finite number greater than zero".to_string()),
            },
            _ => {
                return Err(self.wrong_type(
                    key,
                    value,
                    "a bandwidth such as \"600Mbit\" or a number of bytes per second",
                ));
            }
        };
        parsed.map_err(|message| self.invalid(key, value, message))
    }

    fn rtt(&self, key: &str, value: &Value<'_>) -> Result<Duration, ConfigError> {
        let text = self
            .string(key, value)
            .map_err(|_| self.wrong_type(key, value, "a duration with a unit, such as \"20ms\""))?;
        parse_rtt(text).map_err(|message| self.invalid(key, value, message))
    }

    /// The link keys of `[client]` (`known` lists the keys allowed in the table).
    fn link(
        &self,
        prefix: &str,
        table: &DeTable<'_>,
        known: &[&str],
    ) -> Result<(Option<f64>, Option<Duration>), ConfigError> {
        let (mut bandwidth, mut rtt) = (None, None);
        for (key, key_span, value) in in_file_order(table) {
            let dotted = format!("{prefix}.{key}");
            match key {
                "bandwidth" => bandwidth = Some(self.bandwidth(&dotted, value)?),
                "rtt" => rtt = Some(self.rtt(&dotted, value)?),
                _ => return Err(self.unknown_key(dotted, key, key_span, known)),
            }
        }
        Ok((bandwidth, rtt))
    }

    /// The `number`th `[[run]]` (from 1).
    fn run(&self, number: usize, value: &Value<'_>) -> Result<RunConfig, ConfigError> {
        let prefix = format!("run[{number}]");
        let table = self.table(&prefix, value, "a table (`[[run]]`)")?;
        let (mut script, mut args, mut env) = (None, Vec::new(), std::collections::BTreeMap::new());
        for (key, key_span, value) in in_file_order(table) {
            let dotted = format!("{prefix}.{key}");
            match key {
                "script" => script = Some(self.client_path(&dotted, value)?),
                "args" => {
                    let DeValue::Array(array) = value.get_ref() else {
                        return Err(self.wrong_type(&dotted, value, "an array of strings"));
                    };
                    for item in array.iter() {
                        args.push(self.string(&dotted, item)?.to_string());
                    }
                }
                "env" => {
                    let table = self.table(&dotted, value, "a table of strings (`env = { IN = \"/data\" }`)")?;
                    for (name, _, value) in in_file_order(table) {
                        env.insert(name.to_string(), self.string(&format!("{dotted}.{name}"), value)?.to_string());
                    }
                }
                _ => return Err(self.unknown_key(dotted, key, key_span, RUN_KEYS)),
            }
        }
        let Some(script) = script else {
            return Err(self.error(
                ConfigErrorKind::MissingKey,
                to_span(value.span()),
                Some(format!("{prefix}.script")),
                "missing required key; set it to the script's path (relative to this file), e.g. \"jobs/count.sh\"",
            ));
        };
        Ok(RunConfig { script, args, env })
    }

    /// The `number`th `[[mount]]` (from 1), checked against the mounts before it.
    fn mount(
        &self,
        number: usize,
        value: &Value<'_>,
        before: &[PartialMount],
        taken: &TakenByMounts,
    ) -> Result<PartialMount, ConfigError> {
        let prefix = format!("mount[{number}]");
        let table = self.table(&prefix, value, "a table (`[[mount]]`)")?;
        let table_span = to_span(value.span());
        let mut path = None;
        let mut proxy = None;
        let mut name = None;
        let mut export = None;
        let mut bandwidth = None;
        let mut rtt = None;
        let mut proxy_program = None;
        let mut linger = None;
        for (key, key_span, value) in in_file_order(table) {
            let dotted = format!("{prefix}.{key}");
            match key {
                "proxy_program" => {
                    let text = self.string(&dotted, value)?;
                    if text.is_empty() || text.starts_with('-') {
                        return Err(self.invalid(
                            &dotted,
                            value,
                            format!("expected the proxy's program on the host, such as \"posh-proxy\" or \"~/.cargo/bin/posh-proxy\", found \"{text}\""),
                        ));
                    }
                    proxy_program = Some((text.to_string(), value, key_span));
                }
                "linger" => {
                    let text = self.string(&dotted, value)?;
                    let duration = parse_linger(text).map_err(|message| self.invalid(&dotted, value, message))?;
                    linger = Some((duration, key_span));
                }
                "path" => path = Some((self.client_path(&dotted, value)?, value)),
                "proxy" => {
                    let text = self.string(&dotted, value)?;
                    let address = ProxyAddress::parse(text).map_err(|message| self.invalid(&dotted, value, message))?;
                    proxy = Some(address);
                }
                "name" => {
                    let text = self.string(&dotted, value)?;
                    check_name(text).map_err(|message| self.invalid(&dotted, value, message))?;
                    name = Some((text.to_string(), value));
                }
                "export" => export = Some(self.absolute_path(&dotted, value)?),
                "bandwidth" => bandwidth = Some(self.bandwidth(&dotted, value)?),
                "rtt" => rtt = Some(self.rtt(&dotted, value)?),
                _ => return Err(self.unknown_key(dotted, key, key_span, MOUNT_KEYS)),
            }
        }
        let missing = |key: &str, hint: &str| {
            self.error(
                ConfigErrorKind::MissingKey,
                table_span,
                Some(format!("{prefix}.{key}")),
                format!("missing required key; {hint}"),
            )
        };
        let Some((path, path_value)) = path else {
            return Err(missing("path", "set it to the absolute client path of the mount, e.g. \"/mnt/logs\""));
        };
        let Some(proxy) = proxy else {
            return Err(missing("proxy", "set it to the proxy's \"host:port\" or to \"embedded\""));
        };
        let name_key = format!("{prefix}.name");
        let (name, name_value, derived) = match name {
            Some((name, value)) => (name, value, false),
            None => {
                let Some(last) = path.file_name() else {
                    return Err(self.invalid(
                        &name_key,
                        path_value,
                        "the path `/` has no last component to name the mount after; set `name`",
                    ));
                };
                let last = last.to_string_lossy().into_owned();
                check_name(&last).map_err(|message| {
                    self.invalid(
                        &name_key,
                        path_value,
                        format!("{message} (the name is taken from the path); set `name`"),
                    )
                })?;
                (last, path_value, true)
            }
        };
        let name_span = to_span(name_value.span());
        if let Some((index, other)) = taken.paths.get(&path).map(|&i| (i, &before[i])) {
            return Err(self.error(
                ConfigErrorKind::Duplicate,
                to_span(path_value.span()),
                Some(format!("{prefix}.path")),
                format!(
                    "the path `{}` is already mounted by mount[{}] (line {})",
                    path.display(),
                    index + 1,
                    other.line
                ),
            ));
        }
        if let Some((index, other)) = taken.names.get(&name).map(|&i| (i, &before[i])) {
            let taken = if derived { " (taken from the path; set `name` to tell them apart)" } else { "" };
            return Err(self.error(
                ConfigErrorKind::Duplicate,
                name_span,
                Some(name_key),
                format!("the name `{name}`{taken} is already used by mount[{}] (line {})", index + 1, other.line),
            ));
        }
        let export = export.unwrap_or_else(|| path.clone());
        let ssh = matches!(proxy, ProxyAddress::Ssh { .. });
        let only_ssh = |key: &str, span: Span| {
            self.error(
                ConfigErrorKind::InvalidValue,
                span,
                Some(format!("{prefix}.{key}")),
                "applies only to a proxy started through ssh (proxy = \"ssh://[user@]host[:port]\")",
            )
        };
        if let Some((_, _, span)) = proxy_program.as_ref().filter(|_| !ssh) {
            return Err(only_ssh("proxy_program", *span));
        }
        if let Some((_, span)) = linger.filter(|_| !ssh) {
            return Err(only_ssh("linger", span));
        }
        let proxy_program = proxy_program.map(|(text, _, _)| text);
        let linger = linger.map(|(duration, _)| duration);
        Ok(PartialMount {
            mount: Mount { name, path, proxy, export, link: Link::default(), proxy_program, linger },
            bandwidth,
            rtt,
            line: self.line_of(table_span),
        })
    }
}

/// A mount name: letters, digits, `-`, `_` and `.`, starting with a letter or digit; not
/// `client`.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a mount name must not be empty".to_string());
    }
    if name == RESERVED_NAME {
        return Err(format!("the name `{RESERVED_NAME}` is reserved for the client itself"));
    }
    let valid = name.starts_with(char::is_alphanumeric)
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        return Err(format!(
            "invalid mount name `{name}`: use letters, digits, `-`, `_` and `.`, \
             starting with a letter or digit"
        ));
    }
    Ok(())
}

/// The known key closest to a misspelt one (ignoring case), if close enough to suggest.
fn suggest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let key = key.to_lowercase();
    known
        .iter()
        .map(|&k| (crate::text::edit_distance(&key, k), k))
        .filter(|&(distance, k)| distance <= 2.min(k.len() / 2))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, k)| k)
}
