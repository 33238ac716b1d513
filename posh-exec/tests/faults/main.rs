//! Fault injection (issue 10): real processes, real filesystems, network namespaces where the
//! fault needs a network. One module per fault; each test compares with bash run on local files.

#[path = "../common/proxy.rs"]
mod proxy_process;

mod caches;
