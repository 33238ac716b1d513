//! Incremental parsing. brush-parser has no incremental mode and a 5,000-line script takes about
//! 100 ms to parse, too slow for every keystroke. So a script is cut, at line starts that a
//! cheap scan finds at the top level (`shell::chunks::top_level_cuts`: no open quote, bracket,
//! compound command, here-document or continuation), into chunks chosen by their content (so an
//! edit moves no boundary but its own), each parsed on its own and cached by its text.
//!
//! A cut in the wrong place cannot go unnoticed: a statement split in two leaves at least one
//! side that does not parse (an unclosed `do`, `if`, `{`, quote, `|`), and a chunk that does not
//! parse is joined with the next and parsed again; when that does not help either, the whole
//! text is parsed as usual (`shell::parse_tolerant_with_recovery`). Here-documents and
//! backslash continuations, the two constructs whose halves could parse on their own, are never
//! cut.

use std::collections::HashMap;
use std::sync::Arc;

use posh_core::Span;
use posh_core::planner::PipelinePlan;
use posh_core::rewrite::TextFacts;
use posh_core::shell::chunks::{MAX_JOINS, TopLevelCuts, move_flow, move_loop, move_pipeline};
use posh_core::shell::{self, Flow, ForLoop, Pipeline, Recovery, Script, ShellError};
use posh_core::values::Segment;

/// Fewer lines than this never make a chunk of their own.
const MIN_LINES: usize = 8;

/// Parsed chunks by their text, each placed where it last started (`Chunk::place`).
#[derive(Debug, Default, Clone)]
pub struct ChunkCache {
    pub(crate) chunks: HashMap<String, Chunk, rustc_hash::FxBuildHasher>,
    reused: usize,
    /// The last parse's chunks in order (start, text); empty when it parsed the text whole.
    pub(crate) layout: Vec<(usize, String)>,
    /// The last text parsed and its [`boundaries`], from which the next text's are found
    /// scanning only around the edit.
    last: Option<(String, Vec<usize>)>,
}

/// What a chunk's plans depend on besides its text: the script's function names, the working
/// directory each of its pipelines starts from (a `cd` in an earlier chunk moves them), what of
/// the rest of the script bears on each (`ScriptScope::key_of`: a `set -v` or `mkfifo` in another
/// chunk), and the values of the variables they read (an assignment in an earlier chunk, the run
/// configuration).
#[derive(Clone, Debug)]
pub(crate) struct PlannedWith {
    /// A hash of the script's function names (compared for every chunk at each keystroke).
    pub functions: u64,
    pub working_dirs: Vec<posh_core::planner::WorkingDir>,
    /// [`posh_core::planner::ScriptScope::key_of`] of each pipeline.
    pub scope: Vec<u64>,
    /// [`posh_core::values::Values::key_of`] of each pipeline.
    pub values: Vec<u64>,
    /// The states before its pipelines they were planned with: the same states (shared, see
    /// `values::State::is`) give the same keys, which are then not computed again.
    pub states: Vec<Option<posh_core::values::State>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    /// Where its pipelines, loops, flow and errors are placed: where the chunk started when it
    /// was last used (`0` when parsed). A chunk that has not moved gives the script the same
    /// pipelines, shared.
    at: usize,
    pub pipelines: Vec<Arc<Pipeline>>,
    /// Its top-level `for` loops (a loop is one statement: never cut).
    pub loops: Vec<ForLoop>,
    /// Its control flow (`Script::flow`).
    pub flow: Vec<Flow>,
    /// Parse errors of a chunk that parsed only with a closer appended.
    pub errors: Vec<ShellError>,
    pub recovery: Recovery,
    /// What of its text the whole script's rules read (`rewrite::TextFacts`).
    pub facts: TextFacts,
    /// The pipelines' plans (spans relative to the chunk), shared with the analyses that use
    /// them, and what of the script around the chunk they were made with.
    pub plans: Option<(PlannedWith, Vec<Arc<PipelinePlan>>)>,
}

impl Chunk {
    /// A chunk parsed alone: at `0`.
    fn parsed(script: Script, recovery: Recovery, text: &str) -> Chunk {
        Chunk {
            at: 0,
            pipelines: script.pipelines,
            loops: script.loops,
            flow: script.flow,
            errors: script.errors,
            recovery,
            facts: TextFacts::of(text),
            plans: None,
        }
    }

    /// The chunk `text` is when it parses without errors, placed at `start`.
    fn parsed_whole(text: &str, start: usize) -> Option<Chunk> {
        let script = shell::parse(text);
        script.errors.is_empty().then(|| {
            let mut chunk = Chunk::parsed(script, Recovery::None, text);
            chunk.place(start);
            chunk
        })
    }

