//! posh-exec with real posh-proxy processes on loopback, one per mount, each exporting its own
//! directory: output identical to bash, only results crossing, and every way a proxy can fail
//! the client handled without losing anything.

mod common;
#[path = "common/proxy.rs"]
mod proxy_process;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use proxy_process::Proxy;

/// A client home, two mounts (`logs`, `archive`) beside the script, a proxy for each.
struct Cluster {
    dir: tempfile::TempDir,
    proxies: Vec<Proxy>,
}

const MOUNTS: [&str; 2] = ["logs", "archive"];

impl Cluster {
    fn new(proxy_args: &[&str]) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let big: String = (0..40_000).map(|i| format!("{i} INFO request served in {} ms\n", i % 97)).collect();
        let old: String = (0..5_000).map(|i| format!("{i} INFO archived x\n")).collect();
        for mount in MOUNTS {
            std::fs::create_dir_all(root.join(mount)).unwrap();
        }
        std::fs::write(root.join("logs/big.log"), format!("{big}9 ERROR rare failure\n{big}")).unwrap();
        std::fs::write(root.join("archive/old.log"), format!("{old}7 ERROR rare archived\n")).unwrap();
        let mut cluster = Cluster { dir, proxies: Vec::new() };
        let fingerprint = String::from_utf8(cluster.posh(&["--print-identity"]).stdout).unwrap();
        let authorized = root.join("authorized");
        std::fs::write(&authorized, fingerprint).unwrap();
        for mount in MOUNTS {
            let mut args = vec!["--authorized-clients", authorized.to_str().unwrap()];
            if proxy_args.contains(&"--allow-any-client") {
                args.clear();
            }
            args.extend_from_slice(proxy_args);
            cluster.proxies.push(Proxy::start(&root.join(mount), &root.join(format!("state-{mount}")), &args));
        }
        let config: String = MOUNTS
            .iter()
            .zip(&cluster.proxies)
            .map(|(m, p)| format!("[[mount]]\nname = \"{m}\"\npath = \"{m}\"\nproxy = \"{}\"\n", p.addr))
            .collect();
        std::fs::write(root.join("posh.toml"), config).unwrap();
        cluster
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.current_dir(self.root()).env("LC_ALL", "C").stdin(Stdio::null());
        common::isolate(&mut command, self.root(), &self.root().join("config"), &self.root().join("client"));
        command
    }

    fn posh(&self, args: &[&str]) -> Output {
        self.command(env!("CARGO_BIN_EXE_posh-exec")).args(args).output().unwrap()
    }

    fn bash(&self, args: &[&str]) -> Output {
        self.command("bash").args(args).output().unwrap()
    }

    /// Runs posh-exec with `args` while a job of it reads `fifo` (fed `first`, then held open),
    /// kills proxy `index` once the job is under way (its output staged in the mount `staged`),
    /// and returns what posh-exec did, which must end within 30 s, and the killed proxy's address.
    fn kill_proxy_mid_job(
        &self,
        args: &[&str],
        (fifo, first): (&Path, &[u8]),
        staged: &str,
        index: usize,
    ) -> (Output, String) {
        let child = self
            .command(env!("CARGO_BIN_EXE_posh-exec"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut writer = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
        std::io::Write::write_all(&mut writer, first).unwrap();
        wait_for_temporary(&self.root().join(staged));
        // Let the job fill its pipes and streams.
        std::thread::sleep(Duration::from_millis(500));
        let addr = self.proxies[index].addr.clone();
        self.proxies[index].signal("-KILL");
        let started = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(started.elapsed() < Duration::from_secs(30), "posh-exec took {:?} to notice", started.elapsed());
        drop(writer);
        (out, addr)
    }

    /// Sorted ids in `logs/ids.txt` (every second) and `archive/ids.txt` (every third), below
    /// `below`: files for commands that read both mounts.
    fn write_ids(&self, below: usize) {
        std::fs::write(self.root().join("logs/ids.txt"), ids(below, 2)).unwrap();
        std::fs::write(self.root().join("archive/ids.txt"), ids(below, 3)).unwrap();
    }

    /// Runs `script` as `s.sh` under bash, then, the files it wrote (`written`) removed, under
    /// posh-exec with `--stats`: the outputs, status and files must be bash's. Returns posh's
    /// run and its stats.
    fn same_as_bash(&self, script: &str, written: &[&str]) -> (Output, Vec<serde_json::Value>) {
        std::fs::write(self.root().join("s.sh"), script).unwrap();
        let bash = self.bash(&["s.sh"]);
        let bash_files: Vec<String> =
            written.iter().map(|f| std::fs::read_to_string(self.root().join(f)).unwrap()).collect();
        for file in written {
            std::fs::remove_file(self.root().join(file)).unwrap();
        }
        let posh = self.posh(&["--stats", "stats.json", "s.sh"]);
        assert_eq!(text(&posh.stdout), text(&bash.stdout));
        assert_eq!(text(&posh.stderr), text(&bash.stderr));
        assert_eq!(posh.status.code(), bash.status.code());
        for (file, expected) in written.iter().zip(&bash_files) {
            assert_eq!(&std::fs::read_to_string(self.root().join(file)).unwrap(), expected, "{file}");
        }
        (posh, self.stats())
    }

    fn stats(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.root().join("stats.json")).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

/// Sorted lines `id0000000` up to `below`, every `step`-th: ten bytes each.
fn ids(below: usize, step: usize) -> String {
    (0..below).step_by(step).map(|i| format!("id{i:07}\n")).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Pipelines over both mounts, split across them, from one to the other, into files.
const SCRIPT: &str = "cat logs/big.log | grep rare\n\
                      grep -c archived archive/old.log\n\
                      cat logs/big.log archive/old.log | grep rare\n\
                      grep rare logs/big.log > logs/found.txt\n\
                      grep -h rare logs/big.log archive/old.log nothing.log\n\
                      cat logs/found.txt\n\
                      grep -c rare logs/big.log | cat - archive/old.log | wc -l\n\
                      grep -h ERROR logs/big.log archive/old.log > merged.txt\n\
                      cat merged.txt\n";

#[test]
fn several_proxies_run_their_mounts_commands_and_only_results_cross() {
    let cluster = Cluster::new(&[]);
    std::fs::write(cluster.root().join("s.sh"), SCRIPT).unwrap();
    let bash = cluster.bash(&["s.sh"]);
    for written in ["logs/found.txt", "merged.txt"] {
        std::fs::remove_file(cluster.root().join(written)).unwrap();
    }
    let posh = cluster.posh(&["--stats", "stats.json", "s.sh"]);
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(text(&posh.stderr), text(&bash.stderr));
    assert_eq!(posh.status.code(), bash.status.code());
    assert_eq!(std::fs::read_to_string(cluster.root().join("logs/found.txt")).unwrap(), "9 ERROR rare failure\n");

    let stats = cluster.stats();
    let big = std::fs::metadata(cluster.root().join("logs/big.log")).unwrap().len();
    // `cat big.log | grep rare`: both at the proxy, only the matching line (and the protocol's
    // hundred-odd bytes) comes back.
    assert_eq!(stats[0]["commands"][0]["location"], "logs");
    assert_eq!(stats[0]["commands"][1]["location"], "logs");
    let back = stats[0]["proxies"]["logs"]["bytes_from_proxy"].as_u64().unwrap();
    assert!(back < 200 && big > 2_000_000, "{back} bytes came back for a {big}-byte file");
    // Files on two mounts: one copy per proxy, fanned in in order.
    assert_eq!(stats[2]["commands"][0]["location"], serde_json::json!(["logs", "archive"]));
    assert!(stats[2]["proxies"]["archive"]["bytes_from_proxy"].as_u64().unwrap() < 200);
    // An edge between two proxies (relayed by the client): grep's count from `logs` feeds cat and
    // wc at `archive`, next to the file cat reads.
    assert_eq!(stats[6]["commands"][0]["location"], "logs");
    assert_eq!(stats[6]["commands"][1]["location"], "archive");
    assert_eq!(stats[6]["commands"][2]["location"], "archive");
}

/// The plans of a loop of small pipelines ask the proxy for the directory's listing once,
/// instead of a `stat` through the mount each (a round trip each once a networked mount's
/// attribute cache has lapsed); a file made since, and a directory's size, are asked too, and the
/// commands run where `--explain` says, with bash's output.
/// A run with separate proxies makes, in the client's state directory, what they need: the
/// proxies' pins beside the identity, and the learned ratios (kept where that directory exists).
#[test]
fn a_run_with_separate_proxies_keeps_their_pins_and_what_it_learned() {
    let cluster = Cluster::new(&[]);
    let state = cluster.root().join("client/posh");
    assert!(state.join("identity").is_dir(), "--print-identity made the identity");
    assert!(!state.join("known_proxies").exists() && !state.join("ratios.json").exists());
    // grep reads from sort, so it outlives its start by a while: a proxy that is not root counts
    // what a command read only if it opened the counts before the command ended (the kernel
    // gives a zombie's to root), which a command ending at once under load can beat.
    cluster.same_as_bash("sort logs/big.log | grep -c INFO\n", &[]);
    assert!(state.join("known_proxies").is_file(), "the proxy is pinned");
    let ratios = std::fs::read_to_string(state.join("ratios.json")).expect("ratios recorded");
    assert!(ratios.contains("grep -c INFO"), "{ratios}");
}

#[test]
fn the_plans_of_a_loop_ask_the_proxy_about_its_files_once() {
    let cluster = Cluster::new(&[]);
    let notes = cluster.root().join("logs/notes");
    std::fs::create_dir_all(notes.join("deep")).unwrap();
    for i in 0..12 {
        std::fs::write(notes.join(format!("n{i:02}.txt")), "TODO a\nlater b\n".repeat(i + 1)).unwrap();
    }
    std::fs::write(notes.join("deep/x.txt"), "TODO deep\n").unwrap();
    let script = "for f in logs/notes/*.txt; do grep -c TODO \"$f\"; done\n\
                  echo TODO made > logs/notes/new.txt\n\
                  grep -c TODO logs/notes/new.txt\n\
                  grep -r -c TODO logs/notes | sort\n";
    let (_, stats) = cluster.same_as_bash(script, &["logs/notes/new.txt"]);
    assert_eq!(stats.len(), 14, "{stats:?}");
    for record in &stats {
        assert_eq!(record["commands"][0]["location"], "logs", "{record}");
    }
    let questions: Vec<u64> = stats.iter().map(|r| r["proxies"]["logs"]["questions"].as_u64().unwrap_or(0)).collect();
    // Before bash starts, the plan asks the proxy at once for what the script names: the
    // listings of `logs/notes` and of the mount's root (what `notes` is, for `grep -r`) and the
    // bytes below `notes`; the first record counts them. The loop's plans know them then
    // (unless the run outlived the answers, five seconds, on a machine this slow).
    assert_eq!(questions[0], 3, "{stats:?}");
    assert!(questions[1..12].iter().sum::<u64>() <= 2, "{questions:?}");
    // `new.txt` is not in the listing: its size is asked of the mount. The script wrote below
    // `notes`: the bytes below it are asked again for `grep -r`.
    assert_eq!(questions[12], 0, "{stats:?}");
    assert_eq!(questions[13], 1, "{stats:?}");
    let answered = stats[0]["proxies"]["logs"]["question_bytes"].as_u64().unwrap();
    assert!(answered < 600, "the listing of 13 names took {answered} bytes");
}

#[test]
fn a_proxy_that_refuses_leaves_the_work_to_the_client_with_a_warning() {
    let cluster = Cluster::new(&[]);
    std::fs::write(cluster.root().join("s.sh"), "cat logs/big.log | grep rare\ngrep -c ERROR archive/old.log\n")
        .unwrap();
    let bash = cluster.bash(&["s.sh"]);
    // Not authorized: the proxies read the file for every connection.
    std::fs::write(cluster.root().join("authorized"), "# nobody\n").unwrap();
    let posh = cluster.posh(&["--stats", "stats.json", "s.sh"]);
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(posh.status.code(), bash.status.code());
    // A client the proxy does not let in is warned about (a proxy out of reach is); --stats says
    // where the commands ran in the end, and why.
    let stderr = text(&posh.stderr);
    assert!(stderr.contains("not authorized") && stderr.contains("mount logs"), "{stderr}");
    assert!(stderr.contains("mount archive"), "{stderr}");
    let stats = cluster.stats();
    for (record, mount) in stats.iter().zip(["logs", "archive"]) {
        let command = &record["commands"][0];
        assert_eq!(command["location"], "client", "{command}");
        let why = command["why"].as_str().unwrap_or_default();
        assert!(why.contains("not authorized") && why.contains(&format!("mount {mount}")), "{command}");
    }

    // A pinned fingerprint that does not match: refused, named, and the client does the work.
    let cluster = Cluster::new(&[]);
    std::fs::write(cluster.root().join("s.sh"), "cat logs/big.log | grep rare\n").unwrap();
    let known = cluster.root().join("client/posh/known_proxies");
    std::fs::create_dir_all(known.parent().unwrap()).unwrap();
    std::fs::write(&known, format!("{} SHA256:not-the-right-one\n", cluster.proxies[0].addr)).unwrap();
    let posh = cluster.posh(&["s.sh"]);
    assert_eq!(text(&posh.stdout), "9 ERROR rare failure\n");
    let stderr = text(&posh.stderr);
    assert!(stderr.contains("SHA256:not-the-right-one") && stderr.contains("refusing to connect"), "{stderr}");
}

#[test]
fn several_proxies_with_stdout_and_stderr_into_one_file() {
    let cluster = Cluster::new(&[]);
    std::fs::write(cluster.root().join("s.sh"), SCRIPT).unwrap();
    let run = |program: &str| {
        for written in ["logs/found.txt", "merged.txt"] {
            let _ = std::fs::remove_file(cluster.root().join(written));
        }
        // One open file description for both, as `> log 2>&1`.
        let log = tempfile::tempfile().unwrap();
        let status = cluster
            .command(program)
            .arg("s.sh")
            .stdout(log.try_clone().unwrap())
            .stderr(log.try_clone().unwrap())
            .status()
            .unwrap();
        let mut bytes = Vec::new();
        std::io::Seek::rewind(&mut &log).unwrap();
        std::io::Read::read_to_end(&mut &log, &mut bytes).unwrap();
        let merged = std::fs::read(cluster.root().join("merged.txt")).unwrap();
        (status.code(), text(&bytes), merged)
    };
    let bash = run("bash");
    let posh = run(env!("CARGO_BIN_EXE_posh-exec"));
    assert!(bash.1.contains("nothing.log: No such file"), "{}", bash.1);
    assert_eq!(posh, bash);
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Waits until `path` exists: a job's new output file, made as the job starts (as bash makes it).
fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(Instant::now() < deadline, "the job did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `dir` holds one of the proxy's temporary output files: the job is running.
fn wait_for_temporary(dir: &Path) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(".posh-"));
        if let Some(found) = found {
            return found;
        }
        assert!(Instant::now() < deadline, "the job did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_busy_proxy_leaves_the_work_to_the_client() {
    let cluster = Cluster::new(&["--max-jobs", "1"]);
    let fifo = cluster.root().join("logs/fifo");
    mkfifo(&fifo);
    // The one slot is taken by a job blocked on a FIFO (after a file that makes it worth placing
    // at the proxy: a FIFO has no size).
    std::fs::write(cluster.root().join("hold.sh"), "cat logs/big.log logs/fifo > logs/held.txt\n").unwrap();
    let mut holder = cluster.command(env!("CARGO_BIN_EXE_posh-exec")).arg("hold.sh").spawn().unwrap();
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    wait_for_file(&cluster.root().join("logs/held.txt"));

    std::fs::write(cluster.root().join("s.sh"), "grep rare logs/big.log\n").unwrap();
    let posh = cluster.posh(&["--stats", "stats.json", "s.sh"]);
    assert_eq!(text(&posh.stdout), "9 ERROR rare failure\n");
    // The script's stderr stays bash's: --stats records the departure with its reason.
    assert_eq!(text(&posh.stderr), "");
    let grep = &cluster.stats()[0]["commands"][0];
    assert_eq!(grep["location"], "client", "{grep}");
    let why = grep["why"].as_str().unwrap_or_default();
    assert!(why.starts_with("run at the client: proxy") && why.contains("is busy (mount logs)"), "{grep}");

    drop(writer);
    assert!(holder.wait().unwrap().success());
}

#[test]
fn a_lost_proxy_is_an_error_naming_it_and_the_line_and_the_old_output_stays() {
    let cluster = Cluster::new(&[]);
    let fifo = cluster.root().join("logs/fifo");
    mkfifo(&fifo);
    std::fs::write(cluster.root().join("logs/out.txt"), "old content\n").unwrap();
    let script = "echo start\ncat logs/big.log logs/fifo > logs/out.txt\necho \"status $?\"\n";
    std::fs::write(cluster.root().join("s.sh"), script).unwrap();
    let (out, addr) = cluster.kill_proxy_mid_job(&["s.sh"], (&fifo, b"half of the new content\n"), "logs", 0);
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&addr) && stderr.contains("s.sh: line 2:"), "{stderr}");
    assert_eq!(text(&out.stdout), "start\nstatus 255\n");
    assert_eq!(std::fs::read_to_string(cluster.root().join("logs/out.txt")).unwrap(), "old content\n");
}

/// A split command's redirections are the fan-in's: applied once, in bash's order, to the copies'
/// combined output at the client, while every copy runs at its own proxy.
#[test]
fn split_pipelines_with_redirections_fan_in_as_bash_writes() {
    let cluster = Cluster::new(&[]);
    let script = "cat logs/big.log archive/old.log | grep rare > found.txt\n\
                  grep -h ERROR logs/big.log archive/old.log missing.log 2> errors.txt >> found.txt\n\
                  grep -h rare logs/big.log archive/old.log > logs/both.txt 2>&1\n\
                  cat found.txt errors.txt logs/both.txt\n\
                  grep -h rare logs/big.log archive/old.log > no/such/dir/x\n\
                  echo $?\n";
    let (_, stats) = cluster.same_as_bash(script, &["found.txt", "errors.txt", "logs/both.txt"]);
    assert_eq!(stats[0]["commands"][1]["location"], serde_json::json!(["logs", "archive"]), "{stats:?}");
    assert_eq!(stats[1]["commands"][0]["location"], serde_json::json!(["logs", "archive", "client"]), "{stats:?}");
    assert_eq!(stats[2]["commands"][0]["location"], serde_json::json!(["logs", "archive"]), "{stats:?}");
}

/// A split's concatenated output written to a file on one copy's mount is joined at that mount's
/// proxy: the other copies' outputs go there straight from their proxies, and the client gets
/// statuses and messages only. Failures are bash's: no match, a redirection that cannot be made.
#[test]
fn a_split_output_written_to_a_mount_is_joined_at_its_proxy() {
    let cluster = Cluster::new(&[]);
    let script = "cat logs/big.log archive/old.log | grep -v served > logs/found.txt\n\
                  grep -h -v served logs/big.log archive/old.log | uniq > logs/unique.txt\n\
                  grep -h zzz logs/big.log archive/old.log > logs/none.txt\n\
                  echo \"status $?\"\n\
                  cat logs/big.log archive/old.log | grep -v served > logs/no/such/dir\n\
                  echo \"status $?\"\n\
                  wc -l logs/found.txt logs/none.txt\n";
    let (_, stats) = cluster.same_as_bash(script, &["logs/found.txt", "logs/none.txt", "logs/unique.txt"]);
    let explain = text(&cluster.posh(&["--explain", "s.sh"]).stdout);
    assert!(explain.contains("> logs/found.txt [") && explain.contains("concat @logs]"), "{explain}");
    let found = std::fs::read_to_string(cluster.root().join("logs/found.txt")).unwrap();
    assert_eq!(stats[0]["commands"][1]["location"], serde_json::json!(["logs", "archive"]), "{stats:?}");
    // The archive's copy sent its output to the logs' proxy; none came to the client. The same
    // for a rerun (`uniq` again over the joined outputs).
    assert_eq!(stats[1]["commands"][1]["location"], serde_json::json!(["logs", "archive"]), "{stats:?}");
    for (record, mount) in [(0, "logs"), (0, "archive"), (1, "logs"), (1, "archive")] {
        let received = stats[record]["proxies"][mount]["bytes_from_proxy"].as_u64().unwrap();
        assert!(received < 400, "{mount}: {received} bytes came to the client: {}", stats[record]);
    }
    assert!(found.len() > 2_000, "the found lines are worth joining at the proxy");
}

/// A split the plan joins at a proxy whose slots are taken (`--slot-wait 0`: busy at once): the
/// copies are joined at the client instead, the output is bash's, and `--stats` says why, as it
/// does for a job a busy proxy did not take (the script's stderr stays bash's).
#[test]
fn a_split_whose_joining_proxy_is_busy_is_joined_at_the_client_and_said() {
    let cluster = Cluster::new(&["--max-jobs", "2", "--slot-wait", "0"]);
    let root = cluster.root();
    let fifo = root.join("logs/fifo");
    mkfifo(&fifo);
    // One of the logs proxy's two slots is held by another run's job, blocked on a FIFO.
    std::fs::write(root.join("hold.sh"), "cat logs/big.log logs/fifo > logs/held.txt\n").unwrap();
    let mut holder = cluster.command(env!("CARGO_BIN_EXE_posh-exec")).arg("hold.sh").spawn().unwrap();
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    wait_for_file(&root.join("logs/held.txt"));

    // The copy reading logs/big.log takes the other slot; the join, planned at the logs proxy
    // (its output is written there), finds none.
    let script = "cat logs/big.log archive/old.log | grep -v served > logs/found.txt\nwc -l logs/found.txt\n";
    std::fs::write(root.join("s.sh"), script).unwrap();
    let explain = text(&cluster.posh(&["--explain", "s.sh"]).stdout);
    assert!(explain.contains("concat @logs]"), "{explain}");
    let (_, stats) = cluster.same_as_bash(script, &["logs/found.txt"]);
    let grep = &stats[0]["commands"][1];
    let why = grep["why"].as_str().unwrap_or_default();
    // Joined at the client (and, should the copy's second try meet the slot still taken, the
    // copy run there too, said after it).
    let busy = format!("proxy {} is busy (mount logs)", cluster.proxies[0].addr);
    let joined = format!("joined at the client: {busy}");
    assert!(why == joined || why == format!("{joined}; run at the client: {busy}"), "{grep}");

    drop(writer);
    assert!(holder.wait().unwrap().success());
}

/// Split reducers: each proxy reduces its own files, the client merges the copies' outputs as
/// the annotation says (summed counts, `sort -m`, merged `uniq -c`, a rerun), byte for byte as
/// bash's unsplit command.
#[test]
fn split_reducers_merge_as_their_annotations_say() {
    let cluster = Cluster::new(&[]);
    let script = "cat logs/big.log archive/old.log | wc -l\n\
                  cat logs/big.log archive/old.log | wc\n\
                  cat logs/big.log archive/old.log | grep -c ERROR\n\
                  cat logs/big.log archive/old.log | cut -d ' ' -f 2 | uniq -c\n\
                  cat logs/big.log archive/old.log | cut -d ' ' -f 2 | uniq\n\
                  sort -k 6,6n -k 1,1n logs/big.log archive/old.log | tail -n 3\n\
                  cat logs/big.log archive/old.log | cut -d ' ' -f 2,3 | sort -u > kinds.txt\n\
                  cat kinds.txt\n\
                  cat logs/big.log archive/old.log | wc -l | cat > /no/such/dir\n\
                  echo $?\n";
    std::fs::write(cluster.root().join("s.sh"), script).unwrap();
    let bash = cluster.bash(&["s.sh"]);
    let bash_kinds = std::fs::read_to_string(cluster.root().join("kinds.txt")).unwrap();
    std::fs::remove_file(cluster.root().join("kinds.txt")).unwrap();
    let posh = cluster.posh(&["--stats", "stats.json", "s.sh"]);
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(text(&posh.stderr), text(&bash.stderr));
    assert_eq!(posh.status.code(), bash.status.code());
    assert_eq!(std::fs::read_to_string(cluster.root().join("kinds.txt")).unwrap(), bash_kinds);
    let stats = cluster.stats();
    let both = serde_json::json!(["logs", "archive"]);
    for (record, reducer) in [(0, 1), (1, 1), (2, 1), (3, 2), (4, 2), (5, 0), (6, 2)] {
        assert_eq!(stats[record]["commands"][reducer]["location"], both, "{:?}", stats[record]);
    }
    // Only the reduced outputs come back: a few bytes for the counts.
    let back = stats[0]["proxies"]["logs"]["bytes_from_proxy"].as_u64().unwrap();
    assert!(back < 200, "{back} bytes came back for a count");
}

/// Split reducers written to a file on one copy's mount are merged at that mount's proxy as
/// their annotations say (`sort -m` over each copy's output as a pipe of its own, summed counts,
/// merged `uniq -c`): the other copies' outputs go there from their proxies, and the client gets
/// statuses and messages only.
#[test]
fn split_reducers_written_to_a_mount_merge_at_its_proxy() {
    let cluster = Cluster::new(&[]);
    let script = "sort -k 6,6n -k 1,1n logs/big.log archive/old.log > logs/sorted.txt\n\
                  cat logs/big.log archive/old.log | grep -c ERROR > archive/count.txt\n\
                  cat logs/big.log archive/old.log | wc > logs/wc.txt\n\
                  cat logs/big.log archive/old.log | cut -d ' ' -f 2 | uniq -c > logs/kinds.txt\n\
                  cat archive/old.log logs/big.log | cut -d ' ' -f 2 | sort > archive/sorted.txt\n\
                  sort logs/big.log archive/old.log > logs/no/such/dir\n\
                  echo \"status $?\"\n\
                  cat logs/big.log archive/old.log | grep -c nothing > logs/none.txt\n\
                  echo \"status $?\"\n\
                  cat archive/count.txt logs/wc.txt logs/kinds.txt logs/none.txt\n";
    let written = ["logs/sorted.txt", "archive/count.txt", "logs/wc.txt", "logs/kinds.txt", "archive/sorted.txt"];
    let (_, stats) = cluster.same_as_bash(script, &[&written[..], &["logs/none.txt"]].concat());
    let explain = text(&cluster.posh(&["--explain", "s.sh"]).stdout);
    for merge in ["sort_merge @logs]", "sum @archive]", "sum @logs]", "uniq_count @logs]", "sort_merge @archive]"] {
        assert!(explain.contains(merge), "{merge} in {explain}");
    }
    let (both, reversed) = (serde_json::json!(["logs", "archive"]), serde_json::json!(["archive", "logs"]));
    for (record, reducer, copies) in [(0, 0, &both), (1, 1, &both), (2, 1, &both), (3, 2, &both), (4, 2, &reversed)] {
        assert_eq!(&stats[record]["commands"][reducer]["location"], copies, "{:?}", stats[record]);
        for mount in MOUNTS {
            let received = stats[record]["proxies"][mount]["bytes_from_proxy"].as_u64().unwrap();
            assert!(received < 400, "{mount}: {received} bytes came to the client: {}", stats[record]);
        }
    }
    let sorted = std::fs::metadata(cluster.root().join("logs/sorted.txt")).unwrap().len();
    assert!(sorted > 1_000_000, "the sorted lines ({sorted} bytes) are worth merging at the proxy");
}

/// A split whose merge feeds the rest of the pipeline: the copies' outputs meet at one proxy, the
/// merge and every command after it run there as one job, and only the result crosses to the
/// client; outputs, statuses (`pipefail`: sort meets SIGPIPE from head, as under bash) and the
/// plan as bash's and `--explain`'s.
#[test]
fn a_merge_feeding_the_rest_of_the_pipeline_runs_with_it_at_a_proxy() {
    let cluster = Cluster::new(&[]);
    let script = "set -o pipefail\n\
                  cat logs/big.log archive/old.log | grep served | sort | uniq -c | sort -rn | head -n 3\n\
                  echo \"status $?\"\n\
                  cat logs/big.log archive/old.log | grep o | cut -d ' ' -f 2 | sort | uniq -c\n";
    let (_, stats) = cluster.same_as_bash(script, &[]);
    let explain = text(&cluster.posh(&["--explain", "s.sh"]).stdout);
    assert!(explain.contains("sort_merge @logs] [@logs]uniq -c | [@logs]sort -rn | [@logs]head -n 3"), "{explain}");
    for (record, after) in [(0, 3..6), (1, 4..5)] {
        for command in after {
            assert_eq!(stats[record]["commands"][command]["location"], "logs", "{}", stats[record]);
        }
        for mount in MOUNTS {
            let received = stats[record]["proxies"][mount]["bytes_from_proxy"].as_u64().unwrap();
            assert!(received < 600, "{mount}: {received} bytes came to the client: {}", stats[record]);
        }
    }
}

/// A piece whose last line has no newline joins the next piece's first line under bash (`cat a
/// b` runs them together): the commands after `cat` then run once, not per piece: at the client
/// after the copies, or at one proxy with the other mount's file streamed to it (which the
/// planner prefers when grep's output is all that is left to cross).
#[test]
fn a_line_cut_by_a_seam_is_read_whole() {
    let cluster = Cluster::new(&[]);
    std::fs::write(cluster.root().join("logs/cut.log"), "1 ERROR first\n2 INFO half a li").unwrap();
    std::fs::write(cluster.root().join("archive/rest.log"), "ne ERROR\n3 INFO last\n").unwrap();
    let script = "cat logs/cut.log archive/rest.log | grep ERROR\n\
                  cat logs/cut.log archive/rest.log | wc -l\n\
                  cat logs/cut.log archive/rest.log | cut -d ' ' -f 2 | uniq -c\n\
                  cat logs/big.log archive/old.log | grep -c rare\n";
    std::fs::write(cluster.root().join("s.sh"), script).unwrap();
    let bash = cluster.bash(&["s.sh"]);
    let posh = cluster.posh(&["--stats", "stats.json", "s.sh"]);
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(text(&posh.stderr), text(&bash.stderr));
    let stats = cluster.stats();
    assert_eq!(stats[0]["commands"][0]["location"], "logs", "{stats:?}");
    assert_eq!(stats[0]["commands"][1]["location"], "logs", "{stats:?}");
    assert_eq!(stats[1]["commands"][0]["location"], serde_json::json!(["logs", "archive"]), "{stats:?}");
    assert_eq!(stats[1]["commands"][1]["location"], "client", "{stats:?}");
    assert_eq!(stats[3]["commands"][1]["location"], serde_json::json!(["logs", "archive"]), "{stats:?}");
    // Whether `cut.log` ends its last line was asked of its proxy (with the listing), not read
    // through the mount; for the last split, `big.log`'s (the listing is kept from the first).
    assert_eq!(stats[0]["proxies"]["logs"]["questions"], 2, "{}", stats[0]);
    assert!(stats[3]["proxies"]["logs"]["questions"].as_u64() >= Some(1), "{}", stats[3]);
}

/// git runs at the proxy of the mount its repository is on, with the user's identity and
/// configuration taken along (`reads_env`, `reads_home`): the commit it makes is bash's, byte
/// for byte (same author, same hash), and the user's ignore file applies.
#[test]
fn git_runs_at_its_proxy_with_the_users_identity() {
    let cluster = Cluster::new(&[]);
    let root = cluster.root();
    let home = root.join("home");
    std::fs::create_dir_all(root.join("config/git")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = Ada Client\n\temail = ada@client.invalid\n").unwrap();
    std::fs::write(root.join("config/git/ignore"), "*.tmp\n").unwrap();
    let repo = root.join("logs/repo");
    let git = |args: &[&str]| {
        // Fixed dates: each run makes its own base commit, whose hash the compared one depends on.
        let mut command = cluster.command("git");
        command.args(args).current_dir(&repo).env("HOME", &home);
        command.env("GIT_AUTHOR_DATE", "2020-07-15T11:00:00Z").env("GIT_COMMITTER_DATE", "2020-07-15T11:00:00Z");
        let status = command.status().unwrap();
        assert!(status.success(), "git {args:?}");
    };
    let fresh_repo = || {
        let _ = std::fs::remove_dir_all(&repo);
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::write(repo.join("src/a.c"), "int a;\n").unwrap();
        git(&["init", "-q", "-b", "main"]);
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "base"]);
        std::fs::write(repo.join("src/a.c"), "int a = 1;\n").unwrap();
        std::fs::write(repo.join("src/b.c"), "int b;\n").unwrap();
        std::fs::write(repo.join("scratch.tmp"), "ignored\n").unwrap();
    };
    // Run from the mount; the plan follows `cd repo`.
    let script = "cd repo\n\
                  git status --short\n\
                  git add .\n\
                  git commit -q -m 'add b'\n\
                  git log -n 1 '--format=%an <%ae> / %cn <%ce> %H'\n\
                  git grep -c nothing\n\
                  echo $?\n";
    std::fs::write(root.join("s.sh"), script).unwrap();
    let run = |program: &str| {
        fresh_repo();
        // git works only in a repository of its own user's: at the proxy, the user a root proxy
        // became (the fixture's), as the export's files are that user's in a deployment.
        if program != "bash" && rustix::process::geteuid().is_root() {
            proxy_process::hand_over(&repo);
        }
        let mut command = cluster.command(program);
        command.env("HOME", &home).env("GIT_AUTHOR_DATE", "2020-07-15T12:00:00Z");
        command.env("GIT_COMMITTER_DATE", "2020-07-15T12:00:00Z").env("GIT_CONFIG_NOSYSTEM", "1");
        command.current_dir(root.join("logs"));
        match program {
            "bash" => command.arg("../s.sh"),
            _ => command.args(["--stats", "../stats.json", "../s.sh"]),
        };
        command.output().unwrap()
    };
    let bash = run("bash");
    assert!(text(&bash.stdout).contains("Ada Client <ada@client.invalid> / Ada Client"), "{}", text(&bash.stdout));
    let posh = run(env!("CARGO_BIN_EXE_posh-exec"));
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(text(&posh.stderr), text(&bash.stderr));
    assert_eq!(posh.status.code(), bash.status.code());
    let stats = cluster.stats();
    assert_eq!(stats.len(), 5, "every git command was handed to the runtime: {stats:?}");
    for record in &stats {
        assert_eq!(record["commands"][0]["location"], "logs", "{record}");
    }
}

/// `comm`, `join` and `paste` over a file on each mount: the command runs at the proxy of the
/// larger file, the other is streamed to it by its own proxy (which the client introduced: no
/// proxy authorizes the other), and only the result reaches the client. An empty file, or one
/// missing when the command runs, leaves it to the client, whose messages are bash's.
#[test]
fn a_file_on_one_mount_is_streamed_to_the_other_mounts_proxy_and_only_results_cross() {
    let cluster = Cluster::new(&[]);
    let root = cluster.root();
    cluster.write_ids(120_000);
    std::fs::write(root.join("archive/empty.txt"), "").unwrap();
    let script = "comm -12 logs/ids.txt archive/ids.txt | wc -l\n\
                  join archive/ids.txt logs/ids.txt > logs/joined.txt\n\
                  tail -n 1 logs/joined.txt\n\
                  paste -d , archive/ids.txt logs/ids.txt | tail -n 2\n\
                  comm -3 logs/ids.txt archive/empty.txt | wc -l\n\
                  comm -12 logs/ids.txt archive/missing.txt | wc -l\n\
                  sort logs/ids.txt | comm -12 - archive/ids.txt | wc -l\n";
    let (posh, stats) = cluster.same_as_bash(script, &["logs/joined.txt"]);
    assert!(text(&posh.stderr).contains("missing.txt: No such file"), "{}", text(&posh.stderr));

    let streamed = std::fs::metadata(root.join("archive/ids.txt")).unwrap().len();
    // The last: comm runs where sort's output is, the archive's file streamed to it there.
    for (record, commands) in [(0, 2), (1, 1), (3, 2), (5, 3)] {
        for c in 0..commands {
            assert_eq!(stats[record]["commands"][c]["location"], "logs", "{}", stats[record]);
        }
        // The archive's proxy sent its file to the logs' proxy; the client got a status.
        let from_archive = stats[record]["proxies"]["archive"]["bytes_from_proxy"].as_u64().unwrap();
        assert!(from_archive < 200 && streamed > 300_000, "{from_archive} bytes of a {streamed}-byte file");
    }
    // Nothing to stream from an empty or missing file: comm runs at the client, as bash's does.
    // The empty file is known before the run: the plan keeps that pipeline at the client, so it is
    // bash's and has no record; the missing file's is planned at logs and said where it departs.
    assert_eq!(stats.len(), 6, "{stats:?}");
    assert_eq!(stats[4]["line"], 6, "{}", stats[4]);
    assert_eq!(stats[4]["commands"][0]["location"], "client", "{}", stats[4]);
    assert!(stats[4]["commands"][0]["why"].as_str().unwrap().contains("is not a file with content"), "{}", stats[4]);
}

/// Files a command reads from another mount are sent by that mount's proxy in one request,
/// which takes one of its job slots however many files: `paste` of five archive files runs at
/// the logs' proxy even when each proxy gives this client one job at a time (with a job per
/// file, the second would have been answered "busy" and the whole pipeline run at the client).
#[test]
fn many_files_streamed_from_one_mount_take_one_job_slot_there() {
    let cluster = Cluster::new(&["--max-jobs", "2", "--max-jobs-per-client", "1"]);
    cluster.write_ids(20_000);
    let mut names = Vec::new();
    for k in 1..=5 {
        let name = format!("archive/ids{k}.txt");
        std::fs::copy(cluster.root().join("archive/ids.txt"), cluster.root().join(&name)).unwrap();
        names.push(name);
    }
    let script = format!("paste -d , logs/big.log {} | tail -n 2\n", names.join(" "));
    let (posh, stats) = cluster.same_as_bash(&script, &[]);
    assert!(!text(&posh.stderr).contains("busy"), "{}", text(&posh.stderr));
    assert_eq!(stats[0]["commands"][0]["location"], "logs", "{}", stats[0]);
    let from_archive = stats[0]["proxies"]["archive"]["bytes_from_proxy"].as_u64().unwrap();
    assert!(from_archive < 400, "{from_archive} bytes came through the client");
}

/// A pipe from a command at one proxy to a command at another goes from the first proxy to the
/// second: the client sends no byte of it and gets the statuses and the last command's output.
/// The pipe ends when its writer does, whatever the writer's status, as bash's does.
/// A proxy serving any client (`--allow-any-client`) cannot tell another proxy's fetches from a
/// client's connections: each output waiting for that proxy lets one more connection in, so a
/// command reading two files streamed from one proxy is not cut short by the per-client bound.
#[test]
fn fetches_beyond_the_connection_bound_are_let_in_where_any_client_is_served() {
    let cluster = Cluster::new(&["--allow-any-client", "--max-connections-per-client", "1"]);
    cluster.write_ids(20_000);
    std::fs::copy(cluster.root().join("archive/ids.txt"), cluster.root().join("archive/more.txt")).unwrap();
    // The logs' big file draws `paste` to its proxy; both archive files are streamed there.
    let script = "paste -d , logs/big.log archive/ids.txt archive/more.txt | tail -n 2\n";
    let (posh, stats) = cluster.same_as_bash(script, &[]);
    assert!(!text(&posh.stderr).contains("posh-exec"), "{}", text(&posh.stderr));
    assert_eq!(stats[0]["commands"][0]["location"], "logs", "{}", stats[0]);
    let from_archive = stats[0]["proxies"]["archive"]["bytes_from_proxy"].as_u64().unwrap();
    assert!(from_archive < 400, "{from_archive} bytes came through the client");
}

#[test]
fn a_pipe_between_commands_at_two_proxies_goes_from_one_to_the_other() {
    let cluster = Cluster::new(&[]);
    cluster.write_ids(1_200_000);
    let script = "grep 0 logs/ids.txt | comm -12 - archive/ids.txt | wc -l\n\
                  set -o pipefail\n\
                  grep nothing logs/ids.txt | comm -3 - archive/ids.txt | wc -l\n\
                  echo \"pipefail: $?\"\n\
                  cat logs/ids.txt | join - archive/ids.txt | head -n 2\n";
    let (_, stats) = cluster.same_as_bash(script, &[]);
    let grep_output = ids(1_200_000, 2).lines().filter(|l| l.contains('0')).count() * 10;
    for record in [0, 1] {
        let locations: Vec<&str> = (0..3).map(|c| stats[record]["commands"][c]["location"].as_str().unwrap()).collect();
        assert_eq!(locations, ["logs", "archive", "archive"], "{}", stats[record]);
    }
    // The logs' proxy sent grep's output to the archive's proxy; the client got a status.
    let from_logs = stats[0]["proxies"]["logs"]["bytes_from_proxy"].as_u64().unwrap();
    let to_archive = stats[0]["proxies"]["archive"]["bytes_to_proxy"].as_u64().unwrap();
    assert!(from_logs < 200 && to_archive < 2_000 && grep_output > 3_000_000, "{}", stats[0]);
}

/// A pipe's reader whose proxy cannot take the job: the writer's job, started first, is
/// cancelled before it took any input, and each end runs as it can (the reader at the client,
/// said on stderr), the output still bash's.
#[test]
fn a_pipe_whose_reading_proxy_is_busy_runs_its_reader_at_the_client() {
    let cluster = Cluster::new(&["--max-jobs", "1"]);
    let root = cluster.root();
    let ids = ids(1_200_000, 2);
    std::fs::write(root.join("logs/ids.txt"), &ids).unwrap();
    std::fs::write(root.join("archive/ids.txt"), &ids).unwrap();
    let fifo = root.join("archive/fifo");
    mkfifo(&fifo);
    std::fs::write(root.join("hold.sh"), "cat archive/ids.txt archive/fifo > archive/held.txt\n").unwrap();
    let mut holder = cluster.command(env!("CARGO_BIN_EXE_posh-exec")).arg("hold.sh").spawn().unwrap();
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    wait_for_file(&root.join("archive/held.txt"));

    std::fs::write(root.join("s.sh"), "grep 0 logs/ids.txt | comm -12 - archive/ids.txt | wc -l\n").unwrap();
    let posh = cluster.posh(&["--stats", "stats.json", "s.sh"]);
    assert_eq!(text(&posh.stdout), text(&cluster.bash(&["s.sh"]).stdout));
    assert_eq!(text(&posh.stderr), "", "the departure is said in --stats, not in the script's stderr");
    let record = &cluster.stats()[0];
    assert_eq!(record["commands"][0]["location"], "logs", "{record}");
    assert_eq!(record["commands"][1]["location"], "client", "{record}");
    assert!(record["commands"][1]["why"].as_str().is_some_and(|w| w.contains("is busy")), "{record}");

    drop(writer);
    assert!(holder.wait().unwrap().success());
}

/// The proxy writing a pipe to another proxy's command dies mid-stream: the reading job is
/// aborted, its output file keeps its old content, and the client names the lost proxy.
#[test]
fn a_pipe_cut_by_its_writers_lost_proxy_aborts_its_reader_and_the_old_output_stays() {
    let cluster = Cluster::new(&[]);
    let root = cluster.root();
    let ids = ids(1_200_000, 2);
    std::fs::write(root.join("logs/ids.txt"), &ids).unwrap();
    std::fs::write(root.join("archive/ids.txt"), &ids).unwrap();
    let fifo = root.join("logs/fifo");
    mkfifo(&fifo);
    std::fs::write(root.join("archive/out.txt"), "old content\n").unwrap();
    let script = "cat logs/fifo logs/ids.txt | join - archive/ids.txt > archive/out.txt\necho \"status $?\"\n";
    std::fs::write(root.join("s.sh"), script).unwrap();
    let args = ["--stats", "stats.json", "s.sh"];
    let (out, addr) = cluster.kill_proxy_mid_job(&args, (&fifo, b"aaa first\n"), "archive", 0);
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&addr) && stderr.contains("s.sh: line 1:"), "{stderr}");
    assert!(!text(&out.stdout).contains("status 0"), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(root.join("archive/out.txt")).unwrap(), "old content\n");
    let record = &cluster.stats()[0];
    assert_eq!(
        (&record["commands"][0]["location"], &record["commands"][1]["location"]),
        (&"logs".into(), &"archive".into())
    );
}

