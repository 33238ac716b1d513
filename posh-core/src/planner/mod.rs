//! The planner: shell pipelines to placed DAGs with predicted bytes on every edge.
//!
//! `graph` builds each pipeline's DAG (commands fitted to annotations, redirections, files,
//! splits, byte predictions); `place` gives every node a location; `render` prints plans for
//! people (text, the script with placements written into it, Graphviz); the JSON form is the
//! serialised [`Plan`]. `measured` holds what earlier runs measured of commands' outputs, which
//! the byte predictions prefer to the annotations' assumptions.

mod by_value;
pub mod coverage;
mod expand;
pub mod globs;
mod graph;
mod loops;
pub mod measured;
mod model;
mod parts;
mod pays;
mod place;
mod reach;
pub mod render;
mod working_dir;

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::fs::FileSystem;
use crate::library::Library;
use crate::shell::{Context, ForLoop, Pipeline, Script};

pub use expand::{Expanded, expand_word, names_matching};
pub(crate) use expand::{Piece, matches_chars};
use loops::LOOP_WORD_SPECIALS;
pub use loops::{
    LoopPlan, LoopRuns, MOST_PIPELINES_PLANNED_AHEAD, PIPELINES_PER_REQUEST, body_of, one_job_at, one_proxy_for_all,
    pipelines_per_request, plan_loops, why_with_bash as why_loop_stays_with_bash,
};
pub use model::*;
pub use working_dir::WorkingDir;

/// Everything the planner reads besides the script.
pub struct PlanContext<'a> {
    pub library: &'a Library,
    pub config: &'a Config,
    pub fs: &'a dyn FileSystem,
    /// The working directory relative paths resolve against: the script's starting directory
    /// (a pipeline after a literal `cd` is planned from where that leads, see `WorkingDir`).
    pub cwd: PathBuf,
    pub options: PlanOptions,
    /// What earlier runs measured of each command shape's output.
    pub ratios: &'a measured::Ratios,
}

impl std::fmt::Debug for PlanContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanContext").field("cwd", &self.cwd).field("options", &self.options).finish_non_exhaustive()
    }
}

#[derive(Clone, Debug)]
pub struct PlanOptions {
    pub strategy: Strategy,
    /// The splitting factor: at most this many copies of a split command per mount.
    pub copies_per_mount: usize,
    /// The script may change how bash matches globs (`values::globs_differ`): a glob word is then
    /// one only the shell can tell. Set by the planner from the script.
    pub globs_differ: bool,
    /// How many pipelines share the call of the runtime this one goes in, and so its cost
    /// (`pays`): a loop's iterations sent to one proxy go as requests of
    /// [`PIPELINES_PER_REQUEST`]. Set by the planner from the script's loops.
    pub pipelines_per_call: usize,
    /// The regular file the pipeline's standard output already is, as a runtime sees the
    /// caller's descriptor (a loop's `done > out.txt` around a handed-over `cat *.txt`);
    /// `None` when it is not one, or not known (before the script runs).
    pub output_file: Option<PathBuf>,
}

impl Default for PlanOptions {
    fn default() -> PlanOptions {
        PlanOptions {
            strategy: Strategy::CostBased,
            copies_per_mount: 1,
            globs_differ: false,
            pipelines_per_call: 1,
            output_file: None,
        }
    }
}

/// Plans every pipeline of the script parsed from `source`, its words known only as written
/// (without the value analysis: [`plan_script_given`] is what `--explain` and a run plan).
pub fn plan_script(ctx: &PlanContext<'_>, source: &str, script: &Script) -> Plan {
    plan_script_in(ctx, script, ScriptScope::new(source, script, ctx.library))
}

/// Plans every pipeline of the script parsed from `source` as it runs given `inputs` (its
/// environment and arguments): words that read variables the value analysis knows are planned
/// with their values (`crate::values`).
pub fn plan_script_given(ctx: &PlanContext<'_>, source: &str, script: &Script, inputs: &crate::values::Inputs) -> Plan {
    let scope = ScriptScope::new(source, script, ctx.library);
    let values = values_of(ctx, source, script, &scope, inputs);
    plan_script_in(ctx, script, scope.with_values(values))
}

/// The value analysis of `script` given `inputs`, its globs expanded as the planner expands
/// them (from each loop's working directory).
pub fn values_of(
    ctx: &PlanContext<'_>,
    source: &str,
    script: &Script,
    scope: &ScriptScope<'_>,
    inputs: &crate::values::Inputs,
) -> crate::values::Values {
    crate::values::analyse(source, script, inputs, &ScriptFiles { ctx, script, scope })
}

