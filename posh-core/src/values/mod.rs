//! What the script's variables hold before each pipeline runs, as far as posh can be sure: a
//! flow-sensitive abstract interpretation of the script (`shell::Flow`) whose values are sets of
//! strings (each possible value; `None` for unset), or unknown. The planner reads the words of a
//! pipeline through it (`planner::plan_script` with [`Values`]), so `cat "$IN" | sort` is
//! planned where `$IN` lies, before the run, and `--explain` and posh-lsp say which values.
//!
//! Sources of values: the script's assignments (literals, concatenations, `${X:-d}`, `${X:=d}`,
//! `${X#p}` and their kin on known values, `export`, `local`, `readonly`, `declare`), the
//! environment and the arguments the script is given ([`Inputs`]), `for` words (literal lists,
//! globs, `"$@"`), and a function's call sites for its positional parameters. Branches join
//! (union), loops run to a fixed point. A variable is unknown when a command substitution,
//! `read`, `eval`, `source`, a trap, arithmetic or anything posh does not follow may assign it;
//! nothing assigned in a subshell, a pipeline of several commands or a substitution outlives it.
//! Unquoted values must hold no blank or glob character (with `IFS` as bash starts with it), or
//! the word is unknown: posh never claims a value it is not sure of.

mod expand;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

pub use expand::{Expansion, Lookup, Mode, Param, Written, expand, params_in, single_quoted};

use crate::shell::{CommandKind, Flow, Pipeline, Script, Word};
use crate::text::Span;

/// The most values a variable (or the positional parameters, as lists) holds before it is
/// unknown; also the most combinations of values a word or a pipeline is expanded with.
pub const MOST_VALUES: usize = 4096;

/// What a variable may hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// One of these (`None`: unset).
    Known(BTreeSet<Option<String>>),
    /// Why posh cannot tell.
    Unknown(String),
}

impl Value {
    pub fn one(value: Option<String>) -> Value {
        Value::Known(BTreeSet::from([value]))
    }

    /// Whether joining the value with itself gives it back (a set within [`MOST_VALUES`]).
    fn joins_to_itself(&self) -> bool {
        match self {
            Value::Known(values) => values.len() <= MOST_VALUES,
            Value::Unknown(_) => true,
        }
    }

    /// [`Value::join`] of two shared values: one of them when the join is it, else a new one.
    fn join_shared(mine: &Arc<Value>, theirs: &Arc<Value>) -> Arc<Value> {
        if Arc::ptr_eq(mine, theirs) && mine.joins_to_itself() {
            return mine.clone();
        }
        match (mine.as_ref(), theirs.as_ref()) {
            // The join keeps the first side's reason.
            (Value::Unknown(_), _) => mine.clone(),
            (Value::Known(_), Value::Unknown(_)) => theirs.clone(),
            (Value::Known(a), Value::Known(b)) if a.len() <= MOST_VALUES && b.is_subset(a) => mine.clone(),
            (Value::Known(a), Value::Known(b)) if b.len() <= MOST_VALUES && a.is_subset(b) => theirs.clone(),
            _ => Arc::new(mine.join(theirs)),
        }
    }

    fn join(&self, other: &Value) -> Value {
        match (self, other) {
            (Value::Unknown(why), _) | (_, Value::Unknown(why)) => Value::Unknown(why.clone()),
            (Value::Known(a), Value::Known(b)) => {
                let joined: BTreeSet<Option<String>> = a.union(b).cloned().collect();
                if joined.len() > MOST_VALUES {
                    Value::Unknown(format!("it may hold more than {MOST_VALUES} values"))
                } else {
                    Value::Known(joined)
                }
            }
        }
    }
}

/// What the positional parameters may be: lists of arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Positionals {
    Known(BTreeSet<Vec<String>>),
    Unknown(String),
}

impl Positionals {
    /// See [`Value::joins_to_itself`].
    fn joins_to_itself(&self) -> bool {
        match self {
            Positionals::Known(lists) => lists.len() <= MOST_VALUES,
            Positionals::Unknown(_) => true,
        }
    }

    /// [`Positionals::join`] of two shared lists: one of them when the join is it.
    fn join_shared(mine: &Arc<Positionals>, theirs: &Arc<Positionals>) -> Arc<Positionals> {
        if Arc::ptr_eq(mine, theirs) && mine.joins_to_itself() {
            return mine.clone();
        }
        match (mine.as_ref(), theirs.as_ref()) {
            (Positionals::Unknown(_), _) => mine.clone(),
            (Positionals::Known(_), Positionals::Unknown(_)) => theirs.clone(),
            _ => Arc::new(mine.join(theirs)),
        }
    }

    fn join(&self, other: &Positionals) -> Positionals {
        match (self, other) {
            (Positionals::Unknown(why), _) | (_, Positionals::Unknown(why)) => Positionals::Unknown(why.clone()),
            (Positionals::Known(a), Positionals::Known(b)) => {
                let joined: BTreeSet<Vec<String>> = a.union(b).cloned().collect();
                if joined.len() > MOST_VALUES {
                    Positionals::Unknown(format!("they may be more than {MOST_VALUES} lists"))
                } else {
                    Positionals::Known(joined)
                }
            }
        }
    }
}

/// The script's variables at one point.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// Shared between the states of the pipelines that change nothing: a state is kept before
    /// every pipeline and carried through every branch, and a copy per pipeline of a few hundred
    /// variables made the analysis of a 5,000-line script take seconds.
    /// Names and values are shared too, so that a join of two states that differ in a few
    /// variables copies no string. A persistent map: an assignment copies the path to its name,
    /// not the map (copying the map of a state shared with the pipelines before it, at every
    /// assignment, was a quarter of an opened script's value analysis).
    vars: imbl::OrdMap<Arc<str>, Arc<Value>>,
    /// What a variable not in `vars` holds: unset, when the environment is known whole.
    /// Shared as `vars` is: a state is copied for every pipeline.
    others: Arc<Value>,
    positional: Arc<Positionals>,
}

/// Variables bash sets or changes itself: never known before the run.
const SET_BY_BASH: &[&str] = &[
    "BASH",
    "BASHOPTS",
    "BASHPID",
    "BASH_ALIASES",
    "BASH_ARGC",
    "BASH_ARGV",
    "BASH_ARGV0",
    "BASH_CMDS",
    "BASH_COMMAND",
    "BASH_EXECUTION_STRING",
    "BASH_LINENO",
    "BASH_REMATCH",
    "BASH_SOURCE",
    "BASH_SUBSHELL",
    "BASH_VERSINFO",
    "BASH_VERSION",
    "COLUMNS",
    "COMP_CWORD",
    "COMP_LINE",
    "COMP_POINT",
    "COMP_WORDS",
    "DIRSTACK",
    "EPOCHREALTIME",
    "EPOCHSECONDS",
    "EUID",
    "FUNCNAME",
    "GROUPS",
    "HISTCMD",
    "HOSTNAME",
    "HOSTTYPE",
    "LINENO",
    "LINES",
    "MACHTYPE",
    "MAPFILE",
    "OLDPWD",
    "OPTARG",
    "OPTERR",
    "OPTIND",
    "OSTYPE",
    "PIPESTATUS",
    "PPID",
    "PWD",
    "RANDOM",
    "REPLY",
    "SECONDS",
    "SHELLOPTS",
    "SHLVL",
    "SRANDOM",
    "UID",
    "_",
];

/// Builtins that may assign the names among their words (the declarations, `read` and the like,
/// `unset`, `let`), or run a command that may (`command`, `builtin`, `trap`, `coproc`): within
/// a function's body, any identifier in their words is taken as assigned.
const ASSIGNING_BUILTINS: &[&str] = &[
    "export",
    "readonly",
    "declare",
    "typeset",
    "local",
    "read",
    "mapfile",
    "readarray",
    "getopts",
    "printf",
    "unset",
    "let",
    "wait",
    "command",
    "builtin",
    "trap",
    "coproc",
    "exec",
];

/// `IFS` as bash starts with it (bash does not take it from the environment).
const DEFAULT_IFS: &str = " \t\n";

impl State {
    /// Whether `other` is this state, its variables shared rather than equal: cheap, and false
    /// for equal states made apart (an analysis that takes a part's run from its cache hands on
    /// the states of that run).
    pub fn is(&self, other: &State) -> bool {
        self.vars.ptr_eq(&other.vars) && self.others == other.others && self.positional == other.positional
    }

    /// What `name` holds here.
    pub fn get(&self, name: &str) -> Value {
        if SET_BY_BASH.contains(&name) {
            return Value::Unknown(format!("bash sets `{name}` itself"));
        }
        self.get_raw(name)
    }

    pub fn positional(&self) -> &Positionals {
        &self.positional
    }

    fn set(&mut self, name: &str, value: Value) {
        self.vars.insert(name.into(), Arc::new(value));
    }

