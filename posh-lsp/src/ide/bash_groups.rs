//! `bash -n` per group of chunks, its verdicts kept by the group's text, so that a keystroke asks
//! bash about the group it is in (a few KB) instead of the whole script (15 to 20 ms on a
//! 5,000-line one).
//!
//! Why the groups' verdicts give the whole one: bash parses a script one complete command after
//! another, and nothing it parses with `-n` changes how it parses what follows (it runs nothing:
//! no `shopt`, no `alias`). A group bash accepts alone, without a word on stderr (an unterminated
//! here-document is a warning), that does not end in a backslash continuation, leaves bash at the
//! start of a command, as at the start of a text. So when every group is accepted so, the whole
//! text is. When one is not (the cut fell where bash still reads on, or the script is wrong), the
//! whole text is asked, as before: its verdict and message are bash's on the whole text.
//!
//! A text with many groups of unknown verdict (an opening, a paste) is asked whole instead: one
//! `bash` rather than one per group, each start a fork and exec on the analysis's path (about a
//! millisecond each, 10 to 15 ms of a 5,000-line script's opening). Its groups are then asked
//! one after another on a thread of their own once the verdict is in, for the keystrokes that
//! follow: each verdict is taken as it comes in, and one thread per document asks them (a text
//! asked whole while groups of an older one wait replaces those, which are asked no more).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use posh_cli::bash_syntax::Check;

use super::chunks::fnv;

/// A group closes after a chunk once it holds this many bytes (and the chunk's hash says so, so
/// that an edit moves no group boundary but its own): few enough groups that opening starts few
/// `bash` processes, small enough that a keystroke's check is quick.
const GROUP_BYTES: usize = 16 * 1024;

/// More groups than this of unknown verdict, and the whole text is asked instead.
const WHOLE_FROM: usize = 3;

/// bash's verdict on a text: accepted, or its message.
type Verdict = Result<(), String>;

/// What bash said of each group of the last analysis, by the group's text.
#[derive(Debug, Default)]
pub struct BashVerdicts {
    by_text: HashMap<String, Verdict>,
    /// Groups asked about in the background after a text was asked whole.
    later: Option<Background>,
}

impl Clone for BashVerdicts {
    /// The verdicts known; those still being asked in the background are not (a clone asks
    /// again what it needs).
    fn clone(&self) -> Self {
        BashVerdicts { by_text: self.by_text.clone(), later: None }
    }
}

/// The thread that asks bash about groups at the lowest priority, one after another, and what
/// it shares with the analyses. It ends when this is dropped (after the check under way).
///
/// Before it, each text asked whole started a thread for all its groups and forgot the last
/// one's: typing faster than a busy machine's nice-19 checks ended, every keystroke asked the
/// whole text and a dozen groups more (2,383 `bash` processes over 200 keystrokes of the stdio
/// bench, 41% of the machine's samples).
#[derive(Debug)]
struct Background {
    shared: Arc<(Mutex<Queue>, Condvar)>,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: VecDeque<String>,
    /// Checks under way (0 or 1).
    asking: usize,
    answered: Vec<(String, Verdict)>,
    closed: bool,
}

type Checker = Box<dyn Fn(&str) -> Verdict + Send>;

/// How long groups handed to an idle background wait before the first is checked: they come
/// when an analysis has its verdict, and its answer (an opening's hints of the whole file, their
/// JSON) is made in the next tens of milliseconds on both cores, which the checks' `bash`
/// processes took one of, their low priority notwithstanding. Groups replaced while it waits
/// wait no longer than that, and a busy background does not pause.
const PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

