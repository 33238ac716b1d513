//! What the planner can know of a word before the script runs: a literal, or a glob expanded
//! against the file system (as bash would, sorted in byte order as under `LC_ALL=C`; a glob
//! that matches nothing stays as written). Anything else (`$x`, `$(...)`, `{a,b}`, `~`) only
//! the shell knows.

use std::path::{Path, PathBuf};

use crate::fs::{FileKind, FileSystem};
use crate::shell::Word;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expanded {
    Words(Vec<String>),
    /// Only the shell can tell; carries the word as written.
    Unknown(String),
}

pub fn expand_word(word: &Word, fs: &dyn FileSystem, cwd: &Path) -> Expanded {
    if let Some(literal) = &word.literal {
        return Expanded::Words(vec![literal.to_string()]);
    }
    if !word.glob {
        return Expanded::Unknown(word.raw.to_string());
    }
    match Pattern::parse(&word.raw) {
        Some(pattern) => {
            let matches = pattern.expand(fs, cwd);
            if matches.is_empty() { Expanded::Words(vec![pattern.literal_text()]) } else { Expanded::Words(matches) }
        }
        None => Expanded::Unknown(word.raw.to_string()),
    }
}

/// The directory a glob word lists first (where its first pattern component is), if it is a
/// glob: listed ahead, with those of the other words, so that a networked file system lists them
/// all at once.
pub(crate) fn first_listing(word: &Word, cwd: &Path) -> Option<PathBuf> {
    if word.literal.is_some() || !word.glob {
        return None;
    }
    let pattern = Pattern::parse(&word.raw)?;
    let literal = |c: &Vec<Piece>| c.iter().all(|p| matches!(p, Piece::Char(_)));
    let mut dir = if pattern.absolute { PathBuf::from("/") } else { cwd.to_path_buf() };
    for component in pattern.components.iter().take_while(|c| literal(c)) {
        dir.push(component.iter().map(|p| if let Piece::Char(c) = p { *c } else { '?' }).collect::<String>());
    }
    Some(dir)
}

/// One piece of a glob pattern (also of `${X#...}` and its kin, see `values`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    Char(char),
    /// `*`
    Any,
    /// `?`
    One,
    /// `[...]`: the raw class text between the brackets.
    Class(String),
}

/// A glob word, split at `/` into components.
#[derive(Debug)]
struct Pattern {
    absolute: bool,
    components: Vec<Vec<Piece>>,
}

