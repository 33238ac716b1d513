//! The shell model: scripts parsed with brush-parser into pipelines with words, redirections
//! and byte spans (brush counts characters; everything here is bytes).

pub mod model;

pub use model::*;
