//! An annotation library: the shipped files, then the user's, where a later file that names a
//! command replaces every earlier entry of that command.

use std::collections::HashMap;

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
}

#[derive(Debug, Clone, Default)]
pub struct Library {
    entries: Vec<LibraryEntry>,
    /// Command name (first word) to indices into `entries`, in order of precedence.
    by_command: HashMap<String, Vec<usize>>,
}

impl Library {
    pub fn empty() -> Library {
        Library::default()
    }

    /// The shipped library. Its files are checked by the test suite, so they load whole, and
    /// are not checked again at every start (`annotation::entries_of_checked_file`).
    pub fn builtin() -> Library {
        let mut library = Library::empty();
        for (name, text) in builtin_sources() {
            let entries = annotation::entries_of_checked_file(text);
            library.replace_entries(entries.into_iter().map(|entry| LibraryEntry { entry, source: name.to_string() }));
        }
        library.reindex();
        library
    }

    /// Adds one annotation file. Its commands replace earlier entries of the same (full) name;
    /// returns the file's diagnostics.
    pub fn add_source(&mut self, name: &str, text: &str) -> Vec<Diagnostic> {
        let parsed = annotation::parse(text);
        self.replace_entries(parsed.entries.into_iter().map(|entry| LibraryEntry { entry, source: name.to_string() }));
        self.reindex();
        parsed.diagnostics
    }

    /// Adds `new` entries, each replacing earlier ones of the same (full) name.
    fn replace_entries(&mut self, new: impl Iterator<Item = LibraryEntry>) {
        let new: Vec<LibraryEntry> = new.collect();
        self.entries.retain(|existing| !new.iter().any(|e| e.entry.name == existing.entry.name));
        self.entries.extend(new);
    }

    fn reindex(&mut self) {
        self.by_command.clear();
        for (i, e) in self.entries.iter().enumerate() {
            self.by_command.entry(e.entry.name[0].clone()).or_default().push(i);
        }
        // A multi-word name (`git status`) is more specific than the bare command: try it first.
        for indices in self.by_command.values_mut() {
            indices.sort_by_key(|&i| std::cmp::Reverse(self.entries[i].entry.name.len()));
        }
    }

    pub fn entries(&self) -> impl Iterator<Item = &LibraryEntry> {
        self.entries.iter()
    }

    /// Distinct command names (`git status` counts apart from `git add`).
    pub fn command_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.entries.iter().map(|e| e.entry.display_name()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// The file an entry of this library came from.
    pub fn source_of(&self, entry: &CommandEntry) -> Option<&str> {
        self.entries.iter().find(|e| std::ptr::eq(&e.entry, entry)).map(|e| e.source.as_str())
    }

    /// The entries that could fit argv, in the order they are tried.
    pub fn candidates(&self, command: &str) -> Vec<&CommandEntry> {
        let name = matcher::command_name(command);
        self.by_command
            .get(name)
            .map_or_else(Vec::new, |indices| indices.iter().map(|&i| &self.entries[i].entry).collect())
    }

    /// Whether an entry of `command` is one `wanted` accepts: [`Library::candidates`] without
    /// gathering them (asked for every command of a script at each of an editor's keystrokes).
    pub fn any_candidate(&self, command: &str, wanted: impl Fn(&CommandEntry) -> bool) -> bool {
        let name = matcher::command_name(command);
        self.by_command.get(name).is_some_and(|indices| indices.iter().any(|&i| wanted(&self.entries[i].entry)))
    }

    /// Fits argv to the first entry of its command that accepts it.
    pub fn match_argv(&self, argv: &[String]) -> Result<Invocation<'_>, NoMatch> {
        let Some(first) = argv.first() else {
            return Err(NoMatch::Empty);
        };
        matcher::match_entries(&self.candidates(first), argv)
    }
}
