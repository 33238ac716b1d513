pub mod handoff;
pub mod measure;
pub mod merge;
pub mod read_buffer;
pub mod remote;

/// The small helper program `name` (`posh-run`) installed beside this executable,
/// else this executable, which does the same work but starts slower.
pub fn helper(name: &str) -> std::io::Result<std::path::PathBuf> {
    let this = std::env::current_exe()?;
    let small = this.with_file_name(name);
    Ok(if small.is_file() { small } else { this })
}