    /// Places it at `start`: its pipelines moved when it has moved (copied when an analysis
    /// still shares them).
    fn place(&mut self, start: usize) {
        if self.at == start {
            return;
        }
        let at = self.at;
        let by = |offset: usize| offset - at + start;
        for pipeline in &mut self.pipelines {
            match Arc::get_mut(pipeline) {
                Some(only) => move_pipeline(only, by),
                None => {
                    let mut moved = Pipeline::clone(pipeline);
                    move_pipeline(&mut moved, by);
                    *pipeline = Arc::new(moved);
                }
            }
        }
        self.loops.iter_mut().for_each(|l| move_loop(l, by));
        self.flow.iter_mut().for_each(|step| move_flow(step, &by));
        for error in &mut self.errors {
            error.span = Span::new(by(error.span.start), by(error.span.end));
        }
        self.at = start;
    }
}

impl ChunkCache {
    /// How many chunks the last parse took from the cache.
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// Where the last parse's chunks start, in order; none when it parsed the text whole.
    pub fn starts(&self) -> Vec<usize> {
        self.layout.iter().map(|(start, _)| *start).collect()
    }

    /// What of the text of the last parse the whole script's rules read, joined from its
    /// chunks'; `None` when it parsed the text whole.
    pub fn facts(&self) -> Option<TextFacts> {
        let facts: Option<Vec<&TextFacts>> =
            self.layout.iter().map(|(_, text)| self.chunks.get(text).map(|c| &c.facts)).collect();
        facts.filter(|f| !f.is_empty()).map(TextFacts::join)
    }

    /// The last parse's chunks, as the value analysis takes a script's parts
    /// (`values::analyse_cached`); none when it parsed the text whole.
    pub fn segments(&self) -> Vec<Segment> {
        let segment = |(start, text): &(usize, String)| {
            let steps = self.chunks.get(text)?.flow.len();
            Some(Segment { span: Span::new(*start, start + text.len()), steps })
        };
        self.layout.iter().map(segment).collect::<Option<Vec<Segment>>>().unwrap_or_default()
    }
}

/// Parses `source` chunk by chunk. For a text that parses, the result is what
/// `shell::parse_tolerant_with_recovery` gives for the whole text; for one broken mid-edit, the
/// broken chunk is closed on its own (see below).
pub fn parse(source: &str, cache: &mut ChunkCache) -> (Script, Recovery) {
    let bounds = match &cache.last {
        Some((text, bounds)) => boundaries_after_edit(text, bounds, source),
        None => boundaries(source),
    };
    match &mut cache.last {
        Some((text, kept)) => {
            text.clear();
            text.push_str(source);
            kept.clone_from(&bounds);
        }
        None => cache.last = Some((source.to_string(), bounds.clone())),
    }
    let mut fresh = parse_fresh_chunks(source, &bounds, cache);
    let mut kept: HashMap<String, Chunk, rustc_hash::FxBuildHasher> = HashMap::default();
    let mut pipelines = Vec::new();
    let mut loops = Vec::new();
    let mut flow = Vec::new();
    let mut errors = Vec::new();
    let mut recovery = Recovery::None;
    cache.reused = 0;
    cache.layout.clear();
    let mut i = 0;
    while i + 1 < bounds.len() {
        let start = bounds[i];
        let mut parsed = None;
        for end_index in (i + 1..bounds.len()).take(MAX_JOINS + 1) {
            let text = &source[start..bounds[end_index]];
            if let Some(found) = cache.chunks.remove(text).or_else(|| kept.get(text).cloned()) {
                cache.reused += 1;
                parsed = Some((end_index, text, found));
                break;
            }
            let chunk = fresh.remove(&(start, bounds[end_index])).unwrap_or_else(|| Chunk::parsed_whole(text, start));
            if let Some(chunk) = chunk {
                parsed = Some((end_index, text, chunk));
                break;
            }
        }
        // The text does not parse here, typically mid-edit: a closer appended to this chunk alone
        // usually repairs it (as bash would not, but the chunks after it are what they were), and
        // parsing goes on after it. When none does, the whole text is parsed tolerantly.
        let parsed = parsed.or_else(|| {
            let text = &source[start..bounds[i + 1]];
            let (script, how) = shell::parse_tolerant_with_recovery(text);
            matches!(how, Recovery::Closer(_)).then(|| (i + 1, text, Chunk::parsed(script, how, text)))
        });
        let Some((end_index, text, mut chunk)) = parsed else {
            cache.layout.clear();
            return shell::parse_tolerant_with_recovery(source);
        };
        if recovery == Recovery::None {
            recovery = chunk.recovery;
        }
        chunk.place(start);
        errors.extend(chunk.errors.iter().cloned());
        pipelines.extend(chunk.pipelines.iter().cloned());
        loops.extend(chunk.loops.iter().cloned());
        flow.extend(chunk.flow.iter().cloned());
        cache.layout.push((start, text.to_string()));
        kept.insert(text.to_string(), chunk);
        i = end_index;
    }
    cache.chunks = kept;
    (Script { pipelines, loops, errors, flow, ..Script::default() }, recovery)
}

