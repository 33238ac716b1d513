//! The invocation matcher over the shipped library: any words (NUL-separated) fit an entry or
//! not, never a panic; a fitting invocation rebuilds its argv from its own words.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use posh_core::library::Library;

fuzz_target!(|text: &str| {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    let library = LIBRARY.get_or_init(Library::builtin);
    let argv: Vec<String> = text.split('\0').map(String::from).collect();
    if let Ok(invocation) = library.match_argv(&argv) {
        let _ = invocation.argv_without_splittable();
    }
});
