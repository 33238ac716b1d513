//! Running scripts: what a user of `posh-exec SCRIPT` sees besides the script's own output.

use std::path::Path;
use std::process::{Command, Output};

mod common;

fn posh_exec(args: &[&str], dir: &Path) -> Output {
    common::isolated(env!("CARGO_BIN_EXE_posh-exec"), dir).args(args).output().expect("posh-exec runs")
}

/// A temporary directory with `data/` on an embedded mount.
fn mounted() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/x.txt"), "b 2\na 1\nc 3\n").expect("write");
    std::fs::write(dir.path().join("posh.toml"), "[[mount]]\npath = \"data\"\nproxy = \"embedded\"\n").expect("write");
    dir
}

#[test]
fn a_broken_configuration_is_reported_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("posh.toml"), "[[mount]]\npath = \"/mnt/x\"\nproxi = \"embedded\"\n")
        .expect("write");
    let out = posh_exec(&["-c", "echo ran"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout, b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("posh.toml:3:1: key `mount[1].proxi`: unknown key; did you mean `proxy`?"), "{stderr}");
}

#[test]
fn scripts_can_name_posh_exec_in_their_shebang() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("s.sh");
    std::fs::write(&script, "#!/usr/bin/env posh-exec\necho \"$0 $1\"\nexit 3\n").expect("write");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_posh-exec")).parent().expect("a directory");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = common::isolated("./s.sh", dir.path()).arg("arg").env("PATH", path).output().expect("runs");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "./s.sh arg\n");
}

#[test]
fn pipelines_that_touch_a_mount_go_through_the_runtime() {
    let dir = mounted();
    std::fs::write(dir.path().join("s.sh"), "sort data/x.txt | head -n 1\necho hi | cat\n").expect("write");
    let out = posh_exec(&["--print-rewritten", "s.sh"], dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("__run \"$0\" \"$SHELLOPTS\""), "{text}");
    assert_eq!(lines[1], "echo hi | cat", "builtins stay with bash");
    let out = posh_exec(&["s.sh"], dir.path());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a 1\nhi\n");
}

/// Each pipeline is handed over by the builtin bash loads from beside posh-exec (no process);
/// where there is none, by the small `posh-run` installed beside posh-exec; without either, by
/// posh-exec itself (`__run`); with the same results.
#[test]
fn pipelines_are_handed_over_by_the_builtin_or_posh_run_or_posh_exec_itself() {
    let dir = mounted();
    let script = "sort data/x.txt | head -n 2 > data/out.txt\ncat data/out.txt\ntype -t __posh_run || echo process\n";
    std::fs::write(dir.path().join("s.sh"), script).expect("write");
    let installed = Path::new(env!("CARGO_BIN_EXE_posh-exec"));
    // Copies in directories of their own: `../lib/posh` beside them holds no builtin.
    let without_builtin = common::copied_alone(&[installed, &installed.with_file_name("posh-run")]);
    let alone = common::copied_alone(&[installed]);
    let (without_builtin, alone) = (without_builtin.path().join("bin"), alone.path().join("bin"));
    for (exe, trampoline, handed_over_by) in [
        (installed.to_path_buf(), installed.with_file_name("posh-run"), "builtin"),
        (without_builtin.join("posh-exec"), without_builtin.join("posh-run"), "process"),
        (alone.join("posh-exec"), alone.join("posh-exec"), "process"),
    ] {
        let run =
            |args: &[&str]| common::isolated(exe.to_str().unwrap(), dir.path()).args(args).output().expect("runs");
        let rewritten = String::from_utf8_lossy(&run(&["--print-rewritten", "s.sh"]).stdout).into_owned();
        assert!(rewritten.starts_with(&format!("__posh_exe='{}';", trampoline.display())), "{rewritten}");
        let loads = rewritten.lines().next().is_some_and(|l| l.contains("libposh_handoff.so' __posh_run 2>/dev/null"));
        assert_eq!(loads, handed_over_by == "builtin", "{rewritten}");
        let out = run(&["--stats", "stats.json", "s.sh"]);
        assert_eq!(
            (out.status.code(), &String::from_utf8_lossy(&out.stdout)[..], &out.stderr[..]),
            (Some(0), &format!("a 1\nb 2\n{handed_over_by}\n")[..], &b""[..])
        );
        let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats");
        assert!(stats.lines().next().is_some_and(|l| l.contains("\"location\":\"data\"")), "{stats}");
    }
}

