//! Matcher tests: each case fits argv against an annotation written next to it and snapshots the
//! classification of every word.

use super::*;
use crate::annotation;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// Fits `words` to the entries of `annotations` and renders the classification, or the reasons
/// no entry fits.
fn check(annotations: &str, words: &[&str]) -> String {
    let parsed = annotation::parse(annotations);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let candidates: Vec<&CommandEntry> = parsed.entries.iter().collect();
    match match_entries(candidates, &argv(words)) {
        Ok(invocation) => format!("entry #{}\n{}", invocation.entry_index, invocation.describe()),
        Err(NoMatch::NoEntryFits { command, attempts }) => {
            let mut out = format!("no match for {command}\n");
            for (i, why) in attempts {
                out.push_str(&format!("  entry #{i}: {why}\n"));
            }
            out
        }
        Err(other) => format!("{other}\n"),
    }
}

const CAT: &str = "cat: PARAMS:[(splittable,type:input_file,size:list(list_separator:( ))),]";
const GREP: &str = "\
grep[splittable_across_input,reduces_input]: FLAGS:[(short:v,long:invert-match)] PARAMS:[(type:str,size:1),(type:input_file,size:list(list_separator:( )))]
grep[splittable_across_input,reduces_input]: FLAGS:[(short:v,long:invert-match)] OPTPARAMS:[(short:e,long:regexp,type:str,size:1),(short:f,long:file,type:input_file,size:1)] PARAMS:[(type:input_file,size:list(list_separator:( )))]";
const TAR: &str = "\
tar[filters_input]: FLAGS:[(short:c,long:create,required),(short:z,long:gzip),(short:v,long:verbose)] OPTPARAMS:[(short:f,long:file,type:output_file,size:1)] PARAMS:[(type:input_file,size:list)]
tar: FLAGS:[(short:x,long:extract,required),(short:z,long:gzip),(short:v,long:verbose)] OPTPARAMS:[(short:f,long:file,type:input_file,size:1)]";
const MOGRIFY: &str = "mogrify[long_arg_single_dash]: OPTPARAMS:[(long:format,type:str,size:1),(long:path,type:output_file,size:1),(long:thumbnail,type:str,size:1)] PARAMS:[(type:input_file,splittable,size:list(list_separator:( )))]";
const GIT_STATUS: &str = "git status[needs_current_dir]: OPTPARAMS:[(short:C,size:1,type:input_file)]";
const COMM: &str =
    "comm: FLAGS:[(short:1),(short:2),(short:3)] PARAMS:[(type:input_file,size:1),(type:input_file,size:1,config)]";
const HEAD: &str = "head: OPTPARAMS:[(short:n,long:lines,type:str)] PARAMS:[(type:input_file,size:list,splittable)]";
const SORT: &str = "sort: FLAGS:[(short:n),(short:r)] OPTPARAMS:[(short:k,long:key,multiple),(short:o,long:output,type:output_file),(short:t,long:field-separator)] PARAMS:[(type:input_file,size:list,splittable)]";

#[test]
fn paper_examples() {
    let cases: &[(&str, &[&str])] = &[
        (CAT, &["cat", "A", "B", "C", "D"]),
        (GREP, &["grep", "foo"]),
        (TAR, &["tar", "-cvf", "out.tar.gz", "input/"]),
        (TAR, &["tar", "-xvf", "in.tar.gz"]),
        (GIT_STATUS, &["git", "status"]),
        (MOGRIFY, &["mogrify", "-format", "gif", "-path", "thumbs", "-thumbnail", "100x100", "a.jpg", "b.jpg"]),
        (COMM, &["comm", "-12", "a", "b"]),
    ];
    let rendered: Vec<String> =
        cases.iter().map(|(ann, words)| format!("$ {}\n{}", words.join(" "), check(ann, words))).collect();
    insta::assert_snapshot!(rendered.join("\n"));
}

