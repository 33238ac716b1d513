//! Interprets the raw entries of the syntax through the keyword table into the model, reporting
//! unknown keywords (with a fix when one is a typo away), bad values and duplicates.

use crate::annotation::keywords::{self, KeywordKind, ValueShape};
use crate::annotation::model::{ArgSpec, ArgType, CommandEntry, CommandOptions, MergeKind, OutputBound, Size};
use crate::annotation::syntax::{RawEntry, RawField, RawItem, RawValue, RawValueKind};
use crate::diagnostic::{Code, Diagnostic, Fix, TextEdit};
use crate::text::Span;

/// Lowers one entry. `None` when the entry has no name; other errors are reported in `diags` and
/// the caller decides whether the entry loads.
pub fn lower_entry(raw: &RawEntry, diags: &mut Vec<Diagnostic>) -> Option<CommandEntry> {
    let (first, _) = raw.name.first()?;
    let name_span = raw.name.first().expect("checked").1.cover(raw.name.last().expect("checked").1);
    let mut entry = CommandEntry {
        name: raw.name.iter().map(|(w, _)| w.clone()).collect(),
        name_span,
        span: raw.span,
        options: lower_options(&raw.options, diags),
        flags: Vec::new(),
        optparams: Vec::new(),
        params: Vec::new(),
        examples: Vec::new(),
    };
    debug_assert!(!first.is_empty());
    for section in &raw.sections {
        match section.name.as_str() {
            "FLAGS" => entry.flags.extend(section.items.iter().map(|i| lower_arg(i, Kind::Flag, diags))),
            "OPTPARAMS" => entry.optparams.extend(section.items.iter().map(|i| lower_arg(i, Kind::OptParam, diags))),
            "PARAMS" => entry.params.extend(section.items.iter().map(|i| lower_arg(i, Kind::Param, diags))),
            "EXAMPLES" => entry.examples.extend(section.examples.iter().cloned()),
            other => diags.push(Diagnostic::new(
                Code::UnknownSection,
                section.name_span,
                format!("unknown section `{other}`: expected FLAGS, OPTPARAMS, PARAMS or EXAMPLES"),
            )),
        }
    }
    Some(entry)
}

fn unknown_keyword(kind: KeywordKind, code: Code, field: &RawField, what: &str) -> Diagnostic {
    let mut diag = Diagnostic::new(code, field.key_span, format!("unknown {what} `{}`", field.key));
    if let Some(suggestion) = keywords::suggest(kind, &field.key) {
        diag.message.push_str(&format!(": did you mean `{suggestion}`?"));
        diag = diag.with_fix(Fix {
            title: format!("Replace with `{suggestion}`"),
            edits: vec![TextEdit { span: field.key_span, new_text: suggestion.to_string() }],
        });
    }
    diag
}

fn lower_options(fields: &[RawField], diags: &mut Vec<Diagnostic>) -> CommandOptions {
    let mut options = CommandOptions::default();
    let mut seen: Vec<&str> = Vec::new();
    for field in fields {
        let Some(keyword) = keywords::lookup(KeywordKind::CommandOption, &field.key) else {
            diags.push(unknown_keyword(
                KeywordKind::CommandOption,
                Code::UnknownCommandOption,
                field,
                "command option",
            ));
            continue;
        };
        if seen.contains(&keyword.name) {
            diags.push(Diagnostic::new(Code::Duplicate, field.span, format!("`{}` is given twice", keyword.name)));
            continue;
        }
        seen.push(keyword.name);
        if !check_value_shape(field, keyword.value, diags) {
            continue;
        }
        match keyword.name {
            "needs_current_dir" => options.needs_current_dir = true,
            "splittable_across_input" => options.splittable_across_input = true,
            "filters_input" => options.filters_input = true,
            "long_arg_single_dash" => options.long_arg_single_dash = true,
            "stdin_file_list" => options.stdin_file_list = true,
            "ignores_stdin" => options.ignores_stdin = true,
            "makes_fifos" => options.makes_fifos = true,
            "output_to_stdout_too" => options.output_to_stdout_too = true,
            "output_ends_lines" => options.output_ends_lines = true,
            "output_ends_as_input" => options.output_ends_as_input = true,
            "output_holds_input" => options.output_holds_input = true,
            "output_lines_of_input" => options.output_lines_of_input = true,
            "output_within_smallest_input" => options.output_within_smallest_input = true,
            "merge" => {
                let word = word_value(field).unwrap_or_default();
                match MergeKind::from_keyword(word) {
                    Some(kind) => options.merge = Some(kind),
                    None => diags.push(invalid_keyword_value(field, KeywordKind::Merge, "merge step")),
                }
            }
            "output_ratio" => options.output_ratio = number_value(field, diags),
            "output_per_input" => options.output_per_input = number_value(field, diags),
            "no_match_status" => options.no_match_status = status_value(field, diags),
            "reads_env" => options.reads_env = env_names(field, diags),
            "reads_home" => options.reads_home = home_files(field, diags),
            other => unreachable!("command option `{other}` has no meaning in lower_options"),
        }
    }
    options
}

