//! Semantic checks of lowered entries: each entry on its own, then the entries of one command
//! together (shadowed entries, examples that do not fit).

use crate::annotation::model::{ArgType, CommandEntry, Section, Size};
use crate::diagnostic::{Code, Diagnostic};
use crate::matcher::{self, Mismatch, NoMatch};
use crate::text::LineIndex;

pub fn check_entry(entry: &CommandEntry, diags: &mut Vec<Diagnostic>) {
    let mut push = |code, span, message: String| diags.push(Diagnostic::new(code, span, message));
    let mut splittable_seen = false;
    let mut dash_digits_seen = false;
    let digit_option = entry.args().any(|(_, spec)| spec.short.is_some_and(|c| c.is_ascii_digit()));
    for (arg, spec) in entry.args() {
        if spec.dash_digits {
            let why = if arg.section != Section::OptParams || spec.size != Size::Count(1) {
                Some("`dash_digits` goes on an option with one value (OPTPARAMS, `size:1`)")
            } else if dash_digits_seen {
                Some("a second `dash_digits` option: `-5` could mean either")
            } else if digit_option {
                Some("`dash_digits` in an entry with a digit for a short option: `-12` could be two flags")
            } else {
                None
            };
            if let Some(why) = why {
                push(Code::BadDashDigits, spec.span, why.into());
            }
            dash_digits_seen = true;
        }
        let is_option = arg.section != Section::Params;
        if spec.splittable {
            if splittable_seen {
                push(
                    Code::SecondSplittable,
                    spec.span,
                    "a second `splittable` argument: an entry splits across one argument only".into(),
                );
            }
            splittable_seen = true;
            if !spec.size.holds_many() {
                push(
                    Code::SplittableSingle,
                    spec.span,
                    "a `splittable` argument needs a list of values (`size:list`)".into(),
                );
            }
        }
        if spec.attached && spec.ty != ArgType::Str {
            push(
                Code::AttachedNonString,
                spec.span,
                format!("`attached` applies to `type:str` values, not `{}`", spec.ty.keyword()),
            );
        }
        if is_option && spec.short.is_none() && spec.long.is_none() {
            push(
                Code::NamelessOption,
                spec.span,
                format!("an option in {} needs `short` or `long`", arg.section.keyword()),
            );
        }
        if !is_option && (spec.short.is_some() || spec.long.is_some()) {
            push(
                Code::NamedPositional,
                spec.span,
                "positionals have no names: move named arguments to FLAGS or OPTPARAMS".into(),
            );
        }
        if !is_option && spec.required {
            push(
                Code::Conflict,
                spec.span,
                "`required` applies to options; a positional's `size` says whether it is required".into(),
            );
        }
        if spec.config && (spec.ty != ArgType::InputFile || spec.splittable) {
            push(
                Code::BadConfigInput,
                spec.span,
                "`config` marks a whole input file read by every copy: `type:input_file`, never `splittable`".into(),
            );
        }
        if spec.streamable && (spec.ty != ArgType::InputFile || spec.file_list) {
            push(
                Code::BadStreamable,
                spec.span,
                "`streamable` marks an input file read once for its bytes: `type:input_file`, never `file_list`".into(),
            );
        }
        if spec.file_list && (spec.ty != ArgType::InputFile || spec.splittable) {
            let message = if arg.section == Section::Flags {
                "`file_list` marks an input file that lists file names; for a flag that makes standard input \
                 such a list, give the flag its own entry, `required`, with the command option `stdin_file_list`"
            } else {
                "`file_list` marks an input file that lists file names: `type:input_file`, never `splittable`"
            };
            push(Code::BadFileList, spec.span, message.into());
        }
        if spec.appends && arg.section != Section::Flags && spec.ty != ArgType::OutputFile {
            push(
                Code::Conflict,
                spec.span,
                "`appends` marks a flag that makes the command append to its output files, or an output file \
                 (`type:output_file`) the command never rewrites; move it to FLAGS"
                    .into(),
            );
        }
        if spec.appends && !entry.args().any(|(_, other)| other.ty == ArgType::OutputFile) {
            push(
                Code::Conflict,
                spec.span,
                "`appends` says how the command writes its output files, but the entry has none (`type:output_file`)"
                    .into(),
            );
        }
    }
    check_duplicate_names(entry, diags);
    let variable: Vec<_> = entry.params.iter().filter(|s| s.size.is_variable()).collect();
    if let Some(second) = variable.get(1) {
        diags.push(Diagnostic::new(
            Code::AmbiguousPositionals,
            second.span,
            "a second positional of variable length: posh could not tell where the first one ends",
        ));
    }
    let options = &entry.options;
    if let Some(ratio) = options.output_ratio
        && (ratio <= 0.0 || (options.filters_input && ratio > 1.0))
    {
        let why = if ratio <= 0.0 {
            "must be above 0"
        } else {
            "contradicts `filters_input` (above 1 means the output grows)"
        };
        diags.push(Diagnostic::new(Code::BadOutputRatio, entry.name_span, format!("`output_ratio:{ratio}` {why}")));
    }
    if let Some(bytes) = options.output_per_input.filter(|&b| b <= 0.0) {
        diags.push(Diagnostic::new(
            Code::BadOutputBound,
            entry.name_span,
            format!("`output_per_input:{bytes}` must be above 0"),
        ));
    }
    if options.stdin_file_list && (options.splittable_across_input || entry.splittable_arg().is_some()) {
        diags.push(Diagnostic::new(
            Code::FileListNeverSplits,
            entry.name_span,
            "`stdin_file_list` keeps the command whole at the client, so it is never split: drop \
             `splittable_across_input` and `splittable`",
        ));
    }
    if !options.output_lines_of_input {
        for (_, spec) in entry.args().filter(|(_, spec)| spec.changes_lines) {
            diags.push(Diagnostic::new(
                Code::UnusedChangesLines,
                spec.span,
                "`changes_lines` marks an exception to `output_lines_of_input`, which the entry does not state",
            ));
        }
    }
    if options.merge.is_some() && !options.splittable_across_input && entry.splittable_arg().is_none() {
        diags.push(Diagnostic::new(
            Code::UnusedMerge,
            entry.name_span,
            "`merge` is set but the entry can never be split: add `splittable_across_input` or a `splittable` argument",
        ));
    }
}

