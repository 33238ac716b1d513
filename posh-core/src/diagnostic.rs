//! Diagnostics with stable codes. Each code's doc text is also its hover text and its entry in
//! the user docs (`posh-lsp check --explain CODE` prints it).

use crate::text::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A replacement of the text in `span` by `new_text`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TextEdit {
    pub span: Span,
    pub new_text: String,
}

/// An edit that resolves a diagnostic, offered as a quick fix.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<TextEdit>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    pub fix: Option<Fix>,
}

impl Diagnostic {
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { code, severity: code.severity(), message: message.into(), span, fix: None }
    }

    pub fn with_fix(mut self, fix: Fix) -> Diagnostic {
        self.fix = Some(fix);
        self
    }
}

macro_rules! codes {
    ($( $(#[doc = $doc:literal])* $variant:ident = $code:literal, $name:literal, $severity:ident; )*) => {
        /// Stable diagnostic codes. Never renumber; retire a code instead of reusing it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable code, such as `A106`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// A short kebab-case name, such as `second-splittable`.
            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            pub fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$severity,)* }
            }

            /// The documentation of the code, one paragraph: what it means and how to fix it.
            pub fn doc(self) -> String {
                let lines: &[&str] = match self { $(Code::$variant => &[$($doc,)*],)* };
                lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
            }

            pub fn from_code(code: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|c| c.as_str().eq_ignore_ascii_case(code))
            }
        }
    };
}