    fn join(&self, other: &State) -> State {
        // The same variables on both sides (a branch or a loop that assigns nothing): the join
        // is the state itself, unless a set is too large to join to itself.
        if self.vars.ptr_eq(&other.vars)
            && self.others == other.others
            && self.positional == other.positional
            && self.others.joins_to_itself()
            && self.positional.joins_to_itself()
            && self.vars.values().all(|value| value.joins_to_itself())
        {
            return self.clone();
        }
        // Both maps in name order, side by side; a value shared by both sides is kept shared, and
        // a value that the join leaves as one side's is that side's (no copy).
        let join = |mine: Option<&Arc<Value>>, theirs: Option<&Arc<Value>>| {
            Value::join_shared(mine.unwrap_or(&self.others), theirs.unwrap_or(&other.others))
        };
        // Whether the join is, so far, the same as this state's map, or as `other`'s: it is then
        // that state, kept shared, instead of a new map (a loop's rounds and the states recorded
        // at each pipeline in it are mostly joins that add nothing to one side).
        let (mut same_as_mine, mut same_as_theirs) = (true, true);
        let (mut mine, mut theirs) = (self.vars.iter().peekable(), other.vars.iter().peekable());
        let mut vars = Vec::with_capacity(self.vars.len().max(other.vars.len()));
        loop {
            let order = match (mine.peek(), theirs.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((a, _)), Some((b, _))) => a.cmp(b),
            };
            let (name, value) = match order {
                std::cmp::Ordering::Less => {
                    let (name, value) = mine.next().expect("peeked");
                    same_as_theirs = false;
                    let joined = join(Some(value), None);
                    same_as_mine &= joined == *value;
                    (name, joined)
                }
                std::cmp::Ordering::Greater => {
                    let (name, value) = theirs.next().expect("peeked");
                    same_as_mine = false;
                    let joined = join(None, Some(value));
                    same_as_theirs &= joined == *value;
                    (name, joined)
                }
                std::cmp::Ordering::Equal => {
                    let ((name, a), (_, b)) = (mine.next().expect("peeked"), theirs.next().expect("peeked"));
                    let joined = join(Some(a), Some(b));
                    same_as_mine &= joined == *a;
                    same_as_theirs &= joined == *b;
                    (name, joined)
                }
            };
            vars.push((name.clone(), value));
        }
        let others = Value::join_shared(&self.others, &other.others);
        let positional = Positionals::join_shared(&self.positional, &other.positional);
        if same_as_mine && others == self.others && positional == self.positional {
            return self.clone();
        }
        if same_as_theirs && others == other.others && positional == other.positional {
            return other.clone();
        }
        State { vars: vars.into_iter().collect(), others, positional }
    }

    fn get_raw(&self, name: &str) -> Value {
        self.raw(name).clone()
    }

    /// [`State::get_raw`], not copied.
    fn raw(&self, name: &str) -> &Value {
        self.vars.get(name).map_or(&self.others, |value| value.as_ref())
    }

    /// Everything unknown, for `why`.
    fn unknown(why: &str) -> State {
        State {
            vars: imbl::OrdMap::unit("IFS".into(), Arc::new(Value::Unknown(why.to_string()))),
            others: Arc::new(Value::Unknown(why.to_string())),
            positional: Arc::new(Positionals::Unknown(why.to_string())),
        }
    }

    fn forget_everything(&mut self, why: &str) {
        *self = State::unknown(why);
    }

    /// Variables whose values differ from `other`'s become unknown (a loop that does not settle).
    fn widen(&self, other: &State, why: &str) -> State {
        let mut widened = self.join(other);
        let unsettled: Vec<Arc<str>> =
            widened.vars.keys().filter(|name| self.raw(name) != other.raw(name)).cloned().collect();
        for name in unsettled {
            widened.vars.insert(name, Arc::new(Value::Unknown(why.to_string())));
        }
        if self.others != other.others {
            widened.others = Arc::new(Value::Unknown(why.to_string()));
        }
        if self.positional != other.positional {
            widened.positional = Arc::new(Positionals::Unknown(why.to_string()));
        }
        widened
    }

    /// Whether bash splits unquoted values as posh does (on blanks and newlines).
    fn default_ifs(&self) -> bool {
        match self.raw("IFS") {
            Value::Known(values) => values.iter().all(|v| v.as_deref().is_none_or(|v| v == DEFAULT_IFS)),
            Value::Unknown(_) => false,
        }
    }
}

/// What the script is given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Inputs {
    /// Environment variables.
    pub env: BTreeMap<String, String>,
    /// `env` is the whole environment (`--explain`'s own): any other variable is unset. Else
    /// (an editor's run configuration) any other variable is unknown.
    pub env_complete: bool,
    /// The arguments (`$1`...), when known.
    pub args: Option<Vec<String>>,
}

impl Inputs {
    /// Nothing known of the environment or the arguments.
    pub fn unknown() -> Inputs {
        Inputs::default()
    }

    fn state(&self) -> State {
        let mut vars: imbl::OrdMap<Arc<str>, Arc<Value>> = self
            .env
            .iter()
            .filter(|(name, _)| valid_name(name))
            .map(|(name, value)| (Arc::<str>::from(name.as_str()), Arc::new(Value::one(Some(value.clone())))))
            .collect();
        vars.insert("IFS".into(), Arc::new(Value::one(Some(DEFAULT_IFS.to_string()))));
        let others = if self.env_complete {
            Value::one(None)
        } else {
            Value::Unknown(
                "it is not given: posh knows the environment only of a run (`--explain`, or a `[[run]]` of posh.toml)"
                    .into(),
            )
        };
        let positional = match &self.args {
            Some(args) => Positionals::Known(BTreeSet::from([args.clone()])),
            None => Positionals::Unknown(
                "the script's arguments are not given (`posh-exec --explain SCRIPT ARGS`, or a `[[run]]` of posh.toml)"
                    .into(),
            ),
        };
        State { vars, others: others.into(), positional: positional.into() }
    }
}

fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The values before each pipeline of a script.
///
/// The top level's states stay in the runs of its parts that made them (shared with the cache
/// an editor keeps, `analyse_cached`), looked up by where each part starts: copying every
/// pipeline's state into one map at each keystroke (and each body's, once per round of its
/// callers) was about a fifth of the editor's value analysis.
#[derive(Clone, Debug, Default)]
pub struct Values {
    /// The top level's runs, by where their parts start, in order; each run's states sorted by
    /// their offset from there, every offset within its part.
    runs: Vec<(usize, Arc<Run>)>,
    /// The states of the pipelines no run of a part holds (functions' bodies), joined with the
    /// run's where both reach; all of them when a run reached outside its part.
    elsewhere: HashMap<usize, State, Fx>,
    /// The script gives up on its values (a trap, a name reference): every state reached is this.
    unknown: Option<State>,
    /// Globbing works otherwise than posh expands globs (`shopt -s nullglob`, `set -f`...).
    globs_differ: bool,
}

impl PartialEq for Values {
    /// The same states before the same pipelines, however they are held.
    fn eq(&self, other: &Values) -> bool {
        self.globs_differ == other.globs_differ && self.states() == other.states()
    }
}

impl Eq for Values {}

impl Values {
    /// Values of states put in one map (`analyse_by_rounds`, the tests' reference).
    #[cfg(test)]
    fn from_map(at: HashMap<usize, State, Fx>, globs_differ: bool) -> Values {
        Values { runs: Vec::new(), elsewhere: at, unknown: None, globs_differ }
    }

    /// The state before the pipeline whose span starts at `start`, if the analysis reached it.
    pub fn before(&self, start: usize) -> Option<&State> {
        let found = self.elsewhere.get(&start).or_else(|| self.in_runs(start))?;
        Some(self.unknown.as_ref().unwrap_or(found))
    }

    fn in_runs(&self, start: usize) -> Option<&State> {
        let index = self.runs.partition_point(|(base, _)| *base <= start).checked_sub(1)?;
        let (base, run) = &self.runs[index];
        let at = &run.at;
        at.binary_search_by_key(&(start - base), |(offset, _)| *offset).ok().map(|found| &at[found].1)
    }

    /// Every state, by the start of its pipeline.
    fn states(&self) -> HashMap<usize, &State, Fx> {
        let runs =
            self.runs.iter().flat_map(|(base, run)| run.at.iter().map(move |(offset, state)| (base + offset, state)));
        let mut states: HashMap<usize, &State, Fx> = runs.collect();
        states.extend(self.elsewhere.iter().map(|(start, state)| (*start, state)));
        if let Some(unknown) = &self.unknown {
            states.values_mut().for_each(|state| *state = unknown);
        }
        states
    }

    /// Expands `raw` as a word (`mode`) before the pipeline at `start`: every possible
    /// expansion, or why posh cannot tell.
    pub fn expansions(&self, start: usize, raw: &str, mode: Mode) -> Result<Vec<Expansion>, String> {
        let state = self.before(start).ok_or_else(|| "posh did not follow the script there".to_string())?;
        expansions(state, raw, mode, self.globs_differ)
    }

    /// Whether globs expand as posh expands them.
    pub fn globs_differ(&self) -> bool {
        self.globs_differ
    }

    /// A digest of what `pipeline`'s words read here (the values of their parameters): two
    /// analyses that give it the same key plan it alike (an editor reuses its plan).
    pub fn key_of(&self, pipeline: &Pipeline) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.globs_differ.hash(&mut hasher);
        let state = self.before(pipeline.span.start);
        state.is_some().hash(&mut hasher);
        let Some(state) = state else { return hasher.finish() };
        state.default_ifs().hash(&mut hasher);
        for command in &pipeline.commands {
            let targets = command.redirects.iter().filter_map(|r| match &r.target {
                crate::shell::RedirectTarget::File(word) => Some(word),
                _ => None,
            });
            for word in command.words.iter().chain(targets) {
                for param in params_in(&word.raw) {
                    match &param {
                        Param::Named(name) => state.get(name).hash(&mut hasher),
                        Param::Positional => state.positional.hash(&mut hasher),
                    }
                    param.hash(&mut hasher);
                }
            }
        }
        hasher.finish()
    }
}

