//! `posh-exec --explain` end to end: the real binary, a real posh.toml with two mounts served by
//! embedded proxies, real (sparse) files of known sizes, and scripts. Text and JSON are
//! snapshotted with the temporary directory written as `$TMP`; the rest is asserted exactly.
//! docs/explain.md describes what is checked here.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

mod common;

const MB: u64 = 1_000_000;

/// The files of the fixture and their sizes (sparse: no disk is spent on them).
const FILES: &[(&str, u64)] = &[
    ("A/x.log", 800 * MB),
    ("A/big.txt", 900 * MB),
    ("A/p1.log", MB),
    ("A/p2.log", MB),
    ("B/y.log", 600 * MB),
    ("B/small.txt", 20 * MB),
];

/// The main script. `{root}` becomes the temporary directory: one absolute path, so the
/// snapshots prove it is written as `$TMP`.
const SCRIPT: &str = "#!/bin/bash
# The paper's Figure 2: cat and grep run next to each log, only grep's output crosses.
cat A/x.log B/y.log | grep foo | tee local.txt
# No annotation for my-tool; tail's annotation leaves out -f (it never ends): both stay at the client.
my-tool A/x.log | wc -l
tail -f B/y.log
# An absolute path read through <, and a file written on the other mount: only the client can.
grep -v foo < {root}/A/x.log > B/filtered.log
";

const FIGURE_2: &str = "cat A/x.log B/y.log | grep foo | tee local.txt";

struct Fixture {
    /// Kept for its Drop (the directory goes away with the fixture).
    _dir: tempfile::TempDir,
    /// The directory as given, and canonical (what `current_dir` reports to posh-exec).
    given: PathBuf,
    root: PathBuf,
}

#[derive(Debug)]
struct Run {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Fixture {
    fn new() -> Fixture {
        // Under /tmp whatever $TMPDIR says: the JSON's spans count the bytes of scripts that
        // hold this directory's path, so its length must not depend on the machine.
        let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
        let given = dir.path().to_path_buf();
        let root = given.canonicalize().expect("canonical temp dir");
        let fixture = Fixture { _dir: dir, given, root };
        for (path, size) in FILES {
            let path = fixture.root.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            // Sparse, but ending a line, as text files do (a split checks its seams' last bytes).
            let file = std::fs::File::create(&path).and_then(|f| f.set_len(*size).map(|()| f)).expect("sized file");
            std::os::unix::fs::FileExt::write_all_at(&file, b"\n", size - 1).expect("a last newline");
        }
        let root = fixture.root.display();
        fixture.write(
            "posh.toml",
            &format!(
                "# Two directories of this one, each served by an in-process proxy.\n\
                 [[mount]]\npath = \"{root}/A\"\nproxy = \"embedded\"\n\n\
                 [[mount]]\npath = \"{root}/B\"\nproxy = \"embedded\"\n\n\
                 [client]\nbandwidth = \"600Mbit\"\nrtt = \"20ms\"\n"
            ),
        );
        fixture.write("script.sh", &fixture.with_root(SCRIPT));
        fixture
    }

    fn with_root(&self, text: &str) -> String {
        text.replace("{root}", &self.root.display().to_string())
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.root.join(name), text).expect("write");
    }

    /// Runs posh-exec in the fixture's directory, with no configuration from the environment;
    /// its output with the directory written as `$TMP`.
    fn run(&self, args: &[&str]) -> Run {
        let run = self.run_raw(args);
        Run { status: run.status, stdout: self.redact(&run.stdout), stderr: self.redact(&run.stderr) }
    }

