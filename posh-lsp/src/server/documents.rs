//! The open documents. Only ever touched under the backend's lock; requests take snapshots.

use std::collections::HashMap;
use std::sync::Arc;

use tower_lsp::lsp_types::{TextDocumentContentChangeEvent, Url};

use super::convert::apply_change;
use std::time::{Duration, Instant};

use posh_core::shell::Recovery;

use crate::ide::code_lens::{CodeLens, summary_lenses};
use crate::ide::{AnalysisCache, Language, ScriptAnalysis, Shift};
use crate::memory::free_later;

#[derive(Debug)]
pub struct Document {
    /// Names the document in what the client hands back (`inlayHint/resolve`'s data), shorter
    /// than its URI.
    pub id: u64,
    pub version: i32,
    pub text: Arc<str>,
    pub language: Language,
    /// The analysis of this version, once computed.
    pub analysis: Option<Arc<ScriptAnalysis>>,
    /// The latest analysis that parsed well, with its text: shown (shifted) while the current
    /// text does not parse, so hints do not flicker away mid-edit.
    pub good: Option<(Arc<str>, Arc<ScriptAnalysis>)>,
    /// Plans of this document's pipelines, so an edit re-plans only what it touched; with the
    /// time it was started (file sizes go stale with it).
    pub plans: Option<(Instant, AnalysisCache)>,
    /// Held while this document is analysed: one analysis at a time.
    pub turn: Arc<tokio::sync::Mutex<()>>,
    /// The lenses atop the script of its latest analysis whose text parsed: shown while an
    /// edit leaves a `$(`, an `if` or a `{` open (bash then rejects the text, and nothing would
    /// be there: the lines below would jump).
    pub summary: Vec<CodeLens>,
    /// Why the text is no longer the editor's (an edit could not be read), until the editor
    /// sends the whole text or reopens the document.
    pub out_of_step: Option<String>,
}

/// What a request works on: one version of one document.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub uri: Url,
    pub id: u64,
    pub version: i32,
    pub text: Arc<str>,
    pub language: Language,
    /// See [`Document::out_of_step`].
    pub out_of_step: Option<String>,
}

/// The analysis to show for a snapshot: its own, or the last good one shifted into its text.
#[derive(Debug, Clone)]
pub struct Shown {
    pub analysis: Arc<ScriptAnalysis>,
    /// The text `analysis` was made from.
    pub text: Arc<str>,
    /// Maps `analysis`'s offsets into the snapshot's text; `None` when it is the snapshot's own.
    pub shift: Option<Shift>,
}

#[derive(Debug, Default)]
pub struct Store {
    docs: HashMap<Url, Document>,
    opened: u64,
}

impl Store {
    pub fn open(&mut self, uri: Url, version: i32, text: String, language: Language) {
        self.opened += 1;
        let doc = Document {
            id: self.opened,
            version,
            text: text.into(),
            language,
            analysis: None,
            good: None,
            plans: None,
            turn: Arc::default(),
            summary: Vec::new(),
            out_of_step: None,
        };
        self.docs.insert(uri, doc);
    }

    /// Applies the changes in order; an older or equal version than the one held is dropped.
    /// A document out of step takes only what follows a change that gives the whole text,
    /// which puts it back in step.
    pub fn change(&mut self, uri: &Url, version: i32, changes: &[TextDocumentContentChangeEvent]) -> bool {
        let Some(doc) = self.docs.get_mut(uri) else {
            return false;
        };
        if version <= doc.version {
            return false;
        }
        let whole = changes.iter().rposition(|c| c.range.is_none());
        let changes = match (whole, &doc.out_of_step) {
            (Some(at), _) => {
                doc.out_of_step = None;
                &changes[at..]
            }
            (None, Some(_)) => &[][..],
            (None, None) => changes,
        };
        let mut text = doc.text.to_string();
        for change in changes {
            apply_change(&mut text, change);
        }
        doc.text = text.into();
        doc.version = version;
        free_later(doc.analysis.take());
        true
    }

    /// Marks the document `uri` out of step with the editor (see [`Document::out_of_step`]), or
    /// every script and annotation document when the lost edit's document is not known.
    /// Returns the documents newly marked.
    pub fn lose_step(&mut self, uri: Option<&Url>, why: &str) -> Vec<Url> {
        let mut marked = Vec::new();
        for (doc_uri, doc) in &mut self.docs {
            if uri.is_some_and(|u| u != doc_uri) || doc.out_of_step.is_some() {
                continue;
            }
            doc.out_of_step = Some(why.to_string());
            free_later((doc.analysis.take(), doc.good.take(), doc.plans.take()));
            doc.summary.clear();
            marked.push(doc_uri.clone());
        }
        marked
    }

    /// Removes the document, handed back to be freed outside the lock.
    pub fn close(&mut self, uri: &Url) -> Option<Document> {
        self.docs.remove(uri)
    }

