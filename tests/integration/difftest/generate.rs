//! Random bash scripts from a grammar of bash, the same script for the same seed and features.
//!
//! A script is a list of top-level statements over the oracle's data directory (`data/`, a mount
//! in every mode but `local`), mixing the shell's own constructs with commands the shipped
//! annotation library knows, so that posh-exec hands some pipelines to its runtime. Each grammar
//! feature has a name (`FEATURES`); a feature switched off is never generated.
//!
//! What keeps a script deterministic under bash itself (bash against bash must always agree):
//! no times, PIDs or `$RANDOM`; loops are bounded; inputs are small files, so a writer into a
//! pipe whose reader stops early (`head`) has written everything in one write before the reader
//! reads, and a writer that writes more than once (`cat` of two files) is never followed by such a
//! reader (under `set -o pipefail` and `set -e` its SIGPIPE would decide whether the script goes
//! on: seed 1796223445); at most one command of a pipeline writes to stderr; `set -x` is only on around simple
//! commands of one line (the trace of a pipeline's stages comes from several processes in any
//! order); a background job writes to a file of its own and is waited for on the same line,
//! before anything reads that file.

use std::collections::BTreeSet;

/// Every grammar feature, with what it generates.
pub(crate) const FEATURES: &[(&str, &str)] = &[
    ("multiline_pipeline", "pipelines continued after `|` at line ends"),
    ("backslash_newline", "pipelines continued with backslash-newlines"),
    ("functions", "function definitions, calls, calls in pipelines, `return`"),
    ("for_loop", "`for w in ...; do ...; done`, over words and globs"),
    ("glob_operand", "globs over `data/` as a pipeline's first command's operands (`cat data/*.txt`)"),
    ("arith_for", "`for ((i = 0; i < n; i++))`"),
    ("while_loop", "counting `while` loops and `while read` over files and pipes"),
    ("until_loop", "counting `until` loops"),
    ("case", "`case ... esac`"),
    ("if", "`if/elif/else`, `[ ]`, `[[ ]]`, `(( ))` and pipelines as conditions"),
    ("subshell", "`( ... )`"),
    ("brace_group", "`{ ...; }`, redirected as a whole"),
    ("loop_pipe", "a loop's output piped or redirected after `done`"),
    ("redirect_out", "`> file`"),
    ("redirect_append", "`>> file`"),
    ("redirect_in", "`< file`"),
    ("redirect_stderr", "`2> file` and `2>&1`"),
    ("redirect_both", "`&> file`"),
    ("redirect_clobber", "`>| file`"),
    ("heredoc", "here-documents, quoted and unquoted, `<<-`"),
    ("heredoc_piped_to_both", "a here-document piped into a command whose `&>` names a file"),
    ("herestring", "here-strings `<<<`"),
    ("write_into_mount", "output files written into `data/`"),
    ("cd", "`cd data` and back"),
    ("cd_dotdot", "`(cd data/sub && ...)` naming files through `..`"),
    ("trap_exit", "`trap ... EXIT`"),
    ("trap_err", "`trap ... ERR`"),
    ("trap_err_lineno", "an ERR trap that prints `$LINENO`"),
    ("errexit", "`set -e` (and `set +e`)"),
    ("nounset", "`set -u` (and reading an unset variable)"),
    ("xtrace", "`set -x` around simple commands"),
    ("pipefail", "`set -o pipefail`"),
    ("command_substitution", "`$(...)`"),
    ("process_substitution", "`<(...)` as files and as input"),
    ("procsub_fd_name", "printing a process substitution's `/dev/fd/N` name"),
    ("background", "jobs run with `&` and `wait`, their statuses"),
    ("caller", "`caller` in functions"),
    ("funcname", "`${FUNCNAME[*]}`"),
    ("dollar_dash", "`$-`"),
    ("dollar_underscore", "`$_` after commands and pipelines"),
    ("lineno", "`$LINENO`"),
    ("bash_source", "`${BASH_SOURCE[*]}`, `source` of a file the script wrote, `$0`"),
    ("pipestatus", "`${PIPESTATUS[*]}` after pipelines"),
    ("unknown_command", "commands that do not exist"),
    ("not_executable", "running a path that is missing or not executable"),
    ("bad_redirection", "redirections from missing files and into missing directories"),
    ("missing_file", "annotated commands naming missing files"),
    ("expansion_error", "`${x:?}` (fatal), in a subshell and at top level"),
    ("eval_syntax_error", "`eval` of text with a syntax error"),
    ("exit_status", "`exit N`, `return N`, `(exit N)`, `false`, statuses printed"),
    ("hash", "`hash -t` and `type` of commands that ran"),
    ("shell_state", "listing the shell's variables and functions"),
    ("builtin_list", "listing the shell's builtins"),
    ("deleted_cwd", "commands in a working directory that was removed"),
    ("eof_no_newline", "the last line without a final newline"),
    ("eof_inside", "the file ends inside a pipeline, loop or group (a syntax error)"),
    ("eof_backslash", "the file ends in a backslash-newline, inside a pipeline"),
    ("eof_after_multiline", "the last statement a multi-line pipeline or loop (off: always one line)"),
];

