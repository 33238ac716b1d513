//! The two JSON lines a client and a proxy started through ssh greet each other with over the
//! ssh channel (posh-exec's `remote::ssh` has the whole story), and the address such a proxy
//! listens on.

use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

/// This build's version: a proxy started through ssh must be exactly this one.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The client's line, the first on the proxy's standard input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientGreeting {
    /// The client's version ([`VERSION`]).
    pub posh_exec: String,
    /// The fingerprint of the client's identity: the one client the proxy serves.
    pub client: String,
}

/// The proxy's line, the first on its standard output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyGreeting {
    /// The proxy's version ([`VERSION`]).
    pub posh_proxy: String,
    /// Where it listens (UDP); absent with `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    /// Its one-time host key's fingerprint; absent with `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Why it will not serve (another client version, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The address a proxy started by sshd listens on: the one the ssh connection came in on
/// (`$SSH_CONNECTION` is `CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT`), any port. Only that
/// interface, so the port is no more exposed than sshd's own.
pub fn listen_address_from(ssh_connection: &str) -> Option<SocketAddr> {
    let server: IpAddr = ssh_connection.split_whitespace().nth(2)?.parse().ok()?;
    Some(SocketAddr::new(server, 0))
}
