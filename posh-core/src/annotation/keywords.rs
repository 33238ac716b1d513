//! The one table of annotation keywords. The parser, completion, hover, lint messages and the
//! user docs all read it, so a keyword is added here and nowhere else.

/// Where a keyword may stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeywordKind {
    /// `FLAGS:`, `PARAMS:` ...
    Section,
    /// In `[...]` after the command name.
    CommandOption,
    /// In an argument: `short:c`, `type:input_file`.
    ArgField,
    /// A value of `type:`.
    Type,
    /// A value of `size:` (and the parameters of `list(...)`, `specific_size(...)`).
    Size,
    /// A value of `merge:`.
    Merge,
}

/// What follows a keyword's colon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueShape {
    /// A bare keyword: `splittable`.
    None,
    /// A single character: `short:c`.
    Char,
    /// A word: `long:invert-match`.
    Word,
    /// A quoted string: `desc:"..."`.
    String,
    /// A number: `output_ratio:0.1`, `size:3`.
    Number,
    /// One of the keywords of a kind: `type:input_file`.
    OneOf(KeywordKind),
    /// A parenthesised character or characters: `list_separator:(,)`.
    Separator,
}

#[derive(Debug)]
pub struct Keyword {
    pub name: &'static str,
    pub kind: KeywordKind,
    pub synonyms: &'static [&'static str],
    pub value: ValueShape,
    /// Marks what posh adds to the original POSH language.
    pub extension: bool,
    pub doc: &'static str,
}

macro_rules! kw {
    ($kind:ident $name:literal $( / $syn:literal )* : $value:expr, $ext:literal, $doc:literal) => {
        Keyword {
            name: $name,
            kind: KeywordKind::$kind,
            synonyms: &[$($syn),*],
            value: $value,
            extension: $ext,
            doc: $doc,
        }
    };
}

use ValueShape as V;

