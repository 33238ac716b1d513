//! Loops handed to the runtime whole (after the AMFS Shell paper's data-aware loops): a
//! top-level `for` loop whose body is only pipelines the runtime can run, each iteration's words
//! known only to bash, goes to the runtime as one call (`rewrite::why_loop_stays` says when that
//! is faithful). The runtime plans every iteration's pipelines as it plans any call; when every
//! one of them runs wholly at one proxy ([`one_job_at`]), the iterations go there as one request
//! and run in order, instead of a round trip each. Here the same rule is applied to the words the
//! planner can know (literals, globs), so `--explain` says what the runtime will do.

use super::model::{Location, NodeKind, PipelinePlan};
use super::{PlanContext, ScriptScope, WorkingDir, expand_word, plan_pipeline_in};
use crate::shell::{ForLoop, Pipeline, RedirectTarget, Script};
use crate::text::Span;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LoopPlan {
    /// From `for` through `done`.
    pub span: Span,
    pub variable: String,
    /// Its body's pipelines, as indices into `Plan::pipelines`.
    pub body: Vec<usize>,
    #[serde(flatten)]
    pub runs: LoopRuns,
}

/// How a loop's iterations run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "runs", rename_all = "snake_case")]
pub enum LoopRuns {
    /// bash runs the loop, handing its body's pipelines to the runtime one iteration at a time.
    WithBash { why: String },
    /// bash runs the loop as it is: no pipeline of its body goes to the runtime (bash keeps each,
    /// or none may run at a proxy).
    TouchesNoMount,
    /// The runtime runs it, every iteration at the proxy of `mount`, in `requests` requests of
    /// at most [`PIPELINES_PER_REQUEST`] pipelines.
    OneJob { mount: String, iterations: usize, requests: usize },
    /// The runtime runs it, each iteration's pipelines as calls of their own would run (the
    /// detail says why not as one request).
    EachIteration { why: String },
    /// The runtime runs it; whether as one request it decides with the loop's words, which only
    /// bash knows (the detail says why).
    AtRunTime { why: String },
}

impl LoopRuns {
    /// For people: who runs the loop and how its iterations reach the data.
    pub fn describe(&self) -> String {
        match self {
            LoopRuns::WithBash { why } => {
                format!("bash runs the loop ({why}); its pipelines go to the runtime one iteration at a time")
            }
            LoopRuns::TouchesNoMount => {
                "bash runs the loop as it is: no pipeline of its body goes to the runtime".to_string()
            }
            LoopRuns::OneJob { mount, iterations, requests: 1 } => format!(
                "the runtime runs the loop: its {iterations} iteration(s) go to the proxy of mount {mount} as one \
                 request, one round trip instead of one per pipeline"
            ),
            LoopRuns::OneJob { mount, iterations, requests } => format!(
                "the runtime runs the loop: its {iterations} iteration(s) go to the proxy of mount {mount} in \
                 {requests} requests of at most {PIPELINES_PER_REQUEST} pipelines, a round trip each instead of one \
                 per pipeline"
            ),
            LoopRuns::EachIteration { why } => format!(
                "the runtime runs the loop, each iteration's pipelines placed on their own ({why}), one round trip \
                 per pipeline at a proxy"
            ),
            LoopRuns::AtRunTime { why } => format!(
                "the runtime runs the loop, its iterations as one request when they all land at one proxy ({why}: \
                 decided when it runs)"
            ),
        }
    }

    /// The runtime gets the whole loop.
    pub fn handed(&self) -> bool {
        !matches!(self, LoopRuns::WithBash { .. } | LoopRuns::TouchesNoMount)
    }
}

/// The most pipelines (iterations times body pipelines) a loop plans before its first iteration
/// runs, to send them to one proxy: a longer loop runs each pipeline as its turn comes, so that
/// neither its first output nor its memory waits on planning them all.
pub const MOST_PIPELINES_PLANNED_AHEAD: usize = 65_536;

