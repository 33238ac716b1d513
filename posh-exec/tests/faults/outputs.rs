//! Items 4 and 5: output files written through a proxy end as bash leaves them (content, inode,
//! owner, mode, hard links, directories), on a full disk too; and a proxy killed in the middle of
//! a job undoes it at its next start (item 2's share).

use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::fixture::{temporaries, wait_until};
use crate::proxy_process::Proxy;

/// Two copies of the same `data` directory: `posh/data`, exported by a real posh-proxy and
/// mounted by posh-exec, and `bash/data`, where bash runs the same script.
struct Twin {
    proxy: Option<Proxy>,
    /// tmpfs mounts to undo (before the directory goes).
    mounts: Vec<PathBuf>,
    dir: tempfile::TempDir,
}

impl Drop for Twin {
    fn drop(&mut self) {
        self.proxy.take();
        for mount in &self.mounts {
            let _ = Command::new("umount").arg(mount).status();
        }
    }
}

impl Twin {
    /// `tmpfs_size`: each `data` is a tmpfs of that size (a disk that fills up); `fill` writes the
    /// same files into both.
    fn new(tmpfs_size: Option<&str>, fill: impl Fn(&Path)) -> Twin {
        let dir = tempfile::tempdir().unwrap();
        let mut twin = Twin { proxy: None, mounts: Vec::new(), dir };
        for side in ["posh", "bash"] {
            let data = twin.root().join(side).join("data");
            std::fs::create_dir_all(&data).unwrap();
            if let Some(size) = tmpfs_size {
                let mounted = Command::new("mount")
                    .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"])
                    .arg(&data)
                    .status()
                    .unwrap();
                assert!(mounted.success(), "mounting a tmpfs needs root");
                twin.mounts.push(data.clone());
            }
            fill(&data);
            // Both sides the user's whom the proxy becomes (when the tests run as root), as
            // bash runs as that user too (`command`): the same owners and rights on both.
            if crate::proxy_process::becomes_user(&[], &[]) {
                crate::proxy_process::hand_over(&data);
            }
        }
        let fingerprint = twin.posh(&["--print-identity"]).stdout;
        let authorized = twin.root().join("authorized");
        std::fs::write(&authorized, fingerprint).unwrap();
        twin.start_proxy();
        twin
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn data(&self, side: &str) -> PathBuf {
        self.root().join(side).join("data")
    }

    fn start_proxy(&mut self) -> &Proxy {
        let proxy = self.another_proxy();
        let config = format!("[[mount]]\nname = \"data\"\npath = \"data\"\nproxy = \"{}\"\n", proxy.addr);
        std::fs::write(self.root().join("posh/posh.toml"), config).unwrap();
        self.proxy.insert(proxy)
    }

    /// A proxy on the same export and state directory.
    fn another_proxy(&self) -> Proxy {
        let authorized = self.root().join("authorized");
        Proxy::start(
            &self.data("posh"),
            &self.root().join("state"),
            &["--authorized-clients", authorized.to_str().unwrap()],
        )
    }

    /// `program` in `side` (`posh` or `bash`), whose client identity lives there too. bash runs
    /// as the user the proxy runs its jobs as, where the tests run as root: what bash would do
    /// is what that user's commands would.
    fn command(&self, program: &str, side: &str) -> Command {
        let dir = self.root().join(side);
        let mut command = match program == "bash" && crate::proxy_process::becomes_user(&[], &[]) {
            true => {
                let mut command = crate::common::isolated("setpriv", &dir);
                let user = crate::proxy_process::USER_ID;
                command.args([&format!("--reuid={user}"), &format!("--regid={user}"), "--clear-groups", "bash"]);
                command
            }
            false => crate::common::isolated(program, &dir),
        };
        command.stdin(Stdio::null());
        command
    }

    fn posh(&self, args: &[&str]) -> Output {
        self.command(env!("CARGO_BIN_EXE_posh-exec"), "posh").args(args).output().unwrap()
    }

    /// Runs `script` under bash in `bash/` and under posh-exec in `posh/`; asserts the same
    /// output and status, and that every pipeline ran at the proxy.
    fn run_both(&self, script: &str) -> String {
        let file = self.root().join("s.sh");
        std::fs::write(&file, script).unwrap();
        let bash = self.command("bash", "bash").arg(&file).output().unwrap();
        let stats = self.root().join("stats.json");
        let posh = self.posh(&["--stats", stats.to_str().unwrap(), file.to_str().unwrap()]);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert_eq!(text(&posh.stderr), text(&bash.stderr));
        assert_eq!(text(&posh.stdout), text(&bash.stdout));
        assert_eq!(posh.status.code(), bash.status.code());
        for line in std::fs::read_to_string(&stats).unwrap().lines() {
            let pipeline: serde_json::Value = serde_json::from_str(line).unwrap();
            for command in pipeline["commands"].as_array().unwrap() {
                assert_eq!(command["location"], "data", "ran elsewhere than at the proxy: {line}");
            }
        }
        text(&bash.stdout)
    }

    /// Both sides' `data` trees, described alike, must be equal; no temporary may be left.
    fn assert_same_trees(&self) {
        let posh = tree(&self.data("posh"));
        assert!(!posh.contains(".posh-"), "a temporary was left behind:\n{posh}");
        assert_eq!(posh, tree(&self.data("bash")));
    }
}

/// Every entry under `dir`: type, path, mode, owner, group, links, and a file's bytes.
fn tree(dir: &Path) -> String {
    let mut entries: Vec<PathBuf> = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(next) = todo.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.is_symlink() {
                todo.push(path.clone());
            }
            entries.push(path);
        }
    }
    entries.sort();
    let mut out = String::new();
    for path in entries {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let kind = if meta.is_dir() {
            "d"
        } else if meta.is_file() {
            "f"
        } else {
            "o"
        };
        let name = path.strip_prefix(dir).unwrap().display();
        let mode = meta.permissions().mode() & 0o7777;
        out += &format!("{kind} {name} {mode:o} {}:{} links {}", meta.uid(), meta.gid(), meta.nlink());
        if meta.is_file() {
            let mut attribute = [0u8; 64];
            match rustix::fs::getxattr(&path, "user.posh", &mut attribute[..]) {
                Ok(n) => out += &format!(" user.posh={:?}", String::from_utf8_lossy(&attribute[..n])),
                Err(_) => out += " no user.posh",
            }
            let bytes = std::fs::read(&path).unwrap();
            out += &format!(" {} bytes {:?}", bytes.len(), String::from_utf8_lossy(&bytes[..bytes.len().min(40)]));
            out +=
                &format!(" .. {:x}", bytes.iter().fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(*b))));
        }
        out.push('\n');
    }
    out
}

