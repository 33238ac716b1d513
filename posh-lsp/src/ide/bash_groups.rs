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
//! follow.

use std::collections::HashMap;

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
    /// Groups asked about in the background after a text was asked whole: their verdicts, by
    /// text, when the thread ends.
    asking_later: Option<std::thread::JoinHandle<Vec<(String, Verdict)>>>,
}

impl Clone for BashVerdicts {
    /// The verdicts known; those still being asked in the background are not (a clone asks
    /// again what it needs).
    fn clone(&self) -> Self {
        BashVerdicts { by_text: self.by_text.clone(), asking_later: None }
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
        if let Some(later) = self.asking_later.take() {
            self.by_text.extend(later.join().unwrap_or_default());
        }
    }

    /// Starts `bash -n` on each group of `text` whose verdict is not kept; `starts` are the
    /// chunks' starts, in order, the first 0. Verdicts of groups no longer in the text are dropped.
    pub fn ask(&mut self, text: &str, starts: &[usize]) -> Asking {
        if let Some(later) = self.asking_later.take() {
            if later.is_finished() {
                self.by_text.extend(later.join().unwrap_or_default());
            } else {
                // Still asking at its low priority (a busy machine): not waited for, which could
                // take seconds; this text's groups are asked as if never asked before.
                self.asking_later = Some(later);
            }
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
            verdicts.asking_later = std::thread::Builder::new()
                .name("bash-groups".to_string())
                .spawn(move || {
                    at_lowest_priority();
                    groups
                        .into_iter()
                        .map(|group| {
                            let said = posh_cli::bash_syntax::check(&group);
                            (group, said)
                        })
                        .collect()
                })
                .ok();
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

    /// A keystroke does not wait for the groups still being asked in the background (at the
    /// lowest priority, on a busy machine, that could take seconds); their verdicts are taken
    /// once they are in.
    #[test]
    fn a_keystroke_does_not_wait_for_the_groups_asked_in_the_background() {
        let (go, wait) = std::sync::mpsc::channel::<()>();
        // Its verdict says whether it was let go (after `ask` returned) or waited for.
        let background = std::thread::spawn(move || {
            let let_go = wait.recv_timeout(std::time::Duration::from_secs(10)).is_ok();
            vec![("echo b\n".to_string(), if let_go { Ok(()) } else { Err("waited for".to_string()) })]
        });
        let mut verdicts = super::BashVerdicts { asking_later: Some(background), ..super::BashVerdicts::default() };
        let asking = verdicts.ask("echo a\n", &[0]);
        go.send(()).unwrap();
        assert_eq!(asking.kept(), 0);
        assert_eq!(asking.verdict("echo a\n", &mut verdicts), Ok(()));
        let later = verdicts.asking_later.as_ref().expect("kept while it runs");
        while !later.is_finished() {
            std::thread::yield_now();
        }
        let asking = verdicts.ask("echo b\n", &[0]);
        assert_eq!(asking.kept(), 1, "its verdicts taken once in");
        assert_eq!(asking.verdict("echo b\n", &mut verdicts), Ok(()), "the keystroke waited for it");
    }
}