/// [`values_of`] for a script cut into `segments`, taking from `cache` what an analysis of an
/// earlier version made (`values::analyse_cached`; the cache must be dropped when the file
/// system changes).
pub fn values_of_cached(
    ctx: &PlanContext<'_>,
    source: &str,
    script: &Script,
    scope: &ScriptScope<'_>,
    inputs: &crate::values::Inputs,
    segments: &[crate::values::Segment],
    cache: &mut crate::values::ValuesCache,
) -> crate::values::Values {
    crate::values::analyse_cached(source, script, inputs, &ScriptFiles { ctx, script, scope }, segments, cache)
}

/// The file system as the value analysis asks it, from where the script is.
struct ScriptFiles<'a> {
    ctx: &'a PlanContext<'a>,
    script: &'a Script,
    scope: &'a ScriptScope<'a>,
}

impl ScriptFiles<'_> {
    /// Where the script is at `at`: where the next pipeline starts, when the planner knows it.
    fn cwd(&self, at: usize) -> Option<PathBuf> {
        let next = self.script.pipelines.iter().find(|p| p.span.start >= at)?;
        let WorkingDir::Known(steps) = self.scope.working_dir(next) else { return None };
        Some(steps.iter().fold(self.ctx.cwd.clone(), |dir, step| crate::fs::normalize_path(&dir.join(step))))
    }
}

impl crate::values::World for ScriptFiles<'_> {
    fn glob(&self, word: &crate::shell::Word, at: usize) -> Option<Vec<String>> {
        match expand_word(word, self.ctx.fs, &self.cwd(at)?) {
            Expanded::Words(words) => Some(words),
            Expanded::Unknown(_) => None,
        }
    }

    fn list(&self, dir: &str, at: usize) -> Option<Vec<String>> {
        let path = crate::fs::normalize_path(&self.cwd(at)?.join(dir));
        let meta = self.ctx.fs.metadata(&path)?;
        (meta.kind == crate::fs::FileKind::Directory)
            .then(|| self.ctx.fs.read_dir(&path).into_iter().filter(|name| !name.starts_with('.')).collect())
    }

    fn prints_lines_of_input(&self, argv: &[String]) -> bool {
        self.ctx.library.prints_lines_of_input(argv)
    }

    /// The answers depend on the working directory alone (and the file system).
    fn context(&self, at: usize) -> Option<u64> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.cwd(at).hash(&mut hasher);
        Some(hasher.finish())
    }
}

fn plan_script_in(ctx: &PlanContext<'_>, script: &Script, scope: ScriptScope<'_>) -> Plan {
    let pipelines: Vec<PipelinePlan> = script.pipelines.iter().map(|p| plan_pipeline_in(ctx, p, &scope)).collect();
    Plan {
        loops: loops::plan_loops(ctx, script, &scope, &pipelines),
        pipelines,
        strategy: ctx.options.strategy,
        hands_nothing: Plan::hands_nothing(ctx.config, script),
        left_to_bash: script.left_to_bash.clone(),
    }
}

/// Plans one pipeline of the script `scope` describes. A pipeline bash keeps only in part (some
/// of its commands cannot go to the runtime) is planned as its parts, each as the runtime or bash
/// will run it: see `parts`. With the script's values (`ScriptScope::with_values`), words that
/// read parameters it knows are planned with their values: see `by_value`.
pub fn plan_pipeline_in(ctx: &PlanContext<'_>, pipeline: &Pipeline, scope: &ScriptScope<'_>) -> PipelinePlan {
    // A pipeline of a loop the runtime may get whole shares its request with the others, when
    // the plan lets the request carry it (wholly at one proxy, as `loops::iterations` and the
    // runtime require); otherwise it is a call of its own, and costs one.
    if let Some(pipelines_per_call) = scope.pipelines_per_call(pipeline) {
        let options = PlanOptions { pipelines_per_call, ..ctx.options.clone() };
        let plan = plan_one_pipeline(&PlanContext { cwd: ctx.cwd.clone(), options, ..*ctx }, pipeline, scope);
        if loops::one_job_at(&plan).is_ok() {
            return plan;
        }
    }
    plan_one_pipeline(ctx, pipeline, scope)
}