/// A bash that cannot load the builtin (here a broken `libposh_handoff.so` beside posh-exec) runs
/// the script rewritten for `bash -c` instead, as the first line of the script file says, its
/// pipelines handed over by `posh-run`: the same output, `$0` the script's name.
#[test]
fn a_bash_that_cannot_load_the_builtin_runs_the_fallback() {
    let dir = mounted();
    std::fs::write(dir.path().join("s.sh"), "sort data/x.txt | head -n 2\ntype -t __posh_run || echo \"process $0\"\n")
        .expect("write");
    let installed = Path::new(env!("CARGO_BIN_EXE_posh-exec"));
    let broken = tempfile::tempdir().expect("tempdir");
    std::fs::copy(installed, broken.path().join("posh-exec")).expect("copy");
    std::fs::copy(installed.with_file_name("posh-run"), broken.path().join("posh-run")).expect("copy");
    std::fs::write(broken.path().join("libposh_handoff.so"), "not a shared object").expect("write");
    let exe = broken.path().join("posh-exec");
    let out = common::isolated(exe.to_str().unwrap(), dir.path())
        .args(["--stats", "stats.json", "s.sh"])
        .output()
        .expect("runs");
    assert_eq!(
        (out.status.code(), &String::from_utf8_lossy(&out.stdout)[..], &String::from_utf8_lossy(&out.stderr)[..]),
        (Some(0), "a 1\nb 2\nprocess s.sh\n", "")
    );
    let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats");
    assert!(stats.lines().next().is_some_and(|l| l.contains("\"location\":\"data\"")), "{stats}");
}

#[test]
fn stats_record_every_pipeline_the_runtime_ran() {
    let dir = mounted();
    std::fs::write(
        dir.path().join("s.sh"),
        "set -o pipefail\ncat data/x.txt | grep zzz | sort\nsort data/x.txt | tail -n 1\n",
    )
    .expect("write");
    let out = posh_exec(&["--stats", "stats.json", "s.sh"], dir.path());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "c 3\n");
    let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats written");
    let records: Vec<serde_json::Value> =
        stats.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["line"], 2);
    assert_eq!(records[0]["status"], 1, "pipefail: grep found nothing");
    let statuses: Vec<&serde_json::Value> =
        records[0]["commands"].as_array().unwrap().iter().map(|c| &c["status"]).collect();
    assert_eq!(statuses, [0, 1, 0]);
    assert_eq!(records[1]["commands"][1]["command"], "tail");
    // `sort data/x.txt` runs at the mount's proxy, and only what it prints comes back.
    assert_eq!(records[1]["commands"][0]["location"], "data");
    let from_proxy = records[1]["proxies"]["data"]["bytes_from_proxy"].as_u64().expect("bytes measured");
    assert!((10..300).contains(&from_proxy), "{stats}");
}

/// `--stats` gives, for a command at the client, the planner's reason, which `--explain` gives
/// too; the runtime leaves the plan only for what the run alone shows (here a word that is not
/// UTF-8) and says so.
#[test]
fn stats_give_the_plans_reasons_and_every_departure_from_it() {
    let dir = mounted();
    let script = "grep a data/x.txt | sort > out.txt\nf=$(printf 'data/\\377'); grep a \"$f\"\n";
    std::fs::write(dir.path().join("s.sh"), script).expect("write");
    let explain = posh_exec(&["--explain", "--format", "json", "s.sh"], dir.path());
    let plan: serde_json::Value = serde_json::from_slice(&explain.stdout).expect("JSON");
    let sort = plan["pipelines"][0]["nodes"].as_array().unwrap().iter().find(|n| n["kind"]["argv"][0] == "sort");
    let why = serde_json::json!({ "reason": "client_only", "detail": "`out.txt` is on no mount" });
    assert_eq!(sort.expect("a sort node")["why"], why, "the plan keeps sort at the client");
    let out = posh_exec(&["--stats", "stats.json", "s.sh"], dir.path());
    assert_eq!(out.status.code(), Some(2), "grep of a missing file fails as under bash");
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).expect("written"), "a 1\n");
    let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats");
    let records: Vec<serde_json::Value> = stats.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let [planned, departed] = &records[..] else { panic!("two records: {stats}") };
    assert_eq!(planned["commands"][0]["location"], "data", "{stats}");
    assert_eq!(planned["commands"][1]["location"], "client", "{stats}");
    assert_eq!(planned["commands"][1]["why"], "`out.txt` is on no mount, so it runs at the client", "{stats}");
    assert_eq!(departed["commands"][0]["location"], "client", "{stats}");
    assert_eq!(
        departed["commands"][0]["why"],
        "run at the client: a word bash expanded is not UTF-8, which the planner cannot read",
        "{stats}"
    );
}

