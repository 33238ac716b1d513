//! Plans for people: the pipeline with placements written into it
//! (`[@logs]cat a.log |[3 KB] [@client]sort`), the `--explain` text, Graphviz DOT, and the
//! JSON document (`ExplainDocument`, serialised by the caller).

use std::collections::BTreeMap;

use crate::planner::model::{Location, Node, NodeKind, OutputEstimate, PipelinePlan, Plan, Strategy, Stream};
use crate::text::LineIndex;

/// `532 B`, `3.1 KB`, `12 MB`, `1.5 GB` (decimal units, as links are measured).
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KB", "MB", "GB", "TB", "PB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = u;
    }
    if value < 10.0 { format!("{value:.1} {unit}") } else { format!("{value:.0} {unit}") }
}

/// A predicted byte count for people, and whether it rests on an assumption (see
/// [`assumed_edges`]): `12 MB`, or `~12 MB` for an estimate. The one rule by which
/// `--explain`, the hints, hovers and lenses mark estimates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figure {
    pub bytes: u64,
    pub assumed: bool,
}

impl Figure {
    pub fn new(bytes: u64, assumed: bool) -> Figure {
        Figure { bytes, assumed }
    }

    /// The figures together: their sum, assumed when any of them with bytes is.
    pub fn sum(figures: impl IntoIterator<Item = Figure>) -> Figure {
        figures.into_iter().fold(Figure::default(), |total, f| Figure {
            bytes: total.bytes + f.bytes,
            assumed: total.assumed || (f.assumed && f.bytes > 0),
        })
    }
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tilde = if self.assumed && self.bytes > 0 { "~" } else { "" };
        write!(f, "{tilde}{}", format_bytes(self.bytes))
    }
}

/// For each edge of `plan`, whether its predicted bytes rest on an assumption: some command
/// before it (on the way from the pipeline's files and input to the edge) had its output share
/// assumed (`OutputEstimate::Assumed`: half its input for a filter, all of it otherwise),
/// rather than stated by its annotation, bounded or measured. Such figures can be many times
/// off (an `awk` that keeps 2% is assumed to keep everything), so they are shown as estimates.
pub fn assumed_edges(plan: &PipelinePlan) -> Vec<bool> {
    let mut memo: Vec<Option<bool>> = vec![None; plan.nodes.len()];
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); plan.nodes.len()];
    for edge in &plan.edges {
        into[edge.to].push(edge.from);
    }
    fn output_assumed(plan: &PipelinePlan, into: &[Vec<usize>], memo: &mut [Option<bool>], id: usize) -> bool {
        if let Some(known) = memo[id] {
            return known;
        }
        // A cycle cannot be (plans are DAGs); the mark stops one anyway.
        memo[id] = Some(false);
        let assumed = match &plan.nodes[id].kind {
            NodeKind::Command { output: OutputEstimate::Assumed { .. }, .. } => true,
            NodeKind::Command { output: OutputEstimate::Bounded, .. } => false,
            NodeKind::Command { .. } | NodeKind::Merge { .. } => {
                into[id].iter().any(|&from| output_assumed(plan, into, memo, from))
            }
            _ => false,
        };
        memo[id] = Some(assumed);
        assumed
    }
    plan.edges.iter().map(|e| output_assumed(plan, &into, &mut memo, e.from)).collect()
}

/// A pipeline's totals as figures: what bash alone would move (a file it writes on a mount is
/// as large as predicted), what posh moves through the client and between proxies.
pub fn pipeline_figures(plan: &PipelinePlan) -> [Figure; 3] {
    let assumed = assumed_edges(plan);
    let any = |filter: &dyn Fn(&crate::planner::model::Edge) -> bool| {
        plan.edges.iter().zip(&assumed).any(|(e, a)| *a && e.bytes > 0 && filter(e))
    };
    let into_remote_file = |e: &crate::planner::model::Edge| {
        matches!(plan.nodes[e.to].kind, NodeKind::WriteFile { .. }) && plan.nodes[e.to].location != Location::Client
    };
    [
        Figure::new(plan.bash_bytes, any(&into_remote_file)),
        Figure::new(plan.posh_bytes, any(&|e| e.crosses && !e.between_proxies)),
        Figure::new(plan.between_proxies_bytes, any(&|e| e.crosses && e.between_proxies)),
    ]
}

