//! The cross-crate test binary (one binary, after ripgrep: fast to link, one place to look).

mod agreement;
mod annotations;
mod bench;
mod cli;
mod deploy;
mod difftest;
mod globs;
#[path = "../../posh-exec/tests/common/hand_over.rs"]
mod hand_over;
#[path = "../../posh-exec/tests/common/isolation.rs"]
mod isolation;
mod netns;
mod oracle;
mod peers;
mod prompt;
mod trace;