/// The features switched on, by name.
#[derive(Clone, Debug)]
pub(crate) struct Features(BTreeSet<&'static str>);

impl Features {
    pub(crate) fn all() -> Features {
        Features(FEATURES.iter().map(|(name, _)| *name).collect())
    }

    /// All features but `off` (each must be a known feature).
    pub(crate) fn all_but(off: &[&str]) -> Features {
        let mut features = Features::all();
        for name in off {
            assert!(features.0.remove(*name), "no grammar feature is called {name:?}");
        }
        features
    }

    /// Reads a list like `all,-xtrace,-hash` or `pipefail,heredoc` (start from nothing, or from
    /// `base` when the first item is `-NAME` or `+NAME`).
    pub(crate) fn parse(list: &str, base: &Features) -> Result<Features, String> {
        let items: Vec<&str> = list.split([',', ' ']).filter(|s| !s.is_empty()).collect();
        let relative = items.first().is_some_and(|first| first.starts_with(['-', '+']));
        let mut features = if relative { base.clone() } else { Features(BTreeSet::new()) };
        for item in items {
            if item == "all" {
                features = Features::all();
                continue;
            }
            let (on, name) = match item.strip_prefix('-') {
                Some(name) => (false, name),
                None => (true, item.trim_start_matches('+')),
            };
            let known = FEATURES
                .iter()
                .map(|(known, _)| *known)
                .find(|known| *known == name)
                .ok_or_else(|| format!("no grammar feature is called {name:?}"))?;
            if on {
                features.0.insert(known);
            } else {
                features.0.remove(known);
            }
        }
        Ok(features)
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        debug_assert!(FEATURES.iter().any(|(known, _)| *known == name), "unknown feature {name}");
        self.0.contains(name)
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().copied()
    }
}

/// SplitMix64: small, seedable, and the same on every machine (no dependency to pin).
#[derive(Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}

/// Data files to read: small (a writer into `head` finishes in one write), some with spaces.
const DATA_FILES: &[&str] = &[
    "data/words.txt",
    "data/numbers.txt",
    "data/people.csv",
    "data/utf8.txt",
    "data/sub/nested.txt",
    "\"data/file with spaces.txt\"",
    "data/empty.txt",
];

/// Whether a pipeline stage writes its output in more than one write: `cat` of two files writes
/// each file apart (every other stage here writes a small buffered output once, at its end).
fn writes_more_than_once(stage: &str) -> bool {
    // A glob may name several files.
    if stage.contains("*.") {
        return true;
    }
    let Some(operands) = stage.strip_prefix("cat ") else { return false };
    let mut quoted = false;
    let mut words = 1;
    for c in operands.trim().chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => words += 1,
            _ => {}
        }
    }
    !operands.starts_with("<<") && words > 1
}

/// Commands that read their standard input, all in the annotation library.
const FILTERS: &[&str] = &[
    "sort",
    "sort -r",
    "sort -u",
    "sort -n",
    "uniq",
    "uniq -c",
    "wc -l",
    "wc -c",
    "head -n 3",
    "head -n 1",
    "tail -n 2",
    "tr a-z A-Z",
    "tr -d aeiou",
    "cut -c1-3",
    "grep -i an",
    "grep -v e",
    "awk '{ print NR \": \" $0 }'",
    "awk 'END { print NR }'",
    "sed 's/e/E/g'",
    "sed -n '1p;$p'",
    "tac",
    "rev",
    "nl",
    "paste -sd, -",
    "cat",
    "cat -n",
    "fold -w 4",
];

/// What the generator keeps track of while writing one script.
struct Generator<'a> {
    rng: Rng,
    features: &'a Features,
    /// Numbers for names of files and functions, so they do not collide.
    next_name: usize,
    /// Functions defined so far (callable from here on).
    functions: Vec<String>,
    /// Nesting of compound statements now being written.
    depth: usize,
    in_function: bool,
    /// Whether this script may read what keeps every pipeline of a script with bash (`$_`,
    /// `PIPESTATUS`, `BASH_SOURCE`): only some scripts do, or few would test the rewrite at all.
    may_pin_to_bash: bool,
}

