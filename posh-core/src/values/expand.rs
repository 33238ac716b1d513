//! One word's expansion where every parameter it reads has one value: the word as bash would
//! see it after parameter expansion, written back as a word whose expansions are quoted values
//! (`"$IN/x"` with `IN=/data` is `"'/data'/x"`), so the planner reads it as it reads a literal
//! or a glob. Anything posh cannot follow exactly is refused with the reason: command and
//! arithmetic substitutions, tildes, braces, `$'...'`, operators beyond defaults, alternatives,
//! assignments and prefix and suffix removal, and an unquoted value that bash would split or
//! glob.

use crate::planner::Piece;

/// A parameter a word reads.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Param {
    Named(String),
    /// `$1`, `$#`, `"$@"`: the positional parameters, as one list.
    Positional,
}

/// What a parameter holds where a word is expanded: one value each, or a reason why not.
pub trait Lookup {
    /// The variable's value (`None`: unset), or why it is not known.
    fn named(&self, name: &str) -> Result<Option<String>, String>;
    /// The positional parameters, or why they are not known.
    fn positional(&self) -> Result<Vec<String>, String>;
}

/// How a word is expanded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A command's word, a redirection's target, a `for` word: unquoted values are split and
    /// globbed, so they must hold no blank or glob character.
    Word,
    /// The value of an assignment: no splitting, no globbing.
    Assignment,
}

/// A word after expansion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expansion {
    /// The words it stands for, each as written for the planner: values single-quoted, the
    /// rest as written (an unquoted glob stays a glob). Several for `"$@"`, none for an
    /// unquoted expansion of nothing.
    pub words: Vec<Written>,
    /// Variables it assigns (`${X:=default}`), in order.
    pub assigns: Vec<(String, String)>,
}

/// A word written for the planner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub raw: String,
    /// Its value after quote removal, when it is no glob.
    pub literal: Option<String>,
    /// An unquoted `*`, `?` or `[`.
    pub glob: bool,
}

/// Every parameter `raw` may read (also in defaults), in order, each once.
pub fn params_in(raw: &str) -> Vec<Param> {
    let bytes = raw.as_bytes();
    let mut found = Vec::new();
    let mut push = |p: Param| {
        if !found.contains(&p) {
            found.push(p)
        }
    };
    let mut i = 0;
    let mut quoted = false;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' if !quoted => i = raw[i + 1..].find('\'').map_or(bytes.len(), |end| i + end + 2),
            b'"' => {
                quoted = !quoted;
                i += 1;
            }
            b'$' => {
                let rest = &raw[i + 1..];
                let rest = rest.strip_prefix('{').map(|r| r.trim_start_matches(['#', '!'])).unwrap_or(rest);
                match rest.as_bytes().first() {
                    Some(c) if c.is_ascii_digit() || b"@*#".contains(c) => push(Param::Positional),
                    Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                        let len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
                        push(Param::Named(rest[..len].to_string()));
                    }
                    _ => {}
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    found
}

fn name_len(text: &str) -> usize {
    match text.as_bytes().first() {
        Some(c) if c.is_ascii_digit() => text.bytes().take_while(u8::is_ascii_digit).count(),
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
            text.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count()
        }
        _ => 0,
    }
}

/// `value` single-quoted, for a word written for the planner.
pub fn single_quoted(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

/// Where a word is being read.
struct Reader<'a> {
    raw: &'a str,
    lookup: &'a dyn Lookup,
    mode: Mode,
    /// The word as written for the planner, its value, and whether an unquoted glob character
    /// stands in it.
    out_raw: String,
    out_text: String,
    glob: bool,
    /// Something quoted (even empty) or literal stands in the word: it is never removed.
    kept: bool,
    assigns: Vec<(String, String)>,
}

