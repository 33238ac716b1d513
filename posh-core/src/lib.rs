//! posh-core: the analysis core of posh.
//!
//! Data flows through the modules in this order (see ARCHITECTURE.md):
//! annotation text --[`annotation`]--> command models --[`matcher`]--> typed invocations.
//! The crate does no I/O: callers hand it text, and (later) file sizes through a trait.

pub mod annotation;
pub mod config;
pub mod diagnostic;
pub mod fs;
pub mod library;
pub mod matcher;
pub mod planner;
pub mod rewrite;
pub mod shell;
pub mod text;
pub mod values;

/// A xorshift generator from `seed` (not 0) for the tests that try many generated inputs: each
/// call gives a number below its argument.
#[cfg(test)]
pub(crate) fn random_below(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}

pub use diagnostic::{Code, Diagnostic, Fix, Severity, TextEdit};
pub use text::{LineIndex, Span};