/// The proxy streaming a file dies mid-stream: the command reading it is aborted (it never takes a
/// cut stream for a whole file), the client says which file and which proxy, and the output file
/// keeps its old content.
#[test]
fn a_stream_cut_by_a_lost_proxy_aborts_its_reader_and_the_old_output_stays() {
    let cluster = Cluster::new(&[]);
    let root = cluster.root();
    let ids = ids(2_000_000, 1);
    std::fs::write(root.join("archive/ids.txt"), ids).unwrap();
    // join waits on the FIFO for its next line while the archive's proxy is stuck writing.
    let fifo = root.join("logs/fifo");
    mkfifo(&fifo);
    std::fs::write(root.join("logs/out.txt"), "old content\n").unwrap();
    std::fs::write(root.join("s.sh"), "join logs/fifo archive/ids.txt > logs/out.txt\necho \"status $?\"\n").unwrap();
    let (out, addr) =
        cluster.kill_proxy_mid_job(&["--stats", "stats.json", "s.sh"], (&fifo, b"aaa first\n"), "logs", 1);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("archive/ids.txt: not streamed whole") && stderr.contains(&addr), "{stderr}");
    assert!(!text(&out.stdout).contains("status 0"), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(root.join("logs/out.txt")).unwrap(), "old content\n");
    assert_eq!(cluster.stats()[0]["commands"][0]["location"], "logs", "{:?}", cluster.stats());
}

