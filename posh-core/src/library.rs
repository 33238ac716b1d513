//! An annotation library: the shipped files, then the user's, where a later file that names a
//! command replaces every earlier entry of that command.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::annotation::{self, CommandEntry};
use crate::diagnostic::Diagnostic;
use crate::matcher::{self, Invocation, NoMatch};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_annotations.rs"));
}

/// The shipped annotation files, `(file name, text)`, embedded at build time.
pub fn builtin_sources() -> &'static [(&'static str, &'static str)] {
    builtin::BUILTIN
}

/// An entry and the source file it came from.
#[derive(Debug, Clone)]
pub struct LibraryEntry {
    pub entry: CommandEntry,
    pub source: String,
    /// How plans show it ([`Library::shown`]), made when first asked for.
    shown: OnceLock<Arc<str>>,
}

impl LibraryEntry {
    fn new(entry: CommandEntry, source: String) -> LibraryEntry {
        LibraryEntry { entry, source, shown: OnceLock::new() }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Library {
    slots: Vec<Slot>,
    /// Command name (first word) to indices into `slots`, in order of precedence.
    by_command: HashMap<String, Vec<usize>, rustc_hash::FxBuildHasher>,
}

/// An entry of the library, or a shipped one not parsed until it is first asked for: a run
/// uses a few of the shipped commands, and parsing all of them at every start was most of a
/// short script's time under posh-exec (about 13 of 18 ms).
#[derive(Debug, Clone)]
enum Slot {
    Parsed(LibraryEntry),
    Shipped {
        /// As its first line writes it (`git status`).
        name: Vec<String>,
        file: &'static str,
        /// Its text, from its first line to the next entry's, and where that starts in `file`.
        text: &'static str,
        at: usize,
        parsed: OnceLock<Option<LibraryEntry>>,
    },
}

impl Slot {
    fn name(&self) -> &[String] {
        match self {
            Slot::Parsed(e) => &e.entry.name,
            Slot::Shipped { name, .. } => name,
        }
    }

    /// Its entry, if parsed already.
    fn parsed(&self) -> Option<&LibraryEntry> {
        match self {
            Slot::Parsed(e) => Some(e),
            Slot::Shipped { parsed, .. } => parsed.get()?.as_ref(),
        }
    }

    fn entry(&self) -> Option<&LibraryEntry> {
        match self {
            Slot::Parsed(e) => Some(e),
            Slot::Shipped { file, text, at, parsed, .. } => parsed
                .get_or_init(|| {
                    let [entry] = <[CommandEntry; 1]>::try_from(annotation::entries_of_checked_file(text)).ok()?;
                    Some(LibraryEntry::new(entry.moved(*at), file.to_string()))
                })
                .as_ref(),
        }
    }
}

/// The entries of a shipped annotation file, unparsed: each from its first line (a line at the
/// left margin that is not a comment or a list item: `grep[...]:`, `cat:`) to the next one's,
/// with the name that line gives and where it starts.
fn shipped_entries(text: &'static str) -> Vec<(Vec<String>, &'static str, usize)> {
    let mut starts: Vec<(usize, Vec<String>)> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let first = line.chars().next().unwrap_or(' ');
        if !first.is_whitespace() && first != '#' && first != '-' {
            let name = &line[..line.find(['[', ':']).unwrap_or(line.len())];
            starts.push((at, name.split_whitespace().map(str::to_string).collect()));
        }
        at += line.len();
    }
    let ends = starts.iter().skip(1).map(|(start, _)| *start).chain([text.len()]).collect::<Vec<_>>();
    starts.into_iter().zip(ends).map(|((start, name), end)| (name, &text[start..end], start)).collect()
}

impl Library {
    pub fn empty() -> Library {
        Library::default()
    }

