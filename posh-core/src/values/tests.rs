use std::collections::BTreeMap;

use super::*;

/// The values of `name` before the pipeline whose text starts with `at`, in `script` run with
/// `env` (the whole environment) and `args`.
fn value_at(script: &str, at: &str, name: &str, env: &[(&str, &str)], args: Option<&[&str]>) -> Value {
    let parsed = crate::shell::parse(script);
    let inputs = Inputs {
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        env_complete: true,
        args: args.map(|a| a.iter().map(|s| s.to_string()).collect()),
    };
    let values = analyse(script, &parsed, &inputs, &TestFiles);
    let start = script.find(at).unwrap_or_else(|| panic!("`{at}` is not in the script"));
    let pipeline = parsed.pipelines.iter().find(|p| p.span.start == start).expect("a pipeline starts there");
    match name {
        "1" => match values.before(pipeline.span.start).expect("reached").positional() {
            Positionals::Known(lists) => Value::Known(lists.iter().map(|l| l.first().cloned()).collect()),
            Positionals::Unknown(why) => Value::Unknown(why.clone()),
        },
        _ => values.before(pipeline.span.start).expect("reached").get(name),
    }
}

/// `/data` holds `a.txt` and `b.txt`.
struct TestFiles;

impl World for TestFiles {
    fn glob(&self, word: &Word, _at: usize) -> Option<Vec<String>> {
        matches!(&*word.raw, "'/data'/*.txt" | "/data/*.txt")
            .then(|| vec!["/data/a.txt".to_string(), "/data/b.txt".to_string()])
    }

    fn list(&self, dir: &str, _at: usize) -> Option<Vec<String>> {
        (dir == "/data").then(|| vec!["a.txt".to_string(), "b.txt".to_string()])
    }

    /// As the shipped annotations say.
    fn prints_lines_of_input(&self, argv: &[String]) -> bool {
        static LIBRARY: std::sync::OnceLock<crate::library::Library> = std::sync::OnceLock::new();
        let library = LIBRARY.get_or_init(crate::library::Library::builtin);
        library.prints_lines_of_input(argv)
    }
}

fn known(values: &[&str]) -> Value {
    Value::Known(values.iter().map(|v| Some(v.to_string())).collect())
}

fn is_unknown(value: &Value) -> bool {
    matches!(value, Value::Unknown(_))
}

#[test]
fn assignments_follow_the_script_in_order() {
    let script = "A=/data\nB=\"$A/x\"\nC=${B%/x}.d\nD=${NOPE:-$A}/y\nE=${E:=dflt}\nF=$A$B\ncat $F\n";
    assert_eq!(value_at(script, "cat", "B", &[], None), known(&["/data/x"]));
    assert_eq!(value_at(script, "cat", "C", &[], None), known(&["/data.d"]));
    assert_eq!(value_at(script, "cat", "D", &[], None), known(&["/data/y"]));
    assert_eq!(value_at(script, "cat", "E", &[], None), known(&["dflt"]));
    assert_eq!(value_at(script, "cat", "F", &[], None), known(&["/data/data/x"]));
    let removal = "P=/a/b/c.tar.gz\nQ=${P##*/}\nR=${P%%.*}\nS=${P#/a}\nexport T=$Q\ncat x\n";
    assert_eq!(value_at(removal, "cat", "Q", &[], None), known(&["c.tar.gz"]));
    assert_eq!(value_at(removal, "cat", "R", &[], None), known(&["/a/b/c"]));
    assert_eq!(value_at(removal, "cat", "S", &[], None), known(&["/b/c.tar.gz"]));
    assert_eq!(value_at(removal, "cat", "T", &[], None), known(&["c.tar.gz"]));
}