/// Issue 13's load test: twenty posh-exec clients at once, each with its own identity, each
/// running a script over three mounts served by three posh-proxy processes of two job slots
/// each (one proxy lets a job wait a second for a slot, one a fifth, one not at all). Every
/// client's output, status and file is bash's; every command runs where a run alone puts it,
/// or, answered "busy", at the client with that reason (in --stats; stderr is bash's); all are
/// done within a bound, and the proxies serve on. The figures
/// it prints are for the record; `bench/load.sh` measures the same against bash.
#[test]
fn twenty_clients_on_three_proxies_get_bashs_output_and_busy_ones_fall_back() {
    const CLIENTS: usize = 20;
    const MOUNTS: [(&str, &str); 3] = [("east", "1"), ("west", "0.2"), ("north", "0")];
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (n, (mount, _)) in MOUNTS.iter().enumerate() {
        std::fs::create_dir(root.join(mount)).unwrap();
        let log: String = (0..30_000)
            .map(|i| format!("{i} {} {mount} {}\n", ["INFO", "WARN", "ERROR"][(i * (n + 3)) % 7 % 3], i % 11))
            .collect();
        std::fs::write(root.join(mount).join("app.log"), log).unwrap();
    }
    let script = |client: usize| {
        format!(
            "grep -c ERROR east/app.log\n\
             cat east/app.log west/app.log | grep WARN | cut -d ' ' -f 3,4 | sort | uniq -c\n\
             sort -k 4 -n -r north/app.log | head -n 3 > north/top-{client}.txt\n\
             grep -h ' 7$' east/app.log west/app.log north/app.log | wc -l\n\
             cat north/top-{client}.txt\n"
        )
    };
    let client = |i: usize, program: &str| {
        let mut command = Command::new(program);
        common::isolate(&mut command, root, &root.join("config"), &root.join(format!("client-{i}")));
        command.current_dir(root).env("LC_ALL", "C").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        command
    };
    let posh = env!("CARGO_BIN_EXE_posh-exec");
    let fingerprints: Vec<String> =
        (0..=CLIENTS).map(|i| text(&client(i, posh).arg("--print-identity").output().unwrap().stdout)).collect();
    std::fs::write(root.join("authorized"), fingerprints.concat()).unwrap();
    let authorized = root.join("authorized");
    let proxies: Vec<Proxy> = MOUNTS
        .iter()
        .map(|(mount, wait)| {
            let args = ["--authorized-clients", authorized.to_str().unwrap(), "--max-jobs", "2", "--slot-wait", wait];
            Proxy::start(&root.join(mount), &root.join(format!("state-{mount}")), &args)
        })
        .collect();
    let config: String = MOUNTS
        .iter()
        .zip(&proxies)
        .map(|((m, _), p)| format!("[[mount]]\nname = \"{m}\"\npath = \"{m}\"\nproxy = \"{}\"\n", p.addr))
        .collect();
    std::fs::write(root.join("posh.toml"), config).unwrap();
    for i in 0..=CLIENTS {
        std::fs::write(root.join(format!("s-{i}.sh")), script(i)).unwrap();
    }
    // bash, and where each command runs when posh runs alone (client CLIENTS, not in the crowd).
    let bash = client(CLIENTS, "bash").arg(format!("s-{CLIENTS}.sh")).output().unwrap();
    let top = std::fs::read_to_string(root.join(format!("north/top-{CLIENTS}.txt"))).unwrap();
    assert!(bash.status.success() && bash.stderr.is_empty(), "{bash:?}");
    let stats = |i: usize| -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(root.join(format!("stats-{i}.json"))).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let locations = |records: &[serde_json::Value]| -> Vec<(serde_json::Value, String)> {
        let commands = records.iter().flat_map(|r| r["commands"].as_array().unwrap().iter());
        commands.map(|c| (c["location"].clone(), c["why"].as_str().unwrap_or_default().to_string())).collect()
    };
    std::fs::remove_file(root.join(format!("north/top-{CLIENTS}.txt"))).unwrap();
    let run = |i: usize| client(i, posh).args(["--stats", &format!("stats-{i}.json"), &format!("s-{i}.sh")]).spawn();
    let alone = run(CLIENTS).unwrap().wait_with_output().unwrap();
    assert_eq!((text(&alone.stdout), text(&alone.stderr)), (text(&bash.stdout), String::new()));
    let planned: Vec<serde_json::Value> = locations(&stats(CLIENTS)).into_iter().map(|(at, _)| at).collect();
    // Alone, all but `uniq -c` (after the merge of the split sort, whose output is small) run at
    // the proxies.
    let at_client = planned.iter().filter(|at| *at == "client").count();
    assert!(planned.len() == 11 && at_client <= 1, "alone: {planned:?}");

    let started = Instant::now();
    let children: Vec<_> = (0..CLIENTS).map(|i| run(i).unwrap()).collect();
    let (done, finished) = std::sync::mpsc::channel();
    for (i, child) in children.into_iter().enumerate() {
        let done = done.clone();
        std::thread::spawn(move || done.send((i, child.wait_with_output().unwrap())).unwrap());
    }
    let (mut at_proxies, mut fell_back) = (0, 0);
    for _ in 0..CLIENTS {
        let (i, out) = finished.recv_timeout(Duration::from_secs(180)).expect("every client ends within 180 s");
        assert_eq!(text(&out.stdout), text(&bash.stdout), "client {i}'s output");
        assert_eq!(text(&out.stderr), "", "client {i}'s stderr is bash's: a busy proxy is said in --stats");
        assert_eq!(out.status.code(), Some(0), "client {i}");
        assert_eq!(std::fs::read_to_string(root.join(format!("north/top-{i}.txt"))).unwrap(), top, "client {i}'s file");
        for ((at, why), planned) in locations(&stats(i)).into_iter().zip(&planned) {
            if &at == planned {
                at_proxies += 1;
            } else {
                // The command, or one copy of a split one, ran at the client instead.
                let at_client = at == "client" || at.as_array().is_some_and(|a| a.iter().any(|p| p == "client"));
                assert!(at_client && why.contains("is busy"), "client {i}: at {at} ({why}), planned {planned}");
                fell_back += 1;
            }
        }
    }
    let elapsed = started.elapsed();
    for (proxy, (mount, _)) in proxies.iter().zip(MOUNTS) {
        let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", proxy.child.id())).unwrap();
        assert_eq!(children.trim(), "", "no job process is left at {mount}");
    }
    let again = client(CLIENTS, posh).arg(format!("s-{CLIENTS}.sh")).output().unwrap();
    assert_eq!(text(&again.stdout), text(&bash.stdout), "the proxies serve on");
    let memory: Vec<String> = proxies.iter().map(Proxy::peak_memory).collect();
    println!(
        "{CLIENTS} clients, {} commands in {:.1} s: {at_proxies} where planned, {fell_back} at the client \
         (busy); proxies' peak memory {memory:?}",
        at_proxies + fell_back,
        elapsed.as_secs_f64()
    );
}

