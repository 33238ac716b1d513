pub use posh_handoff as handoff;
pub mod remote;
pub mod setup;

/// The shared object bash loads the hand-over builtin from (`posh_handoff::bash_builtin`):
/// beside posh-exec, in `../lib/posh/` (an installed package), or in `deps/` (cargo builds it
/// there with posh-exec, and copies it beside only when asked for its package).
pub fn bash_builtin() -> Option<std::path::PathBuf> {
    let this = std::env::current_exe().ok()?;
    let dir = this.parent()?;
    let name = "libposh_handoff.so";
    [dir.join(name), dir.join("../lib/posh").join(name), dir.join("deps").join(name)]
        .into_iter()
        .find(|path| path.is_file())
}

/// The small helper program `name` (`posh-run`) installed beside this executable,
/// else this executable, which does the same work but starts slower.
pub fn helper(name: &str) -> std::io::Result<std::path::PathBuf> {
    let this = std::env::current_exe()?;
    let small = this.with_file_name(name);
    Ok(if small.is_file() { small } else { this })
}
