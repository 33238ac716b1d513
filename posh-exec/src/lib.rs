pub mod measure;
pub mod remote;
