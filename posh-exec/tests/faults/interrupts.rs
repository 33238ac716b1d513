//! Item 2: a client that goes away (Ctrl-C, `kill -9`), or a proxy that is stopped or killed,
//! ends the remote job: every process it started (`awk`'s `system("sleep")` included), within 1 s
//! when the client's connection closes and within QUIC's idle timeout when the client vanishes.
//! The file the script was writing keeps its old content, and no temporary file, job directory
//! or process stays behind on either side.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::fixture::{Site, posh_exec, temporaries, wait_until};
use crate::proxy_process::Proxy;

/// A site whose script writes `data/out` (old content `old`) from a remote awk that starts a
/// `sleep SECONDS` of its own; `SECONDS` tells each test's processes apart.
fn site(seconds: u32, proxy_args: &[&str]) -> Site {
    let site = Site::new(proxy_args);
    site.write("data/x", "x\n");
    site.write("data/out", "old\n");
    site.write("job.sh", format!("awk 'BEGIN{{system(\"sleep {seconds}\")}}' data/x > data/out\ntouch ran-on\n"));
    site
}

/// Starts posh-exec on `job.sh` in a process group of its own, as a terminal's job, with SIGTERM
/// ignored as under some supervisors (bash inherits that, and must still end with posh-exec).
fn start(site: &Site) -> Child {
    use std::os::unix::process::CommandExt as _;
    site.command("bash")
        .args(["-c", "trap '' TERM; exec \"$0\" job.sh", posh_exec()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap()
}

fn sleeping(seconds: u32) -> bool {
    Command::new("pgrep").args(["-f", &format!("^sleep {seconds}$")]).stdout(Stdio::null()).status().unwrap().success()
}

/// What the proxy keeps of its jobs' directories (`STATE/jobs/PID/`): nothing once they ended.
fn job_directories(site: &Site) -> Vec<String> {
    let jobs = site.path("proxy-state/jobs");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&jobs).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            found.extend(
                std::fs::read_dir(entry.path())
                    .unwrap()
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned()),
            );
        }
    }
    found
}

fn assert_nothing_left(site: &Site, seconds: u32) {
    assert!(!sleeping(seconds), "sleep {seconds} is still running");
    assert_eq!(std::fs::read_to_string(site.path("data/out")).unwrap(), "old\n", "data/out lost its content");
    assert_eq!(temporaries(&site.path("data")), Vec::<String>::new(), "temporary files left in the export");
    assert_eq!(job_directories(site), Vec::<String>::new(), "job directories left at the proxy");
}

#[test]
fn ctrl_c_ends_the_remote_job_within_a_second() {
    let site = site(3131, &[]);
    let mut posh = start(&site);
    wait_until(Duration::from_secs(20), "the remote sleep", || sleeping(3131));
    let group = format!("-{}", posh.id());
    assert!(Command::new("kill").args(["-INT", "--", &group]).status().unwrap().success());
    let took = wait_until(Duration::from_secs(1), "the remote job's end after Ctrl-C", || !sleeping(3131));
    println!("the job ended {took:?} after Ctrl-C");
    let status = posh.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    wait_until(Duration::from_secs(2), "the job's directory removed", || job_directories(&site).is_empty());
    assert_nothing_left(&site, 3131);
}

#[test]
fn a_client_killed_outright_has_its_job_ended_within_the_idle_timeout() {
    let site = site(3132, &[]);
    let mut posh = start(&site);
    wait_until(Duration::from_secs(20), "the remote sleep", || sleeping(3132));
    posh.kill().unwrap();
    posh.wait().unwrap();
    // QUIC's idle timeout is 10 s (posh_wire::protocol::transport), restarted by the proxy's own
    // keep-alive up to 2 s after the client's last packet.
    let took = wait_until(Duration::from_secs(15), "the remote job's end after kill -9", || !sleeping(3132));
    println!("the job ended {took:?} after kill -9 of posh-exec");
    wait_until(Duration::from_secs(2), "the job's directory removed", || job_directories(&site).is_empty());
    assert_nothing_left(&site, 3132);
    // bash does not run the rest of the script without its runtime.
    assert!(!site.path("ran-on").exists(), "bash ran on after posh-exec was killed");
}

