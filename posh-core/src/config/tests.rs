//! Configuration tests: the format, every error with its message, units, mount lookup, path
//! mapping and discovery.

use super::*;
use crate::fs::MemoryFileSystem;

const ORIGIN: &str = "/home/u/proj/posh.toml";

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new(ORIGIN))
}

fn parse_ok(text: &str) -> Config {
    parse(text).unwrap_or_else(|e| panic!("{e}"))
}

/// Each case's error, displayed, with the line it points at and a caret under its column.
fn render_errors(cases: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (title, text) in cases {
        let error = match parse(text) {
            Ok(config) => panic!("{title}: parsed, but should not have: {config:?}"),
            Err(error) => error,
        };
        let source_line = text.lines().nth(error.line - 1).unwrap_or("");
        out.push_str(&format!(
            "## {title} ({:?})\n{source_line}\n{}^\n{error}\n\n",
            error.kind,
            " ".repeat(error.column - 1)
        ));
    }
    out
}

const MOUNT: &str = "[[mount]]\npath = \"/mnt/logs\"\nproxy = \"10.0.0.5:4433\"\n";

#[test]
fn syntax_errors() {
    insta::assert_snapshot!(render_errors(&[
        ("unterminated string", "[[mount]]\npath = \"/mnt/logs\nproxy = \"embedded\"\n"),
        ("duplicate key", "[[mount]]\npath = \"/mnt/logs\"\npath = \"/mnt/data\"\n"),
        ("missing value", "[client]\nrtt =\n"),
        ("bare word value", "[[mount]]\npath = /mnt/logs\n"),
        ("unclosed header", "[[mount]\npath = \"/mnt/logs\"\n"),
        ("table declared twice", "[client]\nrtt = \"1ms\"\n[client]\n"),
        ("table then array", "[mount]\npath = \"/a\"\n[[mount]]\n"),
    ]));
}

#[test]
fn unknown_keys() {
    insta::assert_snapshot!(render_errors(&[
        ("near miss at the top", "[[mounts]]\npath = \"/mnt/logs\"\n"),
        ("far miss at the top", "title = \"x\"\n"),
        ("near miss in a mount", &format!("{MOUNT}bandwith = \"1Gbit\"\n")),
        ("case slip in a mount", &format!("{MOUNT}Export = \"/srv\"\n")),
        ("far miss in a mount", &format!("{MOUNT}speed = \"fast\"\n")),
        ("in the second mount", &format!("{MOUNT}\n[[mount]]\npath = \"/data\"\nproxi = \"embedded\"\n")),
        ("near miss in client", "[client]\nrt = \"5ms\"\n"),
        ("far miss in client", "[client]\nhost = \"me\"\n"),
        ("nested table in client", "[client.link]\nrtt = \"5ms\"\n"),
        ("dotted key", "client.bandwidth = \"1Gbit\"\nclient.rttt = \"1ms\"\n"),
    ]));
}

#[test]
fn wrong_types() {
    insta::assert_snapshot!(render_errors(&[
        ("mount as a table", "[mount]\npath = \"/mnt/logs\"\n"),
        ("mount as a string", "mount = \"/mnt/logs\"\n"),
        ("mount array of numbers", "mount = [1]\n"),
        ("client as a number", "client = 3\n"),
        ("path as a number", "[[mount]]\npath = 1\n"),
        ("proxy as a number", "[[mount]]\npath = \"/a\"\nproxy = 4433\n"),
        ("name as a boolean", &format!("{MOUNT}name = true\n")),
        ("export as an array", &format!("{MOUNT}export = [\"/srv\"]\n")),
        ("bandwidth as a boolean", &format!("{MOUNT}bandwidth = true\n")),
        ("rtt as a number", &format!("{MOUNT}rtt = 20\n")),
        ("rtt as a float in client", "[client]\nrtt = 0.5\n"),
        ("inline table mount", "mount = [{ path = \"/a\", proxy = \"embedded\" }, { path = 2 }]\n"),
    ]));
}

