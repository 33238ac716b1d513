//! posh's prompt (`posh-exec -i`) driven like a person, under tmux: lines typed at it print what
//! `bash -i` prints for the same lines, a mount's pipelines ran at its proxy (`--stats`), the
//! history holds the typed lines, Ctrl-C of a remote job brings the prompt back with nothing left
//! running, and the preview says where a line would run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of the test's own, killed on every path.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new() -> Tmux {
        Tmux { socket: format!("posh-prompt-test-{}-{:?}", std::process::id(), std::thread::current().id()) }
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs (apt-get install tmux)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A window running `command` (a script path) in a terminal of 120 columns.
    fn window(&self, name: &str, command: &Path) {
        let command = command.to_str().expect("a UTF-8 path");
        if !self.has_session() {
            self.run(&["new-session", "-d", "-x", "120", "-y", "50", "-n", name, command]);
            // A window whose shell ended stays, so that a failure shows its last screen.
            self.run(&["set-option", "-g", "remain-on-exit", "on"]);
        } else {
            self.run(&["new-window", "-d", "-n", name, command]);
        }
    }

    fn has_session(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null", "has-session"])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// The window's text, trailing blank lines dropped.
    fn screen(&self, name: &str) -> String {
        self.capture(name, &[])
    }

    /// The window's text with its colours and attributes (as escape sequences).
    fn coloured_screen(&self, name: &str) -> String {
        self.capture(name, &["-e"])
    }

    fn capture(&self, name: &str, flags: &[&str]) -> String {
        let target = format!(":={name}");
        let mut args = vec!["capture-pane", "-p", "-t", &target];
        args.extend_from_slice(flags);
        let text = self.run(&args);
        text.trim_end().lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
    }

    /// Waits (bounded) until the window's text satisfies `ready`; returns it.
    fn wait_for(&self, name: &str, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen(name);
            if ready(&screen) {
                return screen;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "{name}: no {what} within 30 s; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn keys(&self, name: &str, keys: &[&str]) {
        let target = format!(":={name}");
        let mut args = vec!["send-keys", "-t", &target];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Types `line` and Enter, and waits for the next prompt (`$ ` alone on the last line).
    fn type_line(&self, name: &str, line: &str) -> String {
        let prompts = |s: &str| s.lines().filter(|l| l.starts_with("$")).count();
        let before = prompts(&self.screen(name));
        self.keys(name, &["-l", line]);
        self.keys(name, &["Enter"]);
        self.wait_for(name, "prompt after the line", |s| prompts(s) > before && s.lines().last() == Some("$"))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

/// The test's world: a home with its own ~/.bashrc, `work/mnt` an embedded mount named `logs`.
struct World {
    _dir: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("mnt")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let numbers: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    std::fs::write(work.join("mnt/x.txt"), numbers).unwrap();
    std::fs::write(work.join("posh.toml"), "[[mount]]\nname = \"logs\"\npath = \"mnt\"\nproxy = \"embedded\"\n")
        .unwrap();
    // No history file: each shell starts with an empty history. Debian's ~/.bashrc colours
    // grep's matches on a terminal.
    std::fs::write(
        home.join(".bashrc"),
        "PS1='$ '\nunset HISTFILE\nalias ll='ls -l'\nalias grep='grep --color=auto'\n",
    )
    .unwrap();
    World { _dir: dir, work, home }
}

/// A script that starts `argv` in `world`'s work directory with the test's home.
fn launcher(world: &World, name: &str, argv: &[&str]) -> PathBuf {
    let mut text = format!("#!/bin/sh\ncd '{}' || exit 1\n", world.work.display());
    for removed in crate::isolation::REMOVED {
        text.push_str(&format!("unset {removed}\n"));
    }
    for (key, value) in crate::isolation::home_env_in(&world.home) {
        text.push_str(&format!("export {key}='{}'\n", value.display()));
    }
    text.push_str("export TERM=screen\n");
    let quoted: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
    // The status goes to a file beside the script (`NAME.status`): tmux 3.3a left an exited
    // posh-exec unreaped now and then, so that `#{pane_dead_status}` stayed empty.
    let status = world.work.parent().unwrap().join(format!("{name}.status"));
    text.push_str(&format!("{}\necho $? > '{}'\n", quoted.join(" "), status.display()));
    let path = world.work.parent().unwrap().join(format!("{name}.sh"));
    std::fs::write(&path, text).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    path
}

fn tmux_missing() -> bool {
    Command::new("tmux").arg("-V").output().is_err()
}

const LINES: [&str; 12] = [
    "f=mnt/x.txt; cat $f | grep 7777 | wc -l",
    "echo $?",
    "grep -c 99 $f | sort",
    "cd mnt && grep -c 12345 x.txt; cd ..",
    "grep nothing-here $f | wc -l; echo ${PIPESTATUS[@]}",
    // `PIPESTATUS` after a handed-over pipeline holds each command's status, as bash's does.
    "cat $f | grep nothing-here | wc -l",
    "echo ${PIPESTATUS[@]} $?",
    // A command after it on the line sets it again.
    "grep -c 5 $f | wc -l; true",
    "echo ${PIPESTATUS[@]}",
    "ll -d mnt | wc -l",
    // The alias's `--color=auto` colours the matches on the terminal, as bash's grep does.
    "grep -w 77777 $f",
    "history",
];

#[test]
fn prompt_prints_what_bash_prints_and_runs_a_mounts_pipelines_at_its_proxy() {
    assert!(!tmux_missing(), "tmux is not installed (`.ci/test --deps-only` installs it)");
    let world = world();
    let stats = world.work.parent().unwrap().join("stats.jsonl");
    let posh = crate::oracle::posh_exec();
    let posh = posh.to_str().unwrap();
    let stats_arg = stats.to_str().unwrap();
    let tmux = Tmux::new();
    tmux.window("posh", &launcher(&world, "posh", &[posh, "-i", "--stats", stats_arg]));
    tmux.window("bash", &launcher(&world, "bash", &["bash", "-i"]));
    for name in ["posh", "bash"] {
        tmux.wait_for(name, "first prompt", |s| s.lines().last() == Some("$"));
    }
    for line in LINES {
        tmux.type_line("posh", line);
        tmux.type_line("bash", line);
    }
    let (posh_screen, bash_screen) = (tmux.coloured_screen("posh"), tmux.coloured_screen("bash"));
    assert_eq!(posh_screen, bash_screen, "posh's prompt printed something else than bash -i");
    assert!(posh_screen.contains("\u{1b}["), "grep coloured nothing: {posh_screen}");
    assert!(posh_screen.contains("\n19\n"), "{posh_screen}");
    // The history holds the lines as typed (`history`'s own output, compared above, lists them).
    assert!(posh_screen.contains("    1  f=mnt/x.txt; cat $f | grep 7777 | wc -l"), "{posh_screen}");
    assert!(!posh_screen.contains("__posh_run"), "{posh_screen}");

    // The mount's pipelines ran at its proxy.
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&stats).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let at = |command: &str| {
        records.iter().flat_map(|r| r["commands"].as_array().unwrap().clone()).find(|c| c["command"] == command)
    };
    let grep = at("grep").unwrap_or_else(|| panic!("no grep in --stats: {records:?}"));
    assert_eq!(grep["location"], "logs", "{records:?}");
    // Every grep line above named the alias: each was planned (expanded) and ran at the proxy,
    // but the one that reads `PIPESTATUS` on the same line, which bash keeps.
    let greps: Vec<&serde_json::Value> =
        records.iter().flat_map(|r| r["commands"].as_array().unwrap()).filter(|c| c["command"] == "grep").collect();
    assert_eq!(greps.len(), 6, "{records:?}");
    assert!(greps.iter().all(|c| c["location"] == "logs"), "{records:?}");
    assert_eq!(at("cat").unwrap()["location"], "logs", "{records:?}");
}

#[test]
fn ctrl_c_of_a_remote_job_brings_the_prompt_back_with_nothing_left_running() {
    assert!(!tmux_missing(), "tmux is not installed (`.ci/test --deps-only` installs it)");
    let world = world();
    let stats = world.work.parent().unwrap().join("stats.jsonl");
    let posh = crate::oracle::posh_exec();
    let tmux = Tmux::new();
    tmux.window("posh", &launcher(&world, "posh", &[posh.to_str().unwrap(), "-i", "--stats", stats.to_str().unwrap()]));
    tmux.wait_for("posh", "first prompt", |s| s.lines().last() == Some("$"));
    let mark = format!("spin{}", std::process::id());
    let spinning = || Command::new("pgrep").args(["-f", &mark]).output().is_ok_and(|o| !o.stdout.is_empty());
    tmux.keys("posh", &["-l", &format!("awk '{{while(\"{mark}\"){{}}}}' mnt/x.txt")]);
    tmux.keys("posh", &["Enter"]);
    let start = Instant::now();
    while !spinning() {
        assert!(start.elapsed() < Duration::from_secs(20), "awk never started: {}", tmux.screen("posh"));
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.keys("posh", &["C-c"]);
    tmux.type_line("posh", "echo status $?");
    let screen = tmux.screen("posh");
    assert!(screen.contains("\nstatus 130"), "{screen}");
    let start = Instant::now();
    while spinning() {
        assert!(start.elapsed() < Duration::from_secs(5), "awk still runs after Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    }
    // `exit` ends posh-exec with bash's status.
    tmux.keys("posh", &["-l", "exit 3"]);
    tmux.keys("posh", &["Enter"]);
    let start = Instant::now();
    let status = world.work.parent().unwrap().join("posh.status");
    loop {
        if let Ok(said) = std::fs::read_to_string(&status)
            && said.ends_with('\n')
        {
            assert_eq!(said, "3\n", "posh-exec ended with another status");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "posh-exec did not end: {}", tmux.screen("posh"));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn preview_says_where_a_line_would_run_and_leaves_it_to_be_edited() {
    assert!(!tmux_missing(), "tmux is not installed (`.ci/test --deps-only` installs it)");
    let world = world();
    let posh = crate::oracle::posh_exec();
    let tmux = Tmux::new();
    tmux.window("posh", &launcher(&world, "posh", &[posh.to_str().unwrap(), "-i"]));
    tmux.wait_for("posh", "first prompt", |s| s.lines().last() == Some("$"));
    tmux.keys("posh", &["-l", "grep 7777 mnt/x.txt | wc -l"]);
    tmux.keys("posh", &["M-p"]);
    let screen = tmux.wait_for("posh", "preview", |s| s.contains("posh: "));
    assert!(screen.contains("grep, wc at logs, moves"), "{screen}");
    assert!(screen.contains("bash would move 589 KB"), "{screen}");
    // The line is still there, and runs.
    tmux.keys("posh", &["Enter"]);
    tmux.wait_for("posh", "the line's output", |s| s.lines().any(|l| l == "19"));
}

/// The processes whose command line holds `mark`.
fn processes_with(mark: &str) -> Vec<u32> {
    let out = Command::new("pgrep").args(["-f", mark]).output().expect("pgrep runs");
    String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

/// Fields of `/proc/PID/stat` after the command's name: state, parent, group, session, ...
fn stat_fields(pid: u32) -> Vec<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().map(str::to_string).collect()).unwrap_or_default()
}

/// Waits (bounded) until the one process holding `mark` is in a state `wanted` accepts; returns
/// its pid.
fn until_state(mark: &str, what: &str, wanted: impl Fn(&str) -> bool) -> u32 {
    let start = Instant::now();
    loop {
        let pids = processes_with(mark);
        if let [pid] = pids[..]
            && stat_fields(pid).first().is_some_and(|s| wanted(s))
        {
            return pid;
        }
        let states: Vec<Vec<String>> = pids.iter().map(|p| stat_fields(*p)).collect();
        assert!(start.elapsed() < Duration::from_secs(20), "{mark} never {what}: {pids:?} {states:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many lines of `name`'s screen start with `start`.
fn lines_starting(tmux: &Tmux, name: &str, start: &str) -> usize {
    tmux.screen(name).lines().filter(|l| l.starts_with(start)).count()
}

/// Issue 39: Ctrl-Z of a remote job suspends it as bash suspends a job: bash says `Stopped`,
/// `jobs` lists it as typed, its processes at the proxy are stopped (state T), `fg` lets it
/// finish with bash's output, `bg` lets it run on in the background, Ctrl-C after `fg` ends it
/// with nothing left running; what the screen shows is what `bash -i` shows for the same keys.
#[test]
fn ctrl_z_of_a_remote_job_suspends_it_as_bash_would() {
    assert!(!tmux_missing(), "tmux is not installed (`.ci/test --deps-only` installs it)");
    let world = world();
    let stats = world.work.parent().unwrap().join("stats.jsonl");
    let posh = crate::oracle::posh_exec();
    let tmux = Tmux::new();
    let argv = [posh.to_str().unwrap(), "-i", "--progress", "never", "--stats", stats.to_str().unwrap()];
    tmux.window("posh", &launcher(&world, "posh", &argv));
    tmux.window("bash", &launcher(&world, "bash", &["bash", "-i"]));
    for name in ["posh", "bash"] {
        tmux.wait_for(name, "first prompt", |s| s.lines().last() == Some("$"));
    }
    let (finite, endless) = (format!("count{}", std::process::id()), format!("spin{}", std::process::id()));
    let counting = format!(
        "awk 'NR==1{{print \"first\"; fflush()}} END{{m=\"{finite}\"; for(i=0;i<2e8;i++);print \"done\", NR}}' mnt/x.txt"
    );
    let spinning = format!("awk 'END{{while(\"{endless}\"){{}}}}' mnt/x.txt");
    // The same keys in both windows, one after the other; `at_proxy` checks posh's processes.
    let drive = |name: &str, at_proxy: bool| {
        let check_stopped = |mark: &str| {
            if at_proxy {
                let pid = until_state(mark, "stopped", |s| s == "T");
                // A command at the proxy leads a session of its own: the terminal stopped nothing of it.
                assert_eq!(stat_fields(pid)[3], pid.to_string(), "{mark} did not run at the proxy");
            }
        };
        let stopped_lines = |tmux: &Tmux| lines_starting(tmux, name, "[1]+  Stopped");
        // Stopped, listed, and finished by `fg` with its whole output.
        tmux.keys(name, &["-l", &counting]);
        tmux.keys(name, &["Enter"]);
        tmux.wait_for(name, "awk's first line", |s| s.lines().any(|l| l == "first"));
        until_state(&finite, "running", |s| s == "R");
        let before = stopped_lines(&tmux);
        tmux.keys(name, &["C-z"]);
        tmux.wait_for(name, "Stopped", |s| {
            s.lines().filter(|l| l.starts_with("[1]+  Stopped")).count() > before && s.lines().last() == Some("$")
        });
        check_stopped(&finite);
        tmux.type_line(name, "jobs");
        tmux.type_line(name, "fg");
        tmux.type_line(name, "echo status $?");
        assert!(processes_with(&finite).is_empty(), "{finite} still runs");
        // Stopped, then in the background, then in the foreground again and interrupted.
        tmux.keys(name, &["-l", &spinning]);
        tmux.keys(name, &["Enter"]);
        until_state(&endless, "running", |s| s == "R");
        let before = stopped_lines(&tmux);
        tmux.keys(name, &["C-z"]);
        tmux.wait_for(name, "Stopped", |s| {
            s.lines().filter(|l| l.starts_with("[1]+  Stopped")).count() > before && s.lines().last() == Some("$")
        });
        check_stopped(&endless);
        tmux.type_line(name, "bg");
        until_state(&endless, "running in the background", |s| s == "R");
        tmux.type_line(name, "jobs");
        tmux.keys(name, &["-l", "fg"]);
        tmux.keys(name, &["Enter"]);
        tmux.wait_for(name, "fg's line", |s| s.lines().last() == Some(spinning.as_str()));
        until_state(&endless, "running in the foreground", |s| s == "R");
        tmux.keys(name, &["C-c"]);
        // Typed before the prompt is back, the line would be echoed by the terminal after `^C`
        // under either shell, as soon as the interrupted job takes longer than tmux's keys.
        tmux.wait_for(name, "prompt after Ctrl-C", |s| s.lines().last() == Some("$"));
        tmux.type_line(name, "echo status $?");
        let start = Instant::now();
        while !processes_with(&endless).is_empty() {
            assert!(start.elapsed() < Duration::from_secs(5), "{endless} still runs after Ctrl-C");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    drive("posh", true);
    drive("bash", false);
    let (posh_screen, bash_screen) = (tmux.screen("posh"), tmux.screen("bash"));
    assert_eq!(posh_screen, bash_screen, "posh's prompt printed something else than bash -i");
    assert!(posh_screen.contains("\ndone 100000\n"), "{posh_screen}");
    assert!(posh_screen.contains("\nstatus 0\n") && posh_screen.ends_with("status 130\n$"), "{posh_screen}");
    // The counting awk ran at the proxy.
    let records = std::fs::read_to_string(&stats).unwrap();
    let record: serde_json::Value = serde_json::from_str(records.lines().next().unwrap()).unwrap();
    assert_eq!(record["commands"][0]["command"], "awk", "{records}");
    assert_eq!(record["commands"][0]["location"], "logs", "{records}");
}

/// Issue 39: a command of a handed-over pipeline that the runtime runs at the client may read
/// the terminal (it runs in the line's job, which has the terminal), as under bash; in
/// posh-exec's own process group it would have been stopped by SIGTTIN.
#[test]
fn a_client_command_of_a_handed_pipeline_reads_the_terminal() {
    assert!(!tmux_missing(), "tmux is not installed (`.ci/test --deps-only` installs it)");
    let world = world();
    let stats = world.work.parent().unwrap().join("stats.jsonl");
    let posh = crate::oracle::posh_exec();
    let tmux = Tmux::new();
    tmux.window("posh", &launcher(&world, "posh", &[posh.to_str().unwrap(), "-i", "--stats", stats.to_str().unwrap()]));
    tmux.window("bash", &launcher(&world, "bash", &["bash", "-i"]));
    for name in ["posh", "bash"] {
        tmux.wait_for(name, "first prompt", |s| s.lines().last() == Some("$"));
        tmux.keys(name, &["-l", "grep 7777 mnt/x.txt | cat /dev/tty - | grep -c 7777"]);
        tmux.keys(name, &["Enter"]);
        // Typed once cat reads (before, readline could still take the keys).
        let start = Instant::now();
        while processes_with("^cat /dev/tty -$").is_empty() {
            assert!(start.elapsed() < Duration::from_secs(20), "cat never started: {}", tmux.screen(name));
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(200));
        tmux.keys(name, &["-l", "77777"]);
        tmux.keys(name, &["Enter", "C-d"]);
        tmux.wait_for(name, "grep's count", |s| s.lines().last() == Some("$") && s.lines().any(|l| l == "20"));
    }
    assert_eq!(tmux.screen("posh"), tmux.screen("bash"), "posh's prompt printed something else than bash -i");
    // The pipeline was handed over (its first grep runs at the proxy): the runtime ran cat at
    // the client, where it read the terminal.
    let records = std::fs::read_to_string(&stats).unwrap();
    assert!(records.contains(r#""command":"cat","line":1,"location":"client""#), "{records}");
}
