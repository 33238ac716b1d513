//! Fault injection for posh-exec and posh-proxy (issue 10): real processes put in the situations
//! that used to break them, one module per kind of fault.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/proxy.rs"]
mod proxy_process;

mod small_faults;