#[test]
fn gnu_conventions() {
    let cases: &[(&str, &[&str])] = &[
        (HEAD, &["head", "-n5", "a.txt"]),
        (HEAD, &["head", "-n", "5", "a.txt"]),
        (HEAD, &["head", "--lines=5", "a.txt", "-"]),
        (HEAD, &["head", "--lines", "5", "--", "-n", "a.txt"]),
        (HEAD, &["/usr/bin/head", "a.txt", "-n", "3"]),
        (SORT, &["sort", "-nr", "-k2,2", "-k", "1", "-t,", "-o", "out.txt", "in.txt"]),
        (SORT, &["sort", "-rn", "--key=2", "--output=out.txt"]),
        (GREP, &["grep", "-v", "--regexp=x", "-f", "pats.txt", "a.txt", "a.txt"]),
        (GREP, &["grep", "--invert-match", "foo", "a.txt"]),
        (TAR, &["tar", "--create", "--file=x.tar", "-z", "dir/"]),
        (MOGRIFY, &["mogrify", "-format", "png", "-path", "out/", "x.jpg"]),
        (
            "pr: FLAGS:[(short:m,long:merge),(short:t)] OPTPARAMS:[(short:s,type:str,size:1,attached)] PARAMS:[(type:input_file,size:list(list_separator:( )))]",
            &["pr", "-mts:", "a", "b"],
        ),
        (
            "pr: FLAGS:[(short:t)] OPTPARAMS:[(short:s,type:str,size:1,attached)] PARAMS:[(type:input_file,size:list)]",
            &["pr", "-s", "a"],
        ),
        (
            "cut: OPTPARAMS:[(short:f,type:str,size:list(list_separator:(,)))] PARAMS:[(type:input_file,size:list)]",
            &["cut", "-f1,3,5", "a.csv"],
        ),
        (
            "paste: OPTPARAMS:[(short:d,type:str,size:specific_size(size:2,list_separator:(,)))]",
            &["paste", "-d", "a,b"],
        ),
        ("cp: PARAMS:[(type:input_file,size:list),(type:output_file,size:1)]", &["cp", "a", "b", "c", "dest/"]),
        ("ls: PARAMS:[(type:input_file,size:list,default_value:\".\")]", &["ls"]),
        ("j: OPTPARAMS:[(short:i,type:input_file,size:2)]", &["j", "-i", "a", "b"]),
    ];
    let rendered: Vec<String> =
        cases.iter().map(|(ann, words)| format!("$ {}\n{}", words.join(" "), check(ann, words))).collect();
    insta::assert_snapshot!(rendered.join("\n"));
}

#[test]
fn invocations_that_fit_no_entry() {
    let cases: &[(&str, &[&str])] = &[
        (TAR, &["tar", "-tvf", "x.tar"]),
        (TAR, &["tar", "-f", "x.tar", "dir"]),
        (HEAD, &["head", "-n"]),
        (HEAD, &["head", "-5", "a.txt"]),
        (HEAD, &["head", "-n", "1", "-n", "2"]),
        (GIT_STATUS, &["git", "add", "."]),
        (GIT_STATUS, &["git"]),
        (COMM, &["comm", "a"]),
        (COMM, &["comm", "a", "b", "c"]),
        (GREP, &["grep", "--invert-match=yes", "x"]),
        (GREP, &["grep"]),
        (
            "paste: OPTPARAMS:[(short:d,type:str,size:specific_size(size:2,list_separator:(,)))]",
            &["paste", "-d", "a,b,c"],
        ),
        ("j: OPTPARAMS:[(short:i,type:input_file,size:2)]", &["j", "-i", "a"]),
    ];
    let rendered: Vec<String> =
        cases.iter().map(|(ann, words)| format!("$ {}\n{}", words.join(" "), check(ann, words))).collect();
    insta::assert_snapshot!(rendered.join("\n"));
}

