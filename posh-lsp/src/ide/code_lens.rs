//! One lens per pipeline where posh moves less than bash: what bash alone would move across the
//! network, and what posh moves; one per top-level `for` loop: how its iterations run; and atop the script: how many of its pipelines go to the posh runtime, and
//! why the others stay with bash, a lens per reason.

use posh_core::Span;
use posh_core::planner::coverage::Coverage;
use posh_core::planner::render::{pipeline_figures, posh_moves};
use posh_core::planner::{LoopPlan, LoopRuns};

use super::ScriptAnalysis;
use super::analysis::PlacedPlan;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CodeLens {
    pub span: Span,
    pub title: String,
}

pub fn code_lenses(analysis: &ScriptAnalysis) -> Vec<CodeLens> {
    let mut lenses = summary_lenses(analysis);
    lenses.extend(body_lenses(analysis));
    lenses
}

/// The lenses atop the script (see [`summary`]); none when nothing is handed over (nothing is
/// mounted, the script does not parse or bash rejects it).
pub fn summary_lenses(analysis: &ScriptAnalysis) -> Vec<CodeLens> {
    let coverage = analysis.plan.coverage();
    if !analysis.plan.pipelines.is_empty() && coverage.hands_nothing.is_none() {
        summary(&coverage)
    } else {
        Vec::new()
    }
}

/// The lenses above pipelines and loops.
pub fn body_lenses(analysis: &ScriptAnalysis) -> Vec<CodeLens> {
    let coverage = analysis.plan.coverage();
    // Only where posh saves on the client's links: one that moves as much as under bash gets none.
    let saves = |p: &&PlacedPlan| p.plan().posh_bytes < p.plan().bash_bytes;
    let per_pipeline = analysis.plan.pipelines.iter().filter(saves).map(|placed| (placed.span(), placed.plan()));
    let per_pipeline = per_pipeline.map(|(span, p)| {
        let [bash, posh, between] = pipeline_figures(p);
        CodeLens { span, title: format!("bash moves {bash}, posh moves {}", posh_moves(posh, between)) }
    });
    // Not above loops posh leaves alone: nothing in them touches a mount.
    let shown = |l: &&LoopPlan| coverage.hands_nothing.is_none() && l.runs != LoopRuns::TouchesNoMount;
    let per_loop =
        analysis.plan.loops.iter().filter(shown).map(|l| CodeLens { span: l.span, title: loop_title(&l.runs) });
    per_pipeline.chain(per_loop).collect()
}

/// Above a `for` loop: who runs it and how its iterations reach the data, in a few words (the
/// hover and `--explain` say why).
fn loop_title(runs: &LoopRuns) -> String {
    match runs {
        LoopRuns::OneJob { mount, iterations, requests: 1 } => {
            format!("loop: {iterations} iteration(s) in one request to {mount}, one round trip")
        }
        LoopRuns::OneJob { mount, iterations, requests } => {
            format!("loop: {iterations} iteration(s) in {requests} requests to {mount}, a round trip each")
        }
        LoopRuns::EachIteration { why } => format!("loop: a round trip per pipeline ({why})"),
        LoopRuns::AtRunTime { .. } => "loop: one request to a proxy if every iteration lands there".to_string(),
        LoopRuns::WithBash { why } => format!("loop: bash runs it ({why})"),
        LoopRuns::TouchesNoMount => "loop: bash runs it (it needs no proxy)".to_string(),
    }
}

/// Reasons shown one lens each atop the script; `--explain` lists the rest.
const REASONS_SHOWN: usize = 3;

/// Atop the script: `posh: 3 of 7 pipelines go to the runtime (1 in part); 4 stay with bash`,
/// then a lens per reason they stay, the most frequent first (`3: assignments without a
/// command`), so that each is one a user can act on.
fn summary(coverage: &Coverage) -> Vec<CodeLens> {
    let at_top = |title: String| CodeLens { span: Span::new(0, 0), title };
    let kept: usize = coverage.stay.iter().map(|k| k.pipelines).sum();
    let mut title = format!("posh: {} of {} pipelines go to the runtime", coverage.handed, coverage.pipelines);
    if coverage.in_part > 0 {
        title.push_str(&format!(" ({} in part)", coverage.in_part));
    }
    if kept > 0 {
        title.push_str(&format!("; {kept} stay with bash"));
    }
    let mut lenses = vec![at_top(title)];
    lenses.extend(coverage.stay.iter().take(REASONS_SHOWN).map(|k| at_top(format!("{}: {}", k.pipelines, k.why))));
    if coverage.stay.len() > REASONS_SHOWN {
        let more = coverage.stay.len() - REASONS_SHOWN;
        lenses.push(at_top(format!("{more} more reason(s): posh-exec --explain lists them")));
    }
    lenses
}
