//! A script's analysis: its parse and its plan, for one version of its text. Every script
//! feature reads one of these; the server computes it once per document version.

use posh_core::Span;
use posh_core::fs::FileSystem;
use posh_core::planner::{self, Plan, PlanContext, PlanOptions};
use posh_core::shell::{self, Recovery, Script};

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
    let (script, recovery) = shell::parse_tolerant_with_recovery(text);
    let ctx = PlanContext {
        library: &world.library,
        config: &world.config,
        fs,
        cwd: world.root.clone(),
        options: PlanOptions::default(),
    };
    let plan = planner::plan_script(&ctx, &script);
    ScriptAnalysis { script, recovery, plan }
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
