//! Fault injection for issue 10: real posh-exec and posh-proxy processes, each fault compared
//! with what bash leaves behind (bytes, files, processes). One module per item.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/proxy.rs"]
mod proxy_process;

mod outputs;