fn plan_one_pipeline(ctx: &PlanContext<'_>, pipeline: &Pipeline, scope: &ScriptScope<'_>) -> PipelinePlan {
    // Its output's file, when the script shows it (a runtime sees it for itself).
    let options = PlanOptions {
        output_file: (ctx.options.output_file.clone())
            .or_else(|| scope.output_file_of(pipeline).map(|path| crate::fs::normalize_path(&ctx.cwd.join(path)))),
        ..ctx.options.clone()
    };
    let ctx = &PlanContext { cwd: ctx.cwd.clone(), options, ..*ctx };
    let stays = scope.why_stays(ctx.library, pipeline);
    let (cwd, cwd_known) = match scope.working_dir(pipeline) {
        WorkingDir::Known(steps) => {
            (steps.iter().fold(ctx.cwd.clone(), |dir, step| crate::fs::normalize_path(&dir.join(step))), true)
        }
        WorkingDir::Unknown => (ctx.cwd.clone(), false),
    };
    let alone = Alone {
        functions: &scope.functions,
        cwd,
        cwd_known,
        fifos: scope.fifos_before(pipeline, &ctx.cwd),
        globs_differ: scope.globs_differ,
    };
    let reasons = if stays.is_some() { scope.command_reasons(ctx.library, pipeline) } else { None };
    let plan_one = |written: &Pipeline, alone: &Alone<'_>| {
        if let Some(reasons) = &reasons
            && let Some(plan) = parts::plan_in_parts(ctx, written, reasons, alone)
        {
            return plan;
        }
        plan_alone(ctx, written, stays.clone(), alone)
    };
    // A FIFO made under a name only bash knows could be any path a value names: the planner
    // would plan it as a file.
    let values = scope.values.as_deref().filter(|_| !scope.unnamed_fifos);
    let Some(variants) = values.and_then(|values| by_value::variants(pipeline, values)) else {
        let mut plan = plan_one(pipeline, &alone);
        plan.globs_at_proxy = globs_at_proxy(ctx, pipeline, scope, &alone, &plan);
        return plan;
    };
    let by_value::Variants { pipelines, mut uses, unknown } = variants;
    let mut plan: Option<PipelinePlan> = None;
    let mut agree = true;
    for written in &pipelines {
        let made = plan_one(written, &alone);
        match &plan {
            Some(first) => {
                if by_value::places_of(first) != by_value::places_of(&made) {
                    agree = false;
                    break;
                }
            }
            None => plan = Some(made),
        }
    }
    let mut plan = match plan {
        Some(plan) if agree => plan,
        _ => {
            // Placed when it runs, as a word only bash knows is.
            for value_use in &mut uses {
                value_use.one_plan = false;
            }
            plan_one(pipeline, &alone)
        }
    };
    let state = scope.values.as_deref().and_then(|values| values.before(pipeline.span.start));
    by_value::places(ctx.config, &alone.cwd, state, &mut uses);
    plan.values = uses;
    plan.unknown_values = unknown;
    plan.globs_at_proxy = globs_at_proxy(ctx, pipeline, scope, &alone, &plan);
    plan
}

/// The words of `pipeline` its mount's proxy globs (`globs`), when the pipeline goes to the
/// runtime whole from a working directory the planner knows.
fn globs_at_proxy(
    ctx: &PlanContext<'_>,
    pipeline: &Pipeline,
    scope: &ScriptScope<'_>,
    alone: &Alone<'_>,
    plan: &PipelinePlan,
) -> Vec<globs::GlobAtProxy> {
    if !plan.goes_to_runtime() || !plan.handed_parts.is_empty() || scope.handed_over || !alone.cwd_known {
        return Vec::new();
    }
    globs::at_proxies(ctx.config, scope.source, &scope.text, pipeline, &alone.cwd)
}

/// What planning a pipeline (or a part of one) on its own takes from the script around it.
struct Alone<'s> {
    functions: &'s [String],
    /// Its working directory, and whether the planner could follow the script there.
    cwd: PathBuf,
    cwd_known: bool,
    /// FIFOs the script has made by then.
    fifos: Vec<PathBuf>,
    globs_differ: bool,
}