/// `cluster` with the links of a datacenter (0.5 ms, 5 Gbit/s) in its posh.toml, the client's
/// and every mount's.
fn on_a_datacenter_link(cluster: Cluster) -> Cluster {
    let dc = "[client]\nrtt = \"0.5ms\"\nbandwidth = \"5Gbit\"\n\n";
    let config = std::fs::read_to_string(cluster.root().join("posh.toml")).unwrap();
    let config = config.replace("[[mount]]\n", "[[mount]]\nrtt = \"0.5ms\"\nbandwidth = \"5Gbit\"\n");
    std::fs::write(cluster.root().join("posh.toml"), format!("{dc}{config}")).unwrap();
    cluster
}

/// Where `--explain --format json` planned each pipeline's first command, and why: its mount
/// (null at the client) and its reason.
fn first_commands(explain: &serde_json::Value) -> Vec<(serde_json::Value, serde_json::Value)> {
    let first = |p: &serde_json::Value| {
        let command = p["nodes"].as_array().unwrap().iter().find(|n| n["kind"]["type"] == "command").unwrap();
        (command["location"]["mount"].clone(), command["why"]["reason"].clone())
    };
    explain["pipelines"].as_array().unwrap().iter().map(first).collect()
}

/// Do no harm (issue 40): with the links of a datacenter in posh.toml, a small file's command
/// is not worth a call of the runtime: `--explain` keeps it at the client and says why, the run
/// leaves it to bash (bash's output, no call), and a large file's command still runs at its proxy.
#[test]
fn a_call_that_does_not_pay_stays_at_the_client_as_explained() {
    let cluster = on_a_datacenter_link(Cluster::new(&[]));
    std::fs::write(cluster.root().join("logs/note.txt"), "a TODO\nb\nTODO c\n").unwrap();
    let script = "grep -c TODO logs/note.txt\ngrep -c ERROR logs/big.log\n";
    std::fs::write(cluster.root().join("s.sh"), script).unwrap();
    let explain = cluster.posh(&["--explain", "--format", "json", "s.sh"]);
    assert!(explain.status.success(), "{}", text(&explain.stderr));
    let explain: serde_json::Value = serde_json::from_slice(&explain.stdout).unwrap();
    assert_eq!(
        first_commands(&explain),
        [(serde_json::Value::Null, "does_not_pay".into()), ("logs".into(), "cheapest".into())],
        "{explain:#}"
    );
    // The small file's pipeline is bash's (every command at the client: no call of the runtime,
    // so no record of it); the large one's runs at its proxy.
    let (_, stats) = cluster.same_as_bash(script, &[]);
    let ran: Vec<(&str, &str)> = stats
        .iter()
        .map(|r| {
            let grep = &r["commands"][0];
            (grep["location"].as_str().unwrap(), grep["why"].as_str().unwrap_or_default())
        })
        .collect();
    assert_eq!(ran, [("logs", "")], "{stats:?}");
}