/// What in a loop's word makes bash split or glob it when the body uses it unquoted.
pub(crate) const LOOP_WORD_SPECIALS: [char; 6] = [' ', '\t', '\n', '*', '?', '['];

/// The most pipelines of a loop one request to a proxy holds: a round trip per 256 pipelines is
/// a small part of their time, and the proxy's answer to the first comes while the client is
/// still reading the last's output.
pub const PIPELINES_PER_REQUEST: usize = 256;

/// How many pipelines share each request when a loop's `pipelines` go to a proxy in requests
/// of at most [`PIPELINES_PER_REQUEST`] (at least 1).
pub fn pipelines_per_request(pipelines: usize) -> usize {
    let requests = pipelines.div_ceil(PIPELINES_PER_REQUEST).max(1);
    (pipelines / requests).max(1)
}

/// Where `plan` runs as one job, every command at one proxy: the mount's name; else why not.
/// The rule the runtime applies to each iteration's pipelines, and `--explain` to those it can
/// know.
pub fn one_job_at(plan: &PipelinePlan) -> Result<String, String> {
    if let Some(why) = &plan.stays_with_bash {
        return Err(format!("bash runs a pipeline of its body ({why})"));
    }
    let mut at: Option<&str> = None;
    for node in &plan.nodes {
        let here = match (&node.kind, &node.location) {
            (NodeKind::Merge { .. }, _) => return Err("a command of its body is split across mounts".into()),
            (NodeKind::Text { .. }, _) => return Err("a command of its body reads a here-document".into()),
            // A first command at a proxy never reads the script's input (the planner keeps one
            // that would at the client).
            (NodeKind::Stdin | NodeKind::Stdout | NodeKind::Stderr, _) => continue,
            (NodeKind::Command { text, .. }, Location::Client) => {
                return Err(format!("`{text}` runs at the client: {}", node.why.explain()));
            }
            (NodeKind::ReadFile { path, .. } | NodeKind::WriteFile { path, .. }, Location::Client) => {
                return Err(format!("`{path}` is on no mount"));
            }
            (_, Location::Mount(name)) => name.as_str(),
        };
        match at {
            Some(mount) if mount != here => return Err(format!("its commands run at mounts {mount} and {here}")),
            _ => at = Some(here),
        }
    }
    if plan.edges.iter().any(|e| e.between_proxies) {
        return Err("a pipeline of its body streams between proxies".into());
    }
    at.map(str::to_string).ok_or_else(|| "its body runs no command".into())
}

/// Where every plan of `iterations` (each iteration's body pipelines, in order) runs as one job
/// at one proxy; else why not.
pub fn one_proxy_for_all<'p>(iterations: impl IntoIterator<Item = &'p PipelinePlan>) -> Result<String, String> {
    let mut at: Option<String> = None;
    for plan in iterations {
        let here = one_job_at(plan)?;
        match &at {
            Some(mount) if *mount != here => return Err(format!("its iterations run at mounts {mount} and {here}")),
            _ => at = Some(here),
        }
    }
    at.ok_or_else(|| "it has no iteration".into())
}

/// The plans of the script's top-level `for` loops, given its pipelines' `plans` (owned or
/// shared, as the editor keeps them).
pub fn plan_loops<P: std::borrow::Borrow<PipelinePlan>>(
    ctx: &PlanContext<'_>,
    script: &Script,
    scope: &ScriptScope<'_>,
    plans: &[P],
) -> Vec<LoopPlan> {
    script
        .loops
        .iter()
        .map(|the_loop| {
            let body = body_of(script, the_loop);
            let runs = match why_with_bash(ctx, script, scope, the_loop, &|i| plans[i].borrow().goes_to_runtime()) {
                Some(Kept::Because(why)) => LoopRuns::WithBash { why },
                Some(Kept::TouchesNoMount) => LoopRuns::TouchesNoMount,
                None => {
                    let pipelines: Vec<&Pipeline> = body.iter().map(|&i| &*script.pipelines[i]).collect();
                    iterations(ctx, scope, the_loop, &pipelines)
                }
            };
            LoopPlan { span: the_loop.span, variable: the_loop.variable.clone(), body, runs }
        })
        .collect()
}