/// A state where some parameters are pinned to one value each.
#[derive(Debug)]
pub struct Pinned<'s> {
    pub state: &'s State,
    pub named: BTreeMap<String, Option<String>>,
    pub positional: Option<Vec<String>>,
}

impl Lookup for Pinned<'_> {
    fn named(&self, name: &str) -> Result<Option<String>, String> {
        if let Some(value) = self.named.get(name) {
            return Ok(value.clone());
        }
        match self.state.get(name) {
            Value::Known(values) if values.len() == 1 => Ok(values.into_iter().next().expect("one value")),
            Value::Known(values) => Err(format!("`${name}` may hold {} values", values.len())),
            Value::Unknown(why) => Err(format!("`${name}` is not known: {why}")),
        }
    }

    fn positional(&self) -> Result<Vec<String>, String> {
        if let Some(list) = &self.positional {
            return Ok(list.clone());
        }
        match &*self.state.positional {
            Positionals::Known(lists) if lists.len() == 1 => Ok(lists.iter().next().expect("one list").clone()),
            Positionals::Known(lists) => Err(format!("the positional parameters may be {} lists", lists.len())),
            Positionals::Unknown(why) => Err(format!("the positional parameters are not known: {why}")),
        }
    }
}

/// Every combination of the values of `params` in `state` (at most [`MOST_VALUES`]).
pub fn pinnings<'s>(state: &'s State, params: &[Param]) -> Result<Vec<Pinned<'s>>, String> {
    let mut all = vec![Pinned { state, named: BTreeMap::new(), positional: None }];
    for param in params {
        let mut next = Vec::new();
        match param {
            Param::Named(name) => {
                let values = match state.get(name) {
                    Value::Known(values) => values,
                    Value::Unknown(why) => return Err(format!("`${name}` is not known: {why}")),
                };
                if all.len() * values.len() > MOST_VALUES {
                    return Err(format!("`${name}` and the others it is used with have too many values to plan each"));
                }
                for pinned in &all {
                    for value in &values {
                        let mut named = pinned.named.clone();
                        named.insert(name.clone(), value.clone());
                        next.push(Pinned { state, named, positional: pinned.positional.clone() });
                    }
                }
            }
            Param::Positional => {
                let lists = match &*state.positional {
                    Positionals::Known(lists) => lists,
                    Positionals::Unknown(why) => return Err(format!("the positional parameters are not known: {why}")),
                };
                if all.len() * lists.len() > MOST_VALUES {
                    return Err("the positional parameters have too many values to plan each".to_string());
                }
                for pinned in &all {
                    for list in lists {
                        next.push(Pinned { state, named: pinned.named.clone(), positional: Some(list.clone()) });
                    }
                }
            }
        }
        all = next;
    }
    Ok(all)
}

/// `raw` expanded in `state` with the values `pinned` gives its parameters: [`expand`], refused
/// also where the script may have changed `IFS` (an unquoted expansion) or how bash globs (a
/// glob).
pub fn expand_with(
    state: &State,
    pinned: &Pinned<'_>,
    raw: &str,
    mode: Mode,
    globs_differ: bool,
) -> Result<Expansion, String> {
    if mode == Mode::Word && !state.default_ifs() && unquoted_expansion(raw) {
        return Err(format!("`{raw}` is unquoted and `IFS` may have changed"));
    }
    let expansion = expand(raw, pinned, mode)?;
    if globs_differ && expansion.words.iter().any(|w| w.glob) {
        return Err(format!("`{raw}` is a glob, and the script changes how bash matches globs"));
    }
    Ok(expansion)
}

/// Every expansion of `raw` in `state`.
fn expansions(state: &State, raw: &str, mode: Mode, globs_differ: bool) -> Result<Vec<Expansion>, String> {
    let params = params_in(raw);
    if mode == Mode::Word && !params.is_empty() && !state.default_ifs() && unquoted_expansion(raw) {
        return Err(format!("`{raw}` is unquoted and `IFS` may have changed"));
    }
    let mut found: Vec<Expansion> = Vec::new();
    for pinned in pinnings(state, &params)? {
        let expansion = expand(raw, &pinned, mode)?;
        if globs_differ && expansion.words.iter().any(|w| w.glob) {
            return Err(format!("`{raw}` is a glob, and the script changes how bash matches globs"));
        }
        if !found.contains(&expansion) {
            found.push(expansion);
        }
    }
    Ok(found)
}

/// Whether `raw` has a `$` outside double and single quotes.
fn unquoted_expansion(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    let mut quoted = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'\'' if !quoted => i += raw[i + 1..].find('\'').map_or(bytes.len(), |e| e + 1),
            b'"' => quoted = !quoted,
            b'$' if !quoted => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// What the analysis asks outside the script: the file system, from where the script is at an
/// offset of its text, and the annotations.
pub trait World {
    /// The files a glob word names, as bash would give them; `None` when posh cannot tell.
    fn glob(&self, word: &Word, at: usize) -> Option<Vec<String>>;
    /// The names in directory `dir` (as the script writes it), as `ls DIR` prints them (hidden
    /// ones left out); `None` when it is no directory posh can list.
    fn list(&self, dir: &str, at: usize) -> Option<Vec<String>>;
    /// Whether the command `argv`, given a list of names on its standard input, prints only
    /// whole lines of it: its annotation states `output_lines_of_input` and the invocation gives
    /// no option that `changes_lines`, no file to read and none to write. `false` (the default)
    /// when posh cannot tell.
    fn prints_lines_of_input(&self, argv: &[String]) -> bool {
        let _ = argv;
        false
    }
    /// A digest of what the answers at `at` depend on besides the question (where the script is
    /// there): at two offsets of the same digest, the same question gets the same answer. An
    /// analysis that keeps its parts' results ([`analyse_cached`]) takes a part again only where
    /// the digests of its questions are what they were. `None` (the default): never taken again.
    fn context(&self, at: usize) -> Option<u64> {
        let _ = at;
        None
    }
}

/// Follows `script` (parsed from `source`) from what it is given.
pub fn analyse(source: &str, script: &Script, inputs: &Inputs, world: &dyn World) -> Values {
    let whole = [Segment { span: Span::new(0, source.len()), steps: script.flow.len() }];
    analyse_in(source, script, inputs, world, &whole, None)
}

/// A part of a script's top level as a caller cut it (an editor's chunk): its text, and how many
/// steps of the script's top-level flow (`Script::flow`) are its own. The flow of a part must be
/// what its text alone parses to, its offsets moved by where it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub span: Span,
    pub steps: usize,
}

/// What [`analyse_cached`] keeps of one analysis of a script for the next one of a version of it.
#[derive(Clone, Debug, Default)]
pub struct ValuesCache {
    /// What every run below was made with.
    facts: Option<Arc<Facts>>,
    /// Runs of a segment's top-level steps, by its text.
    segments: HashMap<Arc<str>, Vec<Arc<Run>>, Fx>,
    /// Runs of a function's body, by the text of the segment that defines it, with the body's
    /// place among the definitions in it.
    bodies: HashMap<Arc<str>, Vec<BodyRun>, Fx>,
    /// The join of the states at each function's calls at the top level, and the calls it joined.
    folds: HashMap<String, (Vec<CallOf>, State)>,
    /// Segments and bodies the last analysis took from the cache, and ran.
    reused: usize,
    ran: usize,
}

impl ValuesCache {
    /// How many segment and body runs the last analysis took from the cache, and made anew.
    pub fn counts(&self) -> (usize, usize) {
        (self.reused, self.ran)
    }

    /// A run kept under `key` that `fits`.
    fn find(&self, key: Key<'_>, fits: impl Fn(&Arc<Run>) -> bool) -> Option<&Arc<Run>> {
        match key {
            Key::Segment(text) => self.segments.get(text)?.iter().find(|run| fits(run)),
            Key::Body(text, ordinal) => {
                self.bodies.get(text)?.iter().find(|(o, run)| *o == ordinal && fits(run)).map(|(_, run)| run)
            }
        }
    }

    /// Keeps `run` under `key`, once.
    fn keep(&mut self, key: Key<'_>, run: &Arc<Run>) {
        match key {
            Key::Segment(text) => {
                let runs = match self.segments.get_mut(text) {
                    Some(runs) => runs,
                    None => self.segments.entry(Arc::from(text)).or_default(),
                };
                if runs.len() < RUNS_KEPT && !runs.iter().any(|r| Arc::ptr_eq(r, run)) {
                    runs.push(run.clone());
                }
            }
            Key::Body(text, ordinal) => {
                let runs = match self.bodies.get_mut(text) {
                    Some(runs) => runs,
                    None => self.bodies.entry(Arc::from(text)).or_default(),
                };
                let of_body = runs.iter().filter(|(o, _)| *o == ordinal).count();
                if of_body < RUNS_KEPT && !runs.iter().any(|(_, r)| Arc::ptr_eq(r, run)) {
                    runs.push((ordinal, run.clone()));
                }
            }
        }
    }
}

/// A run of a function's body, with the body's place among the definitions of its segment.
type BodyRun = (usize, Arc<Run>);

/// A call a run made: the run, and the call's place among its calls.
type CallOf = (Arc<Run>, usize);

/// At most this many runs are kept for one segment text or one body (a body is run once per
/// round of its callers).
const RUNS_KEPT: usize = ROUNDS + 2;