fn lines(count: usize, what: &str) -> String {
    (0..count).map(|i| format!("{} {what} line\n", (i * 7919) % count)).collect()
}

/// `path` holds `expected` (a mismatch is reported by length and beginning, not in full).
fn assert_content(path: &Path, expected: &str) {
    let found = std::fs::read_to_string(path).unwrap();
    let start = |t: &str| t.chars().take(60).collect::<String>();
    assert!(
        found == expected,
        "{}: {} bytes starting {:?}, expected {} bytes starting {:?}",
        path.display(),
        found.len(),
        start(&found),
        expected.len(),
        start(expected)
    );
}

fn inode(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

#[test]
fn on_a_nearly_full_disk_rewrites_and_appends_succeed_as_under_bash() {
    // A 1 MiB filesystem holding 840 KiB: no room for a second copy of old.txt, nor for
    // new.txt beside it.
    let twin = Twin::new(Some("1m"), |data| {
        std::fs::write(data.join("old.txt"), &lines(60_000, "old").as_bytes()[..500 * 1024]).unwrap();
        std::fs::write(data.join("new.txt"), &lines(40_000, "new").as_bytes()[..300 * 1024]).unwrap();
        std::fs::write(data.join("small.txt"), &lines(5_000, "small").as_bytes()[..40 * 1024]).unwrap();
    });
    let inodes = inode(&twin.data("posh").join("old.txt"));
    let out = twin.run_both(
        "cat data/new.txt > data/old.txt; echo \"rewrite $?\"\n\
         cat data/new.txt >> data/old.txt; echo \"append $?\"\n\
         cat data/small.txt | tee -a data/old.txt > /dev/null; echo \"tee -a $?\"\n\
         sort -o data/old.txt data/old.txt; echo \"sort -o $?\"\n",
    );
    assert_eq!(out, "rewrite 0\nappend 0\ntee -a 0\nsort -o 0\n");
    twin.assert_same_trees();
    assert_eq!(inode(&twin.data("posh").join("old.txt")), inodes);
}

#[test]
fn a_writer_that_runs_out_of_space_does_not_replace_the_file() {
    // Room for a staged copy of the small old file, not for all of new.txt beside it.
    let twin = Twin::new(Some("1m"), |data| {
        std::fs::write(data.join("old.txt"), "the old content\n").unwrap();
        std::fs::write(data.join("new.txt"), &lines(60_000, "new").as_bytes()[..560 * 1024]).unwrap();
    });
    let file = twin.root().join("s.sh");
    std::fs::write(&file, "cat data/new.txt > data/old.txt; echo \"status $?\"\n").unwrap();
    let bash = twin.command("bash", "bash").arg(&file).output().unwrap();
    let posh = twin.posh(&[file.to_str().unwrap()]);
    // The same failure as under bash (which leaves a cut file: the rule here keeps the old one).
    assert_eq!(String::from_utf8_lossy(&bash.stdout), "status 1\n");
    assert_eq!(String::from_utf8_lossy(&posh.stdout), "status 1\n");
    assert_eq!(String::from_utf8_lossy(&posh.stderr), String::from_utf8_lossy(&bash.stderr));
    let data = twin.data("posh");
    assert_content(&data.join("old.txt"), "the old content\n");
    assert!(!tree(&data).contains(".posh-"));
}

#[test]
fn a_file_the_job_reads_is_emptied_before_it_reads_it_as_under_bash() {
    let twin = Twin::new(None, |data| {
        std::fs::write(data.join("f"), lines(500, "f")).unwrap();
        std::fs::write(data.join("g"), lines(500, "g")).unwrap();
        std::fs::hard_link(data.join("g"), data.join("g.link")).unwrap();
    });
    twin.run_both("sort data/f > data/f; echo \"sort $?\"\ngrep line data/g.link > data/g; echo \"grep $?\"\n");
    twin.assert_same_trees();
}

/// Files with a second hard link, another owner (in the group of the user the proxy runs its
/// jobs as, which may write them), mode 0660 and an extended attribute, as bash would find them.
fn linked_files(data: &Path) {
    std::fs::write(data.join("in.txt"), lines(500, "in")).unwrap();
    for name in ["redirected", "appended", "teed", "sorted", "copied"] {
        let file = data.join(name);
        std::fs::write(&file, "old content\n").unwrap();
        std::fs::hard_link(&file, data.join(format!("{name}.link"))).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o660)).unwrap();
        std::os::unix::fs::chown(&file, Some(1234), Some(crate::proxy_process::USER_ID)).unwrap();
        rustix::fs::setxattr(&file, "user.posh", b"kept", rustix::fs::XattrFlags::empty()).unwrap();
    }
}