#[test]
fn a_proxy_stopped_with_sigterm_kills_its_jobs_after_the_grace_period() {
    let mut site = site(3133, &["--grace-secs", "1"]);
    let mut posh = start(&site);
    wait_until(Duration::from_secs(20), "the remote sleep", || sleeping(3133));
    site.proxy.signal("-TERM");
    let took = wait_until(Duration::from_secs(4), "the job's end after SIGTERM", || !sleeping(3133));
    println!("the job ended {took:?} after SIGTERM with --grace-secs 1");
    assert_eq!(site.proxy.wait_exit(Duration::from_secs(10)), Some(0));
    posh.wait().unwrap();
    assert_nothing_left(&site, 3133);
}

#[test]
fn a_proxy_killed_outright_is_cleaned_up_by_its_next_start() {
    let mut site = site(3134, &[]);
    let mut posh = start(&site);
    wait_until(Duration::from_secs(20), "the remote sleep", || sleeping(3134));
    site.proxy.signal("-KILL");
    site.proxy.wait_exit(Duration::from_secs(5));
    // What the job started ends with the proxy too (issue 37, E3): the job's supervisor learns
    // of its death and kills it. Its directory is the next start's to remove.
    let took = wait_until(Duration::from_secs(2), "the job's sleep ended with its proxy", || !sleeping(3134));
    println!("the job's sleep ended {took:?} after kill -9 of the proxy");
    assert!(!job_directories(&site).is_empty(), "the dead proxy's job directory is still there");
    let state = site.path("proxy-state");
    let restarted = Proxy::start(&site.path("data"), &state, &["--allow-any-client"]);
    wait_until(Duration::from_secs(2), "the job's directory removed by the next start", || {
        job_directories(&site).is_empty()
    });
    let _ = posh.kill();
    posh.wait().unwrap();
    drop(restarted);
    assert_nothing_left(&site, 3134);
}

/// Ctrl-C while a remote command runs leaves the script where bash leaves it: ended by SIGINT
/// (its EXIT trap run), or, with SIGINT trapped, the trap run and the script going on with
/// status 130. posh-exec hands pipelines over from inside bash (a loadable builtin), so bash's
/// own reaction to a command killed by SIGINT is what the builtin has to reproduce, also as one
/// element of a pipeline whose other elements bash runs.
#[test]
fn ctrl_c_leaves_the_script_where_bash_leaves_it() {
    let site = Site::new(&[]);
    site.write("data/spin3135", "x\n");
    let spin = "awk 'BEGIN { while (1) ; }' data/spin3135";
    site.write("data/x", "x\n");
    let loop_spin = "awk '{ while ($0 == \"x\" \u{26}\u{26} FILENAME ~ /spin/) ; print }' \"$f\"";
    let cases = [
        format!("{spin}\necho after $?\n"),
        format!("trap 'echo trapped' INT\n{spin}\necho after $?\n"),
        format!("trap 'echo bye' EXIT\n{spin}\necho after $?\n"),
        format!("for i in 1 2; do {spin}; echo in the loop $?; done\necho after $?\n"),
        // Bash keeps the loop of the pipeline; the awk is a call of its own.
        format!("{spin} | while read -r l; do echo \"$l\"; done\necho after $?\n"),
        // The call in a subshell of its own is the last child bash reaps: killed by SIGINT as the
        // awk would be, or bash takes the Ctrl-C for caught and goes on.
        format!("{spin} | true\necho after $?\n"),
        // The runtime gets the loop whole (its iterations as one request to the proxy); with a
        // trap, bash keeps it and goes on with the next iteration after the trap.
        format!("for f in data/spin3135 data/x; do {loop_spin}; done\necho after $?\n"),
        format!("trap 'echo trapped' INT\nfor f in data/spin3135 data/x; do {loop_spin}; done\necho after $?\n"),
        format!("trap 'echo trapped' INT\n{spin} | while read -r l; do echo \"$l\"; done\necho after $?\n"),
        format!("set -o pipefail\ntrap 'echo trapped' INT\n{spin} | while read -r l; do :; done\necho after $?\n"),
    ];
    let spinning = || Command::new("pgrep").args(["-f", "spin3135"]).stdout(Stdio::null()).status().unwrap().success();
    // bash itself decides between "killed" and "caught" by the last child it reaps and by when
    // its own SIGINT lands, which a loaded machine can reorder (`{spin} | true` once went on
    // under bash where the run beside it did not): a case whose pair differs is run again, and
    // fails when three pairs all differ.
    for case in &cases {
        site.write("case.sh", case);
        for attempt in 1..=3 {
            let ends = ctrl_c_under_each_shell(&site, &spinning);
            if ends[0] == ends[1] {
                break;
            }
            assert!(attempt < 3, "bash (left) against posh-exec (right) for:\n{case}\n{:?}\n{:?}", ends[0], ends[1]);
        }
    }
    assert!(site.proxy_log().contains("spin3135"), "the awk ran at the proxy");
}

