//! The protocol-free features, on plain text and byte offsets: hints are shown written into the
//! script (`‹@logs›`), so each snapshot reads like the script a user sees.

mod common;

use std::path::Path;

use common::{file_system, world};
use posh_core::Span;
use posh_core::shell::Recovery;
use posh_lsp::check::render;
use posh_lsp::ide::{self, Language, Settings, Shift, UserDirs, World};

/// Each script with its hints written in, then its lenses and diagnostics.
fn annotate(script: &str) -> String {
    let fs = file_system();
    let world = world(&fs);
    assert_eq!(world.config_error, None);
    let analysis = ide::analyze_script(&world, &fs, script);
    let hints = ide::inlay_hints::inlay_hints(&world, script, &analysis, None);
    for hint in &hints {
        assert!(hint.label().chars().count() < 40, "{:?} is long", hint.label());
    }
    let mut out = ide::inlay_hints::render(script, &hints);
    for lens in ide::code_lens::code_lenses(&analysis) {
        out.push_str(&format!("lens {:?}: {}\n", lens.span.text(script), lens.title));
    }
    for diag in ide::diagnostics::script_diagnostics(&world, &analysis) {
        out.push_str(&render(Path::new("s.sh"), script, &diag));
    }
    out
}

#[test]
fn hints_where_the_machine_changes_and_bytes_cross() {
    insta::assert_snapshot!(annotate(concat!(
        "#!/bin/bash\n",
        "# Strahlen zählen 🎉\n",
        "cat /mnt/logs/ray*.log | grep 'rays traced' | cut -d ' ' -f 4 | sort -n | uniq -c > /proj/top.txt\n",
        "grep -c ERROR /mnt/logs/ray0.log /mnt/a/big.txt\n",
        "csvstat /mnt/a/t.csv | head -n 3\n",
        "cat /mnt/logs/ray0.log /mnt/a/big.txt | grep -v x | sort > /proj/sorted.txt\n",
        "sort /proj/notes.txt | uniq\n",
        "for f in /mnt/logs/*.log; do wc -l \"$f\"; done\n",
    )));
}

#[test]
fn diagnostics_only_for_what_can_be_acted_on() {
    insta::assert_snapshot!(annotate(concat!(
        "mytool /mnt/logs/ray1.log | sort | head\n",
        "grep --no-such-option x /mnt/logs/ray2.log | wc -l\n",
        "cat /mnt/a/big.txt | sort\n",
        "mytool /proj/notes.txt | sort\n",
        "echo hello | mytool\n",
    )));
}

/// A command without annotation amid a pipeline whose other commands go to the runtime (bash
/// keeps it, in part) gets `S001` as in a pipeline that stays whole, a function there does not;
/// a command reading files of two mounts, which runs at the client, shows that it does, why
/// (the hint's tooltip) and what crosses.
#[test]
fn commands_kept_in_part_and_commands_over_two_mounts_say_so() {
    insta::assert_snapshot!(annotate(concat!(
        "cat /mnt/logs/ray0.log | grep x | mytool | sort | head\n",
        "grep -c error /mnt/logs/ray1.log /mnt/a/t.csv\n",
        "f() { sort; }\n",
        "cat /mnt/logs/ray2.log | f\n",
    )));
    let fs = file_system();
    let world = world(&fs);
    let script = "grep -c error /mnt/logs/ray1.log /mnt/a/t.csv\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    let hints = ide::inlay_hints::inlay_hints(&world, script, &analysis, None);
    assert!(hints[0].tooltip.starts_with("reads files on several mounts"), "{hints:?}");
}

#[test]
fn nothing_mounted_no_hints() {
    let fs = posh_core::fs::MemoryFileSystem::new();
    let world = ide::World::new("/proj");
    let script = "cat a.txt | sort | uniq -c\nmytool x | y\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    assert_eq!(ide::inlay_hints::inlay_hints(&world, script, &analysis, None), vec![]);
    assert_eq!(ide::diagnostics::script_diagnostics(&world, &analysis), vec![]);
    assert_eq!(ide::code_lens::code_lenses(&analysis), vec![]);
}

#[test]
fn hint_parts_link_to_the_mount_and_the_annotation_entry() {
    let fs = file_system();
    let world = world(&fs);
    let script = "csvstat /mnt/a/t.csv | sort\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    let hints = ide::inlay_hints::inlay_hints(&world, script, &analysis, None);
    let parts: Vec<String> = hints
        .iter()
        .flat_map(|h| &h.parts)
        .map(|p| {
            let target = p.target.as_ref().map(|t| format!(" -> {}:{:?}", t.path.display(), t.span.text(&t.text)));
            format!("{:?}{} ({})", p.text, target.unwrap_or_default(), p.tooltip.clone().unwrap_or_default())
        })
        .collect();
    insta::assert_snapshot!(parts.join("\n"));
}

