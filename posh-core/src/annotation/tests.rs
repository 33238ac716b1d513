//! Data-driven tests of the annotation language. Each renders its result as text and compares it
//! with an insta snapshot, so a snapshot reads like the annotation file it came from.

use super::format::{format_entry, format_source};
use super::syntax;
use super::*;
use crate::text::LineIndex;

/// The source with each diagnostic printed under its line, caret at its column.
fn render_diagnostics(source: &str) -> String {
    let parsed = parse(source);
    let index = LineIndex::new(source);
    let mut out = String::new();
    for (number, line) in source.lines().enumerate() {
        out.push_str(line);
        out.push('\n');
        for d in parsed.diagnostics.iter().filter(|d| index.line_of(d.span.start) == number) {
            let (_, col) = index.line_col(source, d.span.start);
            let width =
                source[d.span.range()].chars().count().max(1).min(line.chars().count().saturating_sub(col - 1).max(1));
            out.push_str(&format!(
                "{}{} {}[{}]: {}",
                " ".repeat(col - 1),
                "^".repeat(width),
                d.severity.as_str(),
                d.code.as_str(),
                d.message
            ));
            if let Some(fix) = &d.fix {
                out.push_str(&format!(" (fix: {})", fix.title));
            }
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "-- loaded: {}\n",
        parsed.entries.iter().map(|e| e.display_name()).collect::<Vec<_>>().join(", ")
    ));
    out
}

fn check_lossless(source: &str) {
    let parsed = parse(source);
    let text: String = parsed.tree.tokens().iter().map(|t| t.span.text(source)).collect();
    assert_eq!(text, source, "the tree must give back the text");
}

/// parse -> format -> parse gives the same model, and the formatted text is clean.
fn check_round_trip(source: &str) {
    let first = parse(source);
    let formatted: String = first.entries.iter().map(format_entry).collect::<Vec<_>>().join("\n");
    let second = parse(&formatted);
    assert!(second.diagnostics.is_empty(), "formatted text has diagnostics: {:?}\n{formatted}", second.diagnostics);
    let strip = |entries: &[CommandEntry]| entries.iter().map(CommandEntry::without_spans).collect::<Vec<_>>();
    assert_eq!(strip(&first.entries), strip(&second.entries), "formatted:\n{formatted}");
}

const PAPER_BLOCK: &str = "\
tar[filters_input]:
- FLAGS:
  - short:c
  - short:z
- OPTPARAMS:
  - short:f, type:output_file, size:1
- PARAMS:
  - type:input_file, size:list
";

fn compat_file() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/compat/posh-original.posh");
    std::fs::read_to_string(path).expect("../shared/compat/posh-original.posh sits beside the repository")
}

#[test]
fn paper_block_layout_tree() {
    check_lossless(PAPER_BLOCK);
    insta::assert_snapshot!(parse(PAPER_BLOCK).tree.debug_dump(PAPER_BLOCK));
}

#[test]
fn one_line_layout_tree() {
    let source = "grep[splittable_across_input,reduces_input]: FLAGS:[(short:v,long:invert-match)] PARAMS:[(type:str,size:1),(type:input_file,size:list(list_separator:( )))]\n";
    check_lossless(source);
    insta::assert_snapshot!(parse(source).tree.debug_dump(source));
}

#[test]
fn both_layouts_give_the_same_model() {
    let one_line = "tar[filters_input]: FLAGS:[(short:c),(short:z)] OPTPARAMS:[(short:f,type:output_file,size:1)] PARAMS:[(type:input_file,size:list(list_separator:( )))]";
    let a = parse(one_line);
    let b = parse(PAPER_BLOCK);
    assert!(a.diagnostics.is_empty() && b.diagnostics.is_empty());
    assert_eq!(a.entries[0].without_spans(), b.entries[0].without_spans());
}

#[test]
fn original_posh_file_loads_unchanged() {
    let source = compat_file();
    check_lossless(&source);
    let parsed = parse(&source);
    assert!(parsed.diagnostics.is_empty(), "{}", render_diagnostics(&source));
    assert_eq!(parsed.entries.len(), source.lines().filter(|l| !l.trim().is_empty()).count());
    insta::assert_snapshot!(parsed.entries.iter().map(format_entry).collect::<Vec<_>>().join("\n"));
    check_round_trip(&source);
}

