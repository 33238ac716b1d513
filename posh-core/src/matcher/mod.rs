//! Fits an invocation (argv words) to an annotation entry under POSIX/GNU conventions, classifies
//! every word, and rebuilds argv exactly, or with the splittable argument narrowed to a subset.
//!
//! Invariant: the words of argv are never re-spelt. A rebuilt argv holds the original words in
//! the original order, less the dropped values of the splittable argument; only a word that packs
//! several values (`a.txt,b.txt`) is re-joined from its kept values.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::ops::Range;

use crate::annotation::model::{ArgRef, ArgSpec, ArgType, CommandEntry, Section, Size};

/// What one part of a word is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Role {
    /// The command name, or a word of a multi-word name (`git status`).
    CommandName,
    Flag(ArgRef),
    /// The name of an option that takes a value (`-f`, `--file`).
    OptionName(ArgRef),
    /// A value of an option or a positional.
    Value(ArgRef, ArgType),
    /// `--`.
    EndOfOptions,
    /// `=` between a long option and its value, or a list separator inside a word.
    Punctuation,
}

/// A byte range of a word and its role.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WordPart {
    pub range: Range<usize>,
    pub role: Role,
}

/// One value: a file name or a string, located in argv.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ArgValue {
    pub arg: ArgRef,
    pub ty: ArgType,
    pub word: usize,
    pub range: Range<usize>,
    /// Which occurrence of the argument this value belongs to (an option given twice has two).
    pub occurrence: usize,
}

/// An argument absent from argv whose annotation gives a `default_value`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DefaultValue {
    pub arg: ArgRef,
    pub ty: ArgType,
    pub value: String,
}

/// The words that one occurrence of an argument spans: what must go if all its values go.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Occurrence {
    pub arg: ArgRef,
    pub words: Vec<usize>,
    /// The option's name shares its word with other flags (`-cvf`): the occurrence cannot be
    /// dropped without rewriting that word.
    pub bundled: bool,
}

/// An invocation fitted to an entry.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Invocation<'a> {
    #[serde(skip)]
    pub entry: &'a CommandEntry,
    /// The entry's index among the candidates the matcher was given.
    pub entry_index: usize,
    pub argv: Vec<String>,
    /// One per argv word.
    pub words: Vec<Vec<WordPart>>,
    pub values: Vec<ArgValue>,
    pub occurrences: Vec<Occurrence>,
    pub defaults: Vec<DefaultValue>,
}

/// The indices of two ascending lists as one ascending list, each once.
pub(crate) fn merged_ascending(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut merged = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.iter().peekable(), b.iter().peekable());
    while let Some(&next) = match (a.peek(), b.peek()) {
        (Some(&&x), Some(&&y)) if x <= y => a.next(),
        (_, Some(_)) => b.next(),
        (Some(_), None) => a.next(),
        (None, None) => None,
    } {
        merged.push(next);
    }
    merged.dedup();
    merged
}

/// An invocation's splittable argument as [`Invocation::narrowing`] prepared it for narrowing.
#[derive(Clone, Debug)]
pub struct Narrowing {
    arg: ArgRef,
    /// The splittable values in argv order, as indices into [`Invocation::values`].
    split: Vec<usize>,
    /// The words every subset keeps as written, ascending.
    fixed: Vec<usize>,
    /// Each occurrence of the splittable argument that has values: its values.
    values_of: HashMap<usize, Vec<usize>>,
    /// Each word of those occurrences: the occurrences it belongs to.
    occurrences_of_word: BTreeMap<usize, Vec<usize>>,
    /// Those occurrences that share their word with other flags, ascending.
    bundled: Vec<usize>,
}

