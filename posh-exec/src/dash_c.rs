//! `posh-exec -c COMMANDS [NAME [ARGS...]]` read as `bash -c` reads it: the command string is the
//! first word after `-c` (after one `--`, which ends the options), and every word after it is
//! `$0` and the positional parameters, `--` and words that look like options included. clap alone
//! would take a `--` after the command string as its own separator, and posh-exec's options there
//! as options.

use std::ffi::{OsStr, OsString};

/// A command line cut where `-c`'s command string ends.
#[derive(Debug, PartialEq, Eq)]
pub struct Split {
    /// The words for clap: posh-exec's options, ending with `-c COMMANDS` when there is one.
    pub options: Vec<OsString>,
    /// With `-c`: `NAME` and the arguments, word for word.
    pub after_command: Option<Vec<OsString>>,
    /// Whether a `--` came between `-c` and the command string (bash, given the command string,
    /// must get it too: it ends bash's options).
    pub dashes: bool,
}

/// Cuts `raw` (the program's name first) after `-c`'s command string. Options before `-c` are
/// posh-exec's own; `takes_value` tells which long options (`--stats`, without the dashes) take
/// the next word as their value, so that a value spelled `-c` is not taken for the flag. A word
/// that is not an option (the script) or `--` ends the options: no `-c` after it counts.
pub fn split(raw: Vec<OsString>, takes_value: impl Fn(&str) -> bool) -> Split {
    let mut at = 1;
    while let Some(word) = raw.get(at) {
        let text = word.to_string_lossy();
        if text == "-c" {
            // `-c -- COMMANDS`: the `--` ends the options, as bash's does.
            let dashes = raw.get(at + 1).is_some_and(|w| w == OsStr::new("--"));
            let command_at = at + 1 + usize::from(dashes);
            if command_at >= raw.len() {
                // No command string: clap says so (`-c` requires a value), status 2 as bash's.
                return Split { options: raw[..=at].to_vec(), after_command: None, dashes };
            }
            let mut options = raw[..=at].to_vec();
            options.push(raw[command_at].clone());
            return Split { options, after_command: Some(raw[command_at + 1..].to_vec()), dashes };
        }
        if text == "--" || !text.starts_with('-') || text == "-" {
            break;
        }
        let long_with_value = text.strip_prefix("--").is_some_and(|name| !name.contains('=') && takes_value(name));
        at += if long_with_value { 2 } else { 1 };
    }
    Split { options: raw, after_command: None, dashes: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<OsString> {
        text.split(' ').map(OsString::from).collect()
    }

    fn cut(text: &str) -> (String, Option<String>) {
        let split = split(words(text), |name| ["stats", "config"].contains(&name));
        let join = |w: &[OsString]| w.iter().map(|w| w.to_string_lossy()).collect::<Vec<_>>().join(" ");
        (join(&split.options), split.after_command.map(|rest| join(&rest)))
    }

    #[test]
    fn everything_after_the_command_string_is_name_and_arguments() {
        assert_eq!(cut("p -c CMD -- a"), ("p -c CMD".into(), Some("-- a".into())));
        assert_eq!(cut("p -c -- CMD x y"), ("p -c CMD".into(), Some("x y".into())));
        assert_eq!(cut("p -c CMD --stats f -x"), ("p -c CMD".into(), Some("--stats f -x".into())));
        assert_eq!(cut("p --stats -c -c CMD"), ("p --stats -c -c CMD".into(), Some("".into())));
        assert_eq!(cut("p --stats=s --explain -c CMD n"), ("p --stats=s --explain -c CMD".into(), Some("n".into())));
    }

    #[test]
    fn a_missing_command_string_and_a_script_are_clap_s() {
        assert_eq!(cut("p -c"), ("p -c".into(), None));
        assert_eq!(cut("p -c --"), ("p -c".into(), None));
        assert_eq!(cut("p script.sh -c x"), ("p script.sh -c x".into(), None));
        assert_eq!(cut("p -- -c x"), ("p -- -c x".into(), None));
    }
}