#[test]
fn replaced_files_keep_their_inode_owner_mode_links_and_attributes_as_under_bash() {
    let twin = Twin::new(None, linked_files);
    let names = ["redirected", "appended", "teed", "sorted", "copied"];
    let before: Vec<u64> = names.iter().map(|n| inode(&twin.data("posh").join(n))).collect();
    twin.run_both(
        "grep 1 data/in.txt > data/redirected\n\
         cat data/in.txt >> data/appended\n\
         cat data/in.txt | tee data/teed > /dev/null\n\
         sort -o data/sorted data/in.txt\n\
         cp data/in.txt data/copied\n",
    );
    twin.assert_same_trees();
    let after: Vec<u64> = names.iter().map(|n| inode(&twin.data("posh").join(n))).collect();
    assert_eq!(after, before, "inodes of {names:?}");
}

#[test]
fn output_words_that_are_or_become_directories_work_as_under_bash() {
    let twin = Twin::new(None, |data| {
        std::fs::create_dir_all(data.join("src/deeper")).unwrap();
        std::fs::write(data.join("src/a.txt"), lines(300, "a")).unwrap();
        std::fs::write(data.join("src/deeper/b.txt"), lines(200, "b")).unwrap();
        std::fs::create_dir(data.join("existing")).unwrap();
        // The same bytes on both sides: no time or order of the moment in the archive.
        let deterministic = ["--mtime=@0", "--sort=name", "--owner=0", "--group=0", "--numeric-owner"];
        let tar =
            Command::new("tar").current_dir(data).args(deterministic).args(["-cf", "src.tar", "src"]).status().unwrap();
        assert!(tar.success());
    });
    twin.run_both(
        "cp -r data/src data/copy; echo \"new $?\"\n\
         cp -r data/src data/existing; echo \"into $?\"\n\
         tar -xf data/src.tar -C data/existing; echo \"tar $?\"\n\
         tar -xf data/src.tar -C data/missing; echo \"missing $?\"\n",
    );
    twin.assert_same_trees();
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Opens the FIFO for writing once its reader (the job) has opened it, within a bound.
fn fifo_writer(path: &Path) -> std::fs::File {
    let mut writer = None;
    wait_until(Duration::from_secs(30), "the job to open its FIFO", || {
        // Without a reader, a non-blocking open fails (ENXIO) instead of hanging.
        writer =
            OpenOptions::new().write(true).custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32).open(path).ok();
        writer.is_some()
    });
    writer.unwrap()
}

