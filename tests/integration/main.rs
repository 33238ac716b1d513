//! The cross-crate test binary (one binary, after ripgrep: fast to link, one place to look).

mod agreement;
mod annotations;
mod bench;
mod cli;
mod deploy;
mod difftest;
mod netns;
mod oracle;
mod peers;
mod trace;
