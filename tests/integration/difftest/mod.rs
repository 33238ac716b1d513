//! The differential tester: random bash scripts (`generate`) run under `bash ./case.sh` and
//! `posh-exec ./case.sh` in every mode, compared as the oracle compares its cases (stdout,
//! stderr, status, the files left, `--explain` against `--stats`); a script that differs is
//! reduced (`minimize`) and written out as a regression case. The checked-in regression cases
//! (`tests/difftest/cases/`) run every time. `tests/difftest/README.md` says how to run it longer.
//!
//! Modes: the oracle's `local`, `mounted` and `proxied`, and `forced`: `mounted` with a pipeline
//! over the mount put in front of the script's first line (`FORCED_PREFIX`, on that same line so
//! that every line keeps its number), so posh-exec always takes the rewritten-script path.

mod generate;
mod minimize;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::oracle::{Aspect, Capture, Case, Mode, Run, Setting, compare, posh_exec, run_case};
use generate::Features;

/// The grammar features the fixed-seed test leaves out, each because posh-exec still differs
/// from bash there: a difference being fixed (the fix switches its feature back on), or one
/// docs/running.md says cannot be removed.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[(
    "builtin_list",
    "docs/running.md: `__posh_run` is in `enable` and `compgen -b`, as a builtin bash can call is in its listings",
)];

/// The fixed-seed test's budget: scripts, each in every mode.
const DEFAULT_SEED: u64 = 36;
const DEFAULT_COUNT: u64 = 48;
/// Tries per minimization (each runs bash twice and posh-exec once).
const MINIMIZE_BUDGET: usize = 120;
/// At most this many distinct differences are minimized per run (each takes a while).
const MINIMIZED_PER_RUN: usize = 6;

/// Put on the script's first line in the `forced` mode: a pipeline posh-exec hands over.
const FORCED_PREFIX: &str = "cat data/words.txt | wc -l > /dev/null; ";

/// A regression case's header has this many lines, and a script being minimized gets as many
/// blank comment lines in front, so that what was minimized is what is written, line for line.
const HEADER_LINES: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum DiffMode {
    Local,
    Mounted,
    Proxied,
    Forced,
}

const MODES: [DiffMode; 4] = [DiffMode::Local, DiffMode::Mounted, DiffMode::Proxied, DiffMode::Forced];

impl DiffMode {
    fn name(self) -> &'static str {
        match self {
            DiffMode::Local => "local",
            DiffMode::Mounted => "mounted",
            DiffMode::Proxied => "proxied",
            DiffMode::Forced => "forced",
        }
    }

    fn setting(self) -> Setting {
        let mode = match self {
            DiffMode::Local => Mode::Local,
            DiffMode::Mounted | DiffMode::Forced => Mode::Mounted,
            DiffMode::Proxied => Mode::Proxied,
        };
        let mut setting = Setting::new(mode, Capture::Pipes);
        // Generated scripts end in well under a second; a hang is reported, not waited out.
        setting.timeout = Duration::from_secs(20);
        setting
    }

    fn script(self, source: &str) -> String {
        match self {
            DiffMode::Forced => format!("{FORCED_PREFIX}{source}"),
            _ => source.to_string(),
        }
    }
}

/// What kind of difference a run showed: an aspect of the outcome, or a plan the runtime did not
/// follow, or bash disagreeing with itself (then the generator wrote a racy script).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Differs(Aspect),
    Plan,
    BashNondeterministic,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Differs(Aspect::Status) => "status",
            Kind::Differs(Aspect::Stdout) => "stdout",
            Kind::Differs(Aspect::Stderr) => "stderr",
            Kind::Differs(Aspect::Files) => "files",
            Kind::Plan => "plan",
            Kind::BashNondeterministic => "bash-nondeterministic",
        }
    }
}

/// One mode's settings, made once per test (the `proxied` one starts its posh-proxy).
struct Modes(Vec<(DiffMode, Setting)>);

impl Modes {
    fn new(modes: &[DiffMode]) -> Modes {
        Modes(modes.iter().map(|&mode| (mode, mode.setting())).collect())
    }

    fn setting(&self, mode: DiffMode) -> &Setting {
        &self.0.iter().find(|(m, _)| *m == mode).expect("a setting per mode").1
    }
}

