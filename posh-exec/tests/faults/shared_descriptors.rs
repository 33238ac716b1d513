//! Item 1: however the script's stdout and stderr share a destination, the bytes are bash's.
//! Remote jobs' output is relayed by threads of posh-exec's; into one open file they once wrote
//! over each other (splice(2) does not lock the shared offset), and a job's two streams came
//! back in whatever order the proxy read its two pipes.

use crate::fixture::{Site, posh_exec};

/// Remote jobs that write both streams: grep and wc each report a missing file on stderr and
/// their findings on stdout, in an order fixed by the programs (stdout is flushed at exit).
fn site() -> Site {
    let site = Site::new(&[]);
    let words: String =
        ["apple", "pear", "apple pie", "plum"].iter().cycle().take(200).map(|w| format!("{w}\n")).collect();
    site.write("data/words.txt", words);
    // The loop goes to the runtime whole, its iterations as one request to the proxy; `each.sh`
    // is the same with a builtin in its body, which keeps the loop with bash and hands the
    // pipelines over one by one.
    let body = "  grep -c apple data/words.txt data/missing.txt\n  wc -l data/words.txt data/nosuch.txt\n";
    let after = "grep -n 'apple pie' data/words.txt data/missing.txt > inner 2> inner\ncat inner\n";
    site.write("loop.sh", format!("for i in $(seq 1 100); do\n{body}done\n{after}"));
    site.write("each.sh", format!("for i in $(seq 1 100); do\n{body}  :\ndone\n{after}"));
    // Each command's stdout comes before its error here, and nothing after it: with two open
    // file descriptions the proxy's two pipes are all that carries the order.
    site.write(
        "twice.sh",
        "for i in $(seq 1 100); do\n  grep -c apple data/words.txt data/missing.txt\ndone\n\
         grep -n 'apple pie' data/words.txt data/missing.txt > inner 2> inner\ncat inner\n",
    );
    site
}

/// Runs `line` (with `$SHELL` the shell under test) under bash and posh-exec, each after
/// `reset`, and returns what each left in `files` plus the line's own stdout.
fn compare(site: &Site, line: &str, files: &[&str]) {
    compare_one(site, line, files);
    if line.contains("loop.sh") {
        compare_one(site, &line.replace("loop.sh", "each.sh"), files);
    }
}

fn compare_one(site: &Site, line: &str, files: &[&str]) {
    let run = |shell: &str| {
        for file in files {
            let _ = std::fs::remove_file(site.path(file));
        }
        let _ = std::fs::remove_file(site.path("inner"));
        let out = site.shell_line(shell, line);
        assert!(out.status.success() || !out.stderr.is_empty(), "{line} under {shell}: {out:?}");
        let mut seen = vec![("(stdout)".to_string(), out.stdout)];
        for file in files {
            seen.push((file.to_string(), std::fs::read(site.path(file)).unwrap_or_default()));
        }
        seen
    };
    let bash = run("bash");
    let jobs_before = site.proxy_log().matches("job ended").count();
    let posh = run(posh_exec());
    let jobs = site.proxy_log().matches("job ended").count() - jobs_before;
    assert!(jobs >= 100, "`{line}` ran only {jobs} jobs at the proxy: the test tests nothing");
    for ((name, b), (_, p)) in bash.iter().zip(&posh) {
        assert!(b.len() > 1000 || name == "(stdout)", "{name}: bash wrote only {} bytes", b.len());
        assert!(
            b == p,
            "`{line}`: {name} differs ({} bytes under bash, {} under posh-exec)\nbash:\n{}\nposh-exec:\n{}",
            b.len(),
            p.len(),
            String::from_utf8_lossy(b),
            String::from_utf8_lossy(p)
        );
    }
}

#[test]
fn stdout_and_stderr_into_one_file() {
    compare(&site(), r#"$SHELL loop.sh > log 2>&1"#, &["log"]);
}

#[test]
fn both_streams_with_ampersand_redirect() {
    compare(&site(), r#"$SHELL loop.sh &> log"#, &["log"]);
}

#[test]
fn two_runs_appending_to_one_log() {
    compare(&site(), r#"$SHELL loop.sh >> log 2>&1; $SHELL loop.sh >> log 2>> log"#, &["log"]);
}

#[test]
fn one_file_opened_twice() {
    // Two open file descriptions, two offsets: under bash the streams overwrite each other.
    compare(&site(), r#"$SHELL twice.sh > log 2> log"#, &["log"]);
}

#[test]
fn both_streams_into_one_pipe() {
    compare(&site(), r#"$SHELL loop.sh 2>&1 | cat > log"#, &["log"]);
}

#[test]
fn both_streams_on_a_terminal() {
    // `script` gives the run a pseudo-terminal as stdin, stdout and stderr and copies the
    // terminal's output to its own stdout. That copy holds what is drawn on the terminal too:
    // the progress line, when remote work lasts over a second (a loaded machine), is turned off
    // with TERM=dumb (tests/progress.rs compares the screen with it).
    compare(&site(), r#"TERM=dumb script -qec "$SHELL loop.sh" /dev/null > log"#, &["log"]);
}