/// What of the whole script the analysis of each step reads besides the states: two analyses of
/// equal facts analyse a step alike.
#[derive(Debug, PartialEq, Eq)]
struct Facts {
    functions: Vec<String>,
    function_assigns: Option<BTreeSet<String>>,
    arithmetic: BTreeSet<String>,
    readonly: BTreeSet<String>,
    lastpipe: bool,
    posix: bool,
    hidden_functions: bool,
    globs_differ: bool,
}

/// The analysis of part of the script (a segment's steps, a function's body) from one state.
#[derive(Debug)]
struct Run {
    before: State,
    /// Where it asked the files (from the part's start) and [`World::context`] there then.
    asked: Vec<(usize, u64)>,
    /// The states before its pipelines (from the part's start), sorted by offset.
    at: Vec<(usize, State)>,
    /// The calls of the script's functions it made, in order: each function's name and its state
    /// at the call.
    calls: Vec<(String, State)>,
    after: State,
}

/// [`analyse`], for a script cut into `segments` (its top-level flow split among them in order),
/// taking from `cache` what an analysis of an earlier version made for a segment of the same
/// text, run from the same state with the same script-wide facts and the same answers of the
/// files (and likewise for each function's body and its entry state); `cache` then keeps what
/// this analysis made. Equal to [`analyse`]'s result.
pub fn analyse_cached(
    source: &str,
    script: &Script,
    inputs: &Inputs,
    world: &dyn World,
    segments: &[Segment],
    cache: &mut ValuesCache,
) -> Values {
    let fits = !segments.is_empty()
        && segments.iter().map(|s| s.steps).sum::<usize>() == script.flow.len()
        && segments.iter().all(|s| s.span.end <= source.len() && source.is_char_boundary(s.span.start))
        && segments.iter().all(|s| source.is_char_boundary(s.span.end));
    if !fits {
        *cache = ValuesCache::default();
        return analyse(source, script, inputs, world);
    }
    analyse_in(source, script, inputs, world, segments, Some(cache))
}

/// A function's body, where it is defined.
struct Body<'a> {
    flow: &'a [Flow],
    /// The segment whose steps define it, and its place among the definitions there.
    segment: usize,
    ordinal: usize,
}

fn analyse_in(
    source: &str,
    script: &Script,
    inputs: &Inputs,
    world: &dyn World,
    segments: &[Segment],
    mut cache: Option<&mut ValuesCache>,
) -> Values {
    let mut analysis = Analysis::new(source, script, world);
    // Functions bash imports from the environment may be called by any name.
    analysis.hidden_functions |= inputs.env.keys().any(|name| name.starts_with("BASH_FUNC_"));
    let facts = analysis.facts();
    let mut kept = ValuesCache::default();
    if let Some(cache) = cache.as_deref_mut() {
        match &cache.facts {
            Some(before) if **before == facts => kept.facts = Some(before.clone()),
            _ => {
                *cache = ValuesCache::default();
                kept.facts = Some(Arc::new(facts));
            }
        }
    }
    let mut cache = cache.map(|cache| (cache, &mut kept));
    let texts: Vec<&str> = segments.iter().map(|s| &source[s.span.range()]).collect();

    // The top level, segment after segment (nothing there depends on the functions' bodies).
    let mut runs: Vec<(usize, Arc<Run>)> = Vec::with_capacity(segments.len());
    // Whether each run's states lie within its own part (else they are put in one map).
    let mut within = true;
    // Each function's calls at the top level, in order, as (run, index among its calls).
    let mut top_calls: BTreeMap<String, Vec<CallOf>> = BTreeMap::new();
    let mut bodies: BTreeMap<String, Vec<Body<'_>>> = BTreeMap::new();
    let mut state = inputs.state();
    let mut steps = &script.flow[..];
    for (index, segment) in segments.iter().enumerate() {
        let (own, rest) = steps.split_at(segment.steps);
        steps = rest;
        let mut ordinal = 0;
        collect_bodies(own, index, &mut ordinal, &mut bodies);
        let key = Key::Segment(texts[index]);
        let run = analysis.run_part(cache.as_mut(), key, segment.span.start, &state, |a, s| a.run(own, s));
        within &= run.at.last().is_none_or(|(offset, _)| *offset < segment.span.len());
        runs.push((segment.span.start, run.clone()));
        for (index, (name, _)) in run.calls.iter().enumerate() {
            match top_calls.get_mut(name) {
                Some(made) => made.push((run.clone(), index)),
                None => drop(top_calls.insert(name.clone(), vec![(run.clone(), index)])),
            }
        }
        state = run.after.clone();
    }

    // The states at each function's calls at the top level joined in order: the same as the last
    // analysis's when they are the same calls of the same runs.
    let mut main_calls: BTreeMap<String, State> = BTreeMap::new();
    for (name, made) in top_calls {
        let same = |(before, joined): &(Vec<CallOf>, State)| {
            let same = before.len() == made.len()
                && before.iter().zip(&made).all(|((a, i), (b, j))| Arc::ptr_eq(a, b) && i == j);
            same.then(|| joined.clone())
        };
        let earlier = cache.as_ref().and_then(|(cache, _)| cache.folds.get(&name)).and_then(same);
        let joined = earlier.unwrap_or_else(|| {
            let mut calls = made.iter().map(|(run, index)| &run.calls[*index].1);
            let first = calls.next().expect("a call").clone();
            calls.fold(first, |joined, state| joined.join(state))
        });
        if let Some((_, kept)) = cache.as_mut() {
            kept.folds.insert(name.clone(), (made, joined.clone()));
        }
        main_calls.insert(name, joined);
    }

    // The functions' bodies, each from the join of the states at its calls, until those settle.
    let mut entries: BTreeMap<String, State> = BTreeMap::new();
    // The bodies' runs of the last round, by where their segment starts.
    let mut body_runs: Vec<(usize, Arc<Run>)> = Vec::new();
    for round in 0..=ROUNDS {
        let mut calls = main_calls.clone();
        body_runs.clear();
        for (name, defined) in &bodies {
            let entry = analysis.entry(&entries, name, round);
            for body in defined {
                let segment = segments[body.segment];
                let key = Key::Body(texts[body.segment], body.ordinal);
                let flow = body.flow;
                let run = analysis.run_part(cache.as_mut(), key, segment.span.start, &entry, |a, s| a.run(flow, s));
                replay(&mut calls, &run.calls);
                body_runs.push((segment.span.start, run));
            }
        }
        if calls == entries || round == ROUNDS {
            break;
        }
        entries = calls;
    }
    let mut in_bodies: HashMap<usize, State, Fx> = HashMap::default();
    for (base, run) in &body_runs {
        place(&mut in_bodies, *base, &run.at);
    }
    let mut values = Values {
        runs: Vec::new(),
        elsewhere: HashMap::default(),
        // Anything may change anywhere.
        unknown: analysis.gives_up.as_deref().map(State::unknown),
        globs_differ: analysis.globs_differ,
    };
    if within {
        values.runs = runs;
        values.elsewhere = place_bodies(HashMap::default(), in_bodies, |start| values.in_runs(start));
    } else {
        // A run reached before or after its part: every state in one map, joined in order.
        let mut at: HashMap<usize, State, Fx> =
            HashMap::with_capacity_and_hasher(script.pipelines.len(), Fx::default());
        for (base, run) in &runs {
            place(&mut at, *base, &run.at);
        }
        values.elsewhere = place_bodies(at, in_bodies, |_| None);
    }
    if let Some((cache, kept)) = cache {
        kept.reused = analysis.reused;
        kept.ran = analysis.ran;
        *cache = std::mem::take(kept);
    }
    values
}

/// The states in functions' bodies put into `at`, each joined with the state there or the
/// top level's (`top`) where both reach.
fn place_bodies<'a>(
    mut at: HashMap<usize, State, Fx>,
    in_bodies: HashMap<usize, State, Fx>,
    top: impl Fn(usize) -> Option<&'a State>,
) -> HashMap<usize, State, Fx> {
    for (start, state) in in_bodies {
        let joined = match at.get(&start).or_else(|| top(start)) {
            Some(before) => before.join(&state),
            None => state,
        };
        at.insert(start, joined);
    }
    at
}

/// What a run is kept by.
#[derive(Clone, Copy)]
enum Key<'t> {
    Segment(&'t str),
    Body(&'t str, usize),
}

/// The states of a run (offsets from `base`) placed into `at`, joined with what is there.
fn place(at: &mut HashMap<usize, State, Fx>, base: usize, states: &[(usize, State)]) {
    for (offset, state) in states {
        let start = base.wrapping_add(*offset);
        let joined = match at.get(&start) {
            Some(before) => before.join(state),
            None => state.clone(),
        };
        at.insert(start, joined);
    }
}

/// Each call's state joined into its function's, in order.
fn replay(calls: &mut BTreeMap<String, State>, made: &[(String, State)]) {
    for (name, state) in made {
        let joined = match calls.get(name) {
            Some(before) => before.join(state),
            None => state.clone(),
        };
        calls.insert(name.clone(), joined);
    }
}

/// The bodies of the functions `flow` defines (in the order `collect_functions` finds them), as
/// defined in segment `segment`, numbered from `ordinal` on.
fn collect_bodies<'a>(
    flow: &'a [Flow],
    segment: usize,
    ordinal: &mut usize,
    into: &mut BTreeMap<String, Vec<Body<'a>>>,
) {
    for step in flow {
        match step {
            Flow::Function { name, body } => {
                into.entry(name.clone()).or_default().push(Body { flow: body, segment, ordinal: *ordinal });
                *ordinal += 1;
                collect_bodies(body, segment, ordinal, into);
            }
            Flow::Isolated(steps) | Flow::Maybe(steps) | Flow::Loop(steps) | Flow::For { body: steps, .. } => {
                collect_bodies(steps, segment, ordinal, into)
            }
            Flow::Choice(arms) => arms.iter().for_each(|arm| collect_bodies(arm, segment, ordinal, into)),
            Flow::Pipeline(_) | Flow::Opaque(_) => {}
        }
    }
}