/// A here-document piped into a command at a proxy whose `&>` (or `2> f > g`) names a file on
/// the mount: that command reads the here-document's lines there, as under bash. It once read
/// nothing when bash's builtin handed the pipeline over (found by the differential tester, seed
/// 9054, whose case the cost model now keeps at the client: here the command also reads a large
/// file, so it runs at the proxy).
#[test]
fn a_here_document_reaches_a_proxy_command_that_writes_both_streams_to_a_file() {
    let cluster = Cluster::new(&[]);
    let script = "cat <<EOF | sort - logs/big.log &> logs/both.txt\napple\nEOF\n\
                  cat <<EOF | sort - logs/big.log 2> logs/err.txt > logs/out.txt\npear\nEOF\n\
                  grep -c apple logs/both.txt\ngrep -c pear logs/out.txt\n";
    let (_, stats) = cluster.same_as_bash(script, &["logs/both.txt", "logs/err.txt", "logs/out.txt"]);
    let sorts: Vec<(u64, &str)> = stats
        .iter()
        .flat_map(|r| r["commands"].as_array().into_iter().flatten())
        .filter(|c| c["command"] == "sort")
        .map(|c| (c["line"].as_u64().unwrap(), c["location"].as_str().unwrap()))
        .collect();
    assert_eq!(sorts, [(1, "logs"), (4, "logs")], "{stats:?}");
}