    /// The shipped library. Its files are checked by the test suite, so they load whole, and
    /// are not checked again at every start (`annotation::entries_of_checked_file`); each entry
    /// is parsed when it is first asked for.
    pub fn builtin() -> Library {
        let mut library = Library::empty();
        for (file, text) in builtin_sources() {
            let entries = shipped_entries(text).into_iter().map(|(name, text, at)| Slot::Shipped {
                name,
                file,
                text,
                at,
                parsed: OnceLock::new(),
            });
            library.replace_entries(entries);
        }
        library.reindex();
        library
    }

    /// Adds one annotation file. Its commands replace earlier entries of the same (full) name;
    /// returns the file's diagnostics.
    pub fn add_source(&mut self, name: &str, text: &str) -> Vec<Diagnostic> {
        let parsed = annotation::parse(text);
        let entries = parsed.entries.into_iter().map(|entry| LibraryEntry::new(entry, name.to_string()));
        self.replace_entries(entries.map(Slot::Parsed));
        self.reindex();
        parsed.diagnostics
    }

    /// Adds `new` entries, each replacing earlier ones of the same (full) name.
    fn replace_entries(&mut self, new: impl Iterator<Item = Slot>) {
        let new: Vec<Slot> = new.collect();
        self.slots.retain(|existing| !new.iter().any(|e| e.name() == existing.name()));
        self.slots.extend(new);
    }

    fn reindex(&mut self) {
        self.by_command.clear();
        for (i, slot) in self.slots.iter().enumerate() {
            if let Some(first) = slot.name().first() {
                self.by_command.entry(first.clone()).or_default().push(i);
            }
        }
        // A multi-word name (`git status`) is more specific than the bare command: try it first.
        for indices in self.by_command.values_mut() {
            indices.sort_by_key(|&i| std::cmp::Reverse(self.slots[i].name().len()));
        }
    }

    /// Every entry (parsing the shipped ones not parsed yet).
    pub fn entries(&self) -> impl Iterator<Item = &LibraryEntry> {
        self.slots.iter().filter_map(Slot::entry)
    }