/// Fewer chunks than this not in the cache are parsed on this thread alone.
const PARALLEL_FROM: usize = 16;

/// The chunks between consecutive `bounds` that `cache` does not hold, parsed and placed on
/// every core when there are many (opening a file, or a change of most of it): brush-parser
/// takes about 20 ms per 1,000 lines, and one core's parse of a 5,000-line script was a third of
/// its opening. Keyed by (start, end), `None` for a text with parse errors; [`parse`] takes each
/// from here instead of parsing it again, and parses what it needs beyond (a chunk joined with
/// the next) itself.
fn parse_fresh_chunks(source: &str, bounds: &[usize], cache: &ChunkCache) -> HashMap<(usize, usize), Option<Chunk>> {
    // A text that comes twice (a repeated block) is parsed once: `parse` keeps its first.
    let mut seen = std::collections::HashSet::new();
    let missing: Vec<(usize, usize)> = bounds
        .windows(2)
        .map(|w| (w[0], w[1]))
        .filter(|&(start, end)| !cache.chunks.contains_key(&source[start..end]) && seen.insert(&source[start..end]))
        .collect();
    let parsed = super::cores::on_every_core(&missing, PARALLEL_FROM, |&(start, end)| {
        Chunk::parsed_whole(&source[start..end], start)
    });
    missing.into_iter().zip(parsed).collect()
}

/// `0`, the chosen cuts, and the text's length. A cut is chosen by the line before it (a blank
/// line, or one whose hash says so) once a chunk has enough lines, so an edit changes the
/// boundaries of its own chunk and perhaps the next, never those further on.
fn boundaries(source: &str) -> Vec<usize> {
    let mut bounds = vec![0];
    bounds.extend(chosen_cuts(source, 0));
    if bounds.last() != Some(&source.len()) {
        bounds.push(source.len());
    }
    bounds
}

/// The cuts [`boundaries`] chooses after `start` (`0` or one of them): what is chosen depends
/// on nothing before it.
fn chosen_cuts(source: &str, start: usize) -> impl Iterator<Item = usize> + '_ {
    let mut lines_since = 0;
    TopLevelCuts::from(source, start).filter_map(move |(cut, (line_before, lines))| {
        lines_since += lines;
        let content_cut = line_before.trim().is_empty() || fnv(line_before).is_multiple_of(4);
        (lines_since >= MIN_LINES && content_cut).then(|| {
            lines_since = 0;
            cut
        })
    })
}

/// [`boundaries`] of `source`, an edit of `before` whose boundaries were `bounds`, scanning only
/// from the boundary before the edit to the first one after it that was a boundary before: a
/// boundary holds nothing open and starts its count of lines afresh, so the same text after
/// one is cut as it was (at every keystroke, a scan of the whole text was a fifth of the parse).
fn boundaries_after_edit(before: &str, bounds: &[usize], source: &str) -> Vec<usize> {
    let prefix = before.bytes().zip(source.bytes()).take_while(|(a, b)| a == b).count();
    let most = before.len().min(source.len()) - prefix;
    let suffix = before.bytes().rev().zip(source.bytes().rev()).take(most).take_while(|(a, b)| a == b).count();
    // The boundaries within the unchanged start stand (the last one, the text's end, aside).
    let inner = &bounds[..bounds.len().saturating_sub(1)];
    if inner.is_empty() {
        return boundaries(source);
    }
    let kept = inner.partition_point(|&b| b <= prefix && b < source.len()).max(1);
    let mut out = inner[..kept].to_vec();
    let restart = out[kept - 1];
    let (changed_end, moved) = (source.len() - suffix, |b: usize| b + before.len() - source.len());
    for cut in chosen_cuts(source, restart) {
        out.push(cut);
        if cut >= changed_end
            && let Ok(at) = inner.binary_search(&moved(cut))
        {
            out.extend(inner[at + 1..].iter().map(|&b| b + source.len() - before.len()));
            break;
        }
    }
    if out.last() != Some(&source.len()) {
        out.push(source.len());
    }
    out
}

