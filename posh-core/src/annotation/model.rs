//! The annotation model: what the parser produces, the formatter prints and the matcher reads.

use crate::text::Span;

/// One entry: a model of one form of a command's command line.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CommandEntry {
    /// The command name; more than one word for `git status`.
    pub name: Vec<String>,
    pub name_span: Span,
    /// The whole entry, from the name to its last line.
    pub span: Span,
    pub options: CommandOptions,
    pub flags: Vec<ArgSpec>,
    pub optparams: Vec<ArgSpec>,
    pub params: Vec<ArgSpec>,
    pub examples: Vec<Example>,
}

impl CommandEntry {
    pub fn display_name(&self) -> String {
        self.name.join(" ")
    }

    pub fn section(&self, section: Section) -> &[ArgSpec] {
        match section {
            Section::Flags => &self.flags,
            Section::OptParams => &self.optparams,
            Section::Params => &self.params,
        }
    }

    /// Every argument with the section it belongs to and its index there.
    pub fn args(&self) -> impl Iterator<Item = (ArgRef, &ArgSpec)> {
        [Section::Flags, Section::OptParams, Section::Params].into_iter().flat_map(move |section| {
            self.section(section).iter().enumerate().map(move |(index, spec)| (ArgRef { section, index }, spec))
        })
    }

    pub fn arg(&self, arg: ArgRef) -> &ArgSpec {
        &self.section(arg.section)[arg.index]
    }

    pub fn splittable_arg(&self) -> Option<ArgRef> {
        self.args().find(|(_, spec)| spec.splittable).map(|(r, _)| r)
    }

    /// The entry with every span moved `by` bytes on: parsed from a part of a file that starts
    /// there.
    pub fn moved(mut self, by: usize) -> CommandEntry {
        let moved = |span: &mut Span| *span = Span::new(span.start + by, span.end + by);
        moved(&mut self.name_span);
        moved(&mut self.span);
        for spec in self.flags.iter_mut().chain(&mut self.optparams).chain(&mut self.params) {
            moved(&mut spec.span);
        }
        for example in &mut self.examples {
            moved(&mut example.span);
        }
        self
    }

    /// The entry with every span set to zero, for comparing models parsed from different text.
    pub fn without_spans(&self) -> CommandEntry {
        let strip = |specs: &[ArgSpec]| specs.iter().map(|s| ArgSpec { span: Span::default(), ..s.clone() }).collect();
        CommandEntry {
            name_span: Span::default(),
            span: Span::default(),
            flags: strip(&self.flags),
            optparams: strip(&self.optparams),
            params: strip(&self.params),
            examples: self.examples.iter().map(|e| Example { text: e.text.clone(), span: Span::default() }).collect(),
            ..self.clone()
        }
    }
}

/// The three argument sections (`EXAMPLES` holds no arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Section {
    Flags,
    OptParams,
    Params,
}

impl Section {
    pub fn keyword(self) -> &'static str {
        match self {
            Section::Flags => "FLAGS",
            Section::OptParams => "OPTPARAMS",
            Section::Params => "PARAMS",
        }
    }
}

