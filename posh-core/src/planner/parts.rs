//! Pipelines bash keeps in part: `cat big | grep x | while read l; do ...; done`. The runs of
//! commands that can go to the runtime go there as calls of their own (`rewrite`), bash runs the
//! rest and the pipes between them. Each run is planned as the runtime plans its call (a
//! pipeline of its own, reading bash's pipe as its standard input), and goes only when that plan
//! may touch a mount; the parts' plans are then joined into the pipeline's, so `--explain`,
//! posh-lsp and the runtime see one plan.
//!
//! Statuses compose as bash's: a call's status is its last command's, or under `pipefail` its
//! last failing one's, so bash's status over the calls and its own commands is the one over all.

use std::ops::Range;

use super::model::{Edge, HandedPart, NodeId, NodeKind, PipelinePlan, Why};
use super::{Alone, PlanContext, plan_alone};
use crate::shell::Pipeline;

/// The pipeline planned as its parts, when some run of commands that may go to the runtime
/// touches a mount; `None` leaves the pipeline with bash as a whole. `reasons` says why each
/// command cannot go (`None`: it may).
pub(super) fn plan_in_parts(
    ctx: &PlanContext<'_>,
    pipeline: &Pipeline,
    reasons: &[Option<String>],
    alone: &Alone<'_>,
) -> Option<PipelinePlan> {
    let mut parts = Vec::new();
    for run in runs(reasons) {
        let part = pipeline.part(run.clone());
        let kept = reasons[run.start].clone();
        let mut plan = plan_alone(ctx, &part, kept.clone(), alone);
        let handed = plan.goes_to_runtime();
        if kept.is_some() {
            for node in &mut plan.nodes {
                if let NodeKind::Command { command, .. } = node.kind
                    && let Some(why) = &reasons[run.start + command]
                {
                    node.why = Why::KeptWithBash(why.clone());
                }
            }
        }
        parts.push(Part { commands: run, plan, handed });
    }
    parts.iter().any(|p| p.handed).then(|| join(pipeline, parts))
}

struct Part {
    commands: Range<usize>,
    plan: PipelinePlan,
    /// It goes to the runtime; bash runs it otherwise.
    handed: bool,
}

/// The longest runs of commands that may all go to the runtime, and of those that may not.
fn runs(reasons: &[Option<String>]) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (i, reason) in reasons.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if reasons[run.start].is_some() == reason.is_some() => run.end = i + 1,
            _ => runs.push(i..i + 1),
        }
    }
    runs
}

/// The parts' plans as one: each part's standard output piped to the next part's first command,
/// one standard error, command indices those of the whole pipeline.
fn join(pipeline: &Pipeline, parts: Vec<Part>) -> PipelinePlan {
    let mut joined = PipelinePlan {
        span: pipeline.span,
        nodes: Vec::new(),
        edges: Vec::new(),
        bash_bytes: 0,
        posh_bytes: 0,
        between_proxies_bytes: 0,
        stays_with_bash: None,
        handed_parts: Vec::new(),
        values: Vec::new(),
        unknown_values: Vec::new(),
        globs_at_proxy: Vec::new(),
    };
    let mut stderr: Option<NodeId> = None;
    // The edges into the standard output of the part before: the pipe to this part.
    let mut into_pipe: Vec<Edge> = Vec::new();
    let count = parts.len();
    for (k, part) in parts.into_iter().enumerate() {
        let mut ids: Vec<Option<NodeId>> = vec![None; part.plan.nodes.len()];
        for node in part.plan.nodes {
            let old = node.id;
            match node.kind {
                NodeKind::Stdin if k > 0 => continue,
                NodeKind::Stdout if k + 1 < count => continue,
                NodeKind::Stderr if stderr.is_some() => {
                    ids[old] = stderr;
                    continue;
                }
                _ => {}
            }
            let mut node = node;
            node.id = joined.nodes.len();
            match &mut node.kind {
                NodeKind::Command { command, .. } | NodeKind::Merge { command, .. } => *command += part.commands.start,
                NodeKind::Stderr => stderr = Some(node.id),
                _ => {}
            }
            ids[old] = Some(node.id);
            joined.nodes.push(node);
        }
        let mut out_of_part = Vec::new();
        for edge in part.plan.edges {
            match (ids[edge.from], ids[edge.to]) {
                (Some(from), Some(to)) => joined.edges.push(Edge { from, to, ..edge }),
                // From this part's standard input: bash's pipe from the part before.
                (None, Some(to)) => {
                    for pipe in &into_pipe {
                        let crosses = joined.nodes[pipe.from].location != joined.nodes[to].location;
                        joined.edges.push(Edge { to, crosses, between_proxies: false, ..pipe.clone() });
                    }
                }
                (Some(from), None) => out_of_part.push(Edge { from, ..edge }),
                (None, None) => {}
            }
        }
        into_pipe = out_of_part;
        joined.bash_bytes += part.plan.bash_bytes;
        joined.posh_bytes += part.plan.posh_bytes;
        joined.between_proxies_bytes += part.plan.between_proxies_bytes;
        if part.handed {
            joined
                .handed_parts
                .push(HandedPart { commands: (part.commands.start, part.commands.end), span: part.plan.span });
        }
    }
    joined
}
