//! A script's analysis: its parse and its plan, for one version of its text. Every script
//! feature reads one of these; the server computes it once per document version.

use std::sync::Arc;

use posh_core::Span;
use posh_core::fs::FileSystem;
use posh_core::planner::coverage::{Coverage, coverage_of};
use posh_core::planner::{self, LoopPlan, NodeKind, PipelinePlan, Plan, PlanContext, Strategy};
use posh_core::shell::{BashSyntax, LeftToBash, Recovery, Script};

use super::World;
use super::bash_groups;
use super::chunks::{self, ChunkCache, PlannedWith};

#[derive(Debug)]
pub struct ScriptAnalysis {
    pub script: Script,
    /// How the text parsed: `Recovery::Prefix` means the pipelines stop where typing broke the
    /// text, and a previous good analysis shows more.
    pub recovery: Recovery,
    pub plan: ScriptPlan,
    /// Planned without some answers of the file system (its time budget ran out): some sizes
    /// counted as 0. Shown only where nothing better is known, and never kept.
    pub partial: bool,
    /// The names the script defines as functions (`ScriptScope::functions`): a command of one
    /// stays with bash for that, not for want of an annotation.
    pub functions: Vec<String>,
}

/// A script's plan as the editor keeps it: [`Plan`], but each pipeline's plan shared with the
/// chunk it came from, so that a keystroke copies (and frees) no plan it did not make.
#[derive(Debug)]
pub struct ScriptPlan {
    /// One per pipeline of the script, in the same order.
    pub pipelines: Vec<PlacedPlan>,
    pub loops: Vec<LoopPlan>,
    pub strategy: Strategy,
    /// See [`Plan::hands_nothing`].
    pub hands_nothing: Option<String>,
    /// See [`Plan::left_to_bash`].
    pub left_to_bash: Vec<LeftToBash>,
}

impl ScriptPlan {
    /// The plan as posh-core makes it, every span in the text (a copy: for comparisons).
    pub fn to_plan(&self) -> Plan {
        let pipelines = self.pipelines.iter().map(|placed| {
            let mut plan = placed.plan.as_ref().clone();
            move_plan(&mut plan, |offset| offset + placed.offset);
            plan
        });
        Plan {
            pipelines: pipelines.collect(),
            loops: self.loops.clone(),
            strategy: self.strategy,
            hands_nothing: self.hands_nothing.clone(),
            left_to_bash: self.left_to_bash.clone(),
        }
    }

    pub fn coverage(&self) -> Coverage {
        let plans: Vec<&PipelinePlan> = self.pipelines.iter().map(PlacedPlan::plan).collect();
        coverage_of(&plans, &self.loops, self.hands_nothing.as_deref())
    }
}

/// A pipeline's plan, made for its chunk of the script: its spans count from `offset`, where the
/// chunk starts in this version of the text. [`PlacedPlan::span`] and [`PlacedPlan::place`] give
/// spans in the text.
#[derive(Clone, Debug)]
pub struct PlacedPlan {
    offset: usize,
    plan: Arc<PipelinePlan>,
}

impl PlacedPlan {
    /// The plan; its spans are relative (see [`PlacedPlan::place`]).
    pub fn plan(&self) -> &PipelinePlan {
        &self.plan
    }

    /// The pipeline's span in the text.
    pub fn span(&self) -> Span {
        self.place(self.plan.span)
    }

    /// A span of the plan (a node's, a handed part's) in the text.
    pub fn place(&self, span: Span) -> Span {
        Span::new(span.start + self.offset, span.end + self.offset)
    }
}

impl ScriptAnalysis {
    /// Whether this analysis can stand for its text, rather than a previous one's.
    pub fn is_good(&self) -> bool {
        self.recovery != Recovery::Prefix && !self.partial
    }
}

/// Parses (tolerantly) and plans a script.
pub fn analyze_script(world: &World, fs: &(dyn FileSystem + Sync), text: &str) -> ScriptAnalysis {
    analyze_script_cached(world, fs, text, &mut AnalysisCache::default())
}