    fn run_raw(&self, args: &[&str]) -> Run {
        let out =
            common::isolated(env!("CARGO_BIN_EXE_posh-exec"), &self.root).args(args).output().expect("posh-exec runs");
        Run {
            status: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `--explain` that must succeed quietly; its stdout, with the directory written as `$TMP`.
    fn explain(&self, args: &[&str]) -> String {
        self.redact(&self.explain_raw(args))
    }

    fn explain_raw(&self, args: &[&str]) -> String {
        let mut all = vec!["--explain"];
        all.extend_from_slice(args);
        let run = self.run_raw(&all);
        assert_eq!(run.status, Some(0), "{args:?}: {run:?}");
        assert_eq!(run.stderr, "", "{args:?}");
        run.stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--format", "json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.explain_raw(&all)).expect("--format json prints JSON")
    }

    fn redact(&self, text: &str) -> String {
        let mut text = text.replace(&self.root.display().to_string(), "$TMP");
        if self.given != self.root {
            text = text.replace(&self.given.display().to_string(), "$TMP");
        }
        text
    }
}

fn location(node: &Value) -> String {
    match (node["location"]["kind"].as_str(), &node["location"]["mount"]) {
        (Some("client"), Value::Null) => "@client".to_string(),
        (Some("mount"), Value::String(name)) => format!("@{name}"),
        other => panic!("not a location: {other:?}"),
    }
}

fn nodes(pipeline: &Value) -> &Vec<Value> {
    pipeline["nodes"].as_array().expect("nodes")
}

fn edges(pipeline: &Value) -> &Vec<Value> {
    pipeline["edges"].as_array().expect("edges")
}

/// Command nodes of the pipeline's `index`-th command, as (argv, location, copy, why).
fn commands(pipeline: &Value, index: u64) -> Vec<(String, String, Value, Value)> {
    nodes(pipeline)
        .iter()
        .filter(|n| n["kind"]["type"] == "command" && n["kind"]["command"] == index)
        .map(|n| {
            let argv: Vec<&str> =
                n["kind"]["argv"].as_array().expect("argv").iter().map(|w| w.as_str().expect("a word")).collect();
            (argv.join(" "), location(n), n["kind"]["copy"].clone(), n["why"].clone())
        })
        .collect()
}

#[test]
fn explain_text_of_a_script() {
    let fixture = Fixture::new();
    let text = fixture.explain(&["script.sh"]);
    insta::assert_snapshot!(text);
}

#[test]
fn figure_2_splits_cat_and_grep_per_mount_and_only_grep_output_crosses() {
    let fixture = Fixture::new();
    let text = fixture.explain(&["script.sh"]);
    let figure: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(
        figure,
        [
            "script.sh:3: [@A, @B]cat A/x.log B/y.log | [@A, @B]grep foo |[~700 MB, concat @client] [@client]tee local.txt",
            "  @A cat A/x.log (copy 1/2): one copy per mount of its data",
            "      annotation: cat[splittable_across_input, output_ends_as_input, output_holds_input] (text.posh)",
            "      output: 100% of its input, as its annotation says",
            "  @A grep foo (copy 1/2): one copy per mount of its data",
            "      annotation: grep[splittable_across_input, filters_input, output_ends_lines, output_lines_of_input, no_match_status:1] (search.posh)",
            "      output: 50% of its input, assumed (no run measured it yet)",
            "  @B cat B/y.log (copy 2/2): one copy per mount of its data",
            "  @B grep foo (copy 2/2): one copy per mount of its data",
            "  @client merge (concat): the copies' outputs are combined at the client",
            "  @client tee local.txt: `local.txt` is on no mount, so it runs at the client",
            "      annotation: tee[output_to_stdout_too] (files.posh)",
            "      output: 100% of its input, assumed (no run measured it yet)",
            "  crosses @A → @client: ~400 MB (grep foo (copy 1/2) → merge (concat))",
            "  crosses @B → @client: ~300 MB (grep foo (copy 2/2) → merge (concat))",
            "  bash would move 1.4 GB, posh moves ~700 MB",
        ]
    );

    // The same in the JSON: which node runs where, and what crosses.
    let doc = fixture.json(&["-c", FIGURE_2]);
    let pipeline = &doc["pipelines"][0];
    let split = serde_json::json!({ "reason": "split" });
    assert_eq!(
        commands(pipeline, 0),
        [
            ("cat A/x.log".into(), "@A".into(), serde_json::json!([0, 2]), split.clone()),
            ("cat B/y.log".into(), "@B".into(), serde_json::json!([1, 2]), split.clone()),
        ]
    );
    assert_eq!(
        commands(pipeline, 1),
        [
            ("grep foo".into(), "@A".into(), serde_json::json!([0, 2]), split.clone()),
            ("grep foo".into(), "@B".into(), serde_json::json!([1, 2]), split),
        ]
    );
    assert_eq!(
        commands(pipeline, 2),
        [(
            "tee local.txt".into(),
            "@client".into(),
            Value::Null,
            serde_json::json!({ "reason": "client_only", "detail": "`local.txt` is on no mount" })
        )]
    );
    let node = |id: &Value| &nodes(pipeline)[id.as_u64().expect("an id") as usize];
    let moving: Vec<(String, String, u64)> = edges(pipeline)
        .iter()
        .filter(|e| e["crosses"] == true && e["bytes"] != 0)
        .map(|e| {
            let (from, to) = (node(&e["from"]), node(&e["to"]));
            (
                format!("{} {}", from["kind"]["type"], from["kind"]["command"]),
                format!("{} {}", to["kind"]["type"], location(to)),
                e["bytes"].as_u64().expect("bytes"),
            )
        })
        .collect();
    assert_eq!(
        moving,
        [
            ("\"command\" 1".to_string(), "\"merge\" @client".to_string(), 400 * MB),
            ("\"command\" 1".to_string(), "\"merge\" @client".to_string(), 300 * MB),
        ],
        "only grep's output crosses the network"
    );
    assert_eq!(pipeline["bash_bytes"], 1400 * MB);
    assert_eq!(pipeline["posh_bytes"], 700 * MB);
}

#[test]
fn commands_posh_cannot_place_run_at_the_client_and_the_text_says_why() {
    let fixture = Fixture::new();
    let text = fixture.explain(&["script.sh"]);
    let lines: Vec<&str> = text.lines().collect();
    for expected in [
        "script.sh:5: [@client]my-tool A/x.log | [@client]wc -l",
        "  @client my-tool A/x.log: no annotation for this command, so it runs at the client",
        "script.sh:6: [@client]tail -f B/y.log",
        "  @client tail -f B/y.log: no annotation entry of `tail` fits: the annotation does not know the option `-f`, so it runs at the client",
    ] {
        assert!(lines.contains(&expected), "missing {expected:?} in\n{text}");
    }

    let doc = fixture.json(&["script.sh"]);
    assert_eq!(
        commands(&doc["pipelines"][1], 0),
        [("my-tool A/x.log".into(), "@client".into(), Value::Null, serde_json::json!({ "reason": "no_annotation" }))]
    );
    assert_eq!(
        commands(&doc["pipelines"][2], 0),
        [(
            "tail -f B/y.log".into(),
            "@client".into(),
            Value::Null,
            serde_json::json!({
                "reason": "no_entry_fits",
                "detail": "no annotation entry of `tail` fits: the annotation does not know the option `-f`"
            })
        )]
    );
}

#[test]
fn dash_c_explains_the_commands_given() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.explain(&["-c", "grep foo A/x.log > A/out.txt"]),
        "-c:1: [@A]grep foo A/x.log > A/out.txt
  @A grep foo A/x.log: the cheapest place for the data it moves
      annotation: grep[splittable_across_input, filters_input, output_ends_lines, output_lines_of_input, no_match_status:1] (search.posh)
      output: 50% of its input, assumed (no run measured it yet)
  bash would move ~1.2 GB, posh moves 0 B

1 pipeline(s), cost-based placement: bash would move ~1.2 GB, posh moves 0 B
(~: an estimate, from an output share no annotation states and no run measured yet)
1 of 1 pipelines go to the posh runtime (1 with commands planned at a proxy, 0 placed when they run); 0 need no proxy; 0 stay with bash
"
    );
}