/// The indices of `the_loop`'s body pipelines among the script's.
pub fn body_of(script: &Script, the_loop: &ForLoop) -> Vec<usize> {
    let body = the_loop.body;
    // Pipelines are in source order: those starting inside the body are one run of them, found
    // by halving (a script's every loop is planned at each keystroke in an editor).
    let first = script.pipelines.partition_point(|p| p.span.start < body.start);
    let inside = |p: &Pipeline| body.start <= p.span.start && p.span.end <= body.end;
    let run = script.pipelines[first..].iter().take_while(|p| p.span.start <= body.end);
    run.enumerate().filter(|(_, p)| inside(p)).map(|(i, _)| first + i).collect()
}

/// Why bash keeps a loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kept {
    /// What `rewrite` cannot hand over faithfully, or a body pipeline that stays with bash.
    Because(String),
    /// No pipeline of its body goes to the runtime (bash keeps each, or none may run at a
    /// proxy): bash runs it as it is.
    TouchesNoMount,
}

/// Why bash keeps `the_loop` rather than hand it to the runtime whole, if it does.
/// `goes_to_runtime` says whether the script's pipeline of that index goes to the runtime
/// (`PipelinePlan::goes_to_runtime`).
pub fn why_with_bash(
    ctx: &PlanContext<'_>,
    script: &Script,
    scope: &ScriptScope<'_>,
    the_loop: &ForLoop,
    goes_to_runtime: &dyn Fn(usize) -> bool,
) -> Option<Kept> {
    let body = body_of(script, the_loop);
    if let Some(why) = scope.script_stays.clone() {
        return Some(Kept::Because(why));
    }
    // A loop none of whose pipelines the runtime would get (bash keeps them, or none may run at
    // a proxy) is bash's as it is: no other reason matters.
    if !body.iter().any(|&i| goes_to_runtime(i)) {
        return Some(Kept::TouchesNoMount);
    }
    scope.why_loop_kept(ctx.library, script, the_loop).map(Kept::Because)
}