#[test]
fn a_dash_and_digits_is_the_option_that_takes_them() {
    const HEAD_DIGITS: &str = "head: OPTPARAMS:[(short:n,long:lines,type:str,dash_digits),(short:c,type:str)] PARAMS:[(type:input_file,size:list,splittable)]";
    let cases: &[&[&str]] =
        &[&["head", "-5", "a.txt", "b.txt"], &["head", "-c", "3", "-12"], &["head", "-5x"], &["head", "-5", "-n", "2"]];
    let rendered: Vec<String> =
        cases.iter().map(|words| format!("$ {}\n{}", words.join(" "), check(HEAD_DIGITS, words))).collect();
    insta::assert_snapshot!(rendered.join("\n"), @r#"
        $ head -5 a.txt b.txt
        entry #0
        "head": command
        "-5"  "-": option -n/--lines  "5": str of -n/--lines
        "a.txt": input_file (PARAMS #0), splittable
        "b.txt": input_file (PARAMS #0), splittable

        $ head -c 3 -12
        entry #0
        "head": command
        "-c"  "c": option -c
        "3": str of -c
        "-12"  "-": option -n/--lines  "12": str of -n/--lines

        $ head -5x
        no match for head
          entry #0: the annotation does not know the option `-5`

        $ head -5 -n 2
        no match for head
          entry #0: `-n/--lines` is given more than once
        "#);
    // The word is kept as written when the files are narrowed.
    let parsed = annotation::parse(HEAD_DIGITS);
    let invocation = fit_one(&parsed.entries, &["head", "-5", "a.txt", "b.txt"]);
    assert_eq!(invocation.argv_with_subset(&[1]).unwrap(), argv(&["head", "-5", "b.txt"]));
}

fn fit_one<'a>(entries: &'a [CommandEntry], words: &[&str]) -> Invocation<'a> {
    match_entries(entries, &argv(words)).expect("fits")
}

#[test]
fn rebuild_is_exact() {
    let parsed = annotation::parse(SORT);
    let words = ["sort", "-nr", "-k2,2", "--key=1", "--", "-odd name", "b", "-odd name"];
    let invocation = fit_one(&parsed.entries, &words);
    assert_eq!(invocation.argv, argv(&words));
    assert_eq!(invocation.splittable_values().len(), 3);
    let all: Vec<usize> = (0..3).collect();
    assert_eq!(invocation.argv_with_subset(&all).unwrap(), argv(&words));
}

#[test]
fn rebuild_with_subsets_keeps_order_repeats_and_options() {
    let parsed = annotation::parse(SORT);
    let invocation = fit_one(&parsed.entries, &["sort", "a", "-k2", "--", "-b", "a", "c", "--output=o"]);
    let texts: Vec<&str> = invocation.splittable_values().iter().map(|v| invocation.value_text(v)).collect();
    assert_eq!(texts, ["a", "-b", "a", "c", "--output=o"]);
    assert_eq!(invocation.argv_with_subset(&[1, 2]).unwrap(), argv(&["sort", "-k2", "--", "-b", "a"]));
    assert_eq!(invocation.argv_with_subset(&[2, 0]).unwrap(), argv(&["sort", "a", "-k2", "--", "a"]));
    assert_eq!(invocation.argv_with_subset(&[4]).unwrap(), argv(&["sort", "-k2", "--", "--output=o"]));
    assert_eq!(invocation.argv_with_subset(&[]), Err(RebuildError::EmptySubset));
    assert_eq!(invocation.argv_with_subset(&[5]), Err(RebuildError::OutOfRange { index: 5, len: 5 }));
}

#[test]
fn rebuild_rejoins_packed_lists_and_drops_whole_options() {
    let source = "x: FLAGS:[(short:v)] OPTPARAMS:[(short:i,long:input,type:input_file,size:list(list_separator:(,)),multiple,splittable)]";
    let parsed = annotation::parse(source);
    let invocation = fit_one(&parsed.entries, &["x", "-i", "a,b,c", "-v", "--input=d,e", "-vi", "f"]);
    assert_eq!(
        invocation.argv_with_subset(&[0, 2, 4, 5]).unwrap(),
        argv(&["x", "-i", "a,c", "-v", "--input=e", "-vi", "f"])
    );
    assert_eq!(invocation.argv_with_subset(&[3, 5]).unwrap(), argv(&["x", "-v", "--input=d", "-vi", "f"]));
    assert!(matches!(invocation.argv_with_subset(&[0]), Err(RebuildError::Bundled { .. })));
    let not_splittable = annotation::parse(COMM);
    let invocation = fit_one(&not_splittable.entries, &["comm", "a", "b"]);
    assert_eq!(invocation.argv_with_subset(&[0]), Err(RebuildError::NotSplittable));
}

#[test]
fn inputs_and_outputs() {
    let parsed = annotation::parse(TAR);
    let invocation = fit_one(&parsed.entries, &["tar", "-czf", "out.tgz", "a/", "b.txt"]);
    assert_eq!(invocation.input_files(), ["a/", "b.txt"]);
    assert_eq!(invocation.output_files(), ["out.tgz"]);
    let parsed = annotation::parse("ls: PARAMS:[(type:input_file,size:list,default_value:\".\")]");
    assert_eq!(fit_one(&parsed.entries, &["ls"]).input_files(), ["."]);
    assert_eq!(fit_one(&parsed.entries, &["ls", "x"]).input_files(), ["x"]);
}

#[test]
fn appending_flags_say_the_outputs_are_appended() {
    let parsed =
        annotation::parse("tee: FLAGS:[(short:a,long:append,appends),(short:i)] PARAMS:[(type:output_file,size:list)]");
    assert!(parsed.diagnostics.is_empty());
    for (words, appends) in [
        (&["tee", "log.txt"][..], false),
        (&["tee", "-i", "log.txt"][..], false),
        (&["tee", "-a", "log.txt"][..], true),
        (&["tee", "-ia", "log.txt", "other.txt"][..], true),
        (&["tee", "--append", "log.txt"][..], true),
        (&["tee", "--", "-a"][..], false),
    ] {
        assert_eq!(fit_one(&parsed.entries, words).appends_outputs(), appends, "{words:?}");
    }
}
