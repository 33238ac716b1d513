//! `posh-exec --suggest-config` and `posh-exec --check`, the binary end to end: a suggestion
//! from a mount table that posh-core's own loader reads, and checks of mounts served by an
//! embedded proxy and by real posh-proxy processes on loopback, healthy and broken in each way
//! the check tells apart.

mod common;
#[path = "common/proxy.rs"]
mod proxy_process;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use posh_core::config::Config;
use proxy_process::Proxy;

/// A client directory: its state (identity, known proxies) and config homes, and the files its
/// mounts show.
struct Client {
    dir: tempfile::TempDir,
}

impl Client {
    fn new() -> Client {
        Client { dir: tempfile::tempdir().unwrap() }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn posh(&self, args: &[&str]) -> (Output, Duration) {
        let started = Instant::now();
        let mut command = Command::new(env!("CARGO_BIN_EXE_posh-exec"));
        common::isolate(&mut command, self.root(), &self.root().join("config"), &self.root().join("client"));
        let output =
            command.args(args).current_dir(self.root()).env("LC_ALL", "C").stdin(Stdio::null()).output().unwrap();
        (output, started.elapsed())
    }

    fn fingerprint(&self) -> String {
        let (out, _) = self.posh(&["--print-identity"]);
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn known_proxies(&self) -> PathBuf {
        self.root().join("client/posh/known_proxies")
    }

    /// A directory `name` holding `files` (name, content).
    fn dir_with(&self, name: &str, files: &[(&str, &[u8])]) -> PathBuf {
        let dir = self.root().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, content) in files {
            std::fs::write(dir.join(file), content).unwrap();
        }
        dir
    }

    /// A posh-proxy exporting `export`, serving this client unless `authorized` is false.
    fn proxy(&self, name: &str, export: &Path, authorized: bool) -> Proxy {
        let list = self.root().join(format!("authorized-{name}"));
        let content = if authorized { format!("{}\n", self.fingerprint()) } else { "# nobody\n".to_string() };
        std::fs::write(&list, content).unwrap();
        let state = self.root().join(format!("state-{name}"));
        Proxy::start(export, &state, &["--authorized-clients", list.to_str().unwrap()])
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A UDP port nothing listens on (bound for a moment, then let go).
fn closed_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The output with what changes from run to run replaced: the given strings, other
/// fingerprints (an embedded proxy's), and the measured numbers; the table's rows as their
/// cells, so that the columns' widths do not matter.
fn redact(output: &str, names: &[(&str, &str)]) -> String {
    let mut text = output.to_string();
    for (from, to) in names {
        text = text.replace(from, to);
    }
    let mut lines = Vec::new();
    let mut in_table = true;
    for line in text.lines() {
        in_table &= !line.is_empty();
        if line.starts_with("  note: ") {
            // Whether the measures are twice off posh.toml's, and which, is the machine's.
            lines.push("  note: [estimates to set]".to_string());
            continue;
        }
        let line = if in_table {
            line.split("  ").map(str::trim).filter(|cell| !cell.is_empty()).collect::<Vec<_>>().join(" | ")
        } else {
            line.to_string()
        };
        let words: Vec<String> = line
            .split(' ')
            .map(|w| match w.find("SHA256:") {
                Some(at) => format!("{}[fingerprint]{}", &w[..at], if w.ends_with(',') { "," } else { "" }),
                None => w.to_string(),
            })
            .collect();
        lines.push(redact_measures(&words));
    }
    lines.join("\n") + "\n"
}

/// `0.297 ms`, `1.19 Gbit/s`, `4.08 MB` (in quotes too) become `[time]`, `[rate]`, `[MB]`.
fn redact_measures(words: &[String]) -> String {
    const UNITS: &[(&str, &str)] = &[
        ("ns", "time"),
        ("us", "time"),
        ("ms", "time"),
        ("s", "time"),
        ("bit/s", "rate"),
        ("Kbit/s", "rate"),
        ("Mbit/s", "rate"),
        ("Gbit/s", "rate"),
        ("Tbit/s", "rate"),
        ("MB", "MB"),
    ];
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if let Some(next) = words.get(i + 1) {
            let number = words[i].trim_start_matches('"');
            let unit = next.trim_end_matches(['"', ',', ':', ')']);
            if let Some((_, class)) = UNITS.iter().find(|(u, _)| *u == unit)
                && number.parse::<f64>().is_ok()
            {
                let before = &words[i][..words[i].len() - number.len()];
                out.push(format!("{before}[{class}]{}", &next[unit.len()..]));
                i += 2;
                continue;
            }
        }
        out.push(words[i].clone());
        i += 1;
    }
    out.join(" ")
}

/// One posh.toml with a mount of every kind: served well by an embedded proxy and by a
/// posh-proxy process, a closed port, a proxy exporting another copy of the files, and a proxy
/// that is not the one pinned for its address. The table says which is which, and the exit
/// status is 1; a second check finds the good proxy pinned.
#[test]
fn a_check_tells_each_mount_apart() {
    let client = Client::new();
    let small: &[u8] = b"the same small file\n";
    let big = vec![b'x'; 300_000];
    let shared = client.dir_with("shared", &[("a.txt", small), ("big.bin", &big)]);
    client.dir_with("local", &[("notes.txt", b"local notes\n")]);
    // The client sees `view`; its proxy exports `stale`: the same name, same size, other bytes.
    client.dir_with("view", &[("a.txt", b"the same small file\n")]);
    let stale = client.dir_with("stale", &[("a.txt", b"the same small fil!\n")]);
    let good = client.proxy("good", &shared, true);
    let differs = client.proxy("differs", &stale, true);
    let impostor = client.proxy("impostor", &shared, true);
    let closed_port = closed_port().to_string();
    let closed = format!("127.0.0.1:{closed_port}");
    // Another fingerprint than the impostor's is pinned for its address.
    std::fs::create_dir_all(client.known_proxies().parent().unwrap()).unwrap();
    let pinned = "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    std::fs::write(client.known_proxies(), format!("{} {pinned}\n", impostor.addr)).unwrap();
    std::fs::create_dir_all(client.root().join("closed")).unwrap();
    // The impostor exports `shared`; the client's `impostor` directory shows the same files.
    client.dir_with("impostor", &[("a.txt", small)]);
    let config = format!(
        "[[mount]]\nname = \"scratch\"\npath = \"local\"\nproxy = \"embedded\"\n\n\
         [[mount]]\nname = \"good\"\npath = \"shared\"\nproxy = \"{}\"\n\n\
         [[mount]]\nname = \"closed\"\npath = \"closed\"\nproxy = \"{closed}\"\n\n\
         [[mount]]\nname = \"stale\"\npath = \"view\"\nproxy = \"{}\"\n\n\
         [[mount]]\nname = \"impostor\"\npath = \"impostor\"\nproxy = \"{}\"\n",
        good.addr, differs.addr, impostor.addr
    );
    std::fs::write(client.root().join("posh.toml"), &config).unwrap();

    let (out, took) = client.posh(&["--check"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", text(&out.stderr));
    assert!(took < Duration::from_secs(20), "the check took {took:?}");
    let root = client.root().to_str().unwrap();
    let names = [
        (good.addr.as_str(), "[good proxy]"),
        (differs.addr.as_str(), "[stale proxy]"),
        (impostor.addr.as_str(), "[impostor proxy]"),
        (closed.as_str(), "[closed address]"),
        (closed_port.as_str(), "[port]"),
        (good.fingerprint.as_str(), "[good fingerprint]"),
        (differs.fingerprint.as_str(), "[stale fingerprint]"),
        (impostor.fingerprint.as_str(), "[impostor fingerprint]"),
        (pinned, "[pinned fingerprint]"),
        (root, "[dir]"),
    ];
    insta::assert_snapshot!(redact(&stdout, &names));
    // What was met for the first time is pinned now; the impostor's pin is left as it was.
    let known = std::fs::read_to_string(client.known_proxies()).unwrap();
    assert!(known.contains(&format!("{} {}", good.addr, good.fingerprint)), "{known}");
    assert!(known.contains(&format!("{} {pinned}", impostor.addr)), "{known}");
    assert!(!known.contains(&impostor.fingerprint), "{known}");

    let (again, _) = client.posh(&["--check"]);
    let again = text(&again.stdout);
    let good_row = again.lines().find(|l| l.starts_with("good ")).unwrap();
    assert!(good_row.contains(" pinned ") && good_row.ends_with(" ok"), "{again}");
    // The small files compared at the good proxy are the ones the client holds.
    assert!(again.contains("export: `a.txt` reads the same at both ends (20 bytes, sha256 "), "{again}");
}

/// A closed port fails at once (its host says so), a port where something silent listens
/// within the connection's time limit, and a proxy that does not serve this client says how to
/// be let in; each with exit status 1 and what to do.
#[test]
fn unreachable_and_unwelcoming_proxies_fail_in_bounded_time() {
    let client = Client::new();
    let export = client.dir_with("data", &[("a.txt", b"x\n")]);
    let closed = format!("127.0.0.1:{}", closed_port());
    std::fs::write(client.root().join("posh.toml"), format!("[[mount]]\npath = \"data\"\nproxy = \"{closed}\"\n"))
        .unwrap();
    let (out, took) = client.posh(&["--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(took < Duration::from_secs(2), "a closed port took {took:?}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("data: FAILED: nothing listens at {closed}: its host answered that UDP port")),
        "{stdout}"
    );
    assert!(stdout.contains("  to do: start posh-proxy on that host"), "{stdout}");

    // Something holds the port and never answers.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    std::fs::write(client.root().join("posh.toml"), format!("[[mount]]\npath = \"data\"\nproxy = \"{addr}\"\n"))
        .unwrap();
    let (out, took) = client.posh(&["--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(8), "a silent port took {took:?}");
    assert!(
        text(&out.stdout).contains(&format!("data: FAILED: no answer from {addr} within 3 s")),
        "{}",
        text(&out.stdout)
    );
    drop(silent);

    let unwelcoming = client.proxy("closed-door", &export, false);
    std::fs::write(
        client.root().join("posh.toml"),
        format!("[[mount]]\npath = \"data\"\nproxy = \"{}\"\n", unwelcoming.addr),
    )
    .unwrap();
    let (out, _) = client.posh(&["--check"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let fingerprint = client.fingerprint();
    assert!(
        stdout.contains(&format!(
            "data: FAILED: {} does not serve this client: client {fingerprint} is not authorized",
            unwelcoming.addr
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("to do: add this client's fingerprint {fingerprint}")), "{stdout}");
    // It was reached, and who it is is known.
    assert!(stdout.contains(&format!("identity {}", unwelcoming.fingerprint)), "{stdout}");

    // A proxy whose export lacks the client's file.
    let empty = client.dir_with("empty", &[]);
    let elsewhere = client.proxy("elsewhere", &empty, true);
    std::fs::write(
        client.root().join("posh.toml"),
        format!("[[mount]]\npath = \"data\"\nproxy = \"{}\"\n", elsewhere.addr),
    )
    .unwrap();
    let (out, _) = client.posh(&["--check"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "data: FAILED: the proxy's export has no regular file `a.txt`, which the client sees at {}/a.txt (2 bytes)",
            export.display()
        )),
        "{stdout}"
    );
    assert!(stdout.lines().nth(1).unwrap().contains("DIFFERS"), "{stdout}");
}

/// Usage and configuration errors are status 2, with the reason.
#[test]
fn a_check_without_a_usable_configuration_is_a_usage_error() {
    let client = Client::new();
    let (out, _) = client.posh(&["--check"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nothing to check: no posh.toml found"), "{}", text(&out.stderr));
    std::fs::write(client.root().join("posh.toml"), "[client]\nrtt = \"1ms\"\n").unwrap();
    let (out, _) = client.posh(&["--check"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("posh.toml declares no mount"), "{}", text(&out.stderr));
    std::fs::write(client.root().join("broken.toml"), "[[mount]]\npath = \"x\"\n").unwrap();
    let (out, _) = client.posh(&["--check", "--config", "broken.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("broken.toml:1:1: key `mount[1].proxy`: missing required key"),
        "{}",
        text(&out.stderr)
    );
    // The flags that make no sense together.
    for args in [
        &["--check", "--explain"][..],
        &["--mountinfo", "x"],
        &["--suggest-config", "--check"],
        &["--check", "script.sh"],
    ] {
        let (out, _) = client.posh(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    let (out, _) = client.posh(&["--suggest-config", "--mountinfo", "missing"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("missing: cannot read the mount table"), "{}", text(&out.stderr));
}

/// A mount table with networked filesystems among local ones: one mount each, measured within
/// a few seconds even for a server that does not answer and a mount point that is gone, and a
/// file posh-core's own loader reads (through `--config`, as a user would).
#[test]
fn a_suggested_configuration_is_read_by_posh() {
    let client = Client::new();
    let logs = client.dir_with("mnt/logs", &[("big.log", &vec![b'l'; 1 << 20]), ("a.log", b"a\n")]);
    let table = format!(
        "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
         27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n\
         48 27 0:50 / {logs} rw,relatime shared:30 - nfs4 127.0.0.1:/srv/logs rw,vers=4.2,addr=127.0.0.1\n\
         49 27 0:51 / {logs}/old\\040data rw,relatime shared:31 - fuse.sshfs me@localhost:/srv/old\\040data rw,user_id=0\n\
         50 27 0:52 / /nonexistent/share rw,relatime - cifs //no-such-host.invalid/team rw,vers=3.1.1\n\
         not a mount line\n\
         70 27 0:61 / /run/user/1000/gvfs rw,nosuid,nodev,relatime - fuse.gvfsd-fuse gvfsd-fuse rw\n",
        logs = logs.display()
    );
    std::fs::write(client.root().join("mountinfo"), table).unwrap();
    let (out, took) = client.posh(&["--suggest-config", "--mountinfo", "mountinfo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The SMB server that resolves to nothing, lookups in a missing directory.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let suggested = text(&out.stdout);
    std::fs::write(client.root().join("suggested.toml"), &suggested).unwrap();
    let config = Config::parse(&suggested, &client.root().join("suggested.toml")).unwrap();
    let mounts: Vec<(&str, String, String, String)> = config
        .mounts
        .iter()
        .map(|m| (m.name.as_str(), m.path.display().to_string(), m.proxy.to_string(), m.export.display().to_string()))
        .collect();
    let logs = logs.display().to_string();
    assert_eq!(
        mounts,
        [
            ("logs", logs.clone(), "ssh://127.0.0.1".to_string(), "/srv/logs".to_string()),
            ("old-data", format!("{logs}/old data"), "ssh://me@localhost".to_string(), "/srv/old data".to_string()),
            (
                "share",
                "/nonexistent/share".to_string(),
                "ssh://no-such-host.invalid".to_string(),
                "/nonexistent/share".to_string()
            ),
        ]
    );
    // Measured where it could be: the loopback server answers handshakes, the file is read.
    assert!(config.mounts[0].link.rtt < Duration::from_millis(50), "{suggested}");
    assert!(suggested.contains(&format!("# bandwidth: read 1 MiB of {logs}/big.log in ")), "{suggested}");
    assert!(suggested.contains("# rtt: not measured: "), "{suggested}");
    assert!(suggested.contains("# - mountinfo line 6: no ` - ` before the filesystem type\n"), "{suggested}");
    // posh-exec itself reads it.
    let (out, _) = client.posh(&["--config", "suggested.toml", "--explain", "-c", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