/// A random script: `count` top-level statements (about), deterministic per `seed` and
/// `features`.
pub(crate) fn script(seed: u64, features: &Features) -> String {
    let mut rng = Rng::new(seed);
    let may_pin_to_bash = rng.chance(25);
    let mut generator =
        Generator { rng, features, next_name: 0, functions: Vec::new(), depth: 0, in_function: false, may_pin_to_bash };
    generator.script()
}

impl Generator<'_> {
    fn has(&self, feature: &str) -> bool {
        self.features.has(feature)
    }

    fn fresh(&mut self) -> usize {
        self.next_name += 1;
        self.next_name
    }

    fn script(&mut self) -> String {
        let count = 4 + self.rng.below(10);
        // `x` is set first: many statements read it, and `set -u` would end most scripts early.
        let mut statements = vec!["x=apple".to_string()];
        for _ in 0..count {
            statements.push(self.statement());
        }
        if self.has("eof_after_multiline") {
            if self.rng.chance(35) {
                statements.push(if self.rng.chance(50) { self.multiline_pipeline() } else { self.loop_statement() });
            }
        } else {
            // Without the feature no script may end in a statement over several lines.
            statements.push("echo \"end $?\"".to_string());
        }
        let mut text = statements.join("\n");
        text.push('\n');
        if self.has("eof_inside") && self.rng.chance(12) {
            text.push_str(&self.unfinished());
        }
        if self.has("eof_no_newline") && self.rng.chance(30) {
            while text.ends_with('\n') {
                text.pop();
            }
        }
        text
    }

    /// A compound statement or pipeline cut short at a line end: bash reports the end of file.
    fn unfinished(&mut self) -> String {
        let whole = match self.rng.below(3) {
            0 => self.multiline_pipeline(),
            1 => self.loop_statement(),
            _ => format!("{{\n{}\n{}\n}}", self.simple_statement(), self.simple_statement()),
        };
        let lines: Vec<&str> = whole.lines().collect();
        let keep = 1 + self.rng.below(lines.len().max(2) - 1);
        let mut text = lines[..keep.min(lines.len())].join("\n");
        if text.ends_with('\\') && !self.has("eof_backslash") {
            text.pop();
        }
        // A dangling `|` (a syntax error at the end of the file), but not on a here-document's
        // last line, which would then not end it.
        if !text.trim_end().ends_with(['|', '\\']) && !text.ends_with("EOF") && self.rng.chance(50) {
            text.push_str(" |");
        }
        text.push('\n');
        text
    }

    fn statement(&mut self) -> String {
        if self.depth < 2 && self.rng.chance(30) {
            self.depth += 1;
            let compound = self.compound_statement();
            self.depth -= 1;
            return compound;
        }
        self.simple_statement()
    }

    fn body(&mut self) -> String {
        let count = 1 + self.rng.below(3);
        let statements: Vec<String> = (0..count).map(|_| self.statement()).collect();
        indent(&statements.join("\n"))
    }

    fn compound_statement(&mut self) -> String {
        loop {
            let choice = self.rng.below(8);
            let made = match choice {
                0 if self.has("functions") && !self.in_function => Some(self.function_definition()),
                1 => Some(self.loop_statement()),
                2 if self.has("case") => Some(self.case_statement()),
                3 if self.has("if") => Some(self.if_statement()),
                4 if self.has("subshell") => Some(format!("(\n{}\n){}", self.body(), self.maybe_redirect())),
                5 if self.has("brace_group") => Some(format!("{{\n{}\n}}{}", self.body(), self.maybe_redirect())),
                6 if self.has("multiline_pipeline") || self.has("backslash_newline") => Some(self.multiline_pipeline()),
                7 if self.has("cd") => Some(format!("cd data\n{}\ncd ..", self.pipeline_in("."))),
                _ => None,
            };
            if let Some(made) = made {
                return made;
            }
            if !["functions", "case", "if", "subshell", "brace_group", "for_loop", "while_loop", "until_loop"]
                .iter()
                .any(|f| self.has(f))
            {
                return self.simple_statement();
            }
        }
    }

    fn function_definition(&mut self) -> String {
        let name = format!("f{}", self.fresh());
        self.in_function = true;
        let mut body = Vec::new();
        if self.has("funcname") && self.rng.chance(40) {
            body.push("  echo \"in ${FUNCNAME[*]}\"".to_string());
        }
        if self.has("caller") && self.rng.chance(40) {
            body.push(if self.rng.chance(50) { "  caller".into() } else { "  caller 0".into() });
        }
        if self.has("lineno") && self.rng.chance(30) {
            body.push("  echo \"function line $LINENO\"".into());
        }
        body.push(self.body());
        if self.has("exit_status") && self.rng.chance(40) {
            body.push(format!("  return {}", self.rng.below(4)));
        }
        self.in_function = false;
        self.functions.push(name.clone());
        let text = body.join("\n");
        if self.rng.chance(20) { format!("function {name} {{\n{text}\n}}") } else { format!("{name}() {{\n{text}\n}}") }
    }

    fn loop_statement(&mut self) -> String {
        let kinds: Vec<&str> = ["for_loop", "arith_for", "while_loop", "until_loop"]
            .into_iter()
            .filter(|feature| self.has(feature))
            .collect();
        if kinds.is_empty() {
            return self.multiline_pipeline();
        }
        let n = self.fresh();
        let counter = format!("i{n}");
        let body = self.body();
        let text = match self.rng.pick(&kinds) {
            "for_loop" => match self.rng.below(3) {
                0 => format!("for w{n} in apple fig \"two words\"; do\n  echo \"word $w{n}\"\n{body}\ndone"),
                1 => format!("for f{n} in data/*.txt; do\n  wc -l < \"$f{n}\"\n{body}\ndone"),
                _ => format!("for w{n} in $(head -n 2 data/words.txt); do\n  echo \"$w{n}\"\n{body}\ndone"),
            },
            "arith_for" => format!("for (({counter} = 0; {counter} < 2; {counter}++)); do\n{body}\ndone"),
            "while_loop" => match self.rng.below(3) {
                0 => format!(
                    "{counter}=0\nwhile [ \"${counter}\" -lt 2 ]; do\n{body}\n  {counter}=$(({counter} + 1))\ndone"
                ),
                1 => format!(
                    "while IFS= read -r line{n}; do\n  echo \"<$line{n}>\"\ndone < {}",
                    self.rng.pick(DATA_FILES)
                ),
                _ => format!(
                    "{} | while read -r line{n}; do\n  echo \"read: $line{n}\"\ndone",
                    self.source_command(DATA_FILES)
                ),
            },
            _ => {
                format!("{counter}=0\nuntil [ \"${counter}\" -ge 2 ]; do\n{body}\n  {counter}=$(({counter} + 1))\ndone")
            }
        };
        if self.has("loop_pipe") && self.rng.chance(35) {
            let filter = self.whole_input_filter();
            let end =
                if self.has("redirect_out") && self.rng.chance(50) { format!(" > loop{n}.txt") } else { String::new() };
            return format!("{text} | {filter}{end}");
        }
        // (Not into a `.txt` file after a glob: `grep -c an data/*.txt | while ...; done >>
        // data/log.txt` lists log.txt or not as bash's two children are scheduled, seed
        // 20306055.)
        let redirect = self.redirect_after(&text);
        text + &redirect
    }

    fn case_statement(&mut self) -> String {
        let subject = self.rng.pick(&["apple", "$(head -n 1 data/words.txt)", "\"$x\"", "zebra"]);
        format!(
            "case {subject} in\n  a*)\n{}\n    ;;\n  z*|b*) echo \"z or b\" ;;\n  *)\n{}\n    ;;\nesac",
            indent(&self.body()),
            indent(&self.body())
        )
    }

    fn if_statement(&mut self) -> String {
        let condition = self.condition();
        let mut text = format!("if {condition}; then\n{}\n", self.body());
        if self.rng.chance(30) {
            let condition = self.condition();
            text.push_str(&format!("elif {condition}; then\n{}\n", self.body()));
        }
        if self.rng.chance(50) {
            text.push_str(&format!("else\n{}\n", self.body()));
        }
        text.push_str("fi");
        text
    }

    fn condition(&mut self) -> String {
        match self.rng.below(5) {
            0 => "[ -f data/words.txt ]".into(),
            1 => "[[ $x == a* ]]".into(),
            2 => "(( ${#x} > 3 ))".into(),
            3 => format!("{} > /dev/null", self.pipeline_in("data")),
            _ => format!("grep -c {} data/words.txt > /dev/null", self.rng.pick(&["apple", "nothing", "an"])),
        }
    }

    /// A command writing data of `DATA_FILES`, alone at the head of a pipeline.
    fn source_command(&mut self, files: &[&str]) -> String {
        let file = self.rng.pick(files);
        let other = self.rng.pick(files);
        if self.has("glob_operand") && self.rng.chance(15) {
            // The directory of the data files, as the pipeline names it (`data`, or `.` in it).
            let dir = files[0].rsplit_once('/').map_or(".", |(dir, _)| dir);
            return match self.rng.below(5) {
                0 => format!("cat {dir}/*.txt"),
                1 => format!("grep -c an {dir}/*.txt"),
                2 => format!("wc -l {dir}/[nw]*.txt"),
                3 => format!("cat {dir}/*.csv {dir}/sub/*.txt"),
                _ => format!("grep -h e {dir}/*.txt"),
            };
        }
        match self.rng.below(14) {
            0 => format!("cat {file}"),
            1 => format!("cat {file} {other}"),
            2 => format!("grep -i {} {file}", self.rng.pick(&["an", "e", "zz", "'^[a-c]'"])),
            3 => format!("sort {file}"),
            4 => format!("head -n {} {file}", 1 + self.rng.below(4)),
            5 => format!("tail -n {} {file}", 1 + self.rng.below(4)),
            6 => "cut -d, -f2 data/people.csv".into(),
            7 => "awk -F, 'NR > 1 { s += $4 } END { print s }' data/people.csv".into(),
            8 => format!("sed -n '2,4p' {file}"),
            9 => format!("wc -l {file}"),
            10 if self.has("redirect_in") => format!("tr a-z A-Z < {file}"),
            11 => "sort -t, -k4 -n data/people.csv".into(),
            12 => format!("uniq -c {file}"),
            _ => format!("tac {file}"),
        }
    }

    /// One of the pipeline's separators: ` | ` or, with a feature, a line break.
    fn pipe_separator(&mut self) -> &'static str {
        let mut choices = vec![" | "];
        if self.has("multiline_pipeline") {
            choices.push(" |\n  ");
        }
        if self.has("backslash_newline") {
            choices.push(" \\\n  | ");
        }
        self.rng.pick(&choices)
    }

    /// A pipeline over data in `dir` (`data` from the working directory, `.` after `cd data`),
    /// maybe over several lines.
    fn pipeline_in(&mut self, dir: &str) -> String {
        self.pipeline(dir, true)
    }

    /// A pipeline over `data/` on one line (inside `$(...)`, or a line with `&`).
    fn one_line_pipeline(&mut self) -> String {
        self.pipeline("data", false)
    }

    fn pipeline(&mut self, dir: &str, may_break_lines: bool) -> String {
        let files: Vec<String> = DATA_FILES.iter().map(|f| f.replacen("data/", &format!("{dir}/"), 1)).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let mut stages = vec![self.source_command(&files)];
        for _ in 0..self.rng.below(4) {
            let before: Vec<&str> = stages.iter().map(String::as_str).collect();
            let filter = self.filter_after(&before);
            stages.push(filter.to_string());
        }
        let mut text = String::new();
        for (i, stage) in stages.iter().enumerate() {
            if i > 0 {
                text.push_str(if may_break_lines { self.pipe_separator() } else { " | " });
            }
            text.push_str(stage);
        }
        text
    }

    /// A filter to read what the stages `before` it write: one that stops early (`head`, `rev`)
    /// only where no stage before writes more than once, since a second write would meet a closed
    /// pipe or not depending on timing (a filter between passes the writes on as they come:
    /// `cat data/*.csv data/sub/*.txt | fold -w 4 | head -n 1`, seed 20299608).
    fn filter_after(&mut self, before: &[&str]) -> &'static str {
        if before.iter().any(|stage| writes_more_than_once(stage)) {
            self.whole_input_filter()
        } else {
            self.rng.pick(FILTERS)
        }
    }

    /// A filter that reads its whole input, for a loop or function that writes files: one that
    /// stops early (`head`) ends the writer by SIGPIPE at a moment that differs between runs of
    /// the same script, under bash too, and with it what the writer left in its files (seed 5150).
    /// `rev` stops early too, at the first byte of `data/utf8.txt` that is no character of the
    /// locale: `cat data/utf8.txt data/sub/nested.txt | rev` ended `cat` by SIGPIPE, or not, as
    /// the two processes were scheduled (seed 20294187: `PIPESTATUS` 141 in one run of four).
    fn whole_input_filter(&mut self) -> &'static str {
        loop {
            let filter = self.rng.pick(FILTERS);
            if !filter.starts_with("head") && filter != "rev" {
                return filter;
            }
        }
    }

    fn multiline_pipeline(&mut self) -> String {
        let mut text = self.pipeline_in("data");
        if !text.contains('\n') {
            let separator = if self.has("backslash_newline") && self.rng.chance(50) { " \\\n  | " } else { " |\n  " };
            let before: Vec<&str> = text.split(" | ").collect();
            let filter = self.filter_after(&before);
            text.push_str(separator);
            text.push_str(filter);
        }
        let redirect = self.redirect_after(&text);
        text + &redirect
    }

    /// [`Self::maybe_redirect`] for the end of `pipeline`, but no redirection that fails where
    /// `rev` may write an error of its own (an invalid byte of `data/utf8.txt`): bash's message
    /// and `rev`'s come from two processes, in either order (seed 20301263).
    /// Nor one into a `.txt` file after a glob, which may list the file being written while
    /// another command of the pipeline writes it (`cat data/*.txt | uniq -c &> data/both31.txt`
    /// read a part of both31.txt or none, under bash too: seed 20302059).
    fn redirect_after(&mut self, pipeline: &str) -> String {
        let redirect = self.maybe_redirect();
        let races_rev = redirect.contains("missing-dir/") && pipeline.contains("rev");
        // (`.txt` wherever: after `cd data` a bare name is there too.)
        let lists_itself = redirect.contains(".txt") && pipeline.contains("*.");
        if races_rev || lists_itself { String::new() } else { redirect }
    }

    /// An output redirection for a pipeline's end, or none.
    fn maybe_redirect(&mut self) -> String {
        if self.rng.chance(45) {
            return String::new();
        }
        let n = self.fresh();
        let dir = if self.has("write_into_mount") && self.rng.chance(40) { "data/" } else { "" };
        let mut choices: Vec<String> = Vec::new();
        if self.has("redirect_out") {
            choices.push(format!(" > {dir}out{n}.txt"));
            choices.push(" > /dev/null".into());
        }
        if self.has("redirect_append") {
            choices.push(format!(" >> {dir}log.txt"));
        }
        if self.has("redirect_stderr") {
            choices.push(" 2>&1".into());
            choices.push(format!(" 2> {dir}err{n}.txt"));
        }
        if self.has("redirect_both") {
            choices.push(format!(" &> {dir}both{n}.txt"));
        }
        if self.has("redirect_clobber") {
            choices.push(format!(" >| {dir}clobber.txt"));
        }
        if self.has("bad_redirection") && self.rng.chance(15) {
            choices.push(format!(" > {dir}missing-dir/out{n}.txt"));
        }
        if choices.is_empty() {
            return String::new();
        }
        let choices: Vec<&str> = choices.iter().map(String::as_str).collect();
        self.rng.pick(&choices).to_string()
    }

    fn simple_statement(&mut self) -> String {
        loop {
            if let Some(statement) = self.try_simple_statement() {
                return statement;
            }
        }
    }

    /// A statement of one kind chosen at random, or None when its feature is off.
    fn try_simple_statement(&mut self) -> Option<String> {
        let n = self.fresh();
        let statement = match self.rng.below(41) {
            0..=9 => {
                let pipeline = self.pipeline_in("data");
                format!("{pipeline}{}", self.redirect_after(&pipeline))
            }
            10 => format!("echo \"step {n} $x\""),
            11 => format!(
                "x={}",
                self.rng.pick(&["apple", "banana", "\"two words\"", "$(sort data/words.txt | head -n 1)"])
            ),
            12 if self.has("heredoc") => {
                let (open, text) = match self.rng.below(3) {
                    0 => ("<<EOF", "b $x\na line\nc $((1 + 2))\n"),
                    1 => ("<<'EOF'", "literal $x\n`not run`\n"),
                    _ => ("<<-EOF", "\ttabbed $x\n\tsecond\n"),
                };
                let filter = self.rng.pick(FILTERS);
                let mut redirect = self.maybe_redirect();
                if redirect.starts_with(" &>") && !self.has("heredoc_piped_to_both") {
                    redirect.clear();
                }
                format!("cat {open} | {filter}{redirect}\n{text}EOF")
            }
            13 if self.has("herestring") => {
                format!(
                    "{} <<< \"$x banana apple\"{}",
                    self.rng.pick(&["tr a-z A-Z", "wc -c", "rev", "grep -c a"]),
                    self.maybe_redirect()
                )
            }
            14 if self.has("functions") && !self.functions.is_empty() && !self.in_function => {
                let name = self.rng.pick(&self.functions.iter().map(String::as_str).collect::<Vec<_>>()).to_string();
                match self.rng.below(4) {
                    0 => format!("{name} arg{n}"),
                    1 => format!("{name} | {}", self.whole_input_filter()),
                    2 if self.has("command_substitution") => {
                        format!("out{n}=$({name}); echo \"got ${{#out{n}}} bytes\"")
                    }
                    _ => format!("{name}; echo \"{name} said $?\""),
                }
            }
            15 if self.has("trap_exit") => {
                self.rng.pick(&["trap 'echo \"exit trap: $?\"' EXIT", "trap 'wc -l < data/words.txt' EXIT"]).to_string()
            }
            16 if self.has("trap_err") => {
                let traps: &[&str] = if self.has("trap_err_lineno") {
                    &["trap 'echo \"err trap at $LINENO: $?\"' ERR", "trap 'echo \"err trap: $?\"' ERR", "trap - ERR"]
                } else {
                    &["trap 'echo \"err trap: $?\"' ERR", "trap - ERR"]
                };
                self.rng.pick(traps).to_string()
            }
            17 if self.has("errexit") => {
                if self.rng.chance(40) {
                    "set -e".into()
                } else {
                    "set +e".into()
                }
            }
            18 if self.has("nounset") => match self.rng.below(3) {
                0 => "set -u".into(),
                1 => format!("echo \"unset: $never_set{n}\""),
                _ => "set +u".into(),
            },
            19 if self.has("xtrace") => {
                let command = self.rng.pick(&[
                    "echo traced",
                    "wc -l data/words.txt",
                    "sort data/numbers.txt > sorted.txt",
                    "x=traced",
                    "cut -d, -f1 data/people.csv > cut.txt",
                ]);
                format!("set -x; {command}; set +x")
            }
            20 if self.has("pipefail") => {
                if self.rng.chance(60) {
                    "set -o pipefail".into()
                } else {
                    "set +o pipefail".into()
                }
            }
            21 if self.has("command_substitution") => match self.rng.below(3) {
                0 => format!("echo \"count: $({})\"", self.one_line_pipeline()),
                1 => format!("v{n}=$(grep -c an data/words.txt); echo \"v=$v{n} status $?\""),
                _ => "echo \"$(cat data/sub/nested.txt | wc -l) lines, $(cut -d, -f1 data/people.csv | tail -n 1)\""
                    .into(),
            },
            22 if self.has("process_substitution") => match self.rng.below(4) {
                0 => "diff <(sort data/words.txt) <(sort -u data/words.txt)".into(),
                1 => format!(
                    "while read -r l{n}; do echo \"ps $l{n}\"; done < <(cut -d, -f2 data/people.csv | head -n 3)"
                ),
                2 => "paste -d' ' <(head -n 3 data/numbers.txt) <(tail -n 3 data/numbers.txt)".into(),
                _ => "cat <(grep -i a data/words.txt) | wc -l".into(),
            },
            23 if self.has("procsub_fd_name") => "echo <(:) <(:)".into(),
            24 if self.has("background") => match self.rng.below(3) {
                0 => {
                    format!("{} > bg{n}.txt & wait $!; echo \"bg status $?\"; cat bg{n}.txt", self.one_line_pipeline())
                }
                1 => format!("(exit {}) & wait $!; echo \"waited $?\"", self.rng.below(5)),
                _ => format!(
                    "sort data/words.txt > bg{n}.txt & tac data/numbers.txt > bgt{n}.txt & wait; cat bg{n}.txt bgt{n}.txt | wc -l"
                ),
            },
            25 if self.has("dollar_dash") => "echo \"flags: $-\"".into(),
            26 if self.has("dollar_underscore") && self.may_pin_to_bash => "echo \"last arg: $_\"".into(),
            27 if self.has("lineno") => "echo \"line $LINENO\"".into(),
            28 if self.has("bash_source") && self.may_pin_to_bash => match self.rng.below(3) {
                0 => "echo \"source: ${BASH_SOURCE[*]} name: $0\"".into(),
                1 => format!(
                    "printf '%s\\n' 'echo \"sourced ${{BASH_SOURCE[0]}} line $LINENO\"' 'sort data/words.txt | head -n 1' > lib{n}.sh; source ./lib{n}.sh"
                ),
                _ => "echo \"args: $# $*\"".into(),
            },
            29 if self.has("pipestatus") && self.may_pin_to_bash => {
                format!("{}; echo \"pipestatus: ${{PIPESTATUS[*]}}\"", self.one_line_pipeline())
            }
            30 if self.has("unknown_command") => "nosuchcmd arg; echo \"status $?\"".into(),
            31 if self.has("not_executable") => {
                format!("{} arg; echo \"status $?\"", self.rng.pick(&["data/words.txt", "./missing.sh"]))
            }
            32 if self.has("bad_redirection") => match self.rng.below(3) {
                0 => "sort < data/missing.txt; echo \"status $?\"".into(),
                1 => "cat data/words.txt > missing-dir/x.txt".into(),
                _ => "wc -l < data/nothing-here.txt | cat".into(),
            },
            33 if self.has("missing_file") => {
                // A glob that matches nothing stays a word, which names no file.
                let missing = if self.has("glob_operand") && self.rng.chance(30) {
                    "data/*.none".into()
                } else {
                    format!("data/missing{n}.txt")
                };
                format!(
                    "{} {missing}{}",
                    self.rng.pick(&["cat", "sort", "wc -l", "head -n 1", "grep a"]),
                    self.rng.pick(&["", " | sort", "; echo \"status $?\""])
                )
            }
            34 if self.has("expansion_error") => {
                if self.rng.chance(70) {
                    format!("( : \"${{unset{n}:?is not set}}\" ); echo \"subshell status $?\"")
                } else {
                    format!("echo \"${{unset{n}:?is not set}}\"")
                }
            }
            35 if self.has("eval_syntax_error") => {
                format!(
                    "eval '{}'; echo \"eval status $?\"",
                    self.rng.pick(&["if then fi", "for in do", "echo (", "cat data/words.txt |"])
                )
            }
            36 if self.has("exit_status") => match self.rng.below(6) {
                0 if self.in_function => format!("return {}", self.rng.below(3)),
                1 if self.rng.chance(25) => format!("exit {}", self.rng.below(4)),
                2 => format!("(exit {}); echo \"status $?\"", self.rng.below(256)),
                3 => "false || echo \"false said $?\"".into(),
                4 => "grep -c nothing data/words.txt; echo \"grep said $?\"".into(),
                _ => "! sort data/words.txt > /dev/null; echo \"negated $?\"".into(),
            },
            37 if self.has("hash") => {
                format!("sort data/words.txt > /dev/null; {}", self.rng.pick(&["hash -t sort", "type sort", "hash"]))
            }
            38 if self.has("builtin_list") && self.rng.below(4) == 0 => {
                self.rng.pick(&["compgen -b | grep -c posh", "enable | grep -c posh"]).to_string()
            }
            38 if self.has("shell_state") => self
                .rng
                .pick(&["compgen -v | grep -c posh", "declare -p | grep -c posh", "set | grep -c posh"])
                .to_string(),
            39 if self.has("deleted_cwd") => format!(
                "mkdir gone{n}; cd gone{n}; rmdir ../gone{n}; ls; cat ../data/words.txt | wc -l; echo \"status $?\"; cd .."
            ),
            40 if self.has("cd_dotdot") => {
                format!("(cd data/sub && {}){}", self.pipeline("..", false), self.maybe_redirect())
            }
            _ => return None,
        };
        Some(statement)
    }
}

