//! The client's side of distributed execution: connections to posh-proxy servers (the protocol
//! and the connection itself are `posh-wire`'s, shared with the proxy; the proxy is `posh-proxy`)
//! and proxies started through ssh.

pub mod ssh;

pub use posh_wire::client::{Connection, Job, KnownProxies, Output, Pin, StartError, Traffic, connect, connect_pinned};
pub use posh_wire::identity::{Identity, fingerprint};
pub use posh_wire::protocol::{JobCommand, Request};
pub use posh_wire::{client, identity, protocol};

/// What a run exchanged with each proxy, by the mount's index in the configuration: the counters
/// a call's `--stats` record reads.
pub type TrafficByMount = std::collections::BTreeMap<usize, std::sync::Arc<Traffic>>;
