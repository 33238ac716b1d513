//! Fault injection (issue 10): scripts run under bash and under posh-exec with a real posh-proxy
//! process, the way users run them (`> log 2>&1`, Ctrl-C, `kill -9`, full disks, a real sshfs
//! mount in network namespaces, restarts), one module per kind of fault. Every test asserts
//! bash's exact bytes and files, and that nothing of posh's is left behind: no process on either
//! side, no temporary file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/proxy.rs"]
mod proxy_process;

mod caches;
mod fixture;
mod interrupts;
mod names_from_input;
mod outputs;
mod setup_on_sshfs;
mod shared_descriptors;
mod small_faults;
