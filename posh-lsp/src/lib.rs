//! posh-lsp: the language server for shell scripts (where each command runs, what each pipe
//! moves) and annotation files, and `posh-lsp check`, the same diagnostics for CI.
//!
//! `ide` is protocol-free (plain data, byte offsets); `server` alone knows LSP types and UTF-16.

pub mod check;
pub mod ide;
pub mod memory;
pub mod os_fs;
pub mod server;