    pub fn snapshot(&self, uri: &Url) -> Option<Snapshot> {
        let doc = self.docs.get(uri)?;
        Some(Snapshot {
            uri: uri.clone(),
            id: doc.id,
            version: doc.version,
            text: doc.text.clone(),
            language: doc.language,
            out_of_step: doc.out_of_step.clone(),
        })
    }

    pub fn snapshot_by_id(&self, id: u64) -> Option<Snapshot> {
        self.docs.iter().find(|(_, d)| d.id == id).and_then(|(uri, _)| self.snapshot(uri))
    }

    /// The lock a document's analyses take in turn.
    pub fn turn(&self, uri: &Url) -> Option<Arc<tokio::sync::Mutex<()>>> {
        self.docs.get(uri).map(|d| d.turn.clone())
    }

    pub fn cached(&self, snapshot: &Snapshot) -> Option<Arc<ScriptAnalysis>> {
        let doc = self.docs.get(&snapshot.uri)?;
        (doc.version == snapshot.version).then(|| doc.analysis.clone()).flatten()
    }

    /// Keeps an analysis if its document is still at that version.
    pub fn store(&mut self, snapshot: &Snapshot, analysis: Arc<ScriptAnalysis>) {
        let Some(doc) = self.docs.get_mut(&snapshot.uri) else {
            return;
        };
        if doc.version != snapshot.version {
            return;
        }
        let good = doc.good.as_ref().is_none_or(|(text, good)| !swallowed(text, good, &snapshot.text, &analysis));
        if analysis.is_good() && good {
            free_later(doc.good.replace((snapshot.text.clone(), analysis.clone())));
        }
        if analysis.script.errors.is_empty() && !analysis.partial {
            doc.summary = summary_lenses(&analysis);
        }
        free_later(doc.analysis.replace(analysis));
    }

    /// The lenses atop the script of its latest analysis whose text parsed.
    pub fn last_summary(&self, uri: &Url) -> Vec<CodeLens> {
        self.docs.get(uri).map(|d| d.summary.clone()).unwrap_or_default()
    }

    /// What to show for this snapshot, given its own analysis.
    pub fn shown(&self, snapshot: &Snapshot, own: Arc<ScriptAnalysis>) -> Shown {
        if let Some((text, good)) = self.docs.get(&snapshot.uri).and_then(|d| d.good.clone())
            && (!own.is_good() || swallowed(&text, &good, &snapshot.text, &own))
        {
            let shift = Shift::between(&text, &snapshot.text);
            return Shown { analysis: good, text, shift: Some(shift) };
        }
        Shown { analysis: own, text: snapshot.text.clone(), shift: None }
    }

    /// Open documents of one language, as snapshots.
    pub fn of_language(&self, language: Language) -> Vec<Snapshot> {
        let mut uris: Vec<&Url> = self.docs.iter().filter(|(_, d)| d.language == language).map(|(u, _)| u).collect();
        uris.sort();
        uris.into_iter().filter_map(|u| self.snapshot(u)).collect()
    }
}

impl Store {
    /// Drops every cached analysis and plan (the world changed); last good analyses stay as a
    /// fallback.
    pub fn forget_analyses(&mut self) {
        for doc in self.docs.values_mut() {
            free_later((doc.analysis.take(), doc.plans.take()));
        }
    }

    /// The document's plan cache, lent out for one analysis (a fresh one when it is older than
    /// `max_age` or lent to another analysis already).
    pub fn take_plans(&mut self, uri: &Url, max_age: Duration) -> (Instant, AnalysisCache) {
        match self.docs.get_mut(uri).and_then(|d| d.plans.take()) {
            Some((since, cache)) if since.elapsed() < max_age => (since, cache),
            stale => {
                free_later(stale);
                (Instant::now(), AnalysisCache::default())
            }
        }
    }

    pub fn return_plans(&mut self, uri: &Url, plans: (Instant, AnalysisCache)) {
        if let Some(doc) = self.docs.get_mut(uri) {
            free_later(doc.plans.replace(plans));
        }
    }
}

/// Whether `now`'s analysis of `text` lost pipelines of the good analysis of `before` that the
/// edit between them did not touch: a quote, `$(` or `{` just typed runs to the end of the file
/// until it is closed, and the closer that makes the text parse swallows everything after it.
/// Until the user closes it, the good analysis is shown (and kept) instead.
fn swallowed(before: &str, good: &ScriptAnalysis, text: &str, now: &ScriptAnalysis) -> bool {
    if now.recovery == Recovery::None {
        return false;
    }
    let shift = Shift::between(before, text);
    let starts: std::collections::HashSet<usize> = now.plan.pipelines.iter().map(|p| p.span().start).collect();
    good.plan.pipelines.iter().filter_map(|p| shift.span(p.span())).any(|span| !starts.contains(&span.start))
}
