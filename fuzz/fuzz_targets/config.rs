//! The `posh.toml` parser: any text gives a configuration or an error with its place, never a
//! panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = posh_core::config::Config::parse(text, std::path::Path::new("posh.toml"));
});
