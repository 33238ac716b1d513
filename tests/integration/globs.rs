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

    /// The script is `first`, a line run by bash at the proxy's side (`EXPORT` names its export
    /// directory, as another user changing it would), then `pipeline`.
    fn script_after(&self, first: &str, pipeline: &str) {
        let first = first.replace("EXPORT", &self.root.path().join("export").display().to_string());
        std::fs::write(self.root.path().join("client/case.sh"), format!("{first}\n{pipeline}\n")).expect("write");
    }

    /// posh-exec's output and its `--stats` records (this run's alone).
    fn run(&self) -> (String, Vec<serde_json::Value>) {
        let client = self.root.path().join("client");
        let stats = self.root.path().join("stats.jsonl");
        let _ = std::fs::remove_file(&stats);
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

/// A site with its own proxy running `first` then `pipeline` (see [`Site::script_after`]): the
/// site, the run's output, its `--stats` records and their globs.
fn run_after(first: &str, pipeline: &str) -> (Site, String, Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let site = Site::new(None);
    site.script_after(first, pipeline);
    let (output, records) = site.run();
    let globs = globs(&records);
    (site, output, records, globs)
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
    // Guessed from the listing the script's plan asked, and confirmed by the proxy in the job:
    // no question before the job.
    assert_eq!(globs[0]["predicted"], true, "{records:?}");
}

/// A pipeline run whole at the proxy leaves the names it only read in the listing the run keeps,
/// and the file it wrote is taken into it (`Ended::written`): the next pipeline's glob over the
/// same directory is guessed too, that file among its names.
#[test]
fn a_second_pipeline_over_the_directory_is_guessed_too() {
    let (_site, output, records, globs) =
        run_after(": first", "cat logs/*.log | grep SLOW > logs/c.log\ncat logs/*.log | wc -l");
    assert_eq!(output, "4", "a.log, b.log and the c.log of their two lines: {records:?}");
    assert_eq!(globs.len(), 2, "{records:?}");
    for glob in &globs {
        assert_eq!(glob["predicted"], true, "{records:?}");
    }
    assert_eq!(globs[1]["names"], 3, "{records:?}");
}

/// A guess the proxy does not confirm runs nothing: a file added to the export after the run
/// listed it (by the script itself, at the proxy's side, as another user would) is not in the
/// listing the run keeps, so the names are asked and the pipeline planned again with bash's.
#[test]
fn a_guess_the_proxy_does_not_confirm_is_asked_again() {
    let (site, output, records, globs) =
        run_after("echo 'SLOW c' > EXPORT/c.log", "cat logs/*.log | grep SLOW | wc -l");
    assert_eq!(output, "3", "the proxy has three logs now; records: {records:?}");
    assert_eq!(globs.len(), 1, "one record, of the run that ran: {records:?}");
    assert_eq!((globs[0]["at"].as_str(), &globs[0]["names"]), (Some("logs"), &serde_json::json!(3)), "{records:?}");
    assert_eq!(globs[0].get("predicted"), None, "{records:?}");

    // The refused request's bytes are the call's too: against the same run guessed right (c.log
    // is in the listing asked ahead now), the record counts one job's request more.
    let (again, guessed) = site.run();
    assert_eq!(
        (again.as_str(), &self::globs(&guessed)[0]["predicted"]),
        ("3", &serde_json::json!(true)),
        "{guessed:?}"
    );
    let sent = |records: &[serde_json::Value]| {
        records.iter().filter_map(|r| r["proxies"]["logs"]["bytes_to_proxy"].as_u64()).sum::<u64>()
    };
    assert!(sent(&records) > sent(&guessed) + 100, "refused and asked again: {records:?}\nguessed: {guessed:?}");
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

/// A file the pipeline writes that the kept listing lacks is taken to be absent, and the proxy
/// confirms it before the job: one made since the listing (by the script, at the proxy's side)
/// is not, so the names are asked and the pipeline planned again, and it writes the file as
/// bash would have.
#[test]
fn an_output_made_since_the_listing_is_not_taken_for_absent() {
    let (site, _, records, globs) = run_after("echo old > EXPORT/out.txt", "cat logs/*.log | grep SLOW > logs/out.txt");
    let written = std::fs::read_to_string(site.root.path().join("export/out.txt")).expect("the job's output");
    assert_eq!(written, "SLOW a\nSLOW b\n", "{records:?}");
    assert_eq!(globs.len(), 1, "{records:?}");
    assert_eq!(globs[0].get("predicted"), None, "{records:?}");
}

/// A client directory mounted at `logs` from a proxy whose export holds `big.log` as 1 MB, 1,000
/// lines with `SLOW`, where the client's directory has a `big.log` of one line: what a plan
/// learns of the file's size, it learned from the proxy.
fn site_with_a_file_at_the_proxy_alone() -> (tempfile::TempDir, ProxyProcess) {
    let root = tempfile::tempdir().expect("tempdir");
    let (client, export) = (root.path().join("client"), root.path().join("export"));
    std::fs::create_dir_all(client.join("logs")).expect("mkdir");
    std::fs::create_dir_all(&export).expect("mkdir");
    std::fs::write(client.join("logs/big.log"), "SLOW at the client\n").expect("write");
    let line = format!("SLOW {}\n", "x".repeat(1019));
    std::fs::write(export.join("big.log"), line.repeat(1000)).expect("write");
    let proxy = ProxyProcess::start(&export);
    let config = format!("[[mount]]\nname = \"logs\"\npath = \"logs\"\nproxy = \"{}\"\n", proxy.addr);
    std::fs::write(client.join("posh.toml"), config).expect("write posh.toml");
    std::fs::write(client.join("case.sh"), "cat logs/big.log | grep SLOW | wc -l\n").expect("write");
    if running_as_root() {
        hand_over(&[root.path()]);
    }
    (root, proxy)
}

/// Nothing of the mount is listed or opened at the client for a handed-over pipeline over a
/// glob: the plan of the whole script, made before bash starts (which pipelines go to the
/// runtime), takes the directory's names and sizes from the proxy's listing, the runtime's plan
/// too, and the proxy expands the glob. (Before, the script's plan listed `logs/` through the
/// mount, then stat-ed each name: a round trip for each, on a cold networked mount.) A stat
/// makes no inotify event; a listing opens the directory, which does.
#[test]
fn the_scripts_plan_lists_nothing_through_the_mount() {
    use rustix::fs::inotify;
    let site = Site::new(None);
    let logs = site.root.path().join("client/logs");
    let watch = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC).expect("inotify");
    inotify::add_watch(&watch, &logs, inotify::WatchFlags::OPEN | inotify::WatchFlags::ACCESS).expect("watch logs/");
    let (output, records) = site.run();
    assert_eq!(output, "2", "the proxy's listing has two logs; records: {records:?}");
    let mut buffer = Vec::with_capacity(4096);
    let mut events = inotify::Reader::new(&watch, buffer.spare_capacity_mut());
    let mut seen = Vec::new();
    while let Ok(event) = events.next() {
        seen.push(format!("{:?} {:?}", event.events(), event.file_name()));
    }
    assert!(seen.is_empty(), "logs/ was opened or read at the client: {seen:?}");
}

/// Nor is the mount's own directory asked of the mount: its proxy listed its export root before
/// the script ran, so the plan knows it for a directory. (A split over 100 mounts stat-ed each
/// mount's directory through a cold networked mount, a round trip each, before anything ran.)
/// Every process of the run is traced; the proxy is not one of them.
#[test]
fn the_plan_asks_the_mount_nothing_of_its_own_directory() {
    let site = Site::new(None);
    let client = site.root.path().join("client");
    let trace = site.root.path().join("trace");
    let mut command = Command::new("strace");
    crate::isolation::isolate_in(&mut command, &site.root.path().join("home"));
    command.current_dir(&client).env("LC_ALL", "C").args(["-f", "-e", "trace=%file", "-o"]).arg(&trace);
    let output = command.arg(posh_exec()).arg("./case.sh").output().expect("run strace (apt-get install strace)");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "2", "{}", String::from_utf8_lossy(&output.stderr));
    let trace = std::fs::read_to_string(&trace).expect("strace's output");
    let root = client.join("logs").display().to_string();
    let asked: Vec<&str> =
        trace.lines().filter(|line| line.contains(&format!("\"{root}\"")) || line.contains("\"logs\"")).collect();
    assert!(asked.is_empty(), "the mount's directory was asked of the mount: {asked:#?}");
}