codes! {
    /// The parser met text it cannot read here: a stray character, a missing comma, colon or
    /// bracket. The entry is not loaded; the rest of the file is.
    Syntax = "A001", "syntax", Error;
    /// A string (`"..."`) or a bracket (`[`, `(`) is not closed on its line.
    Unclosed = "A002", "unclosed", Error;
    /// An entry header needs a colon after the command name and its options: `cat: PARAMS:[...]`.
    MissingColon = "A003", "missing-colon", Error;
    /// A block-layout line (`- ...`) stands before any entry or section that could own it.
    OrphanLine = "A004", "orphan-line", Error;
    /// Only `FLAGS`, `OPTPARAMS`, `PARAMS` and `EXAMPLES` are sections.
    UnknownSection = "A005", "unknown-section", Error;
    /// A command option in `[...]` after the name is not one posh knows; see the keyword table.
    UnknownCommandOption = "A101", "unknown-command-option", Error;
    /// An argument field (`short`, `long`, `type`, `size`, ...) is not one posh knows.
    UnknownField = "A102", "unknown-field", Error;
    /// A keyword has a value it cannot take (`type:file`, `size:lots`, a missing value).
    InvalidValue = "A103", "invalid-value", Error;
    /// The same field or command option is given twice in one place.
    Duplicate = "A104", "duplicate", Error;
    /// Two settings contradict each other (`type` on a flag, `size:0` on an option with a value).
    Conflict = "A105", "conflict", Error;
    /// At most one argument of an entry may be `splittable`: posh splits a command across one
    /// list of files.
    SecondSplittable = "A106", "second-splittable", Error;
    /// A `splittable` argument must hold a list of values (`size:list`): there is nothing to
    /// split in a single value.
    SplittableSingle = "A107", "splittable-single", Error;
    /// `attached` (the value is taken only in the same word, like `pr -s:`) makes sense only for
    /// `type:str` values.
    AttachedNonString = "A108", "attached-non-string", Error;
    /// An option in `FLAGS` or `OPTPARAMS` needs a `short` or a `long` name, or no word could
    /// ever match it.
    NamelessOption = "A109", "nameless-option", Error;
    /// Positional arguments (`PARAMS`) have no names: `short` and `long` do not apply.
    NamedPositional = "A110", "named-positional", Error;
    /// Two options of one entry share a short or a long name; the second could never match.
    DuplicateName = "A111", "duplicate-name", Error;
    /// `short` takes exactly one character.
    BadShortName = "A112", "bad-short-name", Error;
    /// Two positionals hold a variable number of words; posh could not tell where one ends.
    AmbiguousPositionals = "A113", "ambiguous-positionals", Error;
    /// `config` marks an input file that every split copy reads whole; it applies only to
    /// `type:input_file` and never to the `splittable` argument.
    BadConfigInput = "A114", "bad-config-input", Error;
    /// `output_ratio` is the expected output bytes per input byte: a number above zero. With
    /// `filters_input` it should not exceed 1.
    BadOutputRatio = "A115", "bad-output-ratio", Error;
    /// `file_list` marks an input file whose content lists names of files the command opens
    /// (`tar -T LIST`): it applies only to `type:input_file` values and never to the
    /// `splittable` argument. A flag that makes standard input such a list (`zip -@`) gets an
    /// entry of its own, with the flag `required` and the command option `stdin_file_list`.
    BadFileList = "A116", "bad-file-list", Error;
    /// `output_per_input` is the most bytes the command writes per input: a number above zero.
    /// `bounds_lines` and `bounds_bytes` go on an option with one value (`head -n N`), at most
    /// one of them per option.
    BadOutputBound = "A117", "bad-output-bound", Error;
    /// What a command takes along is misspelt: `no_match_status` is an exit status (1 to 255),
    /// `reads_env` names environment variables, and `reads_home` names files under the home,
    /// each written `~/path`.
    BadCarried = "A118", "bad-carried", Error;
    /// `streamable` marks an input file that the command reads once, from start to end, for its
    /// bytes alone, so that a stream from another proxy may stand in for it: it applies only to
    /// `type:input_file` values, and never to a `file_list` (whose names are opened, not read).
    BadStreamable = "A119", "bad-streamable", Error;
    /// `dash_digits` (a word like `-5` is this option with the value 5) goes on one option with
    /// one value per entry, and not in an entry where a digit is a short option of its own
    /// (`comm -12`), which would make `-12` mean two things.
    BadDashDigits = "A120", "bad-dash-digits", Error;
    /// An earlier entry for the same command fits every invocation this entry fits, so this
    /// entry can never win. Reorder the entries, or add a `required` option to the earlier one.
    UnreachableEntry = "A201", "unreachable-entry", Warning;
    /// An example invocation does not fit its own entry (or an earlier entry takes it). Fix the
    /// example or the entry: examples are how the library is checked against real behaviour.
    ExampleMismatch = "A202", "example-mismatch", Warning;
    /// A `merge` step is set but nothing can split the command (neither
    /// `splittable_across_input` nor a `splittable` argument), so it is never used.
    UnusedMerge = "A203", "unused-merge", Warning;
    /// The entry reads names of files from its standard input (`stdin_file_list`), so it always
    /// runs whole at the client: `splittable_across_input` or a `splittable` argument on it is
    /// never used.
    FileListNeverSplits = "A204", "file-list-never-splits", Warning;
    /// `changes_lines` marks an option that makes the output's lines other than whole lines of
    /// the input, an exception to the entry's `output_lines_of_input`: on an entry that does not
    /// state that, it means nothing. State `output_lines_of_input` on the entry, or drop it.
    UnusedChangesLines = "A205", "unused-changes-lines", Warning;
    /// A command of a pipeline that moves data has no annotation, so posh cannot tell its files
    /// from its other words and runs it at the client, pulling its input across the network.
    /// Write an annotation for it (see docs/annotation-language.md) in the workspace or in
    /// `~/.config/posh/annotations/`.
    ScriptNoAnnotation = "S001", "no-annotation", Warning;
    /// The command has annotations, but none of its entries fits this invocation (an option
    /// the entries do not list, a missing value), so it runs at the client. Add the option to
    /// an entry, or add an entry for this form of the command.
    ScriptNoEntryFits = "S002", "no-entry-fits", Warning;
    /// Even as posh places it, the pipeline is predicted to move more bytes across the network
    /// than the configured threshold (`maxMovedBytes`, 100 MB by default). Filter the data
    /// where it lives (an annotated `grep`, `head`, ... first in the pipeline), or annotate the
    /// commands that pin it to the client.
    ScriptMovesMuch = "S003", "moves-much", Warning;
    /// posh's parser (brush-parser) does not read these statements, though bash does (`select`,
    /// `for ((...))`, a `[[ ]]` over several lines, a comment inside `$(...)`, ...). bash runs
    /// them as they are and nothing in them is offloaded; the rest of the script is planned as
    /// usual. Rewrite the statement in a form posh reads to have its pipelines placed.
    ScriptNotParsed = "S004", "not-parsed", Warning;
    /// posh-lsp could not read an edit the editor sent of this file (a message that was not
    /// UTF-8, not JSON, or not an edit), so its copy of the text is no longer the editor's:
    /// hints, lenses and other diagnostics of the file are withheld rather than shown in the
    /// wrong places. Close and reopen the file (or have the editor send it whole) to
    /// resynchronise; the editor's log or posh-lsp's standard error names the message.
    ScriptOutOfStep = "S005", "out-of-step", Warning;
    /// posh.toml cannot be used as posh's configuration: it is not TOML, or names a key posh
    /// does not know, or gives a value of the wrong type or one that makes no sense, or mounts
    /// one path twice. posh-exec refuses to run with it, and posh-lsp plans as if nothing were
    /// mounted until it is fixed. The message names the key and what was expected
    /// (docs/configuration.md lists them).
    ConfigInvalid = "C001", "config-invalid", Error;
    /// This posh.toml is not the one the editor plans with: posh-lsp uses the nearest posh.toml
    /// above the workspace's root (or the user's), while posh-exec uses the nearest one above
    /// the directory it runs in. Scripts run from this directory use this file, and their hints
    /// in the editor show another plan. Open this directory as the workspace, or move the
    /// mounts into the workspace's posh.toml.
    ConfigNotUsed = "C002", "config-not-used", Warning;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_documented() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            assert!(seen.insert(code.as_str()), "{} twice", code.as_str());
            assert!(!code.doc().trim().is_empty());
            assert_eq!(Code::from_code(code.as_str()), Some(*code));
        }
    }
}
