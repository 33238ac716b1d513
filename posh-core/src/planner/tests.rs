//! Planner tests: each case is a posh.toml, a file system and a script; the snapshot is the
//! script with placements and predicted bytes written into it, so it reads like the script.

use std::path::Path;

use super::render::{render_inline, render_text};
use super::*;
use crate::fs::MemoryFileSystem;

const MB: u64 = 1_000_000;

/// Five mounts, each a proxy on a 20 ms / 600 Mbit/s link (the paper's WAN).
const CONFIG: &str = r#"
[client]
bandwidth = "600Mbit"
rtt = "20ms"

[[mount]]
path = "/mnt/logs"
proxy = "10.0.0.1:4433"

[[mount]]
path = "/mnt/a"
proxy = "10.0.0.2:4433"

[[mount]]
path = "/mnt/b"
proxy = "10.0.0.3:4433"

[[mount]]
path = "/mnt/images"
proxy = "embedded"

[[mount]]
path = "/mnt/repo"
proxy = "10.0.0.4:4433"
bandwidth = "10Gbit"
rtt = "0.5ms"
"#;

fn file_system() -> MemoryFileSystem {
    let mut fs = MemoryFileSystem::new();
    for i in 0..4 {
        fs.add_file(format!("/mnt/logs/ray{i}.log"), 500 * MB);
    }
    fs.add_file("/mnt/logs/scan-1.gz", 300 * MB).add_file("/mnt/logs/scan-2.gz", 300 * MB);
    fs.add_file("/mnt/a/x.log", 800 * MB).add_file("/mnt/b/y.log", 600 * MB);
    fs.add_file("/mnt/a/big.txt", 900 * MB).add_file("/mnt/b/small.txt", 20 * MB);
    for i in 0..3 {
        fs.add_file(format!("/mnt/images/p{i}.jpg"), 4 * MB);
    }
    fs.add_file("/mnt/repo/.git/index", 2 * MB).add_file("/mnt/repo/src/main.c", 40_000);
    fs.add_file("/home/user/notes.txt", 10_000);
    fs
}

fn plan_with(config: &str, fs: &MemoryFileSystem, cwd: &str, script: &str, options: PlanOptions) -> (Plan, String) {
    plan_in(&Library::builtin(), config, fs, cwd, script, options)
}

fn plan_in(
    library: &Library,
    config: &str,
    fs: &MemoryFileSystem,
    cwd: &str,
    script: &str,
    options: PlanOptions,
) -> (Plan, String) {
    let config = Config::parse(config, Path::new("posh.toml")).expect("the test config parses");
    let ratios = &measured::NO_RATIOS;
    let ctx = PlanContext { library, config: &config, fs, cwd: cwd.into(), options, ratios };
    let parsed = crate::shell::parse(script);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    (plan_script(&ctx, script, &parsed), script.to_string())
}

/// One line per pipeline: the script with placements, then the totals.
fn check_with(cwd: &str, script: &str, options: PlanOptions) -> String {
    let (plan, source) = plan_with(CONFIG, &file_system(), cwd, script, options);
    plan.pipelines
        .iter()
        .map(|p| {
            format!(
                "{}\n    bash moves {}, posh moves {}\n",
                render_inline(&source, p),
                render::format_bytes(p.bash_bytes),
                render::format_bytes(p.posh_bytes)
            )
        })
        .collect()
}

fn check(script: &str) -> String {
    check_with("/home/user", script, PlanOptions::default())
}

#[test]
fn ray_tracing_log_analysis() {
    insta::assert_snapshot!(check(
        "cat /mnt/logs/ray*.log | grep 'rays traced' | cut -d ' ' -f 4 | sort -n | uniq -c | sort -rn | head -n 5 > /home/user/top.txt\n"
    ));
}

#[test]
fn thumbnail_generation() {
    insta::assert_snapshot!(check(
        "mogrify -format gif -path /mnt/images/thumbs/ -thumbnail 100x100 /mnt/images/*.jpg\n"
    ));
}

#[test]
fn port_scan_analysis() {
    insta::assert_snapshot!(check(
        "zcat /mnt/logs/scan-*.gz | grep -v '^#' | cut -f 3 | sort | uniq -c | sort -rn | head -n 20\n"
    ));
}

#[test]
fn distributed_log_analysis_across_five_mounts() {
    let mut config = String::new();
    let mut fs = MemoryFileSystem::new();
    for m in 0..5 {
        config.push_str(&format!("[[mount]]\npath = \"/mnt/m{m}\"\nproxy = \"10.0.1.{m}:4433\"\n"));
        for f in 0..2 {
            fs.add_file(format!("/mnt/m{m}/log{f}.csv"), 200 * MB);
        }
    }
    let script = "cat /mnt/m0/*.csv /mnt/m1/*.csv /mnt/m2/*.csv /mnt/m3/*.csv /mnt/m4/*.csv | grep '1.2.3.4' | sort\n";
    let (plan, source) = plan_with(&config, &fs, "/", script, PlanOptions::default());
    insta::assert_snapshot!(render_text("logs.sh", &source, &plan));
}

#[test]
fn git_workflow_runs_with_the_working_directory() {
    insta::assert_snapshot!(check_with(
        "/mnt/repo",
        "git status\ngit add src/main.c\ngit commit -m 'fix the bug'\ngit log -n 3 | cat\n",
        PlanOptions::default()
    ));
}