/// How many times the functions' call sites are gathered before their bodies' values are
/// given up on, and how many times a loop runs before the variables that still change are.
const ROUNDS: usize = 6;

struct Analysis<'a> {
    script: &'a Script,
    by_start: HashMap<usize, &'a Pipeline, Fx>,
    functions: BTreeMap<String, Vec<&'a [Flow]>>,
    /// Functions whose names the script uses otherwise than to call them (`export -f f`,
    /// `trap f`, `xargs f`): their bodies may run from anywhere.
    escaping: BTreeSet<String>,
    /// Names any function may assign; `None`: anything.
    function_assigns: Option<BTreeSet<String>>,
    /// Names assigned in arithmetic (`(( i++ ))`, `$((x=1))`, `let`): never known.
    arithmetic: BTreeSet<String>,
    /// Names made read-only somewhere: their assignments may fail, so they only add values.
    readonly: BTreeSet<String>,
    /// `shopt -s lastpipe`: the last command of a pipeline may run in the script's shell.
    lastpipe: bool,
    /// The script may turn on POSIX mode.
    posix: bool,
    /// Functions posh does not see may exist (from `source`, `eval`, a statement posh does not
    /// parse, the environment): a command posh does not know to be a builtin or the script's
    /// function may be one, and assign anything.
    hidden_functions: bool,
    globs_differ: bool,
    /// The script sets traps or namerefs: posh gives up on its values.
    gives_up: Option<String>,
    world: &'a dyn World,
    /// The states before the pipelines of the part being run.
    at: HashMap<usize, State, Fx>,
    /// The calls of functions the part being run makes, in order: the state at each (its
    /// positional parameters the call's arguments).
    calls: Vec<(String, State)>,
    /// Where the part being run asked the files.
    asked: RefCell<Vec<usize>>,
    /// Parts taken from the cache, and run.
    reused: usize,
    ran: usize,
    /// The join of the states at the pipelines of each loop being run (innermost last): a
    /// `break` or `continue` there goes to the loop's end or start with it.
    seen: Vec<Option<State>>,
}