/// What one script did under bash and posh-exec in one mode.
struct Comparison {
    kinds: Vec<Kind>,
    /// Each difference in a few words that survive the script's reduction (digits dropped: line
    /// numbers change), so the minimizer keeps reducing toward the same difference, not another.
    signatures: Vec<String>,
    report: String,
    /// posh-exec's runtime ran some pipeline (the `--stats` records), with a mount.
    handed: bool,
    bash_syntax_error: bool,
}

fn run_in(mode: DiffMode, setting: &Setting, source: &str) -> (Run, Run) {
    let case = Case {
        name: "case".into(),
        source: mode.script(source),
        args: Vec::new(),
        stdin: None,
        status: 0,
        handed: None,
        handed_mounted: None,
    };
    (run_case(&case, setting, Path::new("bash")), run_case(&case, setting, &posh_exec()))
}

fn compare_in(modes: &Modes, mode: DiffMode, source: &str) -> Comparison {
    let setting = modes.setting(mode);
    let (bash, posh) = run_in(mode, setting, source);
    let mut kinds = Vec::new();
    let mut report = String::new();
    for difference in compare(&bash, &posh) {
        kinds.push(Kind::Differs(difference.aspect));
        report.push_str(&difference.text);
    }
    for disagreement in &posh.plan_disagreements {
        kinds.push(Kind::Plan);
        let _ = writeln!(report, "    --explain and --stats disagree: {disagreement}");
    }
    if !kinds.is_empty() {
        // Only a script bash runs the same way twice says anything about posh-exec.
        let (again, _) = run_in(mode, setting, source);
        if !compare(&bash, &again).is_empty() {
            kinds = vec![Kind::BashNondeterministic];
            report = "    bash itself gave two different results (a racy script: a generator bug)\n".into();
        }
    }
    kinds.sort();
    kinds.dedup();
    let signatures = if kinds.is_empty() { Vec::new() } else { signatures(&bash, &posh) };
    Comparison {
        kinds,
        signatures,
        report,
        handed: posh.handed.is_some_and(|(pipelines, _)| pipelines > 0),
        bash_syntax_error: String::from_utf8_lossy(&bash.outcome.stderr).contains("syntax error"),
    }
}

/// The differences between two runs in a few words each, the most telling first: the exit
/// statuses, the lines only one of them wrote (posh-exec's first), the files that differ, the plan
/// disagreements.
fn signatures(bash: &Run, posh: &Run) -> Vec<String> {
    let without_digits = |text: &str| text.chars().filter(|c| !c.is_ascii_digit()).collect::<String>();
    let mut found = Vec::new();
    if bash.outcome.status != posh.outcome.status {
        found.push(format!("status: bash {}, posh-exec {}", bash.outcome.status, posh.outcome.status));
    }
    for (stream, b, p) in
        [("stdout", &bash.outcome.stdout, &posh.outcome.stdout), ("stderr", &bash.outcome.stderr, &posh.outcome.stderr)]
    {
        let (b, p) = (String::from_utf8_lossy(b), String::from_utf8_lossy(p));
        let (b_lines, p_lines): (Vec<&str>, Vec<&str>) = (b.lines().collect(), p.lines().collect());
        found.extend(
            p_lines
                .iter()
                .filter(|line| !b_lines.contains(line))
                .map(|l| format!("{stream} posh-exec: {}", without_digits(l))),
        );
        found.extend(
            b_lines
                .iter()
                .filter(|line| !p_lines.contains(line))
                .map(|l| format!("{stream} bash: {}", without_digits(l))),
        );
        if b != p && b_lines.iter().all(|l| p_lines.contains(l)) && p_lines.iter().all(|l| b_lines.contains(l)) {
            found.push(format!("{stream}: the same lines, otherwise"));
        }
    }
    let paths = bash.files.keys().chain(posh.files.keys());
    found
        .extend(paths.filter(|path| bash.files.get(*path) != posh.files.get(*path)).map(|path| format!("file {path}")));
    found.extend(posh.plan_disagreements.iter().map(|d| format!("plan: {}", without_digits(d))));
    found.dedup();
    found
}