/// Names one argument of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct ArgRef {
    pub section: Section,
    pub index: usize,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct CommandOptions {
    pub needs_current_dir: bool,
    pub splittable_across_input: bool,
    pub filters_input: bool,
    pub long_arg_single_dash: bool,
    pub merge: Option<MergeKind>,
    pub output_ratio: Option<f64>,
    /// At most this many bytes of output per input (and per total line), whatever the input's
    /// size: counts and checksums (`wc`, `grep -c`, `md5sum`).
    pub output_per_input: Option<f64>,
    /// The output is at most as large as the smallest of its inputs (`comm -12`: the lines both
    /// files hold).
    pub output_within_smallest_input: bool,
    /// Every run's output is whole lines: it ends with a newline or is empty (`grep`, `sort`).
    pub output_ends_lines: bool,
    /// Every run's output ends as its input ends (`cat`, `sed`).
    pub output_ends_as_input: bool,
    /// Its output holds every byte of its input, perhaps more (`cat`, `tac`): never predicted,
    /// nor learned, below its input.
    pub output_holds_input: bool,
    /// Every output line is a whole line of standard input (`sort`, `head -n`), unless an
    /// option that `changes_lines` is given.
    pub output_lines_of_input: bool,
    /// Standard input lists names of files the command opens (`xargs`).
    pub stdin_file_list: bool,
    /// It never reads its standard input (`rm`, `mkdir`, `touch`).
    pub ignores_stdin: bool,
    /// Its output files are FIFOs it makes (`mkfifo`).
    pub makes_fifos: bool,
    /// It writes its output to standard output as well as to its output files (`tee`).
    pub output_to_stdout_too: bool,
    /// The status meaning "nothing selected" rather than a failure (grep's 1).
    pub no_match_status: Option<u8>,
    /// Environment variables the command reads besides the locale.
    pub reads_env: Vec<String>,
    /// Its configuration files in the user's home, relative to it (`.gitconfig`).
    pub reads_home: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeKind {
    Concat,
    Rerun,
    Sum,
    SortMerge,
    UniqCount,
}

impl MergeKind {
    pub fn keyword(self) -> &'static str {
        match self {
            MergeKind::Concat => "concat",
            MergeKind::Rerun => "rerun",
            MergeKind::Sum => "sum",
            MergeKind::SortMerge => "sort_merge",
            MergeKind::UniqCount => "uniq_count",
        }
    }

    pub fn from_keyword(word: &str) -> Option<MergeKind> {
        [MergeKind::Concat, MergeKind::Rerun, MergeKind::Sum, MergeKind::SortMerge, MergeKind::UniqCount]
            .into_iter()
            .find(|m| m.keyword() == word)
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ArgSpec {
    pub short: Option<char>,
    pub long: Option<String>,
    pub desc: Option<String>,
    pub ty: ArgType,
    pub size: Size,
    pub default_value: Option<String>,
    pub multiple: bool,
    pub splittable: bool,
    pub attached: bool,
    pub required: bool,
    pub config: bool,
    /// An input read once, front to back, for its bytes alone: a stream may stand in for it.
    pub streamable: bool,
    /// The file's content lists names of files the command opens (`tar -T LIST`).
    pub file_list: bool,
    /// A flag that makes the command append to its output files (`tee -a`).
    pub appends: bool,
    /// The option's value bounds the output (`head -n N`, `head -c N`).
    pub bounds: Option<OutputBound>,
    /// A dash and digits (`head -5`) is this option with the digits as its value.
    pub dash_digits: bool,
    /// Given, the output's lines are no longer whole lines of the input (`grep -n`, `uniq -c`).
    pub changes_lines: bool,
    pub span: Span,
}

/// What an option's count bounds, per input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputBound {
    Lines,
    Bytes,
}

impl ArgSpec {
    /// How the option is written on a command line, for messages: `-f/--file`.
    pub fn display_name(&self, single_dash_long: bool) -> String {
        let dash = if single_dash_long { "-" } else { "--" };
        match (self.short, &self.long) {
            (Some(s), Some(l)) => format!("-{s}/{dash}{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, Some(l)) => format!("{dash}{l}"),
            (None, None) => "positional".to_string(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ArgType {
    InputFile,
    OutputFile,
    /// A name the command removes or replaces (`rm`, `rmdir`, the link `ln -f` replaces).
    RemovedFile,
    #[default]
    Str,
}

impl ArgType {
    pub fn keyword(self) -> &'static str {
        match self {
            ArgType::InputFile => "input_file",
            ArgType::OutputFile => "output_file",
            ArgType::RemovedFile => "removed_file",
            ArgType::Str => "str",
        }
    }

    pub fn from_keyword(word: &str) -> Option<ArgType> {
        match word {
            "input_file" => Some(ArgType::InputFile),
            "output_file" => Some(ArgType::OutputFile),
            "removed_file" => Some(ArgType::RemovedFile),
            "str" => Some(ArgType::Str),
            _ => None,
        }
    }

    pub fn is_file(self) -> bool {
        self != ArgType::Str
    }

    /// The command changes what the name holds: it writes it, or removes or replaces it.
    pub fn is_output(self) -> bool {
        matches!(self, ArgType::OutputFile | ArgType::RemovedFile)
    }
}

/// How many values an argument takes. A list separated by a space is the same as separate words,
/// so the parser stores it as `separator: None`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Size {
    /// Exactly this many words (`0` for flags).
    Count(u32),
    /// Any number of values: separate words, or one word split at `separator`.
    List { separator: Option<String> },
    /// Exactly `count` values: separate words, or one word split at `separator`.
    Specific { count: u32, separator: Option<String> },
}

impl Default for Size {
    fn default() -> Size {
        Size::Count(1)
    }
}

impl Size {
    pub fn is_list(&self) -> bool {
        matches!(self, Size::List { .. })
    }

    /// True when the number of words the argument takes is not fixed.
    pub fn is_variable(&self) -> bool {
        matches!(self, Size::List { separator: None })
    }

    pub fn separator(&self) -> Option<&str> {
        match self {
            Size::List { separator } | Size::Specific { separator, .. } => separator.as_deref(),
            Size::Count(_) => None,
        }
    }

    /// Can hold more than one value: what `splittable` needs.
    pub fn holds_many(&self) -> bool {
        match self {
            Size::Count(n) | Size::Specific { count: n, .. } => *n > 1,
            Size::List { .. } => true,
        }
    }
}

/// An example invocation, as written after `- ` in `EXAMPLES`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Example {
    pub text: String,
    pub span: Span,
}