#[test]
fn the_client_identity_is_created_once_and_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let print = || {
        common::isolated(env!("CARGO_BIN_EXE_posh-exec"), dir.path())
            .arg("--print-identity")
            .output()
            .expect("posh-exec runs")
    };
    let first = print();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let fingerprint = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(fingerprint.starts_with("SHA256:") && fingerprint.ends_with('\n'), "{fingerprint}");
    assert_eq!(String::from_utf8_lossy(&print().stdout), fingerprint, "the same identity the second time");
    assert!(dir.path().join("posh/identity").is_dir());
}

/// A command at a proxy that does not read the script's input leaves it to the commands after
/// it, as under bash; one that reads it runs at the client.
#[test]
fn the_scripts_input_stays_for_the_commands_that_read_it() {
    let dir = mounted();
    std::fs::write(dir.path().join("s.sh"), "grep a data/x.txt\nhead -n 2\n").unwrap();
    let run = |program: &str, args: &[&str]| {
        use std::io::Write as _;
        let mut child = common::isolated(program, dir.path())
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("runs");
        child.stdin.take().expect("stdin").write_all(b"first\nsecond\nthird\n").expect("write");
        String::from_utf8(child.wait_with_output().expect("ends").stdout).expect("UTF-8")
    };
    let bash = run("bash", &["s.sh"]);
    assert_eq!(bash, "a 1\nfirst\nsecond\n");
    assert_eq!(run(env!("CARGO_BIN_EXE_posh-exec"), &["--stats", "stats.json", "s.sh"]), bash);
    let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats");
    let records: Vec<serde_json::Value> = stats.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert_eq!(records[0]["commands"][0]["location"], "data", "{stats}");
}

/// The runtime's socket reaches the runtime call alone: commands see the environment bash gives
/// them, with nothing of posh's in it.
#[test]
fn no_posh_variable_reaches_the_commands_environment() {
    let dir = mounted();
    std::fs::write(dir.path().join("s.sh"), "grep a data/x.txt\nenv | grep -c __posh\nprintenv | grep -c __posh\n")
        .unwrap();
    let bash = common::isolated("bash", dir.path()).arg("s.sh").output().expect("bash runs");
    let posh = posh_exec(&["--stats", "stats.json", "s.sh"], dir.path());
    assert_eq!(String::from_utf8_lossy(&posh.stdout), String::from_utf8_lossy(&bash.stdout));
    assert_eq!(String::from_utf8_lossy(&posh.stdout), "a 1\n0\n0\n");
    let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats");
    assert!(stats.contains("\"location\":\"data\""), "the first pipeline went through the runtime: {stats}");
}

/// Issue 14: a background pipeline the script leaves running goes on after bash, as under
/// bash: posh-exec (its runtime) stays until it ends, so its output is there, whole, when
/// posh-exec returns; a subshell in the background too. A background `sleep` bash runs alone
/// is not waited for.
#[test]
fn a_background_pipeline_left_running_ends_before_posh_exec_does() {
    let dir = mounted();
    let big: String = (0..300_000).rev().map(|i| format!("{i}\n")).collect();
    std::fs::write(dir.path().join("data/big.txt"), &big).expect("write");
    let script = "sort -n data/big.txt | tail -n 2 > data/last.txt &\n\
                  ( sort -rn data/big.txt | head -n 1 > data/first.txt ) &\n\
                  sleep 60 > /dev/null 2>&1 &\n\
                  echo started\n";
    std::fs::write(dir.path().join("s.sh"), script).expect("write");
    let started = std::time::Instant::now();
    let out = posh_exec(&["--stats", "stats.json", "s.sh"], dir.path());
    assert!(started.elapsed() < std::time::Duration::from_secs(50), "the background sleep is not waited for");
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stdout).as_ref()), (Some(0), "started\n"));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(std::fs::read_to_string(dir.path().join("data/last.txt")).expect("written"), "299998\n299999\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("data/first.txt")).expect("written"), "299999\n");
    let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats");
    assert_eq!(stats.lines().count(), 2, "both went through the runtime: {stats}");
}

