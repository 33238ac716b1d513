//! The plan: per pipeline, a DAG of read, write, command and merge nodes, each placed on the
//! client or a mount's proxy, with predicted bytes on every edge. This is what `--explain` prints
//! (its JSON is this structure), what the language server shows and what the runtime executes.

use crate::annotation::MergeKind;
use crate::text::Span;

/// Where a node runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(tag = "kind", content = "mount", rename_all = "snake_case")]
pub enum Location {
    Client,
    /// The proxy of the mount with this name.
    Mount(String),
}

impl Location {
    /// `@client`, `@logs`.
    pub fn label(&self) -> String {
        match self {
            Location::Client => "@client".to_string(),
            Location::Mount(name) => format!("@{name}"),
        }
    }
}

pub type NodeId = usize;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Plan {
    pub pipelines: Vec<PipelinePlan>,
    /// The script's top-level `for` loops, and whether the runtime gets them whole.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loops: Vec<super::LoopPlan>,
    pub strategy: Strategy,
    /// Why posh hands none of the script's pipelines to its runtime, when it does not (no mount
    /// is configured, the script does not parse, bash rejects it): bash runs the script as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hands_nothing: Option<String>,
    /// Statements posh could not parse, which bash accepts and runs as they are
    /// (`Script::left_to_bash`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_to_bash: Vec<crate::shell::LeftToBash>,
}

impl Plan {
    /// Why posh hands nothing over for `script` planned under `config`, if so.
    pub fn hands_nothing(config: &crate::config::Config, script: &crate::shell::Script) -> Option<String> {
        if config.mounts.is_empty() {
            Some("no mount is configured".into())
        } else if !script.errors.is_empty() {
            // Where both parsers reject it, posh's error (with its place) is the one shown.
            Some("the script has a syntax error".into())
        } else {
            script.bash_rejects.as_deref().map(bash_rejects)
        }
    }

    /// The rule for a script brush-parser reads and bash may not, applied to this plan (see
    /// [`rejected_by_bash`]): a script bash rejects is handed nothing. Returns bash's message
    /// when it rejects the script.
    pub fn confirm_with_bash(
        &mut self,
        source: &str,
        script: &crate::shell::Script,
        bash: &mut dyn FnMut(&str) -> crate::shell::BashSyntax,
    ) -> Option<String> {
        let message = rejected_by_bash(&super::coverage::coverage(self), source, script, bash)?;
        self.hands_nothing = Some(bash_rejects(&message));
        Some(message)
    }
}

/// The rule for a script brush-parser reads and bash may not: before anything of it is handed
/// over (`coverage` says something goes), bash is asked (`bash -n` on `source`, through `bash`;
/// not asked again when it was while parsing, `Script::left_to_bash`), and a script bash rejects
/// is handed nothing, so that bash reports its own error, with its message and status. Returns
/// bash's message when it rejects the script. posh-exec applies the same rule before it
/// rewrites a script, `--explain` and posh-lsp through this.
pub fn rejected_by_bash(
    coverage: &super::coverage::Coverage,
    source: &str,
    script: &crate::shell::Script,
    bash: &mut dyn FnMut(&str) -> crate::shell::BashSyntax,
) -> Option<String> {
    let hands_something = coverage.hands_nothing.is_none() && (coverage.handed > 0 || coverage.loops_handed > 0);
    if !script.left_to_bash.is_empty() || !hands_something {
        return None;
    }
    match bash(source) {
        crate::shell::BashSyntax::Rejected(message) => Some(message),
        crate::shell::BashSyntax::Accepted => None,
    }
}

