//! Fault-injection tests for issue 10: real posh-proxy processes, scripts run under bash and
//! posh-exec, bash's exact bytes, files and statuses expected, nothing left behind. One module
//! per item.

#[path = "../common/proxy.rs"]
mod proxy_process;

mod names_from_input;