/// Issue 14: `$!` of a background pipeline stands for all of it: `kill $!` ends every command,
/// the one at the proxy too, and `wait $!` gives the status of a pipeline killed by SIGTERM.
#[test]
fn kill_of_a_background_pipeline_ends_every_command() {
    let dir = mounted();
    let script = "cat data/x.txt data/fifo | sort > data/sorted.txt &\n\
                  pid=$!\n\
                  while [ ! -e data/started ]; do sleep 0.05; done\n\
                  kill $pid\n\
                  wait $pid\n\
                  echo \"status $?\"\n";
    std::fs::write(dir.path().join("s.sh"), script).expect("write");
    assert!(Command::new("mkfifo").arg(dir.path().join("data/fifo")).status().expect("mkfifo").success());
    // The pipeline's cat blocks on the FIFO; a writer holds it open, never writing, until the end.
    let fifo = dir.path().join("data/fifo");
    let started = dir.path().join("data/started");
    let holder = std::thread::spawn(move || {
        let writer = std::fs::OpenOptions::new().write(true).open(&fifo).expect("open the fifo");
        std::fs::write(&started, "").expect("write");
        std::thread::sleep(std::time::Duration::from_secs(20));
        drop(writer);
    });
    let out = posh_exec(&["s.sh"], dir.path());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "status 143\n");
    assert_eq!(out.status.code(), Some(0));
    let left = Command::new("pgrep").args(["-f", &format!("{}/data/fifo", dir.path().display())]).output();
    assert_eq!(String::from_utf8_lossy(&left.expect("pgrep").stdout), "", "no command is left");
    drop(holder);
}

/// `posh-exec -c COMMANDS [NAME [ARGS...]]` takes its words as `bash -c` does: every word after
/// the command string is `$0` and the arguments (`--` and option-like words included), one `--`
/// before the command string ends the options, and without NAME `$0` is `bash`, which messages
/// name. With nothing mounted posh-exec execs bash; with a mount the script is rewritten.
#[test]
fn dash_c_takes_its_words_as_bash_does() {
    let mount = mounted();
    let plain = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(plain.path().join("data")).expect("mkdir");
    std::fs::write(plain.path().join("data/x.txt"), "b 2\na 1\nc 3\n").expect("write");
    let show = "echo \"[$0] [$#] [$*]\"; nosuchcommand; sort data/x.txt | head -n 2 > nodir/out; echo \"status $?\"";
    let cases: &[&[&str]] = &[
        &["-c", show, "--", "a"],
        &["-c", "--", show, "x", "y"],
        &["-c", show],
        &["-c", "--", show],
        &["-c", show, "--stats", "f", "-x", "--", "--version", "-c"],
        &["-c", show, "name", "--"],
        &["-c", "--", "--", "z"],
    ];
    for dir in [plain.path(), mount.path()] {
        for args in cases {
            let (bash, posh) = (common::isolated("bash", dir).args(*args).output(), posh_exec(args, dir));
            let bash = bash.expect("bash runs");
            let what = format!("{args:?} in {}", if dir == mount.path() { "a mount" } else { "no mount" });
            assert_eq!(String::from_utf8_lossy(&posh.stdout), String::from_utf8_lossy(&bash.stdout), "{what}");
            assert_eq!(String::from_utf8_lossy(&posh.stderr), String::from_utf8_lossy(&bash.stderr), "{what}");
            assert_eq!(posh.status.code(), bash.status.code(), "{what}");
        }
    }
    let rewritten = posh_exec(&["--print-rewritten", "-c", show, "--", "a"], mount.path());
    assert!(String::from_utf8_lossy(&rewritten.stdout).contains("__run"), "the mount's case is rewritten");
    // No command string: a usage error, status 2, as bash's.
    for args in [&["-c"][..], &["-c", "--"]] {
        for dir in [plain.path(), mount.path()] {
            assert_eq!(posh_exec(args, dir).status.code(), Some(2), "{args:?}");
            assert_eq!(common::isolated("bash", dir).args(args).status().expect("bash runs").code(), Some(2));
        }
    }
}

