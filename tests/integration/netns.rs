//! Client and proxy as two hosts: each in its own network namespace, joined by a veth pair, with
//! the proxy listening only on the storage side's address, so every byte between them crosses a
//! network link (the data directory itself is on the one disk, as an NFS mount would show it to
//! the client). A script runs under bash and under posh-exec in the client namespace; the two
//! must agree, and `--stats` must show the work done at the proxy with only the results crossing.
//!
//! Needs root and iproute2's `ip`. Without them the tests print why they skip and pass, except
//! under CI (`$CI` set), where they must run. Namespaces, the veth pair and the proxy are removed
//! by guards, on panic too.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::oracle::{Outcome, PROXY_USER, hand_over, posh_exec, run_with_timeout, short_diff};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The mount's name in `posh.toml`, which `--stats` reports as the location of its commands.
const MOUNT: &str = "logs";

/// Whether the tests can run here; prints the reason when they cannot, and fails under CI.
fn can_run() -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let ip = Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success());
    let why = match (root, ip) {
        (true, true) => return true,
        (false, _) => "not running as root",
        (true, false) => "iproute2's `ip` is not installed",
    };
    assert!(std::env::var_os("CI").is_none(), "netns tests must run under CI, but {why}");
    eprintln!("netns: SKIPPED: {why}; these tests need root and `ip` to make network namespaces");
    false
}