/// Plans `pipeline` as one call of the runtime would run it, or as bash runs it when it `stays`.
fn plan_alone(ctx: &PlanContext<'_>, pipeline: &Pipeline, stays: Option<String>, alone: &Alone<'_>) -> PipelinePlan {
    let cwd_known = alone.cwd_known;
    let memo = crate::fs::Memo::new(ctx.fs);
    let files = ctx.options.output_file.iter().cloned().collect();
    let with_fifos = crate::fs::WithFifos { inner: &memo, fifos: alone.fifos.clone(), files };
    let options = PlanOptions { globs_differ: ctx.options.globs_differ || alone.globs_differ, ..ctx.options.clone() };
    let ctx = &PlanContext { cwd: alone.cwd.clone(), fs: &with_fifos, options, ..*ctx };
    list_ahead(ctx, pipeline);
    let build = |split| graph::build_pipeline(ctx, pipeline, alone.functions, stays.clone(), cwd_known, split);
    let mut built = build(true);
    place::place(ctx, &mut built);
    if let Some(near) = merged_near_the_data(ctx, &built) {
        built = near;
    }
    // Split copies are pinned next to their files and merged at the client (a merge written to
    // a file on a copy's mount may be merged at its proxy, and one feeding the commands after it
    // at a copy's proxy with them: see `merged_near_the_data`). The pipeline is planned unsplit
    // when it then streams a file from one proxy to another and is predicted no slower (`cat
    // a/x b/y > a/z`: one job at one proxy rather than a job per mount and a merge; the model
    // does not value the copies' parallelism, so only streaming may undo a split), and when
    // what the copies send the merge is predicted above what bash would move (a command whose
    // output outgrows its input), so no plan predicts more than bash.
    // Planned twice only when it may pay: the runtime plans every pipeline it runs, and the
    // editor every chunk a keystroke touches.
    let split = built.plan.nodes.iter().any(|n| matches!(n.kind, NodeKind::Merge { .. }));
    let above_bash = built.plan.posh_bytes > built.plan.bash_bytes;
    // (Not built when a lower bound of its time already exceeds the split plan's.)
    let unsplit_may_be_faster =
        || place::unsplit_at_least(ctx, &built) * (1.0 - 1e-9) <= place::predicted_seconds(ctx, &built);
    if split && (above_bash || (built.could_stream && unsplit_may_be_faster())) {
        let mut unsplit = build(false);
        place::place(ctx, &mut unsplit);
        debug_assert!(
            place::unsplit_at_least(ctx, &built) * (1.0 - 1e-9) <= place::predicted_seconds(ctx, &unsplit) + 1e-12,
            "the unsplit plan's lower bound holds"
        );
        let streams = unsplit.plan.edges.iter().any(|e| e.between_proxies);
        let no_slower = place::predicted_seconds(ctx, &unsplit) <= place::predicted_seconds(ctx, &built);
        if (streams && no_slower) || above_bash {
            built = unsplit;
        }
    }
    if stays.is_none() {
        built = pays::unless_it_does_not_pay(ctx, built, || build(false));
    }
    // Where a command with a word only bash knows runs is decided when the script runs, and the
    // places of the commands the cost model put around it follow from it.
    let unknown = built.plan.nodes.iter().find_map(|n| match &n.why {
        Why::DependsOnShell(word) => Some(word.clone()),
        _ => None,
    });
    // (Not for a pipeline that stays with bash: no one decides anything when it runs.)
    if let Some(word) = unknown.filter(|_| stays.is_none()) {
        for (node, pinned) in built.plan.nodes.iter_mut().zip(&built.pinned) {
            if !pinned && matches!(node.kind, NodeKind::Command { .. }) {
                node.why = Why::DependsOnShell(word.clone());
            }
        }
    }
    built.plan.stays_with_bash = stays;
    built.plan
}

/// A split whose merge feeds the next command, merged at one of its copies' proxies with every
/// command after it there too, when that is predicted faster than the plan `built`
/// (`cat a/*.log b/*.log | sort | uniq -c | sort -rn | head`: the copies' outputs meet at one
/// proxy, the others' sent to it directly, and only the result reaches the client). All or
/// nothing: the runtime runs the merge and the commands after it as one job.
fn merged_near_the_data(ctx: &PlanContext<'_>, built: &graph::Built) -> Option<graph::Built> {
    let (merge, mounts) = built.pipe_merge.clone()?;
    let plan = &built.plan;
    if plan.nodes[merge].location != Location::Client {
        return None;
    }
    // The commands the merged output flows through, to the pipeline's end.
    let mut after = Vec::new();
    let mut frontier = vec![merge];
    while let Some(from) = frontier.pop() {
        for edge in plan.edges.iter().filter(|e| e.from == from) {
            if matches!(plan.nodes[edge.to].kind, NodeKind::Command { .. }) && !after.contains(&edge.to) {
                after.push(edge.to);
                frontier.push(edge.to);
            }
        }
    }
    let mut best: Option<graph::Built> = None;
    let mut to_beat = place::predicted_seconds(ctx, built);
    for mount in mounts {
        let at = Location::Mount(mount);
        if after.iter().any(|&n| built.pinned[n] || !place::allowed(built, n, &at)) {
            continue;
        }
        let mut near = built.clone();
        for &n in std::iter::once(&merge).chain(&after) {
            near.pinned[n] = true;
            near.plan.nodes[n].location = at.clone();
        }
        for &n in &after {
            near.plan.nodes[n].why = Why::Cheapest;
        }
        place::place(ctx, &mut near);
        let seconds = place::predicted_seconds(ctx, &near);
        if seconds < to_beat {
            to_beat = seconds;
            best = Some(near);
        }
    }
    best
}

/// Lists at once the directories the pipeline's globs start from (arguments and redirection
/// targets), so that the expansion that follows finds them known.
fn list_ahead(ctx: &PlanContext<'_>, pipeline: &Pipeline) {
    let mut dirs: Vec<PathBuf> =
        words_with_files(pipeline).filter_map(|w| expand::first_listing(w, &ctx.cwd)).collect();
    dirs.sort();
    dirs.dedup();
    if dirs.len() > 1 {
        ctx.fs.read_dirs(&dirs);
    }
}

/// A pipeline's argument words and redirection targets: where the files it names are.
fn words_with_files(pipeline: &Pipeline) -> impl Iterator<Item = &crate::shell::Word> {
    pipeline.commands.iter().flat_map(|c| {
        c.words.iter().chain(c.redirects.iter().filter_map(|r| match &r.target {
            crate::shell::RedirectTarget::File(word) => Some(word),
            _ => None,
        }))
    })
}

