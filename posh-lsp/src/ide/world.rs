//! What every script's analysis reads besides its own text: the annotation library (shipped,
//! the user's, the workspace's, open annotation documents), posh.toml and the settings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use posh_core::Span;
use posh_core::annotation::CommandEntry;
use posh_core::config::{self, Config, RunConfig};
use posh_core::fs::{FileKind, FileSystem};
use posh_core::library::Library;
use posh_core::planner::measured::{self, Ratios};
use posh_core::planner::{PlanOptions, Strategy};

use super::Target;

/// What the client may set (`initializationOptions`, `workspace/didChangeConfiguration`).
#[derive(Clone, Debug)]
pub struct Settings {
    /// A pipeline predicted to move more than this many bytes under posh gets `S003`.
    pub max_moved_bytes: u64,
    /// How posh-exec will plan (its `--placement` and `--copies-per-mount`), so the hints show
    /// what it will do.
    pub plan: PlanOptions,
    /// How scripts are run, as the editor's settings say (`posh.run`: posh.toml's `[[run]]`
    /// tables as a list); a relative `script` is relative to the workspace root. They come before
    /// posh.toml's for the same script.
    pub runs: Vec<RunConfig>,
    /// What the last update could not use, each naming the setting (`posh.run[1].args: ...`).
    pub problems: Vec<String>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { max_moved_bytes: 100_000_000, plan: PlanOptions::default(), runs: Vec::new(), problems: Vec::new() }
    }
}

impl Settings {
    /// The options [`Settings::update`] reads: what editor packages offer as settings (a test
    /// checks editors/vscode/package.json against it).
    pub const OPTIONS: [&str; 4] = ["maxMovedBytes", "copiesPerMount", "placement", "run"];

    /// Reads `{"maxMovedBytes": N, "copiesPerMount": N, "placement": "cost-based" | "greedy",
    /// "run": [{"script": "jobs/count.sh", "args": [...], "env": {...}}]}`, at the top level or
    /// under `posh`; anything else keeps the current value. What it could not use is kept in
    /// `problems`; a `run` with a problem replaces nothing.
    pub fn update(&mut self, json: &serde_json::Value) {
        let posh = json.get("posh").unwrap_or(json);
        let [max_moved_bytes, copies_per_mount, placement, run] = Settings::OPTIONS;
        let mut problems = Vec::new();
        if let Some(runs) = posh.get(run) {
            match runs_of(runs) {
                Ok(runs) => self.runs = runs,
                Err(problem) => problems.push(format!("the setting posh.{run}{problem}")),
            }
        }
        if let Some(n) = posh.get(max_moved_bytes).and_then(|v| v.as_u64()) {
            self.max_moved_bytes = n;
        }
        if let Some(n) = posh.get(copies_per_mount).and_then(|v| v.as_u64()).filter(|&n| n >= 1) {
            self.plan.copies_per_mount = usize::try_from(n).unwrap_or(usize::MAX);
        }
        match posh.get(placement).and_then(|v| v.as_str()) {
            Some("greedy") => self.plan.strategy = Strategy::Greedy,
            Some("cost-based") => self.plan.strategy = Strategy::CostBased,
            _ => {}
        }
        self.problems = problems;
    }
}

/// The `posh.run` setting: a list of `{script, args, env}` as posh.toml's `[[run]]` tables.
/// Scripts stay as given (made absolute against the workspace root by [`World::load`]).
fn runs_of(json: &serde_json::Value) -> Result<Vec<RunConfig>, String> {
    // Lua's empty table, from Neovim, is sent as an empty object.
    if json.as_object().is_some_and(serde_json::Map::is_empty) {
        return Ok(Vec::new());
    }
    let list = json.as_array().ok_or(": a list of {script, args, env} is expected")?;
    let strings = |value: &serde_json::Value, at: &str| -> Result<Vec<String>, String> {
        let items = value.as_array().ok_or(format!("{at}: a list of strings is expected"))?;
        items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or(format!("{at}: a list of strings is expected")))
            .collect()
    };
    let mut runs = Vec::new();
    for (index, entry) in list.iter().enumerate() {
        let at = format!("[{index}]");
        let script = entry
            .get("script")
            .and_then(|s| s.as_str())
            .filter(|s| !s.is_empty())
            .ok_or(format!("{at}.script: the script's path is expected"))?;
        let args = match entry.get("args") {
            Some(args) => strings(args, &format!("{at}.args"))?,
            None => Vec::new(),
        };
        let mut env = BTreeMap::new();
        if let Some(vars) = entry.get("env") {
            let vars = vars.as_object().ok_or(format!("{at}.env: a table of names to strings is expected"))?;
            for (name, value) in vars {
                let value = value.as_str().ok_or(format!("{at}.env.{name}: a string is expected"))?;
                env.insert(name.clone(), value.to_string());
            }
        }
        runs.push(RunConfig { script: PathBuf::from(script), args, env });
    }
    Ok(runs)
}

/// The inputs shared by every document of a workspace. Immutable once built: a change (a saved
/// posh.toml, an edited annotation file) builds a new one, so requests keep a consistent view.
#[derive(Debug, Clone)]
pub struct World {
    pub library: Library,
    /// The text of each annotation file added to the library, by its source name (its path).
    pub annotation_texts: BTreeMap<String, Arc<str>>,
    pub config: Config,
    /// posh.toml's text, to link hints to its mounts.
    pub config_text: Option<Arc<str>>,
    /// Why posh.toml could not be used (the default configuration is used instead).
    pub config_error: Option<String>,
    /// The posh.toml the workspace plans with (or tried to), if one was found.
    pub config_path: Option<PathBuf>,
    /// Relative paths in scripts resolve against this directory (the workspace root).
    pub root: PathBuf,
    pub settings: Settings,
    /// What posh-exec runs measured of commands' outputs (the user's `ratios.json`).
    pub ratios: Ratios,
}