pub static KEYWORDS: &[Keyword] = &[
    kw!(Section "FLAGS": V::None, false, "Options without a value, such as `-v` or `--invert-match`."),
    kw!(Section "OPTPARAMS": V::None, false, "Options with a value: `-f FILE`, `-n5`, `--lines=5`."),
    kw!(Section "PARAMS": V::None, false, "Positional arguments, in order."),
    kw!(Section "EXAMPLES": V::None, true, "Example invocations, one per line. Each must fit its entry; CI runs them under strace to prove the annotation true."),
    kw!(CommandOption "needs_current_dir": V::None, false, "The command reads or writes under the working directory (`git status`), so it runs where the working directory lives."),
    kw!(CommandOption "splittable_across_input": V::None, false, "The command can run on pieces of its standard input, and the pieces' outputs combine (see `merge`)."),
    kw!(CommandOption "filters_input" / "reduces_input": V::None, false, "The output is much smaller than the input. The planner assumes half the input size, or `output_ratio` when given."),
    kw!(CommandOption "long_arg_single_dash" / "long_args_single_dash": V::None, false, "Long options are written with one dash: `-format gif`, `-name '*.txt'`."),
    kw!(CommandOption "merge": V::OneOf(KeywordKind::Merge), true, "How the outputs of split copies combine into the output of one run. Default: `concat`."),
    kw!(CommandOption "output_ratio": V::Number, true, "Expected output bytes per input byte (a number above 0). Refines `filters_input` for the planner's byte predictions."),
    kw!(CommandOption "output_per_input": V::Number, true, "At most this many bytes of output for each input (a file, besides its name, or standard input) and for a total line, whatever the input's size (`wc`, `grep -c`, checksums). The planner predicts that instead of a ratio."),
    kw!(CommandOption "output_within_smallest_input": V::None, true, "The output is at most as large as the smallest of its inputs (files it reads, and standard input when it reads that), whatever they hold (`comm -12`: the lines both files hold). The planner predicts that bound, or what earlier runs of the command measured when that is less."),
    kw!(CommandOption "output_ends_lines": V::None, true, "Every run's output is whole lines: it ends with a newline or is empty (`grep`, `cut`, `sort`). A split may then run the commands after it on each piece: no line straddles two pieces."),
    kw!(CommandOption "output_ends_as_input": V::None, true, "Every run's output ends as its input ends (`cat`, `sed`). A split may run the commands after it on each piece when every piece's input ends a line, which the planner checks on the files' last bytes."),
    kw!(CommandOption "output_holds_input": V::None, true, "Every byte of the command's input reaches its output, perhaps with more (`cat`, `tac`). The planner never predicts its output below its input: runs that measured less (a run over tiny files reads mostly the command's own libraries) do not lower it."),
    kw!(CommandOption "no_match_status": V::Number, true, "The exit status by which the command says it selected nothing (`grep`'s 1), not that it failed. The copies of a split command then exit with it only when each one did: a copy that selected something makes the whole succeed, as one run over every input would."),
    kw!(CommandOption "reads_env": V::String, true, "Environment variables the command reads besides the locale, separated by spaces (`git`'s `GIT_AUTHOR_NAME`). Those the script has set reach the command wherever it runs; a proxy refuses the ones that would change which program runs or what it loads (`PATH`, `LD_*`)."),
    kw!(CommandOption "reads_home": V::String, true, "Files in the user's home the command reads as its configuration, separated by spaces, each `~/...` (`~/.gitconfig`). When it runs at a proxy, it runs with a home of its own holding a copy of each one the user has, so it behaves as under bash; `~/.config/...` is read from `$XDG_CONFIG_HOME` when that is set."),
    kw!(CommandOption "ignores_stdin": V::None, true, "The command never reads its standard input (`rm`, `mkdir`, `touch`): as the first command of a pipeline, it may run at a proxy although the script's input stays at the client (a command reading no file is otherwise taken to read it)."),
    kw!(CommandOption "makes_fifos": V::None, true, "Its output files are FIFOs it makes (`mkfifo`): the planner takes those names as FIFOs in the pipelines after it, before they exist (a proxy opens no FIFO as a redirection: its other end is the script's)."),
    kw!(CommandOption "output_to_stdout_too": V::None, true, "The command writes its output to standard output as well as to its output files (`tee`). A command with output files is otherwise taken to write its output there only (`sort -o`, `tar -cf`), which the planner's byte predictions follow."),
    kw!(CommandOption "output_lines_of_input": V::None, true, "Every line of the output is a whole line of the command's standard input, in any order and any number of times (`sort`, `uniq`, `head -n`, `grep`), unless an option marked `changes_lines` is given. A list of names piped through it (`$(ls DIR | sort | head -n 5)`) then names only names of that list, which the value analysis follows."),
    kw!(CommandOption "stdin_file_list": V::None, true, "Standard input is a list of names of files the command opens (`xargs cat`, `cpio -o`). posh never sees those names, so the command runs at the client, where they mean what they mean under bash."),
    kw!(ArgField "short": V::Char, false, "One-character option name: `short:c` matches `-c`, and bundles such as `-cvf`."),
    kw!(ArgField "long": V::Word, false, "Long option name: `long:file` matches `--file VALUE` and `--file=VALUE` (or `-file` with `long_arg_single_dash`)."),
    kw!(ArgField "desc": V::String, false, "A description of the argument, shown on hover."),
    kw!(ArgField "type": V::OneOf(KeywordKind::Type), false, "What the value is: `input_file`, `output_file`, `removed_file` or `str` (the default)."),
    kw!(ArgField "size": V::OneOf(KeywordKind::Size), false, "How many values: `0`, `1`, a number, `list`, `list(list_separator:(,))` or `specific_size(size:N,list_separator:(X))`."),
    kw!(ArgField "default_value": V::String, false, "The value the command uses when the argument is absent (`ls` lists `\".\"`)."),
    kw!(ArgField "multiple": V::None, false, "The option may be given more than once (`-e P1 -e P2`)."),
    kw!(ArgField "splittable": V::None, false, "The command may run on any subset of this argument's values, once per subset, and the outputs combine. At most one per entry."),
    kw!(ArgField "attached": V::None, false, "The value is taken only when written in the same word (`pr -s:`); a bare `-s` takes none."),
    kw!(ArgField "required": V::None, true, "The entry fits only invocations that give this option (`tar -c` and `tar -x` get separate entries)."),
    kw!(ArgField "config": V::None, true, "A configuration input (`grep -f patterns`): every split copy reads it whole, and it is never split."),
    kw!(ArgField "streamable": V::None, true, "An input file (`type:input_file`) the command reads once, from its start to its end, and of which nothing but its bytes shows in the output (not its size, time or kind): a pipe in its place gives the same result (`comm`, `join`, `paste`). When such a file lies on another mount than the command's other files, the planner may run the command at the proxy of those and stream the file to it from its own mount's proxy, directly."),
    kw!(ArgField "file_list": V::None, true, "An input file (`type:input_file`; `-` is standard input) whose content is a list of names of files the command opens (`tar -T LIST`, `rsync --files-from=LIST`). An invocation that gives it runs at the client, where those names mean what they mean under bash."),
    kw!(ArgField "bounds_lines": V::None, true, "On an option whose value is a count of lines (`head -n N`): the output is at most N lines of each input. A signed value (`-5`, `+2`) bounds nothing. The planner assumes 100 bytes a line."),
    kw!(ArgField "bounds_bytes": V::None, true, "On an option whose value is a count of bytes, with GNU suffixes (`head -c 4K`): the output is at most that many bytes of each input. A signed value bounds nothing."),
    kw!(ArgField "dash_digits": V::None, true, "On an option with one value: a word of a dash and digits is this option with those digits as its value, the old form `head -5` and `tail -3` still take for `-n 5` and `-n 3`. At most one per entry, and not in an entry with a digit for a short option (`comm -12`)."),
    kw!(ArgField "appends": V::None, true, "On a flag: when given, the command appends to its output files instead of rewriting them (`tee -a`). On an output file argument: the command never rewrites what its files held; it appends to them, makes them, or changes only their times (`touch`, `mkfifo`). A proxy then appends in place, as for `>>`, and keeps no copy of the old content."),
    kw!(ArgField "changes_lines": V::None, true, "On an option of an entry with `output_lines_of_input`: when given, the output's lines are no longer whole lines of the input (`grep -n` numbers them, `uniq -c` counts them, `head -c` cuts one)."),
    kw!(Type "input_file": V::None, false, "A file (or directory) the command reads."),
    kw!(Type "output_file": V::None, false, "A file (or directory) the command writes."),
    kw!(Type "removed_file": V::None, false, "A name the command removes or replaces: a file, or an empty directory (`rm`, `rmdir`, the link `ln -f` replaces). At a proxy, what the name held is kept aside until the job completes (a hard link beside a file, the mode of an empty directory) and put back if it does not; a name that held nothing is removed again. A name holding a directory with entries keeps the command at the client."),
    kw!(Type "str": V::None, false, "A plain string: not a file."),
    kw!(Size "list": V::None, false, "Any number of values, as separate words (or, with `list_separator`, in one word)."),
    kw!(Size "specific_size": V::None, false, "Exactly `size` values separated by `list_separator`: `specific_size(size:2,list_separator:(,))`."),
    kw!(Size "list_separator": V::Separator, false, "The character between values in one word, in parentheses: `(,)`; `( )` means separate words."),
    kw!(Merge "concat": V::None, true, "Concatenate the copies' outputs in input order (what `cat`, `grep` and `tr` need)."),
    kw!(Merge "rerun": V::None, true, "Run the same command again over the concatenated outputs (`head`, `tail`, `uniq`)."),
    kw!(Merge "sum": V::None, true, "Add the copies' numbers column by column (`wc`)."),
    kw!(Merge "sort_merge": V::None, true, "Merge sorted outputs with `sort -m` and the invocation's own ordering options."),
    kw!(Merge "uniq_count": V::None, true, "Merge `uniq -c` outputs, adding the counts of a line that straddles a seam."),
];