/// The directories whose listings a plan of `script` from `cwd` may ask about: where each glob
/// word starts listing, and the directory of each literal word that names a path (a file, an
/// option's value or a word that is no path at all: asking one directory too many costs less
/// than a question after another). Asked all at once before the script is planned, they make
/// planning one round trip to each proxy instead of one question per file.
pub fn directories_named(script: &crate::shell::Script, cwd: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = script
        .pipelines
        .iter()
        .flat_map(|p| words_with_files(p))
        .filter_map(|word| match &word.literal {
            Some(literal) if literal.is_empty() || literal.starts_with('-') => None,
            Some(literal) => crate::fs::normalize_path(&cwd.join(&**literal)).parent().map(Path::to_path_buf),
            None => expand::first_listing(word, cwd),
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// What planning a pipeline needs to know of the script around it: its functions, the working
/// directory it starts from, and whether posh hands the pipeline to its runtime at all (a
/// pipeline that stays with bash runs wholly at the client, and its plan says so).
#[derive(Clone, Debug)]
pub struct ScriptScope<'a> {
    /// The script's text, which the pipelines' spans index.
    source: &'a str,
    functions: Vec<String>,
    /// Why every pipeline stays with bash, if they all do.
    script_stays: Option<String>,
    /// Each pipeline's working directory, by the start of its span (pipelines are in source
    /// order).
    working_dirs: Vec<(usize, WorkingDir)>,
    /// The pipeline was handed over already: the runtime plans it with bash's expanded words.
    handed_over: bool,
    /// The script may change how bash matches globs (`PlanOptions::globs_differ`).
    globs_differ: bool,
    /// FIFOs the script makes (commands annotated `makes_fifos`, `mkfifo`, of literal names):
    /// where the command starts, and the path from the script's starting directory.
    fifos: Vec<(usize, PathBuf)>,
    /// What of the whole script bears on every loop.
    pub(crate) loops: crate::rewrite::LoopScope,
    /// What the script's variables hold before each pipeline, when the planner is given them.
    values: Option<std::sync::Arc<crate::values::Values>>,
    /// The script makes FIFOs under names the planner does not know (`mkfifo "$d/p"`).
    unnamed_fifos: bool,
    /// What of the whole script's text bears on every pipeline, scanned once.
    text: crate::rewrite::TextScope,
    /// The top-level loops the runtime gets whole when a pipeline of their body goes to it.
    whole_loops: Vec<WholeLoop>,
    /// Compound commands whose standard output goes to a file (`done > out.txt`): where they
    /// are, and the file, from the script's starting directory (see `output_file_of`).
    compound_outputs: Vec<(crate::text::Span, PathBuf)>,
}

/// A top-level `for` loop that nothing but its body's plans keeps with bash
/// (`loops::why_with_bash`): when the runtime gets it, its iterations' pipelines go to a proxy
/// in requests, and share each request's cost.
#[derive(Clone, Debug)]
struct WholeLoop {
    body: crate::Span,
    variable: String,
}

impl<'a> ScriptScope<'a> {
    pub fn new(source: &'a str, script: &Script, library: &Library) -> ScriptScope<'a> {
        ScriptScope::with_facts(source, script, library, &crate::rewrite::TextFacts::of(source))
    }

    /// [`ScriptScope::new`], with what the whole text's rules read found already (`facts`, of
    /// `source`: an editor joins them from its chunks').
    pub fn with_facts(
        source: &'a str,
        script: &Script,
        library: &Library,
        facts: &crate::rewrite::TextFacts,
    ) -> ScriptScope<'a> {
        let working_dirs: Vec<(usize, WorkingDir)> =
            script.pipelines.iter().map(|p| p.span.start).zip(working_dir::working_dirs(source, script)).collect();
        let (fifos, unnamed_fifos) = made_fifos(library, script, &working_dirs);
        let mut scope = ScriptScope {
            source,
            functions: function_names_around(source, script),
            script_stays: facts.why_script_stays(),
            fifos,
            unnamed_fifos,
            working_dirs,
            handed_over: false,
            globs_differ: crate::values::globs_differ(source, script),
            loops: facts.loops().clone(),
            values: None,
            text: facts.text_scope(),
            whole_loops: Vec::new(),
            compound_outputs: Vec::new(),
        };
        scope.compound_outputs = compound_outputs(script, &scope);
        if scope.script_stays.is_none() {
            // A body of one pipeline: whether the loop goes as requests then follows from that
            // pipeline's plan alone (`plan_pipeline_in`); with several, a sibling that cannot go
            // (a write to the client's file) sends every pipeline as a call of its own, which the
            // share would misprice (`--explain` at the proxy, the run at the client).
            let whole = |the_loop: &ForLoop| {
                let single = loops::body_of(script, the_loop).len() == 1;
                (single && scope.why_loop_kept(library, script, the_loop).is_none())
                    .then(|| WholeLoop { body: the_loop.body, variable: the_loop.variable.clone() })
            };
            scope.whole_loops = script.loops.iter().filter_map(whole).collect();
        }
        scope
    }

    /// Why bash keeps `the_loop` whatever its body's plans: what `rewrite` cannot hand over
    /// faithfully, or a pipeline of its body that stays with bash (the script staying whole
    /// aside).
    pub fn why_loop_kept(&self, library: &Library, script: &Script, the_loop: &ForLoop) -> Option<String> {
        // Found when the scope was made (`plan_loops` asks again for every loop).
        if self.whole_loops.iter().any(|l| l.body == the_loop.body) {
            return None;
        }
        let body: Vec<&Pipeline> =
            loops::body_of(script, the_loop).into_iter().map(|i| &*script.pipelines[i]).collect();
        if let Some(why) = crate::rewrite::why_loop_stays(&self.loops, the_loop, &body) {
            return Some(why);
        }
        body.iter()
            .find_map(|p| self.why_stays(library, p))
            .map(|why| format!("bash keeps a pipeline of its body ({why})"))
    }

    /// How many pipelines share the call `pipeline` goes in, when it is in the body of a loop
    /// the runtime may get whole whose words the value analysis knows: each iteration's
    /// pipelines go to a proxy in requests ([`loops::pipelines_per_request`]). The words are
    /// counted as distinct values, never more than the loop has.
    pub fn pipelines_per_call(&self, pipeline: &Pipeline) -> Option<usize> {
        let the_loop = self.whole_loop_of(pipeline)?;
        let state = self.values.as_deref()?.before(pipeline.span.start)?;
        // Not for a loop of more pipelines than are planned ahead, nor over a word bash would
        // split or glob used unquoted (`loops::iterations`): each pipeline is then a call.
        let crate::values::Value::Known(words) = state.get(&the_loop.variable) else { return None };
        let plain = |w: &Option<String>| w.as_ref().is_some_and(|w| !w.is_empty() && !w.contains(LOOP_WORD_SPECIALS));
        (words.len() <= MOST_PIPELINES_PLANNED_AHEAD && words.iter().all(plain))
            .then(|| loops::pipelines_per_request(words.len()))
    }

    /// The loop the runtime may get whole whose body `pipeline` is in. Top-level loops do not
    /// nest and are in source order: the last one starting before the pipeline, found by halving
    /// (asked for every pipeline of a script at each of an editor's keystrokes).
    fn whole_loop_of(&self, pipeline: &Pipeline) -> Option<&WholeLoop> {
        let after = self.whole_loops.partition_point(|l| l.body.start <= pipeline.span.start);
        let the_loop = self.whole_loops[..after].last()?;
        (pipeline.span.end <= the_loop.body.end).then_some(the_loop)
    }

    /// This scope, its pipelines planned with the script's `values` (see [`values_of`]).
    pub fn with_values(self, values: impl Into<std::sync::Arc<crate::values::Values>>) -> ScriptScope<'a> {
        ScriptScope { values: Some(values.into()), ..self }
    }

    /// This scope with `names` that bash defines besides the script's own functions (a prompt's
    /// live functions and aliases): a command naming one stays with bash, as a function does.
    pub fn with_functions(mut self, names: impl IntoIterator<Item = String>) -> ScriptScope<'a> {
        self.functions.extend(names);
        self
    }

    /// The values the scope plans with, if any.
    pub fn values(&self) -> Option<&crate::values::Values> {
        self.values.as_deref()
    }

    /// The FIFOs the script has made (or may have) by the time `pipeline` runs, from `cwd`.
    fn fifos_before(&self, pipeline: &Pipeline, cwd: &std::path::Path) -> Vec<PathBuf> {
        let before = self.fifos.iter().filter(|(at, _)| *at < pipeline.span.start);
        before.map(|(_, path)| crate::fs::normalize_path(&cwd.join(path))).collect()
    }

    /// The scope of a pipeline bash has handed over, its words expanded: the runtime's, whose
    /// working directory is bash's own.
    pub fn handed_over() -> ScriptScope<'static> {
        ScriptScope {
            source: "",
            functions: Vec::new(),
            script_stays: None,
            working_dirs: Vec::new(),
            handed_over: true,
            globs_differ: false,
            fifos: Vec::new(),
            loops: crate::rewrite::LoopScope::default(),
            values: None,
            unnamed_fifos: false,
            compound_outputs: Vec::new(),
            text: crate::rewrite::TextScope::default(),
            whole_loops: Vec::new(),
        }
    }

    /// The working directory `pipeline` starts from (the starting one for a pipeline this scope
    /// does not list).
    pub fn working_dir(&self, pipeline: &Pipeline) -> WorkingDir {
        let at = self.working_dirs.partition_point(|(start, _)| *start < pipeline.span.start);
        match self.working_dirs.get(at) {
            Some((start, dir)) if *start == pipeline.span.start => dir.clone(),
            _ => WorkingDir::Known(Vec::new()),
        }
    }

    pub fn functions(&self) -> &[String] {
        &self.functions
    }

    /// A digest of what of the script around `pipeline` its plan reads besides its own text, its
    /// working directory, the script's functions and the values of its words
    /// (`values::Values::key_of`): whether the whole script stays with bash, what of the script's
    /// text keeps the pipeline with bash (`jobs`, `declare -f`), and the FIFOs made before it.
    /// Two scopes that give a pipeline the same key (and the same of those) plan it alike: an
    /// editor reuses its plan.
    pub fn key_of(&self, pipeline: &Pipeline) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.handed_over.hash(&mut hasher);
        self.script_stays.hash(&mut hasher);
        crate::rewrite::why_pipeline_stays_in(self.source, pipeline, &self.text).hash(&mut hasher);
        self.unnamed_fifos.hash(&mut hasher);
        self.globs_differ.hash(&mut hasher);
        self.fifos.iter().filter(|(at, _)| *at < pipeline.span.start).for_each(|(_, path)| path.hash(&mut hasher));
        // (The loop's words are the values' key's.)
        self.whole_loop_of(pipeline).map(|l| &l.variable).hash(&mut hasher);
        self.output_file_of(pipeline).hash(&mut hasher);
        hasher.finish()
    }

    /// The file `pipeline`'s standard output goes to, relative to the script's starting directory,
    /// when it stands in a compound command that redirects its own there (`for ...; do cat
    /// *.txt; done > out.txt`): the innermost such, unless a substitution captures the output.
    pub fn output_file_of(&self, pipeline: &Pipeline) -> Option<&Path> {
        let captured = |c: &Context| matches!(c, Context::CommandSubstitution | Context::ProcessSubstitution);
        if self.handed_over || pipeline.context.iter().any(captured) {
            return None;
        }
        let within = |span: &crate::text::Span| span.start < pipeline.span.start && pipeline.span.end <= span.end;
        let enclosing = self.compound_outputs.iter().filter(|(span, _)| within(span));
        enclosing.min_by_key(|(span, _)| span.end - span.start).map(|(_, path)| path.as_path())
    }

    /// Why `pipeline` stays with bash (bash runs it unchanged, at the client), if it does: the
    /// script or the pipeline cannot be rewritten faithfully (`rewrite::why_script_stays`,
    /// `rewrite::why_not`), or one of its commands has no annotation (a name without one may be
    /// a function from a sourced file, which only bash can run).
    pub fn why_stays(&self, library: &Library, pipeline: &Pipeline) -> Option<String> {
        if self.handed_over {
            return None;
        }
        let unannotated = || pipeline.commands.iter().find_map(|c| unannotated(library, c));
        self.script_stays
            .clone()
            .or_else(|| crate::rewrite::why_not_in(self.source, pipeline, &self.functions, &self.text))
            .or_else(unannotated)
    }

    /// Whether bash may keep `pipeline` only in part, some of its commands going to the runtime
    /// (if their plan touches a mount).
    pub fn may_go_in_part(&self, library: &Library, pipeline: &Pipeline) -> bool {
        self.command_reasons(library, pipeline).is_some()
    }

    /// Why each command of `pipeline` stays with bash (`None`: it may go to the runtime), when
    /// the pipeline stays only for some of its commands, and others may go: bash may then keep
    /// it in part. `None` when nothing keeps the pipeline whole, or something does.
    fn command_reasons(&self, library: &Library, pipeline: &Pipeline) -> Option<Vec<Option<String>>> {
        if self.handed_over
            || self.script_stays.is_some()
            || crate::rewrite::why_pipeline_stays_in(self.source, pipeline, &self.text).is_some()
        {
            return None;
        }
        let reasons: Vec<Option<String>> = (0..pipeline.commands.len())
            .map(|i| {
                crate::rewrite::why_command_stays(pipeline, i, &self.functions)
                    .or_else(|| unannotated(library, &pipeline.commands[i]))
            })
            .collect();
        (reasons.iter().any(Option::is_some) && reasons.iter().any(Option::is_none)).then_some(reasons)
    }
}