#[test]
fn missing_keys() {
    insta::assert_snapshot!(render_errors(&[
        ("no path", "[[mount]]\nproxy = \"embedded\"\n"),
        ("no proxy", "[[mount]]\npath = \"/mnt/logs\"\n"),
        ("empty table", "[client]\n[[mount]]\n"),
        ("no proxy in an inline table", "mount = [{ path = \"/mnt/logs\" }]\n"),
        ("no proxy in the second mount", &format!("{MOUNT}\n[[mount]]\npath = \"/data\"\n")),
    ]));
}

#[test]
fn invalid_values() {
    let with = |key_values: &str| format!("[[mount]]\npath = \"/mnt/logs\"\n{key_values}\n");
    insta::assert_snapshot!(render_errors(&[
        ("empty path", "[[mount]]\npath = \"\"\nproxy = \"embedded\"\n"),
        ("relative export", &with("proxy = \"embedded\"\nexport = \"srv/logs\"")),
        ("proxy without port", &with("proxy = \"10.0.0.5\"")),
        ("proxy with port 0", &with("proxy = \"10.0.0.5:0\"")),
        ("proxy with port 70000", &with("proxy = \"host:70000\"")),
        ("proxy with a named port", &with("proxy = \"host:https\"")),
        ("proxy without host", &with("proxy = \":4433\"")),
        ("proxy empty", &with("proxy = \"\"")),
        ("IPv6 without brackets", &with("proxy = \"::1:4433\"")),
        ("bad IPv6 in brackets", &with("proxy = \"[::g]:4433\"")),
        ("unclosed bracket", &with("proxy = \"[::1:4433\"")),
        ("bracketed IPv6 without port", &with("proxy = \"[::1]\"")),
        ("host with a space", &with("proxy = \"my host:4433\"")),
        ("Embedded capitalised", &with("proxy = \"Embedded\"")),
        ("bandwidth unit", &with("proxy = \"embedded\"\nbandwidth = \"600Mbitz\"")),
        ("bandwidth no number", &with("proxy = \"embedded\"\nbandwidth = \"fast\"")),
        ("bandwidth zero", &with("proxy = \"embedded\"\nbandwidth = \"0Mbit\"")),
        ("bandwidth integer zero", &with("proxy = \"embedded\"\nbandwidth = 0")),
        ("bandwidth negative", &with("proxy = \"embedded\"\nbandwidth = -5")),
        ("bandwidth negative float", &with("proxy = \"embedded\"\nbandwidth = -5.0")),
        ("bandwidth infinite", &with("proxy = \"embedded\"\nbandwidth = inf")),
        ("rtt without unit", &with("proxy = \"embedded\"\nrtt = \"20\"")),
        ("rtt unit", &with("proxy = \"embedded\"\nrtt = \"20 min\"")),
        ("rtt negative", "[client]\nrtt = \"-1ms\"\n"),
        ("name with a space", &with("proxy = \"embedded\"\nname = \"my logs\"")),
        ("name empty", &with("proxy = \"embedded\"\nname = \"\"")),
        ("name reserved", &with("proxy = \"embedded\"\nname = \"client\"")),
        ("root without a name", "[[mount]]\npath = \"/\"\nproxy = \"embedded\"\n"),
        ("name taken from a path", "[[mount]]\npath = \"/mnt/my logs\"\nproxy = \"embedded\"\n"),
        (
            "column counts characters",
            "[[mount]]\npath = \"/mnt/données\"\nproxy = \"embedded\"\nname = \"données\"  ; bandwidth = \"fast\"\n"
        ),
    ]));
}

