//! What both ends of posh's remote execution share: the client (posh-exec) and posh-proxy, which
//! also dials other proxies for pipes between them.
//!
//! The wire protocol is described in `docs/proxy.md`. Trust is modelled on ssh: the proxy has a
//! persistent host certificate that clients pin on first use ([`client::KnownProxies`]), each
//! client has a persistent [`identity::Identity`], and the proxy serves only authorized client
//! fingerprints.

pub mod client;
pub mod glob;
pub mod identity;
pub mod measure;
pub mod merge;
pub mod over_ssh;
pub mod protocol;
pub mod read_buffer;