/// `--explain -c` reads its words as a run does: the plan of the command string, whatever follows.
#[test]
fn explain_takes_dash_c_as_a_run_does() {
    let dir = mounted();
    let plan = |args: &[&str]| {
        let out = posh_exec(args, dir.path());
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let command = "sort data/x.txt | head -n 1";
    let expected = plan(&["--explain", "-c", command]);
    assert!(expected.contains("@data"), "{expected}");
    assert_eq!(plan(&["--explain", "-c", "--", command]), expected);
    assert_eq!(plan(&["--explain", "-c", command, "--", "a", "--stats"]), expected);
}

/// Every file under `dir` with its size (directories end in `/`), in order.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("read_dir").flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            let name = path.strip_prefix(dir).expect("beneath").display().to_string();
            if meta.is_dir() {
                found.push(format!("{name}/"));
                stack.push(path);
            } else {
                found.push(format!("{name} {}", meta.len()));
            }
        }
    }
    found.sort();
    found
}

/// A run whose mounts are all embedded leaves the user's home, the XDG directories in it and
/// `$TMPDIR` as it found them: an embedded proxy needs no identity, pinned proxies or journal in
/// the state directory, and learned ratios are recorded only where that directory exists.
#[test]
fn a_run_on_embedded_mounts_leaves_home_as_it_found_it() {
    let dir = mounted();
    let big: String = (0..60_000).map(|i| format!("{i} alpha beta gamma\n")).collect();
    std::fs::write(dir.path().join("data/big.txt"), big).expect("write");
    std::fs::write(
        dir.path().join("s.sh"),
        "grep -c alpha data/big.txt\nsort data/x.txt > data/out.txt\nls -A ~ ~/.local ~/.config\n",
    )
    .expect("write");
    let (home, tmp) = (tempfile::tempdir().expect("tempdir"), dir.path().join("tmp"));
    std::fs::create_dir_all(home.path().join(".config/other")).expect("mkdir");
    std::fs::create_dir_all(home.path().join(".local/share")).expect("mkdir");
    std::fs::write(home.path().join(".bashrc"), "# mine\n").expect("write");
    std::fs::create_dir(&tmp).expect("mkdir");
    let run = |program: &str| {
        let mut command = Command::new(program);
        let (config, state) = (home.path().join(".config"), home.path().join(".local/state"));
        common::isolate(&mut command, home.path(), &config, &state);
        command.current_dir(dir.path()).env("LC_ALL", "C").env("TMPDIR", &tmp).arg("s.sh").output().expect("runs")
    };
    let before = tree(home.path());
    let bash = run("bash");
    std::fs::remove_file(dir.path().join("data/out.txt")).expect("bash wrote it");
    let posh = run(env!("CARGO_BIN_EXE_posh-exec"));
    assert_eq!(String::from_utf8_lossy(&posh.stdout), String::from_utf8_lossy(&bash.stdout), "the script's own look");
    assert_eq!((posh.status.code(), &posh.stderr[..]), (Some(0), &b""[..]));
    assert_eq!(tree(home.path()), before, "the home after the run");
    assert_eq!(tree(&tmp), Vec::<String>::new(), "$TMPDIR after the run");
    // With the state directory there, the run learns what it measured, and makes nothing else.
    std::fs::create_dir_all(home.path().join(".local/state/posh")).expect("mkdir");
    assert!(run(env!("CARGO_BIN_EXE_posh-exec")).status.success());
    let state = tree(&home.path().join(".local/state/posh"));
    assert_eq!(state.iter().map(|e| e.split(' ').next().unwrap()).collect::<Vec<_>>(), ["ratios.json", "ratios.lock"]);
}