#[test]
fn json_has_the_documented_fields() {
    let fixture = Fixture::new();
    let doc = fixture.json(&["script.sh"]);
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["script"], "script.sh");
    assert_eq!(doc["strategy"], "cost_based");
    let pipelines = doc["pipelines"].as_array().expect("pipelines");
    let at: Vec<(u64, u64)> =
        pipelines.iter().map(|p| (p["line"].as_u64().unwrap(), p["column"].as_u64().unwrap())).collect();
    assert_eq!(at, [(3, 1), (5, 1), (6, 1), (8, 1)]);
    let source = fixture.with_root(SCRIPT);
    let script_lines: Vec<&str> = source.lines().collect();
    let text = fixture.explain(&["script.sh"]);
    for p in pipelines {
        let line = p["line"].as_u64().unwrap() as usize;
        // `source` is the pipeline's text, `span` its bytes in the script.
        assert_eq!(p["source"], script_lines[line - 1]);
        let (start, end) = (p["span"]["start"].as_u64().unwrap() as usize, p["span"]["end"].as_u64().unwrap() as usize);
        assert_eq!(p["source"], source[start..end]);
        // `rendered` is the text form's first line of the pipeline.
        let rendered = p["rendered"].as_str().expect("rendered");
        let rendered = fixture.redact(rendered);
        assert!(text.lines().any(|l| l == format!("script.sh:{line}: {rendered}")), "{rendered:?} not in\n{text}");
        // Node ids are their indices; an edge crosses when its ends are at different places;
        // posh_bytes is what the crossing edges carry.
        for (i, n) in nodes(p).iter().enumerate() {
            assert_eq!(n["id"], i);
            assert!(n["kind"]["type"].is_string() && n["why"]["reason"].is_string());
        }
        let mut crossing = 0;
        for e in edges(p) {
            let (from, to) =
                (&nodes(p)[e["from"].as_u64().unwrap() as usize], &nodes(p)[e["to"].as_u64().unwrap() as usize]);
            assert_eq!(e["crosses"], location(from) != location(to), "{e}");
            assert!(["stdout", "stderr", "file"].contains(&e["stream"].as_str().unwrap()));
            if e["crosses"] == true {
                crossing += e["bytes"].as_u64().unwrap();
            }
        }
        assert_eq!(p["posh_bytes"], crossing);
    }
    let bash: u64 = pipelines.iter().map(|p| p["bash_bytes"].as_u64().unwrap()).sum();
    let posh: u64 = pipelines.iter().map(|p| p["posh_bytes"].as_u64().unwrap()).sum();
    assert_eq!((doc["bash_bytes"].as_u64(), doc["posh_bytes"].as_u64()), (Some(bash), Some(posh)));
    // grep -v reads A and writes B: no proxy can, so both files cross (as under bash).
    assert_eq!((bash, posh), (1400 * MB + 1200 * MB, 700 * MB + 1200 * MB));

    // Files are read nodes with their real sizes, where they lie; the files of commands posh
    // cannot analyse (my-tool, tail -f) are unknown to it.
    let reads: Vec<(String, u64, String)> = pipelines
        .iter()
        .flat_map(nodes)
        .filter(|n| n["kind"]["type"] == "read_file")
        .map(|n| {
            (fixture.redact(n["kind"]["path"].as_str().unwrap()), n["kind"]["size"].as_u64().unwrap(), location(n))
        })
        .collect();
    assert_eq!(
        reads,
        [
            ("A/x.log".to_string(), 800 * MB, "@A".to_string()),
            ("B/y.log".to_string(), 600 * MB, "@B".to_string()),
            ("$TMP/A/x.log".to_string(), 800 * MB, "@A".to_string()),
        ]
    );
    let writes: Vec<(&Value, String)> = pipelines
        .iter()
        .flat_map(nodes)
        .filter(|n| n["kind"]["type"] == "write_file")
        .map(|n| (&n["kind"], location(n)))
        .collect();
    assert_eq!(
        writes,
        [
            (&serde_json::json!({"type": "write_file", "path": "local.txt", "append": false}), "@client".to_string()),
            (&serde_json::json!({"type": "write_file", "path": "B/filtered.log", "append": false}), "@B".to_string()),
        ]
    );
}

