//! Semantic tokens of an annotation file, from its syntax tree: the command name, sections,
//! field and option names, keyword values, strings, numbers, examples and comments.

use posh_core::Span;
use posh_core::annotation::keywords::KeywordKind;
use posh_core::annotation::syntax::SyntaxKind;
use posh_core::annotation::{self};

use super::annotation_tree;

/// The token types, in the order of the legend the server announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TokenType {
    /// A command name (`cat`, `git status`).
    Function,
    /// `FLAGS`, `PARAMS` ...
    Keyword,
    /// A field or command option name (`short`, `splittable_across_input`).
    Property,
    /// A keyword value (`input_file`, `list`, `sum`).
    EnumMember,
    String,
    Number,
    Comment,
    /// An example command line.
    Macro,
}

impl TokenType {
    pub const ALL: [TokenType; 8] = [
        TokenType::Function,
        TokenType::Keyword,
        TokenType::Property,
        TokenType::EnumMember,
        TokenType::String,
        TokenType::Number,
        TokenType::Comment,
        TokenType::Macro,
    ];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SemanticToken {
    pub span: Span,
    pub ty: TokenType,
}

pub fn semantic_tokens(text: &str) -> Vec<SemanticToken> {
    let parsed = annotation::parse(text);
    let mut out = Vec::new();
    for located in annotation_tree::tokens(&parsed.tree) {
        let token = located.token;
        let in_node = |kind: SyntaxKind| located.ancestors.iter().any(|n| n.kind == kind);
        let ty = match token.kind {
            SyntaxKind::Comment => TokenType::Comment,
            SyntaxKind::String => TokenType::String,
            SyntaxKind::RawText if in_node(SyntaxKind::Example) => TokenType::Macro,
            SyntaxKind::RawText => TokenType::String,
            SyntaxKind::Word if in_node(SyntaxKind::Name) => TokenType::Function,
            SyntaxKind::Word if token.span.text(text).parse::<f64>().is_ok() => TokenType::Number,
            SyntaxKind::Word => match annotation_tree::keyword_kind(&located, text) {
                Some(KeywordKind::Section) => TokenType::Keyword,
                Some(KeywordKind::CommandOption | KeywordKind::ArgField) => TokenType::Property,
                Some(_) => TokenType::EnumMember,
                None if in_node(SyntaxKind::Value) => TokenType::String,
                None => continue,
            },
            _ => continue,
        };
        out.push(SemanticToken { span: token.span, ty });
    }
    out
}
