//! A script's analysis: its parse and its plan, for one version of its text. Every script
//! feature reads one of these; the server computes it once per document version.

use std::collections::HashMap;

use posh_core::Span;
use posh_core::fs::FileSystem;
use posh_core::planner::{self, NodeKind, PipelinePlan, Plan, PlanContext, PlanOptions};
use posh_core::shell::{self, Pipeline, Recovery, RedirectTarget, Script};

use super::World;

#[derive(Debug)]
pub struct ScriptAnalysis {
    pub script: Script,
    /// How the text parsed: `Recovery::Prefix` means the pipelines stop where typing broke the
    /// text, and a previous good analysis shows more.
    pub recovery: Recovery,
    /// One pipeline plan per pipeline of `script`, in the same order.
    pub plan: Plan,
}

impl ScriptAnalysis {
    /// Whether this analysis can stand for its text, rather than a previous one's.
    pub fn is_good(&self) -> bool {
        self.recovery != Recovery::Prefix
    }
}

/// Parses (tolerantly) and plans a script.
pub fn analyze_script(world: &World, fs: &dyn FileSystem, text: &str) -> ScriptAnalysis {
    analyze_script_cached(world, fs, text, &mut PlanCache::default())
}

/// [`analyze_script`], re-planning only the pipelines `cache` has not seen: after a keystroke,
/// that is the pipeline typed in. The cache must be dropped when the world or the files change.
pub fn analyze_script_cached(world: &World, fs: &dyn FileSystem, text: &str, cache: &mut PlanCache) -> ScriptAnalysis {
    let (script, recovery) = shell::parse_tolerant_with_recovery(text);
    let ctx = PlanContext {
        library: &world.library,
        config: &world.config,
        fs,
        cwd: world.root.clone(),
        options: PlanOptions::default(),
    };
    let functions = planner::function_names(&script);
    let mut kept = HashMap::with_capacity(script.pipelines.len());
    let mut pipelines = Vec::with_capacity(script.pipelines.len());
    cache.reused = 0;
    for pipeline in &script.pipelines {
        let key = shape(pipeline, &functions);
        let start = pipeline.span.start;
        let relative = match cache.plans.remove(&key).or_else(|| kept.get(&key).cloned()) {
            Some(plan) => {
                cache.reused += 1;
                plan
            }
            None => {
                let mut plan = planner::plan_pipeline_in(&ctx, pipeline, &functions);
                move_plan(&mut plan, |offset| offset - start);
                plan
            }
        };
        let mut plan = relative.clone();
        move_plan(&mut plan, |offset| offset + start);
        pipelines.push(plan);
        kept.insert(key, relative);
    }
    cache.plans = kept;
    let plan = Plan { pipelines, strategy: ctx.options.strategy };
    ScriptAnalysis { script, recovery, plan }
}

/// Pipeline plans by the shape of their pipeline (its model with offsets relative to its start,
/// and the script's function names), with offsets relative to the pipeline's start.
#[derive(Debug, Default, Clone)]
pub struct PlanCache {
    plans: HashMap<String, PipelinePlan>,
    reused: usize,
}

impl PlanCache {
    /// How many pipelines the last analysis took from the cache rather than planned.
    pub fn reused(&self) -> usize {
        self.reused
    }
}

/// The pipeline as the planner sees it, wherever it stands in the script.
fn shape(pipeline: &Pipeline, functions: &[String]) -> String {
    let mut relative = pipeline.clone();
    let start = pipeline.span.start;
    let rel = |span: &mut Span| *span = Span::new(span.start - start, span.end - start);
    rel(&mut relative.span);
    relative.context.clear();
    for command in &mut relative.commands {
        rel(&mut command.span);
        for word in command.words.iter_mut().chain(command.assignments.iter_mut()) {
            rel(&mut word.span);
        }
        for redirect in &mut command.redirects {
            rel(&mut redirect.span);
            if let RedirectTarget::File(word) | RedirectTarget::Text(word) = &mut redirect.target {
                rel(&mut word.span);
            }
        }
    }
    format!("{functions:?}{relative:?}")
}

fn move_plan(plan: &mut PipelinePlan, by: impl Fn(usize) -> usize) {
    plan.span = Span::new(by(plan.span.start), by(plan.span.end));
    for node in &mut plan.nodes {
        if let NodeKind::Command { span, .. } = &mut node.kind {
            *span = Span::new(by(span.start), by(span.end));
        }
    }
}

/// Maps offsets of an older text into a newer one: what lies before the first difference stays,
/// what lies after the last one moves by the change in length, what lies in between is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shift {
    /// Bytes equal at the start of both texts.
    prefix: usize,
    /// Where the equal tail starts in the old text.
    old_tail: usize,
    old_len: usize,
    new_len: usize,
}

impl Shift {
    pub fn between(old: &str, new: &str) -> Shift {
        let (a, b) = (old.as_bytes(), new.as_bytes());
        let mut prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        while !old.is_char_boundary(prefix) {
            prefix -= 1;
        }
        let max_tail = a.len().min(b.len()) - prefix;
        let mut tail = a.iter().rev().zip(b.iter().rev()).take(max_tail).take_while(|(x, y)| x == y).count();
        while !old.is_char_boundary(a.len() - tail) || !new.is_char_boundary(b.len() - tail) {
            tail -= 1;
        }
        Shift { prefix, old_tail: a.len() - tail, old_len: a.len(), new_len: b.len() }
    }

    /// The offset in the new text, `None` when the old offset lay inside the changed region.
    pub fn offset(&self, old: usize) -> Option<usize> {
        if old <= self.prefix {
            Some(old)
        } else if old >= self.old_tail {
            Some(old + self.new_len - self.old_len)
        } else {
            None
        }
    }

    pub fn span(&self, old: Span) -> Option<Span> {
        Some(Span::new(self.offset(old.start)?, self.offset(old.end)?))
    }
}
