//! Distributed execution: the `posh-proxy` server and the client that talks to it over QUIC.
//!
//! The wire protocol is described in `docs/proxy.md`. Trust is modelled on ssh: the proxy has a
//! persistent host certificate that clients pin on first use ([`KnownProxies`]), each client has a
//! persistent [`Identity`], and the proxy serves only authorized client fingerprints.

pub mod client;
pub mod confine;
pub mod identity;
pub mod job;
pub mod jobs_dir;
pub mod journal;
pub mod liveness;
pub mod metadata;
pub mod peer;
pub mod privileges;
pub mod process;
pub mod protocol;
pub mod proxy;
pub mod sandbox;
pub mod slots;
pub mod ssh;

pub use client::{Connection, Job, KnownProxies, Output, Pin, StartError, Traffic, connect, connect_pinned};
pub use identity::{Identity, fingerprint};
pub use protocol::{JobCommand, Request};