/// `--explain` asks the proxy too, as the run does: it sizes the file as the proxy has it.
#[test]
fn explain_asks_the_proxy_not_the_mount() {
    let (root, _proxy) = site_with_a_file_at_the_proxy_alone();
    let mut command = Command::new(posh_exec());
    crate::isolation::isolate_in(&mut command, &root.path().join("home"));
    command.current_dir(root.path().join("client")).args(["--explain", "--format", "json", "./case.sh"]);
    let output = command.output().expect("run posh-exec --explain");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON plan");
    assert!(plan["bash_bytes"].as_u64().is_some_and(|bytes| bytes >= 1_000_000), "{plan:#}\n{stderr}");
    assert!(!stderr.contains("did not answer"), "{stderr}");
}

/// A proxy that does not answer: `--explain` plans with the mount's answers and says so.
#[test]
fn explain_says_when_a_proxy_does_not_answer() {
    let closed = std::net::UdpSocket::bind("127.0.0.1:0").expect("a free port");
    let addr = closed.local_addr().expect("its address").to_string();
    drop(closed);
    let site = Site::new(Some(&addr));
    let mut command = Command::new(posh_exec());
    crate::isolation::isolate_in(&mut command, &site.root.path().join("home"));
    command.current_dir(site.root.path().join("client")).args(["--explain", "./case.sh"]);
    let output = command.output().expect("run posh-exec --explain");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("the proxy of mount logs did not answer; the plan asked the mount itself"), "{stderr}");
}

