//! The build information `--version` prints (see `posh_cli::VERSION`): the git commit the sources
//! were built from, the target triple and cargo's profile. The commit is `$POSH_BUILD_COMMIT` when
//! set (a build from a source tarball that knows its commit), else `git rev-parse HEAD` of the
//! sources, else `unknown` (no git, or no repository). A build date is left out: it would make
//! every build of the same sources differ.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=POSH_BUILD_COMMIT");
    let dir = PathBuf::from(var("CARGO_MANIFEST_DIR"));
    let commit = match std::env::var("POSH_BUILD_COMMIT") {
        Ok(commit) if !commit.trim().is_empty() => commit.trim().to_owned(),
        _ => git_commit(&dir).unwrap_or_else(|| "unknown".to_owned()),
    };
    println!("cargo::rustc-env=POSH_BUILD_COMMIT={commit}");
    println!("cargo::rustc-env=POSH_BUILD_TARGET={}", var("TARGET"));
    // `debug` or `release` (custom profiles report the one they inherit from).
    println!("cargo::rustc-env=POSH_BUILD_PROFILE={}", var("PROFILE"));
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}

/// HEAD's commit, abbreviated to 12 digits. The files that change when HEAD moves are watched,
/// so that a commit or a checkout builds the version again, and nothing else does.
fn git_commit(dir: &Path) -> Option<String> {
    let commit = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    // A path cargo is told to watch must exist, or it runs this script on every build.
    let watch = |path: &Path| {
        if path.exists() {
            println!("cargo::rerun-if-changed={}", path.display());
        }
    };
    watch(&dir.join(git(dir, &["rev-parse", "--git-path", "HEAD"])?));
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        // A branch packed into packed-refs has no file of its own until its next commit writes
        // one, in the directory watched here.
        let file = dir.join(git(dir, &["rev-parse", "--git-path", &branch])?);
        watch(if file.exists() { &file } else { file.parent()? });
        watch(&dir.join(git(dir, &["rev-parse", "--git-path", "packed-refs"])?));
    }
    Some(commit)
}

/// One line of git's output, or None when git is missing or fails (not a repository, a
/// repository of another owner).
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).stderr(Stdio::null()).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}