/// Which section an argument stands in; it decides the defaults.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Flag,
    OptParam,
    Param,
}

fn lower_arg(item: &RawItem, kind: Kind, diags: &mut Vec<Diagnostic>) -> ArgSpec {
    let mut spec = ArgSpec {
        short: None,
        long: None,
        desc: None,
        ty: ArgType::Str,
        size: if kind == Kind::Flag { Size::Count(0) } else { Size::Count(1) },
        default_value: None,
        multiple: false,
        splittable: false,
        attached: false,
        required: false,
        config: false,
        streamable: false,
        file_list: false,
        appends: false,
        bounds: None,
        dash_digits: false,
        changes_lines: false,
        span: item.span,
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut bounds_at = Vec::new();
    let mut explicit_type = None;
    let mut explicit_size = None;
    for field in &item.fields {
        let Some(keyword) = keywords::lookup(KeywordKind::ArgField, &field.key) else {
            diags.push(unknown_keyword(KeywordKind::ArgField, Code::UnknownField, field, "field"));
            continue;
        };
        if seen.contains(&keyword.name) {
            diags.push(Diagnostic::new(Code::Duplicate, field.span, format!("`{}` is given twice", keyword.name)));
            continue;
        }
        seen.push(keyword.name);
        if !check_value_shape(field, keyword.value, diags) {
            continue;
        }
        match keyword.name {
            "short" => {
                let text = text_value(field).unwrap_or_default();
                let mut chars = text.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => spec.short = Some(c),
                    _ => diags.push(Diagnostic::new(
                        Code::BadShortName,
                        value_span(field),
                        format!("`short` takes one character, not `{text}`; use `long:{text}` for a long name"),
                    )),
                }
            }
            "long" => spec.long = text_value(field).map(|t| t.trim_start_matches('-').to_string()),
            "desc" => spec.desc = text_value(field).map(str::to_string),
            "default_value" => spec.default_value = text_value(field).map(str::to_string),
            "type" => {
                let word = word_value(field).unwrap_or_default();
                match ArgType::from_keyword(word) {
                    Some(ty) => {
                        spec.ty = ty;
                        explicit_type = Some(field.span);
                    }
                    None => diags.push(invalid_keyword_value(field, KeywordKind::Type, "type")),
                }
            }
            "size" => {
                if let Some(size) = lower_size(field, diags) {
                    spec.size = size;
                    explicit_size = Some(field.span);
                }
            }
            "multiple" => spec.multiple = true,
            "splittable" => spec.splittable = true,
            "attached" => spec.attached = true,
            "required" => spec.required = true,
            "config" => spec.config = true,
            "streamable" => spec.streamable = true,
            "file_list" => spec.file_list = true,
            "appends" => spec.appends = true,
            "dash_digits" => spec.dash_digits = true,
            "changes_lines" => spec.changes_lines = true,
            "bounds_lines" | "bounds_bytes" => {
                spec.bounds =
                    Some(if keyword.name == "bounds_lines" { OutputBound::Lines } else { OutputBound::Bytes });
                bounds_at.push(field.span);
            }
            other => unreachable!("field `{other}` has no meaning in lower_arg"),
        }
    }
    let counts = kind == Kind::OptParam && spec.ty == ArgType::Str && spec.size == Size::Count(1);
    if let Some(&span) = bounds_at.get(usize::from(counts)) {
        diags.push(Diagnostic::new(
            Code::BadOutputBound,
            span,
            "`bounds_lines` and `bounds_bytes` go on an option with one value (`head -n N`), one of them",
        ));
    }
    match kind {
        Kind::Flag => {
            if let Some(span) = explicit_type.filter(|_| spec.ty != ArgType::Str) {
                diags.push(Diagnostic::new(
                    Code::Conflict,
                    span,
                    "a flag takes no value, so it has no `type`; move it to OPTPARAMS",
                ));
            }
            if let Some(span) = explicit_size.filter(|_| spec.size != Size::Count(0)) {
                diags.push(Diagnostic::new(
                    Code::Conflict,
                    span,
                    "a flag takes no value: its size is 0; move it to OPTPARAMS",
                ));
            }
        }
        Kind::OptParam | Kind::Param => {
            if let Some(span) = explicit_size.filter(|_| spec.size == Size::Count(0)) {
                let section = if kind == Kind::Param { "PARAMS" } else { "OPTPARAMS" };
                diags.push(Diagnostic::new(
                    Code::Conflict,
                    span,
                    format!("`size:0` does not belong in {section}: an option without a value is a FLAG"),
                ));
            }
        }
    }
    spec
}