#[test]
fn hover_on_a_command() {
    let fs = file_system();
    let world = world(&fs);
    let script = "cat /mnt/logs/ray*.log | grep -v 'rays traced' | sort\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    let at = script.find("grep").unwrap() + 2;
    let hover = ide::hover::script_hover(&world, &analysis, at).expect("a hover on grep");
    assert_eq!(hover.span.text(script), "grep -v 'rays traced'");
    insta::assert_snapshot!(hover.markdown);
    assert_eq!(ide::hover::script_hover(&world, &analysis, script.len()), None);
    // Inside a substitution, the inner command.
    let script = "echo \"$(grep -c x /mnt/logs/ray0.log)\"\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    let hover = ide::hover::script_hover(&world, &analysis, script.find("-c").unwrap()).expect("a hover");
    assert_eq!(hover.span.text(script), "grep -c x /mnt/logs/ray0.log");
}

#[test]
fn hover_says_why_names_read_from_input_keep_a_command_at_the_client() {
    let fs = file_system();
    let world = world(&fs);
    let script = "cat /mnt/logs/ray0.log | xargs grep x\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    let hover = ide::hover::script_hover(&world, &analysis, script.find("xargs").unwrap()).expect("a hover on xargs");
    assert_eq!(hover.span.text(script), "xargs grep x");
    let reason = "Runs at **@client**: opens files named in standard input, names posh cannot see, so it runs at the \
                  client, where they mean what they mean under bash.";
    assert!(hover.markdown.contains(reason), "{}", hover.markdown);
}

#[test]
fn a_broken_edit_keeps_the_last_good_plan_shifted() {
    let fs = file_system();
    let world = world(&fs);
    let good = "cat /mnt/logs/ray0.log | sort\ncat /mnt/a/big.txt | grep x | sort\n";
    // Typing an `if` at the top: no closer makes it parse, so only the prefix (nothing) plans.
    let typing = format!("if [[ x ]] then )\n{good}");
    let broken = ide::analyze_script(&world, &fs, &typing);
    assert!(!broken.is_good());
    assert!(broken.plan.pipelines.is_empty());
    let previous = ide::analyze_script(&world, &fs, good);
    assert!(previous.is_good());
    let shift = Shift::between(good, &typing);
    let hints = ide::inlay_hints::inlay_hints(&world, good, &previous, None);
    let moved: Vec<(usize, String)> = hints.iter().filter_map(|h| Some((shift.offset(h.offset)?, h.label()))).collect();
    assert_eq!(moved.len(), hints.len());
    let shown = ide::inlay_hints::render(
        &typing,
        &moved
            .iter()
            .map(|(offset, label)| ide::inlay_hints::InlayHint {
                offset: *offset,
                kind: ide::inlay_hints::HintKind::Bytes,
                parts: vec![ide::inlay_hints::LabelPart { text: label.clone(), tooltip: None, target: None }],
                tooltip: String::new(),
            })
            .collect::<Vec<_>>(),
    );
    insta::assert_snapshot!(shown);
    // An unclosed loop parses with a closer: its own analysis is good.
    let open_loop = "for f in a b; do\n  cat /mnt/logs/ray0.log | sort\n";
    assert!(ide::analyze_script(&world, &fs, open_loop).is_good());
}

#[test]
fn shift_maps_offsets_around_an_edit() {
    let shift = Shift::between("abc|def", "abXXc|def");
    assert_eq!(shift.offset(1), Some(1));
    assert_eq!(shift.offset(2), Some(2));
    assert_eq!(shift.offset(3), Some(5));
    assert_eq!(shift.offset(7), Some(9));
    assert_eq!(shift.span(Span::new(4, 7)), Some(Span::new(6, 9)));
    // Multi-byte characters are never cut.
    let shift = Shift::between("é|x", "è|x");
    assert_eq!(shift.offset(0), Some(0));
    assert_eq!(shift.offset(1), None);
    assert_eq!(shift.offset(2), Some(2));
}

#[test]
fn languages_by_id_name_and_shebang() {
    assert_eq!(ide::language_of("shellscript", "/x/a", ""), Some(Language::Script));
    assert_eq!(ide::language_of("sh", "/x/a", ""), Some(Language::Script));
    assert_eq!(ide::language_of("bash", "/x/a", ""), Some(Language::Script));
    assert_eq!(ide::language_of("posh", "/x/a", ""), Some(Language::Annotation));
    assert_eq!(ide::language_of("", "/x/a.posh", ""), Some(Language::Annotation));
    assert_eq!(ide::language_of("plaintext", "/x/run", "#!/usr/bin/env bash\n"), Some(Language::Script));
    assert_eq!(ide::language_of("plaintext", "/x/run", "#!/bin/sh -e\n"), Some(Language::Script));
    assert_eq!(ide::language_of("python", "/x/run", "#!/usr/bin/env python3\n"), None);
    assert_eq!(ide::language_of("plaintext", "/x/notes", "hello\n"), None);
}

