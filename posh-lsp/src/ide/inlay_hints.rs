//! Inlay hints for scripts, in words a newcomer reads without the docs: where the machine changes
//! along a pipeline (`on logs`, `on client`, `on logs ×5` for a split) and the predicted bytes on
//! each pipe and output that crosses the network (`moves 12 MB`), or of files a command reads or
//! writes across it (`reads 5 MB remotely`); `~` before a figure that rests on an assumed output
//! share (`render::Figure`). In pipelines posh places off the client, and in those that run at
//! the client while bytes cross the network (`grep -c x logs/a archive/b`: files on two mounts),
//! where `on client` says why it runs there; where nothing crosses, nothing is shown.

use std::collections::{BTreeMap, HashMap};

use posh_core::Span;
use posh_core::planner::render::{self, Figure};
use posh_core::planner::{Location, Node, NodeKind, PipelinePlan, Why};

use super::{ScriptAnalysis, Target, World};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum HintKind {
    /// Where a command runs (before the command).
    Placement,
    /// Bytes crossing the network (after a `|`, after a command or a pipeline).
    Bytes,
    /// A word whose value posh does not know before the run, where the command's place depends on
    /// it (after the word): how to declare it.
    Unknown,
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
    let shown: Vec<usize> = (analysis.plan.pipelines.iter().enumerate())
        .filter(|(_, placed)| range.is_none_or(|r| placed.span().end >= r.start && placed.span().start <= r.end))
        .map(|(index, _)| index)
        .collect();
    // An opening asks for the whole file's: thousands of pipelines, in batches on every core
    // (in order, so that the hints are those of one pass).
    let batches: Vec<&[usize]> = shown.chunks(HINTS_BATCH).collect();
    let hinted = super::cores::on_every_core(&batches, 2, |batch| pipelines_hints(world, text, analysis, batch));
    let mut hints: Vec<InlayHint> = hinted.into_iter().flatten().collect();
    hints.sort_by_key(|h| h.offset);
    hints
}

/// Pipelines whose hints one thread makes at a time: enough that a batch's commands are mostly
/// matched once (`Hinted::entries`).
const HINTS_BATCH: usize = 256;

/// The hints of the pipelines at `indices` of `analysis`, in their order.
fn pipelines_hints(world: &World, text: &str, analysis: &ScriptAnalysis, indices: &[usize]) -> Vec<InlayHint> {
    let mut out = Hinted::default();
    for &index in indices {
        let placed = &analysis.plan.pipelines[index];
        let span = placed.span();
        let plan = placed.plan();
        let Some(pipeline) = analysis.script.pipelines.get(index) else {
            continue;
        };
        if let Some(hint) = unknown_hint(plan, |span| placed.place(span)) {
            out.hints.push(hint);
        }
        let commands = plan.nodes.iter().filter(|n| matches!(n.kind, NodeKind::Command { .. }));
        let at_client = commands.clone().all(|n| n.location == Location::Client);
        if at_client && !plan.crossing_edges().any(|e| e.bytes > 0) {
            continue;
        }
        let command_spans: Vec<Span> = pipeline.commands.iter().map(|c| c.span).collect();
        pipeline_hints(world, text, plan, span, &command_spans, at_client, &mut out);
    }
    out.hints
}

/// The hints made so far, and the entries of the commands hinted, by their words (a script runs
/// the same commands many times: each is matched once).
#[derive(Default)]
struct Hinted<'w> {
    hints: Vec<InlayHint>,
    entries: EntriesOf<'w>,
}