impl Narrowing {
    /// [`Invocation::argv_with_subset`], for the invocation this was made of.
    pub fn argv_with_subset(&self, invocation: &Invocation<'_>, keep: &[usize]) -> Result<Vec<String>, RebuildError> {
        if let Some(&index) = keep.iter().find(|&&i| i >= self.split.len()) {
            return Err(RebuildError::OutOfRange { index, len: self.split.len() });
        }
        if keep.is_empty() {
            return Err(RebuildError::EmptySubset);
        }
        self.narrowed(invocation, keep)
    }

    /// argv keeping the splittable values at `keep`: an occurrence keeping all its values stays
    /// as written, one keeping some has its word re-joined of them (`-k a,b,c`), one keeping none
    /// goes (unless its name shares a word with other flags).
    fn narrowed(&self, invocation: &Invocation<'_>, keep: &[usize]) -> Result<Vec<String>, RebuildError> {
        let mut kept_values: HashMap<usize, Vec<usize>> = HashMap::new();
        for &i in keep {
            let v = self.split[i];
            kept_values.entry(invocation.values[v].occurrence).or_default().push(v);
        }
        if let Some(&o) = self.bundled.iter().find(|o| !kept_values.contains_key(o)) {
            let word = invocation.argv[invocation.occurrences[o].words[0]].clone();
            return Err(RebuildError::Bundled { word });
        }
        let touched: HashSet<usize> = kept_values.keys().copied().collect();
        let mut rewritten: HashMap<usize, String> = HashMap::new();
        let mut words: Vec<usize> = Vec::new();
        for (&o, kept) in &mut kept_values {
            kept.sort_unstable();
            kept.dedup();
            let values = &self.values_of[&o];
            if kept.len() < values.len() {
                // Some values of a word that packs several: re-join the kept ones.
                let separator = invocation.entry.arg(self.arg).size.separator().unwrap_or(" ");
                let first = &invocation.values[values[0]];
                let last = &invocation.values[values[values.len() - 1]];
                let text = &invocation.argv[first.word];
                let joined: Vec<&str> = kept.iter().map(|&v| &text[invocation.values[v].range.clone()]).collect();
                let word =
                    format!("{}{}{}", &text[..first.range.start], joined.join(separator), &text[last.range.end..]);
                rewritten.insert(first.word, word);
            }
            // A word stays if every occurrence it belongs to keeps a value.
            words.extend(
                invocation.occurrences[o]
                    .words
                    .iter()
                    .copied()
                    .filter(|w| self.occurrences_of_word[w].iter().all(|other| touched.contains(other))),
            );
        }
        words.sort_unstable();
        words.dedup();
        let argv = merged_ascending(&self.fixed, &words)
            .into_iter()
            .map(|w| rewritten.remove(&w).unwrap_or_else(|| invocation.argv[w].clone()))
            .collect();
        Ok(argv)
    }
}

/// Why an entry does not fit an invocation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Mismatch {
    /// argv is shorter than the multi-word name, or a name word differs.
    Subcommand {
        expected: String,
    },
    UnknownOption {
        word: usize,
        option: String,
    },
    FlagWithValue {
        word: usize,
        option: String,
    },
    MissingValue {
        word: usize,
        option: String,
    },
    RepeatedOption {
        word: usize,
        option: String,
    },
    MissingRequired {
        option: String,
    },
    WrongValueCount {
        word: usize,
        expected: u32,
        found: usize,
    },
    TooFewPositionals {
        expected: usize,
        found: usize,
    },
    TooManyPositionals {
        expected: usize,
        found: usize,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Subcommand { expected } => write!(f, "it is not `{expected}`"),
            Mismatch::UnknownOption { option, .. } => {
                write!(f, "the annotation does not know the option `{option}`")
            }
            Mismatch::FlagWithValue { option, .. } => write!(f, "`{option}` takes no value"),
            Mismatch::MissingValue { option, .. } => write!(f, "`{option}` needs a value"),
            Mismatch::RepeatedOption { option, .. } => {
                write!(f, "`{option}` is given more than once")
            }
            Mismatch::MissingRequired { option } => write!(f, "this form needs `{option}`"),
            Mismatch::WrongValueCount { expected, found, .. } => {
                write!(f, "expected {expected} values in one word, found {found}")
            }
            Mismatch::TooFewPositionals { expected, found } => {
                write!(f, "expected at least {expected} positional arguments, found {found}")
            }
            Mismatch::TooManyPositionals { expected, found } => {
                write!(f, "expected at most {expected} positional arguments, found {found}")
            }
        }
    }
}

