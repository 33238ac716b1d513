//! How much of a script posh takes over: how many pipelines go to the runtime, and why the rest
//! stay with bash, grouped so a user can act on it (annotate a command, quote a word). Shown by
//! `posh-exec --explain` and posh-lsp, from the same plan the runtime runs.

use super::model::{PipelinePlan, Plan, Why};
use super::{LoopPlan, LoopRuns};

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Coverage {
    pub pipelines: usize,
    /// Handed to the runtime: some command is planned at a proxy, or a word only bash knows
    /// may name a mount's files (placed when the pipeline runs).
    pub handed: usize,
    /// Of those, the pipelines with a command planned at a proxy.
    pub planned_at_proxies: usize,
    /// Of those, the pipelines bash keeps in part: some of their commands go to the runtime,
    /// bash runs the others and the pipes between them.
    pub in_part: usize,
    /// Why bash keeps the commands it keeps of those, by reason, the most frequent first
    /// (counted in pipelines).
    pub kept_in_part: Vec<Kept>,
    /// Could be handed over, but need no proxy (they touch no mount, or the plan keeps every
    /// command at the client): bash runs them as they are.
    pub touch_no_mount: usize,
    /// The script's top-level `for` loops.
    #[serde(skip_serializing_if = "is_zero")]
    pub loops: usize,
    /// Of those, the loops the runtime gets whole (see `LoopPlan`).
    #[serde(skip_serializing_if = "is_zero")]
    pub loops_handed: usize,
    /// Of those, the loops whose iterations are planned to go to one proxy, in requests.
    #[serde(skip_serializing_if = "is_zero")]
    pub loops_one_job: usize,
    /// The pipelines that stay with bash, by reason, the most frequent first.
    pub stay: Vec<Kept>,
    /// Why posh hands nothing over (no mount, a syntax error): bash runs the script as it is,
    /// and the counts above are zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hands_nothing: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Kept {
    pub why: String,
    pub pipelines: usize,
}

pub fn coverage(plan: &Plan) -> Coverage {
    coverage_of(&plan.pipelines, &plan.loops, plan.hands_nothing.as_deref())
}

/// [`coverage`] of a plan's parts, its pipelines' plans owned or shared (as the editor keeps
/// them).
pub fn coverage_of<P: std::borrow::Borrow<PipelinePlan>>(
    pipelines: &[P],
    loops: &[LoopPlan],
    hands_nothing: Option<&str>,
) -> Coverage {
    let mut coverage = Coverage { pipelines: pipelines.len(), loops: loops.len(), ..Coverage::default() };
    if let Some(why) = hands_nothing {
        coverage.hands_nothing = Some(why.to_string());
        return coverage;
    }
    for pipeline in pipelines.iter().map(|p| p.borrow()) {
        match &pipeline.stays_with_bash {
            Some(why) => count(&mut coverage.stay, why),
            None if pipeline.goes_to_runtime() => {
                coverage.handed += 1;
                coverage.planned_at_proxies += usize::from(pipeline.runs_at_a_proxy());
                if !pipeline.handed_parts.is_empty() {
                    coverage.in_part += 1;
                    let mut reasons: Vec<&String> = Vec::new();
                    for node in &pipeline.nodes {
                        if let Why::KeptWithBash(why) = &node.why
                            && !reasons.contains(&why)
                        {
                            reasons.push(why);
                        }
                    }
                    for why in reasons {
                        count(&mut coverage.kept_in_part, why);
                    }
                }
            }
            None => coverage.touch_no_mount += 1,
        }
    }
    coverage.loops_handed = loops.iter().filter(|l| l.runs.handed()).count();
    coverage.loops_one_job = loops.iter().filter(|l| matches!(l.runs, LoopRuns::OneJob { .. })).count();
    // Most frequent first; among equals, in the order the script meets them.
    coverage.stay.sort_by_key(|k| std::cmp::Reverse(k.pipelines));
    coverage.kept_in_part.sort_by_key(|k| std::cmp::Reverse(k.pipelines));
    coverage
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn count(kept: &mut Vec<Kept>, why: &str) {
    match kept.iter_mut().find(|k| k.why == why) {
        Some(kept) => kept.pipelines += 1,
        None => kept.push(Kept { why: why.to_string(), pipelines: 1 }),
    }
}

impl Coverage {
    /// One paragraph: the counts, then each reason on a line of its own.
    pub fn describe(&self) -> String {
        if let Some(why) = &self.hands_nothing {
            return format!("{why}: bash runs the script as it is\n");
        }
        let kept: usize = self.stay.iter().map(|k| k.pipelines).sum();
        let mut out = format!(
            "{} of {} pipelines go to the posh runtime ({} with commands planned at a proxy, {} placed when \
             they run); {} need no proxy; {kept} stay with bash",
            self.handed,
            self.pipelines,
            self.planned_at_proxies,
            self.handed - self.planned_at_proxies,
            self.touch_no_mount,
        );
        out.push_str(if self.stay.is_empty() { "\n" } else { ":\n" });
        for kept in &self.stay {
            out.push_str(&format!("  {:>4}  {}\n", kept.pipelines, kept.why));
        }
        if self.loops > 0 {
            out.push_str(&format!(
                "{} of {} top-level loops go to the runtime whole ({} planned to go to one proxy in requests)\n",
                self.loops_handed, self.loops, self.loops_one_job
            ));
        }
        if self.in_part > 0 {
            out.push_str(&format!(
                "{} of the pipelines that go to the runtime go in part; bash keeps commands of them:\n",
                self.in_part
            ));
            for kept in &self.kept_in_part {
                out.push_str(&format!("  {:>4}  {}\n", kept.pipelines, kept.why));
            }
        }
        out
    }
}