/// Do no harm, for a loop (issue 40): a loop the runtime gets whole sends its iterations to the
/// proxy in requests, which their pipelines share: on a datacenter link eight small files' greps
/// pay together what one does not pay alone. `--explain` says so (the grep at its proxy, the loop
/// one request), and the run does it, its output bash's; a loop of one file stays with bash, and
/// so does one whose body reads both mounts.
#[test]
fn a_loop_of_small_files_shares_its_request_and_goes_to_the_proxy() {
    let cluster = on_a_datacenter_link(Cluster::new(&[]));
    for i in 0..8 {
        for mount in ["logs", "archive"] {
            std::fs::write(cluster.root().join(format!("{mount}/note{i}.txt")), "a TODO\nb\nTODO c\n").unwrap();
        }
    }
    // The third loop's body is split across the two mounts: its requests could not carry it (a
    // request goes to one proxy), so each pipeline would be a call of its own, and it stays.
    let script = "for f in logs/note*.txt; do grep -c TODO \"$f\"; done\n\
                  for f in logs/note1.txt; do grep -c TODO \"$f\"; done\n\
                  for n in 0 1 2 3 4 5 6 7; do cat \"logs/note$n.txt\" \"archive/note$n.txt\" | grep -c TODO; done\n";
    std::fs::write(cluster.root().join("s.sh"), script).unwrap();
    let explain = cluster.posh(&["--explain", "--format", "json", "s.sh"]);
    assert!(explain.status.success(), "{}", text(&explain.stderr));
    let explain: serde_json::Value = serde_json::from_slice(&explain.stdout).unwrap();
    let loops: Vec<(&str, &serde_json::Value)> =
        explain["loops"].as_array().unwrap().iter().map(|l| (l["runs"].as_str().unwrap(), &l["mount"])).collect();
    let none = &serde_json::Value::Null;
    assert_eq!(
        loops,
        [("one_job", &serde_json::json!("logs")), ("touches_no_mount", none), ("touches_no_mount", none)]
    );
    assert_eq!(
        first_commands(&explain),
        [
            ("logs".into(), "cheapest".into()),
            (none.clone(), "does_not_pay".into()),
            (none.clone(), "does_not_pay".into())
        ],
        "{explain:#}"
    );
    let (_, stats) = cluster.same_as_bash(script, &[]);
    assert_eq!(stats.len(), 8, "the first loop's eight pipelines, none of the second's: {stats:?}");
    for record in &stats {
        assert_eq!((record["line"].as_u64(), record["loop_request"].as_bool()), (Some(1), Some(true)), "{record}");
        assert_eq!(record["commands"][0]["location"], "logs", "{record}");
    }
}

