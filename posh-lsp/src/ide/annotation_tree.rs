//! Reading the annotation syntax tree around a position: which token, inside which nodes, and
//! which kind of keyword stands there. Shared by hover, semantic tokens and completion.

use posh_core::annotation::keywords::{self, Keyword, KeywordKind};
use posh_core::annotation::syntax::{SyntaxElement, SyntaxKind, SyntaxNode, SyntaxToken};

/// A token with the nodes around it, outermost first.
#[derive(Debug)]
pub struct Located<'a> {
    pub ancestors: Vec<&'a SyntaxNode>,
    pub token: &'a SyntaxToken,
}

/// Every significant token with its ancestors, in text order.
pub fn tokens(tree: &SyntaxNode) -> Vec<Located<'_>> {
    fn walk<'a>(node: &'a SyntaxNode, path: &mut Vec<&'a SyntaxNode>, out: &mut Vec<Located<'a>>) {
        path.push(node);
        for child in &node.children {
            match child {
                SyntaxElement::Node(n) => walk(n, path, out),
                SyntaxElement::Token(t) if !t.kind.is_trivia() || t.kind == SyntaxKind::Comment => {
                    out.push(Located { ancestors: path.clone(), token: t })
                }
                SyntaxElement::Token(_) => {}
            }
        }
        path.pop();
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

/// The significant token that covers `offset` (or ends there, for a cursor after a word).
pub fn token_at(tree: &SyntaxNode, offset: usize) -> Option<Located<'_>> {
    let all = tokens(tree);
    let inside = all.iter().position(|l| l.token.span.start <= offset && offset < l.token.span.end);
    let index = inside.or_else(|| all.iter().position(|l| l.token.span.end == offset))?;
    all.into_iter().nth(index)
}

fn parent(located: &Located<'_>) -> Option<SyntaxKind> {
    located.ancestors.last().map(|n| n.kind)
}

/// The keyword kind a word at this place would belong to, from its position in the tree.
pub fn keyword_kind(located: &Located<'_>, source: &str) -> Option<KeywordKind> {
    let in_options = located.ancestors.iter().any(|n| n.kind == SyntaxKind::OptionList);
    match parent(located)? {
        SyntaxKind::SectionHeader | SyntaxKind::InlineSection => Some(KeywordKind::Section),
        SyntaxKind::Field if in_options => Some(KeywordKind::CommandOption),
        SyntaxKind::Field => Some(KeywordKind::ArgField),
        SyntaxKind::Value => {
            // The field's key decides: `type:` takes types, `size:` sizes, `merge:` merge steps.
            let field = located.ancestors.iter().rev().find(|n| n.kind == SyntaxKind::Field)?;
            let key = field.tokens().into_iter().find(|t| t.kind == SyntaxKind::Word)?;
            match key.span.text(source) {
                "type" => Some(KeywordKind::Type),
                "merge" => Some(KeywordKind::Merge),
                "size" | "list" | "specific_size" => Some(KeywordKind::Size),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The keyword a word names at its place, falling back to any kind with that name.
pub fn keyword_at(located: &Located<'_>, source: &str) -> Option<&'static Keyword> {
    if located.token.kind != SyntaxKind::Word {
        return None;
    }
    let word = located.token.span.text(source);
    keyword_kind(located, source)
        .and_then(|kind| keywords::lookup(kind, word))
        .or_else(|| keywords::KEYWORDS.iter().find(|k| k.name == word || k.synonyms.contains(&word)))
}