impl Background {
    /// Starts the thread; `None` when the system has no thread for it (the groups are then
    /// asked with the keystrokes that need them).
    fn start(check: Checker) -> Option<Background> {
        let shared = Arc::new((Mutex::new(Queue::default()), Condvar::new()));
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("bash-groups".to_string())
            .spawn(move || {
                at_lowest_priority();
                let (lock, changed) = &*theirs;
                let mut queue = lock.lock().unwrap_or_else(PoisonError::into_inner);
                while !queue.closed {
                    // Idle until groups come, then the pause: they came with an answer still
                    // being made. What comes while it works (a newer text's groups) is taken
                    // without one.
                    queue = changed
                        .wait_while(queue, |q| q.waiting.is_empty() && !q.closed)
                        .unwrap_or_else(PoisonError::into_inner);
                    queue = changed
                        .wait_timeout_while(queue, PAUSE, |q| !q.closed)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                    while let Some(group) = queue.waiting.pop_front().filter(|_| !queue.closed) {
                        queue.asking += 1;
                        drop(queue);
                        let said = check(&group);
                        queue = lock.lock().unwrap_or_else(PoisonError::into_inner);
                        queue.asking -= 1;
                        queue.answered.push((group, said));
                        changed.notify_all();
                    }
                }
            })
            .ok()?;
        Some(Background { shared })
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.shared.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The groups to ask about from now on, instead of those still waiting.
    fn ask(&self, groups: Vec<String>) {
        self.queue().waiting = groups.into();
        self.shared.1.notify_all();
    }

    /// The verdicts that came in since last taken.
    fn answered(&self) -> Vec<(String, Verdict)> {
        std::mem::take(&mut self.queue().answered)
    }

    /// Waits until nothing is waiting or being asked.
    fn settle(&self) {
        let mut queue = self.queue();
        while !queue.waiting.is_empty() || queue.asking > 0 {
            queue = self.shared.1.wait(queue).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.queue().closed = true;
        self.shared.1.notify_all();
    }
}

/// The groups' checks of one text, under way.
#[derive(Debug)]
pub struct Asking {
    groups: Vec<(std::ops::Range<usize>, Answer)>,
    /// The whole text asked instead, and the groups to ask about later.
    whole: Option<(Check, Vec<std::ops::Range<usize>>)>,
}

#[derive(Debug)]
enum Answer {
    Known(Result<(), String>),
    Running(Check),
}

impl BashVerdicts {
    /// Waits for the groups being asked in the background, and keeps their verdicts: for tests
    /// whose count of kept verdicts must not depend on how busy the machine is.
    pub fn wait_for_background(&mut self) {
        if let Some(later) = &self.later {
            later.settle();
            self.by_text.extend(later.answered());
        }
    }

    /// Starts `bash -n` on each group of `text` whose verdict is not kept; `starts` are the
    /// chunks' starts, in order, the first 0. Verdicts of groups no longer in the text are dropped.
    pub fn ask(&mut self, text: &str, starts: &[usize]) -> Asking {
        // What the background has answered so far; the groups it is still asking about (at its
        // low priority, on a busy machine) are not waited for, which could take seconds: this
        // text's are asked as if never asked before.
        if let Some(later) = &self.later {
            self.by_text.extend(later.answered());
        }
        let mut kept = std::mem::take(&mut self.by_text);
        let groups = groups(text, starts);
        let unknown = groups.iter().filter(|range| !kept.contains_key(&text[(*range).clone()])).count();
        let whole = (unknown > WHOLE_FROM).then(|| (Check::start(text), Vec::new()));
        let mut asking = Asking { groups: Vec::with_capacity(groups.len()), whole };
        for range in groups {
            let group = &text[range.clone()];
            let answer = match kept.remove(group) {
                Some(known) => {
                    self.by_text.insert(group.to_string(), known.clone());
                    Answer::Known(known)
                }
                None => match &mut asking.whole {
                    Some((_, later)) => {
                        later.push(range);
                        continue;
                    }
                    None => Answer::Running(Check::start(group)),
                },
            };
            asking.groups.push((range, answer));
        }
        asking
    }
}

/// The groups of chunks of `text` (chunks starting at `starts`) that bash is asked about, in order.
pub fn groups(text: &str, starts: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut from = 0;
    for (index, &start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(text.len());
        if end == text.len() || (end - from >= GROUP_BYTES && fnv(&text[start..end]).is_multiple_of(4)) {
            groups.push(from..end);
            from = end;
        }
    }
    if from < text.len() {
        groups.push(from..text.len());
    }
    groups
}

impl Asking {
    /// How many groups' verdicts were kept from an earlier text.
    pub fn kept(&self) -> usize {
        self.groups.iter().filter(|(_, answer)| matches!(answer, Answer::Known(_))).count()
    }

    /// bash's verdict on the whole `text` (the one asked about), waiting for the groups' checks;
    /// the groups' verdicts are kept in `verdicts`.
    pub fn verdict(self, text: &str, verdicts: &mut BashVerdicts) -> Result<(), String> {
        if let Some((whole, later)) = self.whole {
            let said = whole.verdict();
            let groups: Vec<String> = later.into_iter().map(|range| text[range].to_string()).collect();
            // Known groups are kept as they are; the others asked one by one, beside the answer.
            if verdicts.later.is_none() {
                verdicts.later = Background::start(Box::new(posh_cli::bash_syntax::check));
            }
            if let Some(background) = &verdicts.later {
                background.ask(groups);
            }
            return said;
        }
        let mut all_accepted = true;
        for (range, answer) in self.groups {
            let group = &text[range.clone()];
            let said = match answer {
                Answer::Known(said) => said,
                Answer::Running(check) => {
                    let said = check.verdict();
                    verdicts.by_text.insert(group.to_string(), said.clone());
                    said
                }
            };
            all_accepted &= said.is_ok() && (range.end == text.len() || ends_a_command(group));
        }
        if all_accepted { Ok(()) } else { posh_cli::bash_syntax::check(text) }
    }
}

/// The calling thread, and the processes it starts, at the lowest CPU priority: the groups'
/// checks are for keystrokes to come, and their bash processes took the cores from the opening's
/// answer under way on a two-core machine. On Linux a thread has a nice value of its own, which
/// the processes it starts inherit. If it cannot be lowered, they only compete as before.
fn at_lowest_priority() {
    let _ = rustix::process::setpriority_process(None, 19);
}

/// Whether `group` ends with a line that bash does not continue on the next (an odd number of
/// backslashes before its newline joins them, even in a comment, as far as this cares).
fn ends_a_command(group: &str) -> bool {
    let Some(line) = group.strip_suffix('\n') else {
        return false;
    };
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 0
}

#[cfg(test)]
mod tests {
    /// The thread that asks about groups, and the processes it starts, run at nice 19; the rest
    /// of the server does not.
    #[test]
    fn the_groups_are_checked_at_the_lowest_priority_and_nothing_else_is() {
        let niceness = || {
            let out = std::process::Command::new("nice").output().expect("coreutils' nice");
            String::from_utf8(out.stdout).unwrap().trim().parse::<i32>().unwrap()
        };
        let before = niceness();
        let lowered = std::thread::spawn(move || {
            super::at_lowest_priority();
            niceness()
        });
        assert_eq!(lowered.join().unwrap(), 19);
        assert_eq!(niceness(), before, "the thread's priority is its own");
    }

    /// Texts asked whole one after another share the document's one background thread: each
    /// replaces what waits instead of starting another (a thread per keystroke, each forgotten
    /// by the next, once asked the whole text at every keystroke of a quick typist).
    #[test]
    fn texts_asked_whole_share_one_background_thread() {
        let text: String = (0..8_000).map(|i| format!("echo line {i}\n")).collect();
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1).filter(|&i| i < text.len()))
            .step_by(10)
            .collect();
        assert!(super::groups(&text, &starts).len() > super::WHOLE_FROM, "enough groups to be asked whole");
        let mut verdicts = super::BashVerdicts::default();
        assert_eq!(verdicts.ask(&text, &starts).verdict(&text, &mut verdicts), Ok(()));
        let first = verdicts.later.as_ref().expect("groups asked in the background").shared.clone();
        // Another text, every group new: asked whole again, its groups to the same thread.
        let other = text.replace("line", "word");
        assert_eq!(verdicts.ask(&other, &starts).verdict(&other, &mut verdicts), Ok(()));
        let second = verdicts.later.as_ref().expect("still there").shared.clone();
        assert!(std::sync::Arc::ptr_eq(&first, &second), "one thread for the document");
        verdicts.wait_for_background();
        let asking = verdicts.ask(&other, &starts);
        assert_eq!(asking.kept(), super::groups(&other, &starts).len(), "every group's verdict in");
        assert_eq!(asking.verdict(&other, &mut verdicts), Ok(()));
    }