#[test]
fn commands_across_two_mounts_stream_the_smaller_input_to_the_larger_ones_proxy() {
    // From above both mounts, the job at @a runs in a view where a pipe stands for b/small.txt.
    let relative = "comm -12 a/big.txt b/small.txt > a/common.txt\ncomm -12 b/small.txt a/big.txt | wc -l\n\
                    cat a/big.txt b/small.txt > a/both.txt\ncat a/big.txt b/small.txt | grep -c x\n";
    let (plan, source) = plan_with(CONFIG, &file_system(), "/mnt", relative, PlanOptions::default());
    // Absolute words would name the streamed file where the job cannot put a pipe; the paper's
    // greedy placement sends every command reading several mounts to the client.
    let absolute = "comm -12 /mnt/a/big.txt /mnt/b/small.txt > /home/user/common.txt\n";
    let greedy = PlanOptions { strategy: Strategy::Greedy, ..PlanOptions::default() };
    insta::assert_snapshot!(format!(
        "{}\nabsolute words:\n{}\ngreedy (the paper):\n{}",
        render_text("comm.sh", &source, &plan),
        check(absolute),
        check_with("/mnt", relative, greedy)
    ));
}

#[test]
fn a_pipe_from_a_command_at_one_proxy_to_a_command_at_another_goes_between_them() {
    let script = "grep -c x a/x.log | cat - b/small.txt | wc -l\ngrep x a/big.txt | sort | comm -12 - b/y.log\n";
    let (plan, source) = plan_with(CONFIG, &file_system(), "/mnt", script, PlanOptions::default());
    let pipeline = &plan.pipelines[0];
    let between: Vec<&Edge> = pipeline.edges.iter().filter(|e| e.between_proxies).collect();
    assert_eq!(between.len(), 1, "{between:?}");
    assert!(matches!(pipeline.node(between[0].from).kind, NodeKind::Command { command: 0, .. }));
    assert_eq!(pipeline.posh_bytes, 64, "only wc's output reaches the client");
    insta::assert_snapshot!(render_text("pipe.sh", &source, &plan));
}

#[test]
fn a_merge_written_to_a_file_on_a_mount_is_merged_at_its_proxy() {
    // Any merge (joined, rerun, `sort -m`, summed), into a file on a copy's mount with nothing
    // else redirected; or feeding the commands after it, all of them at that proxy with it, when
    // that is cheaper (`2>&1` keeps grep out of the split: cat's copies meet at a, grep there
    // too; sort's copies are merged by `sort -m` at a, and uniq, sort and head run there).
    insta::assert_snapshot!(check(
        "cat /mnt/a/x.log /mnt/b/y.log | grep foo > /mnt/a/found.txt\n\
         cat /mnt/a/x.log /mnt/b/y.log | grep foo > /home/user/found.txt\n\
         cat /mnt/a/x.log /mnt/b/y.log | grep foo > /mnt/a/found.txt 2>&1\n\
         grep -h foo /mnt/a/x.log /mnt/b/y.log | sort > /mnt/a/sorted.txt\n\
         grep -h foo /mnt/a/x.log /mnt/b/y.log | uniq > /mnt/a/uniq.txt\n\
         cat /mnt/a/x.log /mnt/b/y.log | wc -l > /mnt/b/count.txt\n\
         cat /mnt/a/x.log /mnt/b/y.log | sort | uniq -c | sort -rn | head -3\n"
    ));
}

#[test]
fn a_variable_the_script_gives_a_command_must_be_one_a_proxy_passes_on() {
    // The locale, TZ and what the annotation reads go along; anything else keeps it at the client.
    insta::assert_snapshot!(check_with(
        "/mnt/repo",
        "LC_ALL=C TZ=UTC grep -c x /mnt/a/x.log\n\
         GREP_COLORS=mt=1 grep -c x /mnt/a/x.log\n\
         GIT_AUTHOR_NAME=me git status\n",
        PlanOptions::default()
    ));
}

#[test]
fn figure_2_splits_cat_and_grep_per_mount() {
    let (plan, source) = plan_with(
        CONFIG,
        &file_system(),
        "/home/user",
        "cat /mnt/a/x.log /mnt/b/y.log | grep foo | tee local.txt\n",
        PlanOptions::default(),
    );
    let pipeline = &plan.pipelines[0];
    let where_runs = |index| pipeline.copies_of(index).map(|n| n.location.clone()).collect::<Vec<_>>();
    let mounts = vec![Location::Mount("a".into()), Location::Mount("b".into())];
    assert_eq!(where_runs(0), mounts, "cat is split per mount");
    assert_eq!(where_runs(1), mounts, "grep follows its input");
    assert_eq!(where_runs(2), vec![Location::Client], "tee writes a local file");
    // Only grep's output crosses the network.
    for edge in pipeline.crossing_edges().filter(|e| e.stream != Stream::Stderr) {
        let from = &pipeline.node(edge.from).kind;
        assert!(matches!(from, NodeKind::Command { command: 1, .. }), "{from:?} crosses");
    }
    insta::assert_snapshot!(render_text("fig2.sh", &source, &plan));
}

