pub mod handoff;
pub mod measure;
pub mod remote;
