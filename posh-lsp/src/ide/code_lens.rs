//! One lens per pipeline that moves data: what bash alone would move across the network, and
//! what posh moves; and one atop the script: how many of its pipelines go to the posh runtime,
//! and the most frequent reason the others stay with bash.

use posh_core::Span;
use posh_core::planner::coverage::Coverage;
use posh_core::planner::render::{format_bytes, posh_moves};

use super::ScriptAnalysis;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CodeLens {
    pub span: Span,
    pub title: String,
}

pub fn code_lenses(analysis: &ScriptAnalysis) -> Vec<CodeLens> {
    let coverage = posh_core::planner::coverage::coverage(&analysis.plan);
    let summary = (!analysis.plan.pipelines.is_empty() && coverage.hands_nothing.is_none())
        .then(|| CodeLens { span: Span::new(0, 0), title: summary(&coverage) });
    let per_pipeline =
        analysis.plan.pipelines.iter().filter(|p| p.bash_bytes > 0 || p.posh_bytes > 0).map(|p| CodeLens {
            span: p.span,
            title: format!(
                "bash moves {}, posh moves {}",
                format_bytes(p.bash_bytes),
                posh_moves(p.posh_bytes, p.between_proxies_bytes)
            ),
        });
    summary.into_iter().chain(per_pipeline).collect()
}

/// `posh: 3 of 7 pipelines go to the runtime (1 in part); 4 stay with bash (3: assignments without
/// a command; …)`
fn summary(coverage: &Coverage) -> String {
    let kept: usize = coverage.stay.iter().map(|k| k.pipelines).sum();
    let mut title = format!("posh: {} of {} pipelines go to the runtime", coverage.handed, coverage.pipelines);
    if coverage.in_part > 0 {
        title.push_str(&format!(" ({} in part)", coverage.in_part));
    }
    if let Some(first) = coverage.stay.first() {
        let more = if coverage.stay.len() > 1 { "; …" } else { "" };
        title.push_str(&format!("; {kept} stay with bash ({}: {}{more})", first.pipelines, first.why));
    }
    title
}