/// What posh moves: `460 MB`, or `460 MB (and 20 MB between proxies)` when files are streamed
/// from one proxy to another; `~` before an estimate.
pub fn posh_moves(posh: Figure, between_proxies: Figure) -> String {
    match between_proxies.bytes {
        0 => posh.to_string(),
        _ => format!("{posh} (and {between_proxies} between proxies)"),
    }
}

/// `[@a, @b ×2]`: where the copies of one command run.
fn placement_tag(copies: &[&Node]) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for node in copies {
        match groups.last_mut() {
            Some((label, n)) if *label == node.location.label() => *n += 1,
            _ => groups.push((node.location.label(), 1)),
        }
    }
    let parts: Vec<String> = groups.into_iter().map(|(l, n)| if n > 1 { format!("{l} ×{n}") } else { l }).collect();
    parts.join(", ")
}

/// The pipeline's source with each command's placement before it, the bytes that cross the
/// network after each `|` that moves any, and what reaches the script's output at the end.
pub fn render_inline(source: &str, plan: &PipelinePlan) -> String {
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let mut previous_end: Option<usize> = None;
    let commands: BTreeMap<usize, Vec<&Node>> = plan.nodes.iter().fold(BTreeMap::new(), |mut map, n| {
        if let NodeKind::Command { command, .. } = n.kind {
            map.entry(command).or_insert_with(Vec::new).push(n);
        }
        map
    });
    let assumed = assumed_edges(plan);
    let crossing = |filter: &dyn Fn(&crate::planner::model::Edge) -> bool| -> Figure {
        let edges = plan.edges.iter().zip(&assumed).filter(|(e, _)| e.crosses && filter(e));
        Figure::sum(edges.map(|(e, a)| Figure::new(e.bytes, *a)))
    };
    for (&index, copies) in &commands {
        let NodeKind::Command { span, .. } = copies[0].kind else {
            continue;
        };
        // By node id: looked up per edge, for each of a split's thousand copies.
        let mut is_copy = vec![false; plan.nodes.len()];
        for n in copies {
            is_copy[n.id] = true;
        }
        let is_file = |id: usize| matches!(plan.nodes[id].kind, NodeKind::ReadFile { .. } | NodeKind::WriteFile { .. });
        let read = crossing(&|e| is_copy[e.to] && is_file(e.from));
        let written = crossing(&|e| is_copy[e.from] && is_file(e.to));
        let mut tag = placement_tag(copies);
        if read.bytes > 0 {
            tag.push_str(&format!(" ⇐{read}"));
        }
        if written.bytes > 0 {
            tag.push_str(&format!(" ⇒{written}"));
        }
        // The pipe into this command: direct edges from the previous command, or via a merge.
        if let Some(end) = previous_end {
            let merge =
                plan.nodes.iter().find(|n| matches!(n.kind, NodeKind::Merge { command, .. } if command + 1 == index));
            let from_previous =
                |id: usize| matches!(plan.nodes[id].kind, NodeKind::Command { command, .. } if command + 1 == index);
            let mut bytes =
                crossing(&|e| is_copy[e.to] && (from_previous(e.from) || merge.is_some_and(|m| m.id == e.from)));
            if let Some(m) = merge {
                bytes = Figure::sum([bytes, crossing(&|e| e.to == m.id)]);
            }
            let mut label = Vec::new();
            if bytes.bytes > 0 {
                label.push(bytes.to_string());
            }
            if let Some(Node { kind: NodeKind::Merge { kind, .. }, location, .. }) = merge {
                label.push(format!("{} {}", kind.keyword(), location.label()));
            }
            if let Some(bar) = source[end..span.start].rfind('|').filter(|_| !label.is_empty()) {
                inserts.push((end + bar + 1, format!("[{}]", label.join(", "))));
            }
        }
        inserts.push((span.start, format!("[{tag}]")));
        previous_end = Some(span.end);
    }
    let to_terminal = crossing(&|e| matches!(plan.nodes[e.to].kind, NodeKind::Stdout | NodeKind::Stderr));
    let merged_last =
        plan.nodes.iter().find(|n| matches!(n.kind, NodeKind::Merge { command, .. } if command + 1 == commands.len()));
    let mut tail = String::new();
    if let Some(Node { id, kind: NodeKind::Merge { kind, .. }, location, .. }) = merged_last {
        let into = crossing(&|e| e.to == *id);
        let bytes = if into.bytes > 0 { format!("{into}, ") } else { String::new() };
        tail.push_str(&format!(" [{bytes}{} {}]", kind.keyword(), location.label()));
    }
    if to_terminal.bytes > 0 {
        tail.push_str(&format!(" [⇒ output {to_terminal}]"));
    }
    let mut out = String::new();
    let mut at = plan.span.start;
    inserts.sort_by_key(|(offset, _)| *offset);
    for (offset, text) in inserts {
        out.push_str(&source[at..offset]);
        out.push_str(&text);
        at = offset;
    }
    out.push_str(&source[at..plan.span.end]);
    out.push_str(&tail);
    out
}

