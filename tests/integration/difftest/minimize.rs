//! Delta debugging of a failing script: whole statements first, then single lines, keeping
//! only reductions for which `still_fails` holds.

/// The lines of `script` grouped into top-level statements: a group starts at an unindented line
/// that continues nothing (no `|` or `\` before it, not inside a here-document, not a closing
/// keyword).
pub(crate) fn statements(script: &str) -> Vec<String> {
    const CLOSERS: &[&str] = &["done", "fi", "esac", "}", ")", "else", "elif", "then", "do", ";;"];
    let mut groups: Vec<String> = Vec::new();
    let mut heredoc_end: Option<String> = None;
    let mut continues = false;
    for line in script.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        let starts_group = heredoc_end.is_none()
            && !continues
            && !bare.starts_with([' ', '\t'])
            && !CLOSERS.iter().any(|closer| bare.starts_with(closer));
        match groups.last_mut() {
            Some(group) if !starts_group => group.push_str(line),
            _ => groups.push(line.to_string()),
        }
        if let Some(end) = &heredoc_end {
            if bare.trim_start_matches('\t') == end {
                heredoc_end = None;
            }
            continue;
        }
        heredoc_end = heredoc_delimiter(bare);
        let trimmed = bare.trim_end();
        continues = trimmed.ends_with('|') || trimmed.ends_with('\\') || trimmed.ends_with("&&");
    }
    groups
}

/// The word that ends a here-document opened on `line`, if one is.
fn heredoc_delimiter(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = &line[at + 2..];
    if rest.starts_with('<') {
        return None;
    }
    let word: String = rest
        .trim_start_matches('-')
        .trim_start()
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '|' | ';' | '&' | '>' | '<' | ')'))
        .collect();
    let word = word.trim_matches(['\'', '"']).to_string();
    (!word.is_empty()).then_some(word)
}

/// The smallest part of `units` (in order) for which `still_fails` holds, found by removing
/// chunks of halving size (Zeller's ddmin, complements only), within `budget` tries.
pub(crate) fn ddmin(
    mut units: Vec<String>,
    budget: &mut usize,
    still_fails: &mut dyn FnMut(&[String]) -> bool,
) -> Vec<String> {
    let mut chunks = 2;
    while units.len() >= 2 && *budget > 0 {
        let size = units.len().div_ceil(chunks);
        let mut reduced = false;
        for start in (0..units.len()).step_by(size) {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            let candidate: Vec<String> =
                units[..start].iter().chain(&units[(start + size).min(units.len())..]).cloned().collect();
            if still_fails(&candidate) {
                units = candidate;
                chunks = (chunks - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if chunks >= units.len() {
                break;
            }
            chunks = (chunks * 2).min(units.len());
        }
    }
    units
}

/// Reduces `script` to what still fails: statements, then lines of what is left.
pub(crate) fn minimize(script: &str, budget: usize, still_fails: &mut dyn FnMut(&str) -> bool) -> String {
    let mut budget = budget;
    let statements = ddmin(statements(script), &mut budget, &mut |units| still_fails(&units.concat()));
    let lines: Vec<String> = statements.concat().split_inclusive('\n').map(String::from).collect();
    ddmin(lines, &mut budget, &mut |units| still_fails(&units.concat())).concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_keep_compound_commands_pipelines_and_heredocs_whole() {
        let script = "x=1\nfor i in 1 2; do\n  echo $i\ndone\ncat a |\nsort\ncat <<EOF\nx\nEOF\necho end";
        assert_eq!(
            statements(script),
            ["x=1\n", "for i in 1 2; do\n  echo $i\ndone\n", "cat a |\nsort\n", "cat <<EOF\nx\nEOF\n", "echo end"]
        );
    }

    #[test]
    fn ddmin_finds_the_two_lines_that_matter() {
        let units: Vec<String> = (0..20).map(|i| format!("{i}\n")).collect();
        let mut budget = 200;
        let found =
            ddmin(units, &mut budget, &mut |u| u.contains(&"3\n".to_string()) && u.contains(&"17\n".to_string()));
        assert_eq!(found, ["3\n", "17\n"]);
    }
}