/// Looks a keyword up by name or synonym within one kind.
pub fn lookup(kind: KeywordKind, name: &str) -> Option<&'static Keyword> {
    KEYWORDS.iter().find(|k| k.kind == kind && (k.name == name || k.synonyms.contains(&name)))
}

pub fn of_kind(kind: KeywordKind) -> impl Iterator<Item = &'static Keyword> {
    KEYWORDS.iter().filter(move |k| k.kind == kind)
}

/// The keyword of `kind` closest to a misspelt `name`, if it is close enough to suggest.
pub fn suggest(kind: KeywordKind, name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    of_kind(kind)
        .flat_map(|k| std::iter::once(k.name).chain(k.synonyms.iter().copied()).map(move |n| (k.name, n)))
        .map(|(canonical, spelling)| (crate::text::edit_distance(&name, &spelling.to_ascii_lowercase()), canonical))
        .filter(|&(d, _)| d <= 2 || (d <= 3 && name.len() > 8))
        .min_by_key(|&(d, _)| d)
        .map(|(_, canonical)| canonical)
}

/// The keyword reference in Markdown, generated from the table for docs/annotation-language.md.
pub fn reference_markdown() -> String {
    let mut out = String::new();
    for (kind, title) in [
        (KeywordKind::Section, "Sections"),
        (KeywordKind::CommandOption, "Command options"),
        (KeywordKind::ArgField, "Argument fields"),
        (KeywordKind::Type, "Types"),
        (KeywordKind::Size, "Sizes"),
        (KeywordKind::Merge, "Merge steps"),
    ] {
        out.push_str(&format!("### {title}\n\n| keyword | meaning |\n|---|---|\n"));
        for k in of_kind(kind) {
            let mut name = format!("`{}`", k.name);
            for s in k.synonyms {
                name.push_str(&format!(" (or `{s}`)"));
            }
            if k.extension {
                name.push_str(" *(posh)*");
            }
            out.push_str(&format!("| {name} | {} |\n", k.doc));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_misses() {
        assert_eq!(suggest(KeywordKind::ArgField, "splitable"), Some("splittable"));
        assert_eq!(suggest(KeywordKind::CommandOption, "reduce_input"), Some("filters_input"));
        assert_eq!(suggest(KeywordKind::Type, "inputfile"), Some("input_file"));
        assert_eq!(suggest(KeywordKind::ArgField, "zzzzzz"), None);
    }

    #[test]
    fn lookup_accepts_synonyms() {
        assert_eq!(lookup(KeywordKind::CommandOption, "reduces_input").unwrap().name, "filters_input");
        assert!(lookup(KeywordKind::ArgField, "FLAGS").is_none());
    }
}
