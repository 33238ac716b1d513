//! Inlay hints for scripts, in words a newcomer reads without the docs: where the machine changes
//! along a pipeline (`on logs`, `on client`, `on logs ×5` for a split) and the predicted bytes on
//! each pipe and output that crosses the network (`moves 12 MB`), or of files a command reads or
//! writes across it (`reads 5 MB remotely`). Only in pipelines posh places off the client: where
//! everything runs at the client posh changes nothing, and the diagnostics say why.

use std::collections::BTreeMap;

use posh_core::Span;
use posh_core::planner::render::format_bytes;
use posh_core::planner::{Edge, Location, Node, NodeKind, PipelinePlan};

use super::{ScriptAnalysis, Target, World};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum HintKind {
    /// Where a command runs (before the command).
    Placement,
    /// Bytes crossing the network (after a `|`, after a command or a pipeline).
    Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LabelPart {
    pub text: String,
    pub tooltip: Option<String>,
    /// Where following the part leads: the mount in posh.toml, the annotation entry.
    pub target: Option<Target>,
}

impl LabelPart {
    fn plain(text: impl Into<String>) -> LabelPart {
        LabelPart { text: text.into(), tooltip: None, target: None }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct InlayHint {
    /// Byte offset in the script the hint stands at.
    pub offset: usize,
    pub kind: HintKind,
    pub parts: Vec<LabelPart>,
    pub tooltip: String,
}

impl InlayHint {
    pub fn label(&self) -> String {
        self.parts.iter().map(|p| p.text.as_str()).collect()
    }
}

/// The hints of the pipelines of `text` that overlap `range` (all of them for `None`), in text order.
pub fn inlay_hints(world: &World, text: &str, analysis: &ScriptAnalysis, range: Option<Span>) -> Vec<InlayHint> {
    let mut hints = Vec::new();
    for (index, plan) in analysis.plan.pipelines.iter().enumerate() {
        if range.is_some_and(|r| plan.span.end < r.start || plan.span.start > r.end) {
            continue;
        }
        let Some(pipeline) = analysis.script.pipelines.get(index) else {
            continue;
        };
        let commands = plan.nodes.iter().filter(|n| matches!(n.kind, NodeKind::Command { .. }));
        if commands.clone().all(|n| n.location == Location::Client) {
            continue;
        }
        pipeline_hints(world, text, plan, &pipeline.commands.iter().map(|c| c.span).collect::<Vec<_>>(), &mut hints);
    }
    hints.sort_by_key(|h| h.offset);
    hints
}

fn pipeline_hints(world: &World, text: &str, plan: &PipelinePlan, command_spans: &[Span], hints: &mut Vec<InlayHint>) {
    let mut copies: BTreeMap<usize, Vec<&Node>> = BTreeMap::new();
    for node in &plan.nodes {
        if let NodeKind::Command { command, .. } = node.kind {
            copies.entry(command).or_default().push(node);
        }
    }
    // Every crossing edge is shown by exactly one hint: each is taken once.
    let mut shown = vec![false; plan.edges.len()];
    let mut take = |filter: &dyn Fn(&Edge) -> bool| -> u64 {
        let mut bytes = 0;
        for (i, edge) in plan.edges.iter().enumerate() {
            if edge.crosses && !shown[i] && filter(edge) {
                shown[i] = true;
                bytes += edge.bytes;
            }
        }
        bytes
    };
    let is_file = |id: usize| matches!(plan.nodes[id].kind, NodeKind::ReadFile { .. } | NodeKind::WriteFile { .. });
    let mut previous: Option<(usize, String)> = None;
    for (&index, nodes) in &copies {
        let Some(&span) = command_spans.get(index) else {
            continue;
        };
        let ids: Vec<usize> = nodes.iter().map(|n| n.id).collect();
        // The pipe into this command: from the previous command's copies, into their merge, or
        // from it.
        let piped = take(&|e| {
            let from_previous = |id: usize| match plan.nodes[id].kind {
                NodeKind::Command { command, .. } | NodeKind::Merge { command, .. } => command + 1 == index,
                _ => false,
            };
            (ids.contains(&e.to) && from_previous(e.from))
                || matches!(plan.nodes[e.to].kind, NodeKind::Merge { command, .. } if command + 1 == index)
        });
        if let Some((end, from)) = &previous
            && piped > 0
        {
            // Just after the `|` between the two commands.
            let offset = text[*end..span.start].rfind('|').map_or(span.start, |bar| end + bar + 1);
            let to = placement_label(nodes);
            hints.push(bytes_hint(offset, "moves", piped, "", &format!("the pipe from {from} to {to}")));
        }
        let label = placement_label(nodes);
        let before = previous.as_ref().map_or("on client", |(_, l)| l.as_str());
        if label != before {
            hints.push(placement_hint(world, span.start, nodes));
        }
        let read = take(&|e| ids.contains(&e.to) && is_file(e.from));
        let written = take(&|e| ids.contains(&e.from) && is_file(e.to));
        if read > 0 {
            hints.push(bytes_hint(
                span.end,
                "reads",
                read,
                " remotely",
                "files this command reads from another machine",
            ));
        }
        if written > 0 {
            hints.push(bytes_hint(
                span.end,
                "writes",
                written,
                " remotely",
                "files this command writes on another machine",
            ));
        }
        previous = Some((span.end, label));
    }
    // What is left leaves the last command: its copies to their merge, the merge or the last
    // command to the script's output or a file.
    let rest = take(&|_| true);
    if rest > 0 {
        let from = previous.map_or_else(|| "on client".to_string(), |(_, l)| l);
        let merge = plan
            .nodes
            .iter()
            .find(|n| matches!(n.kind, NodeKind::Merge { command, .. } if command + 1 == copies.len()));
        let what = match merge {
            Some(Node { kind: NodeKind::Merge { kind, .. }, location, .. }) => {
                format!(
                    "the last command's output, from {from} to its merge ({}) {}, and on",
                    kind.keyword(),
                    place(location)
                )
            }
            _ => format!("the pipeline's output, from {from} to where the script sends it"),
        };
        hints.push(bytes_hint(plan.span.end, "moves", rest, "", &what));
    }
}

/// `on logs`, `on client`: a machine in the hints' words.
fn place(location: &Location) -> String {
    match location {
        Location::Client => "on client".to_string(),
        Location::Mount(name) => format!("on {name}"),
    }
}

/// Where the copies of one command run, by machine, with how many copies on each.
fn groups(nodes: &[&Node]) -> Vec<(Location, usize)> {
    let mut groups: Vec<(Location, usize)> = Vec::new();
    for node in nodes {
        match groups.last_mut() {
            Some((location, n)) if *location == node.location => *n += 1,
            _ => groups.push((node.location.clone(), 1)),
        }
    }
    groups
}

/// `on logs`, `on logs ×5`, `on a, b ×2`.
fn placement_label(nodes: &[&Node]) -> String {
    let parts: Vec<String> = groups(nodes)
        .into_iter()
        .map(|(l, n)| {
            let name = match &l {
                Location::Client => "client".to_string(),
                Location::Mount(name) => name.clone(),
            };
            if n > 1 { format!("{name} ×{n}") } else { name }
        })
        .collect();
    format!("on {}", parts.join(", "))
}

fn placement_hint(world: &World, offset: usize, nodes: &[&Node]) -> InlayHint {
    let mut parts = vec![LabelPart::plain("on ")];
    for (i, (location, n)) in groups(nodes).into_iter().enumerate() {
        if i > 0 {
            parts.push(LabelPart::plain(", "));
        }
        let (text, tooltip, target) = match &location {
            Location::Client => ("client".to_string(), Some("the machine running the script".to_string()), None),
            Location::Mount(name) => (name.clone(), world.describe_mount(name), world.mount_target(name)),
        };
        parts.push(LabelPart { text, tooltip, target });
        if n > 1 {
            parts.push(LabelPart::plain(format!(" ×{n}")));
        }
    }
    let mut tooltip = nodes[0].why.explain();
    let entry = match &nodes[0].kind {
        NodeKind::Command { argv, annotation: Some(_), .. } => world.library.match_argv(argv).ok().map(|i| i.entry),
        _ => None,
    };
    // The annotation that placed it: in the tooltip, and where `on` leads (the machine's name
    // leads to its mount).
    if let Some(entry) = entry {
        let header = posh_core::annotation::format::format_header(entry);
        let source = world.library.source_of(entry).unwrap_or("shipped library");
        let annotation = format!("annotation: {header} ({source})");
        tooltip.push_str(&format!("\n{annotation}"));
        parts[0].tooltip = Some(annotation);
        parts[0].target = world.entry_target(entry);
    }
    InlayHint { offset, kind: HintKind::Placement, parts, tooltip }
}

/// `moves 12 MB`, `reads 5 MB remotely`.
fn bytes_hint(offset: usize, verb: &str, bytes: u64, how: &str, what: &str) -> InlayHint {
    InlayHint {
        offset,
        kind: HintKind::Bytes,
        parts: vec![LabelPart::plain(format!("{verb} {}{how}", format_bytes(bytes)))],
        tooltip: format!("{} predicted across the network: {what}", format_bytes(bytes)),
    }
}

/// The script with every hint written in as `‹label›`, for tests and `posh-lsp hints`.
pub fn render(text: &str, hints: &[InlayHint]) -> String {
    let mut out = String::with_capacity(text.len() + hints.len() * 12);
    let mut at = 0;
    for hint in hints {
        out.push_str(&text[at..hint.offset]);
        out.push_str(&format!("‹{}›", hint.label()));
        at = hint.offset;
    }
    out.push_str(&text[at..]);
    out
}