/// `case.sh` under bash, then under posh-exec, each as a terminal's job Ctrl-C'd once its awk
/// spins: what each printed, and how it ended.
fn ctrl_c_under_each_shell(site: &Site, spinning: &dyn Fn() -> bool) -> Vec<(String, Option<i32>, Option<i32>)> {
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    let mut ends = Vec::new();
    for shell in ["bash", posh_exec()] {
        // As a terminal's job: its own process group, SIGINT not ignored (a shell ignores for
        // good what it was started ignoring).
        let mut child = site
            .command("env")
            .args(["--default-signal=INT", shell, "case.sh"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        wait_until(Duration::from_secs(20), "the spinning awk", spinning);
        let group = format!("-{}", child.id());
        assert!(Command::new("kill").args(["-INT", "--", &group]).status().unwrap().success());
        let mut status = None;
        wait_until(Duration::from_secs(10), "the shell's end after Ctrl-C", || {
            status = child.try_wait().unwrap();
            status.is_some()
        });
        let (status, mut stdout) = (status.unwrap(), String::new());
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
        wait_until(Duration::from_secs(2), "the awk's end", || !spinning());
        ends.push((stdout, status.code(), status.signal()));
    }
    ends
}

/// A proxy killed while a loop's iterations run there as one request: the pipeline it was
/// running fails with posh's message (as a pipeline of its own would), the loop goes on with the
/// next iteration (at the client, where the proxy no longer answers), and the iterations before
/// it keep what they wrote.
#[test]
fn a_proxy_killed_during_a_loops_request_fails_that_pipeline_and_the_loop_goes_on() {
    let mut site = Site::new(&[]);
    site.write("data/a", "a\n");
    site.write("data/spin3136", "s\n");
    site.write("data/b", "b\n");
    site.write(
        "job.sh",
        "for f in data/a data/spin3136 data/b; do\n  awk '{ while (FILENAME ~ /spin/) ; print }' \"$f\"\ndone\necho \"after $?\"\n",
    );
    let posh = site.command(posh_exec()).arg("job.sh").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let spinning = || Command::new("pgrep").args(["-f", "spin3136"]).stdout(Stdio::null()).status().unwrap().success();
    wait_until(Duration::from_secs(20), "the spinning awk", spinning);
    site.proxy.signal("-KILL");
    site.proxy.wait_exit(Duration::from_secs(5));
    // What the killed proxy's job started outlives it; it is not posh's to end here.
    let _ = Command::new("pkill").args(["-f", "spin3136"]).status();
    let out = posh.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout, "a\nb\nafter 0\n", "stderr: {stderr}");
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.contains("job.sh: line 2: posh: "), "the failed pipeline is said: {stderr}");
    assert!(site.proxy_log().contains("sequence"), "the loop went as one request: {}", site.proxy_log());
}
