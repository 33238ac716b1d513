//! The annotation parser and validator: any text gives a tree and diagnostics, never a panic;
//! the tree gives back the text it was parsed from (lossless).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let parsed = posh_core::annotation::parse(text);
    for entry in &parsed.entries {
        let _ = posh_core::annotation::format::format_entry(entry);
    }
});