/// [`analyze_script_at`] for a script whose path is not known (no `[[run]]` applies).
pub fn analyze_script_cached(
    world: &World,
    fs: &(dyn FileSystem + Sync),
    text: &str,
    cache: &mut AnalysisCache,
) -> ScriptAnalysis {
    analyze_script_at(world, fs, None, text, cache)
}

/// What the script at `path` is run with, as posh.toml's `[[run]]` for it says: its arguments and
/// the variables it names (the others unknown); nothing known without one.
pub fn inputs_of(world: &World, path: Option<&std::path::Path>) -> posh_core::values::Inputs {
    match path.and_then(|path| world.config.run_of(path)) {
        Some(run) => {
            posh_core::values::Inputs { env: run.env.clone(), env_complete: false, args: Some(run.args.clone()) }
        }
        None => posh_core::values::Inputs::unknown(),
    }
}

/// [`analyze_script`] of the script at `path` (for its `[[run]]`), re-parsing and re-planning
/// only the chunks `cache` has not seen: after a keystroke, the one typed in. The cache must be
/// dropped when the world or the files change.
pub fn analyze_script_at(
    world: &World,
    fs: &(dyn FileSystem + Sync),
    path: Option<&std::path::Path>,
    text: &str,
    cache: &mut AnalysisCache,
) -> ScriptAnalysis {
    let (mut script, mut recovery) = chunks::parse(text, &mut cache.chunks);
    // bash is asked as posh-exec asks it (`shell::parse_as_bash`, `planner::rejected_by_bash`),
    // so that the editor shows the plan a run makes. When the plan may hand something over, bash
    // will be asked about the whole text at the end: it is started now and checks beside the
    // planning, and its verdict is waited for where it is needed.
    // A text parsed in chunks is asked group by group, each group's verdict kept by its text:
    // a keystroke waits for bash on its own group (`bash_groups`).
    let starts = cache.chunks.starts();
    let mut started = (script.errors.is_empty() && !world.config.mounts.is_empty()).then(|| match starts.is_empty() {
        true => BashCheck::Whole(posh_cli::bash_syntax::Check::start(text)),
        false => BashCheck::Groups(cache.bash.ask(text, &starts)),
    });
    let mut bash = |asked: &str| {
        let verdict = match started.take_if(|_| asked == text) {
            Some(BashCheck::Whole(check)) => check.verdict(),
            Some(BashCheck::Groups(asking)) => asking.verdict(text, &mut cache.bash),
            None => posh_cli::bash_syntax::check(asked),
        };
        BashSyntax::from(verdict)
    };
    if !script.errors.is_empty() {
        match bash(text) {
            BashSyntax::Rejected(message) => script.bash_rejects = Some(message),
            BashSyntax::Accepted => {
                // Statements bash runs and brush-parser does not read: the rest is planned
                // (whole, as a text that does not parse is).
                script = posh_core::shell::chunks::parse_around(text, &mut bash);
                recovery = Recovery::None;
                cache.chunks.layout.clear();
            }
        }
    }
    let ctx = PlanContext {
        library: &world.library,
        config: &world.config,
        fs,
        cwd: world.root.clone(),
        options: world.settings.plan.clone(),
        ratios: &world.ratios,
    };
    // What of the whole text its rules read, from the chunks' (a keystroke scans its own).
    let facts = cache.chunks.facts().unwrap_or_else(|| posh_core::rewrite::TextFacts::of(text));
    let scope = planner::ScriptScope::with_facts(text, &script, &world.library, &facts);
    // What the script's variables hold before each pipeline, from its `[[run]]`.
    let inputs = inputs_of(world, path);
    let segments = cache.chunks.segments();
    let values = if segments.is_empty() {
        planner::values_of(&ctx, text, &script, &scope, &inputs)
    } else {
        // Chunk by chunk: what the chunks before the edited one hold is taken from the cache, and
        // so is what the ones after it hold when the edit changed no state they start from.
        planner::values_of_cached(&ctx, text, &script, &scope, &inputs, &segments, &mut cache.values)
    };
    let scope = scope.with_values(values);
    let values = scope.values().expect("given just now");
    cache.reused = 0;
    let pipelines: Vec<PlacedPlan> = if cache.chunks.layout.is_empty() {
        // Parsed whole (the text does not parse): nothing to reuse.
        let plan = |p| PlacedPlan { offset: 0, plan: Arc::new(planner::plan_pipeline_in(&ctx, p, &scope)) };
        script.pipelines.iter().map(|p| plan(p)).collect()
    } else {
        // Chunk by chunk: a chunk of the same text, in a script with the same functions, has the
        // same plans, relative to where it starts. First which chunks must be planned again,
        // then those planned (on every core when there are many: opening a file), then the
        // script's plans in order.
        // What a chunk is planned with is computed beside its planning, on the planning threads:
        // an opening's chunks have no plans to compare it with.
        let mut to_plan: Vec<(usize, usize, std::ops::Range<usize>)> = Vec::new();
        let functions = std::hash::BuildHasher::hash_one(
            &std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default(),
            scope.functions(),
        );
        let mut next = 0;
        for (position, (start, key)) in cache.chunks.layout.iter().enumerate() {
            let Some(chunk) = cache.chunks.chunks.get_mut(key) else {
                continue;
            };
            let count = chunk.pipelines.len();
            let range = next..next + count;
            let ours = &script.pipelines[range.clone()];
            next += count;
            if chunk.plans.is_none() {
                to_plan.push((position, *start, range));
                continue;
            }
            let working_dirs: Vec<_> = ours.iter().map(|p| scope.working_dir(p)).collect();
            let scope_keys: Vec<u64> = ours.iter().map(|p| scope.key_of(p)).collect();
            let states: Vec<Option<&posh_core::values::State>> =
                ours.iter().map(|p| values.before(p.span.start)).collect();
            let value_keys = || -> Vec<u64> { ours.iter().map(|p| values.key_of(p)).collect() };
            let same_states = |made: &[Option<posh_core::values::State>]| {
                made.len() == states.len()
                    && made.iter().zip(&states).all(|(a, b)| match (a, b) {
                        (Some(a), Some(b)) => a.is(b),
                        (None, None) => true,
                        _ => false,
                    })
            };
            let reusable = match &mut chunk.plans {
                Some((made_with, _))
                    if made_with.functions == functions
                        && made_with.working_dirs == working_dirs
                        && made_with.scope == scope_keys =>
                {
                    // Other states, but the same values of what the pipelines read: the plans
                    // stand, and the next analysis compares with these states.
                    same_states(&made_with.states) || {
                        let same_values = made_with.values == value_keys();
                        if same_values {
                            made_with.states = states.iter().map(|s| s.cloned()).collect();
                        }
                        same_values
                    }
                }
                _ => false,
            };
            if reusable {
                cache.reused += count;
            } else {
                to_plan.push((position, *start, range));
            }
        }
        // A context per chunk: `ctx` holds the file system as `dyn FileSystem`, which other
        // threads may not share; `fs` is the same one, known to be `Sync`.
        let (library, config, ratios, cwd, options) = (ctx.library, ctx.config, ctx.ratios, &ctx.cwd, &ctx.options);
        let plan_chunk = |start: usize, range: &std::ops::Range<usize>| -> Vec<Arc<PipelinePlan>> {
            let ctx = PlanContext { library, config, fs, cwd: cwd.clone(), options: options.clone(), ratios };
            let plan = |p| {
                let mut plan = planner::plan_pipeline_in(&ctx, p, &scope);
                move_plan(&mut plan, |offset| offset - start);
                Arc::new(plan)
            };
            script.pipelines[range.clone()].iter().map(|p| plan(p)).collect()
        };
        let planned_with = |range: &std::ops::Range<usize>| {
            let ours = &script.pipelines[range.clone()];
            PlannedWith {
                functions,
                working_dirs: ours.iter().map(|p| scope.working_dir(p)).collect(),
                scope: ours.iter().map(|p| scope.key_of(p)).collect(),
                values: ours.iter().map(|p| values.key_of(p)).collect(),
                states: ours.iter().map(|p| values.before(p.span.start).cloned()).collect(),
            }
        };
        let planned = super::cores::on_every_core(&to_plan, PLAN_IN_PARALLEL_FROM, |(_, start, range)| {
            (planned_with(range), plan_chunk(*start, range))
        });
        // Each place takes the plans made for it: a text that comes twice (a repeated block) may
        // be planned twice, from other directories or values. The cache keeps the last.
        let mut fresh: Vec<Option<Vec<Arc<PipelinePlan>>>> = vec![None; cache.chunks.layout.len()];
        for ((position, _, _), (with, plans)) in to_plan.into_iter().zip(planned) {
            let key = &cache.chunks.layout[position].1;
            if let Some(chunk) = cache.chunks.chunks.get_mut(key) {
                chunk.plans = Some((with, plans.clone()));
            }
            fresh[position] = Some(plans);
        }
        let mut pipelines = Vec::with_capacity(script.pipelines.len());
        for ((start, key), fresh) in cache.chunks.layout.iter().zip(fresh) {
            let kept = || cache.chunks.chunks.get(key).and_then(|c| c.plans.as_ref()).map(|(_, plans)| plans.clone());
            if let Some(plans) = fresh.or_else(kept) {
                pipelines.extend(plans.into_iter().map(|plan| PlacedPlan { offset: *start, plan }));
            }
        }
        pipelines
    };
    let hands_nothing = Plan::hands_nothing(ctx.config, &script);
    let plans: Vec<&PipelinePlan> = pipelines.iter().map(PlacedPlan::plan).collect();
    let loops = planner::plan_loops(&ctx, &script, &scope, &plans);
    let left_to_bash = script.left_to_bash.clone();
    let mut plan = ScriptPlan { pipelines, loops, strategy: ctx.options.strategy, hands_nothing, left_to_bash };
    if let Some(message) = planner::rejected_by_bash(&plan.coverage(), text, &script, &mut bash) {
        plan.hands_nothing = Some(planner::bash_rejects(&message));
        script.bash_rejects = Some(message);
    }
    let functions = scope.functions().to_vec();
    ScriptAnalysis { script, recovery, plan, partial: false, functions }
}