    /// Distinct command names (`git status` counts apart from `git add`).
    pub fn command_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.entries().map(|e| e.entry.display_name()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// The file an entry of this library came from (among those parsed: it was asked for).
    pub fn source_of(&self, entry: &CommandEntry) -> Option<&str> {
        self.parsed_entry(entry).map(|e| e.source.as_str())
    }

    /// An entry as plans show it: its header and the file it came from,
    /// `wc[filters_input, merge:sum] (text.posh)` (formatted once: every command planned shows it).
    pub fn shown(&self, entry: &CommandEntry) -> Arc<str> {
        let header = || crate::annotation::format::format_header(entry);
        match self.parsed_entry(entry) {
            Some(found) => found.shown.get_or_init(|| format!("{} ({})", header(), found.source).into()).clone(),
            None => header().into(),
        }
    }

    /// The library's own record of `entry` (among the parsed ones), looked up by its name.
    fn parsed_entry(&self, entry: &CommandEntry) -> Option<&LibraryEntry> {
        let indices = entry.name.first().and_then(|first| self.by_command.get(first.as_str()));
        let mut parsed = indices.into_iter().flatten().filter_map(|&i| self.slots[i].parsed());
        parsed.find(|e| std::ptr::eq(&e.entry, entry))
    }

    /// The entries of `command`'s name, in the order they are tried.
    fn of_command(&self, command: &str) -> impl Iterator<Item = &CommandEntry> {
        let indices = self.by_command.get(matcher::command_name(command)).map_or(&[][..], Vec::as_slice);
        indices.iter().filter_map(|&i| self.slots[i].entry()).map(|e| &e.entry)
    }

    /// The entries that could fit argv, in the order they are tried.
    pub fn candidates(&self, command: &str) -> Vec<&CommandEntry> {
        self.of_command(command).collect()
    }

    /// Whether `command` has an entry (parsing its first only).
    pub fn annotates(&self, command: &str) -> bool {
        self.of_command(command).next().is_some()
    }

    /// Whether an entry of `command` makes FIFOs (`makes_fifos`): asked for every command of a
    /// script, at each of an editor's keystrokes and at each run's start, so a shipped entry whose
    /// text does not name the option is not parsed for it.
    pub fn makes_fifos(&self, command: &str) -> bool {
        let indices = self.by_command.get(matcher::command_name(command)).map_or(&[][..], Vec::as_slice);
        indices.iter().any(|&i| match &self.slots[i] {
            Slot::Shipped { text, .. } if !text.contains("makes_fifos") => false,
            slot => slot.entry().is_some_and(|e| e.entry.options.makes_fifos),
        })
    }

    /// Whether `argv`, reading standard input, prints only whole lines of it
    /// ([`Invocation::prints_lines_of_input`]); `false` when no entry fits.
    pub fn prints_lines_of_input(&self, argv: &[String]) -> bool {
        self.match_argv(argv).is_ok_and(|invocation| invocation.prints_lines_of_input())
    }

    /// Fits argv to the first entry of its command that accepts it, parsing the entries after it
    /// only when it does not fit.
    pub fn match_argv(&self, argv: &[String]) -> Result<Invocation<'_>, NoMatch> {
        let Some(first) = argv.first() else {
            return Err(NoMatch::Empty);
        };
        matcher::match_entries(self.of_command(first), argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped entries, each parsed alone when first asked for, are what parsing the whole
    /// files gives (names, spans into their file, sources, order), and asking for one command
    /// parses only its entries.
    #[test]
    fn shipped_entries_parsed_one_by_one_are_the_whole_files() {
        let mut whole: Vec<LibraryEntry> = Vec::new();
        for (file, text) in builtin_sources() {
            let entries = annotation::entries_of_checked_file(text);
            whole.retain(|existing| !entries.iter().any(|e| e.name == existing.entry.name));
            whole.extend(entries.into_iter().map(|entry| LibraryEntry::new(entry, file.to_string())));
        }
        let library = Library::builtin();
        let parsed = |library: &Library| {
            library.slots.iter().filter(|s| matches!(s, Slot::Shipped { parsed, .. } if parsed.get().is_some())).count()
        };
        assert_eq!(parsed(&library), 0);
        let greps = library.candidates("/usr/bin/grep");
        assert!(greps.len() > 1, "grep has several forms");
        assert!(greps.iter().all(|g| library.source_of(g) == Some("search.posh")));
        assert_eq!(parsed(&library), greps.len(), "only grep's entries are parsed");
        let one_by_one: Vec<&LibraryEntry> = library.entries().collect();
        assert_eq!(one_by_one.len(), whole.len());
        for (lazy, eager) in one_by_one.into_iter().zip(&whole) {
            assert_eq!((&lazy.source, &lazy.entry), (&eager.source, &eager.entry));
        }
    }

    /// What a run's start asks of every command parses no more than it needs: whether it makes
    /// FIFOs parses none of an entry that does not name the option, and matching argv parses the
    /// entries up to the one that fits.
    #[test]
    fn asking_about_a_command_parses_only_what_the_answer_needs() {
        let library = Library::builtin();
        let parsed = || {
            library.slots.iter().filter(|s| matches!(s, Slot::Shipped { parsed, .. } if parsed.get().is_some())).count()
        };
        assert!(!library.makes_fifos("grep"));
        assert_eq!(parsed(), 0);
        assert!(library.makes_fifos("mkfifo"));
        assert_eq!(parsed(), 1);
        let argv = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<String>>();
        let fits = library.match_argv(&argv(&["grep", "-c", "TODO", "a.txt"])).expect("an entry fits");
        assert_eq!(parsed(), 1 + fits.entry_index + 1);
        assert!(fits.entry_index + 1 < library.candidates("grep").len(), "the test needs an entry after it");
        // The same answer as trying every entry.
        let every = library.candidates("grep");
        let whole = matcher::match_entries(every.iter().copied(), &argv(&["grep", "-c", "TODO", "a.txt"]));
        assert!(whole.is_ok_and(|w| std::ptr::eq(w.entry, fits.entry)));
    }
}