/// A posh-exec run, killed when dropped (a failing test leaves no process behind).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts posh-exec on `script` in `posh/`, its output discarded.
fn spawn_posh(twin: &Twin, name: &str, script: &str) -> Running {
    let file = twin.root().join(name);
    std::fs::write(&file, script).unwrap();
    // A killed run cannot remove its runtime directory: it goes with the test's.
    let tmp = twin.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let child = twin
        .command(env!("CARGO_BIN_EXE_posh-exec"), "posh")
        .env("TMPDIR", tmp)
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Running(child)
}

#[test]
fn a_proxy_killed_mid_job_is_undone_at_its_next_start_and_a_live_one_is_left_alone() {
    let original_log = lines(2_000, "log");
    let mut twin = Twin::new(None, |data| {
        std::fs::write(data.join("big.txt"), lines(40_000, "big")).unwrap();
        std::fs::write(data.join("log"), &original_log).unwrap();
        std::fs::write(data.join("copy.txt"), "old copy\n").unwrap();
        std::fs::write(data.join("out.txt"), "old out\n").unwrap();
        mkfifo(&data.join("fifo1"));
        mkfifo(&data.join("fifo2"));
    });
    let data = twin.data("posh");
    let big = std::fs::metadata(data.join("big.txt")).unwrap().len();
    // Each job blocks on its FIFO, after a file that makes it worth running at the proxy.
    let appender = spawn_posh(&twin, "a.sh", "cat data/big.txt data/fifo1 >> data/log\n");
    let rewriter = spawn_posh(&twin, "b.sh", "cat data/big.txt data/fifo2 | tee data/copy.txt > data/out.txt\n");
    let mut fifo1 = fifo_writer(&data.join("fifo1"));
    let mut fifo2 = fifo_writer(&data.join("fifo2"));
    std::io::Write::write_all(&mut fifo1, b"appended\n").unwrap();
    std::io::Write::write_all(&mut fifo2, b"half\n").unwrap();
    let log_len = || std::fs::metadata(data.join("log")).unwrap().len();
    let grown = original_log.len() as u64 + big + 9;
    wait_until(Duration::from_secs(30), "the append", || log_len() == grown);
    // Once the commands wait for more input, the orphans they become write nothing more.
    wait_until(Duration::from_secs(30), "tee", || std::fs::metadata(data.join("copy.txt")).unwrap().len() == big + 5);

    // A second proxy on the same state directory starts while the first one works: it must not
    // undo the live proxy's job.
    let second = twin.another_proxy();
    assert_eq!(log_len(), grown, "a starting proxy cut a live proxy's append");
    drop(second);

    twin.proxy.as_ref().unwrap().signal("-KILL");
    twin.proxy.take();
    // The clients would notice only at their idle timeout; the proxy's state is what matters.
    drop((appender, rewriter, fifo1, fifo2));
    assert_eq!(log_len(), grown, "the append was made in place");

    twin.start_proxy();
    assert_content(&data.join("log"), &original_log);
    assert_content(&data.join("copy.txt"), "old copy\n");
    assert_content(&data.join("out.txt"), "old out\n");
    let left = temporaries(&data);
    assert!(left.is_empty(), "temporaries left behind: {left:?}");
}

