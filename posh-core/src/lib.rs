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

#[cfg(test)]
mod test_random;
#[cfg(test)]
pub(crate) use test_random::random_below;

pub use diagnostic::{Code, Diagnostic, Fix, Severity, TextEdit};
pub use text::{LineIndex, Span};
