//! What a keystroke costs: a varied 5,000-line script (`common::varied_script`) is edited by one
//! character, and the language
//! server's work for the new version is timed, parse and plan included: the inlay hints of the
//! whole script and its diagnostics. Target: below 50 ms. And a script assigning 4,000
//! variables, opened: linear in its assignments.
//!
//! `cargo bench -p posh-lsp --bench edit`

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use posh_lsp::ide::{self, diagnostics, inlay_hints};

fn bench(c: &mut Criterion) {
    let fs = common::file_system();
    let world = common::world(&fs);
    let before = common::varied_script(5_000, 1);
    // One character typed in the middle: `DEBUG` becomes `DEBUGx` in one pipeline.
    let middle = before.len() / 2;
    let at = middle + before[middle..].find("DEBUG").expect("a DEBUG past the middle") + "DEBUG".len();
    let mut after = before.clone();
    after.insert(at, 'x');
    let lines = after.lines().count();
    // The server keeps each document's pipeline plans: the version before the edit warmed them.
    let mut warm = ide::AnalysisCache::default();
    ide::analyze_script_cached(&world, &fs, &before, &mut warm);
    let work = |text: &str, cache: &mut ide::AnalysisCache| {
        let analysis = ide::analyze_script_cached(&world, &fs, text, cache);
        let hints = inlay_hints::inlay_hints(&world, text, &analysis, None);
        let diags = diagnostics::script_diagnostics(&world, &analysis);
        (analysis.plan.pipelines.len(), hints.len(), diags.len())
    };
    let (pipelines, hints, diags) = work(&after, &mut warm.clone());
    assert!(pipelines > 1_500 && hints > 500 && diags > 100, "{pipelines} {hints} {diags}");
    let mut group = c.benchmark_group(format!("{lines}-line script, one character edited"));
    group.sample_size(20);
    group.bench_function("inlay hints + diagnostics", |b| {
        b.iter_batched_ref(|| warm.clone(), |cache| work(black_box(&after), cache), BatchSize::SmallInput)
    });
    group.bench_function("inlay hints + diagnostics, nothing cached", |b| {
        b.iter(|| work(black_box(&after), &mut ide::AnalysisCache::default()))
    });
    group.bench_function("inlay hints of one screen", |b| {
        b.iter(|| {
            let analysis = ide::analyze_script_cached(&world, &fs, black_box(&after), &mut warm.clone());
            inlay_hints::inlay_hints(&world, &after, &analysis, Some(posh_core::Span::new(at - 2_000, at + 2_000)))
        })
    });
    group.bench_function("parse only", |b| b.iter(|| posh_core::shell::parse_tolerant(black_box(&after))));
    group.finish();

    // A state is kept before every pipeline: a map of variables copied whole at each assignment
    // made an opening quadratic in them (4,000: 0.35 to 0.9 s and 465 MB in `posh-lsp check`).
    let assigning: String =
        (0..4_000).map(|i| format!("v{i}=/mnt/logs/ray{}.log\ngrep -c error \"$v{i}\" | wc -l\n", i % 3)).collect();
    let mut group = c.benchmark_group("a script assigning 4,000 variables");
    group.sample_size(10);
    group.bench_function("inlay hints + diagnostics, nothing cached", |b| {
        b.iter(|| work(black_box(&assigning), &mut ide::AnalysisCache::default()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