fn node_label(node: &Node) -> String {
    match &node.kind {
        NodeKind::Command { argv, copy, text, .. } => {
            // A compound command has no words: its text says what it is.
            let mut label = if argv.is_empty() { text.clone() } else { shell_words::join(argv) };
            if let Some((i, n)) = copy {
                label.push_str(&format!(" (copy {}/{n})", i + 1));
            }
            label
        }
        NodeKind::ReadFile { path, size } => format!("read {path} ({})", format_bytes(*size)),
        NodeKind::WriteFile { path, append, removes } => {
            format!(
                "{} {path}",
                if *removes {
                    "remove"
                } else if *append {
                    "append to"
                } else {
                    "write"
                }
            )
        }
        NodeKind::Merge { kind, argv, .. } if argv.is_empty() => format!("merge ({})", kind.keyword()),
        NodeKind::Merge { kind, argv, .. } => format!("merge ({}: {})", kind.keyword(), shell_words::join(argv)),
        NodeKind::Stdin => "standard input".to_string(),
        NodeKind::Stdout => "standard output".to_string(),
        NodeKind::Stderr => "standard error".to_string(),
        NodeKind::Text { bytes } => format!("here-document ({})", format_bytes(*bytes)),
    }
}

/// The `--explain` text for a whole script.
/// Where a command's predicted output comes from, for people: `2.1% of its input, measured
/// over 3 runs`.
pub fn describe_output(output: &OutputEstimate) -> String {
    match *output {
        OutputEstimate::Bounded => "bounded by its annotation".to_string(),
        OutputEstimate::Measured { ratio, runs } => {
            let runs = if runs == 1 { "1 run".to_string() } else { format!("{runs} runs") };
            format!("{} of its input, measured over {runs}", format_share(ratio))
        }
        OutputEstimate::Annotation { ratio } => format!("{} of its input, as its annotation says", format_share(ratio)),
        OutputEstimate::Assumed { ratio } => {
            format!("{} of its input, assumed (no run measured it yet)", format_share(ratio))
        }
    }
}

/// A share as a percentage with the digits that matter: `50%`, `2.1%`, `0.03%`.
fn format_share(ratio: f64) -> String {
    let percent = ratio * 100.0;
    match percent {
        p if p >= 10.0 => format!("{p:.0}%"),
        p if p >= 1.0 => format!("{p:.1}%"),
        p if p >= 0.01 => format!("{p:.2}%"),
        0.0 => "0%".to_string(),
        _ => "less than 0.01%".to_string(),
    }
}