/// The annotation files of a workspace: `*.posh` directly in the root, in `annotations/` and in
/// `.posh/` below it, and in the user's directory. Never a walk of the workspace.
pub fn annotation_dirs(root: &Path, user_config_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = user_config_dir.map(|d| d.join("posh").join("annotations")).into_iter().collect();
    dirs.extend([root.to_path_buf(), root.join("annotations"), root.join(".posh")]);
    dirs
}

/// The user's configuration and state directories (`~/.config`, `~/.local/state`).
#[derive(Clone, Copy, Debug, Default)]
pub struct UserDirs<'a> {
    pub config: Option<&'a Path>,
    pub state: Option<&'a Path>,
}

impl World {
    /// The shipped library, no configuration: what a script sees with nothing set up.
    pub fn new(root: impl Into<PathBuf>) -> World {
        World {
            library: Library::builtin(),
            annotation_texts: BTreeMap::new(),
            config: Config::default(),
            config_text: None,
            config_error: None,
            config_path: None,
            root: root.into(),
            settings: Settings::default(),
            ratios: Ratios::default(),
        }
    }

    /// Loads posh.toml (discovered from `root` upwards, then the user's directory) and the
    /// annotation files of [`annotation_dirs`], then `overrides` (open documents, by path), which
    /// win over the files on disk; and the ratios posh-exec measured, from `user_state_dir`.
    pub fn load(
        fs: &dyn FileSystem,
        root: &Path,
        user_dirs: UserDirs<'_>,
        overrides: &[(PathBuf, String)],
        settings: Settings,
    ) -> World {
        let UserDirs { config: user_config_dir, state: user_state_dir } = user_dirs;
        let mut world = World::new(root);
        world.settings = settings;
        // A broken file is posh-exec's to warn about and replace; hints plan without it.
        let ratios_file = user_state_dir.map(|dir| dir.join("posh").join(measured::FILE_NAME));
        if let Some(text) = ratios_file.and_then(|file| fs.read_to_string(&file)) {
            world.ratios = Ratios::parse(&text).unwrap_or_default();
        }
        match config::discover(fs, None, None, root, user_config_dir) {
            Ok(Some((path, text))) => {
                let parsed = Config::parse(&text, &path);
                world.config_path = Some(path);
                match parsed {
                    Ok(config) => {
                        world.config = config;
                        world.config_text = Some(text.into());
                    }
                    Err(e) => world.config_error = Some(e.to_string()),
                }
            }
            Ok(None) => {}
            Err(e) => world.config_error = Some(e.to_string()),
        }
        // The editor's runs first: the one found for a script is the first that names it.
        let from_settings = world.settings.runs.iter().map(|run| RunConfig {
            script: posh_core::fs::normalize_path(&world.root.join(&run.script)),
            ..run.clone()
        });
        world.config.runs.splice(0..0, from_settings.collect::<Vec<_>>());
        let mut files: Vec<PathBuf> = Vec::new();
        for dir in annotation_dirs(root, user_config_dir) {
            for name in fs.read_dir(&dir).into_iter().filter(|n| n.ends_with(".posh")) {
                let path = dir.join(name);
                if fs.metadata(&path).is_some_and(|m| m.kind == FileKind::File) && !files.contains(&path) {
                    files.push(path);
                }
            }
        }
        for path in files {
            if overrides.iter().any(|(p, _)| *p == path) {
                continue;
            }
            if let Some(text) = fs.read_to_string(&path) {
                world.add_annotations(&path, text);
            }
        }
        for (path, text) in overrides {
            world.add_annotations(path, text.clone());
        }
        world
    }

    /// Adds one annotation file to the library (its commands replace earlier entries).
    pub fn add_annotations(&mut self, path: &Path, text: String) {
        let name = path.display().to_string();
        self.library.add_source(&name, &text);
        self.annotation_texts.insert(name, text.into());
    }

    /// The entry's place in its annotation file, when that file is one the world read.
    pub fn entry_target(&self, entry: &CommandEntry) -> Option<Target> {
        let source = self.library.source_of(entry)?;
        let text = self.annotation_texts.get(source)?;
        Some(Target { path: PathBuf::from(source), span: entry.name_span, text: text.clone() })
    }

    /// The `[[mount]]` table of the mount with this name in posh.toml.
    pub fn mount_target(&self, name: &str) -> Option<Target> {
        let index = self.config.mounts.iter().position(|m| m.name == name)?;
        let text = self.config_text.as_ref()?;
        let path = self.config.origin.clone()?;
        let start = text.match_indices("[[mount]]").map(|(i, _)| i).nth(index)?;
        Some(Target { path, span: Span::new(start, start + "[[mount]]".len()), text: text.clone() })
    }

    /// `logs: /mnt/logs via 10.0.0.1:4433`, for tooltips.
    pub fn describe_mount(&self, name: &str) -> Option<String> {
        let mount = self.config.mount_named(name)?;
        Some(format!("mount {}: {} via {} ({})", mount.name, mount.path.display(), mount.proxy, mount.link))
    }
}
