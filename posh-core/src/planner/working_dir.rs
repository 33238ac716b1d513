//! The working directory each pipeline runs in, as far as the script's text tells. A literal
//! top-level `cd DIR` is followed; any other change of directory (`cd "$d"`, a `cd` in a loop,
//! a function or after `&&`, `pushd`, `popd`) makes relative words of the pipelines it may
//! precede unknown until the script runs: they are planned as words only the shell can tell
//! (`$PWD/...`), and the runtime places them with bash's real directory.

use std::sync::Arc;

use crate::shell::{Context, Pipeline, Script};

/// Where a pipeline starts from, relative to the script's starting directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkingDir {
    /// The starting directory, then these literal `cd` targets, in order (an absolute one
    /// replaces what came before it).
    Known(Vec<String>),
    /// A change of directory the planner cannot follow may have run before.
    Unknown,
}

/// The programs that change bash's working directory.
const CHANGES_DIRECTORY: &[&str] = &["cd", "pushd", "popd"];

/// One entry per pipeline of `script`, in the same order.
pub(crate) fn working_dirs(source: &str, script: &Script) -> Vec<WorkingDir> {
    let pipelines = &script.pipelines;
    let targets: Vec<Option<String>> = (0..pipelines.len()).map(|i| followed(source, pipelines, i)).collect();
    let mut unknown = vec![false; pipelines.len()];
    for (i, pipeline) in pipelines.iter().enumerate() {
        if !changes_directory(pipeline) || targets[i].is_some() {
            continue;
        }
        // A change inside a subshell or substitution reaches only what runs later inside one
        // (over-approximated: any later pipeline of the same construct that is inside one).
        let run = construct_around(pipelines, i);
        if pipeline.background || in_a_subshell(pipeline) {
            for j in i + 1..run.end {
                unknown[j] |= in_a_subshell(&pipelines[j]);
            }
        } else {
            // A loop may run its earlier pipelines again after the change, and a function's
            // body runs wherever it is called: everything from the construct's start on.
            unknown[run.start..].iter_mut().for_each(|u| *u = true);
            break;
        }
    }
    // A change of directory may hide in statements posh could not parse: what follows them
    // starts from a directory only bash knows.
    if let Some(left) = script.left_to_bash.iter().find(|left| {
        source[left.span.range()]
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|word| CHANGES_DIRECTORY.contains(&word))
    }) {
        for (u, pipeline) in unknown.iter_mut().zip(pipelines) {
            *u |= pipeline.span.start >= left.span.start;
        }
    }
    let mut steps: Vec<String> = Vec::new();
    unknown
        .into_iter()
        .zip(targets)
        .map(|(unknown, target)| {
            let here = if unknown { WorkingDir::Unknown } else { WorkingDir::Known(steps.clone()) };
            steps.extend(target);
            here
        })
        .collect()
}

/// Whether it runs in a process of its own (a subshell, a command or process substitution, a
/// compound command in the background; a `cd` alone in the background is one too).
fn in_a_subshell(pipeline: &Pipeline) -> bool {
    pipeline.background
        || pipeline.context.iter().any(|c| {
            matches!(
                c,
                Context::Subshell | Context::CommandSubstitution | Context::ProcessSubstitution | Context::Background
            )
        })
}

fn changes_directory(pipeline: &Pipeline) -> bool {
    pipeline.commands.iter().any(|c| {
        c.words.first().is_some_and(|w| w.literal.as_deref().is_some_and(|name| CHANGES_DIRECTORY.contains(&name)))
    })
}

/// The target of pipeline `i` when it is a `cd` the planner follows: `cd DIR` (or `cd -- DIR`)
/// with a literal, non-empty `DIR` that does not start with `-`, alone in its pipeline, at the
/// top level or first in an and-or list (`cd DIR || exit`), in the foreground.
fn followed(source: &str, pipelines: &[Arc<Pipeline>], i: usize) -> Option<String> {
    let pipeline = &pipelines[i];
    let [command] = pipeline.commands.as_slice() else { return None };
    let top_level = match pipeline.context.as_slice() {
        [] => true,
        [Context::AndOr] => !continues_an_and_or_list(source, pipelines, i),
        _ => false,
    };
    if !top_level || pipeline.background || pipeline.negated || !command.redirects.is_empty() {
        return None;
    }
    let words: Vec<&str> = command.words.iter().map(|w| w.literal.as_deref()).collect::<Option<_>>()?;
    let target = match words.as_slice() {
        ["cd", target] | ["cd", "--", target] => *target,
        _ => return None,
    };
    (!target.is_empty() && !target.starts_with('-')).then(|| target.to_string())
}

/// Whether pipeline `i` comes after `&&` or `||` (it may then not run at all). What stands
/// between it and the pipeline before may be a command the model does not list (`[[ -d x ]]`).
fn continues_an_and_or_list(source: &str, pipelines: &[Arc<Pipeline>], i: usize) -> bool {
    let from = i.checked_sub(1).map_or(0, |p| pipelines[p].span.end);
    let before = source.get(from..pipelines[i].span.start).unwrap_or_default().trim_end();
    before.ends_with("&&") || before.ends_with("||")
}

/// The consecutive pipelines around `i` that stand inside some construct (a loop, a function, a
/// conditional, a group, a list): over-approximates the top-level construct `i` belongs to.
fn construct_around(pipelines: &[Arc<Pipeline>], i: usize) -> std::ops::Range<usize> {
    if pipelines[i].context.is_empty() {
        return i..i + 1;
    }
    let inside = |p: &Pipeline| !p.context.is_empty();
    let start = (0..i).rev().take_while(|&j| inside(&pipelines[j])).last().unwrap_or(i);
    let end = (i..pipelines.len()).take_while(|&j| inside(&pipelines[j])).last().map_or(i + 1, |j| j + 1);
    start..end
}
