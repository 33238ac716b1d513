//! A script's globs over a mount, expanded by bash next to the data (issue 40): what the client
//! asks (`Request::glob`), the bash script that answers it at the proxy (and at the client when
//! no proxy can), and how its answer reads. bash itself matches, so every glob option it has
//! (dotglob, extglob, globstar, nocaseglob, globasciiranges, globskipdots, GLOBIGNORE, the
//! locale's collation) works as it works at the client; what happens when nothing matches
//! (the word kept, nullglob, failglob) is the client's to decide, so the script always runs
//! under nullglob and reports each pattern's matches with their count.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The shell options (`shopt`) that bear on what a glob matches, besides `nullglob` and
/// `failglob` (which only say what a word that matched nothing becomes). Any other option the
/// client names is refused.
pub const OPTIONS: [&str; 6] = ["dotglob", "extglob", "globstar", "nocaseglob", "globasciiranges", "globskipdots"];

/// The locale variables bash reads for matching and sorting names.
pub const LOCALE: [&str; 4] = ["LC_ALL", "LC_COLLATE", "LC_CTYPE", "LANG"];

/// At most this many patterns in one request.
pub const MAX_PATTERNS: usize = 4096;

/// Run as `bash -c SCRIPT posh-glob OPTIONS GLOBIGNORE PATTERN...` in the directory the
/// patterns are relative to: for each pattern, the number of names it matched, then the names,
/// each ended by a NUL. A pattern is matched as bash matches an unquoted expansion (`$p` with
/// `IFS` empty: no splitting), where a backslash quotes the character after it.
pub const SCRIPT: &str = r#"shopt -u dotglob extglob globstar nocaseglob globasciiranges globskipdots failglob 2>/dev/null
if [ -n "$2" ]; then GLOBIGNORE=$2; fi
shopt -u dotglob
for o in $1; do shopt -s "$o" || exit 2; done
shopt -s nullglob
set +f
IFS=
shift 2
for p; do
  m=($p)
  printf '%s\0' "${#m[@]}" "${m[@]}"
done
"#;

/// What a job of `Request::glob` expands: patterns relative to the request's working directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobRequest {
    pub patterns: Vec<String>,
    /// The [`OPTIONS`] set at the client.
    #[serde(default)]
    pub options: Vec<String>,
    /// The client's `GLOBIGNORE` (empty: unset or empty, which bash treats alike).
    #[serde(default)]
    pub globignore: String,
    /// The [`LOCALE`] variables bash has at the client, those that are set.
    #[serde(default)]
    pub locale: BTreeMap<String, String>,
}

impl GlobRequest {
    /// What a request's glob is checked for before bash runs it: known options and locale
    /// variables, a bounded number of patterns, no NUL anywhere (an argument cannot hold one).
    pub fn check(&self) -> Result<(), String> {
        if self.patterns.is_empty() || self.patterns.len() > MAX_PATTERNS {
            return Err(format!("a glob request of {} patterns (1 to {MAX_PATTERNS})", self.patterns.len()));
        }
        if let Some(option) = self.options.iter().find(|o| !OPTIONS.contains(&o.as_str())) {
            return Err(format!("glob option `{option}` is not one of {}", OPTIONS.join(", ")));
        }
        if let Some(name) = self.locale.keys().find(|n| !LOCALE.contains(&n.as_str())) {
            return Err(format!("`{name}` is not a locale variable a glob reads"));
        }
        let texts = self.patterns.iter().chain(self.locale.values()).chain([&self.globignore]);
        if texts.into_iter().any(|t| t.contains('\0')) {
            return Err("a glob request holding a NUL byte".to_string());
        }
        Ok(())
    }

    /// The argv that runs [`SCRIPT`] for this request.
    pub fn argv(&self) -> Vec<String> {
        let mut argv = vec!["bash".to_string(), "-c".to_string(), SCRIPT.to_string(), "posh-glob".to_string()];
        argv.push(self.options.join(" "));
        argv.push(self.globignore.clone());
        argv.extend(self.patterns.iter().cloned());
        argv
    }
}

