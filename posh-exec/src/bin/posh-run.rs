//! `posh-run __run ARGS`: the trampoline of a rewritten script, as `posh-exec __run` but small, so
//! that it starts sooner, once per pipeline handed over. Without a runtime to hand the pipeline
//! to (the rewritten text run by hand), posh-exec beside it runs the pipeline.

use std::os::unix::process::CommandExt as _;
use std::process::ExitCode;

use posh_exec::handoff;

fn main() -> ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let args = raw.get(2..).filter(|_| raw[1] == "__run");
    let Some(args) = args else {
        eprintln!("posh-run: __run ARGS (run by a script posh-exec rewrote, not by hand)");
        return ExitCode::from(2);
    };
    if let Some(socket) = std::env::var_os(handoff::SOCKET_VAR).filter(|s| !s.is_empty()) {
        return ExitCode::from(handoff::hand_over(&socket, args));
    }
    let posh_exec = std::env::current_exe().map(|exe| exe.with_file_name("posh-exec"));
    let error = match posh_exec {
        Ok(posh_exec) => std::process::Command::new(posh_exec).arg("__run").args(args).exec(),
        Err(e) => e,
    };
    eprintln!("posh-run: cannot start posh-exec beside it: {error}");
    ExitCode::from(127)
}