#[test]
fn a_run_killed_mid_job_is_undone_by_the_next_run_on_an_embedded_mount() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let original_log = lines(2_000, "log");
    std::fs::write(data.join("big.txt"), lines(40_000, "big")).unwrap();
    std::fs::write(data.join("log"), &original_log).unwrap();
    std::fs::write(data.join("copy.txt"), "old copy\n").unwrap();
    mkfifo(&data.join("fifo1"));
    mkfifo(&data.join("fifo2"));
    std::fs::write(dir.path().join("posh.toml"), "[[mount]]\nname = \"data\"\npath = \"data\"\nproxy = \"embedded\"\n")
        .unwrap();
    let posh = |name: &str, script: &str| {
        std::fs::write(dir.path().join(name), script).unwrap();
        let mut command = crate::common::isolated(env!("CARGO_BIN_EXE_posh-exec"), dir.path());
        // A killed run cannot remove its private directory: the next run's embedded proxy does.
        command.env("TMPDIR", dir.path());
        command.arg("--stats").arg(dir.path().join("stats.json")).arg(name);
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        command
    };
    // The client identity first: two runs making it at once race (issue 10, item 7).
    let identity =
        crate::common::isolated(env!("CARGO_BIN_EXE_posh-exec"), dir.path()).arg("--print-identity").output();
    assert!(identity.unwrap().status.success());
    let appender = Running(posh("a.sh", "cat data/big.txt data/fifo1 >> data/log\n").spawn().unwrap());
    let rewriter =
        Running(posh("b.sh", "cat data/big.txt data/fifo2 | tee data/copy.txt > data/out.txt\n").spawn().unwrap());
    let mut fifo1 = fifo_writer(&data.join("fifo1"));
    let fifo2 = fifo_writer(&data.join("fifo2"));
    std::io::Write::write_all(&mut fifo1, b"appended\n").unwrap();
    let log_len = || std::fs::metadata(data.join("log")).unwrap().len();
    let big = std::fs::metadata(data.join("big.txt")).unwrap().len();
    let grown = original_log.len() as u64 + big + 9;
    wait_until(Duration::from_secs(30), "the append", || log_len() == grown);
    // Once the commands wait for more input, the orphans they become write nothing more.
    wait_until(Duration::from_secs(30), "tee", || std::fs::metadata(data.join("copy.txt")).unwrap().len() == big);
    // posh-exec killed: its embedded proxy dies with it, mid-job.
    drop((appender, rewriter, fifo1, fifo2));
    assert_eq!(log_len(), grown, "the append was made in place");

    // The next run that reaches the mount settles what the killed ones left.
    let stats = dir.path().join("stats.json");
    assert!(posh("c.sh", "grep -c line data/big.txt\n").status().unwrap().success());
    let stats = std::fs::read_to_string(&stats).unwrap();
    assert!(stats.contains("\"location\":\"data\""), "the last run did not reach the mount: {stats}");
    assert_content(&data.join("log"), &original_log);
    assert_content(&data.join("copy.txt"), "old copy\n");
    assert!(!data.join("out.txt").exists(), "out.txt did not exist before the killed run");
    assert!(!tree(&data).contains(".posh-"), "{}", tree(&data));
    let names = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
    let left: Vec<String> = names.filter(|n| n.starts_with("posh-run-")).collect();
    assert_eq!(left, Vec::<String>::new(), "the killed runs' directories are removed once settled");
    assert!(!dir.path().join("posh/journal").exists(), "the journal is not in the state directory");
}