/// Runs `ip ARGS`, panicking with its message when it fails.
fn ip(args: &[&str]) {
    let output = Command::new("ip").args(args).output().unwrap_or_else(|e| panic!("cannot run ip: {e}"));
    assert!(output.status.success(), "ip {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
}

/// Two namespaces joined by a veth pair: `client` (`x.x.x.1/24`) and `storage` (`x.x.x.2/24`).
/// Dropping it deletes both (and with them the pair).
#[derive(Debug)]
struct Hosts {
    client: String,
    storage: String,
    client_veth: String,
    client_ip: String,
    storage_ip: String,
}

impl Hosts {
    fn new() -> Hosts {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let (pid, n) = (std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let subnet = format!("10.78.{}", (pid + n) % 250 + 1);
        // The guard exists before the first namespace, so whatever was made is removed.
        let hosts = Hosts {
            client: format!("posh-t-client-{pid}-{n}"),
            storage: format!("posh-t-storage-{pid}-{n}"),
            // Interface names have at most 15 bytes.
            client_veth: format!("pt{pid}x{n}c"),
            client_ip: format!("{subnet}.1"),
            storage_ip: format!("{subnet}.2"),
        };
        let storage_veth = format!("pt{pid}x{n}s");
        ip(&["netns", "add", &hosts.client]);
        ip(&["netns", "add", &hosts.storage]);
        ip(&["link", "add", &hosts.client_veth, "type", "veth", "peer", "name", &storage_veth]);
        for (ns, veth, addr) in
            [(&hosts.client, &hosts.client_veth, &hosts.client_ip), (&hosts.storage, &storage_veth, &hosts.storage_ip)]
        {
            ip(&["link", "set", veth, "netns", ns]);
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", veth]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            ip(&["-n", ns, "link", "set", veth, "up"]);
        }
        hosts
    }

    /// `program ARGS...` to be run in namespace `ns`.
    fn command(ns: &str, program: &Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", ns]).arg(program);
        command
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in [&self.client, &self.storage] {
            let _ = Command::new("ip").args(["netns", "del", ns]).stderr(Stdio::null()).status();
        }
        // Still here only if it never moved into a namespace.
        let _ = Command::new("ip").args(["link", "del", &self.client_veth]).stderr(Stdio::null()).status();
    }
}

/// A `posh-proxy` running in the storage namespace. Dropping it stops it.
#[derive(Debug)]
struct Proxy {
    child: Child,
    /// Everything it printed on stderr so far.
    log: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
    /// `ADDRESS:PORT` as it printed it.
    addr: String,
    fingerprint: String,
}

impl Proxy {
    fn start(hosts: &Hosts, export: &Path, state: &Path, authorized: &Path) -> Proxy {
        let binary = posh_exec().with_file_name("posh-proxy");
        assert!(binary.is_file(), "{} does not exist: run `cargo build -p posh-exec` first", binary.display());
        // These tests run as root, and a root proxy must be told which user to become.
        hand_over(&[export, state]);
        let mut command = Hosts::command(&hosts.storage, &binary);
        command
            .args(["--user", PROXY_USER])
            .arg("--export")
            .arg(export)
            .args(["--listen", &format!("{}:0", hosts.storage_ip)])
            .arg("--state-dir")
            .arg(state)
            .arg("--authorized-clients")
            .arg(authorized)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stderr = child.stderr.take().expect("stderr is piped");
        let log = Arc::new(Mutex::new(String::new()));
        let (lines_tx, lines) = std::sync::mpsc::channel();
        let reader = {
            let log = log.clone();
            // Read to the end, so the proxy never blocks on a full pipe.
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    log.lock().expect("log lock").push_str(&format!("{line}\n"));
                    let _ = lines_tx.send(line);
                }
            })
        };
        let mut proxy = Proxy { child, log, reader: Some(reader), addr: String::new(), fingerprint: String::new() };
        // `posh-proxy: listening on ADDR, fingerprint SHA256:...`
        let deadline = Instant::now() + TIMEOUT;
        while proxy.addr.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!("posh-proxy did not print its address in time:\n{}", proxy.log.lock().expect("log lock"))
            });
            if let Some((addr, fingerprint)) =
                line.strip_prefix("posh-proxy: listening on ").and_then(|rest| rest.split_once(", fingerprint "))
            {
                proxy.addr = addr.to_string();
                proxy.fingerprint = fingerprint.trim().to_string();
            }
        }
        assert!(proxy.fingerprint.starts_with("SHA256:"), "unexpected fingerprint {:?}", proxy.fingerprint);
        proxy
    }

    fn log(&self) -> String {
        self.log.lock().expect("log lock").clone()
    }

    /// Waits (a little) until the log holds `text`; says whether it does.
    fn wait_for_log(&self, text: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.log().contains(text) {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// Stops the proxy (SIGTERM, then SIGKILL) and returns everything it printed.
    fn stop(&mut self) -> String {
        if self.child.try_wait().ok().flatten().is_none() {
            // `ip netns exec` execs the proxy, so the child is the proxy itself.
            let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.log()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One test's files: `data/` (the export, holding `big.log`), the client's state, the proxy's
/// state and its authorized-clients file, the script and `posh.toml`.
#[derive(Debug)]
struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    client_state: PathBuf,
    script: PathBuf,
}

/// The log: 150,000 ordinary lines with an `x`, and ten `rare` ones.
fn big_log() -> String {
    let mut text = String::new();
    for i in 0..150_000u32 {
        if i % 15_000 == 7 {
            text.push_str(&format!("{i:06} host{} ERROR rare failure {}\n", i / 15_000 % 3, i / 15_000));
        } else {
            text.push_str(&format!("{i:06} host{} GET /item/{} 200 {}x\n", i % 7, i * 31 % 1000, i % 97));
        }
    }
    text
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical tempdir");
        let data = root.join("data");
        for dir in [&data, &root.join("xdg"), &root.join("proxy-state")] {
            std::fs::create_dir_all(dir).expect("create dir");
        }
        std::fs::write(data.join("big.log"), big_log()).expect("write big.log");
        let d = data.display();
        let script = root.join("script.sh");
        std::fs::write(
            &script,
            format!(
                "cat {d}/big.log | grep rare\n\
                 grep -c x {d}/big.log > {d}/out.txt\n\
                 grep rare {d}/big.log | cut -d ' ' -f 2 | sort | uniq -c\n"
            ),
        )
        .expect("write script");
        Setup { client_state: root.join("client-state"), _tmp: tmp, root, data, script }
    }

    /// `command` with the environment cleared to what the runs need.
    fn environment(&self, command: &mut Command, state: &Path) {
        command
            .current_dir(&self.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        crate::isolation::isolate(command, &self.root, &self.root.join("xdg"), state);
    }

    /// The fingerprint of the client identity kept under `state` (created on first use).
    fn identity(&self, state: &Path) -> String {
        let mut command = Command::new(posh_exec());
        command.arg("--print-identity");
        self.environment(&mut command, state);
        let outcome = run_with_timeout(command, TIMEOUT);
        assert_eq!(outcome.status, "exit 0", "--print-identity: {}", String::from_utf8_lossy(&outcome.stderr));
        String::from_utf8(outcome.stdout).expect("UTF-8").trim().to_string()
    }

    /// A proxy in `hosts`' storage namespace exporting `data/`, serving this setup's client.
    fn proxy(&self, hosts: &Hosts) -> Proxy {
        let authorized = self.root.join("authorized-clients");
        std::fs::write(&authorized, format!("{}\n", self.identity(&self.client_state))).expect("write authorized");
        let proxy = Proxy::start(hosts, &self.data, &self.root.join("proxy-state"), &authorized);
        let config =
            format!("[[mount]]\nname = \"{MOUNT}\"\npath = \"{}\"\nproxy = \"{}\"\n", self.data.display(), proxy.addr);
        std::fs::write(self.root.join("posh.toml"), config).expect("write posh.toml");
        proxy
    }

    /// The script under plain bash (outside the namespaces: bash reads the files on disk), with
    /// the file it writes, which is then removed for the next run.
    fn run_bash(&self) -> (Outcome, Vec<u8>) {
        let mut command = Command::new("bash");
        command.arg(&self.script);
        self.environment(&mut command, &self.client_state);
        self.finish(run_with_timeout(command, TIMEOUT))
    }

    /// The script under posh-exec in the client namespace, with the file it writes and the
    /// `--stats` records.
    fn run_posh(&self, hosts: &Hosts) -> (Outcome, Vec<u8>, Vec<Json>) {
        let stats = self.root.join("stats.jsonl");
        let mut command = Hosts::command(&hosts.client, &posh_exec());
        command.arg("--config").arg(self.root.join("posh.toml")).arg("--stats").arg(&stats).arg(&self.script);
        self.environment(&mut command, &self.client_state);
        let (outcome, written) = self.finish(run_with_timeout(command, TIMEOUT));
        let text = std::fs::read_to_string(&stats).expect("posh-exec writes --stats");
        let records = text.lines().map(|line| Json::parse(line).unwrap_or_else(|e| panic!("{e} in {line}"))).collect();
        (outcome, written, records)
    }

    fn finish(&self, outcome: Outcome) -> (Outcome, Vec<u8>) {
        let out = self.data.join("out.txt");
        let written = std::fs::read(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        std::fs::remove_file(&out).expect("remove out.txt");
        (outcome, written)
    }
}

/// Asserts that posh-exec's run is bash's: status, stdout, the file written and (with
/// `same_stderr`) stderr.
fn assert_same(bash: &(Outcome, Vec<u8>), posh: &(Outcome, Vec<u8>, Vec<Json>), same_stderr: bool) {
    let posh_stderr = String::from_utf8_lossy(&posh.0.stderr);
    assert_eq!(bash.0.status, "exit 0", "bash: {}", String::from_utf8_lossy(&bash.0.stderr));
    assert_eq!(posh.0.status, bash.0.status, "posh-exec's status; its stderr:\n{posh_stderr}");
    assert!(posh.0.stdout == bash.0.stdout, "stdout differs:\n{}", short_diff(&bash.0.stdout, &posh.0.stdout));
    assert!(posh.1 == bash.1, "out.txt differs:\n{}", short_diff(&bash.1, &posh.1));
    if same_stderr {
        assert!(posh.0.stderr == bash.0.stderr, "stderr differs:\n{}", short_diff(&bash.0.stderr, &posh.0.stderr));
    }
}

/// Every command of every record: (line, command, location).
fn locations(records: &[Json]) -> Vec<(f64, String, String)> {
    let mut all = Vec::new();
    for record in records {
        for command in record.get("commands").and_then(Json::array).expect("a record has commands") {
            let field = |name: &str| command.get(name).and_then(Json::string).unwrap_or("?").to_string();
            let line = command.get("line").and_then(Json::number).unwrap_or(0.0);
            all.push((line, field("command"), field("location")));
        }
    }
    all
}

#[test]
fn pipelines_run_at_a_proxy_on_another_host() {
    if !can_run() {
        return;
    }
    let setup = Setup::new();
    let hosts = Hosts::new();
    let proxy = setup.proxy(&hosts);
    let bash = setup.run_bash();
    let posh = setup.run_posh(&hosts);
    assert_same(&bash, &posh, true);
    assert!(!bash.0.stdout.is_empty() && bash.1 == b"149990\n", "the script's own outputs are wrong: {bash:?}");

    // Every command ran at the proxy, reached from the client's address.
    let records = &posh.2;
    assert_eq!(records.len(), 3, "one --stats record per pipeline: {records:?}");
    let where_ = locations(records);
    assert!(where_.iter().all(|(_, _, at)| at == MOUNT), "not everything ran at the mount `{MOUNT}`: {where_:?}");
    assert!(
        proxy.wait_for_log(&format!("connected from {}:", hosts.client_ip)),
        "the proxy saw no connection from the client namespace ({}):\n{}",
        hosts.client_ip,
        proxy.log()
    );
    // What the refused proxy's log must not show (`a_proxy_with_another_fingerprint_is_refused`).
    assert!(proxy.log().contains("running \"cat "), "no job's line in the proxy's log:\n{}", proxy.log());

    // Only the matching lines crossed: a few hundred bytes of a 5 MB file.
    let size = std::fs::metadata(setup.data.join("big.log")).expect("big.log").len();
    let crossed: Vec<f64> = records
        .iter()
        .map(|r| {
            r.get("proxies").and_then(|p| p.get(MOUNT)).and_then(|m| m.get("bytes_from_proxy")).and_then(Json::number)
        })
        .map(|n| n.unwrap_or_else(|| panic!("a record without bytes_from_proxy for `{MOUNT}`: {records:?}")))
        .collect();
    let rare_lines = bash.0.stdout.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(rare_lines, 10 + 3, "10 rare lines, then 3 counts by host");
    let first_output = bash.0.stdout.split_inclusive(|&b| b == b'\n').take(10).map(<[u8]>::len).sum::<usize>();
    assert!(
        crossed[0] >= first_output as f64 && crossed[0] < 4096.0,
        "`cat big.log | grep rare` moved {} bytes from the proxy; its output is {first_output} bytes",
        crossed[0]
    );
    assert!(
        crossed.iter().sum::<f64>() < size as f64 / 100.0,
        "{crossed:?} bytes crossed for a {size}-byte file: more than the results"
    );
}

#[test]
fn a_proxy_with_another_fingerprint_is_refused() {
    if !can_run() {
        return;
    }
    let setup = Setup::new();
    let hosts = Hosts::new();
    let mut proxy = setup.proxy(&hosts);
    // The client pinned another certificate for this address (a real fingerprint, not the proxy's).
    let other = setup.identity(&setup.root.join("other-state"));
    let known = setup.client_state.join("posh/known_proxies");
    let pinned = format!("{} {other}\n", proxy.addr);
    std::fs::create_dir_all(known.parent().expect("a parent")).expect("create the client state");
    std::fs::write(&known, &pinned).expect("write known_proxies");

    let bash = setup.run_bash();
    let posh = setup.run_posh(&hosts);
    // The output is bash's: the commands fell back to the client.
    assert_same(&bash, &posh, false);
    let stderr = String::from_utf8_lossy(&posh.0.stderr);
    for expected in [
        format!("proxy {} presented certificate fingerprint {}", proxy.addr, proxy.fingerprint),
        format!("records {other} for it; refusing to connect"),
        format!("mount {MOUNT}: "),
        "its commands run at the client".to_string(),
    ] {
        assert!(stderr.contains(&expected), "posh-exec's stderr does not say `{expected}`:\n{stderr}");
    }
    // Nothing crossed. (Not checked: `location`, which reports where a command was placed, not
    // where it ran after the fallback.)
    assert_eq!(posh.2.len(), 3, "one --stats record per pipeline: {:?}", posh.2);
    for record in &posh.2 {
        let traffic = record.get("proxies").and_then(|p| p.get(MOUNT));
        let bytes =
            ["bytes_to_proxy", "bytes_from_proxy"].map(|k| traffic.and_then(|t| t.get(k)).and_then(Json::number));
        assert!(bytes.iter().all(|b| b.unwrap_or(0.0) == 0.0), "bytes crossed to a refused proxy: {record:?}");
    }
    assert_eq!(std::fs::read_to_string(&known).expect("known_proxies"), pinned, "the pin must not change");
    let log = proxy.stop();
    // (A job's log line: `running "cat a b" | "wc -l"`, see posh-proxy's `job::Summary`.)
    assert!(!log.contains("running \""), "the refused proxy ran something:\n{log}");
}

/// Just enough JSON for `--stats` records.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn parse(text: &str) -> Result<Json, String> {
        let mut parser = JsonParser { bytes: text.as_bytes(), at: 0 };
        let value = parser.value()?;
        parser.space();
        if parser.at != parser.bytes.len() {
            return Err(format!("trailing text at byte {}", parser.at));
        }
        Ok(value)
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn array(&self) -> Option<&[Json]> {
        if let Json::Array(items) = self { Some(items) } else { None }
    }

    fn string(&self) -> Option<&str> {
        if let Json::String(s) = self { Some(s) } else { None }
    }

    fn number(&self) -> Option<f64> {
        if let Json::Number(n) = self { Some(*n) } else { None }
    }
}

struct JsonParser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl JsonParser<'_> {
    fn space(&mut self) {
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Result<(), String> {
        self.space();
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {}", byte as char, self.at))
        }
    }

    /// `open`, items separated by commas, `close`.
    fn list<T>(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        self.eat(open)?;
        let mut items = Vec::new();
        self.space();
        if self.bytes.get(self.at) == Some(&close) {
            self.at += 1;
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            self.space();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(&b) if b == close => {
                    self.at += 1;
                    return Ok(items);
                }
                _ => return Err(format!("expected `,` or `{}` at byte {}", close as char, self.at)),
            }
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.space();
        let rest = &self.bytes[self.at..];
        match rest.first() {
            Some(b'{') => Ok(Json::Object(self.list(b'{', b'}', |p| {
                let key = p.string()?;
                p.eat(b':')?;
                Ok((key, p.value()?))
            })?)),
            Some(b'[') => Ok(Json::Array(self.list(b'[', b']', Self::value)?)),
            Some(b'"') => Ok(Json::String(self.string()?)),
            _ => {
                for (word, value) in [("null", Json::Null), ("true", Json::Bool(true)), ("false", Json::Bool(false))] {
                    if rest.starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Ok(value);
                    }
                }
                let len = rest.iter().take_while(|b| b.is_ascii_digit() || b"+-.eE".contains(b)).count();
                let text = std::str::from_utf8(&rest[..len]).expect("ASCII");
                self.at += len;
                text.parse().map(Json::Number).map_err(|_| format!("bad value at byte {}", self.at - len))
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let byte = *self.bytes.get(self.at).ok_or("unterminated string")?;
            self.at += 1;
            match byte {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let escaped = *self.bytes.get(self.at).ok_or("unterminated escape")?;
                    self.at += 1;
                    let c = match escaped {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'u' => {
                            let hex = self.bytes.get(self.at..self.at + 4).ok_or("short \\u escape")?;
                            self.at += 4;
                            let code = u32::from_str_radix(std::str::from_utf8(hex).map_err(|e| e.to_string())?, 16)
                                .map_err(|e| e.to_string())?;
                            char::from_u32(code).unwrap_or('\u{fffd}')
                        }
                        other => other as char,
                    };
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => out.push(byte),
            }
        }
    }
}

#[test]
fn the_json_reader_reads_stats_records() {
    let record = r#"{"commands":[{"command":"cat","line":1,"location":"logs","status":0}],"proxies":{"logs":{"bytes_from_proxy":66}},"ok":true,"x":null,"s":"a\"\u00e9"}"#;
    let json = Json::parse(record).expect("parses");
    assert_eq!(locations(std::slice::from_ref(&json)), vec![(1.0, "cat".to_string(), "logs".to_string())]);
    let bytes = json.get("proxies").and_then(|p| p.get("logs")).and_then(|l| l.get("bytes_from_proxy"));
    assert_eq!(bytes, Some(&Json::Number(66.0)));
    assert_eq!(json.get("s").and_then(Json::string), Some("a\"é"));
    assert!(Json::parse("{\"a\":1} x").is_err() && Json::parse("[1,").is_err());
}