/// Expands `raw` (a word as written, or an assignment's value) where each parameter has the one
/// value `lookup` gives; `Err` says why posh cannot.
pub fn expand(raw: &str, lookup: &dyn Lookup, mode: Mode) -> Result<Expansion, String> {
    if mode == Mode::Word && matches!(raw, "\"$@\"" | "\"${@}\"") {
        let words = lookup.positional()?;
        let words =
            words.into_iter().map(|w| Written { raw: single_quoted(&w), literal: Some(w), glob: false }).collect();
        return Ok(Expansion { words, assigns: Vec::new() });
    }
    let mut reader = Reader {
        raw,
        lookup,
        mode,
        out_raw: String::new(),
        out_text: String::new(),
        glob: false,
        kept: false,
        assigns: Vec::new(),
    };
    reader.read()?;
    let Reader { out_raw, out_text, glob, kept, assigns, .. } = reader;
    let words = if !kept && out_text.is_empty() && mode == Mode::Word {
        // An unquoted expansion of nothing: bash removes the word.
        Vec::new()
    } else {
        vec![Written { literal: (!glob).then(|| out_text.clone()), raw: out_raw, glob }]
    };
    Ok(Expansion { words, assigns })
}

impl Reader<'_> {
    fn refuse<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("`{}` {what}", self.raw))
    }

    fn read(&mut self) -> Result<(), String> {
        let raw = self.raw;
        let bytes = raw.as_bytes();
        let mut i = 0;
        let mut quoted = false;
        while i < bytes.len() {
            let c = bytes[i];
            match (c, quoted) {
                (b'\'', false) => {
                    let Some(end) = raw[i + 1..].find('\'') else { return self.refuse("has an unclosed quote") };
                    self.out_raw.push_str(&raw[i..i + end + 2]);
                    self.out_text.push_str(&raw[i + 1..i + 1 + end]);
                    self.kept = true;
                    i += end + 2;
                }
                (b'"', _) => {
                    quoted = !quoted;
                    self.out_raw.push('"');
                    self.kept = true;
                    i += 1;
                }
                (b'\\', _) => {
                    let Some(next) = raw[i + 1..].chars().next() else { return self.refuse("ends with a backslash") };
                    let len = 1 + next.len_utf8();
                    if next == '\n' {
                        // A line continuation.
                    } else if !quoted || "$`\"\\".contains(next) {
                        self.out_text.push(next);
                        self.kept = true;
                    } else {
                        self.out_text.push('\\');
                        self.out_text.push(next);
                    }
                    self.out_raw.push_str(&raw[i..i + len]);
                    i += len;
                }
                (b'`', _) => return self.refuse("runs a command substitution"),
                (b'$', _) => {
                    i = self.dollar(i, quoted)?;
                }
                (b'~', false) if i == 0 || (self.mode == Mode::Assignment && matches!(bytes[i - 1], b':')) => {
                    return self.refuse("starts with a tilde, which posh does not expand");
                }
                (b'{', false) if self.mode == Mode::Word => {
                    return self.refuse("may be a brace expansion, which posh does not expand");
                }
                (b'*' | b'?' | b'+' | b'@' | b'!', false)
                    if self.mode == Mode::Word && bytes.get(i + 1) == Some(&b'(') =>
                {
                    return self.refuse("holds an extended glob");
                }
                (b'*' | b'?' | b'[', false) if self.mode == Mode::Word => {
                    self.glob = true;
                    self.kept = true;
                    self.out_raw.push(c as char);
                    self.out_text.push(c as char);
                    i += 1;
                }
                _ => {
                    let ch = raw[i..].chars().next().expect("inside the text");
                    self.out_raw.push(ch);
                    self.out_text.push(ch);
                    self.kept = true;
                    i += ch.len_utf8();
                }
            }
        }
        if quoted {
            return self.refuse("has an unclosed quote");
        }
        Ok(())
    }

    /// A `$` at `i`; returns where reading goes on.
    fn dollar(&mut self, i: usize, quoted: bool) -> Result<usize, String> {
        let raw = self.raw;
        let rest = &raw[i + 1..];
        let (value, end) = match rest.as_bytes().first() {
            Some(b'(') | Some(b'[') => return self.refuse("runs a command or arithmetic substitution"),
            Some(b'\'') | Some(b'"') if !quoted => return self.refuse("holds a `$'...'` or `$\"...\"` quote"),
            Some(b'{') => {
                let close = matching_brace(&rest[1..]).ok_or_else(|| format!("`{raw}` holds an unclosed `${{`"))?;
                let inside = &rest[1..1 + close];
                (self.braced(inside)?, i + 2 + close + 1)
            }
            Some(c) if c.is_ascii_digit() => {
                // `$12` is `${1}2`.
                (self.positional(usize::from(c - b'0'))?, i + 2)
            }
            Some(b'#') => (Some(self.lookup.positional()?.len().to_string()), i + 2),
            Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                let len = name_len(rest);
                (self.lookup.named(&rest[..len])?, i + 1 + len)
            }
            Some(b'@' | b'*' | b'?' | b'$' | b'!' | b'-') => {
                return self.refuse("reads a special parameter posh does not know before the run");
            }
            // A lone `$` is itself.
            _ => {
                self.out_raw.push('$');
                self.out_text.push('$');
                self.kept = true;
                return Ok(i + 1);
            }
        };
        self.put(value.unwrap_or_default(), quoted)?;
        Ok(end)
    }

    fn positional(&self, n: usize) -> Result<Option<String>, String> {
        if n == 0 {
            return self.refuse("reads `$0`, which posh does not know before the run");
        }
        Ok(self.lookup.positional()?.get(n - 1).cloned())
    }

    fn value_of(&self, name: &str) -> Result<Option<String>, String> {
        if name.bytes().all(|b| b.is_ascii_digit()) {
            self.positional(name.parse().map_err(|_| format!("`{}` names no parameter", self.raw))?)
        } else {
            self.lookup.named(name)
        }
    }

    /// The value of `${inside}`.
    fn braced(&mut self, inside: &str) -> Result<Option<String>, String> {
        if let Some(name) = inside.strip_prefix('#')
            && !name.is_empty()
            && name_len(name) == name.len()
        {
            let value = self.value_of(name)?.unwrap_or_default();
            if !value.is_ascii() {
                return self.refuse("counts the characters of a value that is not ASCII (the locale decides)");
            }
            return Ok(Some(value.len().to_string()));
        }
        if inside == "#" {
            return Ok(Some(self.lookup.positional()?.len().to_string()));
        }
        let len = name_len(inside);
        if len == 0 {
            return self.refuse("holds a parameter expansion posh does not follow");
        }
        let (name, operator) = inside.split_at(len);
        let value = self.value_of(name)?;
        if operator.is_empty() {
            return Ok(value);
        }
        let (op, word) = ["##", "%%", ":-", ":=", ":+", ":?", "-", "=", "+", "?", "#", "%"]
            .iter()
            .find_map(|op| operator.strip_prefix(op).map(|word| (*op, word)))
            .ok_or_else(|| format!("`{}` holds `${{{inside}}}`, an expansion posh does not follow", self.raw))?;
        let empty = value.as_deref().is_none_or(str::is_empty);
        let null = if op.starts_with(':') { empty } else { value.is_none() };
        match op {
            ":-" | "-" => Ok(if null { Some(self.inner(word)?) } else { value }),
            ":+" | "+" => Ok(if null { Some(String::new()) } else { Some(self.inner(word)?) }),
            // The script stops there when it is null: the value is what it is when it goes on.
            ":?" | "?" => Ok(value),
            ":=" | "=" => {
                if !null {
                    return Ok(value);
                }
                if name.bytes().all(|b| b.is_ascii_digit()) {
                    return self.refuse("assigns a positional parameter, which bash refuses");
                }
                let assigned = self.inner(word)?;
                self.assigns.push((name.to_string(), assigned.clone()));
                Ok(Some(assigned))
            }
            _ => {
                let pattern = Pattern::parse(word).ok_or_else(|| {
                    format!("`{}` removes `{word}`, a pattern posh does not read (quotes or expansions)", self.raw)
                })?;
                let value = value.unwrap_or_default();
                let chars: Vec<char> = value.chars().collect();
                let cut = match op {
                    "#" => (0..=chars.len()).find(|&n| pattern.matches(&chars[..n])).map(|n| chars[n..].to_vec()),
                    "##" => {
                        (0..=chars.len()).rev().find(|&n| pattern.matches(&chars[..n])).map(|n| chars[n..].to_vec())
                    }
                    "%" => (0..=chars.len()).rev().find(|&n| pattern.matches(&chars[n..])).map(|n| chars[..n].to_vec()),
                    _ => (0..=chars.len()).find(|&n| pattern.matches(&chars[n..])).map(|n| chars[..n].to_vec()),
                };
                Ok(Some(cut.map_or(value, |kept| kept.into_iter().collect())))
            }
        }
    }

    /// The value of the word of a default or an alternative: plain text and expansions, nothing
    /// quoted (quotes there mean different things inside and outside double quotes).
    fn inner(&mut self, word: &str) -> Result<String, String> {
        if word.contains(['\'', '"', '\\', '`']) || word.starts_with('~') {
            return self.refuse("holds a default with quotes, backslashes or a tilde, which posh does not follow");
        }
        let expansion = expand(word, self.lookup, Mode::Assignment)?;
        self.assigns.extend(expansion.assigns);
        Ok(expansion.words.into_iter().next().and_then(|w| w.literal).unwrap_or_default())
    }

    /// Puts a parameter's value in the word.
    fn put(&mut self, value: String, quoted: bool) -> Result<(), String> {
        if !quoted && self.mode == Mode::Word {
            if value.contains([' ', '\t', '\n']) {
                return self.refuse(&format!("is unquoted and holds `{value}`, which bash would split"));
            }
            if value.contains(['*', '?', '[', '\\']) {
                return self.refuse(&format!("is unquoted and holds `{value}`, which bash would match as a glob"));
            }
        }
        if value.is_empty() {
            return Ok(());
        }
        if quoted {
            // Out of the double quotes, the value single-quoted, back in.
            self.out_raw.push('"');
            self.out_raw.push_str(&single_quoted(&value));
            self.out_raw.push('"');
        } else {
            self.out_raw.push_str(&single_quoted(&value));
        }
        self.out_text.push_str(&value);
        self.kept = true;
        Ok(())
    }
}