/// Why nothing is handed over of a script bash rejects.
pub fn bash_rejects(message: &str) -> String {
    format!("bash rejects the script ({message}), so nothing is offloaded")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The paper's algorithm: pin by data location, cut each source-to-sink path at its cheapest
    /// edge, conflicts and multi-mount commands to the client.
    Greedy,
    /// Minimises predicted transfer time over the whole DAG (exact for posh's tree-shaped DAGs).
    CostBased,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PipelinePlan {
    /// The pipeline in the script.
    pub span: Span,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// Bytes that would cross the network if everything ran at the client (as under bash).
    pub bash_bytes: u64,
    /// Bytes predicted to cross the client's links under this plan.
    pub posh_bytes: u64,
    /// Bytes predicted to go directly from one proxy to another (files streamed to a command at
    /// another mount's proxy), which never reach the client.
    #[serde(skip_serializing_if = "is_zero")]
    pub between_proxies_bytes: u64,
    /// Why the pipeline stays with bash (bash runs it unchanged, at the client), if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stays_with_bash: Option<String>,
    /// When bash keeps the pipeline only in part: the runs of its commands that go to the
    /// runtime, each as a pipeline of its own (bash runs the other commands and the pipes
    /// between them). Empty when the pipeline goes whole, or stays whole.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handed_parts: Vec<HandedPart>,
    /// The values its words were planned with, from the value analysis (`crate::values`): each
    /// parameter they read, what it may hold and where that lies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<ValueUse>,
    /// Parameters its words read whose values posh does not know before the run, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_values: Vec<UnknownValue>,
    /// Its words that the runtime has their mount's proxy glob instead of bash at the client
    /// (`globs`): the pipeline is handed over whole and they are plain patterns over one mount.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub globs_at_proxy: Vec<super::globs::GlobAtProxy>,
}

/// A parameter a pipeline's words read, with the values the plan was made with.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ValueUse {
    /// As the script writes it: `$IN`, `$1`, `$@` (all the positional parameters).
    pub parameter: String,
    /// How many values it may hold there.
    pub count: usize,
    /// The first few of them (the positional parameters' lists joined by spaces).
    pub values: Vec<String>,
    /// Where its values lie, as paths from the pipeline's working directory: each mount holding
    /// some (or `client` for those on no mount) with how many. Empty when none is on a mount.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub at: Vec<(String, usize)>,
    /// Every combination of the values gives the pipeline the same places: the plan holds for
    /// each. `false`: they lead to different places, which the runtime decides when it runs.
    pub one_plan: bool,
}

/// How many values the first of a list shows.
pub const VALUES_SHOWN: usize = 3;

impl ValueUse {
    /// For people: "`$f`: 1,000 values (notes/a.txt, notes/b.txt, ...), at notes".
    pub fn describe(&self) -> String {
        let arguments = self.parameter == "$@";
        let empty = if arguments { "none" } else { "\"\"" };
        let shown: Vec<String> =
            self.values.iter().map(|v| if v.is_empty() { empty.to_string() } else { v.clone() }).collect();
        let name = if arguments { "the arguments (`$@`)".to_string() } else { format!("`{}`", self.parameter) };
        let mut text = if self.count == 1 {
            format!("{name} {} {}", if arguments { "are" } else { "is" }, shown.first().map_or("unset", String::as_str))
        } else {
            let more = if self.count > shown.len() { ", …" } else { "" };
            format!("{name}: {} values ({}{more})", group_digits(self.count), shown.join(", "))
        };
        match &self.at[..] {
            [] => {}
            [(place, _)] if place == "client" => text.push_str(", on no mount"),
            [(place, _)] => text.push_str(&format!(", at {place}")),
            many => {
                let parts: Vec<String> = many.iter().map(|(place, n)| format!("{n} at {place}")).collect();
                text.push_str(&format!(", {}", parts.join(", ")));
            }
        }
        if !self.one_plan {
            text.push_str(": they run in different places, decided when the script runs");
        }
        text
    }
}

/// `1,000`.
fn group_digits(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A parameter whose value posh does not know before the run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UnknownValue {
    /// As the script writes it (`$IN`), or the word that reads it.
    pub parameter: String,
    pub why: String,
    /// The first word of the pipeline that reads it (relative as the plan's spans are).
    #[serde(skip)]
    pub span: Span,
}

/// Commands of a pipeline that go to the runtime together while bash keeps the others.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HandedPart {
    /// The first command's index and the index after the last.
    pub commands: (usize, usize),
    /// From the first command to the last.
    pub span: Span,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Node {
    pub id: NodeId,
    pub kind: NodeKind,
    pub location: Location,
    pub why: Why,
}

/// Where a command's predicted output comes from: people trust a figure more when they know it
/// was measured.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum OutputEstimate {
    /// A bound in its annotation (`head -n 10`, `wc`): at most so much per input.
    Bounded,
    /// The share of its input that earlier runs of its shape wrote, on average.
    Measured { ratio: f64, runs: u32 },
    /// The share its annotation states (`output_ratio`, or all of it for `output_holds_input`).
    Annotation { ratio: f64 },
    /// Assumed: half its input for a filter (`filters_input`), all of it otherwise or without
    /// an annotation.
    Assumed { ratio: f64 },
}

impl OutputEstimate {
    /// The share of its input it is predicted to write; `None` when bounded.
    pub fn ratio(&self) -> Option<f64> {
        match *self {
            OutputEstimate::Bounded => None,
            OutputEstimate::Measured { ratio, .. }
            | OutputEstimate::Annotation { ratio }
            | OutputEstimate::Assumed { ratio } => Some(ratio),
        }
    }
}