#[test]
fn json_snapshot() {
    let fixture = Fixture::new();
    fixture
        .write("two.sh", &fixture.with_root(&format!("{FIGURE_2}\ngrep -v foo < {{root}}/A/x.log > B/filtered.log\n")));
    let out = fixture.explain(&["--format", "json", "two.sh"]);
    insta::assert_snapshot!(out);
}

#[test]
fn json_columns_count_characters_and_spans_count_bytes() {
    let fixture = Fixture::new();
    let doc = fixture.json(&["-c", "echo é; grep foo A/x.log"]);
    let second = &doc["pipelines"][1];
    assert_eq!((&second["line"], &second["column"]), (&1.into(), &9.into()));
    assert_eq!(second["span"], serde_json::json!({"start": 9, "end": 25}));
    assert_eq!(second["source"], "grep foo A/x.log");
    assert_eq!(doc["script"], "-c");
}

#[test]
fn dot_renders_with_graphviz() {
    let fixture = Fixture::new();
    let dot_form = fixture.explain(&["--format", "dot", "script.sh"]);
    assert!(dot_form.starts_with("digraph posh {\n") && dot_form.ends_with("}\n"), "{dot_form}");
    for expected in [
        "  subgraph cluster_p0 {\n    label=\"script.sh:3  bash 1.4 GB / posh ~700 MB\";",
        "      label=\"proxy @A\";",
        "      label=\"proxy @B\";",
        "      label=\"client\";",
        "    p0n3 -> p0n7 [label=\"~400 MB\", color=red, fontcolor=red, penwidth=2];",
        "    p0n6 -> p0n7 [label=\"~300 MB\", color=red, fontcolor=red, penwidth=2];",
        "  subgraph cluster_p3 {",
    ] {
        assert!(dot_form.contains(expected), "missing {expected:?} in\n{dot_form}");
    }
    assert!(!dot_form.contains("cluster_p4"));

    if !have_graphviz("dot_renders_with_graphviz") {
        return;
    }
    let svg = String::from_utf8(dot("svg", &dot_form)).expect("UTF-8");
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(svg.contains("proxy @A") && svg.contains("400 MB"), "{svg}");
}

