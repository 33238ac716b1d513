//! bash's own word on a script's syntax, as `bash -n` gives it: posh-exec asks it before it
//! rewrites a script, and posh-exec's `--explain` and posh-lsp ask it as the run does, so all
//! three make one plan (posh-core's `shell::parse_as_bash` and `Plan::confirm_with_bash` say
//! when).

use std::io::{Seek as _, Write as _};
use std::process::{Command, Stdio};

/// Whether `bash -n` accepts `text`, read from its standard input (no argument limit) with
/// `BASH_ENV` unset (a startup file is no part of the script); otherwise what bash said, its
/// `bash: ` prefix left out. Accepted means without a word on stderr: bash 5.2 complains of some
/// syntax errors (`[[ a` newline `]]`) and stops there with status 0, and a warning (a
/// here-document ended by the end of the text) is a difference too. A bash that cannot be run
/// says nothing good: the text counts as rejected.
///
/// Its standard input is an unnamed temporary file, not a pipe: bash reads a pipe one byte at a
/// time (so as not to read past what it runs), a system call per byte, which made each check of
/// a 190 KB script cost about 100 ms, in the editor at every keystroke.
pub fn check(text: &str) -> Result<(), String> {
    Check::start(text).verdict()
}

/// A [`check`] under way: bash runs beside the caller, which asks for the verdict when it needs
/// it (the editor plans the script meanwhile). Dropped unasked, bash is killed and reaped.
#[derive(Debug)]
pub struct Check {
    running: Result<std::process::Child, String>,
}

impl Check {
    /// Starts `bash -n` on `text`.
    pub fn start(text: &str) -> Check {
        let cannot = |error: std::io::Error| format!("cannot check the script with bash: {error}");
        let start = || {
            let mut script = tempfile::tempfile().map_err(cannot)?;
            script.write_all(text.as_bytes()).map_err(cannot)?;
            script.rewind().map_err(cannot)?;
            Command::new("bash")
                .arg("-n")
                .env_remove("BASH_ENV")
                .stdin(Stdio::from(script))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|error| format!("cannot start bash to check the script: {error}"))
        };
        Check { running: start() }
    }

    /// What bash said (see [`check`]), waiting for it if need be.
    pub fn verdict(mut self) -> Result<(), String> {
        let child = std::mem::replace(&mut self.running, Err(String::new()))?;
        let output = child.wait_with_output().map_err(|error| format!("cannot check the script with bash: {error}"))?;
        if output.status.success() && output.stderr.is_empty() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = said.lines().map(|line| line.strip_prefix("bash: ").unwrap_or(line)).collect();
        match lines.is_empty() {
            true => Err(format!("bash -n ended with {}", output.status)),
            false => Err(lines.join("; ")),
        }
    }
}

impl Drop for Check {
    fn drop(&mut self) {
        if let Ok(child) = &mut self.running {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn bash_says_what_it_rejects() {
        assert_eq!(check("select x in a; do break; done\nfor ((i=0; i<1; i++)); do :; done\n"), Ok(()));
        let said = check("[[ a\n]]\n").unwrap_err();
        assert!(said.starts_with("line 1: "), "{said}");
        assert!(check(&"echo a\n".repeat(100_000)).is_ok());
        assert!(check(&format!("{}\nif\n", "echo a\n".repeat(100_000))).is_err());
    }

    #[test]
    fn a_check_started_and_dropped_leaves_no_bash_behind() {
        let started = super::Check::start(&"echo a\n".repeat(100_000));
        drop(started);
        assert_eq!(super::Check::start("if true; then :; fi\n").verdict(), Ok(()));
    }
}