#[test]
fn the_environment_and_the_arguments_are_inputs() {
    let script = "IN=${IN:-/default}\nOUT=${1:-/out}\ncat $IN > $OUT\n";
    assert_eq!(value_at(script, "cat", "IN", &[("IN", "/given")], Some(&[])), known(&["/given"]));
    assert_eq!(value_at(script, "cat", "IN", &[], Some(&[])), known(&["/default"]));
    assert_eq!(value_at(script, "cat", "OUT", &[], Some(&["/o"])), known(&["/o"]));
    assert_eq!(value_at(script, "cat", "OUT", &[], Some(&[])), known(&["/out"]));
    // Unknown arguments (an editor without a run configuration).
    assert!(is_unknown(&value_at(script, "cat", "OUT", &[], None)));
    // bash sets these itself.
    assert!(is_unknown(&value_at("cat x\n", "cat", "PWD", &[("PWD", "/x")], None)));
}

#[test]
fn branches_join_and_loops_settle() {
    let script = "X=a\nif test -f q; then X=b; elif test -f r; then X=c; fi\ncat $X\n";
    assert_eq!(value_at(script, "cat", "X", &[], None), known(&["a", "b", "c"]));
    let both = "if test -f q; then X=b; else X=c; fi\ncat $X\n";
    assert_eq!(value_at(both, "cat", "X", &[], None), known(&["b", "c"]));
    let and_or = "X=a\ntest -f q && X=b\ncat $X\n";
    assert_eq!(value_at(and_or, "cat", "X", &[], None), known(&["a", "b"]));
    // The second iteration reads what the first assigned.
    let looped = "X=a\nwhile test -f q; do\n  cat $X\n  X=b\ndone\nsort $X\n";
    assert_eq!(value_at(looped, "cat", "X", &[], None), known(&["a", "b"]));
    assert_eq!(value_at(looped, "sort", "X", &[], None), known(&["a", "b"]));
    // A value that grows at each iteration is given up on.
    let growing = "X=a\nwhile test -f q; do\n  X=$X/a\ndone\nsort $X\n";
    assert!(is_unknown(&value_at(growing, "sort", "X", &[], None)));
    // A break leaves with the values it sees.
    let broken = "for i in 1 2; do\n  X=a\n  break\n  X=b\ndone\nsort $X\n";
    assert_eq!(
        value_at(broken, "sort", "X", &[], None),
        Value::Known([None, Some("a".into()), Some("b".into())].into())
    );
}

#[test]
fn loop_variables_take_their_words() {
    let script = "for f in /data/*.txt; do\n  grep -c TODO \"$f\"\ndone\n";
    assert_eq!(value_at(script, "grep", "f", &[], None), known(&["/data/a.txt", "/data/b.txt"]));
    let listed = "D=/data\nfor f in a \"$D/b\" \"$@\"; do\n  grep x \"$f\"\ndone\n";
    assert_eq!(value_at(listed, "grep", "f", &[], Some(&["c", "d"])), known(&["/data/b", "a", "c", "d"]));
    let args = "for f; do\n  grep x \"$f\"\ndone\n";
    assert_eq!(value_at(args, "grep", "f", &[], Some(&["c", "d"])), known(&["c", "d"]));
    // A listing of a directory, filtered by commands that print some of its lines.
    let listed = "D=/data\nfor f in $(ls $D | head -n $N | xargs -I a basename a); do\n  grep x \"$f\"\ndone\n";
    assert_eq!(value_at(listed, "grep", "f", &[("N", "3")], None), known(&["a.txt", "b.txt"]));
    // What the filters print is what their annotations say (`output_lines_of_input`).
    let filtered = "for f in $(ls /data | sort -r | grep -v x | uniq -d | tail -n +1); do\n  grep x \"$f\"\ndone\n";
    assert_eq!(value_at(filtered, "grep x \"$f\"", "f", &[], None), known(&["a.txt", "b.txt"]));
    for other in [
        "$(ls /data | cut -c 1-2)",
        "$(ls -a /data)",
        "$(cat /data/list)",
        "$(ls /elsewhere)",
        "\"$(ls /data)\"",
        "$(ls /data | grep -n x)",
        "$(ls /data | grep -o x)",
        "$(ls /data | uniq -c)",
        "$(ls /data | head -c 3)",
        "$(ls /data | sort -o /data/sorted)",
        "$(ls /data | grep -f /data/patterns)",
        "$(ls /data | grep -A 1 x)",
    ] {
        let script = format!("for f in {other}; do\n  grep x \"$f\"\ndone\n");
        assert!(is_unknown(&value_at(&script, "grep x \"$f\"", "f", &[("N", "3")], None)), "{other}");
    }
}