/// The records of every journal in the proxy's state directory, one per line.
fn journal_records(twin: &Twin) -> String {
    let dir = twin.root().join("state/journal");
    std::fs::read_dir(&dir).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect()
}

#[test]
fn tee_a_appends_in_place_as_under_bash_and_copies_nothing_aside() {
    let original_log = lines(2_000, "log");
    let twin = Twin::new(None, |data| {
        std::fs::write(data.join("log.txt"), &original_log).unwrap();
        std::fs::write(data.join("big.txt"), lines(40_000, "big")).unwrap();
        mkfifo(&data.join("fifo"));
    });
    let data = twin.data("posh");
    let log_inode = inode(&data.join("log.txt"));
    // Input from the export, so that the pipeline runs at the proxy (`seq 3 | tee` runs at the
    // client, the cheapest place for three lines).
    let out = twin.run_both(
        "cat data/big.txt | tee -a data/log.txt > /dev/null; echo \"tee -a $?\"\n\
         cat data/big.txt | tee data/new.txt > /dev/null; echo \"tee $?\"\n",
    );
    assert_eq!(out, "tee -a 0\ntee 0\n");
    twin.assert_same_trees();
    assert_eq!(inode(&data.join("log.txt")), log_inode);

    // Caught in the middle of a job: the log is written down as appended, and no copy of it
    // exists beside it.
    let before = std::fs::metadata(data.join("log.txt")).unwrap().len();
    let big = std::fs::metadata(data.join("big.txt")).unwrap().len();
    let mut running = spawn_posh(&twin, "a.sh", "cat data/big.txt data/fifo | tee -a data/log.txt > /dev/null\n");
    let mut fifo = fifo_writer(&data.join("fifo"));
    let log_len = || std::fs::metadata(data.join("log.txt")).unwrap().len();
    wait_until(Duration::from_secs(30), "tee -a", || log_len() == before + big);
    let records = journal_records(&twin);
    let log_path = std::fs::canonicalize(data.join("log.txt")).unwrap();
    // A record names its root and holds paths relative to it.
    let names_log = |record: &&str| {
        let record: serde_json::Value = serde_json::from_str(record).unwrap();
        let root = std::path::Path::new(record["at"]["root"].as_str().unwrap_or(""));
        let named = ["path", "target", "temp", "backup", "kept"].iter().filter_map(|key| record[*key].as_str());
        named.map(|path| root.join(path)).any(|path| path == log_path)
    };
    let about_log: Vec<&str> = records.lines().filter(names_log).collect();
    assert!(
        about_log.len() == 1 && about_log[0].contains("\"op\":\"appended\""),
        "the journal does not record one append of the log: {records}"
    );
    let beside = temporaries(&data);
    assert!(beside.is_empty(), "copied aside: {beside:?}");
    std::io::Write::write_all(&mut fifo, b"last\n").unwrap();
    drop(fifo);
    wait_until(Duration::from_secs(30), "the job to end", || running.0.try_wait().unwrap().is_some());
    assert!(running.0.wait().unwrap().success());
    let mut expected = std::fs::read_to_string(twin.data("bash").join("log.txt")).unwrap();
    expected += &std::fs::read_to_string(data.join("big.txt")).unwrap();
    expected += "last\n";
    assert_content(&data.join("log.txt"), &expected);
    assert_eq!(inode(&data.join("log.txt")), log_inode);
}