#[test]
fn duplicates() {
    insta::assert_snapshot!(render_errors(&[
        (
            "same path",
            "[[mount]]\npath = \"/mnt/logs\"\nproxy = \"a:1\"\n\n[[mount]]\npath = \"/mnt/logs\"\nproxy = \"b:1\"\nname = \"other\"\n"
        ),
        (
            "same path after normalization",
            "[[mount]]\npath = \"/mnt/logs\"\nproxy = \"a:1\"\n\n[[mount]]\npath = \"/mnt/./x/../logs/\"\nproxy = \"b:1\"\nname = \"other\"\n"
        ),
        (
            "same explicit name",
            "[[mount]]\npath = \"/mnt/logs\"\nproxy = \"a:1\"\n\n[[mount]]\npath = \"/data\"\nproxy = \"b:1\"\nname = \"logs\"\n"
        ),
        (
            "same name taken from paths",
            "[[mount]]\npath = \"/a/logs\"\nproxy = \"a:1\"\n\n[[mount]]\npath = \"/b/logs\"\nproxy = \"b:1\"\n"
        ),
    ]));
}

#[test]
fn full_example() {
    let config = parse_ok(
        r#"
# Logs on a storage server 20 ms away.
[[mount]]
path = "/mnt/logs"
proxy = "10.0.0.5:4433"
export = "/srv/logs"
bandwidth = "600Mbit"
rtt = "20ms"

[[mount]]
name = "archive"
path = "/mnt/logs/archive/"
proxy = "[::1]:4433"

[[mount]]
path = "/scratch"
proxy = "embedded"
bandwidth = 1_000_000

[client]
bandwidth = "1Gbit/s"
"#,
    );
    insta::assert_yaml_snapshot!(config);
    assert_eq!(config.mounts[0].link.bandwidth_bytes_per_sec, 75e6);
    // Unset link fields come from [client], then from the defaults.
    assert_eq!(config.mounts[1].link.bandwidth_bytes_per_sec, 125e6);
    assert_eq!(config.mounts[1].link.rtt, DEFAULT_RTT);
    assert_eq!(config.client.to_string(), "1 Gbit/s, rtt 10 ms");
}

#[test]
fn defaults() {
    assert_eq!(Config::default().mounts, []);
    assert_eq!(Config::default().origin, None);
    assert_eq!(Link::default().to_string(), "100 Mbit/s, rtt 10 ms");
    let empty = parse_ok("# nothing yet\n");
    assert_eq!(empty, Config { origin: Some(PathBuf::from(ORIGIN)), ..Config::default() });
    let config = parse_ok(MOUNT);
    let mount = &config.mounts[0];
    assert_eq!(mount.name, "logs");
    assert_eq!(mount.export, Path::new("/mnt/logs"));
    assert_eq!(mount.link, Link::default());
    assert_eq!(config.client, Link::default());
}

#[test]
fn proxy_addresses() {
    let remote = |host: &str, port| ProxyAddress::Remote { host: host.to_string(), port };
    assert_eq!(ProxyAddress::parse("embedded"), Ok(ProxyAddress::Embedded));
    assert_eq!(ProxyAddress::parse("10.0.0.5:4433"), Ok(remote("10.0.0.5", 4433)));
    assert_eq!(ProxyAddress::parse("storage-1.example.org:1"), Ok(remote("storage-1.example.org", 1)));
    assert_eq!(ProxyAddress::parse("[::1]:4433"), Ok(remote("::1", 4433)));
    assert_eq!(
        ProxyAddress::parse("[fe80::1%eth0]:4433").map(|_| ()),
        Err("`fe80::1%eth0` is not an IPv6 address".to_string())
    );
    for text in ["embedded", "10.0.0.5:4433", "[::1]:65535", "host:1"] {
        assert_eq!(ProxyAddress::parse(text).unwrap().to_string(), text);
    }
}