/// A job's condition (`Request::expect_globs`): the client planned the job with names it
/// predicted for these patterns from a listing it kept, and the job runs only if bash at the
/// proxy, expanding them in `cwd` (relative to the export root) now, answers exactly those
/// names: the answer [`SCRIPT`] writes hashes to `sha256`. Otherwise the proxy refuses the job
/// ([`crate::protocol::GLOBS_DIFFER`]) and the client asks the names and plans again: the names
/// a job runs with are always bash's, and a right guess saves the round trip of asking first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedGlob {
    #[serde(default)]
    pub cwd: String,
    pub glob: GlobRequest,
    /// The SHA-256 of the expected answer ([`answer_text`]), in lower-case hex.
    pub sha256: String,
}

impl ExpectedGlob {
    /// Expects `answer` (the names of each of `glob`'s patterns) in `cwd`.
    pub fn new(cwd: String, glob: GlobRequest, answer: &[Vec<Vec<u8>>]) -> ExpectedGlob {
        ExpectedGlob { cwd, glob, sha256: digest(&answer_text(answer)) }
    }

    /// Whether [`SCRIPT`]'s `output` is the answer expected.
    pub fn is_met_by(&self, output: &[u8]) -> bool {
        digest(output) == self.sha256
    }
}

/// [`SCRIPT`]'s output for `answer`: what [`read_answer`] reads back.
pub fn answer_text(answer: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let mut text = Vec::new();
    for names in answer {
        text.extend(names.len().to_string().bytes());
        text.push(0);
        for name in names {
            text.extend(name);
            text.push(0);
        }
    }
    text
}

fn digest(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The names each of `patterns` patterns matched, read from [`SCRIPT`]'s output; an error when
/// the output is not that.
pub fn read_answer(output: &[u8], patterns: usize) -> Result<Vec<Vec<Vec<u8>>>, String> {
    let mut fields = output.split(|&b| b == 0);
    let mut answer = Vec::with_capacity(patterns);
    for index in 0..patterns {
        let count = fields
            .next()
            .and_then(|c| std::str::from_utf8(c).ok()?.parse::<usize>().ok())
            .ok_or_else(|| format!("the glob's answer lacks the count of pattern {}", index + 1))?;
        let mut names = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            names.push(fields.next().ok_or("the glob's answer ends early")?.to_vec());
        }
        answer.push(names);
    }
    // The output ends with a NUL, which leaves one empty field.
    match (fields.next(), fields.next()) {
        (Some([]), None) => Ok(answer),
        _ => Err("the glob's answer goes on past its patterns".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_back_in_order() {
        let output = b"2\0a b\0c\nd\x000\x001\0e\0";
        let answer = read_answer(output, 3).unwrap();
        assert_eq!(answer, vec![vec![b"a b".to_vec(), b"c\nd".to_vec()], vec![], vec![b"e".to_vec()]]);
        assert!(read_answer(output, 4).is_err());
        assert!(read_answer(b"1\0a\0extra\0", 1).is_err());
        assert!(read_answer(b"x\0", 1).is_err());
    }

    #[test]
    fn an_expected_answer_is_met_by_that_output_alone() {
        let answer = vec![vec![b"a b".to_vec(), b"c\nd".to_vec()], vec![], vec![b"e".to_vec()]];
        let text = answer_text(&answer);
        assert_eq!(text, b"2\0a b\0c\nd\x000\x001\0e\0");
        assert_eq!(read_answer(&text, 3).unwrap(), answer);
        let request = GlobRequest { patterns: vec!["*".into(); 3], ..GlobRequest::default() };
        let expected = ExpectedGlob::new(String::new(), request, &answer);
        assert!(expected.is_met_by(&text));
        assert!(!expected.is_met_by(b"2\0a b\0c\nd\x000\x000\0"));
    }

    #[test]
    fn requests_are_checked() {
        let request = GlobRequest { patterns: vec!["*.log".into()], ..GlobRequest::default() };
        assert!(request.check().is_ok());
        let bad = GlobRequest { options: vec!["xpg_echo".into()], ..request.clone() };
        assert!(bad.check().unwrap_err().contains("xpg_echo"));
        let bad = GlobRequest { patterns: vec!["a\0b".into()], ..request.clone() };
        assert!(bad.check().is_err());
        assert!(GlobRequest::default().check().is_err());
    }
}