impl Pattern {
    /// Quote-aware: quoted glob characters are literal. `None` for any expansion but globbing.
    fn parse(raw: &str) -> Option<Pattern> {
        let mut components = vec![Vec::new()];
        let mut chars = raw.chars().peekable();
        let mut quote: Option<char> = None;
        while let Some(c) = chars.next() {
            let current = components.last_mut().expect("never empty");
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some('"'), '$' | '`') => return None,
                (Some('"'), '\\') => match chars.next() {
                    Some(n @ ('$' | '`' | '"' | '\\')) => current.push(Piece::Char(n)),
                    Some(n) => {
                        current.push(Piece::Char('\\'));
                        current.push(Piece::Char(n));
                    }
                    None => return None,
                },
                (Some(_), '/') | (None, '/') => components.push(Vec::new()),
                (Some(_), c) => current.push(Piece::Char(c)),
                (None, '\'' | '"') => quote = Some(c),
                (None, '\\') => current.push(Piece::Char(chars.next()?)),
                (None, '$' | '`' | '{' | '~') => return None,
                (None, '*') => current.push(Piece::Any),
                (None, '?') => current.push(Piece::One),
                (None, '[') => {
                    let mut class = String::new();
                    let mut closed = false;
                    for n in chars.by_ref() {
                        if n == ']' && !class.is_empty() && class != "!" && class != "^" {
                            closed = true;
                            break;
                        }
                        class.push(n);
                    }
                    if !closed {
                        return None;
                    }
                    current.push(Piece::Class(class));
                }
                (None, c) => current.push(Piece::Char(c)),
            }
        }
        if quote.is_some() {
            return None;
        }
        // `/x/*`, and `"/x"/*` or `'/'x/*` alike: the first component is empty.
        let absolute = components.len() > 1 && components[0].is_empty();
        if absolute {
            components.remove(0);
        }
        Some(Pattern { absolute, components })
    }

    fn literal_text(&self) -> String {
        let text: Vec<String> = self
            .components
            .iter()
            .map(|c| {
                c.iter()
                    .map(|p| match p {
                        Piece::Char(c) => c.to_string(),
                        Piece::Any => "*".to_string(),
                        Piece::One => "?".to_string(),
                        Piece::Class(class) => format!("[{class}]"),
                    })
                    .collect()
            })
            .collect();
        format!("{}{}", if self.absolute { "/" } else { "" }, text.join("/"))
    }

    fn expand(&self, fs: &dyn FileSystem, cwd: &Path) -> Vec<String> {
        // (path to read, text as the shell would print it)
        let mut found: Vec<(PathBuf, String)> = vec![if self.absolute {
            (PathBuf::from("/"), "/".to_string())
        } else {
            (cwd.to_path_buf(), String::new())
        }];
        let last = self.components.len().saturating_sub(1);
        for (i, component) in self.components.iter().enumerate() {
            let is_literal = component.iter().all(|p| matches!(p, Piece::Char(_)));
            let mut next = Vec::new();
            for (dir, shown) in &found {
                let join = |name: &str| {
                    let shown = if shown.is_empty() || shown.ends_with('/') {
                        format!("{shown}{name}")
                    } else {
                        format!("{shown}/{name}")
                    };
                    (dir.join(name), shown)
                };
                if is_literal {
                    let name: String =
                        component.iter().map(|p| if let Piece::Char(c) = p { *c } else { '?' }).collect();
                    let candidate = join(&name);
                    if name.is_empty() || fs.metadata(&candidate.0).is_some() {
                        next.push(candidate);
                    }
                    continue;
                }
                let hidden_ok = matches!(component.first(), Some(Piece::Char('.')));
                for name in fs.read_dir(dir) {
                    if (name.starts_with('.') && !hidden_ok) || !matches(component, &name) {
                        continue;
                    }
                    let candidate = join(&name);
                    let is_dir = fs.metadata(&candidate.0).is_some_and(|m| m.kind == FileKind::Directory);
                    if i == last || is_dir {
                        next.push(candidate);
                    }
                }
            }
            found = next;
        }
        let mut words: Vec<String> = found.into_iter().map(|(_, shown)| shown).collect();
        words.sort();
        words
    }
}

/// The names of `names` (a directory's) that the one-component `pattern` matches, sorted in
/// byte order, as bash matches an unquoted pattern under `LC_ALL=C` without `dotglob`,
/// `extglob` or `nocaseglob`; `None` for a pattern this matcher does not take (quoting,
/// expansions, a `/`, a parenthesis, a character class by name). A guess to be checked: the
/// runtime plans with it only where bash at the proxy confirms it before the job runs.
pub fn names_matching(pattern: &str, names: &[String]) -> Option<Vec<String>> {
    if pattern.contains(['\'', '"', '\\', '/', '(', ')']) || pattern.contains("[:") || pattern.contains("[=") {
        return None;
    }
    let parsed = Pattern::parse(pattern)?;
    let [component] = &parsed.components[..] else { return None };
    let hidden_ok = matches!(component.first(), Some(Piece::Char('.')));
    let mut found: Vec<String> = names
        .iter()
        .filter(|name| {
            (hidden_ok || !name.starts_with('.')) && *name != "." && *name != ".." && matches(component, name)
        })
        .cloned()
        .collect();
    found.sort();
    Some(found)
}

fn matches(pattern: &[Piece], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    matches_chars(pattern, &name)
}

/// Whether `pattern` matches all of `text`, as bash's pattern matching does.
pub(crate) fn matches_chars(p: &[Piece], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some(Piece::Any) => (0..=n.len()).any(|skip| matches_chars(&p[1..], &n[skip..])),
        Some(Piece::One) => !n.is_empty() && matches_chars(&p[1..], &n[1..]),
        Some(Piece::Char(c)) => n.first() == Some(c) && matches_chars(&p[1..], &n[1..]),
        Some(Piece::Class(class)) => !n.is_empty() && class_matches(class, n[0]) && matches_chars(&p[1..], &n[1..]),
    }
}