/// Do no harm by value sets (issue 40): on a datacenter link, a loop's `grep -c TODO "$f"` over
/// small files is kept at the client for every value of `$f`, so the run leaves it to bash (no
/// call of the runtime, no record), as `--explain` says; a loop whose values lead to two places
/// (a large log at its proxy, a small file at the client) is placed when it runs.
#[test]
fn a_loop_whose_every_value_does_not_pay_stays_with_bash() {
    let cluster = on_a_datacenter_link(Cluster::new(&[]));
    for i in 0..5 {
        std::fs::write(cluster.root().join(format!("logs/note{i}.txt")), "a TODO\nb\nTODO c\n").unwrap();
    }
    let script = "for f in logs/note*.txt; do n=$(grep -c TODO \"$f\"); echo \"$f $n\"; done\n\
                  for f in logs/big.log logs/note1.txt; do grep -c ERROR \"$f\"; done\n";
    std::fs::write(cluster.root().join("s.sh"), script).unwrap();
    let explain = cluster.posh(&["--explain", "--format", "json", "s.sh"]);
    assert!(explain.status.success(), "{}", text(&explain.stderr));
    let explain: serde_json::Value = serde_json::from_slice(&explain.stdout).unwrap();
    let grep_of_line = |line: u64| {
        let pipelines = explain["pipelines"].as_array().unwrap();
        let pipeline =
            pipelines.iter().find(|p| p["line"] == line && p["source"].as_str().unwrap().starts_with("grep"));
        let pipeline = pipeline.unwrap_or_else(|| panic!("no grep on line {line}: {explain:#}"));
        pipeline["nodes"].as_array().unwrap().iter().find(|n| n["kind"]["type"] == "command").unwrap().clone()
    };
    assert_eq!(grep_of_line(1)["why"]["reason"], "does_not_pay", "{explain:#}");
    assert_eq!(grep_of_line(2)["why"]["reason"], "depends_on_shell", "{explain:#}");
    let (_, stats) = cluster.same_as_bash(script, &[]);
    let lines: Vec<u64> = stats.iter().filter_map(|r| r["line"].as_u64()).collect();
    assert!(!lines.contains(&1), "the first loop's calls are bash's: {stats:?}");
    let at_logs =
        stats.iter().flat_map(|r| r["commands"].as_array().into_iter().flatten()).any(|c| c["location"] == "logs");
    assert!(lines.contains(&2) && at_logs, "the large log's grep runs at its proxy: {stats:?}");
}