/// A pipeline that writes a new file on the mount (`> logs/out.txt`) does not ask the mount
/// whether the file is there: the plan needs only where a written name lies. (Before, the plan
/// stat-ed the name through the mount, a round trip on a networked one, then asked the proxy
/// for the directory's listing again instead, another round trip when the glob was not asked.)
/// Every process of the run is traced; what the run does after the job (`exists` from the
/// kernel's caches, the refresh's forced `statx`) is not the plan's and is left out.
#[test]
fn a_new_output_file_is_not_asked_of_the_mount() {
    let site = Site::new(None);
    let client = site.root.path().join("client");
    std::fs::write(client.join("case.sh"), "cat logs/*.log | grep SLOW > logs/out.txt\n").expect("write");
    let trace = site.root.path().join("trace");
    let mut command = Command::new("strace");
    crate::isolation::isolate_in(&mut command, &site.root.path().join("home"));
    command.current_dir(&client).env("LC_ALL", "C").args(["-f", "-e", "trace=%file", "-o"]).arg(&trace);
    let output = command.arg(posh_exec()).arg("./case.sh").output().expect("run strace (apt-get install strace)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let written = std::fs::read_to_string(site.root.path().join("export/out.txt")).expect("the job's output");
    assert_eq!(written, "SLOW a\nSLOW b\n");
    let trace = std::fs::read_to_string(&trace).expect("strace's output");
    let asked: Vec<&str> = trace
        .lines()
        .filter(|line| line.contains("out.txt") && !line.contains("FORCE_SYNC") && !line.contains("DONT_SYNC"))
        .collect();
    assert!(asked.is_empty(), "the new file was asked of the mount: {asked:#?}");
}