pub(crate) fn class_matches(class: &str, c: char) -> bool {
    let (negated, body) = match class.strip_prefix(['!', '^']) {
        Some(rest) => (true, rest),
        None => (false, class),
    };
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let mut hit = false;
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' {
            hit |= chars[i] <= c && c <= chars[i + 2];
            i += 3;
        } else {
            hit |= chars[i] == c;
            i += 1;
        }
    }
    hit != negated
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemoryFileSystem;
    use crate::text::Span;

    fn word(raw: &str, literal: Option<&str>, glob: bool) -> Word {
        Word { span: Span::default(), raw: raw.into(), literal: literal.map(Into::into), glob }
    }

    fn fs() -> MemoryFileSystem {
        let mut fs = MemoryFileSystem::new();
        fs.add_file("/mnt/logs/a.log", 1)
            .add_file("/mnt/logs/b.log", 1)
            .add_file("/mnt/logs/.hidden.log", 1)
            .add_file("/mnt/logs/c.txt", 1)
            .add_file("/mnt/logs/sub/d.log", 1)
            .add_file("/home/u/x1.csv", 1)
            .add_file("/home/u/x2.csv", 1)
            .add_file("/home/u/my dir/y.csv", 1);
        fs
    }

    fn expand(raw: &str) -> Expanded {
        expand_word(&word(raw, None, true), &fs(), Path::new("/home/u"))
    }

    fn words(list: &[&str]) -> Expanded {
        Expanded::Words(list.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn names_match_as_bash_matches_them() {
        let names: Vec<String> = ["b.log", "a.log", ".h.log", "c.txt", "a[1].log"].map(String::from).to_vec();
        assert_eq!(names_matching("*.log", &names).unwrap(), ["a.log", "a[1].log", "b.log"]);
        assert_eq!(names_matching(".*", &names).unwrap(), [".h.log"]);
        assert_eq!(names_matching("[ab].log", &names).unwrap(), ["a.log", "b.log"]);
        assert_eq!(names_matching("[!a]*", &names).unwrap(), ["b.log", "c.txt"]);
        for unsure in ["logs/*.log", "'*'.log", "[[:alpha:]]*", "$x*", "@(a|b).log"] {
            assert_eq!(names_matching(unsure, &names), None, "{unsure}");
        }
    }

    #[test]
    fn globs_expand_like_bash() {
        assert_eq!(expand("/mnt/logs/*.log"), words(&["/mnt/logs/a.log", "/mnt/logs/b.log"]));
        assert_eq!(expand("/mnt/logs/.*.log"), words(&["/mnt/logs/.hidden.log"]));
        assert_eq!(expand("/mnt/logs/*/*.log"), words(&["/mnt/logs/sub/d.log"]));
        assert_eq!(expand("x[12].csv"), words(&["x1.csv", "x2.csv"]));
        assert_eq!(expand("x[!1].csv"), words(&["x2.csv"]));
        assert_eq!(expand("x?.csv"), words(&["x1.csv", "x2.csv"]));
        assert_eq!(expand("'my dir'/*.csv"), words(&["my dir/y.csv"]));
        assert_eq!(expand("\"x\"*"), words(&["x1.csv", "x2.csv"]));
        assert_eq!(expand("nothing*"), words(&["nothing*"]));
        assert_eq!(expand("'*'x*"), words(&["*x*"]));
        assert_eq!(expand("\"/mnt/logs\"/*.log"), words(&["/mnt/logs/a.log", "/mnt/logs/b.log"]));
        assert_eq!(expand("'/mnt'/logs/[ab].log"), words(&["/mnt/logs/a.log", "/mnt/logs/b.log"]));
    }

    #[test]
    fn only_the_shell_knows_expansions() {
        assert_eq!(expand("$d/*.log"), Expanded::Unknown("$d/*.log".into()));
        assert_eq!(expand("{a,b}*"), Expanded::Unknown("{a,b}*".into()));
        let fs = fs();
        assert_eq!(expand_word(&word("$x", None, false), &fs, Path::new("/")), Expanded::Unknown("$x".into()));
        assert_eq!(expand_word(&word("'a b'", Some("a b"), false), &fs, Path::new("/")), words(&["a b"]));
    }
}
