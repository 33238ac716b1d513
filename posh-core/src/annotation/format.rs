//! Prints entries in the block layout. Parsing the output gives the same model back.

use crate::annotation::ParsedFile;
use crate::annotation::model::{ArgSpec, ArgType, CommandEntry, OutputBound, Section, Size};
use crate::annotation::syntax::{SyntaxElement, SyntaxKind, quote};

/// An entry's name and command options, as its header shows them: `wc[filters_input, merge:sum]`.
pub fn format_header(entry: &CommandEntry) -> String {
    let mut out = entry.display_name();
    let o = &entry.options;
    let mut options: Vec<String> = [
        (o.needs_current_dir, "needs_current_dir"),
        (o.splittable_across_input, "splittable_across_input"),
        (o.filters_input, "filters_input"),
        (o.long_arg_single_dash, "long_arg_single_dash"),
        (o.stdin_file_list, "stdin_file_list"),
        (o.ignores_stdin, "ignores_stdin"),
        (o.makes_fifos, "makes_fifos"),
        (o.output_to_stdout_too, "output_to_stdout_too"),
        (o.output_ends_lines, "output_ends_lines"),
        (o.output_ends_as_input, "output_ends_as_input"),
        (o.output_holds_input, "output_holds_input"),
        (o.output_lines_of_input, "output_lines_of_input"),
        (o.output_within_smallest_input, "output_within_smallest_input"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name.to_string())
    .collect();
    if let Some(merge) = o.merge {
        options.push(format!("merge:{}", merge.keyword()));
    }
    if let Some(ratio) = o.output_ratio {
        options.push(format!("output_ratio:{ratio}"));
    }
    if let Some(bytes) = o.output_per_input {
        options.push(format!("output_per_input:{bytes}"));
    }
    if let Some(status) = o.no_match_status {
        options.push(format!("no_match_status:{status}"));
    }
    if !o.reads_env.is_empty() {
        options.push(format!("reads_env:{}", quote(&o.reads_env.join(" "))));
    }
    if !o.reads_home.is_empty() {
        let files: Vec<String> = o.reads_home.iter().map(|f| format!("~/{f}")).collect();
        options.push(format!("reads_home:{}", quote(&files.join(" "))));
    }
    if !options.is_empty() {
        out.push_str(&format!("[{}]", options.join(", ")));
    }
    out
}

/// One entry in the block layout, ending with a newline.
pub fn format_entry(entry: &CommandEntry) -> String {
    let mut out = format_header(entry);
    out.push_str(":\n");
    for section in [Section::Flags, Section::OptParams, Section::Params] {
        let specs = entry.section(section);
        if specs.is_empty() {
            continue;
        }
        out.push_str(&format!("- {}:\n", section.keyword()));
        for spec in specs {
            out.push_str(&format!("  - {}\n", format_arg(spec, section)));
        }
    }
    if !entry.examples.is_empty() {
        out.push_str("- EXAMPLES:\n");
        for example in &entry.examples {
            out.push_str(&format!("  - {}\n", example.text));
        }
    }
    out
}

fn format_arg(spec: &ArgSpec, section: Section) -> String {
    let mut fields = Vec::new();
    if let Some(c) = spec.short {
        fields.push(format!("short:{c}"));
    }
    if let Some(long) = &spec.long {
        fields.push(format!("long:{long}"));
    }
    if spec.ty != ArgType::Str {
        fields.push(format!("type:{}", spec.ty.keyword()));
    }
    let default_size = if section == Section::Flags { Size::Count(0) } else { Size::Count(1) };
    if spec.size != default_size {
        fields.push(format!("size:{}", format_size(&spec.size)));
    }
    if let Some(value) = &spec.default_value {
        fields.push(format!("default_value:{}", quote(value)));
    }
    for (on, name) in [
        (spec.multiple, "multiple"),
        (spec.splittable, "splittable"),
        (spec.attached, "attached"),
        (spec.required, "required"),
        (spec.config, "config"),
        (spec.streamable, "streamable"),
        (spec.file_list, "file_list"),
        (spec.appends, "appends"),
        (spec.bounds == Some(OutputBound::Lines), "bounds_lines"),
        (spec.bounds == Some(OutputBound::Bytes), "bounds_bytes"),
        (spec.dash_digits, "dash_digits"),
        (spec.changes_lines, "changes_lines"),
    ] {
        if on {
            fields.push(name.to_string());
        }
    }
    if let Some(desc) = &spec.desc {
        fields.push(format!("desc:{}", quote(desc)));
    }
    fields.join(", ")
}

fn format_size(size: &Size) -> String {
    match size {
        Size::Count(n) => n.to_string(),
        Size::List { separator: None } => "list".to_string(),
        Size::List { separator: Some(sep) } => format!("list(list_separator:({sep}))"),
        Size::Specific { count, separator } => {
            format!("specific_size(size:{count},list_separator:({}))", separator.as_deref().unwrap_or(" "))
        }
    }
}

/// Formats a whole file: every entry that loaded cleanly and holds no comment is printed in the
/// block layout; everything else (comments between entries, entries with errors) is kept as is.
pub fn format_source(source: &str, parsed: &ParsedFile) -> String {
    let mut out = String::with_capacity(source.len());
    let mut copied_to = 0;
    for child in &parsed.tree.children {
        let SyntaxElement::Node(node) = child else {
            continue;
        };
        if node.kind != SyntaxKind::Entry || node.tokens().iter().any(|t| t.kind == SyntaxKind::Comment) {
            continue;
        }
        let Some(entry) = parsed.entries.iter().find(|e| e.span.start == node.span.start) else {
            continue;
        };
        out.push_str(&source[copied_to..node.span.start]);
        out.push_str(&format_entry(entry));
        // The entry node ends with its last newline, which format_entry prints too.
        copied_to = node.span.end;
    }
    out.push_str(&source[copied_to..]);
    out
}