/// Whether a command's environment at a proxy may hold `name`: the locale (`LANG`, `LANGUAGE`,
/// `LC_*`), `TZ`, and the variables its annotation says it reads (`reads_env`). Nothing else
/// reaches a proxy, whoever sets it (an allow-list: `TAR_OPTIONS` makes tar run a program, and
/// no deny-list knows every such variable). The planner keeps at the client a command the
/// script gives another variable (`FOO=1 cmd`); the proxy refuses one in a request.
pub fn reaches_proxy(name: &str, reads_env: &[String]) -> bool {
    matches!(name, "LANG" | "LANGUAGE" | "TZ") || name.starts_with("LC_") || reads_env.iter().any(|v| v == name)
}

/// What of the client's environment a command reads besides its words and files, as its
/// annotation says (`reads_env`, `reads_home`): it goes along to a proxy with the command.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Carried {
    /// Environment variables, taken along when the script has set them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Files under the user's home, relative to it; a copy of each the user has goes along.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub home: Vec<String>,
}

impl Carried {
    pub fn is_empty(&self) -> bool {
        self.env.is_empty() && self.home.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NodeKind {
    /// A command of the pipeline (or one copy of it, when split).
    Command {
        /// Index of the command in the pipeline.
        command: usize,
        /// The words as the planner sees them (expanded where it could).
        argv: Vec<String>,
        /// The command for people: known words quoted as the shell would need them, words only
        /// the shell knows as written.
        text: String,
        span: Span,
        /// `Some((i, n))` for the i-th of n copies.
        copy: Option<(usize, usize)>,
        /// The annotation entry that fits, as `name[options]` with its source file.
        annotation: Option<std::sync::Arc<str>>,
        /// The status by which it says it selected nothing (grep's 1): the copies of a split
        /// exit with it only when each did.
        #[serde(skip_serializing_if = "Option::is_none")]
        no_match_status: Option<u8>,
        /// What it takes along from the client wherever it runs.
        #[serde(skip_serializing_if = "Carried::is_empty")]
        carries: Carried,
        /// Its shape for measured ratios (see `measured::shape`), when it has an annotation.
        #[serde(skip_serializing_if = "Option::is_none")]
        shape: Option<String>,
        /// Where its predicted output comes from.
        output: OutputEstimate,
    },
    /// A file the pipeline reads (an input argument or a `<` redirect).
    ReadFile {
        path: String,
        size: u64,
    },
    /// A file the pipeline writes (an output argument or a `>`/`>>` redirect), or a name a
    /// command removes or replaces (`removes`: `rm`, `ln -f`).
    WriteFile {
        path: String,
        append: bool,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        removes: bool,
    },
    /// Combines the outputs of split copies, in input order, as the command's annotation says.
    Merge {
        kind: MergeKind,
        command: usize,
        /// The command that merges, for `sort_merge` (`sort -m` with the command's ordering
        /// options) and `rerun` (the command again, reading the copies' outputs); empty when
        /// posh combines them itself.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        argv: Vec<String>,
    },
    /// The pipeline's standard input, as the script provides it.
    Stdin,
    /// The script's standard output or error: whatever bash would write them to.
    Stdout,
    Stderr,
    /// A here-document or here-string fed to a command.
    Text {
        bytes: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
    /// A file's content, read or written by name.
    File,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Edge {
    pub from: NodeId,
    pub to: NodeId,
    pub stream: Stream,
    /// Predicted bytes on this edge.
    pub bytes: u64,
    /// The two ends run on different machines.
    pub crosses: bool,
    /// A file on one mount streamed to a command at another mount's proxy, or a pipe from a
    /// command at one proxy to a command at another: the bytes go from proxy to proxy, not
    /// through the client.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub between_proxies: bool,
}

/// Why a node runs where it runs.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "reason", content = "detail", rename_all = "snake_case")]
pub enum Why {
    /// Files, the script's streams: they are where they are.
    DataLocation,
    /// No annotation for the command.
    NoAnnotation,
    /// Annotations exist, none fits this invocation.
    NoEntryFits(String),
    /// A word only the shell can tell (`$f`, `$(...)`).
    DependsOnShell(String),
    /// A builtin, a function of the script or a compound command: it runs in bash.
    RunsInShell,
    /// Its files lie on several mounts, it cannot be split, and none of them can be streamed to
    /// the others' proxy (or the placement is the paper's, which never streams).
    SeveralMounts,
    /// No proxy could run it as bash would: the detail says why (a file on no mount, a path the
    /// proxy sees differently, the script's standard input).
    ClientOnly(String),
    /// The whole pipeline stays with bash, unchanged (the detail says why): posh does not hand
    /// it to its runtime at all.
    StaysWithBash(String),
    /// Bash runs this command of a pipeline whose other commands go to the runtime (the detail
    /// says why it cannot go with them).
    KeptWithBash(String),
    /// Split copies' outputs are combined where the pipeline continues: at the client.
    FanIn,
    /// `needs_current_dir`: it runs where the working directory lives.
    CurrentDirectory,
    /// It opens files named in its input (`stdin_file_list`, `file_list`): names the planner
    /// never sees, so it runs at the client, where they mean what they mean under bash. The
    /// detail says where the names come from.
    FileNamesFromInput(String),
    /// One copy of a command split across its files or its input.
    Split,
    /// The greedy cut put it on this side of the cheapest edge.
    GreedyCut,
    /// Greedy placement gave conflicting sides; conflicts go to the client.
    GreedyConflict,
    /// The cost-based placement found this the cheapest.
    Cheapest,
    /// Handing the pipeline to proxies would cost more than it saves: a call of the runtime
    /// costs time of its own, more than the round trips through the mount it would spare on a
    /// fast link with little data (the detail gives the predicted times).
    DoesNotPay(String),
}

impl Why {
    pub fn explain(&self) -> String {
        match self {
            Why::DataLocation => "where the data is".to_string(),
            Why::NoAnnotation => "no annotation for this command, so it runs at the client".to_string(),
            Why::NoEntryFits(why) => format!("{why}, so it runs at the client"),
            Why::DependsOnShell(word) => {
                format!(
                    "`{word}` is only known when the script runs: posh decides then where it runs (here: the client)"
                )
            }
            Why::RunsInShell => "runs inside bash (builtin, function or compound command)".to_string(),
            Why::SeveralMounts => {
                "reads files on several mounts and cannot be split, and none can be streamed to another's proxy"
                    .to_string()
            }
            Why::ClientOnly(why) => format!("{why}, so it runs at the client"),
            Why::StaysWithBash(why) => format!("the pipeline stays with bash ({why}), so it runs at the client"),
            Why::KeptWithBash(why) => {
                format!("bash keeps this command ({why}) and pipes it to the rest, so it runs at the client")
            }
            Why::FanIn => "the copies' outputs are combined at the client".to_string(),
            Why::CurrentDirectory => "needs the working directory".to_string(),
            Why::FileNamesFromInput(from) => format!(
                "opens files named in {from}, names posh cannot see, so it runs at the client, where they mean \
                 what they mean under bash"
            ),
            Why::Split => "one copy per mount of its data".to_string(),
            Why::GreedyCut => "on this side of the path's cheapest edge".to_string(),
            Why::GreedyConflict => "paths disagree, so it runs at the client".to_string(),
            Why::Cheapest => "the cheapest place for the data it moves".to_string(),
            Why::DoesNotPay(times) => {
                format!("handing it to a proxy would cost more than it saves ({times}), so it runs at the client")
            }
        }
    }
}

impl PipelinePlan {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// Some command (or merge) runs at a proxy. Files are where they are: a command at the
    /// client reading a mount's file runs as bash would run it.
    pub fn runs_at_a_proxy(&self) -> bool {
        self.nodes.iter().any(|n| {
            n.location != Location::Client && matches!(n.kind, NodeKind::Command { .. } | NodeKind::Merge { .. })
        })
    }

    /// Some command runs at a proxy, or a word only bash knows may name a mount's files (the
    /// runtime places it when it runs): only then is a pipeline that may be handed to the
    /// runtime worth its call. A pipeline whose every command the plan keeps at the client (the
    /// cheapest place, or a call that does not pay) is bash's: the runtime would run the same
    /// commands at the same place, its call's cost added. So is one planned by value sets
    /// (`by_value`) whose every value keeps it at the client: were a value other at the run
    /// (the analysis missed a write of the script's), bash runs it as it always could, only
    /// perhaps slower.
    pub fn may_touch_a_mount(&self) -> bool {
        self.runs_at_a_proxy() || self.nodes.iter().any(|n| matches!(n.why, Why::DependsOnShell(_)))
    }

    /// The rewrite hands this pipeline (or parts of it) to the runtime: nothing keeps it with
    /// bash and it may touch a mount. The one rule for the rewrite, `--explain`'s summary and
    /// whether a loop's body has anything for the runtime.
    pub fn goes_to_runtime(&self) -> bool {
        self.stays_with_bash.is_none() && self.may_touch_a_mount()
    }

    pub fn crossing_edges(&self) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(|e| e.crosses)
    }

    /// Command nodes of the pipeline's `index`-th command (several when split).
    pub fn copies_of(&self, index: usize) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(move |n| matches!(n.kind, NodeKind::Command { command, .. } if command == index))
    }
}
