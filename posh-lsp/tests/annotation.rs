//! Authoring annotation files: diagnostics and their quick fixes, completion by context, hover
//! from the keyword table, formatting, symbols and semantic tokens, on plain text and offsets.

use posh_core::Span;
use posh_lsp::ide;

const FILE: &str = "# Tools of the project.\ncsvcut[filters_input]: FLAGS:[(short:n, long:names)] PARAMS:[(type:input_file, size:list, splitable)]\n\ncsvlook:\n- PARAMS:\n  - type:input_file, size:1, desc:\"a CSV file — shown as a table\"\n";

#[test]
fn a_misspelt_keyword_gets_a_quick_fix() {
    let diags = ide::diagnostics::annotation_diagnostics(FILE);
    let shown: Vec<String> =
        diags.iter().map(|d| format!("{}: {} ({:?})", d.code.as_str(), d.message, d.span.text(FILE))).collect();
    assert_eq!(shown, vec!["A102: unknown field `splitable`: did you mean `splittable`? (\"splitable\")"]);
    let at = FILE.find("splitable").unwrap();
    let fixes = ide::code_actions::quick_fixes(&diags, Span::new(at + 2, at + 2));
    assert_eq!(fixes.len(), 1);
    assert_eq!(fixes[0].title, "Replace with `splittable`");
    let mut fixed = FILE.to_string();
    fixed.replace_range(fixes[0].edits[0].span.range(), &fixes[0].edits[0].new_text);
    assert_eq!(ide::diagnostics::annotation_diagnostics(&fixed), vec![]);
    // Nothing to fix elsewhere.
    assert_eq!(ide::code_actions::quick_fixes(&diags, Span::new(0, 5)), vec![]);
}

/// The labels offered with the cursor at the end of `text`.
fn offered(text: &str) -> String {
    let items = ide::completion::completions(text, text.len());
    let labels: Vec<String> = items
        .iter()
        .map(|c| {
            assert_eq!(c.replace.end, text.len());
            format!("{}={}", c.label, c.insert)
        })
        .collect();
    labels.join(" ")
}

#[test]
fn completion_by_context() {
    let cases = [
        "cat:\n- ",
        "cat:\n- PA",
        "cat[",
        "cat[filters_input, me",
        "cat[merge:",
        "cat:\n- FLAGS:\n  - ",
        "cat:\n- PARAMS:\n  - type:",
        "cat:\n- PARAMS:\n  - type:input_file, si",
        "cat:\n- PARAMS:\n  - type:input_file, size:l",
        "cat:\n- PARAMS:\n  - type:input_file, size:list(",
        "cat: PARAMS:[(type:str, ",
        "# a comment about ",
    ];
    let out: String = cases.iter().map(|c| format!("{c:?}\n    {}\n", offered(c))).collect();
    insta::assert_snapshot!(out);
}

#[test]
fn hover_shows_the_keyword_table() {
    let at = |word: &str| FILE.find(word).unwrap() + 1;
    let hover =
        |offset| ide::hover::annotation_hover(FILE, offset).map(|h| (h.span.text(FILE).to_string(), h.markdown));
    let out: Vec<String> = ["filters_input", "FLAGS", "long", "input_file", "size:list"]
        .iter()
        .map(|w| format!("{w}: {:?}", hover(at(w))))
        .collect();
    insta::assert_snapshot!(out.join("\n"));
    assert_eq!(hover(at("csvlook")), None);
    // A misspelt keyword: what its code means.
    let (span, markdown) = hover(at("splitable")).expect("a hover on the unknown field");
    assert_eq!(span, "splitable");
    assert!(markdown.starts_with("**A102** (unknown-field): An argument field"), "{markdown}");
}

#[test]
fn formatting_to_the_block_layout() {
    let text = "# Tools.\ncsvcut[filters_input]: FLAGS:[(short:n, long:names)] PARAMS:[(type:input_file, size:list, splittable)]\n";
    let edit = ide::formatting::format(text).expect("the one-line entry is reformatted");
    assert_eq!(edit.span, Span::new(0, text.len()));
    insta::assert_snapshot!(edit.new_text);
    assert_eq!(ide::formatting::format(&edit.new_text), None, "formatting is idempotent");
}

#[test]
fn one_symbol_per_entry_even_broken() {
    let symbols = ide::symbols::symbols(FILE);
    let shown: Vec<String> = symbols
        .iter()
        .map(|s| {
            format!(
                "{} [{}] {:?} name {:?}",
                s.name,
                s.detail,
                s.span.text(FILE).lines().next(),
                s.name_span.text(FILE)
            )
        })
        .collect();
    insta::assert_snapshot!(shown.join("\n"));
}

#[test]
fn semantic_tokens_classify_the_tree() {
    let tokens = ide::semantic_tokens::semantic_tokens(FILE);
    let mut out = String::new();
    let mut at = 0;
    for token in tokens {
        out.push_str(&FILE[at..token.span.start]);
        out.push_str(&format!("[{:?}:{}]", token.ty, token.span.text(FILE)));
        at = token.span.end;
    }
    out.push_str(&FILE[at..]);
    insta::assert_snapshot!(out);
}
