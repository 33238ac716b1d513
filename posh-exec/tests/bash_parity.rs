//! With no mounts configured, posh-exec must behave exactly as bash: same stdout, stderr and exit
//! status, arguments passed through untouched (`-h` and `--version` belong to the script).

use std::process::Output;

mod common;

fn run(program: &str, args: &[&str], dir: &std::path::Path) -> Output {
    common::isolated(program, dir).args(args).output().expect("runs")
}

#[test]
fn scripts_and_commands_behave_as_under_bash() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("script.sh"),
        "printf '%s|' \"$0\" \"$@\"; echo\necho err >&2\nprintf 'b\\na\\n' | sort\nexit 7\n",
    )
    .expect("write");
    let cases: &[&[&str]] = &[
        &["script.sh", "-h", "--version", "a b"],
        &["-c", "echo \"$0:$1\"; false", "name", "-x"],
        &["-c", "set -o pipefail; yes | head -n 2; exit ${PIPESTATUS[0]}"],
        &["missing.sh"],
    ];
    let posh_exec = env!("CARGO_BIN_EXE_posh-exec");
    for args in cases {
        let bash = run("bash", args, dir.path());
        let posh = run(posh_exec, args, dir.path());
        assert_eq!(posh.status.code(), bash.status.code(), "exit status of {args:?}");
        assert_eq!(posh.stdout, bash.stdout, "stdout of {args:?}");
        assert_eq!(posh.stderr, bash.stderr, "stderr of {args:?}");
    }
}

#[test]
fn a_broken_user_annotation_file_is_reported_with_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("mine.posh"), "cat: PARAMS:[(type:input_fil)]\n").expect("write");
    let out = run(env!("CARGO_BIN_EXE_posh-exec"), &["--annotations", "mine.posh", "-c", "echo ok"], dir.path());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("mine.posh:1:20: error[A103]: `input_fil` is not a type"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