/// Where the `}` closing a `${` is in `text` (which follows the `${`): nested `${...}` skipped.
fn matching_brace(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' if i > 0 && bytes[i - 1] == b'$' => depth += 1,
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// A pattern of `${X#...}` and its kin (the planner's glob pieces, one path component): characters, `*`, `?` and `[...]`.
struct Pattern(Vec<Piece>);

impl Pattern {
    /// `None` for anything but plain characters, `*`, `?` and closed `[...]` classes.
    fn parse(text: &str) -> Option<Pattern> {
        if text.contains(['$', '`', '\'', '"', '\\', '(']) {
            return None;
        }
        let mut pieces = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            pieces.push(match c {
                '*' => Piece::Any,
                '?' => Piece::One,
                '[' => {
                    let mut class = String::new();
                    loop {
                        let n = chars.next()?;
                        if n == ']' && !class.is_empty() && class != "!" && class != "^" {
                            break;
                        }
                        if n == '[' {
                            // `[[:alpha:]]` and its kin: not followed.
                            return None;
                        }
                        class.push(n);
                    }
                    Piece::Class(class)
                }
                c => Piece::Char(c),
            });
        }
        Some(Pattern(pieces))
    }

    fn matches(&self, text: &[char]) -> bool {
        crate::planner::matches_chars(&self.0, text)
    }
}