fn lower_size(field: &RawField, diags: &mut Vec<Diagnostic>) -> Option<Size> {
    let value = field.value.as_ref().expect("checked by check_value_shape");
    let bad = |diags: &mut Vec<Diagnostic>, message: String| {
        diags.push(Diagnostic::new(Code::InvalidValue, value.span, message));
        None
    };
    match &value.kind {
        RawValueKind::Word(w) if w == "list" => Some(Size::List { separator: None }),
        RawValueKind::Word(w) => match w.parse::<u32>() {
            Ok(n) => Some(Size::Count(n)),
            Err(_) => bad(
                diags,
                format!("`{w}` is not a size: expected 0, 1, a number, `list`, `list(...)` or `specific_size(...)`"),
            ),
        },
        RawValueKind::Call { name, args } if name == "list" || name == "specific_size" => {
            let mut separator = None;
            let mut count = None;
            for arg in args {
                match (arg.key.as_str(), arg.value.as_ref().map(|v| &v.kind)) {
                    ("list_separator", Some(RawValueKind::Paren(sep))) => separator = Some(sep.clone()),
                    ("size", Some(RawValueKind::Word(n))) if name == "specific_size" => match n.parse::<u32>() {
                        Ok(n) => count = Some(n),
                        Err(_) => return bad(diags, format!("`{n}` is not a number")),
                    },
                    _ => {
                        let expected =
                            if name == "list" { "`list_separator:(X)`" } else { "`size:N` and `list_separator:(X)`" };
                        return bad(
                            diags,
                            format!("`{}` does not belong in `{name}(...)`: expected {expected}", arg.key),
                        );
                    }
                }
            }
            // A space between values is how separate words are written in the original files.
            let separator = separator.filter(|s| s != " ");
            if name == "list" {
                Some(Size::List { separator })
            } else {
                match count {
                    Some(count) => Some(Size::Specific { count, separator }),
                    None => bad(diags, "`specific_size(...)` needs `size:N`".to_string()),
                }
            }
        }
        RawValueKind::Call { name, .. } => {
            bad(diags, format!("`{name}(...)` is not a size: expected `list(...)` or `specific_size(...)`"))
        }
        RawValueKind::Str(s) | RawValueKind::Paren(s) => bad(diags, format!("`{s}` is not a size")),
    }
}

/// Checks that a field's value has the form its keyword takes; reports and returns false if not.
fn check_value_shape(field: &RawField, shape: ValueShape, diags: &mut Vec<Diagnostic>) -> bool {
    let message = match (shape, field.value.as_ref().map(|v| &v.kind)) {
        (ValueShape::None, None) => return true,
        (ValueShape::None, Some(_)) => format!("`{}` takes no value", field.key),
        (_, None) => format!("`{}` needs a value: `{}:...`", field.key, field.key),
        (
            ValueShape::Char | ValueShape::Word | ValueShape::String,
            Some(RawValueKind::Word(_) | RawValueKind::Str(_)),
        ) => return true,
        (ValueShape::Number, Some(RawValueKind::Word(_))) => return true,
        (ValueShape::OneOf(KeywordKind::Size), Some(RawValueKind::Word(_) | RawValueKind::Call { .. })) => return true,
        (ValueShape::OneOf(_), Some(RawValueKind::Word(_))) => return true,
        (ValueShape::Separator, Some(RawValueKind::Paren(_))) => return true,
        _ => format!("`{}` cannot take this value", field.key),
    };
    let span = field.value.as_ref().map_or(field.span, |v| v.span);
    diags.push(Diagnostic::new(Code::InvalidValue, span, message));
    false
}