/// Fewer chunks than this to plan are planned on this thread alone (`cores`): opening a file
/// plans every pipeline of it, 140 to 190 ms on one core for 5,000 lines.
const PLAN_IN_PARALLEL_FROM: usize = 16;

/// `bash -n` under way beside the planning: on the whole text, or on its groups of chunks.
enum BashCheck {
    Whole(posh_cli::bash_syntax::Check),
    Groups(bash_groups::Asking),
}

/// What an analysis keeps for the next version of the same document: its chunks, parsed and
/// planned, and bash's verdicts on them.
#[derive(Debug, Default, Clone)]
pub struct AnalysisCache {
    chunks: ChunkCache,
    values: posh_core::values::ValuesCache,
    bash: bash_groups::BashVerdicts,
    reused: usize,
}

impl AnalysisCache {
    /// How many pipelines the last analysis took from the cache rather than planned.
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// How many chunks of text the last analysis took from the cache rather than parsed.
    pub fn reused_chunks(&self) -> usize {
        self.chunks.reused()
    }

    /// How many runs of chunks and function bodies the last value analysis took from the cache,
    /// and made anew.
    pub fn values_reused(&self) -> (usize, usize) {
        self.values.counts()
    }
}

fn move_plan(plan: &mut PipelinePlan, by: impl Fn(usize) -> usize) {
    plan.span = Span::new(by(plan.span.start), by(plan.span.end));
    for part in &mut plan.handed_parts {
        part.span = Span::new(by(part.span.start), by(part.span.end));
    }
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