#[test]
fn ssh_proxy_addresses() {
    let ssh = |user: Option<&str>, host: &str, port| ProxyAddress::Ssh {
        user: user.map(str::to_string),
        host: host.to_string(),
        port,
    };
    assert_eq!(ProxyAddress::parse("ssh://storage"), Ok(ssh(None, "storage", None)));
    assert_eq!(ProxyAddress::parse("ssh://me@storage:2222"), Ok(ssh(Some("me"), "storage", Some(2222))));
    assert_eq!(ProxyAddress::parse("ssh://root@[fd00::7]"), Ok(ssh(Some("root"), "fd00::7", None)));
    assert_eq!(ProxyAddress::parse("ssh://[::1]:22"), Ok(ssh(None, "::1", Some(22))));
    for text in ["ssh://storage", "ssh://me@storage:2222", "ssh://root@[fd00::7]", "ssh://[::1]:22"] {
        assert_eq!(ProxyAddress::parse(text).unwrap().to_string(), text);
    }
    let error = |text: &str| ProxyAddress::parse(text).unwrap_err();
    // Nothing that ssh would take for an option.
    assert_eq!(error("ssh://-oProxyCommand=x"), "`-oProxyCommand=x` is not a host name or IP address");
    assert_eq!(error("ssh://-l@host"), "`-l` is not a user name; expected \"ssh://[user@]host[:port]\"");
    assert_eq!(error("ssh://host:0"), "`0` is not a port; expected a number from 1 to 65535");
    assert_eq!(error("ssh://"), "missing host; expected \"ssh://[user@]host[:port]\"");
    assert!(
        error("ssh://host/srv/logs").contains("set the host's directory with `export`"),
        "{}",
        error("ssh://host/srv/logs")
    );
    assert!(error("http://host:80").starts_with("unknown scheme"));
}

#[test]
fn ssh_mount_keys() {
    let config = parse_ok(
        "[[mount]]\npath = \"/mnt/logs\"\nproxy = \"ssh://me@storage\"\nexport = \"/srv/logs\"\n\
         proxy_program = \"~/.cargo/bin/posh-proxy\"\n",
    );
    let mount = &config.mounts[0];
    assert_eq!(mount.proxy_program.as_deref(), Some("~/.cargo/bin/posh-proxy"));
    assert_eq!(mount.export, Path::new("/srv/logs"));
    let defaults = parse_ok("[[mount]]\npath = \"/mnt/logs\"\nproxy = \"ssh://storage\"\n");
    assert_eq!((&defaults.mounts[0].proxy_program, defaults.mounts[0].linger), (&None, None));
    for (text, seconds) in [("90s", 90), ("10m", 600), ("1 h", 3600), ("24h", 86_400)] {
        let config = parse_ok(&format!("[[mount]]\npath = \"/m\"\nproxy = \"ssh://h\"\nlinger = \"{text}\"\n"));
        assert_eq!(config.mounts[0].linger, Some(std::time::Duration::from_secs(seconds)), "{text}");
    }
    insta::assert_snapshot!(render_errors(&[
        ("proxy_program without ssh", &format!("{MOUNT}proxy_program = \"posh-proxy\"\n")),
        ("linger without ssh", &format!("{MOUNT}linger = \"10m\"\n")),
        ("linger without a unit", "[[mount]]\npath = \"/m\"\nproxy = \"ssh://h\"\nlinger = \"30\"\n"),
        ("linger over a day", "[[mount]]\npath = \"/m\"\nproxy = \"ssh://h\"\nlinger = \"25h\"\n"),
        ("linger in milliseconds", "[[mount]]\npath = \"/m\"\nproxy = \"ssh://h\"\nlinger = \"1.5s\"\n"),
        ("proxy_program an option", "[[mount]]\npath = \"/m\"\nproxy = \"ssh://h\"\nproxy_program = \"-x\"\n"),
        ("ssh with a path", "[[mount]]\npath = \"/m\"\nproxy = \"ssh://h:/srv\"\n"),
    ]));
}