/// Why a command whose name the planner knows stays with bash for want of an annotation (a name
/// without one may be a function from a sourced file, which only bash can run).
fn unannotated(library: &Library, command: &crate::shell::Command) -> Option<String> {
    let name = command.words.first()?.literal.as_deref()?;
    (!library.annotates(name)).then(|| format!("`{name}` has no annotation"))
}

/// The compound commands of `script` whose standard output a redirection of their own sends
/// to a file named by a literal word, where their working directory is known: their spans and
/// the files, from the script's starting directory (a `cd` inside is not followed: the loop's
/// redirection is made before its body runs).
fn compound_outputs(script: &Script, scope: &ScriptScope<'_>) -> Vec<(crate::text::Span, PathBuf)> {
    use crate::shell::{CommandKind, RedirectOp, RedirectTarget};
    let mut found = Vec::new();
    for pipeline in &script.pipelines {
        let WorkingDir::Known(steps) = scope.working_dir(pipeline) else { continue };
        let cwd = steps.iter().fold(PathBuf::new(), |dir, step| dir.join(step));
        for command in pipeline.commands.iter().filter(|c| c.kind == CommandKind::Compound) {
            let mut output = None;
            for redirect in &command.redirects {
                let to_stdout = match redirect.op {
                    RedirectOp::Write | RedirectOp::Clobber | RedirectOp::Append => redirect.fd.unwrap_or(1) == 1,
                    RedirectOp::WriteBoth | RedirectOp::AppendBoth => true,
                    RedirectOp::DuplicateOutput => redirect.fd.unwrap_or(1) == 1,
                    _ => false,
                };
                if !to_stdout {
                    continue;
                }
                output = match &redirect.target {
                    RedirectTarget::File(word) => word.literal.as_deref().map(|path| cwd.join(path)),
                    _ => None,
                };
            }
            if let Some(path) = output {
                found.push((command.span, path));
            }
        }
    }
    found
}