#[test]
fn commands_without_annotation_or_fitting_no_entry_run_at_the_client() {
    let (plan, source) = plan_with(
        CONFIG,
        &file_system(),
        "/home/user",
        "my-tool /mnt/logs/ray0.log | wc -l\ntail -f /mnt/logs/ray1.log\nf() { grep x \"$1\"; }\nf /mnt/logs/ray2.log | sort\nfor l in /mnt/logs/*.log; do grep -c error \"$l\"; done\n",
        PlanOptions::default(),
    );
    insta::assert_snapshot!(render_text("client.sh", &source, &plan));
}

#[test]
fn redirections_decide_where_data_goes() {
    insta::assert_snapshot!(check(
        "grep -c x < /mnt/logs/ray0.log 2>/dev/null\ngrep x /mnt/logs/ray1.log > /mnt/logs/out.txt 2>&1\nsort /mnt/a/x.log >> /mnt/b/sorted.txt\ncut -f1 <<< 'a b' | sort\n"
    ));
}

#[test]
fn splitting_factor_makes_copies_per_mount() {
    insta::assert_snapshot!(check_with(
        "/home/user",
        "cat /mnt/logs/ray*.log | grep -c error\n",
        PlanOptions { copies_per_mount: 2, ..PlanOptions::default() }
    ));
}

#[test]
fn nothing_is_remote_without_mounts() {
    let (plan, _) =
        plan_with("", &file_system(), "/home/user", "cat /mnt/logs/ray0.log | grep x | sort\n", PlanOptions::default());
    let pipeline = &plan.pipelines[0];
    assert!(pipeline.nodes.iter().all(|n| n.location == Location::Client));
    assert_eq!((pipeline.bash_bytes, pipeline.posh_bytes), (0, 0));
}

#[test]
fn cost_based_never_moves_more_than_greedy() {
    for script in [
        "cat /mnt/logs/ray*.log | grep 'rays traced' | sort | uniq -c\n",
        "comm -12 /mnt/a/big.txt /mnt/b/small.txt\n",
        "cat /mnt/a/x.log /mnt/b/y.log | grep foo | tee local.txt\n",
        "sort /mnt/a/x.log >> /mnt/b/sorted.txt\n",
        "grep x /home/user/notes.txt | sort > /mnt/logs/out.txt\n",
    ] {
        let bytes = |strategy| {
            let (plan, _) = plan_with(
                CONFIG,
                &file_system(),
                "/home/user",
                script,
                PlanOptions { strategy, ..PlanOptions::default() },
            );
            plan.pipelines.iter().map(|p| p.posh_bytes).sum::<u64>()
        };
        assert!(bytes(Strategy::CostBased) <= bytes(Strategy::Greedy), "{script}");
    }
}

/// Names read from input (`xargs`, `tar -T`, `--files0-from`) are names the planner never sees:
/// such commands run at the client, even in a working directory on a mount, and never split.
#[test]
fn commands_reading_file_names_from_input_run_at_the_client() {
    let script = "\
xargs cat < list.txt
tar -cf out.tar -T list.txt
find /mnt/a /mnt/b -files0-from list0.txt -type f | wc -l
wc -l --files0-from list0.txt
wc -l ray0.log
";
    let (plan, source) = plan_with(CONFIG, &file_system(), "/mnt/logs", script, PlanOptions::default());
    let first_command =
        |p: &PipelinePlan| p.copies_of(0).map(|n| (n.location.clone(), n.why.clone())).collect::<Vec<_>>();
    let from = |what: &str| Why::FileNamesFromInput(what.to_string());
    assert_eq!(first_command(&plan.pipelines[0]), [(Location::Client, from("standard input"))]);
    assert_eq!(first_command(&plan.pipelines[1]), [(Location::Client, from("`list.txt`"))]);
    assert_eq!(first_command(&plan.pipelines[2]), [(Location::Client, from("`list0.txt`"))], "one copy, unsplit");
    assert_eq!(first_command(&plan.pipelines[3]), [(Location::Client, from("`list0.txt`"))]);
    assert_eq!(plan.pipelines[4].copies_of(0).next().map(|n| n.location.clone()), Some(Location::Mount("logs".into())));
    insta::assert_snapshot!(render_text("lists.sh", &source, &plan));
}

/// Counts, checksums and heads are predicted from the bound their annotation gives, not from a
/// ratio of their input: a count of 2 GB is a line, `head -n 10` ten lines (`head -5` five),
/// `tail -n +2` no bound.
#[test]
fn bounded_outputs_are_predicted_from_the_annotation() {
    insta::assert_snapshot!(check(
        "cat /mnt/logs/ray*.log | wc -l\n\
         grep -c error /mnt/a/x.log\n\
         md5sum /mnt/a/x.log /mnt/b/y.log\n\
         head -n 10 /mnt/a/x.log | sort\n\
         head -c 4K /mnt/a/x.log | sort\n\
         head /mnt/a/x.log | sort\n\
         head -5 /mnt/a/x.log | sort\n\
         tail -3 /mnt/a/x.log | sort\n\
         tail -n +2 /mnt/a/x.log | sort\n\
         cat /mnt/logs/ray*.log | head -n 5 | sort\n"
    ));
}