impl<'a> Analysis<'a> {
    fn new(source: &str, script: &'a Script, world: &'a dyn World) -> Analysis<'a> {
        let mut functions: BTreeMap<String, Vec<&'a [Flow]>> = BTreeMap::new();
        collect_functions(&script.flow, &mut functions);
        let words =
            || script.pipelines.iter().flat_map(|p| &p.commands).flat_map(|c| c.words.iter().chain(&c.assignments));
        let mut escaping = BTreeSet::new();
        // Each word's names looked up among the functions' (not each function's name searched
        // in each word: a script of a few hundred functions has thousands of words).
        let names: std::collections::HashSet<&str, Fx> = functions.keys().map(String::as_str).collect();
        for pipeline in script.pipelines.iter().filter(|_| !names.is_empty()) {
            for command in &pipeline.commands {
                for (i, word) in command.words.iter().enumerate() {
                    let called = |name: &&str| i == 0 && word.literal.as_deref() == Some(*name);
                    for name in mentioned(&word.raw).filter(|name| !called(name)) {
                        if names.contains(name) {
                            escaping.insert(name.to_string());
                        }
                    }
                }
            }
        }
        let mut opaque = Vec::new();
        collect_opaque(&script.flow, &mut opaque);
        for text in &opaque {
            for name in mentioned(text) {
                if names.contains(name) {
                    escaping.insert(name.to_string());
                }
            }
        }
        let gives_up = if words().any(|w| w.literal.as_deref() == Some("trap")) {
            Some("the script sets a trap, which may assign anything at any time".to_string())
        } else if script.pipelines.iter().flat_map(|p| &p.commands).any(declares_nameref) {
            Some("the script declares a name reference".to_string())
        } else {
            None
        };
        let globs_differ = globs_differ(source, script);
        let mut analysis = Analysis {
            script,
            by_start: script.pipelines.iter().map(|p| (p.span.start, &**p)).collect(),
            function_assigns: None,
            functions,
            escaping,
            arithmetic: arithmetic_names(source),
            readonly: BTreeSet::new(),
            lastpipe: source.contains("lastpipe"),
            posix: source.contains("posix"),
            hidden_functions: !opaque.is_empty()
                || script.pipelines.iter().flat_map(|p| &p.commands).any(|c| {
                    c.words.iter().take(3).any(|w| matches!(w.literal.as_deref(), Some("source" | "." | "eval")))
                }),
            globs_differ,
            gives_up,
            world,
            at: HashMap::default(),
            calls: Vec::new(),
            asked: RefCell::new(Vec::new()),
            reused: 0,
            ran: 0,
            seen: Vec::new(),
        };
        analysis.readonly = analysis.readonly_names();
        analysis.function_assigns = analysis.assigned_in_functions();
        analysis
    }

    /// The state `name`'s body runs from in round `round`, given the joined states at its calls
    /// in the round before (`entries`).
    fn entry(&self, entries: &BTreeMap<String, State>, name: &str, round: usize) -> State {
        match entries.get(name) {
            Some(entry) if !self.escaping.contains(name) && round < ROUNDS => entry.clone(),
            Some(_) if round == ROUNDS => State::unknown("the function's callers do not settle"),
            _ if self.escaping.contains(name) => {
                State::unknown(&format!("`{name}` may be called from where posh does not see"))
            }
            // Not called (yet): its body runs nowhere posh has seen.
            _ => State::unknown(&format!("posh sees no call of `{name}`")),
        }
    }

    fn facts(&self) -> Facts {
        Facts {
            functions: self.functions.keys().cloned().collect(),
            function_assigns: self.function_assigns.clone(),
            arithmetic: self.arithmetic.clone(),
            readonly: self.readonly.clone(),
            lastpipe: self.lastpipe,
            posix: self.posix,
            hidden_functions: self.hidden_functions,
            globs_differ: self.globs_differ,
        }
    }

    /// Runs a part of the script (`run`, from `before`), or takes its run from the cache (which
    /// keeps it in what it hands on either way). Its offsets count from `base`.
    fn run_part(
        &mut self,
        cache: Option<&mut (&mut ValuesCache, &mut ValuesCache)>,
        key: Key<'_>,
        base: usize,
        before: &State,
        run: impl FnOnce(&mut Self, State) -> State,
    ) -> Arc<Run> {
        let world = self.world;
        let fits = |run: &Arc<Run>| {
            run.before == *before && run.asked.iter().all(|(at, context)| world.context(base + at) == Some(*context))
        };
        let mut cache = cache;
        if let Some((cache, kept)) = cache.as_deref_mut() {
            let found = [&**cache, &**kept].into_iter().find_map(|from| from.find(key, fits)).cloned();
            if let Some(found) = found {
                self.reused += 1;
                kept.keep(key, &found);
                return found;
            }
        }
        self.ran += 1;
        self.at.clear();
        self.calls.clear();
        self.asked.borrow_mut().clear();
        let after = run(self, before.clone());
        // Offsets before the part's start, or a question whose answer cannot be told again: the
        // run is not kept (its offsets still count from `base`, wrapping).
        let mut keepable = true;
        let mut at: Vec<(usize, State)> = self
            .at
            .drain()
            .map(|(at, state)| {
                keepable &= at >= base;
                (at.wrapping_sub(base), state)
            })
            .collect();
        at.sort_unstable_by_key(|(offset, _)| *offset);
        let asked: Vec<(usize, u64)> = self
            .asked
            .take()
            .into_iter()
            .map(|at| {
                let context = self.world.context(at);
                keepable &= at >= base && context.is_some();
                (at.wrapping_sub(base), context.unwrap_or_default())
            })
            .collect();
        let made = Arc::new(Run { before: before.clone(), asked, at, calls: std::mem::take(&mut self.calls), after });
        if keepable && let Some((_, kept)) = cache {
            kept.keep(key, &made);
        }
        made
    }

    fn record(&mut self, start: usize, state: &State) {
        let joined = match self.at.get(&start) {
            Some(before) => before.join(state),
            None => state.clone(),
        };
        self.at.insert(start, joined);
        if let Some(seen) = self.seen.last_mut() {
            *seen = Some(match seen.take() {
                Some(before) => before.join(state),
                None => state.clone(),
            });
        }
    }

    fn run(&mut self, flow: &[Flow], mut state: State) -> State {
        for step in flow {
            state = self.step(step, state);
        }
        state
    }

    fn step(&mut self, step: &Flow, state: State) -> State {
        match step {
            Flow::Pipeline(start) => self.pipeline(*start, state),
            Flow::Isolated(steps) => {
                self.run(steps, state.clone());
                state
            }
            Flow::Maybe(steps) => {
                let after = self.run(steps, state.clone());
                state.join(&after)
            }
            Flow::Choice(arms) => {
                let mut joined: Option<State> = None;
                for arm in arms {
                    let after = self.run(arm, state.clone());
                    joined = Some(match joined {
                        Some(j) => j.join(&after),
                        None => after,
                    });
                }
                joined.unwrap_or(state)
            }
            Flow::Loop(body) => self.run_loop(body, state, None),
            Flow::For { variable, words, body } => {
                let values = self.for_values(words.as_deref(), &state);
                self.run_loop(body, state, Some((variable, values)))
            }
            // Runs where it is called (see `run_script`).
            Flow::Function { .. } => state,
            Flow::Opaque(text) => self.opaque(text, state),
        }
    }

    /// A loop's body run until its start settles; the state after it.
    fn run_loop(&mut self, body: &[Flow], before: State, variable: Option<(&String, Value)>) -> State {
        let enter = |mut state: State| {
            if let Some((name, values)) = &variable {
                state.set(name, values.clone());
            }
            state
        };
        let mut start = before.clone();
        for round in 0..=ROUNDS {
            self.seen.push(None);
            let after = self.run(body, enter(start.clone()));
            let seen = self.seen.pop().flatten();
            if let (Some(seen), Some(outer)) = (&seen, self.seen.last_mut()) {
                *outer = Some(match outer.take() {
                    Some(before) => before.join(seen),
                    None => seen.clone(),
                });
            }
            let mut next = before.join(&after);
            if let Some(seen) = &seen {
                next = next.join(seen);
            }
            if next == start {
                return start;
            }
            start = if round + 1 == ROUNDS { start.widen(&next, "it changes as a loop runs") } else { next };
        }
        start
    }

    /// The values a `for` loop's variable takes.
    fn for_values(&self, words: Option<&[Word]>, state: &State) -> Value {
        let Some(words) = words else {
            return match &*state.positional {
                Positionals::Known(lists) => Value::Known(lists.iter().flatten().map(|w| Some(w.clone())).collect()),
                Positionals::Unknown(why) => Value::Unknown(format!("it takes the positional parameters: {why}")),
            };
        };
        let mut values: BTreeSet<Option<String>> = BTreeSet::new();
        for word in words {
            if let Some(listed) = self.listing(word, state) {
                match listed {
                    Ok(names) => values.extend(names.into_iter().map(Some)),
                    Err(why) => return Value::Unknown(why),
                }
                continue;
            }
            let expanded = match expansions(state, &word.raw, Mode::Word, self.globs_differ) {
                Ok(expanded) => expanded,
                Err(why) => return Value::Unknown(why),
            };
            for expansion in expanded {
                for written in expansion.words {
                    if written.glob {
                        let as_word =
                            Word { span: word.span, raw: written.raw.clone().into(), literal: None, glob: true };
                        self.asked.borrow_mut().push(word.span.start);
                        match self.world.glob(&as_word, word.span.start) {
                            Some(files) => values.extend(files.into_iter().map(Some)),
                            None => return Value::Unknown(format!("posh cannot expand `{}` here", word.raw)),
                        }
                    } else {
                        values.insert(written.literal);
                    }
                }
                if values.len() > MOST_VALUES {
                    return Value::Unknown(format!("it takes more than {MOST_VALUES} values"));
                }
            }
        }
        Value::Known(values)
    }

    /// A `for` word that lists a directory, `$(ls DIR | FILTERS)` unquoted, where each filter
    /// prints some of its input lines (`head -n N`, `tail -n N`, `sort`, `uniq`, `grep -v P`) or
    /// their base names (`xargs -I R basename R`): the names the loop may take (a superset:
    /// every name in the directory). `None` for any other word.
    fn listing(&self, word: &Word, state: &State) -> Option<Result<Vec<String>, String>> {
        let inner = word.raw.strip_prefix("$(")?.strip_suffix(')')?;
        let inside = self.script.pipelines.iter().find(|p| {
            word.span.start + 2 <= p.span.start
                && p.span.end < word.span.end
                && p.context.last() == Some(&crate::shell::Context::CommandSubstitution)
                && p.span.len() == inner.trim().len()
        })?;
        let refuse = |why: &str| Some(Err(format!("`{}` {why}", word.raw)));
        let words_of = |command: &crate::shell::Command| -> Option<Vec<String>> {
            let mut all = Vec::new();
            for w in &command.words {
                let expanded = expansions(state, &w.raw, Mode::Word, self.globs_differ).ok()?;
                let [one] = &expanded[..] else { return None };
                for written in &one.words {
                    all.push(written.literal.clone()?);
                }
            }
            (command.assignments.is_empty() && command.redirects.is_empty()).then_some(all)
        };
        let (first, filters) = inside.commands.split_first()?;
        let Some(ls) = words_of(first) else { return refuse("lists a directory posh does not know") };
        let [program, dir] = &ls[..] else { return refuse("runs `ls` with options or several names") };
        if program != "ls" || dir.starts_with('-') {
            return None;
        }
        self.asked.borrow_mut().push(word.span.start);
        let Some(mut names) = self.world.list(dir, word.span.start) else {
            return refuse(&format!("lists `{dir}`, which posh cannot list"));
        };
        for filter in filters {
            let Some(argv) = words_of(filter) else {
                return refuse("filters the listing with words posh does not know");
            };
            let words: Vec<&str> = argv.iter().map(String::as_str).collect();
            let keeps_lines = match words[..] {
                // posh computes what this prints: each name its own base name. Names with a
                // slash or starting with `-` are not followed, nor what xargs would read as
                // quotes or blanks.
                ["xargs", "-I", r, "basename", r2] if r == r2 => {
                    if names.iter().any(|n| n.starts_with('-') || n.contains(['/', '\\', '\'', '"', ' ', '\t'])) {
                        return refuse("hands names to `xargs` that posh does not follow");
                    }
                    true
                }
                _ => self.world.prints_lines_of_input(&argv),
            };
            if !keeps_lines {
                return refuse(&format!("filters the listing with `{}`, which posh does not follow", words.join(" ")));
            }
        }
        // The unquoted substitution is split on blanks and globbed.
        if !state.default_ifs() || names.iter().any(|n| n.contains([' ', '\t', '\n', '*', '?', '[', '\\'])) {
            return refuse("gives names bash would split or glob");
        }
        names.sort();
        Some(Ok(names))
    }

    fn opaque(&mut self, text: &str, mut state: State) -> State {
        let calls = mentioned(text).any(|name| self.functions.contains_key(name));
        if text.trim().is_empty()
            || calls
            || ["eval", "source", ". ", "read", "declare", "typeset", "export", "local"]
                .iter()
                .any(|w| text.contains(w))
        {
            state.forget_everything("posh does not follow a statement that may assign it");
            return state;
        }
        for name in identifiers(text) {
            state.set(&name, Value::Unknown(format!("`{text}` may assign it, which posh does not follow")));
        }
        state.positional = Positionals::Unknown("a statement posh does not follow may set them".into()).into();
        state
    }

    /// Assigns `value` to `name`: only adds values when an assignment may fail (a read-only
    /// name) or when posh never knows it (arithmetic).
    fn assign(&self, state: &mut State, name: &str, value: Value) {
        let value = if self.arithmetic.contains(name) {
            Value::Unknown("arithmetic may assign it, which posh does not follow".into())
        } else if self.readonly.contains(name) {
            state.get_raw(name).join(&value)
        } else {
            value
        };
        state.set(name, value);
    }

    /// The values of an assignment's value (`X=$Y/z`) in `state`, and what it assigns itself.
    fn assigned_value(&self, raw_value: &str, state: &State) -> (Value, Vec<(String, Value)>) {
        match expansions(state, raw_value, Mode::Assignment, false) {
            Ok(expanded) => {
                let mut side: BTreeMap<String, Value> = BTreeMap::new();
                let mut values = BTreeSet::new();
                for expansion in &expanded {
                    values.insert(expansion.words.first().and_then(|w| w.literal.clone()));
                    for (name, value) in &expansion.assigns {
                        let value = Value::one(Some(value.clone()));
                        let joined = side.get(name).map_or(value.clone(), |v| v.join(&value));
                        side.insert(name.clone(), joined);
                    }
                }
                (Value::Known(values), side.into_iter().collect())
            }
            Err(why) => {
                let side = assigning_expansions(raw_value)
                    .into_iter()
                    .map(|name| (name, Value::Unknown(why.clone())))
                    .collect();
                (Value::Unknown(why), side)
            }
        }
    }

    /// A pipeline, run from `state`; the state after it.
    fn pipeline(&mut self, start: usize, mut state: State) -> State {
        let Some(pipeline) = self.by_start.get(&start).copied() else { return state };
        // What its words assign (`${X:=d}`) they assign before its later words read it.
        let mut recorded = state.clone();
        for command in &pipeline.commands {
            for word in command.words.iter().chain(redirect_words(command)) {
                for name in assigning_expansions(&word.raw) {
                    let joined = recorded.get_raw(&name).join(&self.side_effect(&word.raw, &name, &state));
                    recorded.set(&name, joined);
                }
            }
        }
        self.record(start, &recorded);
        if pipeline.commands.len() > 1 || pipeline.background {
            // Each command runs in a subshell (but a `lastpipe` script's last one, maybe).
            if self.lastpipe && !pipeline.background {
                let last = pipeline.commands.last().expect("a pipeline has commands");
                let after = self.command(last, pipeline, state.clone());
                return state.join(&after);
            }
            return state;
        }
        let command = &pipeline.commands[0];
        if command.kind == CommandKind::Compound {
            return state;
        }
        state = self.command(command, pipeline, state);
        state
    }

    /// The value `${name:=...}` in `raw` leaves `name` with, from `state`.
    fn side_effect(&self, raw: &str, name: &str, state: &State) -> Value {
        match expansions(state, raw, Mode::Assignment, false) {
            Ok(expanded) => {
                let mut value = state.get(name);
                for expansion in expanded {
                    for (assigned, text) in expansion.assigns {
                        if assigned == name {
                            value = value.join(&Value::one(Some(text)));
                        }
                    }
                }
                value
            }
            Err(why) => Value::Unknown(why),
        }
    }

    /// A simple command run in the script's shell; the state after it.
    fn command(&mut self, command: &crate::shell::Command, pipeline: &Pipeline, mut state: State) -> State {
        // What its words assign as they expand.
        for word in command.words.iter().chain(redirect_words(command)) {
            for name in assigning_expansions(&word.raw) {
                let value = self.side_effect(&word.raw, &name, &state);
                self.assign(&mut state, &name, value);
            }
        }
        let Some(first) = command.words.first() else {
            // Assignments alone, in order.
            for assignment in &command.assignments {
                state = self.assignment(&assignment.raw, state, false);
            }
            return state;
        };
        let Some(name) = first.literal.as_deref() else {
            state
                .forget_everything(&format!("the command `{}` may be a function or a builtin that assigns", first.raw));
            return state;
        };
        let mut words: Vec<&Word> = command.words.iter().collect();
        let mut name = name;
        while matches!(name, "command" | "builtin") && words.len() > 1 {
            words.remove(0);
            while words.len() > 1
                && words[0].raw.starts_with('-')
                && !matches!(words[0].literal.as_deref(), Some(n) if !n.starts_with('-'))
            {
                words.remove(0);
            }
            match words[0].literal.as_deref() {
                Some(next) => name = next,
                None => {
                    state.forget_everything("a command runs a name posh does not know");
                    return state;
                }
            }
        }
        let function = self.functions.contains_key(name);
        if !command.assignments.is_empty() && self.posix && crate::shell::is_builtin(name) {
            // `X=1 export Y`: in POSIX mode a special builtin keeps X (bash's own mode keeps no
            // assignment made for one command).
            for assignment in &command.assignments {
                if let Some((assigned, _)) = assignment.raw.split_once('=') {
                    let assigned = assigned.trim_end_matches('+');
                    self.assign(
                        &mut state,
                        assigned,
                        Value::Unknown(format!("`{}` assigns it for one command", assignment.raw)),
                    );
                }
            }
        }
        let args: Vec<&Word> = words[1..].to_vec();
        let names = |args: &[&Word]| -> Vec<String> {
            args.iter().filter_map(|w| w.literal.as_deref()).filter(|w| valid_name(w)).map(str::to_string).collect()
        };
        if function {
            self.call(name, &args, &state, pipeline);
            match &self.function_assigns {
                Some(assigned) => {
                    for assigned in assigned.clone() {
                        self.assign(
                            &mut state,
                            &assigned,
                            Value::Unknown(format!("the function `{name}` may assign it")),
                        );
                    }
                }
                None => state.forget_everything(&format!("the function `{name}` may assign anything")),
            }
            return state;
        }
        match name {
            "export" | "readonly" | "declare" | "typeset" | "local" => {
                let mut rest = args.as_slice();
                let mut flags = String::new();
                while let Some(word) = rest.first().filter(|w| w.raw.starts_with(['-', '+'])) {
                    flags.push_str(&word.raw);
                    rest = &rest[1..];
                }
                if flags.contains('n') && name != "export" {
                    state.forget_everything("the script declares a name reference");
                    return state;
                }
                let odd = flags.contains(['a', 'A', 'i', 'l', 'u', 'c']) || flags.contains(['f', 'F', 'p']);
                for word in rest {
                    match word.raw.split_once('=') {
                        Some((assigned, _)) if odd => {
                            let assigned = assigned.trim_end_matches('+');
                            if valid_name(assigned) {
                                self.assign(
                                    &mut state,
                                    assigned,
                                    Value::Unknown(format!("`{name} {flags}` assigns it")),
                                );
                            }
                        }
                        Some(_) => state = self.assignment(&word.raw, state, name == "local"),
                        None if valid_name(&word.raw) && name == "local" => {
                            let value = state.get_raw(&word.raw).join(&Value::one(None));
                            self.assign(&mut state, &word.raw, value);
                        }
                        None if valid_name(&word.raw) && odd && !flags.contains(['f', 'F', 'p']) => {
                            self.assign(&mut state, &word.raw, Value::Unknown(format!("`{name} {flags}` changes it")));
                        }
                        None if valid_name(&word.raw) => {}
                        None => {
                            state.forget_everything(&format!("`{name}` assigns names posh cannot read"));
                            return state;
                        }
                    }
                }
            }
            "read" | "mapfile" | "readarray" | "getopts" | "printf" => {
                let why = format!("`{name}` assigns it");
                let all: Vec<String> = if name == "printf" {
                    args.iter()
                        .position(|w| &*w.raw == "-v")
                        .and_then(|i| args.get(i + 1))
                        .map(|w| vec![w.raw.to_string()])
                        .unwrap_or_default()
                } else {
                    names(&args)
                };
                if name == "printf" && args.iter().any(|w| w.literal.is_none() && w.raw.starts_with("-v")) {
                    state.forget_everything("`printf -v` assigns a name posh cannot read");
                }
                for assigned in all {
                    self.assign(&mut state, &assigned, Value::Unknown(why.clone()));
                }
                if args.iter().any(|w| w.literal.is_none()) && name != "printf" {
                    state.forget_everything(&format!("`{name}` assigns names posh cannot read"));
                }
            }
            "unset" if !args.iter().any(|w| &*w.raw == "-f") => {
                for assigned in names(&args) {
                    self.assign(&mut state, &assigned, Value::one(None));
                }
            }
            "set" if args.iter().any(|w| !w.raw.starts_with(['-', '+']) || &*w.raw == "--" || &*w.raw == "-") => {
                state.positional = Positionals::Unknown("`set` sets them".into()).into();
            }
            "shift" => {
                let by = match args.first() {
                    None => Some(1),
                    Some(word) => word.literal.as_deref().and_then(|n| n.parse::<usize>().ok()),
                };
                state.positional = match (&*state.positional, by) {
                    (Positionals::Known(lists), Some(by)) => Positionals::Known(
                        lists.iter().map(|l| if by <= l.len() { l[by..].to_vec() } else { l.clone() }).collect(),
                    )
                    .into(),
                    (Positionals::Known(_), None) => {
                        Positionals::Unknown("`shift` by a count posh does not know".into()).into()
                    }
                    (unknown, _) => unknown.clone().into(),
                };
            }
            "source" | "." => state.forget_everything(&format!("`{name}` runs a file posh does not follow")),
            "eval" => state.forget_everything("`eval` runs text posh does not follow"),
            "let" => {
                for assigned in identifiers(&args.iter().map(|w| &*w.raw).collect::<Vec<_>>().join(" ")) {
                    self.assign(&mut state, &assigned, Value::Unknown("`let` assigns it".into()));
                }
            }
            _ if self.hidden_functions && !crate::shell::is_builtin(name) => state.forget_everything(&format!(
                "`{name}` may be a function the script gets from where posh does not look (`source`, `eval`, the \
                 environment), which may assign anything"
            )),
            _ => {}
        }
        state
    }

    /// `NAME=value` (or `NAME+=value`) run in `state`.
    fn assignment(&self, raw: &str, mut state: State, local: bool) -> State {
        let Some((target, value_raw)) = raw.split_once('=') else { return state };
        let (target, append) = match target.strip_suffix('+') {
            Some(target) => (target, true),
            None => (target, false),
        };
        if !valid_name(target) {
            // `X[1]=...`: an array.
            let name: String = target.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if valid_name(&name) {
                self.assign(&mut state, &name, Value::Unknown("the script makes it an array".into()));
            } else {
                state.forget_everything(&format!("`{raw}` assigns a name posh cannot read"));
            }
            return state;
        }
        if value_raw.starts_with('(') {
            self.assign(&mut state, target, Value::Unknown("the script makes it an array".into()));
            return state;
        }
        let (mut value, side) = self.assigned_value(value_raw, &state);
        for (name, v) in side {
            self.assign(&mut state, &name, v);
        }
        if append {
            value = match (state.get(target), value) {
                (Value::Known(before), Value::Known(added)) => {
                    let mut joined = BTreeSet::new();
                    for b in &before {
                        for a in &added {
                            joined.insert(Some(format!(
                                "{}{}",
                                b.clone().unwrap_or_default(),
                                a.clone().unwrap_or_default()
                            )));
                        }
                    }
                    if joined.len() > MOST_VALUES {
                        Value::Unknown("too many values".into())
                    } else {
                        Value::Known(joined)
                    }
                }
                (Value::Unknown(why), _) | (_, Value::Unknown(why)) => Value::Unknown(why),
            };
        }
        let _ = local;
        self.assign(&mut state, target, value);
        state
    }

    /// A call of the script's function `name` with `args`, from `state`.
    fn call(&mut self, name: &str, args: &[&Word], state: &State, pipeline: &Pipeline) {
        let mut lists: BTreeSet<Vec<String>> = BTreeSet::from([Vec::new()]);
        let mut known = true;
        for word in args {
            match expansions(state, &word.raw, Mode::Word, self.globs_differ) {
                Ok(expanded) if expanded.iter().all(|e| e.words.iter().all(|w| !w.glob)) => {
                    let mut next = BTreeSet::new();
                    for list in &lists {
                        for expansion in &expanded {
                            let mut list = list.clone();
                            list.extend(expansion.words.iter().filter_map(|w| w.literal.clone()));
                            next.insert(list);
                        }
                    }
                    if next.len() > MOST_VALUES {
                        known = false;
                        break;
                    }
                    lists = next;
                }
                _ => {
                    known = false;
                    break;
                }
            }
        }
        let mut entry = state.clone();
        entry.positional = if known {
            Positionals::Known(lists).into()
        } else {
            Positionals::Unknown(format!("a call of `{name}` gives arguments posh does not know")).into()
        };
        let _ = pipeline;
        self.calls.push((name.to_string(), entry));
    }

    /// Names any function of the script may assign; `None`: anything. Only what assigns in bash's
    /// shell counts, as [`Analysis::command`] follows it at the top level: assignment words,
    /// `${NAME:=...}`, loop variables, the names given to the builtins that assign, and what a
    /// statement posh does not follow mentions. Any other word (a pattern, a file name) assigns
    /// nothing: counting every identifier of every word made a keystroke in a function's pipeline
    /// change what every call assigns, and so the state of the whole script after it.
    fn assigned_in_functions(&self) -> Option<BTreeSet<String>> {
        let mut names = BTreeSet::new();
        // The words' names, not copied until the end (a few hundred functions have hundreds).
        let mut in_words: std::collections::HashSet<&str, Fx> = Default::default();
        for bodies in self.functions.values() {
            for body in bodies {
                let mut starts = Vec::new();
                let mut loops = Vec::new();
                collect_pipelines(body, &mut starts, &mut loops);
                names.extend(loops);
                for start in starts {
                    let pipeline = self.by_start.get(&start)?;
                    for command in &pipeline.commands {
                        let name = match command.words.first().map(|w| w.literal.as_deref()) {
                            Some(None) | Some(Some("eval" | "source" | ".")) => return None,
                            Some(Some(name)) => Some(name),
                            None => None,
                        };
                        for assignment in &command.assignments {
                            let target = assignment.raw.split('=').next().unwrap_or_default();
                            in_words.extend(identifier_words(target).take(1));
                        }
                        for word in command.words.iter().chain(&command.assignments).chain(redirect_words(command)) {
                            names.extend(assigning_expansions(&word.raw));
                        }
                        if name.is_some_and(|name| ASSIGNING_BUILTINS.contains(&name)) {
                            for word in &command.words[1..] {
                                in_words.extend(identifier_words(&word.raw));
                            }
                        }
                    }
                }
            }
        }
        names.extend(in_words.into_iter().map(str::to_string));
        Some(names)
    }

    fn readonly_names(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for command in self.script.pipelines.iter().flat_map(|p| &p.commands) {
            let first = command.words.first().and_then(|w| w.literal.as_deref());
            let readonly = first == Some("readonly")
                || (matches!(first, Some("declare" | "typeset" | "local"))
                    && command.words.iter().any(|w| w.raw.starts_with('-') && w.raw.contains('r')));
            if readonly {
                for word in &command.words[1..] {
                    let name = word.raw.split('=').next().unwrap_or_default();
                    if valid_name(name) {
                        names.insert(name.to_string());
                    }
                }
            }
        }
        names
    }
}