/// Whether Graphviz's `dot` is on PATH; without it (never in CI, which installs graphviz) the
/// caller skips, saying so.
fn have_graphviz(test: &str) -> bool {
    let have = Command::new("dot").arg("-V").output().is_ok_and(|o| o.status.success());
    if !have {
        assert!(std::env::var_os("CI").is_none(), "graphviz `dot` is not on PATH, and CI is set: install graphviz");
        eprintln!("note: {test} skipped: graphviz `dot` is not on PATH");
    }
    have
}

/// `dot -TFORMAT` of `graph`, as a user would run it by hand.
fn dot(format: &str, graph: &str) -> Vec<u8> {
    use std::io::Write as _;
    let mut child = Command::new("dot")
        .arg(format!("-T{format}"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dot starts");
    child.stdin.take().expect("stdin").write_all(graph.as_bytes()).expect("feed dot");
    let out = child.wait_with_output().expect("dot runs");
    assert!(out.status.success(), "dot failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "dot warned");
    out.stdout
}

#[test]
fn svg_and_png_are_the_dot_form_drawn_by_graphviz() {
    if !have_graphviz("svg_and_png_are_the_dot_form_drawn_by_graphviz") {
        return;
    }
    let fixture = Fixture::new();
    let graph = fixture.explain_raw(&["--format", "dot", "script.sh"]);
    let svg = fixture.explain_raw(&["--format", "svg", "script.sh"]);
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(svg.contains("proxy @A") && svg.contains("400 MB"), "{svg}");
    assert_eq!(svg.as_bytes(), dot("svg", &graph), "--format svg is not `dot -Tsvg` of --format dot");

    let out = common::isolated(env!("CARGO_BIN_EXE_posh-exec"), &fixture.root)
        .args(["--explain", "--format", "png", "script.sh"])
        .output()
        .expect("posh-exec runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(out.stdout, dot("png", &graph), "--format png is not `dot -Tpng` of --format dot");
    assert!(out.stdout.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // The picture's size, in its header: the plan's clusters are more than a few pixels.
    let width = u32::from_be_bytes(out.stdout[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(out.stdout[20..24].try_into().unwrap());
    assert!(width > 200 && height > 200, "{width}x{height}");

    // A script with a syntax error: the pipelines before it drawn, the error said, status 2.
    fixture.write("broken.sh", "cat A/x.log | grep foo\nif then\n");
    let broken = fixture.run(&["--explain", "--format", "svg", "broken.sh"]);
    assert_eq!(broken.status, Some(2), "{broken:?}");
    assert!(broken.stdout.contains("<svg") && broken.stderr.starts_with("broken.sh:2:"), "{broken:?}");
}

#[test]
fn without_graphviz_svg_and_png_name_the_package_and_print_nothing() {
    let fixture = Fixture::new();
    // A PATH where no `dot` is.
    let empty = tempfile::tempdir().unwrap();
    for format in ["svg", "png"] {
        let out = common::isolated(env!("CARGO_BIN_EXE_posh-exec"), &fixture.root)
            .env("PATH", empty.path())
            .args(["--explain", "--format", format, "script.sh"])
            .output()
            .expect("posh-exec runs");
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert_eq!(out.stdout, b"", "{format}: partial output");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "posh-exec: --format {format} draws the plan with Graphviz's `dot`, which is not installed \
                 (apt-get install graphviz)\n"
            )
        );
    }
}

/// A PNG is not written to a terminal (`script` gives the run one).
#[test]
fn png_is_not_written_to_a_terminal() {
    let fixture = Fixture::new();
    let posh_exec = env!("CARGO_BIN_EXE_posh-exec");
    let command = format!("'{posh_exec}' --explain --format png script.sh; echo \"status $?\"");
    let out = common::isolated("script", &fixture.root)
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("not writing a PNG to the terminal: redirect it to a file (> plan.png)"), "{said}");
    assert!(said.contains("status 2") && !said.contains("PNG\r\n\x1a"), "{said}");
}

/// Cost-based placement runs comm at the proxy of its larger file, the smaller one streamed to
/// it from its own proxy; the paper's greedy placement keeps it at the client. `comm -12` prints
/// at most the smaller file (its annotation's bound).
#[test]
fn comm_across_two_mounts_streams_the_smaller_file_unless_greedy() {
    let fixture = Fixture::new();
    let script = "comm -12 A/big.txt B/small.txt";
    let cost_based = fixture.explain(&["-c", script]);
    assert_eq!(
        cost_based,
        "-c:1: [@A ⇐20 MB]comm -12 A/big.txt B/small.txt [⇒ output 20 MB]
  @A comm -12 A/big.txt B/small.txt: the cheapest place for the data it moves
      annotation: comm[filters_input, output_within_smallest_input] (text.posh)
      output: bounded by its annotation
  crosses @B → @A: 20 MB (read B/small.txt (20 MB) → comm -12 A/big.txt B/small.txt, streamed from proxy to proxy)
  crosses @A → @client: 20 MB (comm -12 A/big.txt B/small.txt → standard output)
  bash would move 920 MB, posh moves 20 MB (and 20 MB between proxies)

1 pipeline(s), cost-based placement: bash would move 920 MB, posh moves 20 MB (and 20 MB between proxies)
1 of 1 pipelines go to the posh runtime (1 with commands planned at a proxy, 0 placed when they run); 0 need no proxy; 0 stay with bash
"
    );
    assert_eq!(fixture.explain(&["--placement", "cost-based", "-c", script]), cost_based, "cost-based is the default");
    let greedy = fixture.explain(&["--placement", "greedy", "-c", script]);
    assert!(greedy.starts_with("-c:1: [@client ⇐920 MB]comm -12 A/big.txt B/small.txt\n"), "{greedy}");
    assert!(greedy.contains("bash would move 920 MB, posh moves 920 MB\n"), "{greedy}");
    let json = |placement: &str| {
        let doc = fixture.json(&["--placement", placement, "-c", script]);
        let streamed: Vec<Value> = doc["pipelines"][0]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["between_proxies"] == true)
            .map(|e| e["bytes"].clone())
            .collect();
        (commands(&doc["pipelines"][0], 0), doc["posh_bytes"].clone(), doc["between_proxies_bytes"].clone(), streamed)
    };
    let argv = || script.to_string();
    assert_eq!(
        json("greedy"),
        (
            vec![(argv(), "@client".into(), Value::Null, serde_json::json!({"reason": "several_mounts"}))],
            (920 * MB).into(),
            0.into(),
            vec![]
        )
    );
    assert_eq!(
        json("cost-based"),
        (
            vec![(argv(), "@A".into(), Value::Null, serde_json::json!({"reason": "cheapest"}))],
            (20 * MB).into(),
            (20 * MB).into(),
            vec![(20 * MB).into()]
        )
    );
}

#[test]
fn copies_per_mount_splits_further() {
    let fixture = Fixture::new();
    let script = "cat A/p1.log A/p2.log B/y.log | grep foo";
    let rendered = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["-c", script]);
        let doc = fixture.json(&args);
        let copies: Vec<Value> = commands(&doc["pipelines"][0], 0).into_iter().map(|(_, _, copy, _)| copy).collect();
        (doc["pipelines"][0]["rendered"].clone(), copies)
    };
    assert_eq!(
        rendered(&[]),
        (
            "[@A, @B]cat A/p1.log A/p2.log B/y.log | [@A, @B]grep foo [~301 MB, concat @client]".into(),
            vec![serde_json::json!([0, 2]), serde_json::json!([1, 2])]
        )
    );
    assert_eq!(
        rendered(&["--copies-per-mount", "2"]),
        (
            "[@A ×2, @B]cat A/p1.log A/p2.log B/y.log | [@A ×2, @B]grep foo [~301 MB, concat @client]".into(),
            vec![serde_json::json!([0, 3]), serde_json::json!([1, 3]), serde_json::json!([2, 3])]
        )
    );
}

#[test]
fn an_unknown_key_in_posh_toml_is_an_error_with_its_place() {
    let fixture = Fixture::new();
    fixture.write(
        "posh.toml",
        &fixture.with_root("[[mount]]\npath = \"{root}/A\"\nproxy = \"embedded\"\nbandwith = \"1Gbit\"\n"),
    );
    let run = fixture.run(&["--explain", "script.sh"]);
    assert_eq!(run.status, Some(2));
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "posh-exec: $TMP/posh.toml:4:1: key `mount[1].bandwith`: unknown key; did you mean `bandwidth`?\n"
    );
}