#[test]
fn functions_get_their_callers_arguments() {
    let script = "count() {\n  grep -c x \"$1\"\n}\ncount /a\ncount /b\n";
    assert_eq!(value_at(script, "grep", "1", &[], Some(&[])), known(&["/a", "/b"]));
    // A call may assign what the function assigns.
    let assigns = "X=a\nset_x() { X=b; }\nset_x\ncat $X\n";
    assert!(is_unknown(&value_at(assigns, "cat", "X", &[], None)));
    // A function never called, or exported, runs with what posh does not know.
    let exported = "f() { grep x \"$1\"; }\nexport -f f\nf /a\n";
    assert!(is_unknown(&value_at(exported, "grep", "1", &[], Some(&[]))));
}

#[test]
fn a_call_assigns_what_its_function_may_assign_and_nothing_its_other_words_name() {
    let assigning = [
        "X=b",
        "local X=b",
        "declare -g X=b",
        "export X=b",
        "read -r X",
        "printf -v X %s b",
        "unset X",
        "let X=1",
        ": ${X:=b}",
        "for X in b; do :; done",
        "mapfile X < /dev/null",
        "getopts ab X",
        "command read X",
        "X[1]=b",
    ];
    for body in assigning {
        let script = format!("X=a\nf() {{ {body}; }}\nf\ncat $X\n");
        assert!(is_unknown(&value_at(&script, "cat $X", "X", &[], None)), "{body}");
    }
    // A pattern or a file name in the function's pipelines assigns nothing: a keystroke there
    // leaves what its calls assign, and the state of the script after them, as it was.
    let naming = "X=a\nf() { grep -c X /data/X | sort -k X; }\nf\ncat $X\n";
    assert_eq!(value_at(naming, "cat $X", "X", &[], None), known(&["a"]));
}

#[test]
fn what_posh_cannot_follow_is_unknown() {
    let cases = [
        ("X=$(ls)\ncat $X\n", "X"),
        ("X=a\nread X\ncat $X\n", "X"),
        ("X=a\n. ./lib.sh\ncat $X\n", "X"),
        // A command after a `source` may be a function it defined.
        ("X=a\n. ./lib.sh\nX=b\nmy_tool\ncat $X\n", "X"),
        ("X=a\neval \"X=b\"\ncat $X\n", "X"),
        ("X=a\n(( X = 2 ))\ncat $X\n", "X"),
        ("X=a\ntrap 'X=b' USR1\ncat $X\n", "X"),
        ("X=a\nY=(1 2)\ncat $Y\n", "Y"),
        ("X=a\ndeclare -i X=3\ncat $X\n", "X"),
    ];
    for (script, name) in cases {
        assert!(is_unknown(&value_at(script, "cat", name, &[], None)), "{script}");
    }
    // Nothing assigned in a subshell or a pipeline outlives it.
    let isolated = "X=a\n( X=b )\necho x | X=c\nX=d &\ncat $X\n";
    assert_eq!(value_at(isolated, "cat", "X", &[], None), known(&["a"]));
    // An assignment for one command lasts only for it.
    let one_command = "X=a\nX=b true\ncat $X\n";
    assert_eq!(value_at(one_command, "cat", "X", &[], None), known(&["a"]));
}

