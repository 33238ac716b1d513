//! posh-proxy: serves posh clients, running confined, annotated commands next to their data.
//!
//! A request is checked against the proxy's annotation library and its export ([`confine`]),
//! gets a job slot ([`slots`]), a private directory ([`jobs_dir`]) and a journal of what it does
//! to output files ([`journal`]); its commands start sandboxed ([`sandbox`], [`process`]) and
//! are wired together as bash would wire them ([`job`]); pipes between proxies are [`peer`];
//! questions about the export are [`metadata`]. [`proxy`] accepts connections and streams.
//! SECURITY.md says what this confines and which test attacks each defence.

// Test fixtures are made by path; the non-test build holds the rule (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod confine;
pub mod confined_fs;
pub mod job;
pub mod jobs_dir;
pub mod journal;
pub mod liveness;
pub mod memory;
pub mod metadata;
pub mod peer;
pub mod privileges;
pub mod process;
pub mod proxy;
pub mod sandbox;
pub mod slots;
mod supervisor;

// The modules above name what they share with clients as this crate's own.
pub use posh_wire::{client, glob, identity, measure, merge, protocol, read_buffer};