pub(crate) fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf29ce484222325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_parse_equals_the_whole_parse() {
        let chunk = "f() {\n  grep -c x \"$1\" | sort\n}\n\nfor l in *.log; do\n  f \"$l\" >> c.txt\ndone\ncat <<'E' | wc -l\nx\n\nE\nif [ -s c ]; then\n  cat a b | grep 'a\nb' | wc -l\nfi\necho \"$(ls | head)\" && sort -u c | head\n# done\n";
        let source = chunk.repeat(40);
        let mut cache = ChunkCache::default();
        // Enough chunks that the first parse takes them from several threads.
        assert!(boundaries(&source).len() > PARALLEL_FROM + 1);
        let (script, recovery) = parse(&source, &mut cache);
        assert_eq!(recovery, Recovery::None);
        assert_eq!(script, shell::parse(&source));
        assert!(boundaries(&source).len() > 10);
        // An edit re-parses its chunk only, and the result is still the whole parse's.
        let edited = source.replacen("grep -c x", "grep -c xy", 20);
        let (script, _) = parse(&edited, &mut cache);
        assert_eq!(script, shell::parse(&edited));
        assert!(cache.reused() > 5, "{}", cache.reused());
        // A broken end of text: the closer repairs its chunk, as it repairs the whole.
        let broken = format!("{source}for x in a; do\n  cat x | sort\n");
        assert_eq!(parse(&broken, &mut cache), shell::parse_tolerant_with_recovery(&broken));
        // Broken in the middle: the chunk is closed on its own, the ones after it stay.
        let at = source.len() / 2 + source[source.len() / 2..].find("fi\n").unwrap() + 3;
        let middle = format!("{}for x in a; do\n{}", &source[..at], &source[at..]);
        let (script, recovery) = parse(&middle, &mut cache);
        assert_eq!(recovery, Recovery::Closer("\ndone"));
        assert_eq!(script.errors.len(), 1);
        assert_eq!(script.pipelines.len(), shell::parse(&source).pipelines.len());
        // Nothing closes it: the whole text is parsed tolerantly.
        let hopeless = format!("{}) )\n{}", &source[..at], &source[at..]);
        assert_eq!(parse(&hopeless, &mut cache), shell::parse_tolerant_with_recovery(&hopeless));
    }

    /// The boundaries found from the last text's, scanning around the edit, are the ones found
    /// scanning the whole text, over random edits that open and close quotes, compound
    /// commands, here-documents and continuations, join and split lines.
    #[test]
    fn boundaries_after_an_edit_are_the_whole_scans() {
        let chunk = "f() {\n  grep -c x \"$1\" | sort\n}\n\nfor l in *.log; do\n  f \"$l\" >> c.txt\ndone\ncat <<'E' | wc -l\nx\n\nE\nif [ -s c ]; then\n  cat a b | grep 'a\nb' | wc -l\nfi\necho \"$(ls | head)\" && sort -u c | head\n# done\n";
        let pieces = ["\n", "'", "\"", "do ", "done\n", "{ ", "}\n", "<<E\n", "\nE\n", "\\\n", " |\n", "x", "(", ")"];
        let mut text = chunk.repeat(20);
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        let mut bounds = boundaries(&text);
        for _ in 0..400 {
            // A few characters, or whole chunks deleted or copied elsewhere (the text moves by
            // as much as lies between boundaries).
            let (at, end, inserted) = match next(4) {
                0 => {
                    let (a, b) = (next(bounds.len()), next(bounds.len()));
                    (bounds[a.min(b)], bounds[a.max(b)], String::new())
                }
                1 => {
                    let (a, b) = (next(bounds.len()), next(bounds.len()));
                    let at = bounds[next(bounds.len())];
                    (at, at, text[bounds[a.min(b)]..bounds[a.max(b)]].to_string())
                }
                _ => {
                    let at = next(text.len() + 1);
                    let piece = if next(3) == 0 { "" } else { pieces[next(pieces.len())] };
                    (at, (at + next(12)).min(text.len()), piece.to_string())
                }
            };
            let mut edited = text.clone();
            edited.replace_range(at..end, &inserted);
            let found = boundaries_after_edit(&text, &bounds, &edited);
            assert_eq!(found, boundaries(&edited), "{inserted:?} at {at}..{end}");
            (text, bounds) = (edited, found);
        }
    }
}
