//! Placement by value sets: a pipeline whose words read parameters the value analysis knows
//! (`crate::values`) is planned once per combination of their values, each time with the words
//! bash would give it, written back as literals and globs (`cat "$IN"` as `cat '/data/in.txt'`).
//! When every combination places every command alike, that plan holds for all of them and is the
//! pipeline's, with the values it was made with (`ValueUse`); when they differ, the pipeline is
//! planned with those words unknown, placed when it runs, as a word only bash knows always was.
//! Words whose values posh does not know stay as written, and say why (`UnknownValue`).

use std::path::Path;

use super::model::{Location, NodeKind, PipelinePlan, UnknownValue, VALUES_SHOWN, ValueUse};
use crate::shell::{Pipeline, RedirectTarget, Word};
use crate::text::Span;
use crate::values::{self, Mode, Param, Positionals, State, Value, Values};

/// A pipeline as each combination of its parameters' values makes it.
pub(super) struct Variants {
    /// The pipeline with its words written back, once per distinct result.
    pub pipelines: Vec<Pipeline>,
    pub uses: Vec<ValueUse>,
    pub unknown: Vec<UnknownValue>,
}

/// The words of `pipeline` the planner expands: commands' words and redirections' file targets.
fn planned_words(pipeline: &Pipeline) -> impl Iterator<Item = &Word> {
    pipeline.commands.iter().flat_map(|c| {
        c.words.iter().chain(c.redirects.iter().filter_map(|r| match &r.target {
            RedirectTarget::File(word) => Some(word),
            _ => None,
        }))
    })
}

/// `None` when no word of `pipeline` reads a parameter, or the analysis did not reach it.
pub(super) fn variants(pipeline: &Pipeline, values: &Values) -> Option<Variants> {
    let reading: Vec<(&Word, Vec<Param>)> = planned_words(pipeline)
        .map(|w| (w, values::params_in(&w.raw)))
        .filter(|(_, params)| !params.is_empty())
        .collect();
    if reading.is_empty() {
        return None;
    }
    let state = values.before(pipeline.span.start)?;
    let mut unknown: Vec<UnknownValue> = Vec::new();
    let mut known: Vec<Param> = Vec::new();
    for (word, param) in reading.iter().flat_map(|(word, params)| params.iter().map(move |p| (word, p))) {
        if known.contains(param) || unknown.iter().any(|u| u.parameter == label(param)) {
            continue;
        }
        match why_unknown(state, param) {
            Some(why) => unknown.push(UnknownValue { parameter: label(param), why, span: word.span }),
            None => known.push(param.clone()),
        }
    }
    let pinnings = match values::pinnings(state, &known) {
        Ok(pinnings) => pinnings,
        Err(why) => {
            let first_reading = |p: &Param| reading.iter().find(|(_, params)| params.contains(p)).map(|(w, _)| w.span);
            unknown.extend(known.iter().map(|p| UnknownValue {
                parameter: label(p),
                why: why.clone(),
                span: first_reading(p).unwrap_or(pipeline.span),
            }));
            known.clear();
            vec![values::Pinned { state, named: Default::default(), positional: None }]
        }
    };
    // A redirection's target must stay one word (bash says "ambiguous redirect" otherwise).
    let targets: Vec<Span> = pipeline
        .commands
        .iter()
        .flat_map(|c| &c.redirects)
        .filter_map(|r| match &r.target {
            RedirectTarget::File(word) => Some(word.span),
            _ => None,
        })
        .collect();
    let is_target = |word: &Word| targets.contains(&word.span);
    let mut pipelines: Vec<Pipeline> = Vec::new();
    // Each distinct result once, found among those with the same words' hash: a loop over a
    // thousand files compared each result with every one before it (half a million pipelines
    // compared, a third of `--explain`'s CPU for such a loop).
    let mut by_words: std::collections::HashMap<u64, Vec<usize>, rustc_hash::FxBuildHasher> = Default::default();
    for pinned in &pinnings {
        let mut written = pipeline.clone();
        let mut expand = |word: &Word| -> Option<Vec<Word>> {
            let params = values::params_in(&word.raw);
            if params.is_empty() || !params.iter().all(|p| known.contains(p)) {
                return None;
            }
            match values::expand_with(state, pinned, &word.raw, Mode::Word, values.globs_differ()) {
                Ok(expansion) if expansion.words.len() == 1 || !is_target(word) => {
                    let words = expansion.words.into_iter();
                    Some(
                        words
                            .map(|w| Word {
                                span: word.span,
                                raw: w.raw.into(),
                                literal: w.literal.map(Into::into),
                                glob: w.glob,
                            })
                            .collect(),
                    )
                }
                Ok(_) => None,
                Err(why) => {
                    if !unknown.iter().any(|u| *u.parameter == *word.raw) {
                        unknown.push(UnknownValue { parameter: word.raw.to_string(), why, span: word.span });
                    }
                    None
                }
            }
        };
        for command in &mut written.commands {
            let mut words = Vec::with_capacity(command.words.len());
            for word in &command.words {
                match expand(word) {
                    Some(replaced) => words.extend(replaced),
                    None => words.push(word.clone()),
                }
            }
            command.words = words;
            for redirect in &mut command.redirects {
                if let RedirectTarget::File(word) = &mut redirect.target
                    && let Some(mut replaced) = expand(word).filter(|r| r.len() == 1)
                {
                    *word = replaced.remove(0);
                }
            }
        }
        let same_words = by_words.entry(words_hash(&written)).or_default();
        if !same_words.iter().any(|&i| pipelines[i] == written) {
            same_words.push(pipelines.len());
            pipelines.push(written);
        }
    }
    let uses = known.iter().map(|param| value_use(state, param)).collect();
    Some(Variants { pipelines, uses, unknown })
}

