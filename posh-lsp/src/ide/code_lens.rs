//! One lens per pipeline that moves data: what bash alone would move across the network, and
//! what posh moves.

use posh_core::Span;
use posh_core::planner::render::{format_bytes, posh_moves};

use super::ScriptAnalysis;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CodeLens {
    pub span: Span,
    pub title: String,
}

pub fn code_lenses(analysis: &ScriptAnalysis) -> Vec<CodeLens> {
    analysis
        .plan
        .pipelines
        .iter()
        .filter(|p| p.bash_bytes > 0 || p.posh_bytes > 0)
        .map(|p| CodeLens {
            span: p.span,
            title: format!(
                "bash moves {}, posh moves {}",
                format_bytes(p.bash_bytes),
                posh_moves(p.posh_bytes, p.between_proxies_bytes)
            ),
        })
        .collect()
}