fn invalid_keyword_value(field: &RawField, kind: KeywordKind, what: &str) -> Diagnostic {
    let word = word_value(field).unwrap_or_default();
    let span = value_span(field);
    let choices: Vec<String> = keywords::of_kind(kind).map(|k| format!("`{}`", k.name)).collect();
    let mut diag =
        Diagnostic::new(Code::InvalidValue, span, format!("`{word}` is not a {what}: expected {}", choices.join(", ")));
    if let Some(suggestion) = keywords::suggest(kind, word) {
        diag = diag.with_fix(Fix {
            title: format!("Replace with `{suggestion}`"),
            edits: vec![TextEdit { span, new_text: suggestion.to_string() }],
        });
    }
    diag
}

fn value_span(field: &RawField) -> Span {
    field.value.as_ref().map_or(field.span, |v| v.span)
}

fn word_value(field: &RawField) -> Option<&str> {
    match &field.value.as_ref()?.kind {
        RawValueKind::Word(w) => Some(w),
        _ => None,
    }
}

fn text_value(field: &RawField) -> Option<&str> {
    match &field.value.as_ref()?.kind {
        RawValueKind::Word(w) | RawValueKind::Str(w) => Some(w),
        _ => None,
    }
}

/// An exit status a command can report: 1 to 255.
fn status_value(field: &RawField, diags: &mut Vec<Diagnostic>) -> Option<u8> {
    let number = number_value(field, diags)?;
    match u8::try_from(number as i64) {
        Ok(status) if status > 0 && f64::from(status) == number => Some(status),
        _ => {
            let span = field.value.as_ref().map_or(field.span, |v| v.span);
            diags.push(Diagnostic::new(
                Code::BadCarried,
                span,
                format!("`{number}` is not an exit status from 1 to 255"),
            ));
            None
        }
    }
}

/// The variable names of `reads_env`: each a name a shell could assign.
fn env_names(field: &RawField, diags: &mut Vec<Diagnostic>) -> Vec<String> {
    spaced_words(field, diags, |name| {
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        valid.then(|| name.to_string()).ok_or_else(|| format!("`{name}` is not an environment variable name"))
    })
}

/// The files of `reads_home`, as paths relative to the home (`~/.gitconfig` is `.gitconfig`).
fn home_files(field: &RawField, diags: &mut Vec<Diagnostic>) -> Vec<String> {
    spaced_words(field, diags, |word| {
        let normal = |rest: &&str| {
            !rest.is_empty()
                && std::path::Path::new(rest).components().all(|c| matches!(c, std::path::Component::Normal(_)))
        };
        word.strip_prefix("~/")
            .filter(normal)
            .map(|relative| relative.trim_end_matches('/').to_string())
            .ok_or_else(|| format!("`{word}` is not a file under the home: write `~/` and a path without `.` or `..`"))
    })
}

/// The space-separated words of a string value, each read by `read`; a word it refuses is an
/// A118 diagnostic on the value.
fn spaced_words(
    field: &RawField,
    diags: &mut Vec<Diagnostic>,
    read: impl Fn(&str) -> Result<String, String>,
) -> Vec<String> {
    let span = field.value.as_ref().map_or(field.span, |v| v.span);
    let mut values = Vec::new();
    for word in text_value(field).unwrap_or_default().split_whitespace() {
        match read(word) {
            Ok(value) => values.push(value),
            Err(message) => diags.push(Diagnostic::new(Code::BadCarried, span, message)),
        }
    }
    values
}

fn number_value(field: &RawField, diags: &mut Vec<Diagnostic>) -> Option<f64> {
    let RawValue { kind: RawValueKind::Word(text), span } = field.value.as_ref()? else {
        return None;
    };
    match text.parse::<f64>() {
        Ok(n) if n.is_finite() => Some(n),
        _ => {
            diags.push(Diagnostic::new(Code::InvalidValue, *span, format!("`{text}` is not a number")));
            None
        }
    }
}