#[test]
fn bandwidth_units() {
    let cases: &[(&str, f64)] = &[
        ("600Mbit", 75e6),
        ("600 Mbit/s", 75e6),
        ("600mbit", 75e6),
        ("600Mbps", 75e6),
        ("600Mb/s", 75e6),
        ("600 Mbits/s", 75e6),
        ("8bit", 1.0),
        ("8 bit/s", 1.0),
        ("1Kbit", 125.0),
        ("1kbit", 125.0),
        ("1.5Gbit", 187.5e6),
        ("1Tbit", 125e9),
        ("75MB/s", 75e6),
        ("75MB", 75e6),
        ("75 MBps", 75e6),
        ("75Mbyte/s", 75e6),
        ("1KB/s", 1e3),
        ("1kB", 1e3),
        ("1GB/s", 1e9),
        ("2B/s", 2.0),
        ("2 bytes/s", 2.0),
        ("1KiB/s", 1024.0),
        ("1MiB", 1_048_576.0),
        ("8Mibit", 1_048_576.0),
        ("1000", 1000.0),
        ("0.5", 0.5),
        (".5KB", 500.0),
    ];
    for &(text, bytes) in cases {
        assert_eq!(parse_bandwidth(text), Ok(bytes), "{text}");
    }
    let errors: Vec<String> = ["", "Mbit", "-1Mbit", "0", "1..2Mbit", "5ps", "5 Xbit", "1e9"]
        .iter()
        .map(|text| format!("{text:?}: {}", parse_bandwidth(text).unwrap_err()))
        .collect();
    insta::assert_snapshot!(errors.join("\n"));

    // Bare numbers in the file are bytes per second.
    let config = parse_ok(&format!("{MOUNT}bandwidth = 1.5e6\n[client]\nbandwidth = 0x10\n"));
    assert_eq!(config.mounts[0].link.bandwidth_bytes_per_sec, 1.5e6);
    assert_eq!(config.client.bandwidth_bytes_per_sec, 16.0);
}

#[test]
fn rtt_units() {
    let cases: &[(&str, Duration)] = &[
        ("20ms", Duration::from_millis(20)),
        ("20 ms", Duration::from_millis(20)),
        ("0.5ms", Duration::from_micros(500)),
        ("150us", Duration::from_micros(150)),
        ("150µs", Duration::from_micros(150)),
        ("1s", Duration::from_secs(1)),
        ("0s", Duration::ZERO),
        ("100ns", Duration::from_nanos(100)),
    ];
    for &(text, rtt) in cases {
        let parsed = parse_rtt(text).unwrap();
        assert!(parsed.abs_diff(rtt) < Duration::from_nanos(2), "{text}: {parsed:?}");
    }
    let errors: Vec<String> = ["", "20", "20 min", "ms", "-3ms", "20MS"]
        .iter()
        .map(|text| format!("{text:?}: {}", parse_rtt(text).unwrap_err()))
        .collect();
    insta::assert_snapshot!(errors.join("\n"));
}

#[test]
fn formatting() {
    assert_eq!(format_bandwidth(75e6), "600 Mbit/s");
    assert_eq!(format_bandwidth(187.5e6), "1.5 Gbit/s");
    assert_eq!(format_bandwidth(125.0), "1 Kbit/s");
    assert_eq!(format_bandwidth(1.0), "8 bit/s");
    assert_eq!(format_rtt(Duration::from_millis(20)), "20 ms");
    assert_eq!(format_rtt(Duration::from_micros(500)), "0.5 ms");
    assert_eq!(format_rtt(Duration::from_micros(50)), "50 us");
    assert_eq!(format_rtt(Duration::from_secs(2)), "2 s");
    assert_eq!(format_rtt(Duration::ZERO), "0 ms");
}

fn nested() -> Config {
    parse_ok(
        r#"
[[mount]]
path = "/mnt/logs"
proxy = "a:1"
export = "/srv/logs"

[[mount]]
path = "/mnt/logs/archive"
proxy = "b:1"

[[mount]]
path = "/data/"
proxy = "embedded"
"#,
    )
}

