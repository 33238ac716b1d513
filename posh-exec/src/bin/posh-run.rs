//! `posh-run __run ARGS`: the trampoline of a rewritten script, as `posh-exec __run` but small, so
//! that it starts sooner, once per pipeline handed over. Without a runtime to hand the pipeline
//! to (the rewritten text run by hand), posh-exec beside it runs the pipeline.
//!
//! Its own C `main`, without Rust's runtime setup (about a tenth of a millisecond of each
//! pipeline: glibc parses /proc/self/maps for the main thread's stack guard). What that setup
//! would have done is done where it matters: `handoff` keeps its socket off descriptors 0-2
//! (which stay closed if bash closed them, as they would for the command) and writes to it
//! without SIGPIPE.

#![no_main]

use std::os::unix::process::CommandExt as _;

use posh_exec::handoff;

#[allow(unsafe_code)] // no_mangle: the program's C entry point, which glibc calls
#[unsafe(no_mangle)]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    run()
}

fn run() -> std::ffi::c_int {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let args = raw.get(2..).filter(|_| raw[1] == "__run");
    let Some(args) = args else {
        eprintln!("posh-run: __run ARGS (run by a script posh-exec rewrote, not by hand)");
        return 2;
    };
    if let Some(socket) = std::env::var_os(handoff::SOCKET_VAR).filter(|s| !s.is_empty()) {
        return handoff::hand_over_from_this_process(&socket, args).into();
    }
    let posh_exec = std::env::current_exe().map(|exe| exe.with_file_name("posh-exec"));
    let error = match posh_exec {
        Ok(posh_exec) => std::process::Command::new(posh_exec).arg("__run").args(args).exec(),
        Err(e) => e,
    };
    eprintln!("posh-run: cannot start posh-exec beside it: {error}");
    127
}