/// A word's expansions in a state with `IN=/data`, `S="a b"`, `E=` and two arguments.
fn expanded(raw: &str) -> Result<Vec<String>, String> {
    let inputs = Inputs {
        env: [("IN", "/data"), ("S", "a b"), ("E", "")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        env_complete: true,
        args: Some(vec!["x y".into(), "z".into()]),
    };
    let state = inputs.state();
    let found = expansions(&state, raw, Mode::Word, false)?;
    Ok(found.into_iter().flat_map(|e| e.words).map(|w| w.raw).collect())
}

#[test]
fn words_are_written_back_with_their_values_quoted() {
    assert_eq!(expanded("$IN/x"), Ok(vec!["'/data'/x".to_string()]));
    assert_eq!(expanded("\"$IN/a b\""), Ok(vec!["\"\"'/data'\"/a b\"".to_string()]));
    assert_eq!(expanded("${IN}/*.csv"), Ok(vec!["'/data'/*.csv".to_string()]));
    assert_eq!(expanded("\"$@\""), Ok(vec!["'x y'".to_string(), "'z'".to_string()]));
    assert_eq!(expanded("\"$S\""), Ok(vec!["\"\"'a b'\"\"".to_string()]));
    // An unquoted expansion of nothing is no word; a quoted one is an empty word.
    assert_eq!(expanded("$E"), Ok(vec![]));
    assert_eq!(expanded("\"$E\""), Ok(vec!["\"\"".to_string()]));
    // bash would split or glob these, or run something.
    assert!(expanded("$S").is_err());
    assert!(expanded("$1").is_err());
    assert!(expanded("$(cat f)").is_err());
    assert!(expanded("~/x").is_err());
    assert!(expanded("{a,b}$IN").is_err());
    assert!(expanded("$@").is_err());
    assert!(expanded("${IN/a/b}").is_err());
}

/// A join as it was before joins kept one side's map or values: a new map, every value joined.
fn reference_join(a: &State, b: &State) -> State {
    let names: BTreeSet<&Arc<str>> = a.vars.keys().chain(b.vars.keys()).collect();
    let vars = names
        .into_iter()
        .map(|name| {
            let mine = a.vars.get(name).map_or(&*a.others, |v| v.as_ref());
            let theirs = b.vars.get(name).map_or(&*b.others, |v| v.as_ref());
            (name.clone(), Arc::new(mine.join(theirs)))
        })
        .collect();
    State { vars, others: a.others.join(&b.others).into(), positional: a.positional.join(&b.positional).into() }
}

#[test]
fn joins_that_keep_a_side_equal_the_full_join() {
    // A small generator, so that the test is the same every run.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let value = |next: &mut dyn FnMut(u64) -> u64| match next(6) {
        0 => Value::Unknown(format!("why {}", next(2))),
        _ => Value::Known((0..next(6)).map(|_| (next(5) > 0).then(|| next(6).to_string())).collect()),
    };
    let mut states: Vec<State> = Vec::new();
    for _ in 0..60 {
        let vars = (0..next(6)).map(|_| (Arc::from(format!("v{}", next(5))), Arc::new(value(&mut next)))).collect();
        let positional = match next(4) {
            0 => Positionals::Unknown("args".to_string()),
            _ => Positionals::Known((0..next(3)).map(|_| vec![next(3).to_string()]).collect()),
        };
        states.push(State { vars, others: value(&mut next).into(), positional: positional.into() });
    }
    // Shared maps and values too, as the analysis makes them.
    for i in 0..60 {
        let mut shared = states[i].clone();
        if next(2) == 0 {
            let other = &states[next(60) as usize];
            if let Some((name, v)) = other.vars.iter().next() {
                shared.vars.insert(name.clone(), v.clone());
            }
        }
        states.push(shared);
    }
    let mut checked = 0;
    for a in &states {
        for b in &states {
            let joined = a.join(b);
            assert_eq!(joined, reference_join(a, b), "{a:?} joined with {b:?}");
            // Joined again with either side, as a loop's rounds do.
            assert_eq!(joined.join(a), reference_join(&joined, a));
            assert_eq!(b.join(&joined), reference_join(b, &joined));
            checked += 1;
        }
    }
    assert_eq!(checked, 120 * 120);
}