#[test]
fn a_missing_config_file_is_an_error() {
    let fixture = Fixture::new();
    let run = fixture.run(&["--explain", "--config", "missing.toml", "script.sh"]);
    assert_eq!(run.status, Some(2));
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "posh-exec: $TMP/missing.toml: config file not found (given with --config)\n");
}

#[test]
fn a_syntax_error_is_reported_with_its_place_and_exit_status_2() {
    let fixture = Fixture::new();
    fixture.write("bad.sh", "grep foo A/x.log\nif then\n");
    let run = fixture.run(&["--explain", "bad.sh"]);
    assert_eq!(run.status, Some(2));
    assert_eq!(run.stderr, "bad.sh:2:4: syntax error near unexpected token `then`\n");
    // What parsed before the error is still explained.
    assert!(run.stdout.starts_with("bad.sh:1: [@A]grep foo A/x.log [⇒ output ~400 MB]\n"), "{}", run.stdout);
    assert!(
        run.stdout.ends_with(
            "\n1 pipeline(s), cost-based placement: bash would move 800 MB, posh moves ~400 MB\n\
             (~: an estimate, from an output share no annotation states and no run measured yet)\n\
             the script has a syntax error: bash runs the script as it is\n"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn format_needs_explain() {
    let fixture = Fixture::new();
    let run = fixture.run(&["--format", "json", "script.sh"]);
    assert_eq!(run.status, Some(2));
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.starts_with("error: the following required arguments were not provided:\n  --explain\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_missing_script_is_an_error() {
    let fixture = Fixture::new();
    let run = fixture.run(&["--explain", "nope.sh"]);
    assert_eq!(run.status, Some(2));
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "posh-exec: nope.sh: cannot read the script: No such file or directory (os error 2)\n");
    let run = fixture.run(&["--explain"]);
    assert_eq!(run.status, Some(2));
    assert_eq!(run.stderr, "posh-exec: no script given (usage: posh-exec --explain SCRIPT, or -c COMMANDS)\n");
}

/// A run records what each command kept of its input (the kernel's count of the bytes it read
/// and wrote); the next plan predicts with that figure and says it was measured. A broken
/// figures file is named with its place and replaced, and the script runs as bash runs it.
#[test]
fn a_run_measures_what_a_filter_keeps_and_the_next_plan_uses_it() {
    let fixture = Fixture::new();
    let log: String =
        (0..40_000).map(|i| if i % 40 == 0 { format!("ERROR {i}\n") } else { format!("INFO {i:>60}\n") }).collect();
    fixture.write("A/m.log", &log);
    fixture.write("measured.sh", "grep ERROR A/m.log | sort -r\n");
    let kept = log.lines().filter(|l| l.starts_with("ERROR")).map(|l| l.len() as u64 + 1).sum::<u64>();
    let grep = |plan: &Value| {
        let node = nodes(&plan["pipelines"][0]).iter().find(|n| n["kind"]["text"] == "grep ERROR A/m.log");
        node.expect("grep's node")["kind"].clone()
    };
    assert_eq!(grep(&fixture.json(&["measured.sh"]))["output"], serde_json::json!({"from": "assumed", "ratio": 0.5}));
    // Runs on embedded mounts record figures only where the state directory exists.
    std::fs::create_dir(fixture.root.join("posh")).unwrap();
    // Pipelines that read little tell nothing: they leave the figures alone.
    fixture.write("small.sh", "grep ERROR A/p1.log\n");
    assert_eq!(fixture.run(&["small.sh"]).status, Some(1));
    assert!(!fixture.root.join("posh/ratios.json").exists(), "a run that read less than 1 MiB is not recorded");

    let run = fixture.run(&["--stats", "stats.json", "measured.sh"]);
    let bash = common::isolated("bash", &fixture.root).arg("measured.sh").output().expect("bash runs");
    assert_eq!((run.status, run.stdout.as_bytes(), run.stderr.as_str()), (Some(0), &bash.stdout[..], ""));
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.root.join("stats.json")).unwrap()).unwrap();
    let measured = &stats["commands"][0];
    assert_eq!(measured["location"], "A", "{stats}");
    let (read, written) = (measured["read"].as_u64().unwrap(), measured["written"].as_u64().unwrap());
    // The file, and a few KB the program reads to start.
    assert!((log.len() as u64..log.len() as u64 + 100_000).contains(&read), "{stats}");
    assert_eq!(written, kept, "{stats}");

    let output = &grep(&fixture.json(&["measured.sh"]))["output"];
    assert_eq!(output["from"], "measured", "{output}");
    assert_eq!(output["runs"], 1);
    // Less what a process reads to start, which is no input.
    let input = read - posh_core::planner::measured::STARTUP_READ;
    assert!((output["ratio"].as_f64().unwrap() - written as f64 / input as f64).abs() < 1e-12, "{output}");
    let text = fixture.explain(&["measured.sh"]);
    assert!(text.contains("% of its input, measured over 1 run"), "{text}");

    std::fs::write(fixture.root.join("posh/ratios.json"), "{\"shapes\": [\n").unwrap();
    let run = fixture.run(&["measured.sh"]);
    assert_eq!((run.status, run.stdout.as_bytes()), (Some(0), &bash.stdout[..]));
    assert_eq!(
        run.stderr,
        "posh-exec: $TMP/posh/ratios.json:1:11: invalid type: sequence, expected a map; planning without measured ratios\n"
    );
    assert_eq!(grep(&fixture.json(&["measured.sh"]))["output"]["runs"], 1, "the broken file was replaced");
}
