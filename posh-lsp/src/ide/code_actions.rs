//! Quick fixes: the fixes that diagnostics carry (an unknown keyword one edit away from a real
//! one: `splitable` becomes `splittable`), offered where the cursor or selection touches them.

use posh_core::{Diagnostic, Span, TextEdit};

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QuickFix {
    pub title: String,
    pub edits: Vec<TextEdit>,
    /// The diagnostic it resolves.
    pub diagnostic: Diagnostic,
}

pub fn quick_fixes(diagnostics: &[Diagnostic], range: Span) -> Vec<QuickFix> {
    diagnostics
        .iter()
        .filter(|d| d.span.start <= range.end && range.start <= d.span.end)
        .filter_map(|d| {
            let fix = d.fix.as_ref()?;
            Some(QuickFix { title: fix.title.clone(), edits: fix.edits.clone(), diagnostic: d.clone() })
        })
        .collect()
}