#[test]
fn five_broken_entries_give_five_errors_and_the_rest_loads() {
    let source = "\
# Five broken entries among good ones.
cat: PARAMS:[(type:input_file,size:list,splittable)]
grep[reduces_input: PARAMS:[(type:str,size:1)]
head: OPTPARAMS:[(short:n,type:str,size:1)] PARAMS:[(type:input_file,size:list]
tail: OPTPARAMS:[(short:n, type:str, size:1)] PARAMS:[(type:input_file, size:list)]
sort PARAMS:[(type:input_file,size:list)]
wc: FLAGS:[(short:l),(short:w)] PARAMS:[(type:input_file,size:list,splittable)]
cut: OPTPARAMS:[(short:d,type:str,size:1),(short:f,type:str size:1)]
md5sum: PARAMS:[(type:input_file,size:list,splittable)]
tr: PARAMS:[(type:str,size:1,desc:\"set one)]
uniq:
- PARAMS:
  - type:input_file, size:1
";
    check_lossless(source);
    let parsed = parse(source);
    let errors = parsed.diagnostics.iter().filter(|d| d.severity == crate::Severity::Error).count();
    assert_eq!(errors, 5, "{}", render_diagnostics(source));
    insta::assert_snapshot!(render_diagnostics(source));
}

#[test]
fn semantic_checks() {
    let source = "\
a: PARAMS:[(type:input_file,size:list,splittable),(type:input_file,size:list,splittable)]
b: PARAMS:[(type:input_file,size:1,splittable)]
c: OPTPARAMS:[(short:s,type:input_file,attached)]
d: OPTPARAMS:[(type:str,size:1)]
e: PARAMS:[(short:x,type:str)]
f: FLAGS:[(short:v),(short:v,long:verbose)]
g: OPTPARAMS:[(short:ab)]
h: PARAMS:[(type:input_file,size:list),(type:str,size:list)]
i: OPTPARAMS:[(short:f,type:str,config)]
j[filters_input,output_ratio:3]: PARAMS:[(type:input_file,size:list)]
k[merge:sum]: PARAMS:[(type:input_file,size:list)]
l: FLAGS:[(short:v,type:input_file)] OPTPARAMS:[(short:n,size:0)]
m[splitable_across_input]: PARAMS:[(type:inputfile,splitable)]
n[merge:add,filters_input,filters_input]: PARAMS:[(size:lots),(size:1,size:2)]
o: PARAMS:[(type:str,required)] SECTION:[(short:x)]
p: FLAGS:[(short:v)]
p: FLAGS:[(short:v),(short:q)]
p: FLAGS:[(short:q,required)]
q: PARAMS:[(type:input_file,size:specific_size(size:two,list_separator:(,)))]
r: FLAGS:[(short:c,changes_lines)]
";
    check_lossless(source);
    insta::assert_snapshot!(render_diagnostics(source));
}

#[test]
fn examples_are_checked_against_their_entry() {
    let source = "\
tar[filters_input]:
- FLAGS:
  - short:c, required
  - short:v
- OPTPARAMS:
  - short:f, type:output_file
- PARAMS:
  - type:input_file, size:list
- EXAMPLES:
  - tar -cvf out.tar input/
  - tar -xvf in.tar
  - tar -cf 'unclosed
tar:
- FLAGS:
  - short:x, required
  - short:v
- OPTPARAMS:
  - short:f, type:input_file
- EXAMPLES:
  - tar -xvf in.tar
  - tar -xf in.tar -v
";
    check_lossless(source);
    insta::assert_snapshot!(render_diagnostics(source));
}

#[test]
fn syntax_recovery() {
    let source = "\
- PARAMS:
cat:
  - type:input_file
- BOGUS:
  - type:input_file
x: PARAMS:[(type:input_file,,size:1)] ]
y[: PARAMS:[
z: PARAMS:[(type: , size:1)]
\"quoted\": PARAMS:[]
ok: PARAMS:[(type:input_file)]
";
    check_lossless(source);
    insta::assert_snapshot!(render_diagnostics(source));
}

#[test]
fn unknown_keywords_offer_a_fix() {
    let parsed = parse("cat: PARAMS:[(type:input_file,splitable,size:list)]");
    let fix = parsed.diagnostics[0].fix.as_ref().expect("a fix");
    assert_eq!(fix.edits[0].new_text, "splittable");
    assert_eq!(fix.edits[0].span.text("cat: PARAMS:[(type:input_file,splitable,size:list)]"), "splitable");
}

#[test]
fn extensions_round_trip() {
    let source = "\
wc[filters_input, splittable_across_input, merge:sum, output_ratio:0.001]:
- FLAGS:
  - short:l, long:lines
- PARAMS:
  - type:input_file, size:list, splittable, desc:\"files to \\\"count\\\"\"
grep[splittable_across_input, filters_input]:
- OPTPARAMS:
  - short:f, long:file, type:input_file, config, multiple
  - short:k, type:str, size:list(list_separator:(,)), default_value:\"1\"
  - short:t, type:str, attached
  - short:P, type:str, size:specific_size(size:2,list_separator:(:))
  - short:Q, type:str, size:3
- PARAMS:
  - type:input_file, size:list
- EXAMPLES:
  - grep -f pats.txt a.txt
";
    let parsed = parse(source);
    assert!(parsed.diagnostics.is_empty(), "{}", render_diagnostics(source));
    check_round_trip(source);
    insta::assert_snapshot!(parsed.entries.iter().map(format_entry).collect::<Vec<_>>().join("\n"));
}

#[test]
fn format_source_keeps_comments_and_broken_entries() {
    let source = "# header comment\ncat: PARAMS:[(type:input_file,size:list)]\n\nbad: PARAMS:[(type:nope)]\n# between\ngrep: FLAGS:[(short:v)]\n";
    let parsed = parse(source);
    insta::assert_snapshot!(format_source(source, &parsed));
}

#[test]
fn the_shipped_library_is_clean_and_round_trips() {
    for (name, text) in crate::library::builtin_sources() {
        check_lossless(text);
        let parsed = parse(text);
        assert!(parsed.diagnostics.is_empty(), "{name}:\n{}", render_diagnostics(text));
        check_round_trip(text);
        // What every run loads without the checks across entries (`Library::builtin`).
        assert_eq!(super::entries_of_checked_file(text), parsed.entries, "{name}");
    }
    let mut checked = crate::library::Library::empty();
    for (name, text) in crate::library::builtin_sources() {
        checked.add_source(name, text);
    }
    let entries = |library: &crate::library::Library| -> Vec<(CommandEntry, String)> {
        library.entries().map(|e| (e.entry.clone(), e.source.clone())).collect()
    };
    assert_eq!(entries(&crate::library::Library::builtin()), entries(&checked));
}

/// The keyword reference in docs/annotation-language.md is generated from the keyword table.
/// Run with `UPDATE_DOCS=1` to rewrite it.
#[test]
fn keyword_table_feeds_the_docs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/annotation-language.md");
    let docs = std::fs::read_to_string(path).expect("docs/annotation-language.md exists");
    let (start, end) =
        ("<!-- keywords:start (generated from posh-core/src/annotation/keywords.rs) -->\n", "<!-- keywords:end -->");
    let from = docs.find(start).expect("start marker") + start.len();
    let to = docs.find(end).expect("end marker");
    let reference = super::keywords::reference_markdown();
    if docs[from..to] != reference {
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, format!("{}{reference}{}", &docs[..from], &docs[to..])).expect("docs are writable");
        }
        panic!(
            "docs/annotation-language.md is out of date with the keyword table: run `UPDATE_DOCS=1 cargo test -p posh-core`"
        );
    }
}

#[test]
fn every_syntax_kind_of_a_file_is_reachable() {
    // Tokens tile arbitrary garbage too.
    for source in
        ["\u{1F600}: PARAMS:[(\u{e9})]\n", ":::\n[[[\n)))\n", "- \n-\n  -x\n", "a\r\n- FLAGS:\r\n  - short:v\r\n"]
    {
        check_lossless(source);
        let _ = syntax::parse(source);
    }
}

/// Parses the same entries written in both layouts, checks they load cleanly into the same model
/// and print back unchanged, and returns the block layout's parse.
fn check_both_layouts(one_line: &str, block: &str) -> ParsedFile {
    let (a, b) = (parse(one_line), parse(block));
    assert!(a.diagnostics.is_empty(), "{}", render_diagnostics(one_line));
    assert!(b.diagnostics.is_empty(), "{}", render_diagnostics(block));
    let strip = |entries: &[CommandEntry]| entries.iter().map(CommandEntry::without_spans).collect::<Vec<_>>();
    assert_eq!(strip(&a.entries), strip(&b.entries));
    check_round_trip(one_line);
    check_round_trip(block);
    b
}

/// Names of files read from input: the same model from both layouts, printed back in the block
/// layout, and the invocation says where its lists are.
#[test]
fn file_lists_in_both_layouts() {
    let one_line = "\
xargs[stdin_file_list]: FLAGS:[(short:0,long:null)] PARAMS:[(type:str,size:list)]
tar: FLAGS:[(short:c,required)] OPTPARAMS:[(short:f,type:output_file,size:1),(short:T,long:files-from,type:input_file,size:1,multiple,file_list)] PARAMS:[(type:input_file,size:list)]
";
    let block = "\
xargs[stdin_file_list]:
- FLAGS:
  - short:0, long:null
- PARAMS:
  - type:str, size:list
tar:
- FLAGS:
  - short:c, required
- OPTPARAMS:
  - short:f, type:output_file, size:1
  - short:T, long:files-from, type:input_file, multiple, file_list
- PARAMS:
  - type:input_file, size:list
";
    let b = check_both_layouts(one_line, block);

    let lists = |argv: &str| {
        let argv = shell_words::split(argv).expect("a command line");
        let entries: Vec<&CommandEntry> = b.entries.iter().filter(|e| e.name[0] == argv[0]).collect();
        crate::matcher::match_entries(entries, &argv).expect("an entry fits").file_lists()
    };
    assert_eq!(lists("xargs -0 cat"), ["-"]);
    assert_eq!(lists("tar -cf out.tar -T names.txt"), ["names.txt"]);
    assert_eq!(lists("tar -c -T - -T more.txt -T - -f out.tar"), ["-", "more.txt"]);
    let argv = shell_words::split("tar -c -T - -T more.txt -f out.tar").expect("a command line");
    let invocation = crate::matcher::fit(&b.entries[1], &argv).expect("the tar entry fits");
    assert_eq!(invocation.file_lists_in_words().as_deref(), Some("standard input and `more.txt`"));
    assert!(lists("tar -cf out.tar a.txt").is_empty(), "without -T the names are on the command line");
    insta::assert_snapshot!(b.entries.iter().map(format_entry).collect::<Vec<_>>().join("\n"));
}

#[test]
fn file_list_checks() {
    let source = "\
a: FLAGS:[(short:@,file_list)]
b: OPTPARAMS:[(short:T,type:str,size:1,file_list)]
c: PARAMS:[(type:input_file,size:list,splittable,file_list)]
d[stdin_file_list,splittable_across_input]: PARAMS:[(type:input_file,size:list)]
e[stdin_file_list]: PARAMS:[(type:input_file,size:list,splittable)]
f[stdin_file_list,stdin_file_list]: PARAMS:[(type:str,size:list)]
g[stdin_filelist]: OPTPARAMS:[(short:T,type:input_file,size:1,filelist)]
h[stdin_file_list]: OPTPARAMS:[(short:T,type:input_file,size:1,file_list)] PARAMS:[(type:str,size:list)]
";
    check_lossless(source);
    insta::assert_snapshot!(render_diagnostics(source));
}

/// `streamable` goes on input files only, and never on a list of names.
#[test]
fn streamable_checks() {
    let source = "\
a: PARAMS:[(type:input_file,size:1,streamable),(type:input_file,size:1,config,streamable)]
b: OPTPARAMS:[(short:o,type:output_file,size:1,streamable)]
c: OPTPARAMS:[(short:T,type:input_file,size:1,file_list,streamable)] PARAMS:[(type:str,size:list,streamable)]
";
    check_lossless(source);
    insta::assert_snapshot!(render_diagnostics(source));
}

/// A flag that makes the command append: the same model from both layouts, printed back, and
/// misplaced uses reported (an output file argument may say it of its own files: `touch`).
#[test]
fn appending_flags() {
    let one_line = "tee: FLAGS:[(short:a,long:append,appends)] PARAMS:[(type:output_file,size:list)]\n";
    let block = "\
tee:
- FLAGS:
  - short:a, long:append, appends
- PARAMS:
  - type:output_file, size:list
";
    let b = check_both_layouts(one_line, block);
    let misplaced = "\
a: OPTPARAMS:[(short:o,type:output_file,size:1,appends)]
d: OPTPARAMS:[(short:o,type:output_file,size:1)] PARAMS:[(type:input_file,size:list,appends)]
b: FLAGS:[(short:a,appends)] PARAMS:[(type:input_file,size:list)]
c: FLAGS:[(short:a,append)] PARAMS:[(type:output_file,size:list)]
";
    check_lossless(misplaced);
    insta::assert_snapshot!(format!("{}\n{}", format_entry(&b.entries[0]), render_diagnostics(misplaced)));
}

#[test]
fn output_bounds_round_trip_and_are_checked() {
    let source = "\
head: OPTPARAMS:[(short:n,type:str,size:1,default_value:\"10\",bounds_lines),(short:c,type:str,size:1,bounds_bytes)]
wc[filters_input,output_per_input:64]: PARAMS:[(type:input_file,size:list)]
a[output_per_input:0]: PARAMS:[(type:input_file,size:list)]
b: FLAGS:[(short:q,bounds_lines)] OPTPARAMS:[(short:n,type:str,size:1,bounds_lines,bounds_bytes)]
c: PARAMS:[(type:input_file,size:list,bounds_bytes)]
";
    check_lossless(source);
    let parsed = parse(source);
    let formatted: String = parsed.entries.iter().take(2).map(format_entry).collect();
    insta::assert_snapshot!(format!("{formatted}\n{}", render_diagnostics(source)));
}

/// `dash_digits`: printed back, and reported where `-5` would be unclear.
#[test]
fn dash_digits_round_trip_and_are_checked() {
    let source = "\
head: OPTPARAMS:[(short:n,type:str,size:1,bounds_lines,dash_digits)]
a: FLAGS:[(short:q,dash_digits)] OPTPARAMS:[(short:n,type:str,size:2,dash_digits)]
b: OPTPARAMS:[(short:n,type:str,size:1,dash_digits),(short:c,type:str,size:1,dash_digits)]
comm: FLAGS:[(short:1),(short:2)] OPTPARAMS:[(short:n,type:str,size:1,dash_digits)]
";
    check_lossless(source);
    let parsed = parse(source);
    insta::assert_snapshot!(format!("{}\n{}", format_entry(&parsed.entries[0]), render_diagnostics(source)), @r#"
        head:
        - OPTPARAMS:
          - short:n, bounds_lines, dash_digits

        head: OPTPARAMS:[(short:n,type:str,size:1,bounds_lines,dash_digits)]
        a: FLAGS:[(short:q,dash_digits)] OPTPARAMS:[(short:n,type:str,size:2,dash_digits)]
                  ^^^^^^^^^^^^^^^^^^^^^ error[A120]: `dash_digits` goes on an option with one value (OPTPARAMS, `size:1`)
                                                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[A120]: `dash_digits` goes on an option with one value (OPTPARAMS, `size:1`)
        b: OPTPARAMS:[(short:n,type:str,size:1,dash_digits),(short:c,type:str,size:1,dash_digits)]
                                                            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[A120]: a second `dash_digits` option: `-5` could mean either
        comm: FLAGS:[(short:1),(short:2)] OPTPARAMS:[(short:n,type:str,size:1,dash_digits)]
                                                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[A120]: `dash_digits` in an entry with a digit for a short option: `-12` could be two flags
        -- loaded: head
        "#);
}

#[test]
fn what_a_command_takes_along_round_trips_and_is_checked() {
    let source = "\
git[needs_current_dir,no_match_status:1,reads_env:\"GIT_AUTHOR_NAME EMAIL\",reads_home:\"~/.gitconfig ~/.config/git/config\"]: PARAMS:[(type:str,size:list)]
a[no_match_status:0]: PARAMS:[(type:input_file,size:list)]
b[no_match_status:1.5,reads_env:\"OK 2BAD A-B\"]: PARAMS:[(type:input_file,size:list)]
c[reads_home:\".gitconfig ~/../x ~/a/./b /etc/passwd ~/\"]: PARAMS:[(type:input_file,size:list)]
";
    check_lossless(source);
    let parsed = parse(source);
    let options = &parsed.entries[0].options;
    assert_eq!(options.reads_home, [".gitconfig", ".config/git/config"]);
    let reparsed = parse(&format_entry(&parsed.entries[0]));
    assert_eq!(reparsed.entries[0].options, *options, "the printed header reads back the same");
    insta::assert_snapshot!(format!("{}\n{}", format_entry(&parsed.entries[0]), render_diagnostics(source)));
}