pub fn render_text(path: &str, source: &str, plan: &Plan) -> String {
    let lines = LineIndex::new(source);
    let mut out = String::new();
    let (mut bash, mut posh, mut between_proxies) = (Figure::default(), Figure::default(), Figure::default());
    for pipeline in &plan.pipelines {
        let (line, _) = lines.line_col(source, pipeline.span.start);
        out.push_str(&format!("{path}:{line}: {}\n", render_inline(source, pipeline)));
        for node in
            pipeline.nodes.iter().filter(|n| matches!(n.kind, NodeKind::Command { .. } | NodeKind::Merge { .. }))
        {
            out.push_str(&format!("  {} {}: {}\n", node.location.label(), node_label(node), node.why.explain()));
            if let NodeKind::Command { annotation: Some(annotation), copy: None | Some((0, _)), output, .. } =
                &node.kind
            {
                out.push_str(&format!("      annotation: {annotation}\n"));
                out.push_str(&format!("      output: {}\n", describe_output(output)));
            }
        }
        for glob in &pipeline.globs_at_proxy {
            out.push_str(&format!("  glob `{}`: expanded by bash at the proxy of @{}\n", glob.word, glob.mount));
        }
        for value_use in &pipeline.values {
            out.push_str(&format!("  value: {}\n", value_use.describe()));
        }
        for unknown in &pipeline.unknown_values {
            out.push_str(&format!("  not known before the run: `{}`: {}\n", unknown.parameter, unknown.why));
        }
        let assumed = assumed_edges(pipeline);
        for (edge, assumed) in pipeline.edges.iter().zip(assumed).filter(|(e, _)| e.crosses && e.bytes > 0) {
            let (from, to) = (pipeline.node(edge.from), pipeline.node(edge.to));
            let how = if edge.between_proxies { ", streamed from proxy to proxy" } else { "" };
            out.push_str(&format!(
                "  crosses {} → {}: {} ({} → {}{how})\n",
                from.location.label(),
                to.location.label(),
                Figure::new(edge.bytes, assumed),
                node_label(from),
                node_label(to)
            ));
        }
        let [bash_figure, posh_figure, between_figure] = pipeline_figures(pipeline);
        out.push_str(&format!(
            "  bash would move {bash_figure}, posh moves {}\n\n",
            posh_moves(posh_figure, between_figure)
        ));
        bash = Figure::sum([bash, bash_figure]);
        posh = Figure::sum([posh, posh_figure]);
        between_proxies = Figure::sum([between_proxies, between_figure]);
    }
    for the_loop in &plan.loops {
        let (line, _) = lines.line_col(source, the_loop.span.start);
        out.push_str(&format!("{path}:{line}: for {}: {}\n\n", the_loop.variable, the_loop.runs.describe()));
    }
    for left in &plan.left_to_bash {
        let (first, last) = lines_of(&lines, source, left.span);
        let at = if first == last { format!("{first}") } else { format!("{first}-{last}") };
        out.push_str(&format!(
            "{path}:{at}: posh could not parse this ({}); bash runs it as it is, nothing in it is offloaded\n\n",
            left.message
        ));
    }
    let strategy = match plan.strategy {
        Strategy::Greedy => "greedy (the paper's)",
        Strategy::CostBased => "cost-based",
    };
    out.push_str(&format!(
        "{} pipeline(s), {strategy} placement: bash would move {bash}, posh moves {}\n",
        plan.pipelines.len(),
        posh_moves(posh, between_proxies)
    ));
    if [bash, posh, between_proxies].iter().any(|f| f.assumed && f.bytes > 0) {
        out.push_str("(~: an estimate, from an output share no annotation states and no run measured yet)\n");
    }
    out.push_str(&super::coverage::coverage(plan).describe());
    out
}

/// The 1-based first and last lines of a span that ends with its last line's newline.
pub fn lines_of(lines: &LineIndex, source: &str, span: crate::text::Span) -> (usize, usize) {
    let last = if span.end > span.start { span.end - 1 } else { span.start };
    (lines.line_col(source, span.start).0, lines.line_col(source, last).0)
}