/// The analysis as it ran before it ran the top level once and kept its parts' runs: each round
/// of the functions' callers ran the whole script again, every call joined as it was made.
fn analyse_by_rounds(source: &str, script: &Script, inputs: &Inputs, glob: &dyn World) -> Values {
    let mut analysis = Analysis::new(source, script, glob);
    analysis.hidden_functions |= inputs.env.keys().any(|name| name.starts_with("BASH_FUNC_"));
    let initial = inputs.state();
    let mut entries: BTreeMap<String, State> = BTreeMap::new();
    for round in 0..=ROUNDS {
        analysis.at.clear();
        analysis.calls.clear();
        analysis.run(&script.flow, initial.clone());
        let names: Vec<String> = analysis.functions.keys().cloned().collect();
        for name in &names {
            let entry = analysis.entry(&entries, name, round);
            for body in analysis.functions[name].clone() {
                analysis.run(body, entry.clone());
            }
        }
        let mut calls = BTreeMap::new();
        replay(&mut calls, &analysis.calls);
        if calls == entries || round == ROUNDS {
            break;
        }
        entries = calls;
    }
    if let Some(why) = &analysis.gives_up {
        for state in analysis.at.values_mut() {
            *state = State::unknown(why);
        }
    }
    Values::from_map(std::mem::take(&mut analysis.at), analysis.globs_differ)
}

/// The scripts of the oracle suite and the examples, each whole.
fn corpus() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut texts = Vec::new();
    for dir in ["tests/oracle", "examples"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths.iter().filter(|p| p.extension().is_some_and(|x| x == "sh")) {
            texts.push(std::fs::read_to_string(path).unwrap());
        }
    }
    texts
}

#[test]
fn the_top_level_run_once_equals_a_run_per_round() {
    let texts = corpus();
    assert!(texts.len() > 50, "the oracle scripts are there");
    let given = Inputs {
        env: [("IN", "/data/a.txt"), ("OUT", "/data/o")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        env_complete: true,
        args: Some(vec!["/data/b.txt".to_string(), "x".to_string()]),
    };
    let all = texts.concat();
    for text in texts.iter().chain([&all]) {
        let script = crate::shell::parse_tolerant(text);
        for inputs in [&Inputs::unknown(), &given] {
            let (once, by_rounds) =
                (analyse(text, &script, inputs, &TestFiles), analyse_by_rounds(text, &script, inputs, &TestFiles));
            assert_eq!(once, by_rounds);
            // Looked up where they are held (a run, or the map of bodies' states) as in one map.
            for pipeline in &script.pipelines {
                assert_eq!(once.before(pipeline.span.start), by_rounds.before(pipeline.span.start));
            }
        }
    }
}

#[test]
fn arithmetic_names_are_found_as_the_text_s_matches_are() {
    let reference = |source: &str| {
        let mut names = BTreeSet::new();
        for (at, _) in source.match_indices("((") {
            let rest = &source[at + 2..];
            names.extend(identifiers(&rest[..rest.find("))").unwrap_or(rest.len())]));
        }
        for (at, _) in source.match_indices("$[") {
            let rest = &source[at + 2..];
            names.extend(identifiers(&rest[..rest.find(']').unwrap_or(rest.len())]));
        }
        names
    };
    let tricky = ["(()", "((( a ))) b", "((x)) (( y", "$[$[ z ] w", "(( a ))((b)) c", "é((ü x))", "$[", "(("];
    for text in corpus().iter().map(String::as_str).chain(tricky) {
        assert_eq!(arithmetic_names(text), reference(text), "{text}");
    }
}

/// A script may change how bash matches globs by any of the options' names, anywhere in its
/// text, or by `set -f`; one that names none of them does not.
#[test]
fn globs_differ_where_a_glob_option_is_named_or_set_f_runs() {
    let differ = |script: &str| globs_differ(script, &crate::shell::parse(script));
    for option in ["nullglob", "failglob", "dotglob", "nocaseglob", "globstar", "extglob", "GLOBIGNORE", "noglob"] {
        assert!(differ(&format!("cat /data/*.txt\necho '{option}'\n")), "{option}");
    }
    assert!(differ("set -euf\ncat /data/*.txt\n"));
    assert!(!differ("set -eu\ncat /data/*.txt | grep glob_ish GLOBAL\n"));
}