#[test]
fn mount_for_takes_the_longest_component_prefix() {
    let config = nested();
    let name = |path: &str| config.mount_for(Path::new(path)).map(|m| m.name.as_str());
    let cases = [
        ("/mnt/logs", Some("logs")),
        ("/mnt/logs/", Some("logs")),
        ("/mnt/logs/a.log", Some("logs")),
        ("/mnt/logs/./a.log", Some("logs")),
        ("/mnt//logs//a.log", Some("logs")),
        ("/mnt/logs2/x", None),
        ("/mnt/logsarchive", None),
        ("/mnt", None),
        ("/", None),
        ("/mnt/logs/archive", Some("archive")),
        ("/mnt/logs/archive/2020/x.gz", Some("archive")),
        ("/mnt/logs/archive/../a.log", Some("logs")),
        ("/mnt/logs/archived", Some("logs")),
        ("/mnt/logs/..", None),
        ("/mnt/other/../logs/a", Some("logs")),
        ("/../mnt/logs/a", Some("logs")),
        ("/data", Some("data")),
        ("/data/x", Some("data")),
        ("mnt/logs/a.log", None),
        ("./mnt/logs", None),
        ("", None),
    ];
    for (path, expected) in cases {
        assert_eq!(name(path), expected, "{path}");
    }
    assert_eq!(Config::default().mount_for(Path::new("/mnt/logs")), None);
    let everything = parse_ok("[[mount]]\npath = \"/\"\nname = \"root\"\nproxy = \"embedded\"\n");
    assert_eq!(everything.mount_for(Path::new("/etc/passwd")).map(|m| m.name.as_str()), Some("root"));
    assert_eq!(config.mount_named("archive").map(|m| m.path.as_path()), Some(Path::new("/mnt/logs/archive")));
    assert_eq!(config.mount_named("client"), None);
}

#[test]
fn to_export_maps_under_the_export_root() {
    let config = nested();
    let logs = config.mount_named("logs").unwrap();
    let export = |path: &str| logs.to_export(Path::new(path));
    assert_eq!(export("/mnt/logs/a.log"), Some(PathBuf::from("/srv/logs/a.log")));
    assert_eq!(export("/mnt/logs"), Some(PathBuf::from("/srv/logs")));
    assert_eq!(export("/mnt/logs/"), Some(PathBuf::from("/srv/logs")));
    assert_eq!(export("/mnt/logs/x/../b/./c"), Some(PathBuf::from("/srv/logs/b/c")));
    assert_eq!(export("/mnt/logs/archive/old.gz"), Some(PathBuf::from("/srv/logs/archive/old.gz")));
    assert_eq!(export("/mnt/logs/.."), None);
    assert_eq!(export("/mnt/logs/../etc/passwd"), None);
    assert_eq!(export("/mnt/logs2/a"), None);
    assert_eq!(export("mnt/logs/a"), None);

    let archive = config.mount_named("archive").unwrap();
    assert_eq!(archive.to_export(Path::new("/mnt/logs/archive/x")), Some(PathBuf::from("/mnt/logs/archive/x")));
    assert_eq!(logs.to_client(Path::new("/srv/logs/a/b")), Some(PathBuf::from("/mnt/logs/a/b")));
    assert_eq!(logs.to_client(Path::new("/srv/logs/../x")), None);
}

#[test]
fn normalization() {
    let cases = [
        ("/a/b/../c/./d/", "/a/c/d"),
        ("/..", "/"),
        ("/../../a", "/a"),
        ("a/../..", ".."),
        ("a/..", "."),
        ("../a/./b", "../a/b"),
        ("", "."),
        ("//a//b", "/a/b"),
    ];
    for (path, expected) in cases {
        assert_eq!(normalize_path(Path::new(path)), Path::new(expected), "{path}");
    }
}