fn check_duplicate_names(entry: &CommandEntry, diags: &mut Vec<Diagnostic>) {
    let options: Vec<_> = entry.args().filter(|(r, _)| r.section != Section::Params).map(|(_, s)| s).collect();
    for (i, spec) in options.iter().enumerate() {
        for earlier in &options[..i] {
            let short = spec.short.is_some() && spec.short == earlier.short;
            let long = spec.long.is_some() && spec.long == earlier.long;
            if short || long {
                let name = if short {
                    format!("-{}", spec.short.unwrap_or_default())
                } else {
                    format!("--{}", spec.long.clone().unwrap_or_default())
                };
                diags.push(Diagnostic::new(
                    Code::DuplicateName,
                    spec.span,
                    format!("`{name}` is named twice in this entry; the second can never match"),
                ));
            }
        }
    }
}

/// Checks the loaded entries of one file together. `entries` are in file order.
pub fn check_entries(entries: &[CommandEntry], lines: &LineIndex, diags: &mut Vec<Diagnostic>) {
    let line_of = |e: &CommandEntry| lines.line_of(e.span.start) + 1;
    for (i, entry) in entries.iter().enumerate() {
        let earlier: Vec<&CommandEntry> = entries[..i].iter().filter(|e| e.name == entry.name).collect();
        if let Some(shadow) = earlier.iter().find(|e| shadows(e, entry)) {
            diags.push(Diagnostic::new(
                Code::UnreachableEntry,
                entry.name_span,
                format!(
                    "this entry can never win: the entry of `{}` on line {} fits every invocation it fits",
                    shadow.display_name(),
                    line_of(shadow)
                ),
            ));
        }
        let same_command: Vec<&CommandEntry> = entries.iter().filter(|e| e.name[0] == entry.name[0]).collect();
        for example in &entry.examples {
            if let Some(message) = check_example(&same_command, entry, &example.text, &line_of) {
                diags.push(Diagnostic::new(Code::ExampleMismatch, example.span, message));
            }
        }
    }
}

fn check_example(
    candidates: &[&CommandEntry],
    entry: &CommandEntry,
    text: &str,
    line_of: &dyn Fn(&CommandEntry) -> usize,
) -> Option<String> {
    let argv = match shell_words::split(text) {
        Ok(argv) => argv,
        Err(e) => return Some(format!("the example is not a valid command line: {e}")),
    };
    match matcher::match_entries(candidates.iter().copied(), &argv) {
        Ok(invocation) if std::ptr::eq(invocation.entry, entry) => None,
        Ok(invocation) => Some(format!("the entry on line {} takes this example first", line_of(invocation.entry))),
        Err(NoMatch::NoEntryFits { attempts, .. }) => {
            let own = attempts.iter().find(|(i, _)| std::ptr::eq(candidates[*i], entry));
            let why =
                own.map_or_else(|| "it names another command".to_string(), |(_, m): &(usize, Mismatch)| m.to_string());
            Some(format!("the example does not fit this entry: {why}"))
        }
        Err(other) => Some(format!("the example does not fit this entry: {other}")),
    }
}

fn named_options(entry: &CommandEntry) -> Vec<(Section, &crate::annotation::model::ArgSpec)> {
    entry.args().filter(|(r, _)| r.section != Section::Params).map(|(r, s)| (r.section, s)).collect()
}

/// True when every invocation that fits `later` also fits `earlier`.
fn shadows(earlier: &CommandEntry, later: &CommandEntry) -> bool {
    if earlier.options.long_arg_single_dash != later.options.long_arg_single_dash {
        return false;
    }
    let (earlier_options, later_options) = (named_options(earlier), named_options(later));
    let same_option = |a: &crate::annotation::model::ArgSpec, b: &crate::annotation::model::ArgSpec| {
        a.short == b.short && a.long == b.long
    };
    // Everything the later entry accepts, the earlier one accepts in the same way...
    let accepts_all = later_options.iter().all(|(section, spec)| {
        earlier_options.iter().any(|(s, e)| {
            s == section
                && same_option(e, spec)
                && e.size == spec.size
                && e.attached == spec.attached
                && (e.dash_digits || !spec.dash_digits)
                && (e.multiple || !spec.multiple)
        })
    });
    // ...and demands nothing the later one may lack.
    let demands_nothing_more = earlier_options
        .iter()
        .filter(|(_, e)| e.required)
        .all(|(_, e)| later_options.iter().any(|(_, l)| same_option(e, l) && l.required));
    let shape = |e: &CommandEntry| e.params.iter().map(|p| p.size.clone()).collect::<Vec<Size>>();
    accepts_all && demands_nothing_more && shape(earlier) == shape(later)
}
