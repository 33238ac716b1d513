//! Hover. On a script's command: the annotation entry that fits, how each word was classified,
//! where the command runs and why, its predicted bytes in and out, and what bash alone would
//! move. In an annotation file: the keyword's documentation from the keyword table.

use std::fmt::Write as _;

use posh_core::annotation::{self, keywords::KeywordKind};
use posh_core::planner::render::{Figure, assumed_edges, describe_output, pipeline_figures, posh_moves};
use posh_core::planner::{Edge, Location, NodeKind};
use posh_core::{Code, Diagnostic, Span};

use super::{ScriptAnalysis, World};
use super::{annotation_tree, diagnostics};

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Hover {
    pub span: Span,
    /// Markdown.
    pub markdown: String,
}

pub fn script_hover(world: &World, analysis: &ScriptAnalysis, offset: usize) -> Option<Hover> {
    let covers = |span: &Span| span.start <= offset && offset <= span.end;
    // The innermost command under the cursor: `cat` rather than the `echo` around `$(cat a)`.
    let (placed, command) = analysis
        .plan
        .pipelines
        .iter()
        .filter(|placed| covers(&placed.span()))
        .flat_map(|placed| {
            placed.plan().nodes.iter().filter_map(move |n| match &n.kind {
                NodeKind::Command { command, span, .. } if covers(&placed.place(*span)) => {
                    Some((placed, *command, span.len()))
                }
                _ => None,
            })
        })
        .min_by_key(|&(_, _, len)| len)
        .map(|(placed, command, _)| (placed, command))?;
    let plan = placed.plan();
    let copies: Vec<_> = plan.copies_of(command).collect();
    let first = copies.first()?;
    let NodeKind::Command { argv, text, span, annotation, output, .. } = &first.kind else {
        return None;
    };
    let ids: Vec<usize> = copies.iter().map(|n| n.id).collect();
    let mut md = String::new();
    let _ = writeln!(md, "```sh\n{text}\n```");
    let places: Vec<String> = copies.iter().map(|n| n.location.label()).collect();
    let place =
        if copies.len() > 1 { format!("{} copies: {}", copies.len(), places.join(", ")) } else { places[0].clone() };
    let _ = writeln!(md, "Runs at **{place}**: {}.\n", first.why.explain());
    for location in copies.iter().map(|n| &n.location) {
        if let Location::Mount(name) = location
            && let Some(mount) = world.describe_mount(name)
        {
            let _ = writeln!(md, "{mount}.\n");
            break;
        }
    }
    md.push_str(&values_text(plan));
    match (annotation, world.library.match_argv(argv)) {
        (Some(annotation), Ok(invocation)) => {
            let _ = writeln!(md, "Annotation: `{annotation}`\n");
            let _ = writeln!(md, "Words:\n```\n{}```", invocation.describe());
        }
        (Some(annotation), Err(_)) => {
            let _ = writeln!(md, "Annotation: `{annotation}`\n");
        }
        (None, _) => {}
    }
    let assumed = assumed_edges(plan);
    let figure = |filter: &dyn Fn(&Edge) -> bool| {
        Figure::sum(plan.edges.iter().zip(&assumed).filter(|(e, _)| filter(e)).map(|(e, a)| Figure::new(e.bytes, *a)))
    };
    let bytes_in = figure(&|e| ids.contains(&e.to));
    let bytes_out = figure(&|e| ids.contains(&e.from));
    let crossing = figure(&|e| e.crosses && (ids.contains(&e.to) || ids.contains(&e.from)));
    let _ = writeln!(
        md,
        "Predicted: {bytes_in} in, {bytes_out} out, {crossing} of it across the network. Output: {}.\n",
        describe_output(output)
    );
    let [bash, posh, between] = pipeline_figures(plan);
    let _ = write!(
        md,
        "This pipeline: bash alone would move {bash} across the network, posh moves {}.",
        posh_moves(posh, between)
    );
    if [bytes_in, bytes_out, crossing, bash, posh, between].iter().any(|f| f.assumed && f.bytes > 0) {
        md.push_str(" (~: an estimate, from an output share no annotation states and no run measured yet.)");
    }
    md.push_str(&code_docs(&diagnostics::script_diagnostics(world, analysis), offset));
    md.push_str(HINTS_LEGEND);
    Some(Hover { span: placed.place(*span), markdown: md })
}