/// The file system of a user with a project, a home and a user configuration.
fn home() -> MemoryFileSystem {
    let mut fs = MemoryFileSystem::new();
    fs.add_text("/home/u/proj/posh.toml", "# proj\n")
        .add_text("/home/u/posh.toml", "# home\n")
        .add_text("/home/u/.config/posh/posh.toml", "# user\n")
        .add_text("/etc/explicit.toml", "# explicit\n")
        .add_text("/home/u/proj/env.toml", "# env\n")
        .add_file("/home/u/proj/src/main.sh", 10)
        .add_file("/home/u/proj/src/posh.toml/not-a-config", 1);
    fs
}

/// The comment of the configuration `discover` finds, or its error.
fn found(fs: &MemoryFileSystem, explicit: Option<&str>, env: Option<&str>, cwd: &str, user: Option<&str>) -> String {
    match discover(fs, explicit.map(Path::new), env.map(Path::new), Path::new(cwd), user.map(Path::new)) {
        Ok(Some((path, text))) => format!("{}: {}", path.display(), text.trim()),
        Ok(None) => "none".to_string(),
        Err(error) => format!("error {:?}: {error}", error.kind),
    }
}

#[test]
fn discovery_order() {
    let fs = home();
    let user = Some("/home/u/.config");
    let src = "/home/u/proj/src";
    let cases = [
        found(&fs, Some("/etc/explicit.toml"), Some("env.toml"), src, user),
        found(&fs, Some("env.toml"), None, "/home/u/proj", user),
        found(&fs, Some("/etc/missing.toml"), Some("/home/u/proj/env.toml"), src, user),
        found(&fs, Some("/home/u"), None, src, user),
        found(&fs, None, Some("/home/u/proj/env.toml"), src, user),
        found(&fs, None, Some("/etc/missing.toml"), src, user),
        found(&fs, Some(""), Some(""), src, user),
        found(&fs, None, None, src, user),
        found(&fs, None, None, "/home/u/proj", user),
        found(&fs, None, None, "/home/u/other/deep", user),
        found(&fs, None, None, "/tmp", user),
        found(&fs, None, None, "/tmp", Some("/nowhere")),
        found(&fs, None, None, "/tmp", None),
    ];
    insta::assert_snapshot!(cases.join("\n"));
}

#[test]
fn unreadable_files_are_errors() {
    let mut fs = MemoryFileSystem::new();
    fs.add_file("/p/posh.toml", 12).add_text("/posh.toml", "# root\n").add_file("/bin.toml", 3);
    assert_eq!(
        found(&fs, None, None, "/p/q", None),
        "error Unreadable: /p/posh.toml: cannot read the config file as UTF-8 text"
    );
    assert_eq!(
        found(&fs, None, Some("/bin.toml"), "/", None),
        "error Unreadable: /bin.toml: cannot read the config file as UTF-8 text"
    );
}

#[test]
fn load_parses_what_discover_finds() {
    let mut fs = MemoryFileSystem::new();
    fs.add_text("/w/posh.toml", MOUNT).add_text("/bad/posh.toml", "[[mount]]\npath = \"/x\"\nproxy = \"nowhere\"\n");
    let config = load(&fs, None, None, Path::new("/w/a"), None).unwrap();
    assert_eq!(config.origin, Some(PathBuf::from("/w/posh.toml")));
    assert_eq!(config.mounts.len(), 1);
    assert_eq!(load(&fs, None, None, Path::new("/tmp"), None), Ok(Config::default()));
    assert_eq!(
        load(&fs, None, None, Path::new("/bad"), None).unwrap_err().to_string(),
        "/bad/posh.toml:3:9: key `mount[1].proxy`: missing port in \"nowhere\"; expected \"host:port\" or \"embedded\""
    );
}