/// Why no entry fits.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum NoMatch {
    /// The library has no entry for the command.
    NoAnnotation { command: String },
    /// Entries exist; each failed for the reason given (with its index among the candidates).
    NoEntryFits { command: String, attempts: Vec<(usize, Mismatch)> },
    /// argv is empty.
    Empty,
}

impl fmt::Display for NoMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoMatch::NoAnnotation { command } => write!(f, "no annotation for `{command}`"),
            NoMatch::NoEntryFits { command, attempts } => {
                write!(f, "no annotation entry of `{command}` fits")?;
                if let Some((_, why)) = attempts.last() {
                    write!(f, ": {why}")?;
                }
                Ok(())
            }
            NoMatch::Empty => write!(f, "empty command"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RebuildError {
    #[error("the entry has no splittable argument")]
    NotSplittable,
    #[error("an empty subset would leave the command reading its standard input instead")]
    EmptySubset,
    #[error("value index {index} is out of range: the splittable argument has {len} values")]
    OutOfRange { index: usize, len: usize },
    #[error("`{word}` bundles the splittable option with other flags; it cannot be dropped alone")]
    Bundled { word: String },
}

/// The command name an argv word stands for: `/usr/bin/grep` is `grep`.
pub fn command_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Tries `candidates` in order and returns the first entry that fits, as entries of one command
/// are tried in an annotation library. Those after it are not asked for (a library parses its
/// shipped entries when first asked for).
pub fn match_entries<'a>(
    candidates: impl IntoIterator<Item = &'a CommandEntry>,
    argv: &[String],
) -> Result<Invocation<'a>, NoMatch> {
    let Some(first) = argv.first() else {
        return Err(NoMatch::Empty);
    };
    let command = || command_name(first).to_string();
    // Each form tried without naming what does not fit: formatting the option a form missed, for
    // every form tried before the one that fits, was a sixth of matching an opened script's
    // commands. Named only when no form fits, for the message. (Candidates are parsed as they
    // are reached: none after the one that fits.)
    let mut tried: Vec<&CommandEntry> = Vec::new();
    for entry in candidates {
        if let Ok(mut invocation) = Fitter::new(entry, argv, false).and_then(Fitter::run) {
            invocation.entry_index = tried.len();
            return Ok(invocation);
        }
        tried.push(entry);
    }
    if tried.is_empty() {
        return Err(NoMatch::NoAnnotation { command: command() });
    }
    let attempts = tried
        .into_iter()
        .enumerate()
        .filter_map(|(index, entry)| fit(entry, argv).err().map(|why| (index, why)))
        .collect();
    Err(NoMatch::NoEntryFits { command: command(), attempts })
}

/// Fits argv to one entry.
pub fn fit<'a>(entry: &'a CommandEntry, argv: &[String]) -> Result<Invocation<'a>, Mismatch> {
    Fitter::new(entry, argv, true)?.run()
}

struct Fitter<'a, 'w> {
    entry: &'a CommandEntry,
    argv: &'w [String],
    /// Whether a mismatch names the option or form (else its names are left empty).
    named: bool,
    words: Vec<Vec<WordPart>>,
    values: Vec<ArgValue>,
    occurrences: Vec<Occurrence>,
    positionals: Vec<usize>,
    next: usize,
}

