//! Globs over a mount expanded by bash at the mount's proxy (issue 40), seen from outside: the
//! proxy's export holds a file the client's directory lacks, so the names a pipeline gets say
//! where the directory was listed. (The oracle cases `globs-at-proxy*` hold the names against
//! bash's, in every mode.)

use std::process::Command;

use crate::oracle::{ProxyProcess, hand_over, posh_exec, running_as_root};

/// A client directory with `logs/a.log`, mounted at `logs` from a proxy whose export holds
/// `a.log` and `b.log`; `proxy` is the mount's proxy address, or `None` to start one.
struct Site {
    root: tempfile::TempDir,
    _proxy: Option<ProxyProcess>,
}

impl Site {
    fn new(proxy: Option<&str>) -> Site {
        let root = tempfile::tempdir().expect("tempdir");
        let (client, export) = (root.path().join("client"), root.path().join("export"));
        std::fs::create_dir_all(client.join("logs")).expect("mkdir");
        std::fs::create_dir_all(&export).expect("mkdir");
        std::fs::write(client.join("logs/a.log"), "SLOW a\n").expect("write");
        std::fs::write(export.join("a.log"), "SLOW a\n").expect("write");
        std::fs::write(export.join("b.log"), "SLOW b\n").expect("write");
        let started = proxy.is_none().then(|| ProxyProcess::start(&export));
        let addr = proxy.map_or_else(|| started.as_ref().expect("started").addr.clone(), str::to_string);
        let config = format!("[[mount]]\nname = \"logs\"\npath = \"logs\"\nproxy = \"{addr}\"\n");
        std::fs::write(client.join("posh.toml"), config).expect("write posh.toml");
        std::fs::write(client.join("case.sh"), "cat logs/*.log | grep SLOW | wc -l\n").expect("write");
        if running_as_root() {
            hand_over(&[root.path()]);
        }
        Site { root, _proxy: started }
    }

    /// posh-exec's output and its `--stats` records.
    fn run(&self) -> (String, Vec<serde_json::Value>) {
        let client = self.root.path().join("client");
        let stats = self.root.path().join("stats.jsonl");
        let mut command = Command::new(posh_exec());
        crate::isolation::isolate_in(&mut command, &self.root.path().join("home"));
        command.current_dir(&client).env("LC_ALL", "C").arg("--stats").arg(&stats).arg("./case.sh");
        let output = command.output().expect("run posh-exec");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "posh-exec failed: {stderr}");
        let records = std::fs::read_to_string(&stats).unwrap_or_default();
        let records = records.lines().map(|l| serde_json::from_str(l).expect("a JSON record")).collect();
        (String::from_utf8_lossy(&output.stdout).trim().to_string(), records)
    }
}

fn globs(records: &[serde_json::Value]) -> Vec<serde_json::Value> {
    records.iter().flat_map(|r| r["globs"].as_array().cloned().unwrap_or_default()).collect()
}

/// Listed at the client, `logs/*.log` would be `logs/a.log` alone.
#[test]
fn globs_over_a_mount_are_listed_at_its_proxy() {
    let site = Site::new(None);
    let (output, records) = site.run();
    assert_eq!(output, "2", "the proxy's listing has two logs; records: {records:?}");
    let globs = globs(&records);
    assert_eq!(globs.len(), 1, "{records:?}");
    assert_eq!((globs[0]["pattern"].as_str(), globs[0]["at"].as_str()), (Some("logs/*.log"), Some("logs")));
    assert_eq!(globs[0]["names"], 2);
}

/// No proxy answers: bash expands the glob at the client, and `--stats` says why.
#[test]
fn globs_fall_back_to_the_client_when_no_proxy_answers() {
    let closed = std::net::UdpSocket::bind("127.0.0.1:0").expect("a free port");
    let addr = closed.local_addr().expect("its address").to_string();
    drop(closed);
    let site = Site::new(Some(&addr));
    let (output, records) = site.run();
    assert_eq!(output, "1", "{records:?}");
    let globs = globs(&records);
    assert_eq!(globs.len(), 1, "{records:?}");
    assert_eq!(globs[0]["at"].as_str(), Some("client"), "{records:?}");
    assert!(globs[0]["why"].as_str().is_some_and(|why| why.contains("@logs")), "{records:?}");
}
