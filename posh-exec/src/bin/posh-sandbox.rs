//! `posh-sandbox __sandbox ROOT TMP -- COMMAND...`: confines itself and becomes the command, for
//! a proxy (see `posh_exec::remote::sandbox`). posh-proxy and posh-exec can do the same, but
//! this program is small, so it starts sooner, once per command a proxy runs.

use std::process::ExitCode;

use posh_exec::remote::sandbox;

fn main() -> ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match raw.get(1).and_then(|a| a.to_str()) {
        Some(sandbox::SANDBOX_ARG) => ExitCode::from(sandbox::exec_confined(&raw[2..])),
        _ => {
            eprintln!("posh-sandbox: {} ROOT TMP -- COMMAND... (run by posh-proxy, not by hand)", sandbox::SANDBOX_ARG);
            ExitCode::from(2)
        }
    }
}