impl<'a, 'w> Fitter<'a, 'w> {
    fn new(entry: &'a CommandEntry, argv: &'w [String], named: bool) -> Result<Self, Mismatch> {
        let expected = || Mismatch::Subcommand { expected: if named { entry.display_name() } else { String::new() } };
        if argv.first().map(|w| command_name(w)) != entry.name.first().map(String::as_str) {
            return Err(expected());
        }
        for (i, name) in entry.name.iter().enumerate().skip(1) {
            if argv.get(i) != Some(name) {
                return Err(expected());
            }
        }
        let mut words = vec![Vec::new(); argv.len()];
        for (i, word) in words.iter_mut().enumerate().take(entry.name.len()) {
            word.push(WordPart { range: 0..argv[i].len(), role: Role::CommandName });
        }
        Ok(Fitter {
            entry,
            argv,
            named,
            words,
            values: Vec::new(),
            occurrences: Vec::new(),
            positionals: Vec::new(),
            next: entry.name.len(),
        })
    }

    fn run(mut self) -> Result<Invocation<'a>, Mismatch> {
        let mut options_ended = false;
        while self.next < self.argv.len() {
            let index = self.next;
            self.next += 1;
            let word = &self.argv[index];
            if options_ended || word == "-" || !word.starts_with('-') {
                self.positionals.push(index);
            } else if word == "--" {
                self.words[index].push(WordPart { range: 0..2, role: Role::EndOfOptions });
                options_ended = true;
            } else if let Some(long) = word.strip_prefix("--") {
                self.long_option(index, long, 2)?;
            } else if self.entry.options.long_arg_single_dash && self.find_long(long_name(&word[1..])).is_some() {
                self.long_option(index, &word[1..], 1)?;
            } else if let Some((arg, spec)) = self.dash_digits_option(word) {
                // `-5` for `-n 5`: the dash stands for the option's name.
                let occurrence = self.occurrences.len();
                self.words[index].push(WordPart { range: 0..1, role: Role::OptionName(arg) });
                self.push_value(arg, spec.ty, index, 1..word.len(), occurrence);
                self.occurrences.push(Occurrence { arg, words: vec![index], bundled: false });
            } else {
                self.short_options(index)?;
            }
        }
        self.check_counts()?;
        self.assign_positionals()?;
        let defaults = self.defaults();
        self.values.sort_by_key(|v| (v.word, v.range.start));
        Ok(Invocation {
            entry: self.entry,
            entry_index: 0,
            argv: self.argv.to_vec(),
            words: self.words,
            values: self.values,
            occurrences: self.occurrences,
            defaults,
        })
    }

    fn find_long(&self, name: &str) -> Option<(ArgRef, &'a ArgSpec)> {
        let entry = self.entry;
        entry.args().find(|(r, spec)| r.section != Section::Params && spec.long.as_deref() == Some(name))
    }

    /// `name()` when mismatches are named, else empty.
    fn name(&self, name: impl FnOnce() -> String) -> String {
        if self.named { name() } else { String::new() }
    }

    fn find_short(&self, c: char) -> Option<(ArgRef, &'a ArgSpec)> {
        let entry = self.entry;
        entry.args().find(|(r, spec)| r.section != Section::Params && spec.short == Some(c))
    }

    /// The option a word of a dash and digits (`-5`) stands for, if the entry has one.
    fn dash_digits_option(&self, word: &str) -> Option<(ArgRef, &'a ArgSpec)> {
        let digits = &word[1..];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        self.entry.args().find(|(_, spec)| spec.dash_digits)
    }

    /// `--name`, `--name=value`, `--name value` (`-name` with `long_arg_single_dash`).
    fn long_option(&mut self, index: usize, body: &str, dashes: usize) -> Result<(), Mismatch> {
        let word = &self.argv[index];
        let name = long_name(body);
        let Some((arg, spec)) = self.find_long(name) else {
            return Err(Mismatch::UnknownOption {
                word: index,
                option: self.name(|| format!("{}{name}", &word[..dashes])),
            });
        };
        let name_end = dashes + name.len();
        let inline = (name_end < word.len()).then(|| name_end + 1..word.len());
        if arg.section == Section::Flags {
            if inline.is_some() {
                return Err(Mismatch::FlagWithValue {
                    word: index,
                    option: self.name(|| word[..name_end].to_string()),
                });
            }
            self.words[index].push(WordPart { range: 0..word.len(), role: Role::Flag(arg) });
            return Ok(());
        }
        self.words[index].push(WordPart { range: 0..name_end, role: Role::OptionName(arg) });
        if inline.is_some() {
            self.words[index].push(WordPart { range: name_end..name_end + 1, role: Role::Punctuation });
        }
        self.option_values(index, arg, spec, inline, false, &word[..name_end])
    }

    /// `-abc`, `-n5`, `-n 5`, `-cvf out.tar`.
    fn short_options(&mut self, index: usize) -> Result<(), Mismatch> {
        let word = &self.argv[index];
        let mut chars = word.char_indices().skip(1).peekable();
        let bundled = word.chars().count() > 2;
        while let Some((at, c)) = chars.next() {
            let end = at + c.len_utf8();
            let Some((arg, spec)) = self.find_short(c) else {
                return Err(Mismatch::UnknownOption { word: index, option: self.name(|| format!("-{c}")) });
            };
            if arg.section == Section::Flags {
                self.words[index].push(WordPart { range: at..end, role: Role::Flag(arg) });
                continue;
            }
            self.words[index].push(WordPart { range: at..end, role: Role::OptionName(arg) });
            let inline = chars.peek().is_some().then_some(end..word.len());
            let bundled = bundled && at > 1;
            return self.option_values(index, arg, spec, inline, bundled, &format!("-{c}"));
        }
        Ok(())
    }

    fn option_values(
        &mut self,
        index: usize,
        arg: ArgRef,
        spec: &ArgSpec,
        inline: Option<Range<usize>>,
        bundled: bool,
        option: &str,
    ) -> Result<(), Mismatch> {
        let occurrence = self.occurrences.len();
        let mut words = vec![index];
        match (&spec.size, inline) {
            (_, None) if spec.attached => {}
            (Size::Count(n), Some(_)) | (Size::Specific { count: n, separator: None }, Some(_)) if *n > 1 => {
                return Err(Mismatch::MissingValue { word: index, option: self.name(|| option.to_string()) });
            }
            (Size::Count(n), None) | (Size::Specific { count: n, separator: None }, None) if *n > 1 => {
                for _ in 0..*n {
                    let value_word = self.take_value_word(index, option)?;
                    self.push_value(arg, spec.ty, value_word, 0..self.argv[value_word].len(), occurrence);
                    words.push(value_word);
                }
            }
            (size, inline) => {
                let (value_word, range) = match inline {
                    Some(range) => (index, range),
                    None => {
                        let value_word = self.take_value_word(index, option)?;
                        words.push(value_word);
                        (value_word, 0..self.argv[value_word].len())
                    }
                };
                self.split_values(arg, spec.ty, size, value_word, range, occurrence)?;
            }
        }
        self.occurrences.push(Occurrence { arg, words, bundled });
        Ok(())
    }

    fn take_value_word(&mut self, index: usize, option: &str) -> Result<usize, Mismatch> {
        if self.next >= self.argv.len() {
            return Err(Mismatch::MissingValue { word: index, option: self.name(|| option.to_string()) });
        }
        self.next += 1;
        Ok(self.next - 1)
    }

    /// Records the values in `range` of a word, split at the size's separator if it has one.
    fn split_values(
        &mut self,
        arg: ArgRef,
        ty: ArgType,
        size: &Size,
        word: usize,
        range: Range<usize>,
        occurrence: usize,
    ) -> Result<(), Mismatch> {
        let Some(separator) = size.separator() else {
            self.push_value(arg, ty, word, range, occurrence);
            return Ok(());
        };
        let text = &self.argv[word][range.clone()];
        let mut start = range.start;
        let mut items = Vec::new();
        for piece in text.split(separator) {
            items.push(start..start + piece.len());
            start += piece.len() + separator.len();
        }
        if let Size::Specific { count, .. } = size
            && items.len() != *count as usize
        {
            return Err(Mismatch::WrongValueCount { word, expected: *count, found: items.len() });
        }
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.words[word]
                    .push(WordPart { range: item.start - separator.len()..item.start, role: Role::Punctuation });
            }
            self.push_value(arg, ty, word, item, occurrence);
        }
        Ok(())
    }

    fn push_value(&mut self, arg: ArgRef, ty: ArgType, word: usize, range: Range<usize>, occurrence: usize) {
        self.words[word].push(WordPart { range: range.clone(), role: Role::Value(arg, ty) });
        self.values.push(ArgValue { arg, ty, word, range, occurrence });
    }

    fn check_counts(&self) -> Result<(), Mismatch> {
        for (arg, spec) in self.entry.args().filter(|(r, _)| r.section != Section::Params) {
            let mut occurrences = self.occurrences.iter().filter(|o| o.arg == arg);
            let flag_uses = || self.words.iter().flatten().filter(|p| p.role == Role::Flag(arg)).count();
            let given = if arg.section == Section::Flags { flag_uses() } else { occurrences.clone().count() };
            // Named only for a mismatch: formatting every option's name on each match was a
            // good part of planning a small pipeline.
            let name = || self.name(|| spec.display_name(self.entry.options.long_arg_single_dash));
            if spec.required && given == 0 {
                return Err(Mismatch::MissingRequired { option: name() });
            }
            // Repeating a flag changes no file access, so only options with values must opt in.
            if arg.section == Section::OptParams && given > 1 && !spec.multiple {
                let word = occurrences.nth(1).map_or(0, |o| o.words[0]);
                return Err(Mismatch::RepeatedOption { word, option: name() });
            }
        }
        Ok(())
    }

    /// Deals the positional words out to `PARAMS` in order; the one variable-length list takes
    /// what the fixed ones leave.
    fn assign_positionals(&mut self) -> Result<(), Mismatch> {
        let entry = self.entry;
        let words_of = |spec: &ArgSpec| match spec.size {
            Size::Count(n) => Some(n as usize),
            Size::Specific { count, separator: None } => Some(count as usize),
            Size::List { separator: None } => None,
            Size::List { separator: Some(_) } | Size::Specific { separator: Some(_), .. } => Some(1),
        };
        let fixed: usize = entry.params.iter().filter_map(words_of).sum();
        let has_list = entry.params.iter().any(|s| words_of(s).is_none());
        let found = self.positionals.len();
        if found < fixed {
            return Err(Mismatch::TooFewPositionals { expected: fixed, found });
        }
        if !has_list && found > fixed {
            return Err(Mismatch::TooManyPositionals { expected: fixed, found });
        }
        let positionals = std::mem::take(&mut self.positionals);
        let mut next = positionals.iter().copied();
        for (index, spec) in entry.params.iter().enumerate() {
            let arg = ArgRef { section: Section::Params, index };
            let count = words_of(spec).unwrap_or(found - fixed);
            for _ in 0..count {
                let word = next.next().expect("counted above");
                let occurrence = self.occurrences.len();
                self.split_values(arg, spec.ty, &spec.size, word, 0..self.argv[word].len(), occurrence)?;
                self.occurrences.push(Occurrence { arg, words: vec![word], bundled: false });
            }
        }
        Ok(())
    }

    fn defaults(&self) -> Vec<DefaultValue> {
        self.entry
            .args()
            .filter(|(arg, _)| !self.occurrences.iter().any(|o| o.arg == *arg))
            .filter_map(|(arg, spec)| {
                spec.default_value.as_ref().map(|v| DefaultValue { arg, ty: spec.ty, value: v.clone() })
            })
            .collect()
    }
}

