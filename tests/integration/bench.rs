//! The benchmark harness (`bench/paper/`, Python): its unit tests, its report, and one whole run
//! of every workload at the tiny scale in its real-deployment setting, with the data on embedded
//! proxies, where a difference between bash's and posh-exec's outputs fails the run. (The
//! emulated link needs root and the rig; `.ci/run` runs the harness on it once, as a smoke run.)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::oracle::{posh_exec, run_with_timeout};

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/paper")
}

fn assert_success(what: &str, outcome: &crate::oracle::Outcome) {
    assert_eq!(
        outcome.status,
        "exit 0",
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&outcome.stdout),
        String::from_utf8_lossy(&outcome.stderr)
    );
}

#[test]
fn bench_harness_unit_tests_pass() {
    let mut python = Command::new("python3");
    python.args(["-m", "unittest", "discover", "-s"]).arg(bench_dir().join("tests"));
    let outcome = run_with_timeout(python, Duration::from_secs(300));
    assert_success("the harness's unit tests", &outcome);
}

#[test]
fn bench_report_renders_a_fixed_run() {
    let mut python = Command::new("python3");
    python.current_dir(bench_dir()).args([
        "-c",
        "import json; from poshbench import report; \
         print(report.markdown(json.load(open('tests/fixture-report.json'))), end='')",
    ]);
    let outcome = run_with_timeout(python, Duration::from_secs(60));
    assert_success("rendering the fixture", &outcome);
    insta::assert_snapshot!(String::from_utf8(outcome.stdout).unwrap());
}

#[test]
fn bench_runs_every_workload_on_embedded_proxies_with_identical_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = String::new();
    for i in 0..5 {
        std::fs::create_dir(dir.path().join(format!("m{i}"))).unwrap();
        config.push_str(&format!("[[mount]]\npath = \"m{i}\"\nproxy = \"embedded\"\n\n"));
    }
    std::fs::write(dir.path().join("posh.toml"), config).unwrap();
    let bin_dir = posh_exec().parent().unwrap().to_owned();
    let mut run = Command::new(bench_dir().join("run"));
    run.current_dir(dir.path())
        .args(["--real", "posh.toml", "--storage-shell", "bash -c", "--scale", "tiny", "--runs", "1"])
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg("--out")
        .arg(dir.path().join("results"))
        .arg("--work")
        .arg(dir.path().join("work"));
    let outcome = run_with_timeout(run, Duration::from_secs(600));
    assert_success("the harness on embedded proxies", &outcome);

    let folder = std::fs::read_dir(dir.path().join("results")).unwrap().next().unwrap().unwrap().path();
    for file in ["report.md", "figure.svg"] {
        assert!(folder.join(file).is_file(), "no {file} in {}", folder.display());
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("report.json")).unwrap()).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 13, "one result per workload: {results:#?}");
    for result in results {
        let name = &result["workload"];
        assert_eq!(result["check"]["identical"], true, "{name}: {:#}", result["check"]);
        // One plan: what --explain showed is where --stats says each command ran.
        assert_eq!(result["plan_disagreements"], serde_json::json!([]), "{name}: {:#}", result["placement"]);
        for system in ["a", "b", "b_warm"] {
            assert!(result["systems"][system]["median"].as_f64().unwrap() > 0.0, "{name}: no time for {system}");
        }
        // c (bash through the storage shell) runs where the workload lives on one mount.
        let one_mount = result["script"].as_str().unwrap().matches("/posh-bench/").count() == 0;
        assert_eq!(result["systems"].get("c").is_some(), one_mount, "{name}: {:#}", result["systems"]);
    }
    // The placement comes from --stats: the large log's pipeline ran at its mount's proxy.
    let large = results.iter().find(|r| r["workload"] == "one-large-log").unwrap();
    let ran = &large["placement"][0]["ran"];
    assert!(ran.as_array().unwrap().iter().all(|c| c["location"] == "m0"), "{ran:#}");
}