/// Indents every line of `text` by two spaces (here-document bodies are left as they are,
/// since their lines are data: the generator writes none inside compound statements with tabs).
fn indent(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_heredoc: Option<&str> = None;
    for line in text.lines() {
        if let Some(end) = in_heredoc {
            out.push(line.to_string());
            if line == end {
                in_heredoc = None;
            }
            continue;
        }
        if line.contains("<<EOF") || line.contains("<<'EOF'") {
            in_heredoc = Some("EOF");
        } else if line.contains("<<-EOF") {
            // `<<-` strips leading tabs only, and indent adds spaces: its end must stay alone.
            in_heredoc = Some("EOF");
        }
        out.push(format!("  {line}"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_script() {
        let features = Features::all();
        assert_eq!(script(7, &features), script(7, &features));
        assert_ne!(script(7, &features), script(8, &features));
    }

    #[test]
    fn a_feature_switched_off_is_not_generated() {
        let features = Features::all_but(&["xtrace", "heredoc"]);
        for seed in 0..200 {
            let text = script(seed, &features);
            assert!(!text.contains("set -x") && !text.contains("<<EOF"), "{text}");
        }
    }

    #[test]
    fn no_writer_of_two_writes_feeds_a_reader_that_stops_early() {
        assert!(writes_more_than_once("cat \"data/file with spaces.txt\" data/utf8.txt"));
        assert!(!writes_more_than_once("cat \"data/file with spaces.txt\""));
        let features = Features::all();
        for seed in 0..2000 {
            let text = script(seed, &features).replace(" \\\n  | ", " | ").replace(" |\n  ", " | ");
            for line in text.lines() {
                let stages: Vec<&str> = line.split(" | ").map(str::trim).collect();
                for (k, stage) in stages.iter().enumerate().skip(1) {
                    let after_two_writes = stages[..k].iter().any(|s| writes_more_than_once(s));
                    assert!(!(after_two_writes && stage.starts_with("head")), "seed {seed}: {line}");
                }
            }
        }
    }

    #[test]
    fn a_feature_list_reads_relative_to_its_base() {
        let base = Features::all_but(&["xtrace"]);
        let features = Features::parse("+xtrace,-hash", &base).expect("a valid list");
        assert!(features.has("xtrace") && !features.has("hash") && features.has("pipefail"));
        let only = Features::parse("pipefail", &base).expect("a valid list");
        assert_eq!(only.names().collect::<Vec<_>>(), ["pipefail"]);
        assert!(Features::parse("-nonsense", &base).is_err());
    }
}