fn declares_nameref(command: &crate::shell::Command) -> bool {
    let first = command.words.first().and_then(|w| w.literal.as_deref());
    matches!(first, Some("declare" | "typeset" | "local"))
        && command.words[1..].iter().any(|w| w.raw.starts_with('-') && w.raw.contains('n'))
}

fn redirect_words(command: &crate::shell::Command) -> impl Iterator<Item = &Word> {
    command.redirects.iter().filter_map(|r| match &r.target {
        crate::shell::RedirectTarget::File(word) | crate::shell::RedirectTarget::Text(word) => Some(word),
        _ => None,
    })
}

/// Names `${NAME:=...}` or `${NAME=...}` in `raw` assign.
fn assigning_expansions(raw: &str) -> Vec<String> {
    let mut names = Vec::new();
    // Asked of every word of a script: most hold no `$`, found faster than a `${`.
    if !raw.as_bytes().contains(&b'$') {
        return names;
    }
    for (at, _) in raw.match_indices("${") {
        let rest = &raw[at + 2..];
        let len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        let after = &rest[len..];
        if len > 0 && (after.starts_with(":=") || after.starts_with('=')) && valid_name(&rest[..len]) {
            names.push(rest[..len].to_string());
        }
    }
    names
}

/// Every word-like name in `text`.
fn identifiers(text: &str) -> BTreeSet<String> {
    identifier_words(text).map(str::to_string).collect()
}