/// The names the script's commands make as FIFOs (an annotation's `makes_fifos`: `mkfifo`),
/// with where each command starts, resolved against its pipeline's working directory (relative
/// to the script's start); and whether it makes any under names only bash knows (a word with an
/// expansion, or an unknown working directory). One pass over every command: this runs for
/// every analysis of a script (the editor's, each keystroke).
fn made_fifos(
    library: &Library,
    script: &Script,
    working_dirs: &[(usize, WorkingDir)],
) -> (Vec<(usize, PathBuf)>, bool) {
    let mut fifos = Vec::new();
    let mut unnamed = false;
    // Whether a command name has an entry that makes FIFOs, asked once per name.
    let mut makers: std::collections::HashMap<&str, bool, rustc_hash::FxBuildHasher> = Default::default();
    for (pipeline, (_, dir)) in script.pipelines.iter().zip(working_dirs) {
        for command in &pipeline.commands {
            let Some(name) = command.words.first().and_then(|w| w.literal.as_deref()) else { continue };
            if !*makers.entry(name).or_insert_with(|| library.makes_fifos(name)) {
                continue;
            }
            let argv =
                command.words.iter().map(|w| w.literal.as_deref().map(str::to_string)).collect::<Option<Vec<String>>>();
            let (WorkingDir::Known(steps), Some(argv)) = (dir, argv) else {
                unnamed = true;
                continue;
            };
            let Ok(invocation) = library.match_argv(&argv) else { continue };
            if invocation.entry.options.makes_fifos {
                let base: PathBuf = steps.iter().collect();
                fifos.extend(invocation.output_files().into_iter().map(|name| (pipeline.span.start, base.join(name))));
            }
        }
    }
    (fifos, unnamed)
}