    /// A keystroke does not wait for the groups still being asked in the background (at the
    /// lowest priority, on a busy machine, that could take seconds); their verdicts are taken
    /// once they are in, and a text asked whole while some wait replaces them.
    #[test]
    fn a_keystroke_does_not_wait_for_the_groups_asked_in_the_background() {
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Mutex::new(wait);
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = asked.clone();
        // Each check waits to be let go; its verdict says whether it was (or timed out).
        let check = move |group: &str| {
            log.lock().unwrap().push(group.to_string());
            let let_go = wait.lock().unwrap().recv_timeout(std::time::Duration::from_secs(10)).is_ok();
            if let_go { Ok(()) } else { Err("waited for".to_string()) }
        };
        let background = super::Background::start(Box::new(check)).expect("a thread");
        background.ask(vec!["echo b\n".to_string(), "echo c\n".to_string()]);
        let mut verdicts = super::BashVerdicts { later: Some(background), ..super::BashVerdicts::default() };
        let asking = verdicts.ask("echo a\n", &[0]);
        assert_eq!(asking.kept(), 0);
        assert_eq!(asking.verdict("echo a\n", &mut verdicts), Ok(()), "not waiting for the background");
        // A newer text's groups replace those waiting: `echo c` is asked no more.
        while asked.lock().unwrap().is_empty() {
            std::thread::yield_now();
        }
        verdicts.later.as_ref().unwrap().ask(vec!["echo d\n".to_string()]);
        go.send(()).unwrap();
        go.send(()).unwrap();
        verdicts.wait_for_background();
        assert_eq!(*asked.lock().unwrap(), ["echo b\n", "echo d\n"]);
        let asking = verdicts.ask("echo d\n", &[0]);
        assert_eq!(asking.kept(), 1, "its verdict taken once in");
        assert_eq!(asking.verdict("echo d\n", &mut verdicts), Ok(()));
    }
}