/// [`identifiers`], each as often as it occurs.
fn identifier_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| valid_name(w))
}

/// A quick hasher for the analysis's own maps of names and texts: not resistant to chosen
/// collisions, which only slow a map down.
type Fx = rustc_hash::FxBuildHasher;

/// The words of `text` that may name a function. By bytes: every byte of such a word is ASCII
/// (this runs over every word of the script at each keystroke).
fn mentioned(text: &str) -> impl Iterator<Item = &str> {
    let in_a_name = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':');
    text.as_bytes()
        .split(move |b| !in_a_name(b))
        .filter(|w| !w.is_empty())
        .map(|w| std::str::from_utf8(w).expect("ASCII bytes"))
}

/// Names arithmetic may assign: every name inside `((...))`, `$((...))` and `$[...]`.
fn arithmetic_names(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    // Found by their second byte (a search for one byte is quick; for two, not).
    let bytes = source.as_bytes();
    // As `match_indices` finds them: a match starts after the end of the one before.
    let after = |second: u8, first: u8| {
        let mut from = 0;
        let mut free = 0;
        std::iter::from_fn(move || {
            while let Some(found) = source[from..].find(char::from(second)) {
                let at = from + found;
                from = at + 1;
                if at > free && bytes[at - 1] == first {
                    free = at + 1;
                    return Some(at - 1);
                }
            }
            None
        })
    };
    for at in after(b'(', b'(') {
        let rest = &source[at + 2..];
        let end = rest.find("))").unwrap_or(rest.len());
        names.extend(identifiers(&rest[..end]));
    }
    for at in after(b'[', b'$') {
        let rest = &source[at + 2..];
        let end = rest.find(']').unwrap_or(rest.len());
        names.extend(identifiers(&rest[..end]));
    }
    names
}

fn collect_functions<'a>(flow: &'a [Flow], into: &mut BTreeMap<String, Vec<&'a [Flow]>>) {
    let mut bodies = BTreeMap::new();
    collect_bodies(flow, 0, &mut 0, &mut bodies);
    for (name, defined) in bodies {
        into.entry(name).or_default().extend(defined.into_iter().map(|body| body.flow));
    }
}

fn collect_opaque<'a>(flow: &'a [Flow], into: &mut Vec<&'a str>) {
    for step in flow {
        match step {
            Flow::Opaque(text) => into.push(text),
            Flow::Isolated(steps)
            | Flow::Maybe(steps)
            | Flow::Loop(steps)
            | Flow::For { body: steps, .. }
            | Flow::Function { body: steps, .. } => collect_opaque(steps, into),
            Flow::Choice(arms) => arms.iter().for_each(|arm| collect_opaque(arm, into)),
            Flow::Pipeline(_) => {}
        }
    }
}

/// The pipelines of a flow (by start) and the `for` variables in it.
fn collect_pipelines(flow: &[Flow], starts: &mut Vec<usize>, loops: &mut Vec<String>) {
    for step in flow {
        match step {
            Flow::Pipeline(start) => starts.push(*start),
            Flow::For { variable, body, .. } => {
                loops.push(variable.clone());
                collect_pipelines(body, starts, loops);
            }
            Flow::Isolated(steps) | Flow::Maybe(steps) | Flow::Loop(steps) | Flow::Function { body: steps, .. } => {
                collect_pipelines(steps, starts, loops)
            }
            Flow::Choice(arms) => arms.iter().for_each(|arm| collect_pipelines(arm, starts, loops)),
            Flow::Opaque(text) => loops.extend(identifiers(text)),
        }
    }
}

/// Whether the script may change how bash matches globs (`shopt -s nullglob`, `set -f`, ...),
/// so that posh's own expansion of a glob may not be bash's: a scan of the text, which may also
/// find an option's name in a comment or a string, but never misses one.
pub(crate) fn globs_differ(source: &str, script: &Script) -> bool {
    // Every option's name has `glob` or `GLOB` in it: most scripts have neither, and two searches
    // replace eight over the whole text (this runs at each keystroke).
    let named = |part: &str| memchr::memmem::find(source.as_bytes(), part.as_bytes()).is_some();
    (named("glob") || named("GLOB"))
        && ["nullglob", "failglob", "dotglob", "nocaseglob", "globstar", "extglob", "GLOBIGNORE", "noglob"]
            .iter()
            .any(|option| source.contains(option))
        || script.pipelines.iter().flat_map(|p| &p.commands).any(|c| {
            c.words.first().and_then(|w| w.literal.as_deref()) == Some("set")
                && c.words[1..]
                    .iter()
                    .any(|w| w.raw.starts_with('-') && !w.raw.starts_with("--") && w.raw.contains('f'))
        })
}

#[cfg(test)]
mod tests;
