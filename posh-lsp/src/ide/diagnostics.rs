//! Diagnostics. For scripts, only what a user can act on: a command that pins a pipeline moving
//! data to the client for want of an annotation (`S001`) or of a fitting entry (`S002`), and a
//! pipeline that still moves more than the threshold (`S003`), and statements posh could not
//! parse, which bash runs as they are (`S004`). For annotation files, everything
//! the parser and the validator report.

use posh_core::fs::normalize_path;
use posh_core::planner::render::{Figure, pipeline_figures};
use posh_core::planner::{NodeKind, Why};
use posh_core::shell::{Pipeline, RedirectTarget};
use posh_core::{Code, Diagnostic, annotation};

use super::{ScriptAnalysis, World};

pub fn script_diagnostics(world: &World, analysis: &ScriptAnalysis) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (placed, pipeline) in analysis.plan.pipelines.iter().zip(&analysis.script.pipelines) {
        let plan = placed.plan();
        // A pipeline that moves nothing and names nothing on a mount has nothing to fix.
        if plan.bash_bytes == 0 && !names_mounted_path(world, pipeline) {
            continue;
        }
        for node in &plan.nodes {
            let NodeKind::Command { command, copy: None, .. } = &node.kind else {
                continue;
            };
            let Some(name) = pipeline.commands.get(*command).and_then(|c| c.words.first()) else {
                continue;
            };
            // In a pipeline bash keeps in part, its commands say that bash keeps them; one kept
            // for want of an annotation (no function, builtin or compound command, and no
            // entry of its name) is the same S001 as in a pipeline that stays whole.
            let kept_unannotated = matches!(node.why, Why::KeptWithBash(_))
                && posh_core::rewrite::why_command_stays(pipeline, *command, &analysis.functions).is_none()
                && name.literal.as_deref().is_some_and(|n| !world.library.annotates(n));
            if node.why == Why::NoAnnotation || kept_unannotated {
                out.push(Diagnostic::new(
                    Code::ScriptNoAnnotation,
                    name.span,
                    format!(
                        "`{}` has no annotation, so it runs at the client and its input crosses the network",
                        name.raw
                    ),
                ));
            } else if let Why::NoEntryFits(why) = &node.why {
                out.push(Diagnostic::new(
                    Code::ScriptNoEntryFits,
                    name.span,
                    format!("{why}, so it runs at the client"),
                ));
            }
        }
        if plan.posh_bytes > world.settings.max_moved_bytes {
            let [bash, posh, _] = pipeline_figures(plan);
            out.push(Diagnostic::new(
                Code::ScriptMovesMuch,
                placed.span(),
                format!(
                    "this pipeline still moves {posh} across the network (bash would move {bash}; threshold {})",
                    Figure::new(world.settings.max_moved_bytes, false)
                ),
            ));
        }
    }
    for left in &analysis.plan.left_to_bash {
        out.push(Diagnostic::new(
            Code::ScriptNotParsed,
            left.error,
            format!(
                "posh could not parse this ({}): bash runs it as it is, and nothing in it is offloaded",
                left.message
            ),
        ));
    }
    out.sort_by_key(|d| (d.span.start, d.code));
    out
}

/// Whether a word or a redirection of the pipeline names a path on a mount (a glob counts by
/// its part before the first pattern character): what an unannotated command reads is unknown,
/// but such a word says the pipeline deals with remote data.
fn names_mounted_path(world: &World, pipeline: &Pipeline) -> bool {
    let words = pipeline.commands.iter().flat_map(|c| {
        c.words.iter().skip(1).chain(c.redirects.iter().filter_map(|r| match &r.target {
            RedirectTarget::File(word) => Some(word),
            _ => None,
        }))
    });
    words
        .filter_map(|w| match &w.literal {
            Some(text) => Some(&**text),
            None if w.glob => w.raw.split(['*', '?', '[']).next(),
            None => None,
        })
        .any(|text| world.config.mount_for(&normalize_path(&world.root.join(text))).is_some())
}

pub fn annotation_diagnostics(text: &str) -> Vec<Diagnostic> {
    annotation::parse(text).diagnostics
}