/// A difference found in one script and mode.
struct Finding {
    seed: u64,
    mode: DiffMode,
    kinds: Vec<Kind>,
    script: String,
    report: String,
}

/// Reduces a finding's script to what still differs in the same mode in the same first way (its
/// first signature), with bash deterministic and no syntax error bash did not have before.
fn minimize_finding(modes: &Modes, finding: &Finding) -> String {
    let padding = "#\n".repeat(HEADER_LINES);
    let original = compare_in(modes, finding.mode, &format!("{padding}{}", finding.script));
    let Some(signature) = original.signatures.first().cloned() else {
        // The header's lines alone make the difference go (it was on line 1): keep it whole.
        return finding.script.clone();
    };
    let mut still_fails = |candidate: &str| {
        let comparison = compare_in(modes, finding.mode, &format!("{padding}{candidate}"));
        comparison.signatures.contains(&signature) && (original.bash_syntax_error || !comparison.bash_syntax_error)
    };
    minimize::minimize(&finding.script, MINIMIZE_BUDGET, &mut still_fails)
}

/// A regression case's text: `HEADER_LINES` lines of header, then the script.
fn regression_case(finding: &Finding, script: &str) -> String {
    let kinds: Vec<&str> = finding.kinds.iter().map(|k| k.name()).collect();
    let header = format!(
        "# Found by the differential tester (tests/integration/difftest), minimized.\n\
         # seed: {}\n\
         # mode: {}\n\
         # differed: {}\n",
        finding.seed,
        finding.mode.name(),
        kinds.join(", ")
    );
    assert_eq!(header.lines().count(), HEADER_LINES);
    format!("{header}{script}")
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value.trim().parse().unwrap_or_else(|e| panic!("${name}={value:?}: {e}")),
        Err(_) => default,
    }
}

/// The features of the fixed-seed test, changed by `$POSH_DIFFTEST_FEATURES` (`all`, a list,
/// or `+NAME,-NAME` relative to the default).
fn features() -> Features {
    let off: Vec<&str> = KNOWN_DIFFERENCES.iter().map(|(name, _)| *name).collect();
    let default = Features::all_but(&off);
    match std::env::var("POSH_DIFFTEST_FEATURES") {
        Ok(list) => Features::parse(&list, &default).unwrap_or_else(|e| panic!("$POSH_DIFFTEST_FEATURES: {e}")),
        Err(_) => default,
    }
}

fn selected_modes() -> Vec<DiffMode> {
    match std::env::var("POSH_DIFFTEST_MODES") {
        Ok(list) => list
            .split(',')
            .map(|name| {
                *MODES.iter().find(|mode| mode.name() == name.trim()).unwrap_or_else(|| {
                    panic!("$POSH_DIFFTEST_MODES: no mode {name:?} (local, mounted, proxied, forced)")
                })
            })
            .collect(),
        Err(_) => MODES.to_vec(),
    }
}