/// A hash of what [`variants`] writes into a pipeline (its planned words): equal pipelines hash
/// alike.
fn words_hash(pipeline: &Pipeline) -> u64 {
    use std::hash::{BuildHasher as _, Hash as _, Hasher as _};
    let mut hasher = rustc_hash::FxBuildHasher.build_hasher();
    for command in &pipeline.commands {
        command.words.len().hash(&mut hasher);
    }
    for word in planned_words(pipeline) {
        word.raw.hash(&mut hasher);
    }
    hasher.finish()
}

/// `$IN`, `$@`.
fn label(param: &Param) -> String {
    match param {
        Param::Named(name) => format!("${name}"),
        Param::Positional => "$@".to_string(),
    }
}

fn why_unknown(state: &State, param: &Param) -> Option<String> {
    match param {
        Param::Named(name) => match state.get(name) {
            Value::Unknown(why) => Some(why),
            Value::Known(_) => None,
        },
        Param::Positional => match state.positional() {
            Positionals::Unknown(why) => Some(why.clone()),
            Positionals::Known(_) => None,
        },
    }
}

fn value_use(state: &State, param: &Param) -> ValueUse {
    let all: Vec<String> = match param {
        Param::Named(name) => match state.get(name) {
            Value::Known(values) => values.into_iter().map(Option::unwrap_or_default).collect(),
            Value::Unknown(_) => Vec::new(),
        },
        Param::Positional => match state.positional() {
            Positionals::Known(lists) => lists.iter().map(|l| l.join(" ")).collect(),
            Positionals::Unknown(_) => Vec::new(),
        },
    };
    ValueUse {
        parameter: label(param),
        count: all.len(),
        values: all.iter().take(VALUES_SHOWN).cloned().collect(),
        at: Vec::new(),
        one_plan: true,
    }
}

/// Where the values of `uses` lie as paths from `cwd`: per mount (or `client`), how many.
pub(super) fn places(config: &crate::config::Config, cwd: &Path, state: Option<&State>, uses: &mut [ValueUse]) {
    let Some(state) = state else { return };
    for value_use in uses.iter_mut() {
        let all: Vec<String> = match value_use.parameter.strip_prefix('$') {
            Some("@") => match state.positional() {
                Positionals::Known(lists) => lists.iter().flatten().cloned().collect(),
                Positionals::Unknown(_) => Vec::new(),
            },
            Some(name) => match state.get(name) {
                Value::Known(values) => values.into_iter().flatten().collect(),
                Value::Unknown(_) => Vec::new(),
            },
            None => Vec::new(),
        };
        let mut at: Vec<(String, usize)> = Vec::new();
        for value in all.iter().filter(|v| !v.is_empty()) {
            let path = crate::fs::normalize_path(&cwd.join(value));
            let place = config.mount_for(&path).map_or("client".to_string(), |m| m.name.clone());
            match at.iter_mut().find(|(p, _)| *p == place) {
                Some((_, n)) => *n += 1,
                None => at.push((place, 1)),
            }
        }
        if at.iter().any(|(place, _)| place != "client") {
            at.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            value_use.at = at;
        }
    }
}

/// Where each command of a plan runs, whether bash keeps it, and which of its parts go to the
/// runtime.
type Places = (Vec<(usize, Location)>, Option<String>, Vec<(usize, usize)>);

/// Where each command of `plan` runs (its copies' places, in order), whether bash keeps it, and
/// which of its parts go to the runtime: what every combination of values must agree on.
pub(super) fn places_of(plan: &PipelinePlan) -> Places {
    let mut places: Vec<(usize, Location)> = plan
        .nodes
        .iter()
        .filter_map(|n| match n.kind {
            NodeKind::Command { command, .. } | NodeKind::Merge { command, .. } => Some((command, n.location.clone())),
            _ => None,
        })
        .collect();
    places.sort();
    let parts = plan.handed_parts.iter().map(|p| p.commands).collect();
    (places, plan.stays_with_bash.clone(), parts)
}
