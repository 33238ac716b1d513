//! bash's own word on a script's syntax, as `bash -n` gives it: posh-exec asks it before it
//! rewrites a script, and posh-exec's `--explain` and posh-lsp ask it as the run does, so all
//! three make one plan (posh-core's `shell::parse_as_bash` and `Plan::confirm_with_bash` say
//! when).

use std::io::Write as _;
use std::process::{Command, Stdio};

/// Whether `bash -n` accepts `text`, read from its standard input (no argument limit) with
/// `BASH_ENV` unset (a startup file is no part of the script); otherwise what bash said, its
/// `bash: ` prefix left out. Accepted means without a word on stderr: bash 5.2 complains of some
/// syntax errors (`[[ a` newline `]]`) and stops there with status 0, and a warning (a
/// here-document ended by the end of the text) is a difference too. A bash that cannot be run
/// says nothing good: the text counts as rejected.
pub fn check(text: &str) -> Result<(), String> {
    let child = Command::new("bash")
        .arg("-n")
        .env_remove("BASH_ENV")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = child.map_err(|error| format!("cannot start bash to check the script: {error}"))?;
    let mut stdin = child.stdin.take();
    let output = std::thread::scope(|scope| {
        // Written beside the read of stderr: bash may stop reading at its first error, and a
        // long complaint must not wait for the rest of the text.
        scope.spawn(|| {
            if let Some(stdin) = stdin.as_mut() {
                let _ = stdin.write_all(text.as_bytes());
            }
            drop(stdin.take());
        });
        child.wait_with_output()
    });
    let output = output.map_err(|error| format!("cannot check the script with bash: {error}"))?;
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
}