/// `comm -12` prints the lines both files hold: at most the smaller file, which the planner
/// predicts (the assumed half of both files would be 410 MB here), wherever the files are. Fed
/// by a command at one proxy, it runs there, the other mount's file streamed to it (its reach
/// includes mounts that hold none of its files).
#[test]
fn common_lines_are_bounded_by_the_smaller_input() {
    let fs = file_system();
    let script = "comm -12 a/x.log b/small.txt\nsort a/x.log | comm -12 - b/small.txt\n";
    let (plan, _) = plan_in(&Library::builtin(), CONFIG, &fs, "/mnt", script, PlanOptions::default());
    let rendered: Vec<String> = plan.pipelines.iter().map(|p| render_inline(script, p)).collect();
    insta::assert_snapshot!(rendered.join("\n"), @"
    [@a ⇐20 MB]comm -12 a/x.log b/small.txt [⇒ output 20 MB]
    [@a]sort a/x.log | [@a ⇐20 MB]comm -12 - b/small.txt [⇒ output 20 MB]
    ");
    assert!(plan.pipelines.iter().all(|p| p.posh_bytes <= p.bash_bytes));
}

/// A split whose copies would send the merge more than bash moves (an output that outgrows its
/// input) is planned unsplit: no plan predicts more bytes than bash.
#[test]
fn no_split_predicts_more_than_bash_moves() {
    let mut library = Library::builtin();
    let grows = "inflate[splittable_across_input, output_ratio:4]: PARAMS:[(type:input_file,size:list,splittable)]\n";
    assert!(library.add_source("grows.posh", grows).is_empty());
    let script = "inflate /mnt/a/x.log /mnt/b/y.log | sort\ncat /mnt/a/x.log /mnt/b/y.log | grep x\n";
    let (plan, _) = plan_in(&library, CONFIG, &file_system(), "/home/user", script, PlanOptions::default());
    let rendered: Vec<String> = plan.pipelines.iter().map(|p| render_inline(script, p)).collect();
    insta::assert_snapshot!(rendered.join("\n"), @"
    [@client ⇐1.4 GB]inflate /mnt/a/x.log /mnt/b/y.log | [@client]sort
    [@a, @b]cat /mnt/a/x.log /mnt/b/y.log | [@a, @b]grep x [~700 MB, concat @client]
    ");
    assert!(plan.pipelines.iter().all(|p| p.posh_bytes <= p.bash_bytes));
}

/// Commands after a split's first command run on each piece only when no line straddles two
/// pieces: `cat` keeps a piece's missing last newline (the planner reads the files' last bytes),
/// `grep` always ends its lines, `tr` may not.
#[test]
fn pieces_reach_later_commands_only_at_line_ends() {
    let mut fs = file_system();
    fs.add_text("/mnt/a/cut.txt", "a line cut sh").add_text("/mnt/b/rest.txt", "ort\n");
    let script = "cat /mnt/a/cut.txt /mnt/b/rest.txt | grep x\n\
                  cat /mnt/a/x.log /mnt/b/y.log | grep x | tr a b | sort\n\
                  grep -h x /mnt/a/cut.txt /mnt/b/rest.txt | sort\n";
    let (plan, _) = plan_in(&Library::builtin(), CONFIG, &fs, "/home/user", script, PlanOptions::default());
    let rendered: Vec<String> = plan.pipelines.iter().map(|p| render_inline(script, p)).collect();
    insta::assert_snapshot!(rendered.join("\n"), @"
    [@a, @b]cat /mnt/a/cut.txt /mnt/b/rest.txt |[4 B, concat @a] [@a]grep x [⇒ output ~9 B]
    [@a, @b]cat /mnt/a/x.log /mnt/b/y.log | [@a, @b]grep x | [@a, @b]tr a b |[~700 MB, concat @client] [@client]sort
    [@a, @b]grep -h x /mnt/a/cut.txt /mnt/b/rest.txt | [@a, @b]sort [~9 B, sort_merge @client]
    ");
}

#[test]
fn a_literal_cd_moves_the_pipelines_after_it_and_any_other_cd_makes_them_the_shells() {
    // From the client's home: `cd /mnt/a` puts `big.txt` on mount a; `cd x || exit` is followed
    // too; after `cd "$d"` (or a cd in a loop) relative words are only known to bash, absolute
    // ones still are the planner's.
    insta::assert_snapshot!(check_with(
        "/home/user",
        "wc -l notes.txt\ncd /mnt/a\ngrep -c x big.txt\ncd ../b || exit 1\ngrep -c x small.txt\n\
         test -d /mnt/repo && cd /mnt/repo\ngit status\ncd \"$1\"\ngrep -c x small.txt\ngrep -c x /mnt/b/small.txt\n",
        PlanOptions::default()
    ));
    insta::assert_snapshot!(check_with(
        "/mnt/b",
        "grep -c x small.txt\nfor d in a b; do grep -c x small.txt; cd ..; done\n( cd /mnt/a; grep -c x big.txt )\n",
        PlanOptions::default()
    ));
}

/// What earlier runs measured of a command's shape replaces the assumption (a filter keeps half)
/// in the prediction, and the text says which figure is which; other words make another shape.
#[test]
fn measured_ratios_replace_assumed_ones_and_say_so() {
    let mut ratios = measured::Ratios::default();
    for now in 0..3 {
        ratios.record("grep IP", 100 * MB, 2 * MB, 1, now);
    }
    let script = "grep IP /mnt/a/x.log | sort\ngrep -v IP /mnt/a/x.log | sort\n";
    let (library, config, fs) =
        (Library::builtin(), Config::parse(CONFIG, Path::new("posh.toml")).unwrap(), file_system());
    let options = PlanOptions::default();
    let ctx =
        PlanContext { library: &library, config: &config, fs: &fs, cwd: "/home/user".into(), options, ratios: &ratios };
    let plan = plan_script(&ctx, script, &crate::shell::parse(script));
    insta::assert_snapshot!(render_text("measured.sh", script, &plan));
}

/// What an annotation states a command keeps of its input (`output_holds_input`: `cat`'s output
/// is its input) is never undercut by what runs measured (a split over tiny files, where a
/// command reads mostly its own libraries), though a measured ratio above it counts (`cat -A`).
#[test]
fn a_measured_ratio_never_goes_below_what_the_annotation_states() {
    let mut ratios = measured::Ratios::default();
    ratios.record("cat", 3 * MB, 7_200, 1, 1);
    ratios.record("cat -A", 3 * MB, 6 * MB, 1, 1);
    ratios.record("sed s/x//", 3 * MB, 7_200, 1, 1);
    let (library, config, fs) =
        (Library::builtin(), Config::parse(CONFIG, Path::new("posh.toml")).unwrap(), file_system());
    let ctx = PlanContext {
        library: &library,
        config: &config,
        fs: &fs,
        cwd: "/home/user".into(),
        options: PlanOptions::default(),
        ratios: &ratios,
    };
    let output = |script: &str| {
        let plan = plan_script(&ctx, script, &crate::shell::parse(script));
        let node = plan.pipelines[0].copies_of(0).next().cloned().unwrap();
        let NodeKind::Command { output, .. } = node.kind else { unreachable!() };
        output
    };
    assert_eq!(output("cat /mnt/a/x.log | sort\n"), OutputEstimate::Annotation { ratio: 1.0 });
    assert!(matches!(output("cat -A /mnt/a/x.log | sort\n"), OutputEstimate::Measured { ratio, .. } if ratio > 1.9));
    // A command whose annotation states nothing of the kind learns what runs measured.
    assert!(
        matches!(output("sed s/x// /mnt/a/x.log | sort\n"), OutputEstimate::Measured { ratio, .. } if ratio < 0.01)
    );
}

/// Planning a pipeline asks the file system each question once, though the pipeline is built
/// twice (split, then unsplit), and lists the directories its globs start from in one batch,
/// as it reads the split's seams: over a mount each question is a round trip or more.
#[test]
fn planning_asks_the_file_system_each_question_once_and_in_batches() {
    use std::cell::RefCell;
    use std::path::PathBuf;

    use crate::fs::FileMeta;

    struct Counting {
        fs: MemoryFileSystem,
        asked: RefCell<Vec<String>>,
    }
    impl Counting {
        fn ask(&self, question: &str, paths: &[PathBuf]) {
            let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            self.asked.borrow_mut().push(format!("{question} {}", paths.join(" ")));
        }
    }
    impl FileSystem for Counting {
        fn metadata(&self, path: &Path) -> Option<FileMeta> {
            self.ask("metadata", &[path.to_path_buf()]);
            self.fs.metadata(path)
        }
        fn directory_size(&self, path: &Path) -> Option<u64> {
            self.ask("directory_size", &[path.to_path_buf()]);
            self.fs.directory_size(path)
        }
        fn read_dir(&self, path: &Path) -> Vec<String> {
            self.ask("read_dir", &[path.to_path_buf()]);
            self.fs.read_dir(path)
        }
        fn read_dirs(&self, paths: &[PathBuf]) -> Vec<Vec<String>> {
            self.ask("read_dirs", paths);
            paths.iter().map(|p| self.fs.read_dir(p)).collect()
        }
        fn read_to_string(&self, path: &Path) -> Option<String> {
            self.fs.read_to_string(path)
        }
        fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
            self.ask("end_with_newlines", paths);
            self.fs.end_with_newlines(paths)
        }
    }

    let fs = Counting { fs: file_system(), asked: RefCell::default() };
    let (config, library) =
        (Config::parse(CONFIG, Path::new("posh.toml")).expect("the test config parses"), Library::builtin());
    let ctx = home_context(&config, &fs, &library);
    // Split across a and b, and planned again unsplit: the output goes to a file on a, where
    // the whole pipeline could run with b's file streamed to it.
    let script = "cat /mnt/a/*.log /mnt/b/*.log | grep x > /mnt/a/out.txt\n";
    let parsed = crate::shell::parse(script);
    let plan = plan_script(&ctx, script, &parsed);
    assert!(plan.pipelines[0].nodes.iter().any(|n| matches!(n.kind, NodeKind::Merge { .. })));
    let asked = fs.asked.into_inner();
    let mut seen = std::collections::HashSet::new();
    let repeated: Vec<&String> = asked.iter().filter(|q| !seen.insert(*q)).collect();
    assert!(repeated.is_empty(), "asked again: {repeated:?}");
    let batches: Vec<&String> = asked.iter().filter(|q| !q.starts_with("metadata")).collect();
    insta::assert_snapshot!(format!("{batches:#?}"), @r#"
    [
        "read_dirs /mnt/a /mnt/b",
        "end_with_newlines /mnt/a/x.log",
    ]
    "#);
}

/// A proxy opens no FIFO or device as a redirection (its other end is the script's, at the
/// client): a command redirected to or from one on a mount runs at the client, and the plan
/// says why.
#[test]
fn a_fifo_on_a_mount_is_opened_at_the_client() {
    let mut fs = file_system();
    fs.add_special("/mnt/logs/fifo");
    let script = "grep -c x /mnt/logs/ray0.log > /mnt/logs/fifo\nsort < /mnt/logs/fifo\ngrep -c x /mnt/logs/ray1.log\n";
    let (plan, _) = plan_with(CONFIG, &fs, "/home/user", script, PlanOptions::default());
    let command = |i: usize| {
        let nodes = &plan.pipelines[i].nodes;
        nodes.iter().find(|n| matches!(n.kind, NodeKind::Command { .. })).expect("a command").clone()
    };
    for i in 0..2 {
        assert_eq!(command(i).location, Location::Client);
        assert!(command(i).why.explain().contains("`/mnt/logs/fifo` is a FIFO or a device"), "{:?}", command(i).why);
    }
    assert_ne!(command(2).location, Location::Client, "the other file is read at its proxy");
}

/// A FIFO the script makes before (`mkfifo s1`) is planned as one, although it does not exist
/// when the script is planned: what `--explain` shows is what the runtime, which sees it, runs.
#[test]
fn a_fifo_the_script_makes_is_planned_as_one() {
    let script = "grep -c x ray0.log\nmkfifo -m 600 s1\ngrep -c x ray0.log > s1 &\nsort < s1\n";
    let (plan, _) = plan_with(CONFIG, &file_system(), "/mnt/logs", script, PlanOptions::default());
    let command = |i: usize| {
        let nodes = &plan.pipelines[i].nodes;
        nodes.iter().find(|n| matches!(n.kind, NodeKind::Command { .. })).expect("a command").clone()
    };
    assert_ne!(command(0).location, Location::Client, "before the mkfifo, ray0.log is read at its proxy");
    let (writer, reader) = (plan.pipelines.len() - 2, plan.pipelines.len() - 1);
    for i in [writer, reader] {
        assert_eq!(command(i).location, Location::Client, "{:?}", command(i).why);
        assert!(command(i).why.explain().contains("`s1` is a FIFO or a device"), "{:?}", command(i).why);
    }
}

/// A loop whose output goes to a file on the mount (`done > out.txt`) around a command that
/// reads that file, through a glob that lists it once the redirection made it: the command runs
/// at the client, where, writing the file itself, it sees that (`cat: out.txt: input file is
/// output file`); at a proxy its output is a stream. A command reading other files is not held.
#[test]
fn a_command_reading_the_file_its_loop_writes_stays_at_the_client() {
    let script =
        "for i in 1 2; do\n  cat ray*.log\ndone > ray9.log\nfor i in 1 2; do\n  cat ray0.log\ndone > out.txt\n";
    let (plan, _) = plan_with(CONFIG, &file_system(), "/mnt/logs", script, PlanOptions::default());
    let is_cat = |n: &&crate::planner::Node| matches!(&n.kind, NodeKind::Command { argv, .. } if argv.first().is_some_and(|a| a == "cat"));
    let cats: Vec<_> = plan.pipelines.iter().filter_map(|p| p.nodes.iter().find(is_cat).cloned()).collect();
    let [first, second] = &cats[..] else { panic!("two cats: {cats:?}") };
    assert_eq!(first.location, Location::Client, "{:?}", first.why);
    assert!(first.why.explain().contains("`ray9.log`, the file its output already goes to"), "{:?}", first.why);
    assert_ne!(second.location, Location::Client, "{:?}", second.why);
}

/// Bash keeps a loop, a function or a command without annotation of a pipeline, and the runs of
/// commands around it that touch a mount go to the runtime as pipelines of their own, planned
/// as the runtime plans them (a run reading bash's pipe reads it at the client). A run that
/// touches no mount, and a pipeline with no such run, stay with bash.
#[test]
fn pipelines_bash_keeps_in_part_hand_their_other_commands_over() {
    let script = "f() { tr a-z A-Z; }\n\
        cat /mnt/logs/ray0.log | grep x | while read -r l; do echo \"$l\"; done | sort\n\
        grep -c x /mnt/a/x.log |\n  f | sort\n\
        sort /home/user/notes.txt | f\n\
        zcat /mnt/logs/scan-1.gz |& nosuchcmd -x | grep -c y /mnt/b/y.log -\n";
    let (plan, source) = plan_with(CONFIG, &file_system(), "/home/user", script, PlanOptions::default());
    let mut out = String::new();
    for pipeline in &plan.pipelines {
        out.push_str(&format!("{}\n", render_inline(&source, pipeline)));
        for part in &pipeline.handed_parts {
            out.push_str(&format!("    to the runtime: {:?} {}\n", part.commands, &source[part.span.range()]));
        }
        for node in pipeline.nodes.iter().filter(|n| matches!(n.why, Why::KeptWithBash(_))) {
            out.push_str(&format!("    {}\n", node.why.explain()));
        }
    }
    out.push_str(&coverage::coverage(&plan).describe());
    insta::assert_snapshot!(out);
}

/// Top-level `for` loops: planned for each word the planner can know, as the runtime plans each
/// iteration, and sent to one proxy in requests when every iteration lands there.
#[test]
fn loops_go_to_one_proxy_when_every_iteration_lands_there() {
    let script = "for f in /mnt/logs/*.log; do\n  grep -c x \"$f\" >> /mnt/logs/counts\n  wc -l \"$f\"\ndone\n\
        for f in /mnt/logs/ray0.log /mnt/a/x.log; do grep -c x \"$f\"; done\n\
        for f in /mnt/logs/ray0.log; do grep x \"$f\" > /home/user/out; done\n\
        for f in $(ls /mnt/logs); do gzip -c \"/mnt/logs/$f\" > \"/mnt/logs/$f.gz\"; done\n\
        for f in a b; do sort \"$f\" | uniq; done\n\
        for f in /mnt/logs/ray1.log; do sort $f; done\n";
    // More iterations than a request holds: the loop goes in requests of 256 pipelines.
    let script = format!("{script}for f in {}; do grep -c x \"$f\"; done\n", ["/mnt/logs/ray0.log"; 300].join(" "));
    let (plan, source) = plan_with(CONFIG, &file_system(), "/home/user", &script, PlanOptions::default());
    let lines = crate::text::LineIndex::new(&source);
    let mut out = String::new();
    for the_loop in &plan.loops {
        let line = lines.line_of(the_loop.span.start) + 1;
        out.push_str(&format!("{line}: {} pipeline(s): {}\n", the_loop.body.len(), the_loop.runs.describe()));
    }
    out.push_str(&coverage::coverage(&plan).describe());
    insta::assert_snapshot!(out);
}

/// bash in these tests: accepts every text but one with a `[[` test broken before its operand.
fn bash_of_tests(text: &str) -> crate::shell::BashSyntax {
    if text.contains("[[ -f\n") {
        crate::shell::BashSyntax::Rejected(
            "line 2: unexpected token `newline', conditional binary operator expected".into(),
        )
    } else {
        crate::shell::BashSyntax::Accepted
    }
}

fn explain_as_a_run_does(script: &str) -> String {
    let (config, library) =
        (Config::parse(CONFIG, Path::new("posh.toml")).expect("the test config parses"), Library::builtin());
    let fs = file_system();
    let ctx = home_context(&config, &fs, &library);
    let parsed = crate::shell::parse_as_bash(script, &mut bash_of_tests);
    let mut plan = plan_script(&ctx, script, &parsed);
    let rejected = parsed.bash_rejects.clone().or_else(|| plan.confirm_with_bash(script, &parsed, &mut bash_of_tests));
    let json = serde_json::to_value(render::ExplainDocument::new("t.sh", script, &plan)).expect("JSON");
    format!(
        "{}\nbash rejects: {rejected:?}\nleft_to_bash: {}\n",
        render_text("t.sh", script, &plan),
        json.get("left_to_bash").map_or("none".into(), |v| v.to_string())
    )
}

#[test]
fn statements_posh_cannot_parse_stay_with_bash_and_the_rest_is_planned() {
    insta::assert_snapshot!(explain_as_a_run_does(
        "select f in /mnt/logs/*.log; do\n  wc -l \"$f\"\n  break\ndone\nfor ((i = 0; i < 2; i++)); do\n  cat /mnt/logs/ray0.log | wc -l\ndone\ngrep -c rays /mnt/logs/ray1.log\nwc() [[ -n $1 ]]\nwc -l /mnt/logs/ray2.log\n"
    ));
}

#[test]
fn a_script_bash_rejects_hands_nothing_over() {
    insta::assert_snapshot!(explain_as_a_run_does("grep -c rays /mnt/logs/ray1.log\n[[ -f\n]]\n"));
}

/// Planning from `/home/user` with the default options and no measured ratios.
fn home_context<'a>(config: &'a Config, fs: &'a dyn FileSystem, library: &'a Library) -> PlanContext<'a> {
    PlanContext {
        library,
        config,
        fs,
        cwd: "/home/user".into(),
        options: PlanOptions::default(),
        ratios: &measured::NO_RATIOS,
    }
}

/// The `--explain` text of `script` run with `env` (the whole environment) and `args`.
fn explain_given(script: &str, env: &[(&str, &str)], args: &[&str]) -> String {
    let config = Config::parse(CONFIG, Path::new("posh.toml")).expect("the test config parses");
    let library = Library::builtin();
    let fs = file_system();
    let ctx = PlanContext {
        library: &library,
        config: &config,
        fs: &fs,
        cwd: "/home/user".into(),
        options: PlanOptions::default(),
        ratios: &measured::NO_RATIOS,
    };
    let parsed = crate::shell::parse(script);
    let inputs = crate::values::Inputs {
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        env_complete: true,
        args: Some(args.iter().map(|a| a.to_string()).collect()),
    };
    let plan = plan_script_given(&ctx, script, &parsed, &inputs);
    render_text("s.sh", script, &plan)
}

#[test]
fn words_are_planned_with_the_values_the_script_is_given() {
    // The environment, the arguments, assignments and defaults.
    insta::assert_snapshot!(explain_given(
        "IN=${IN:-/mnt/a/x.log}\nOUT=${2:-/home/user/out}\ncat \"$IN\" | grep error | sort > $OUT/errors\nwc -l \"$1\"\n",
        &[("IN", "/mnt/b/y.log")],
        &["/mnt/a/big.txt"],
    ));
}

#[test]
fn loop_variables_are_planned_with_every_value() {
    // Every file of the glob is at logs: the loop runs there, and says so before the run.
    insta::assert_snapshot!(explain_given(
        "for f in /mnt/logs/ray*.log; do\n  grep -c rays \"$f\"\ndone\nfor g in /mnt/a/x.log /mnt/b/y.log; do\n  grep -c rays \"$g\"\ndone\n",
        &[],
        &[],
    ));
}

#[test]
fn what_the_analysis_does_not_know_is_placed_when_the_script_runs() {
    let text = explain_given("read IN\ncat \"$IN\" | sort\nX=$(ls)\ngrep a $X\n", &[], &[]);
    assert!(text.contains("[@client]cat \"$IN\""), "{text}");
    assert!(text.contains("not known before the run: `$IN`: `read` assigns it"), "{text}");
    assert!(text.contains("not known before the run: `$X`"), "{text}");
    // A FIFO made under a name only bash knows may be any path a value names.
    let fifo = explain_given("D=/mnt/a\nmkfifo \"$D/p\"\nwc -l \"$D/x.log\"\n", &[], &[]);
    assert!(fifo.contains("[@client]wc -l \"$D/x.log\""), "{fifo}");
    // Known values on no mount: the pipeline is bash's, as with the literal words (a run plans
    // with the same values).
    let plan_text = explain_given("X=/home/user/notes.txt\ncat \"$X\" | sort\n", &[], &[]);
    assert!(plan_text.contains("0 of 2 pipelines go to the posh runtime"), "{plan_text}");
    assert!(plan_text.contains("1 need no proxy"), "{plan_text}");
}

/// Do no harm (issue 40): on a datacenter link a call of the runtime costs more than the round
/// trips through the mount it saves for a small file, so the command stays at the client and
/// says why, and bash runs the pipeline (no call at all); a large file there, or the small one
/// over a WAN, still goes to its proxy.
#[test]
fn a_call_that_does_not_pay_stays_at_the_client() {
    let link = |rtt: &str, rate: &str| {
        format!(
            "[client]\nbandwidth = \"{rate}\"\nrtt = \"{rtt}\"\n\n[[mount]]\npath = \"/mnt/d\"\nproxy = \"10.0.0.9:4433\"\n"
        )
    };
    let mut fs = MemoryFileSystem::new();
    fs.add_file("/mnt/d/note.txt", 2_000).add_file("/mnt/d/big.log", 200 * MB);
    let script = "grep -c TODO /mnt/d/note.txt\ngrep -c TODO /mnt/d/big.log\n";
    let mut shown = String::new();
    for (name, config) in [("datacenter", link("0.5ms", "5Gbit")), ("WAN", link("20ms", "600Mbit"))] {
        let (plan, source) = plan_with(&config, &fs, "/home/user", script, PlanOptions::default());
        shown.push_str(&format!("{name}:\n"));
        for p in &plan.pipelines {
            let command = p.nodes.iter().find(|n| matches!(n.kind, NodeKind::Command { .. })).expect("a command");
            shown.push_str(&format!("  {}\n    {}\n", render_inline(&source, p), command.why.explain()));
            // Every command at the client: bash runs it, the runtime's call spared.
            shown.push_str(&format!("    handed to the runtime: {}\n", p.may_touch_a_mount()));
        }
    }
    insta::assert_snapshot!(shown);
}

/// A glob over one mount is expanded by that mount's proxy, unless the script shows bash's
/// expansion (`set -x`, anywhere in it) or changes it (GLOBIGNORE): the rule reads the whole
/// text once per script, not once per word (`rewrite::TextScope`).
#[test]
fn a_traced_script_or_one_setting_globignore_keeps_its_globs_with_bash() {
    let globbed = |script: &str| -> Vec<String> {
        let (plan, _) = plan_with(CONFIG, &file_system(), "/home/user", script, PlanOptions::default());
        plan.pipelines
            .iter()
            .flat_map(|p| p.globs_at_proxy.iter().map(|g| format!("{} at {}", g.word, g.mount)))
            .collect()
    };
    let pipeline = "grep -c ERROR /mnt/logs/ray*.log | sort\n";
    assert_eq!(globbed(pipeline), ["/mnt/logs/ray*.log at logs"]);
    for before in ["set -x\n", "set -o xtrace\n", "GLOBIGNORE=/mnt/logs/ray0.log\n"] {
        assert_eq!(globbed(&format!("{before}{pipeline}")), Vec::<String>::new(), "{before}");
        // Later in the script counts too: bash's text is one.
        assert_eq!(globbed(&format!("{pipeline}{before}")), Vec::<String>::new(), "{before} after");
    }
}

/// A loop whose body has nothing for the runtime (bash keeps `read` and `echo`, though a word
/// of the `echo` is known only when it runs) is bash's as it is, and `--explain` says so rather than that its
/// pipelines go to the runtime one iteration at a time: the rule is the rewrite's
/// (`PipelinePlan::goes_to_runtime`).
#[test]
fn a_loop_whose_body_has_nothing_for_the_runtime_is_bash_as_it_is() {
    let text = explain_given("for f in /mnt/logs/ray*.log; do\n  read -r n\n  echo \"$f $n\"\ndone\n", &[], &[]);
    assert!(text.contains("bash runs the loop as it is: no pipeline of its body goes to the runtime"), "{text}");
    assert!(!text.contains("one iteration at a time"), "{text}");
}