/// [`function_names`], and every name the statements posh could not parse may define as a
/// function (`Script::left_to_bash`): a pipeline naming one stays with bash.
fn function_names_around(source: &str, script: &Script) -> Vec<String> {
    let mut names = function_names(script);
    for left in &script.left_to_bash {
        names.extend(functions_defined_in(&source[left.span.range()]));
    }
    names.sort();
    names.dedup();
    names
}

/// Names a text may define as functions (`name()`, `name ( )`, `function name`), found without
/// parsing it: more names than it defines, never fewer.
fn functions_defined_in(text: &str) -> Vec<String> {
    let separator = |c: char| c.is_whitespace() || ";&|(){}<>`\"'$".contains(c);
    let mut names = Vec::new();
    let words: Vec<&str> = text.split(separator).filter(|w| !w.is_empty()).collect();
    for pair in words.windows(2) {
        if pair[0] == "function" {
            names.push(pair[1].to_string());
        }
    }
    for (at, _) in text.match_indices('(') {
        if !text[at + 1..].trim_start_matches([' ', '\t']).starts_with(')') {
            continue;
        }
        let before = text[..at].trim_end_matches([' ', '\t']);
        let name = &before[before.rfind(separator).map_or(0, |i| i + 1)..];
        if !name.is_empty() {
            names.push(name.to_string());
        }
    }
    names
}

/// Names of the functions a script defines (they run in bash, never remotely).
pub fn function_names(script: &Script) -> Vec<String> {
    let mut names: Vec<String> = script
        .pipelines
        .iter()
        .flat_map(|p| &p.context)
        .filter_map(|c| if let Context::Function(name) = c { Some(name.clone()) } else { None })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests;