fn dot_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Graphviz: one cluster per pipeline, inside it one per machine; edges that cross the network
/// are red and labelled with their predicted bytes.
pub fn render_dot(path: &str, source: &str, plan: &Plan) -> String {
    let lines = LineIndex::new(source);
    let mut out = String::from(
        "digraph posh {\n  rankdir=LR;\n  compound=true;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"sans-serif\", fontsize=9];\n",
    );
    for (p, pipeline) in plan.pipelines.iter().enumerate() {
        let (line, _) = lines.line_col(source, pipeline.span.start);
        let [bash_figure, posh_figure, _] = pipeline_figures(pipeline);
        out.push_str(&format!(
            "  subgraph cluster_p{p} {{\n    label=\"{}:{line}  bash {bash_figure} / posh {posh_figure}\";\n    style=rounded;\n",
            dot_escape(path),
        ));
        let mut by_location: BTreeMap<&Location, Vec<&Node>> = BTreeMap::new();
        for node in &pipeline.nodes {
            by_location.entry(&node.location).or_default().push(node);
        }
        for (l, (location, nodes)) in by_location.into_iter().enumerate() {
            let (fill, title) = match location {
                Location::Client => ("#eef3ff", "client".to_string()),
                Location::Mount(name) => ("#eaf7ea", format!("proxy @{name}")),
            };
            out.push_str(&format!("    subgraph cluster_p{p}_l{l} {{\n      label=\"{title}\";\n      style=filled;\n      fillcolor=\"{fill}\";\n"));
            for node in nodes {
                let shape = match node.kind {
                    NodeKind::Command { .. } => "box",
                    NodeKind::Merge { .. } => "invtrapezium",
                    _ => "note",
                };
                out.push_str(&format!(
                    "      p{p}n{} [label=\"{}\", shape={shape}];\n",
                    node.id,
                    dot_escape(&node_label(node))
                ));
            }
            out.push_str("    }\n");
        }
        let assumed = assumed_edges(pipeline);
        for (edge, assumed) in pipeline.edges.iter().zip(assumed) {
            // stderr and streams predicted empty are drawn quietly, so the data's path stands out.
            let style = match (edge.stream, edge.crosses) {
                (Stream::Stderr, _) | (_, true) if edge.bytes == 0 => ", style=dashed, color=gray70",
                (_, true) => ", color=red, fontcolor=red, penwidth=2",
                (_, false) => "",
            };
            let label = if edge.bytes > 0 { Figure::new(edge.bytes, assumed).to_string() } else { String::new() };
            out.push_str(&format!("    p{p}n{} -> p{p}n{} [label=\"{label}\"{style}];\n", edge.from, edge.to));
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

/// The JSON of `--explain --format json`. `version` changes whenever a field changes meaning or
/// goes away; new fields may appear without a change. See docs/explain.md.
#[derive(Debug, serde::Serialize)]
pub struct ExplainDocument<'a> {
    pub version: u32,
    pub script: &'a str,
    pub strategy: Strategy,
    pub pipelines: Vec<ExplainPipeline<'a>>,
    pub bash_bytes: u64,
    pub posh_bytes: u64,
    pub between_proxies_bytes: u64,
    /// The script's top-level `for` loops and how their iterations run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loops: Vec<ExplainLoop<'a>>,
    /// How many pipelines go to the runtime, and why the others stay with bash.
    pub coverage: super::coverage::Coverage,
    /// Statements posh could not parse: bash runs them as they are.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_to_bash: Vec<ExplainLeftToBash>,
}

#[derive(Debug, serde::Serialize)]
pub struct ExplainLeftToBash {
    /// 1-based first and last lines.
    pub line: usize,
    pub last_line: usize,
    /// What posh's parser said of it.
    pub message: String,
}

#[derive(Debug, serde::Serialize)]
pub struct ExplainLoop<'a> {
    /// 1-based lines of its `for` and its `done`.
    pub line: usize,
    pub last_line: usize,
    /// What `--explain` says of it in text.
    pub described: String,
    #[serde(flatten)]
    pub plan: &'a super::LoopPlan,
}

#[derive(Debug, serde::Serialize)]
pub struct ExplainPipeline<'a> {
    /// 1-based line and column (in characters) of the pipeline's start.
    pub line: usize,
    pub column: usize,
    pub source: &'a str,
    /// The pipeline with placements written into it, as in the text form.
    pub rendered: String,
    #[serde(flatten)]
    pub plan: &'a PipelinePlan,
}

pub const EXPLAIN_JSON_VERSION: u32 = 1;

impl<'a> ExplainDocument<'a> {
    pub fn new(script: &'a str, source: &'a str, plan: &'a Plan) -> ExplainDocument<'a> {
        let lines = LineIndex::new(source);
        ExplainDocument {
            version: EXPLAIN_JSON_VERSION,
            script,
            strategy: plan.strategy,
            pipelines: plan
                .pipelines
                .iter()
                .map(|p| {
                    let (line, column) = lines.line_col(source, p.span.start);
                    ExplainPipeline {
                        line,
                        column,
                        source: &source[p.span.range()],
                        rendered: render_inline(source, p),
                        plan: p,
                    }
                })
                .collect(),
            bash_bytes: plan.pipelines.iter().map(|p| p.bash_bytes).sum(),
            posh_bytes: plan.pipelines.iter().map(|p| p.posh_bytes).sum(),
            between_proxies_bytes: plan.pipelines.iter().map(|p| p.between_proxies_bytes).sum(),
            loops: plan
                .loops
                .iter()
                .map(|l| ExplainLoop {
                    line: lines.line_col(source, l.span.start).0,
                    last_line: lines.line_col(source, l.span.end).0,
                    described: l.runs.describe(),
                    plan: l,
                })
                .collect(),
            coverage: super::coverage::coverage(plan),
            left_to_bash: plan
                .left_to_bash
                .iter()
                .map(|left| {
                    let (line, last_line) = lines_of(&lines, source, left.span);
                    ExplainLeftToBash { line, last_line, message: left.message.clone() }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::format_bytes;

    #[test]
    fn bytes_read_like_a_person_writes_them() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(999), "999 B");
        assert_eq!(format_bytes(3_100), "3.1 KB");
        assert_eq!(format_bytes(12_400_000), "12 MB");
        assert_eq!(format_bytes(1_500_000_000), "1.5 GB");
    }
}
