//! bash's alias expansion of a line typed at posh's prompt, made before the line is planned, so
//! that a pipeline naming an alias (`grep`, under Debian's `alias grep='grep --color=auto'`) is
//! planned as the command bash will run.
//!
//! bash's rules, on the words posh's parser finds: the first word of each simple command (after
//! its assignments and redirections), when it is unquoted and names an alias, is replaced by
//! the alias's value; the first word of that value is expanded in turn unless it names an alias
//! being expanded (`alias ls='ls -F'`); when the expansion ends with a blank, the command's next
//! word is expanded too (`alias sudo='sudo '`). The parts of the line that bash keeps are given
//! back to it as typed (bash expands their aliases itself), so only the handed-over pipelines
//! carry expanded text (`offload::rewrite_line`).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// A line with its aliases expanded.
#[derive(Debug, PartialEq, Eq)]
pub struct Expanded {
    pub text: String,
    /// Each word replaced: its range in the typed line, and its expansion's in `text`, in order.
    pub replaced: Vec<(Range<usize>, Range<usize>)>,
}

impl Expanded {
    /// The typed text that `range` of the expanded text stands for; `None` when one of its ends
    /// falls inside an expansion.
    pub fn typed<'a>(&self, typed: &'a str, range: Range<usize>) -> Option<&'a str> {
        let back = |at: usize| {
            let mut shift: isize = 0;
            for (from, to) in &self.replaced {
                if to.start < at && at < to.end {
                    return None;
                }
                if to.end <= at {
                    shift += to.len() as isize - from.len() as isize;
                }
            }
            usize::try_from(at as isize - shift).ok()
        };
        typed.get(back(range.start)?..back(range.end)?)
    }
}

/// `line` with its aliases expanded as bash would expand them; `None` when no word of it names
/// an alias (or it does not parse: bash then runs it as typed).
pub fn expand(line: &str, aliases: &BTreeMap<String, String>) -> Option<Expanded> {
    if aliases.is_empty() {
        return None;
    }
    let script = posh_core::shell::parse_as_bash(line, &mut crate::bash_syntax::check);
    if !script.errors.is_empty() {
        return None;
    }
    let mut words: BTreeMap<usize, (Range<usize>, String)> = BTreeMap::new();
    for pipeline in &script.pipelines {
        for command in &pipeline.commands {
            if command.kind != posh_core::shell::CommandKind::Simple {
                continue;
            }
            for word in &command.words {
                let unquoted = word.literal.as_deref() == Some(&*word.raw);
                let Some(expansion) = unquoted.then(|| expand_word(&word.raw, aliases, &mut BTreeSet::new())).flatten()
                else {
                    break;
                };
                let next_too = expansion.ends_with([' ', '\t']);
                words.insert(word.span.start, (word.span.range(), expansion));
                if !next_too {
                    break;
                }
            }
        }
    }
    if words.is_empty() {
        return None;
    }
    let mut text = String::new();
    let mut replaced = Vec::new();
    let mut at = 0;
    for (_, (range, expansion)) in words {
        if range.start < at {
            continue;
        }
        text.push_str(&line[at..range.start]);
        replaced.push((range.clone(), text.len()..text.len() + expansion.len()));
        text.push_str(&expansion);
        at = range.end;
    }
    text.push_str(&line[at..]);
    Some(Expanded { text, replaced })
}

/// The expansion of `name` (`None` when it names no alias, or one being expanded): its value,
/// the value's first word expanded in turn.
fn expand_word(name: &str, aliases: &BTreeMap<String, String>, expanding: &mut BTreeSet<String>) -> Option<String> {
    if expanding.contains(name) {
        return None;
    }
    let value = aliases.get(name)?;
    expanding.insert(name.to_string());
    let start = value.len() - value.trim_start_matches([' ', '\t']).len();
    let end = value[start..].find(|c: char| " \t\n|&;()<>".contains(c)).map_or(value.len(), |e| start + e);
    let first = &value[start..end];
    let plain = !first.is_empty() && !first.contains(['\'', '"', '\\', '$', '`']);
    let inner = if plain { expand_word(first, aliases, expanding) } else { None };
    Some(match inner {
        Some(inner) => format!("{}{inner}{}", &value[..start], &value[end..]),
        None => value.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aliases(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn expanded(line: &str, pairs: &[(&str, &str)]) -> String {
        expand(line, &aliases(pairs)).map_or_else(|| line.to_string(), |e| e.text)
    }

    #[test]
    fn the_first_word_of_each_command_is_expanded_as_bash_does() {
        let grep = [("grep", "grep --color=auto"), ("ll", "ls -l")];
        assert_eq!(expanded("grep x f | grep y", &grep), "grep --color=auto x f | grep --color=auto y");
        assert_eq!(expanded("ll; echo grep", &grep), "ls -l; echo grep");
        assert_eq!(expanded("A=1 grep x f", &grep), "A=1 grep --color=auto x f");
        assert_eq!(expanded("<f grep x", &grep), "<f grep --color=auto x");
        assert_eq!(expanded("x=$(grep a f)", &grep), "x=$(grep --color=auto a f)");
        // Quoted words, and words not first, are not.
        assert_eq!(expanded("'grep' x f; \\grep y f; echo ll", &grep), "'grep' x f; \\grep y f; echo ll");
    }

    #[test]
    fn recursion_stops_at_an_alias_being_expanded_and_a_trailing_blank_expands_the_next_word() {
        let set = [("ls", "ls -F"), ("ll", "ls -l"), ("s", "sudo "), ("a", "b"), ("b", "a x")];
        assert_eq!(expanded("ll mnt", &set), "ls -F -l mnt");
        assert_eq!(expanded("s ll", &set), "sudo  ls -F -l");
        assert_eq!(expanded("a", &set), "a x");
        assert_eq!(expanded("s s ll", &set), "sudo  sudo  ls -F -l");
    }

    #[test]
    fn typed_text_is_found_back_around_the_expansions() {
        let line = "ll; grep x f | wc -l";
        let e = expand(line, &aliases(&[("ll", "ls -l"), ("grep", "grep --color=auto")])).unwrap();
        assert_eq!(e.text, "ls -l; grep --color=auto x f | wc -l");
        assert_eq!(e.typed(line, 0..7), Some("ll; "));
        assert_eq!(e.typed(line, 0..3), None, "inside an expansion");
        let end = e.text.len();
        assert_eq!(e.typed(line, 7..end), Some("grep x f | wc -l"));
    }
}