/// What the pipeline's words were planned with, and which words the plan could not know, with
/// how to declare them (a `[[run]]` of posh.toml).
fn values_text(plan: &posh_core::planner::PipelinePlan) -> String {
    let mut md = String::new();
    for value_use in &plan.values {
        let _ = writeln!(md, "Value: {}.\n", value_use.describe());
    }
    for unknown in &plan.unknown_values {
        let _ = writeln!(md, "{}\n", how_to_declare(unknown));
    }
    md
}

/// `Not known before the run: `$OUT` (why). If the script is run with it, ...`: where to declare
/// a value so the editor plans with it (posh.toml's `[[run]]`, or the editor's `posh.run`
/// setting), for the hover and the hint of a word posh does not know.
pub(crate) fn how_to_declare(unknown: &posh_core::planner::UnknownValue) -> String {
    let declare = match unknown.parameter.strip_prefix('$') {
        Some(name)
            if !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit()) =>
        {
            format!("`env = {{ {name} = \"...\" }}`")
        }
        _ => "`args = [\"...\"]`".to_string(),
    };
    format!(
        "Not known before the run: `{}` ({}). If the script is run with it, say so in posh.toml: \
         `[[run]]` with `script = \"...\"` and {declare} (or in the editor's `posh.run` setting).",
        unknown.parameter, unknown.why
    )
}

/// What the inlay hints say, for whoever meets them first in a hover.
const HINTS_LEGEND: &str = "\n\n---\n\nHints: *on logs*: the machine that runs the command, and the ones after it \
     until the next such hint; *moves 12 MB*: bytes predicted to cross the network on that pipe or \
     output (*~12 MB*: an estimate); *reads 5 MB remotely*, *writes 5 MB remotely*: file bytes a command moves across it.";

/// The documentation of the diagnostic codes reported at `offset` (each code's doc comment is
/// its documentation everywhere: here, in `posh-lsp explain`, in the docs).
fn code_docs(diagnostics: &[Diagnostic], offset: usize) -> String {
    let mut codes: Vec<Code> =
        diagnostics.iter().filter(|d| d.span.start <= offset && offset <= d.span.end).map(|d| d.code).collect();
    codes.sort();
    codes.dedup();
    codes.iter().map(|c| format!("\n\n---\n\n**{}** ({}): {}", c.as_str(), c.name(), c.doc())).collect()
}

pub fn annotation_hover(text: &str, offset: usize) -> Option<Hover> {
    let parsed = annotation::parse(text);
    let located = annotation_tree::token_at(&parsed.tree, offset)?;
    let codes = code_docs(&parsed.diagnostics, offset);
    let Some(keyword) = annotation_tree::keyword_at(&located, text) else {
        // A word that is no keyword: the diagnostics' explanation, if it has any.
        let codes = codes.strip_prefix("\n\n---\n\n")?;
        return Some(Hover { span: located.token.span, markdown: codes.to_string() });
    };
    let kind = match keyword.kind {
        KeywordKind::Section => "section",
        KeywordKind::CommandOption => "command option",
        KeywordKind::ArgField => "argument field",
        KeywordKind::Type => "type",
        KeywordKind::Size => "size",
        KeywordKind::Merge => "merge step",
    };
    let mut md = format!("**{}** ({kind})\n\n{}", keyword.name, keyword.doc);
    if !keyword.synonyms.is_empty() {
        let _ = write!(md, "\n\nAlso spelt: {}", keyword.synonyms.join(", "));
    }
    if keyword.extension {
        md.push_str("\n\nA posh extension of the original POSH language.");
    }
    md.push_str(&codes);
    Some(Hover { span: located.token.span, markdown: md })
}