#[test]
fn cached_plans_equal_fresh_ones_after_edits() {
    let fs = file_system();
    let world = world(&fs);
    let mut cache = ide::AnalysisCache::default();
    // Six different blocks of nine lines: each ends in a blank line, where chunks may be cut.
    // (One pipeline of each bash keeps in part: its handed part moves with it.)
    let before: String = (0..6)
        .map(|i| format!("f() {{ sort \"$1\"; }}\ncat /mnt/logs/ray{i}.log | grep x | sort\ncat <<EOF | grep a\nabc\nEOF\nf /mnt/a/big.txt\ncat /mnt/logs/ray{i}.log | grep y | f\necho 2\n\n"))
        .collect();
    ide::analyze_script_cached(&world, &fs, &before, &mut cache);
    let edits = [
        // A line inserted above: every pipeline moves.
        format!("echo é🎉\n{before}"),
        // A here-document's body changes, its pipeline's text does not.
        before.replacen("abc", "abcdefgh", 1),
        // A pipeline added at the end.
        format!("{before}cat /mnt/logs/ray0.log | grep x | sort\n"),
        // A function appears whose name a pipeline uses: every plan may change.
        format!("grep() {{ :; }}\n{before}"),
        // A `cd` above: every later pipeline starts elsewhere, though no chunk's text changed.
        format!("cd \"$1\"\n{before}"),
        // The text again, then `set -v` at its end: every pipeline stays with bash, though the
        // chunks above it did not change.
        before.clone(),
        format!("{before}set -v\n"),
    ];
    let mut reused = Vec::new();
    for text in &edits {
        let cached = ide::analyze_script_cached(&world, &fs, text, &mut cache);
        let fresh = ide::analyze_script(&world, &fs, text);
        assert_eq!(cached.plan.to_plan(), fresh.plan.to_plan(), "{text}");
        // And both are the plan `posh-exec --explain` makes of the whole text, given what the
        // editor knows of the run (no `[[run]]` here: nothing).
        let ctx = plan_context(&world, &fs);
        let inputs = ide::inputs_of(&world, None);
        let whole = posh_core::planner::plan_script_given(&ctx, text, &posh_core::shell::parse_tolerant(text), &inputs);
        assert_eq!(cached.plan.to_plan(), whole, "{text}");
        // Hover finds the last pipeline's commands where they are now.
        let grep = text.rfind("| grep").unwrap() + 2;
        let hover = ide::hover::script_hover(&world, &cached, grep + 1).unwrap();
        assert_eq!((hover.span.start, &text[hover.span.range()][..4]), (grep, "grep"));
        reused.push(cache.reused());
    }
    // Of 30 pipelines (31 with the new ones), the chunks an edit did not touch were reused.
    assert!(reused[0] >= 20 && reused[1] >= 20 && reused[2] >= 20, "{reused:?}");
    assert_eq!(reused[3], 0);
    assert_eq!(reused[4], 0);
    assert_eq!(reused[6], 0);
}

/// The oracle suite's scripts (every shell construct the runtime is checked on), one after the
/// other, then edited one character at a time: the chunked, cached parse always equals brush's
/// parse of the whole text.
#[test]
fn chunked_parsing_equals_whole_parsing_on_the_oracle_scripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/oracle");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let mut source = String::new();
    // All but the cases posh's parser does not read whole (a syntax error, or bash that
    // brush-parser lacks: `select`, `f() [[ ... ]]`), which the run leaves to bash.
    for path in names.iter().filter(|p| p.extension().is_some_and(|x| x == "sh")) {
        let text = std::fs::read_to_string(path).unwrap();
        if posh_core::shell::parse(&text).errors.is_empty() {
            source.push_str(&text);
            source.push('\n');
        }
    }
    assert!(source.lines().count() > 500, "the oracle scripts are there");
    let mut cache = ide::chunks::ChunkCache::default();
    let whole = posh_core::shell::parse_tolerant_with_recovery(&source);
    assert_eq!(whole.0.errors, vec![]);
    assert_eq!(ide::chunks::parse(&source, &mut cache), whole);
    let mut reused = 0;
    for (n, at) in (0..source.len()).step_by(source.len() / 97).enumerate() {
        let at = (at..source.len()).find(|&i| source.is_char_boundary(i)).unwrap();
        let mut edited = source.clone();
        edited.insert(at, [' ', 'x', ';', '\n', '"', '|'][n % 6]);
        let mut warm = cache.clone();
        let (chunked, how) = ide::chunks::parse(&edited, &mut warm);
        let whole = posh_core::shell::parse(&edited);
        if whole.errors.is_empty() {
            assert_eq!((&chunked, how), (&whole, Recovery::None), "edit at {at}");
        } else if chunked.left_to_bash.is_empty() {
            // Broken by the edit: never silently. Recovered with a closer or a prefix, or whole
            // but for a substitution that does not parse (`Recovery::None`, as for the whole text).
            assert!(!chunked.errors.is_empty(), "edit at {at}");
            if how == Recovery::None {
                assert_eq!(chunked.errors, whole.errors, "edit at {at}");
            }
        }
        // Otherwise bash reads what posh's parser does not: those statements are bash's (S004).
        reused += warm.reused();
    }
    assert!(reused > 1_000, "chunks were reused: {reused}");
}