/// The hints of one pipeline: `plan` (its spans relative) made for the pipeline at `span` whose
/// commands are at `command_spans` in `text`. One that runs `at_client` whole starts with
/// `on client`, whose tooltip says why.
fn pipeline_hints<'w>(
    world: &'w World,
    text: &str,
    plan: &'w PipelinePlan,
    span: Span,
    command_spans: &[Span],
    at_client: bool,
    out: &mut Hinted<'w>,
) {
    let hints = &mut out.hints;
    let mut copies: BTreeMap<usize, Vec<&Node>> = BTreeMap::new();
    for node in &plan.nodes {
        if let NodeKind::Command { command, .. } = node.kind {
            copies.entry(command).or_default().push(node);
        }
    }
    let crossing = crossing_bytes(plan);
    let mut previous: Option<(usize, String)> = None;
    for (&index, nodes) in &copies {
        let Some(&span) = command_spans.get(index) else {
            continue;
        };
        let [piped, read, written] = crossing.by_command.get(&index).copied().unwrap_or_default();
        if let Some((end, from)) = &previous
            && piped.bytes > 0
        {
            // Just after the `|` between the two commands.
            let offset = text[*end..span.start].rfind('|').map_or(span.start, |bar| end + bar + 1);
            let to = placement_label(nodes);
            hints.push(bytes_hint(offset, "moves", piped, "", &format!("the pipe from {from} to {to}")));
        }
        let label = placement_label(nodes);
        let before = previous.as_ref().map_or(if at_client { "" } else { "on client" }, |(_, l)| l.as_str());
        if label != before {
            hints.push(placement_hint(world, span.start, nodes, &mut out.entries));
        }
        if read.bytes > 0 {
            hints.push(bytes_hint(
                span.end,
                "reads",
                read,
                " remotely",
                "files this command reads from another machine",
            ));
        }
        if written.bytes > 0 {
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
    // Commands without a span (none in a parsed script) showed nothing of theirs.
    let shown: u64 = copies
        .keys()
        .filter(|i| *i < &command_spans.len())
        .filter_map(|i| crossing.by_command.get(i))
        .flatten()
        .map(|f| f.bytes)
        .sum();
    let rest = Figure::new(crossing.total.bytes - shown, crossing.rest_assumed);
    if rest.bytes > 0 {
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
        hints.push(bytes_hint(span.end, "moves", rest, "", &what));
    }
}

/// The bytes of a pipeline's crossing edges, each counted once: by the command they enter
/// through its pipe (from the previous command's copies, into their merge, or from it), else by
/// the command whose copies read or write the file at its other end; what is left leaves the
/// last command. Indexed once, so a pipeline's hints take time linear in its length.
struct Crossing {
    /// By command index: [piped in, files read, files written].
    by_command: HashMap<usize, [Figure; 3]>,
    total: Figure,
    /// Whether an edge counted by no command (what leaves the last one) rests on an assumption.
    rest_assumed: bool,
}

fn crossing_bytes(plan: &PipelinePlan) -> Crossing {
    let assumed = render::assumed_edges(plan);
    let command_of = |id: usize| match plan.nodes[id].kind {
        NodeKind::Command { command, .. } => Some(command),
        _ => None,
    };
    let is_file = |id: usize| matches!(plan.nodes[id].kind, NodeKind::ReadFile { .. } | NodeKind::WriteFile { .. });
    let mut crossing = Crossing { by_command: HashMap::new(), total: Figure::default(), rest_assumed: false };
    for (edge, assumed) in plan.edges.iter().zip(assumed).filter(|(e, _)| e.crosses) {
        let figure = Figure::new(edge.bytes, assumed);
        crossing.total = Figure::sum([crossing.total, figure]);
        let from_command = match plan.nodes[edge.from].kind {
            NodeKind::Command { command, .. } | NodeKind::Merge { command, .. } => Some(command + 1),
            _ => None,
        };
        let piped = match (&plan.nodes[edge.to].kind, command_of(edge.to)) {
            (NodeKind::Merge { command, .. }, _) => Some(command + 1),
            (_, Some(to)) if from_command == Some(to) => Some(to),
            _ => None,
        };
        // At most one applies: a pipe comes from a command or merge, a file read or written
        // from or to a file.
        let slot = piped
            .map(|c| (c, 0))
            .or_else(|| command_of(edge.to).filter(|_| is_file(edge.from)).map(|c| (c, 1)))
            .or_else(|| command_of(edge.from).filter(|_| is_file(edge.to)).map(|c| (c, 2)));
        match slot {
            Some((command, slot)) => {
                let counted = &mut crossing.by_command.entry(command).or_default()[slot];
                *counted = Figure::sum([*counted, figure]);
            }
            None => crossing.rest_assumed |= assumed && edge.bytes > 0,
        }
    }
    crossing
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

type EntriesOf<'w> = rustc_hash::FxHashMap<&'w [String], Option<&'w posh_core::annotation::CommandEntry>>;

fn placement_hint<'w>(world: &'w World, offset: usize, nodes: &[&'w Node], entries: &mut EntriesOf<'w>) -> InlayHint {
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
    // The annotation that placed it (as the plan shows it): in the tooltip, and where `on` leads
    // (the machine's name leads to its mount). Its entry is found once per distinct command.
    if let NodeKind::Command { argv, annotation: Some(shown), .. } = &nodes[0].kind {
        let annotation = format!("annotation: {shown}");
        tooltip.push_str(&format!("\n{annotation}"));
        parts[0].tooltip = Some(annotation);
        let entry = *entries.entry(argv).or_insert_with(|| world.library.match_argv(argv).ok().map(|i| i.entry));
        parts[0].target = entry.and_then(|entry| world.entry_target(entry));
    }
    InlayHint { offset, kind: HintKind::Placement, parts, tooltip }
}

/// `placed when run: $OUT unknown` after the first word whose value posh does not know, in a
/// pipeline the runtime places when it runs because of such words; its tooltip says how to
/// declare them. `place` gives the plan's spans in the text.
fn unknown_hint(plan: &PipelinePlan, place: impl Fn(Span) -> Span) -> Option<InlayHint> {
    let first = plan.unknown_values.first()?;
    if plan.stays_with_bash.is_some() || !plan.nodes.iter().any(|n| matches!(n.why, Why::DependsOnShell(_))) {
        return None;
    }
    let names: Vec<&str> = plan.unknown_values.iter().map(|u| u.parameter.as_str()).collect();
    let shown = match names.as_slice() {
        [one] => format!("{one} unknown"),
        [one, two] => format!("{one}, {two} unknown"),
        [one, rest @ ..] => format!("{one} and {} more unknown", rest.len()),
        [] => return None,
    };
    let mut tooltip =
        String::from("Where this runs is decided when it runs: posh does not know these values before the run.\n");
    for unknown in &plan.unknown_values {
        tooltip.push_str(&format!("{}\n", super::hover::how_to_declare(unknown)));
    }
    Some(InlayHint {
        offset: place(first.span).end,
        kind: HintKind::Unknown,
        parts: vec![LabelPart::plain(format!("placed when run: {shown}"))],
        tooltip: tooltip.trim_end().to_string(),
    })
}

/// `moves 12 MB`, `reads 5 MB remotely`, `moves ~12 MB` (an estimate).
fn bytes_hint(offset: usize, verb: &str, bytes: Figure, how: &str, what: &str) -> InlayHint {
    let estimate = if bytes.assumed {
        " (~: an estimate, from an output share no annotation states and no run measured yet)"
    } else {
        ""
    };
    InlayHint {
        offset,
        kind: HintKind::Bytes,
        parts: vec![LabelPart::plain(format!("{verb} {bytes}{how}"))],
        tooltip: format!("{bytes} predicted across the network: {what}{estimate}"),
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