/// `name=value` → `name`.
fn long_name(body: &str) -> &str {
    body.split_once('=').map_or(body, |(name, _)| name)
}

impl Invocation<'_> {
    pub fn value_text(&self, value: &ArgValue) -> &str {
        &self.argv[value.word][value.range.clone()]
    }

    /// Values of one type, defaults included, in argv order.
    pub fn files_of(&self, ty: ArgType) -> Vec<String> {
        let given = self.values.iter().filter(|v| v.ty == ty).map(|v| self.value_text(v).to_string());
        let defaults = self.defaults.iter().filter(|d| d.ty == ty).map(|d| d.value.clone());
        given.chain(defaults).collect()
    }

    pub fn input_files(&self) -> Vec<String> {
        self.files_of(ArgType::InputFile)
    }

    /// The names it writes, removes or replaces, in argv order.
    pub fn output_files(&self) -> Vec<String> {
        let given = self.values.iter().filter(|v| v.ty.is_output()).map(|v| self.value_text(v).to_string());
        let defaults = self.defaults.iter().filter(|d| d.ty.is_output()).map(|d| d.value.clone());
        given.chain(defaults).collect()
    }

    /// The names it removes or replaces.
    pub fn removed_files(&self) -> Vec<String> {
        self.files_of(ArgType::RemovedFile)
    }

    /// Whether the invocation appends to its output files instead of rewriting them: it gives a
    /// flag marked `appends` (`tee -a`). An output argument marked `appends` says so of its own
    /// files (`touch`): [`Self::appends_to`].
    pub fn appends_outputs(&self) -> bool {
        self.words.iter().flatten().any(|part| matches!(part.role, Role::Flag(arg) if self.entry.arg(arg).appends))
    }

    /// Whether the command never rewrites what the files of `value` held: it appends to them
    /// ([`Self::appends_outputs`]), or their argument says so (`appends`).
    pub fn appends_to(&self, value: &ArgValue) -> bool {
        self.appends_outputs() || self.entry.arg(value.arg).appends
    }

    /// Whether every line it prints is a whole line of its standard input: its entry states
    /// `output_lines_of_input`, it gives no option that `changes_lines`, and it names no file to
    /// read, write or take names from (a `-` among them would be standard input once more).
    pub fn prints_lines_of_input(&self) -> bool {
        self.entry.options.output_lines_of_input
            && !self.words.iter().flatten().any(|part| match part.role {
                Role::Flag(arg) | Role::OptionName(arg) => self.entry.arg(arg).changes_lines,
                _ => false,
            })
            && self.input_files().is_empty()
            && self.output_files().is_empty()
            && self.file_lists().is_empty()
    }

    /// Where the invocation reads names of files it opens, names its words do not show: `-` for
    /// standard input (`stdin_file_list`), else the words of its `file_list` arguments.
    pub fn file_lists(&self) -> Vec<String> {
        let given = self.values.iter().filter(|v| self.entry.arg(v.arg).file_list).map(|v| self.value_text(v));
        let defaults = self.defaults.iter().filter(|d| self.entry.arg(d.arg).file_list).map(|d| d.value.as_str());
        let stdin = self.entry.options.stdin_file_list.then_some("-");
        let mut lists: Vec<String> = Vec::new();
        for list in stdin.into_iter().chain(given).chain(defaults) {
            if !lists.iter().any(|l| l == list) {
                lists.push(list.to_string());
            }
        }
        lists
    }

    /// [`Self::file_lists`] for people: ``standard input and `more.txt` ``; `None` without any.
    pub fn file_lists_in_words(&self) -> Option<String> {
        let lists = self.file_lists();
        let words: Vec<String> =
            lists.iter().map(|l| if l == "-" { "standard input".to_string() } else { format!("`{l}`") }).collect();
        (!words.is_empty()).then(|| words.join(" and "))
    }

    /// The values of the splittable argument, in argv order.
    pub fn splittable_values(&self) -> Vec<&ArgValue> {
        match self.entry.splittable_arg() {
            Some(arg) => self.values.iter().filter(|v| v.arg == arg).collect(),
            None => Vec::new(),
        }
    }

    /// argv with the splittable argument narrowed to the values at `keep` (indices into
    /// [`Self::splittable_values`]); every other word stays as it was, in its place.
    pub fn argv_with_subset(&self, keep: &[usize]) -> Result<Vec<String>, RebuildError> {
        self.narrowing()?.argv_with_subset(self, keep)
    }

    /// argv without the splittable argument's values: the command as it would read its standard
    /// input instead (a split's merge step, `sort -m` or a rerun, reads the copies' outputs).
    pub fn argv_without_splittable(&self) -> Result<Vec<String>, RebuildError> {
        self.narrowing()?.narrowed(self, &[])
    }

    /// What narrowing argv to subsets of the splittable values needs, computed once: a split
    /// across a thousand files narrows argv once per copy, each then in time of what it keeps.
    pub fn narrowing(&self) -> Result<Narrowing, RebuildError> {
        let arg = self.entry.splittable_arg().ok_or(RebuildError::NotSplittable)?;
        let split: Vec<usize> = (0..self.values.len()).filter(|&v| self.values[v].arg == arg).collect();
        // The occurrences of the argument that have values: each subset keeps, rewrites or
        // drops them. Every other word is kept as it is.
        let mut values_of: HashMap<usize, Vec<usize>> = HashMap::new();
        for (v, value) in self.values.iter().enumerate() {
            if self.occurrences.get(value.occurrence).is_some_and(|o| o.arg == arg) {
                values_of.entry(value.occurrence).or_default().push(v);
            }
        }
        let mut occurrences_of_word: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &o in values_of.keys() {
            for &w in &self.occurrences[o].words {
                occurrences_of_word.entry(w).or_default().push(o);
            }
        }
        let fixed = (0..self.argv.len()).filter(|w| !occurrences_of_word.contains_key(w)).collect();
        let mut bundled: Vec<usize> = values_of.keys().copied().filter(|&o| self.occurrences[o].bundled).collect();
        bundled.sort_unstable();
        Ok(Narrowing { arg, split, fixed, values_of, occurrences_of_word, bundled })
    }
    /// The classification as one line per word, for snapshots and debugging:
    /// `-cvf  -c:flag(c) v:flag(v) f:option(f)`.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for (i, word) in self.argv.iter().enumerate() {
            out.push_str(&format!("{word:?}"));
            for part in &self.words[i] {
                let text = &word[part.range.clone()];
                let role = match part.role {
                    Role::CommandName => "command".to_string(),
                    Role::Flag(arg) => {
                        format!("flag {}", self.entry.arg(arg).display_name(self.entry.options.long_arg_single_dash))
                    }
                    Role::OptionName(arg) => {
                        format!("option {}", self.entry.arg(arg).display_name(self.entry.options.long_arg_single_dash))
                    }
                    Role::Value(arg, ty) => {
                        let spec = self.entry.arg(arg);
                        let mut role = format!(
                            "{} of {}",
                            ty.keyword(),
                            spec.display_name(self.entry.options.long_arg_single_dash)
                        );
                        if arg.section == Section::Params {
                            role = format!("{} (PARAMS #{})", ty.keyword(), arg.index);
                        }
                        if spec.splittable {
                            role.push_str(", splittable");
                        }
                        if spec.config {
                            role.push_str(", config");
                        }
                        role
                    }
                    Role::EndOfOptions => "end of options".to_string(),
                    Role::Punctuation => continue,
                };
                if part.range == (0..word.len()) {
                    out.push_str(&format!(": {role}"));
                } else {
                    out.push_str(&format!("  {text:?}: {role}"));
                }
            }
            out.push('\n');
        }
        for default in &self.defaults {
            out.push_str(&format!("(default {:?}: {})\n", default.value, default.ty.keyword()));
        }
        out
    }
}

#[cfg(test)]
mod tests;