/// Where minimized cases are written: `$POSH_DIFFTEST_SAVE`, or a directory in `target/`.
fn save_dir() -> PathBuf {
    std::env::var_os("POSH_DIFFTEST_SAVE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("difftest"))
}

/// Random scripts: `$POSH_DIFFTEST_COUNT` of them (48) from `$POSH_DIFFTEST_SEED` (36; script
/// `i` has seed `SEED + i`), in every mode (`$POSH_DIFFTEST_MODES` to choose).
#[test]
fn difftest_random_scripts() {
    let seed = env_number("POSH_DIFFTEST_SEED", DEFAULT_SEED);
    let count = env_number("POSH_DIFFTEST_COUNT", DEFAULT_COUNT);
    let features = features();
    let mode_list = selected_modes();
    let modes = Modes::new(&mode_list);
    let start = Instant::now();
    let mut findings: Vec<Finding> = Vec::new();
    // Per mode, the runs in which posh-exec's runtime ran some pipeline: a mode where none did
    // tested nothing of the rewrite.
    let mut handed: BTreeMap<DiffMode, usize> = BTreeMap::new();
    for script_seed in seed..seed + count {
        let script = generate::script(script_seed, &features);
        for &mode in &mode_list {
            let comparison = compare_in(&modes, mode, &script);
            *handed.entry(mode).or_default() += usize::from(comparison.handed);
            if !comparison.kinds.is_empty() {
                findings.push(Finding {
                    seed: script_seed,
                    mode,
                    kinds: comparison.kinds,
                    script: script.clone(),
                    report: comparison.report,
                });
            }
        }
    }
    let off: Vec<&str> = generate::FEATURES.iter().map(|(name, _)| *name).filter(|name| !features.has(name)).collect();
    println!(
        "difftest: seeds {seed}..{}, {count} scripts x {} modes, {} differ, runs that handed pipelines to the runtime: {}, \
         features off: [{}], {:.1?}",
        seed + count,
        mode_list.len(),
        findings.len(),
        handed.iter().map(|(mode, runs)| format!("{} {runs}", mode.name())).collect::<Vec<_>>().join(", "),
        off.join(", "),
        start.elapsed()
    );
    if count >= 10 {
        for mode in [DiffMode::Mounted, DiffMode::Proxied, DiffMode::Forced] {
            assert!(
                handed.get(&mode).is_none_or(|runs| *runs > 0),
                "no run in mode {} handed a pipeline to posh-exec's runtime: the mount is not seen",
                mode.name()
            );
        }
    }
    if !findings.is_empty() {
        panic!(
            "{}",
            report_findings(&modes, &findings, &format!("POSH_DIFFTEST_SEED={seed} POSH_DIFFTEST_COUNT={count}"))
        );
    }
}

/// Minimizes one finding per distinct (mode, kinds) and says what differed, where the cases
/// were written and how to run the seed again.
fn report_findings(modes: &Modes, findings: &[Finding], rerun: &str) -> String {
    let mut distinct: BTreeMap<(Vec<Kind>, DiffMode), Vec<&Finding>> = BTreeMap::new();
    for finding in findings {
        distinct.entry((finding.kinds.clone(), finding.mode)).or_default().push(finding);
    }
    let dir = save_dir();
    std::fs::create_dir_all(&dir).expect("create the directory for minimized cases");
    let mut report = format!(
        "{} runs differ between bash and posh-exec ({} distinct by mode and kind); run again with {rerun}\n",
        findings.len(),
        distinct.len()
    );
    for (i, ((kinds, mode), found)) in distinct.iter().enumerate() {
        let first = found[0];
        let seeds: Vec<String> = found.iter().map(|f| f.seed.to_string()).collect();
        let kinds: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        let _ = writeln!(report, "\n{} in mode {}: seeds {}", kinds.join("+"), mode.name(), seeds.join(" "));
        let _ = write!(report, "  seed {}:\n{}", first.seed, first.report);
        if i >= MINIMIZED_PER_RUN || std::env::var("POSH_DIFFTEST_MINIMIZE").is_ok_and(|v| v == "0") {
            continue;
        }
        let minimized = minimize_finding(modes, first);
        let path = dir.join(format!("seed{}-{}.sh", first.seed, mode.name()));
        std::fs::write(&path, regression_case(first, &minimized)).expect("write the minimized case");
        let _ = writeln!(report, "  minimized ({}):\n{}", path.display(), indent_block(&minimized));
    }
    report
}

fn indent_block(text: &str) -> String {
    text.lines().map(|line| format!("    | {line}\n")).collect()
}

/// The regression cases of `tests/difftest/cases/` (or of `$POSH_DIFFTEST_CASES`, such as
/// `tests/difftest/pending`), each in every mode.
#[test]
fn difftest_regression_cases() {
    let dir = std::env::var_os("POSH_DIFFTEST_CASES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/difftest/cases"));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/difftest/cases exists")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sh"))
        .collect();
    paths.sort();
    let modes = Modes::new(&MODES);
    let mut report = String::new();
    for path in &paths {
        let script = std::fs::read_to_string(path).expect("a case is UTF-8 text");
        for mode in MODES {
            let comparison = compare_in(&modes, mode, &script);
            if !comparison.kinds.is_empty() {
                let _ = write!(report, "  {} in mode {}:\n{}", path.display(), mode.name(), comparison.report);
            }
        }
    }
    println!("difftest regression cases: {}", paths.len());
    assert!(report.is_empty(), "regression cases differ between bash and posh-exec:\n{report}");
}