#[test]
fn error_fields() {
    let error = parse("[[mount]]\npath = \"/a\"\nproxy = \"x\"\n").unwrap_err();
    assert_eq!(
        error,
        ConfigError {
            kind: ConfigErrorKind::InvalidValue,
            path: PathBuf::from(ORIGIN),
            line: 3,
            column: 9,
            span: Some(Span::new(30, 33)),
            key: Some("mount[1].proxy".to_string()),
            message: "missing port in \"x\"; expected \"host:port\" or \"embedded\"".to_string(),
        }
    );
}

/// Every `toml` block of docs/configuration.md parses, unless an `error` block follows it, and an `error` block right after a `toml`
/// block is exactly the error that block gives.
#[test]
fn documentation_examples() {
    let docs = include_str!("../../../docs/configuration.md");
    let mut blocks = Vec::new();
    let mut lines = docs.lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
            blocks.push((lang.to_string(), body.join("\n") + "\n"));
        }
    }
    let mut checked = 0;
    for (i, (lang, text)) in blocks.iter().enumerate() {
        if lang != "toml" {
            continue;
        }
        checked += 1;
        let documented_error =
            blocks.get(i + 1).filter(|(next_lang, _)| next_lang == "error").map(|(_, next_text)| next_text.trim_end());
        match (Config::parse(text, Path::new("posh.toml")), documented_error) {
            (Ok(_), None) => {}
            (Ok(_), Some(_)) => panic!("documented error does not occur:\n{text}"),
            (Err(error), Some(expected)) => assert_eq!(error.to_string(), expected, "in\n{text}"),
            (Err(error), None) => panic!("documented example fails: {error}\n{text}"),
        }
    }
    assert!(checked >= 3, "only {checked} toml blocks in the docs");
}

#[test]
fn relative_mount_paths_are_relative_to_the_config_file() {
    let config = Config::parse(
        "[[mount]]\npath = \"data/../logs\"\nproxy = \"embedded\"\n",
        Path::new("/srv/project/posh.toml"),
    )
    .unwrap();
    assert_eq!(config.mounts[0].path, Path::new("/srv/project/logs"));
    assert_eq!(config.mounts[0].export, Path::new("/srv/project/logs"));
    // Without a file's directory to anchor it, a relative path is still an error.
    assert!(Config::parse("[[mount]]\npath = \"logs\"\nproxy = \"embedded\"\n", Path::new("posh.toml")).is_err());
}

#[test]
fn xdg_base_directories_fall_back_to_home() {
    let some = |s: &str| Some(std::ffi::OsString::from(s));
    assert_eq!(xdg_base_dir(some("/x/state"), some("/home/u"), ".local/state"), Some(PathBuf::from("/x/state")));
    assert_eq!(xdg_base_dir(some(""), some("/home/u"), ".config"), Some(PathBuf::from("/home/u/.config")));
    assert_eq!(xdg_base_dir(None, some("/home/u"), ".config"), Some(PathBuf::from("/home/u/.config")));
    assert_eq!(xdg_base_dir(None, None, ".config"), None);
}

#[test]
fn a_run_says_what_a_script_is_run_with() {
    let config = parse_ok(
        "[[run]]\nscript = \"jobs/count.sh\"\nargs = [\"/data/in.txt\", \"-\"]\nenv = { IN = \"/data\", ENTRIES = \"3\" }\n",
    );
    let origin_dir = Path::new(ORIGIN).parent().expect("the origin has a directory");
    let run = config.run_of(&origin_dir.join("jobs/./count.sh")).expect("the run is found by its script");
    assert_eq!(run.args, ["/data/in.txt", "-"]);
    assert_eq!(run.env.get("ENTRIES").map(String::as_str), Some("3"));
    assert!(config.run_of(Path::new("/elsewhere.sh")).is_none());
    let missing = parse("[[run]]\nargs = []\n").expect_err("a run names its script");
    assert_eq!(missing.key.as_deref(), Some("run[1].script"));
    let typo = parse("[[run]]\nscript = \"a.sh\"\nargv = []\n").expect_err("an unknown key");
    assert!(typo.message.contains("`args`"), "{}", typo.message);
}