/// How the runtime will run a loop it gets whole: its body planned for each word the planner
/// can know, as the runtime plans each iteration.
fn iterations(ctx: &PlanContext<'_>, scope: &ScriptScope<'_>, the_loop: &ForLoop, body: &[&Pipeline]) -> LoopRuns {
    let Some(words) = &the_loop.words else {
        return LoopRuns::AtRunTime { why: "its words are the script's arguments".into() };
    };
    let WorkingDir::Known(steps) = scope.working_dir(body[0]) else {
        return LoopRuns::AtRunTime { why: "its working directory is known only when it runs".into() };
    };
    let cwd = steps.iter().fold(ctx.cwd.clone(), |dir, step| crate::fs::normalize_path(&dir.join(step)));
    let mut values = Vec::new();
    for word in words {
        match expand_word(word, ctx.fs, &cwd) {
            super::Expanded::Words(expanded) => values.extend(expanded),
            super::Expanded::Unknown(raw) => {
                return LoopRuns::AtRunTime { why: format!("`{raw}` is only known when the script runs") };
            }
        }
    }
    if values.len() * body.len() > MOST_PIPELINES_PLANNED_AHEAD {
        let why = format!("over {MOST_PIPELINES_PLANNED_AHEAD} pipelines: each is planned when its turn comes");
        return LoopRuns::EachIteration { why };
    }
    let owned: Vec<Pipeline> = body.iter().map(|p| (*p).clone()).collect();
    if let Some(text) = crate::rewrite::derived_expansions(&owned, &the_loop.variable).first() {
        return LoopRuns::AtRunTime { why: format!("`{text}` is only known when the loop runs") };
    }
    if values.is_empty() {
        return LoopRuns::EachIteration { why: "its words expand to none: nothing runs".into() };
    }
    // An unquoted use stands for the word whole only without a blank or glob character (the
    // rewritten script checks, and bash runs the loop otherwise).
    let unquoted = body.iter().any(|p| {
        let mut p = (*p).clone();
        crate::rewrite::body_words(&mut p).any(|w| {
            crate::rewrite::variable_uses(&w.raw, &the_loop.variable)
                .is_ok_and(|uses| uses.iter().any(|u| !u.quoted && u.other.is_none()))
        })
    });
    if let Some(value) = values.iter().find(|v| unquoted && (v.is_empty() || v.contains(LOOP_WORD_SPECIALS))) {
        let why = format!("bash splits or globs `{value}`, used unquoted: bash runs the loop, each pipeline a call");
        return LoopRuns::EachIteration { why };
    }
    // The iterations go as requests, which their pipelines share (as the runtime plans them).
    let pipelines_per_call = pipelines_per_request(values.len() * body.len());
    let ctx = &PlanContext { cwd, options: super::PlanOptions { pipelines_per_call, ..ctx.options.clone() }, ..*ctx };
    let handed = ScriptScope::handed_over();
    let mut plans = Vec::new();
    for value in &values {
        for pipeline in body {
            let Some(text) = with_value(scope.source, pipeline, &the_loop.variable, value) else {
                return LoopRuns::EachIteration { why: format!("posh cannot write its body with `{value}`") };
            };
            let parsed = crate::shell::parse(&text);
            let [one] = &parsed.pipelines[..] else {
                return LoopRuns::EachIteration { why: format!("posh cannot read its body with `{value}`") };
            };
            let plan = plan_pipeline_in(ctx, one, &handed);
            // Another word only bash knows (`"$out/$f"`): said as written.
            let unknown = plan.nodes.iter().find_map(|n| match &n.why {
                super::Why::DependsOnShell(word) => {
                    Some(word.replace(&quoted(value), &format!("${}", the_loop.variable)))
                }
                _ => None,
            });
            if let Some(word) = unknown {
                return LoopRuns::AtRunTime { why: format!("`{word}` is only known when the script runs") };
            }
            plans.push(plan);
        }
    }
    match one_proxy_for_all(&plans) {
        Ok(mount) => LoopRuns::OneJob {
            mount,
            iterations: values.len(),
            requests: (values.len() * body.len()).div_ceil(PIPELINES_PER_REQUEST),
        },
        Err(why) => LoopRuns::EachIteration { why },
    }
}

/// `value` where a double-quoted word used the loop variable: the quotes closed, the value
/// single-quoted, the quotes opened again.
fn quoted(value: &str) -> String {
    format!("\"'{}'\"", value.replace('\'', "'\\''"))
}

/// The text of `pipeline` with `value` where it uses `variable`, as bash would run it in that
/// iteration.
fn with_value(source: &str, pipeline: &Pipeline, variable: &str, value: &str) -> Option<String> {
    let replacement = quoted(value);
    let mut words: Vec<&crate::shell::Word> = Vec::new();
    for command in &pipeline.commands {
        words.extend(command.words.iter().chain(&command.assignments));
        words.extend(command.redirects.iter().filter_map(|r| match &r.target {
            RedirectTarget::File(word) => Some(word),
            _ => None,
        }));
    }
    words.sort_by_key(|w| w.span.start);
    let mut text = String::new();
    let mut at = pipeline.span.start;
    for word in words {
        text.push_str(source.get(at..word.span.start)?);
        // Unquoted, the value single-quoted alone (checked to hold no blank or glob character).
        let put = |u: &crate::rewrite::VariableUse| {
            let value = if u.quoted { replacement.clone() } else { replacement[1..replacement.len() - 1].to_string() };
            u.derived.is_none().then_some(value)
        };
        text.push_str(&crate::rewrite::replace_variable(&word.raw, variable, put)?);
        at = word.span.end;
    }
    text.push_str(source.get(at..pipeline.span.end)?);
    Some(text)
}