/// What posh-core plans with in `world` on `fs`, as the editor's analysis makes it.
fn plan_context<'a>(world: &'a World, fs: &'a dyn posh_core::fs::FileSystem) -> posh_core::planner::PlanContext<'a> {
    posh_core::planner::PlanContext {
        library: &world.library,
        config: &world.config,
        fs,
        cwd: world.root.clone(),
        options: world.settings.plan.clone(),
        ratios: &world.ratios,
    }
}

/// Lines that change what the whole script's rules read in its text (`rewrite::TextFacts`).
const FACT_LINES: [&str; 6] = [
    "trap 'rm -f /proj/o.txt' ERR\n",
    "jobs\n",
    "declare -f f\n",
    "diff <(sort /proj/l.txt) /proj/o.txt; wait\n",
    "set -vx\n",
    "echo \"$_\"\n",
];

/// The value analysis an editor keeps chunk by chunk (`values::analyse_cached`) equals the
/// analysis of the whole script, over a sequence of edits of the oracle scripts and of a varied
/// script: characters typed anywhere, and lines that change what later chunks start from
/// (assignments, `cd`, function definitions and calls, loops over globs, `readonly`,
/// arithmetic, options), or lines deleted. And what of the text the whole script's rules read,
/// joined from the chunks' (`rewrite::TextFacts`), equals the whole text's.
#[test]
fn cached_values_equal_fresh_ones_under_edits() {
    let fs = file_system();
    let world = world(&fs);
    let ctx = plan_context(&world, &fs);
    let given = posh_core::values::Inputs {
        env: [("IN", "/mnt/logs/ray1.log"), ("MODE", "a")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        env_complete: false,
        args: Some(vec!["/mnt/a/big.txt".to_string()]),
    };
    let mut next = common::random_below(0x9e37_79b9_7f4a_7c15);
    let lines = [
        "X=/mnt/logs/ray1.log\n",
        "X=${X:-/mnt/a}/t.csv\n",
        "cd /mnt/logs\n",
        "cd \"$1\"\n",
        "cat \"$X\" | sort\n",
        "f() { cat \"$1\" | grep -v DEBUG; }\n",
        "f \"$X\" > /proj/o.txt\n",
        "f /mnt/logs/ray2.log\n",
        "count_rays1() { wc -l \"$1\"; }\n",
        "for f in /mnt/logs/*.log; do cat \"$f\" | wc -l; done\n",
        "for f in *.log; do X=$f; done\n",
        "readonly X\n",
        "(( X++ ))\n",
        "shopt -s lastpipe\n",
        "set -- /mnt/a/big.txt\n",
        "while read -r line; do Y=$line; done < /proj/l.txt\n",
        "export -f f\n",
        // What the whole script's rules read in its text (`rewrite::TextFacts`, kept per chunk).
        FACT_LINES[0],
        FACT_LINES[1],
        FACT_LINES[2],
        FACT_LINES[3],
        FACT_LINES[4],
        FACT_LINES[5],
        "\n",
    ];
    let mut sources = vec![common::varied_script(600, 3)];
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/oracle");
    let mut names: Vec<_> = std::fs::read_dir(&oracle).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let texts = names.iter().filter(|p| p.extension().is_some_and(|x| x == "sh")).map(std::fs::read_to_string);
    // As in the chunked parse's test: those posh's parser reads whole.
    sources.push(texts.map(Result::unwrap).filter(|t| posh_core::shell::parse(t).errors.is_empty()).collect());
    let (mut reused, mut ran, mut compared) = (0, 0, 0);
    for source in sources {
        let mut chunks = ide::chunks::ChunkCache::default();
        let mut cache = posh_core::values::ValuesCache::default();
        let mut text = source.clone();
        for edit in 0..80 {
            let (script, _) = ide::chunks::parse(&text, &mut chunks);
            let segments = chunks.segments();
            let scope = posh_core::planner::ScriptScope::new(&text, &script, &world.library);
            if let Some(facts) = chunks.facts() {
                assert_eq!(facts, posh_core::rewrite::TextFacts::of(&text), "edit {edit}:\n{text}");
            }
            let inputs = if edit >= 60 { given.clone() } else { posh_core::values::Inputs::unknown() };
            let cached =
                posh_core::planner::values_of_cached(&ctx, &text, &script, &scope, &inputs, &segments, &mut cache);
            let fresh = posh_core::planner::values_of(&ctx, &text, &script, &scope, &inputs);
            assert!(cached == fresh, "edit {edit}:\n{text}");
            // Each state found among the chunks' runs as in the whole text's one run.
            for pipeline in &script.pipelines {
                let start = pipeline.span.start;
                assert!(cached.before(start) == fresh.before(start), "edit {edit}, at {start}:\n{text}");
            }
            if segments.is_empty() {
                // Broken past what a chunk's closer repairs: parsed whole. The edits go on from
                // the original text.
                text = source.clone();
            } else {
                compared += 1;
                reused += cache.counts().0;
                ran += cache.counts().1;
            }
            // The next edit, at a random place.
            let starts: Vec<usize> = std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .filter(|&i| i < text.len())
                .collect();
            let line = starts[next(starts.len())];
            match next(5) {
                0 => {
                    let at = (next(text.len())..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                    text.insert(at, ['x', ' ', '1', '$', '/'][next(5)]);
                }
                1 => {
                    let end = text[line..].find('\n').map_or(text.len(), |e| line + e + 1);
                    text.replace_range(line..end, "");
                }
                _ => text.insert_str(line, lines[next(lines.len())]),
            }
        }
    }
    assert!(compared > 100, "{compared}");
    // Each of those lines in a chunk in the middle of a varied script, then the text as it was.
    let source = common::varied_script(600, 4);
    let mut chunks = ide::chunks::ChunkCache::default();
    for (n, line) in FACT_LINES.iter().enumerate() {
        let at = source.match_indices('\n').nth(100 + 40 * n).unwrap().0 + 1;
        for text in [format!("{}{line}{}", &source[..at], &source[at..]), source.clone()] {
            ide::chunks::parse(&text, &mut chunks);
            let fresh = posh_core::rewrite::TextFacts::of(&text);
            assert_eq!(chunks.facts().as_ref(), Some(&fresh), "{line}");
            assert_eq!(text == source, fresh == posh_core::rewrite::TextFacts::of(&source), "{line}");
        }
    }
    // Most edits change what the chunks after them start from, or what the whole script's
    // analysis reads (a function defined, a name made read-only): a third of the runs are made.
    assert!(reused > 2 * ran, "runs taken from the cache: {reused}, made: {ran}");
}

/// What posh-exec runs measured (the user's state directory) is what the hover predicts with,
/// and says so; a broken file plans as if nothing were measured.
#[test]
fn the_hover_predicts_with_what_runs_measured() {
    let mut fs = file_system();
    let ratios = "{\"shapes\": {\"grep -v 'rays traced'\": {\"ratio\": 0.25, \"runs\": 4, \"last_run\": 1}}}";
    fs.add_text("/home/u/.local/state/posh/ratios.json", ratios);
    let dirs = ide::UserDirs { config: None, state: Some(Path::new("/home/u/.local/state")) };
    let world = ide::World::load(&fs, Path::new("/proj"), dirs, &[], ide::Settings::default());
    let script = "cat /mnt/logs/ray*.log | grep -v 'rays traced' | sort\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    let hover = ide::hover::script_hover(&world, &analysis, script.find("grep").unwrap()).expect("a hover on grep");
    assert!(hover.markdown.contains("Output: 25% of its input, measured over 4 runs."), "{}", hover.markdown);
    fs.add_text("/home/u/.local/state/posh/ratios.json", "{");
    let world = ide::World::load(&fs, Path::new("/proj"), dirs, &[], ide::Settings::default());
    let analysis = ide::analyze_script(&world, &fs, script);
    let hover = ide::hover::script_hover(&world, &analysis, script.find("grep").unwrap()).expect("a hover on grep");
    assert!(hover.markdown.contains("Output: 50% of its input, assumed"), "{}", hover.markdown);
}

#[test]
fn the_user_s_annotations_load_and_the_workspace_s_win() {
    let mut fs = file_system();
    let mine = "mytool:\n- PARAMS:\n  - type:str, size:list\n";
    fs.add_text("/home/u/.config/posh/annotations/mine.posh", mine);
    fs.add_text(
        "/home/u/.config/posh/annotations/more.posh",
        "wc2[filters_input]:\n- PARAMS:\n  - type:input_file, size:list\n",
    );
    fs.add_text("/proj/.posh/project.posh", "mytool[filters_input]:\n- PARAMS:\n  - type:input_file, size:list\n");
    let world = ide::World::load(
        &fs,
        Path::new("/proj"),
        ide::UserDirs { config: Some(Path::new("/home/u/.config")), state: None },
        &[],
        ide::Settings::default(),
    );
    let script = "mytool /mnt/logs/ray1.log | sort\nwc2 /mnt/a/big.txt\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    // The project's entry (an input file) replaced the user's (a string), so mytool is placed
    // at its data; the user's other file still counts.
    let hints = ide::inlay_hints::inlay_hints(&world, script, &analysis, None);
    assert_eq!(
        ide::inlay_hints::render(script, &hints),
        "‹on logs›mytool /mnt/logs/ray1.log | sort‹moves ~250 MB›\n‹on a›wc2 /mnt/a/big.txt‹moves ~450 MB›\n"
    );
    assert_eq!(
        ide::diagnostics::script_diagnostics(&world, &analysis)
            .iter()
            .filter(|d| d.code != posh_core::Code::ScriptMovesMuch)
            .count(),
        0
    );
    let targets: Vec<String> = hints
        .iter()
        .flat_map(|h| &h.parts)
        .filter_map(|p| p.target.as_ref())
        .map(|t| t.path.display().to_string())
        .collect();
    assert!(targets.contains(&"/proj/.posh/project.posh".to_string()), "{targets:?}");
    assert!(targets.contains(&"/home/u/.config/posh/annotations/more.posh".to_string()), "{targets:?}");
}

#[test]
fn splits_show_their_copies_as_posh_exec_will_run_them() {
    let fs = file_system();
    let mut world = world(&fs);
    world.settings.update(&serde_json::json!({"posh": {"copiesPerMount": 5}}));
    let script = "cat /mnt/logs/ray*.log | grep -v DEBUG | wc -l\n";
    let analysis = ide::analyze_script(&world, &fs, script);
    let hints = ide::inlay_hints::inlay_hints(&world, script, &analysis, None);
    insta::assert_snapshot!(ide::inlay_hints::render(script, &hints), @"‹on logs ×5›cat /mnt/logs/ray*.log | grep -v DEBUG | wc -l‹moves 320 B›");
    world.settings.update(&serde_json::json!({"placement": "greedy", "copiesPerMount": 1}));
    let analysis = ide::analyze_script(&world, &fs, script);
    assert_eq!(analysis.plan.strategy, posh_core::planner::Strategy::Greedy);
}

/// posh.toml's `[[run]]` gives a script its arguments and environment: its words are planned
/// with them, the hover says which values, and a word still unknown says how to declare it.
#[test]
fn a_run_configuration_gives_the_values_the_editor_plans_with() {
    let mut fs = file_system();
    let config = format!(
        "{}\n[[run]]\nscript = \"jobs/count.sh\"\nargs = [\"/mnt/a/big.txt\"]\nenv = {{ LOGS = \"/mnt/logs\" }}\n",
        common::CONFIG
    );
    fs.add_text("/proj/posh.toml", &config);
    let world = world(&fs);
    assert_eq!(world.config_error, None);
    let script = "grep -c x \"$1\"\nfor f in \"$LOGS\"/ray*.log; do\n  wc -l \"$f\"\ndone\nsort \"$OUT\"\n";
    let path = Path::new("/proj/jobs/count.sh");
    let mut cache = ide::AnalysisCache::default();
    let analysis = ide::analyze_script_at(&world, &fs, Some(path), script, &mut cache);
    let hover = |at: &str| {
        let offset = script.find(at).unwrap();
        ide::hover::script_hover(&world, &analysis, offset).expect("a hover").markdown
    };
    let grep = hover("grep");
    assert!(grep.contains("Runs at **@a**"), "{grep}");
    assert!(grep.contains("Value: the arguments (`$@`) are /mnt/a/big.txt, at a."), "{grep}");
    let wc = hover("wc");
    assert!(wc.contains("Runs at **@logs**"), "{wc}");
    assert!(
        wc.contains("Value: `$f`: 5 values (/mnt/logs/ray0.log, /mnt/logs/ray1.log, /mnt/logs/ray2.log, …), at logs."),
        "{wc}"
    );
    let sort = hover("sort");
    assert!(sort.contains("Not known before the run: `$OUT`"), "{sort}");
    assert!(sort.contains("`env = { OUT = \"...\" }`"), "{sort}");
    // Another script gets no run's values; an edit elsewhere keeps them.
    let elsewhere = ide::analyze_script_at(&world, &fs, Some(Path::new("/proj/other.sh")), script, &mut cache);
    let offset = script.find("grep").unwrap();
    let grep = ide::hover::script_hover(&world, &elsewhere, offset).expect("a hover").markdown;
    assert!(grep.contains("Not known before the run: `$@`"), "{grep}");
    assert!(grep.contains("`args = [\"...\"]`"), "{grep}");
}

/// The benchmarks' varied scripts are valid shell, vary (few chunks alike), and parse chunk by
/// chunk as they parse whole, also edited.
#[test]
fn varied_scripts_parse_and_their_chunks_differ() {
    let source = common::varied_script(5_000, 1);
    assert!(source.lines().count() >= 5_000);
    let whole = posh_core::shell::parse_tolerant_with_recovery(&source);
    assert_eq!(whole.0.errors, vec![]);
    let bash = posh_core::shell::BashSyntax::from(posh_cli::bash_syntax::check(&source));
    assert_eq!(bash, posh_core::shell::BashSyntax::Accepted, "bash -n");
    let mut cache = ide::chunks::ChunkCache::default();
    assert_eq!(ide::chunks::parse(&source, &mut cache), whole);
    // Parsed again, every chunk comes from the cache; a script of one block repeated would have
    // had most of them there the first time.
    let again = ide::chunks::parse(&source, &mut cache);
    assert_eq!(again, whole);
    let chunks = cache.reused();
    let mut fresh = ide::chunks::ChunkCache::default();
    let other = common::varied_script(5_000, 2);
    ide::chunks::parse(&other, &mut fresh);
    ide::chunks::parse(&source, &mut fresh);
    assert!(fresh.reused() * 20 < chunks, "{} of {chunks} chunks alike", fresh.reused());
    assert_ne!(source, other);
    let edited = source.replacen("grep -v DEBUG", "grep -v DEBUGx", 40);
    assert_eq!(ide::chunks::parse(&edited, &mut cache).0, posh_core::shell::parse(&edited));
}

/// A word posh does not know, on which a command's place depends, says so where it stands and
/// how to declare it; the editor's `posh.run` setting declares it as posh.toml's `[[run]]` does
/// (before posh.toml's), and a setting that cannot be used is said, naming it.
#[test]
fn an_unknown_word_says_how_to_declare_it_and_the_editor_settings_can() {
    let fs = file_system();
    let script = "grep -c x \"$1\" | sort\necho \"$1\"\nexit \"$1\"\n";
    let path = Path::new("/proj/jobs/count.sh");
    let hints_with = |settings: Settings| {
        let world = World::load(&fs, Path::new("/proj"), UserDirs::default(), &[], settings);
        let analysis = ide::analyze_script_at(&world, &fs, Some(path), script, &mut ide::AnalysisCache::default());
        let hints = ide::inlay_hints::inlay_hints(&world, script, &analysis, None);
        (ide::inlay_hints::render(script, &hints), hints)
    };
    let (rendered, hints) = hints_with(Settings::default());
    assert_eq!(rendered, "grep -c x \"$1\"‹placed when run: $@ unknown› | sort\necho \"$1\"\nexit \"$1\"\n");
    let unknown = hints.iter().find(|h| h.kind == ide::inlay_hints::HintKind::Unknown).expect("the hint");
    assert!(unknown.tooltip.contains("`args = [\"...\"]`"), "{}", unknown.tooltip);
    assert!(unknown.tooltip.contains("`posh.run` setting"), "{}", unknown.tooltip);

    let mut settings = Settings::default();
    settings.update(&serde_json::json!({
        "posh": { "run": [{ "script": "jobs/count.sh", "args": ["/mnt/a/big.txt"], "env": { "LOGS": "/mnt/logs" } }] }
    }));
    assert_eq!(settings.problems, Vec::<String>::new());
    let (rendered, _) = hints_with(settings.clone());
    assert!(rendered.starts_with("‹on a›grep -c x \"$1\""), "{rendered}");
    assert!(!rendered.contains("unknown"), "{rendered}");

    // A broken setting is said and keeps the runs there were.
    settings.update(&serde_json::json!({ "run": [{ "script": "jobs/count.sh", "args": "/mnt/a/big.txt" }] }));
    assert_eq!(settings.problems, vec!["the setting posh.run[0].args: a list of strings is expected".to_string()]);
    assert_eq!(settings.runs.len(), 1);
    settings.update(&serde_json::json!({ "run": "jobs/count.sh" }));
    assert_eq!(settings.problems, vec!["the setting posh.run: a list of {script, args, env} is expected".to_string()]);
}

/// bash's verdict on a text asked group by group of chunks, the groups' verdicts kept by their
/// text (`bash_groups`), equals `bash -n` on the whole text, over random edits of a varied script
/// and the oracle scripts: characters typed anywhere (a quote, a bracket, a backslash), lines
/// bash rejects and posh's parser reads (`[[ a` then `]]` on the next line), and lines typed at
/// a group's end, where the next group starts.
#[test]
fn bash_verdicts_by_group_equal_the_whole_ones_under_edits() {
    let mut next = common::random_below(0x2545_f491_4f6c_dd1d);
    let typed = ["x", " ", "\"", "(", ")", "\\", "|", ";", "$(", "}", "`", "'"];
    let lines = ["[[ a\n]]\n", "echo a \\\n", "cat <<E\n", "case x in\n", "esac\n", "fi\n", "done\n", "echo ok\n"];
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/oracle");
    let mut names: Vec<_> = std::fs::read_dir(&oracle).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let texts = names.iter().filter(|p| p.extension().is_some_and(|x| x == "sh")).map(std::fs::read_to_string);
    let oracle: String = texts.map(Result::unwrap).filter(|t| posh_core::shell::parse(t).errors.is_empty()).collect();
    let (mut rejected, mut accepted, mut kept) = (0, 0, 0);
    for source in [common::varied_script(2_000, 5), oracle] {
        let mut chunks = ide::chunks::ChunkCache::default();
        let mut verdicts = ide::bash_groups::BashVerdicts::default();
        let mut text = source.clone();
        for edit in 0..60 {
            ide::chunks::parse(&text, &mut chunks);
            let starts = chunks.starts();
            if starts.is_empty() {
                // Parsed whole: the analysis asks bash about the whole text.
                text = source.clone();
                continue;
            }
            let groups = ide::bash_groups::groups(&text, &starts);
            assert!(groups.len() >= 2 || text.len() < 40_000, "{} groups", groups.len());
            let asking = verdicts.ask(&text, &starts);
            kept += asking.kept();
            let by_groups = asking.verdict(&text, &mut verdicts);
            // The groups asked at nice 19 after a whole text may not be in yet on a busy
            // machine (CI's kept 16): what is counted below must not depend on that.
            verdicts.wait_for_background();
            let whole = posh_cli::bash_syntax::check(&text);
            assert_eq!(by_groups, whole, "edit {edit}:\n{text}");
            match whole {
                Ok(()) => accepted += 1,
                Err(_) => rejected += 1,
            }
            // Back to the source now and then, so that the edits do not pile up into a text
            // bash always rejects.
            if next(4) == 0 {
                text = source.clone();
            }
            match next(3) {
                0 => {
                    let at = (next(text.len())..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                    text.insert_str(at, typed[next(typed.len())]);
                }
                1 => {
                    let starts: Vec<usize> =
                        std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
                    text.insert_str(starts[next(starts.len())], lines[next(lines.len())]);
                }
                _ => {
                    let ends: Vec<usize> = groups.iter().map(|g| g.end).filter(|&e| e < text.len()).collect();
                    let at = ends.get(next(ends.len().max(1))).copied().unwrap_or(0);
                    text.insert_str(at, lines[next(lines.len())]);
                }
            }
        }
    }
    assert!(rejected >= 10 && accepted >= 10, "{rejected} rejected, {accepted} accepted");
    assert!(kept >= 50, "groups' verdicts were kept: {kept}");
}

/// A script of many chunks, opened: its chunks are parsed and planned on every core, and the plan
/// is still the one `posh-exec --explain` makes of the whole text.
#[test]
fn a_large_script_planned_on_every_core_is_planned_as_a_whole() {
    let fs = file_system();
    let world = world(&fs);
    let text = forty_blocks();
    let mut cache = ide::AnalysisCache::default();
    let opened = ide::analyze_script_cached(&world, &fs, &text, &mut cache);
    assert_eq!(cache.reused(), 0);
    let ctx = plan_context(&world, &fs);
    let inputs = ide::inputs_of(&world, None);
    let whole = posh_core::planner::plan_script_given(&ctx, &text, &posh_core::shell::parse_tolerant(&text), &inputs);
    assert_eq!(opened.plan.pipelines.len(), 320);
    assert_eq!(opened.plan.to_plan(), whole);
}

/// 320 pipelines: an opening plans them, and makes their hints, on every core.
fn forty_blocks() -> String {
    (0..40)
        .map(|i| format!("cd /mnt/logs\ncat ray{}.log | grep x{i} | sort\nf() {{ sort \"$1\"; }}\nf /mnt/a/big.txt\nX=/mnt/b/y.log\ngrep -c e{i} \"$X\"\ncat /mnt/logs/ray{}.log | grep y | f\necho {i}\n\n", i % 4, (i + 1) % 4))
        .collect()
}

/// The whole file's hints, made in batches of pipelines on every core, are each pipeline's
/// asked for alone, in the order of the text.
#[test]
fn the_whole_file_s_hints_made_on_every_core_are_each_pipeline_s_in_order() {
    let fs = file_system();
    let world = world(&fs);
    let text = forty_blocks();
    let analysis = ide::analyze_script(&world, &fs, &text);
    let whole = ide::inlay_hints::inlay_hints(&world, &text, &analysis, None);
    let one_by_one: Vec<_> = (analysis.plan.pipelines.iter())
        .flat_map(|p| ide::inlay_hints::inlay_hints(&world, &text, &analysis, Some(p.span())))
        .collect();
    // More than a batch (256 pipelines).
    assert_eq!(analysis.plan.pipelines.len(), 320);
    assert!(whole.len() > 200, "{} hints", whole.len());
    assert_eq!(whole, one_by_one);
}

/// A block repeated in two directories: the same text is planned once for each place (its files
/// are other files there), and each place keeps its own plans.
#[test]
fn a_repeated_block_is_planned_for_each_place_it_is_in() {
    let fs = file_system();
    let world = world(&fs);
    let block =
        "cat ray0.log | grep x | sort\nwc -l ray1.log\necho a\necho b\necho c\necho d\necho e\ngrep -c y big.txt\n\n";
    // Each `cd` a chunk of its own, so that the blocks after it are chunks of the same texts.
    let cd = |dir: &str| format!("cd {dir}\n{}\n", "#\n".repeat(8));
    let text = format!("{}{}{}{}", cd("/mnt/logs"), block.repeat(10), cd("/mnt/a"), block.repeat(10));
    let mut cache = ide::AnalysisCache::default();
    let opened = ide::analyze_script_cached(&world, &fs, &text, &mut cache);
    assert!(cache.reused_chunks() > 16, "the blocks are chunks of the same text");
    let ctx = plan_context(&world, &fs);
    let inputs = ide::inputs_of(&world, None);
    let whole = posh_core::planner::plan_script_given(&ctx, &text, &posh_core::shell::parse_tolerant(&text), &inputs);
    assert_eq!(opened.plan.to_plan(), whole);
}