/// A pipeline split across 200 embedded mounts (a proxy per mount, each started on first use):
/// the outputs are bash's, and each mount's copy ran at its own proxy. How long planning and
/// running take at 100 and 1,000 mounts is measured by `bench/mounts.sh` and
/// `posh-core/benches/planner.rs`, not here.
#[test]
fn a_split_across_two_hundred_embedded_mounts_gives_bashs_output() {
    const MOUNTS: usize = 200;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut toml = String::new();
    for m in 0..MOUNTS {
        let mount = dir.path().join(format!("m{m}"));
        std::fs::create_dir(&mount).expect("mkdir");
        let log: String = (0..40).map(|l| format!("{l} {} m{m}\n", ["INFO", "WARN", "ERROR"][(l + m) % 3])).collect();
        std::fs::write(mount.join("f000.log"), log).expect("write");
        toml.push_str(&format!("[[mount]]\nname = \"m{m}\"\npath = \"m{m}\"\nproxy = \"embedded\"\n"));
    }
    std::fs::write(dir.path().join("posh.toml"), toml).expect("write");
    let script = "cat m*/f000.log | grep ERROR | wc -l\ngrep -h WARN m*/f000.log | cut -d ' ' -f 3 | sort | uniq -c | sort -rn | head -n 3\n";
    std::fs::write(dir.path().join("s.sh"), script).expect("write");
    let bash = common::isolated("bash", dir.path()).arg("s.sh").output().expect("bash runs");
    let posh = posh_exec(&["--stats", "stats.json", "s.sh"], dir.path());
    assert_eq!(String::from_utf8_lossy(&posh.stdout), String::from_utf8_lossy(&bash.stdout));
    assert_eq!(String::from_utf8_lossy(&posh.stderr), String::from_utf8_lossy(&bash.stderr));
    assert_eq!(posh.status.code(), bash.status.code());
    assert!(bash.stdout.len() > 10, "the script has output: {bash:?}");
    let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats");
    let first: serde_json::Value = serde_json::from_str(stats.lines().next().expect("a record")).expect("JSON");
    let copies = first["commands"][0]["location"].as_array().cloned().unwrap_or_default();
    let expected: Vec<String> = {
        let mut names: Vec<String> = (0..MOUNTS).map(|m| format!("m{m}")).collect();
        names.sort();
        names
    };
    assert_eq!(copies, expected.iter().map(|n| serde_json::json!(n)).collect::<Vec<_>>(), "{first}");
}

/// A split joined at a proxy (its output written to a copy's mount) sets up its copies'
/// connections together, a bounded number at a time: one after another, a thousand copies'
/// handshakes and requests added up, and the first copies' outputs waited for the joining proxy
/// past its patience. `--stats` says the most connections set up at once (`run`), and the
/// process's peak memory. Counted, not timed.
#[test]
fn a_split_joined_at_a_proxy_sets_up_its_connections_together_and_bounded() {
    const MOUNTS: usize = 24;
    // The runtime's bound (`session::CONNECTING_AT_ONCE`).
    const AT_ONCE: u64 = 16;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut toml = String::new();
    for m in 0..MOUNTS {
        let mount = dir.path().join(format!("m{m:02}"));
        std::fs::create_dir(&mount).expect("mkdir");
        let log: String = (0..40).map(|l| format!("{l} {} m{m}\n", ["INFO", "WARN", "ERROR"][(l + m) % 3])).collect();
        std::fs::write(mount.join("f.log"), log).expect("write");
        toml.push_str(&format!("[[mount]]\nname = \"m{m:02}\"\npath = \"m{m:02}\"\nproxy = \"embedded\"\n"));
    }
    std::fs::write(dir.path().join("posh.toml"), toml).expect("write");
    std::fs::write(dir.path().join("s.sh"), "cat m*/f.log | grep ERROR > m00/errors.txt\n").expect("write");
    let plan = posh_exec(&["--explain", "s.sh"], dir.path());
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("cat @m00"), "the merge is at m00's proxy: {plan}");

    let posh = posh_exec(&["--stats", "stats.json", "s.sh"], dir.path());
    assert!(posh.status.success(), "{posh:?}");
    let errors = dir.path().join("m00/errors.txt");
    let by_posh = std::fs::read_to_string(&errors).expect("posh wrote the output");
    std::fs::remove_file(&errors).expect("rm");
    let bash = common::isolated("bash", dir.path()).arg("s.sh").output().expect("bash runs");
    assert!(bash.status.success(), "{bash:?}");
    assert_eq!(by_posh, std::fs::read_to_string(&errors).expect("bash wrote the output"));

    let stats = std::fs::read_to_string(dir.path().join("stats.json")).expect("stats");
    let record: serde_json::Value = serde_json::from_str(stats.lines().next().expect("a record")).expect("JSON");
    let copies = record["commands"][0]["location"].as_array().map_or(0, Vec::len);
    assert_eq!(copies, MOUNTS, "a copy at each mount: {record}");
    let run = &record["run"];
    let at_once = run["most_connecting_at_once"].as_u64().expect("counted");
    assert!((2..=AT_ONCE).contains(&at_once), "connections set up together, at most {AT_ONCE} at once: {run}");
    assert_eq!(run["connections_open"].as_u64(), Some(MOUNTS as u64), "{run}");
    assert!(run["peak_rss_bytes"].as_u64().is_some_and(|b| b > 1 << 20), "{run}");
    assert!(run["unread_bytes_per_mount_at_most"].as_u64().is_some_and(|b| b > 0), "{run}");
}
