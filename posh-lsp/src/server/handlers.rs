//! The protocol's requests and notifications, each a conversion around a `crate::ide` call.

use std::path::PathBuf;
use std::sync::Arc;

use posh_core::{Diagnostic, Severity, Span};
use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::*;
use tower_lsp::{LanguageServer, async_trait};

use super::convert::{self, Lines};
use super::documents::{Shown, Snapshot};
use super::{Backend, FS_LATE_BUDGET, FS_TTL, FS_WORLD_BUDGET, fs_budget};
use crate::ide::semantic_tokens::TokenType;
use crate::ide::{self, Language, ScriptAnalysis, UserDirs, World};

impl Backend {
    fn snapshot(&self, uri: &Url) -> Option<Snapshot> {
        self.state().store.snapshot(uri)
    }

    fn world(&self) -> Arc<World> {
        self.state().world.clone()
    }

    /// The snapshot's analysis: cached, or computed off the async threads and cached. One that
    /// ran out of its file-system budget is answered with but not cached (nor its plans), and is
    /// done again in the background ([`Backend::analyze_late`]).
    async fn analysis(&self, snapshot: &Snapshot) -> Arc<ScriptAnalysis> {
        if let Some(done) = self.state().store.cached(snapshot) {
            return done;
        }
        // One analysis of a document at a time: a request that comes while one runs (the
        // diagnostics, hints and lenses of one version arrive together) waits for it and takes
        // its result, instead of planning the script again without the plans it holds.
        let turn = self.state().store.turn(&snapshot.uri);
        let _turn = match &turn {
            Some(turn) => Some(turn.lock().await),
            None => None,
        };
        if let Some(done) = self.state().store.cached(snapshot) {
            return done;
        }
        let (since, plans) = self.state().store.take_plans(&snapshot.uri, FS_TTL);
        let (computed, plans) = self.analyze(snapshot, plans, fs_budget()).await;
        let mut state = self.state();
        if computed.partial {
            state.store.return_plans(&snapshot.uri, (since, ide::AnalysisCache::default()));
            if state.late.insert((snapshot.uri.clone(), snapshot.version)) {
                drop(state);
                self.analyze_late(snapshot.clone());
            }
        } else {
            state.store.return_plans(&snapshot.uri, (since, plans));
            state.store.store(snapshot, computed.clone());
        }
        computed
    }

    async fn analyze(
        &self,
        snapshot: &Snapshot,
        mut plans: ide::AnalysisCache,
        budget: std::time::Duration,
    ) -> (Arc<ScriptAnalysis>, ide::AnalysisCache) {
        let (world, fs, text) = (self.world(), self.fs.clone(), snapshot.text.clone());
        // Its `[[run]]` in posh.toml, if any, gives its arguments and environment.
        let path = snapshot.uri.to_file_path().ok();
        tokio::task::spawn_blocking(move || {
            let fs = fs.budgeted(budget);
            let mut analysis = ide::analyze_script_at(&world, &fs, path.as_deref(), &text, &mut plans);
            analysis.partial = fs.ran_out();
            (Arc::new(analysis), plans)
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }

    /// The analysis of `snapshot` again, with the time the file system needs: when it lands (and
    /// the document has not moved on), it is kept, its diagnostics published, and the client
    /// asked to fetch hints and lenses again.
    fn analyze_late(&self, snapshot: Snapshot) {
        let this = self.clone();
        tokio::spawn(async move {
            let (late, _) = this.analyze(&snapshot, ide::AnalysisCache::default(), FS_LATE_BUDGET).await;
            let (current, inlay_refresh, lens_refresh) = {
                let mut state = this.state();
                state.late.remove(&(snapshot.uri.clone(), snapshot.version));
                // Still short of answers: the next edit tries again.
                if late.partial {
                    return;
                }
                state.store.store(&snapshot, late);
                let current = state.store.snapshot(&snapshot.uri).is_some_and(|s| s.version == snapshot.version);
                (current, state.inlay_refresh, state.lens_refresh)
            };
            if !current {
                return;
            }
            this.publish(snapshot).await;
            if inlay_refresh {
                let _ = this.client.inlay_hint_refresh().await;
            }
            if lens_refresh {
                let _ = this.client.code_lens_refresh().await;
            }
        });
    }

    /// The hints of a script at `range` of its current text, with their offsets in it.
    async fn script_hints(&self, snapshot: &Snapshot, range: Span) -> Vec<(usize, ide::inlay_hints::InlayHint)> {
        let shown = self.shown(snapshot).await;
        // The range is in the current text; hints of a shifted analysis are filtered after
        // mapping.
        let hints = ide::inlay_hints::inlay_hints(
            &self.world(),
            &shown.text,
            &shown.analysis,
            shown.shift.is_none().then_some(range),
        );
        hints
            .into_iter()
            .filter_map(|h| {
                let offset = match shown.shift {
                    Some(shift) => shift.offset(h.offset)?,
                    None => h.offset,
                };
                (range.start <= offset && offset <= range.end).then_some((offset, h))
            })
            .collect()
    }

    async fn shown(&self, snapshot: &Snapshot) -> Shown {
        let own = self.analysis(snapshot).await;
        self.state().store.shown(snapshot, own)
    }

    fn diagnostic(&self, lines: &Lines<'_>, diag: &Diagnostic) -> tower_lsp::lsp_types::Diagnostic {
        tower_lsp::lsp_types::Diagnostic {
            range: lines.range(diag.span),
            severity: Some(match diag.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
            }),
            code: Some(NumberOrString::String(diag.code.as_str().to_string())),
            source: Some("posh".to_string()),
            message: diag.message.clone(),
            ..Default::default()
        }
    }

    /// The document's diagnostics, with spans in its own text: for a document out of step with
    /// the editor, only the one that says so.
    async fn document_diagnostics(&self, snapshot: &Snapshot) -> Vec<Diagnostic> {
        if let Some(why) = &snapshot.out_of_step {
            let message = format!(
                "posh-lsp lost an edit of this file ({why}): its hints and diagnostics are withheld until the file is \
                 closed and reopened"
            );
            return vec![Diagnostic::new(posh_core::Code::ScriptOutOfStep, Span::new(0, 0), message)];
        }
        match snapshot.language {
            Language::Annotation => ide::diagnostics::annotation_diagnostics(&snapshot.text),
            Language::Script => {
                let shown = self.shown(snapshot).await;
                let diags = ide::diagnostics::script_diagnostics(&self.world(), &shown.analysis);
                match shown.shift {
                    None => diags,
                    Some(shift) => diags
                        .into_iter()
                        .filter_map(|mut d| {
                            d.span = shift.span(d.span)?;
                            Some(d)
                        })
                        .collect(),
                }
            }
        }
    }

    async fn publish(&self, snapshot: Snapshot) {
        let diags = self.document_diagnostics(&snapshot).await;
        // Published only if no edit came in meanwhile: the next one publishes its own.
        if self.snapshot(&snapshot.uri).is_none_or(|now| now.version != snapshot.version) {
            return;
        }
        let lines = Lines::new(&snapshot.text);
        let diags = diags.iter().map(|d| self.diagnostic(&lines, d)).collect();
        self.client.publish_diagnostics(snapshot.uri, diags, Some(snapshot.version)).await;
    }

    /// Publishes after the debounce, unless the document moved on by then. Runs as its own
    /// task, so the edits that follow are not held up.
    fn publish_later(&self, uri: Url, version: i32) {
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(this.debounce).await;
            if let Some(snapshot) = this.snapshot(&uri).filter(|s| s.version == version) {
                this.publish(snapshot).await;
            }
        });
    }

    /// Publishes the diagnostics of each posh.toml (the one in use and the nested ones), and
    /// clears those of files that have none any more.
    async fn publish_config_diagnostics(&self) {
        let (world, root, fs) = (self.world(), self.state().root.clone(), self.fs.clone());
        let Some(root) = root else { return };
        let configs = tokio::task::spawn_blocking(move || config_files(&fs.budgeted(FS_WORLD_BUDGET), &world, &root))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        let mut published = Vec::new();
        for (path, text, diags) in configs {
            let Ok(uri) = Url::from_file_path(&path) else { continue };
            let lines = Lines::new(&text);
            let diags = diags.iter().map(|d| self.diagnostic(&lines, d)).collect();
            self.client.publish_diagnostics(uri.clone(), diags, None).await;
            published.push(uri);
        }
        let before = std::mem::replace(&mut self.state().config_diagnostics, published.clone());
        for uri in before.into_iter().filter(|uri| !published.contains(uri)) {
            self.client.publish_diagnostics(uri, Vec::new(), None).await;
        }
    }

    /// Whether the annotation files of the workspace's directories (`world::annotation_dirs`,
    /// listed again from the disk) are others than the world holds.
    fn annotation_files_changed(&self) -> bool {
        let (world, root, config_dir) = {
            let state = self.state();
            (state.world.clone(), state.root.clone(), state.user_config_dir.clone())
        };
        let Some(root) = root else { return false };
        let dirs = ide::world::annotation_dirs(&root, config_dir.as_deref());
        let on_disk: std::collections::BTreeSet<String> = dirs
            .iter()
            .filter_map(|dir| std::fs::read_dir(dir).ok().map(|entries| (dir, entries)))
            .flat_map(|(dir, entries)| {
                entries.filter_map(|e| e.ok()).filter_map(move |e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name.ends_with(".posh") && e.file_type().is_ok_and(|t| t.is_file()))
                        .then(|| dir.join(name).display().to_string())
                })
            })
            .collect();
        let known: std::collections::BTreeSet<&String> = world
            .annotation_texts
            .keys()
            .filter(|path| dirs.iter().any(|d| std::path::Path::new(path).parent() == Some(d)))
            .collect();
        on_disk.iter().any(|path| !known.contains(path)) || known.iter().any(|path| !on_disk.contains(*path))
    }

    /// `posh/lostChange`, from `framing`: an edit of `uri` (or of an unknown document) could not
    /// be read. The document is marked out of step (`S005`, nothing else shown) until the editor
    /// sends its whole text or reopens it, and the user is told.
    pub async fn lost_change(&self, params: serde_json::Value) {
        let uri = params.get("uri").and_then(|u| u.as_str()).and_then(|u| Url::parse(u).ok());
        let why = params.get("why").and_then(|w| w.as_str()).unwrap_or("an unreadable message").to_string();
        let marked = self.state().store.lose_step(uri.as_ref(), &why);
        if marked.is_empty() {
            return;
        }
        let names: Vec<String> =
            marked.iter().map(|u| u.path().rsplit('/').next().unwrap_or_default().to_string()).collect();
        self.client
            .show_message(
                MessageType::WARNING,
                format!(
                    "posh-lsp lost an edit of {} ({why}) and is out of step with the editor: close and reopen the file \
                     to resynchronise",
                    names.join(", ")
                ),
            )
            .await;
        for uri in marked {
            if let Some(snapshot) = self.snapshot(&uri) {
                self.publish(snapshot).await;
            }
        }
        let (inlay_refresh, lens_refresh) = {
            let state = self.state();
            (state.inlay_refresh, state.lens_refresh)
        };
        if inlay_refresh {
            let _ = self.client.inlay_hint_refresh().await;
        }
        if lens_refresh {
            let _ = self.client.code_lens_refresh().await;
        }
    }

    /// Reloads posh.toml and the annotation files, then refreshes what depends on them.
    async fn reload_world(&self) {
        self.fs.clear();
        let (root, (config_dir, state_dir), settings, overrides) = {
            let state = self.state();
            let overrides: Vec<(PathBuf, String)> = state
                .store
                .of_language(Language::Annotation)
                .into_iter()
                .filter_map(|s| Some((s.uri.to_file_path().ok()?, s.text.to_string())))
                .collect();
            let dirs = (state.user_config_dir.clone(), state.user_state_dir.clone());
            (state.root.clone(), dirs, state.settings.clone(), overrides)
        };
        let Some(root) = root else {
            return;
        };
        let fs = self.fs.clone();
        let world = tokio::task::spawn_blocking(move || {
            let dirs = UserDirs { config: config_dir.as_deref(), state: state_dir.as_deref() };
            World::load(&fs.budgeted(FS_WORLD_BUDGET), &root, dirs, &overrides, settings)
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        if let Some(error) = &world.config_error {
            self.client.show_message(MessageType::WARNING, format!("posh: {error}")).await;
        }
        for problem in &world.settings.problems {
            self.client.show_message(MessageType::WARNING, format!("posh: {problem}")).await;
        }
        let (scripts, refresh) = {
            let mut state = self.state();
            state.world = Arc::new(world);
            state.store.forget_analyses();
            (state.store.of_language(Language::Script), state.inlay_refresh)
        };
        for snapshot in scripts {
            self.publish(snapshot).await;
        }
        if refresh {
            let _ = self.client.inlay_hint_refresh().await;
        }
        self.publish_config_diagnostics().await;
    }
}

fn legend() -> SemanticTokensLegend {
    let ty = |t: TokenType| match t {
        TokenType::Function => SemanticTokenType::FUNCTION,
        TokenType::Keyword => SemanticTokenType::KEYWORD,
        TokenType::Property => SemanticTokenType::PROPERTY,
        TokenType::EnumMember => SemanticTokenType::ENUM_MEMBER,
        TokenType::String => SemanticTokenType::STRING,
        TokenType::Number => SemanticTokenType::NUMBER,
        TokenType::Comment => SemanticTokenType::COMMENT,
        TokenType::Macro => SemanticTokenType::MACRO,
    };
    SemanticTokensLegend { token_types: TokenType::ALL.iter().map(|&t| ty(t)).collect(), token_modifiers: vec![] }
}

fn markdown(value: String) -> Documentation {
    Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value })
}

#[async_trait]
impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        #[allow(deprecated)]
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .and_then(|f| f.uri.to_file_path().ok())
            .or_else(|| params.root_uri.as_ref().and_then(|u| u.to_file_path().ok()));
        {
            let mut state = self.state();
            if let Some(options) = &params.initialization_options {
                state.settings.update(options);
            }
            let caps = &params.capabilities;
            state.inlay_refresh = caps
                .workspace
                .as_ref()
                .and_then(|w| w.inlay_hint.as_ref())
                .and_then(|i| i.refresh_support)
                .unwrap_or(false);
            let resolvable = caps.text_document.as_ref().and_then(|t| t.inlay_hint.as_ref()?.resolve_support.as_ref());
            state.deferred = resolvable.map(|r| convert::Deferred::from_properties(&r.properties)).unwrap_or_default();
            state.lens_refresh = caps
                .workspace
                .as_ref()
                .and_then(|w| w.code_lens.as_ref())
                .and_then(|l| l.refresh_support)
                .unwrap_or(false);
            let watch = caps.workspace.as_ref().and_then(|w| w.did_change_watched_files.as_ref());
            state.dynamic_watch = watch.and_then(|d| d.dynamic_registration).unwrap_or(false);
            state.relative_watch = watch.and_then(|d| d.relative_pattern_support).unwrap_or(false);
            state.root = root.or_else(|| std::env::current_dir().ok());
        }
        self.reload_world().await;
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "posh-lsp".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                    ..Default::default()
                })),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                inlay_hint_provider: Some(OneOf::Right(InlayHintServerCapabilities::Options(InlayHintOptions {
                    resolve_provider: Some(true),
                    ..Default::default()
                }))),
                code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
                completion_provider: Some(CompletionOptions {
                    trigger_characters: Some(vec![":".into(), "[".into(), ",".into(), "-".into()]),
                    ..Default::default()
                }),
                document_formatting_provider: Some(OneOf::Left(true)),
                document_symbol_provider: Some(OneOf::Left(true)),
                code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
                    code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
                    ..Default::default()
                })),
                semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
                    SemanticTokensOptions {
                        legend: legend(),
                        full: Some(SemanticTokensFullOptions::Bool(true)),
                        ..Default::default()
                    },
                )),
                ..Default::default()
            },
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // What `initialize` published was not sent yet: the protocol has it wait till now.
        self.publish_config_diagnostics().await;
        let (dynamic, relative, state_dir) = {
            let state = self.state();
            (state.dynamic_watch, state.relative_watch, state.user_state_dir.clone())
        };
        if !dynamic {
            return;
        }
        // The annotation directories too: a client that watches the directories it found when
        // it registered (eglot) sees one made later through its parent.
        let mut watchers: Vec<FileSystemWatcher> = ["**/posh.toml", "**/*.posh", "**/annotations", "**/.posh"]
            .into_iter()
            .map(|glob| FileSystemWatcher { glob_pattern: GlobPattern::String(glob.to_string()), kind: None })
            .collect();
        // The ratios posh-exec measures (outside the workspace: only as a relative pattern), so
        // that hints predict with a run's figures as soon as it ends.
        let ratios_dir = state_dir.and_then(|dir| Url::from_directory_path(dir.join("posh")).ok());
        if let Some(base) = ratios_dir.filter(|_| relative) {
            let pattern = RelativePattern {
                base_uri: OneOf::Right(base),
                pattern: posh_core::planner::measured::FILE_NAME.to_string(),
            };
            watchers.push(FileSystemWatcher { glob_pattern: GlobPattern::Relative(pattern), kind: None });
        }
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        let registration = Registration {
            id: "posh-watch".to_string(),
            method: "workspace/didChangeWatchedFiles".to_string(),
            register_options: serde_json::to_value(options).ok(),
        };
        let _ = self.client.register_capability(vec![registration]).await;
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let doc = params.text_document;
        let Some(language) = ide::language_of(&doc.language_id, doc.uri.path(), &doc.text) else {
            return;
        };
        let (uri, version) = (doc.uri.clone(), doc.version);
        self.state().store.open(doc.uri, doc.version, doc.text, language);
        self.publish_later(uri, version);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let (uri, version) = (params.text_document.uri, params.text_document.version);
        if self.state().store.change(&uri, version, &params.content_changes) {
            self.publish_later(uri, version);
        }
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        // A saved annotation file changes what every script's commands fit; so does one that
        // appeared where the editor may not watch (a directory made after it registered its
        // watchers), which any save has the annotation directories listed again for.
        if self.snapshot(&params.text_document.uri).is_some_and(|s| s.language == Language::Annotation)
            || self.annotation_files_changed()
        {
            self.reload_world().await;
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        // Freed out of the lock, then memory given back: no answer waits for a close.
        let closed = self.state().store.close(&params.text_document.uri);
        drop(closed);
        crate::memory::give_back();
        self.client.publish_diagnostics(params.text_document.uri, Vec::new(), None).await;
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.state().settings.update(&params.settings);
        self.reload_world().await;
    }

    async fn did_change_watched_files(&self, _: DidChangeWatchedFilesParams) {
        self.reload_world().await;
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let Some(snapshot) = self.snapshot(&params.text_document.uri).filter(|s| s.language == Language::Script) else {
            return Ok(None);
        };
        if snapshot.out_of_step.is_some() {
            return Ok(Some(Vec::new()));
        }
        let lines = Lines::new(&snapshot.text);
        let range = lines.span(params.range);
        let deferred = self.state().deferred;
        let hints = self.script_hints(&snapshot, range).await;
        let hints = hints.iter().map(|(offset, h)| {
            let mut hint = convert::inlay_hint(h, lines.position(*offset), deferred);
            if deferred.any() {
                hint.data = Some(serde_json::json!([snapshot.id, snapshot.version, offset]));
            }
            hint
        });
        Ok(Some(hints.collect()))
    }

    async fn inlay_hint_resolve(&self, hint: InlayHint) -> Result<InlayHint> {
        let Some((id, version, offset)) =
            hint.data.clone().and_then(|d| serde_json::from_value::<(u64, i32, usize)>(d).ok())
        else {
            return Ok(hint);
        };
        // A hint of an older version is left as it is: the client asks for new hints anyway.
        let snapshot = self.state().store.snapshot_by_id(id);
        let Some(snapshot) = snapshot.filter(|s| s.version == version) else {
            return Ok(hint);
        };
        let label = convert::label_text(&hint.label);
        let hints = self.script_hints(&snapshot, posh_core::Span::new(offset, offset)).await;
        Ok(match hints.into_iter().find(|(at, h)| *at == offset && h.label() == label) {
            Some((_, found)) => {
                InlayHint { data: hint.data, ..convert::inlay_hint(&found, hint.position, Default::default()) }
            }
            None => hint,
        })
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let position = params.text_document_position_params;
        let Some(snapshot) = self.snapshot(&position.text_document.uri).filter(|s| s.out_of_step.is_none()) else {
            return Ok(None);
        };
        let lines = Lines::new(&snapshot.text);
        let offset = lines.offset(position.position);
        let hover = match snapshot.language {
            Language::Annotation => ide::hover::annotation_hover(&snapshot.text, offset),
            Language::Script => {
                let analysis = self.analysis(&snapshot).await;
                ide::hover::script_hover(&self.world(), &analysis, offset)
            }
        };
        Ok(hover.map(|h| Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: h.markdown }),
            range: Some(lines.range(h.span)),
        }))
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        let Some(snapshot) = self.snapshot(&params.text_document.uri).filter(|s| s.language == Language::Script) else {
            return Ok(None);
        };
        if snapshot.out_of_step.is_some() {
            return Ok(Some(Vec::new()));
        }
        let shown = self.shown(&snapshot).await;
        let lines = Lines::new(&snapshot.text);
        // While an edit leaves the text unparsed (a `$(`, an `if` or a `{` open: bash rejects
        // it, so nothing would be handed over), the summary of the last text that parsed stays
        // atop the script, so the lines below it do not jump.
        let summary = if shown.analysis.script.errors.is_empty() {
            ide::code_lens::summary_lenses(&shown.analysis)
        } else {
            self.state().store.last_summary(&snapshot.uri)
        };
        let lenses = summary
            .into_iter()
            .map(|lens| CodeLens {
                range: lines.range(lens.span),
                command: Some(Command { title: lens.title, command: String::new(), arguments: None }),
                data: None,
            })
            .chain(ide::code_lens::body_lenses(&shown.analysis).into_iter().filter_map(|lens| {
                let span = match shown.shift {
                    Some(shift) => shift.span(lens.span)?,
                    None => lens.span,
                };
                Some(CodeLens {
                    range: lines.range(span),
                    command: Some(Command { title: lens.title, command: String::new(), arguments: None }),
                    data: None,
                })
            }))
            .collect();
        Ok(Some(lenses))
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let position = params.text_document_position;
        let Some(snapshot) = self.snapshot(&position.text_document.uri).filter(|s| s.language == Language::Annotation)
        else {
            return Ok(None);
        };
        let lines = Lines::new(&snapshot.text);
        let offset = lines.offset(position.position);
        let items = ide::completion::completions(&snapshot.text, offset)
            .into_iter()
            .map(|c| {
                use posh_core::annotation::keywords::KeywordKind as K;
                let kind = match c.kind {
                    K::Section => CompletionItemKind::KEYWORD,
                    K::CommandOption | K::ArgField => CompletionItemKind::PROPERTY,
                    K::Type | K::Size | K::Merge => CompletionItemKind::ENUM_MEMBER,
                };
                CompletionItem {
                    label: c.label,
                    kind: Some(kind),
                    documentation: Some(markdown(c.doc)),
                    text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(lines.range(c.replace), c.insert))),
                    ..Default::default()
                }
            })
            .collect();
        Ok(Some(CompletionResponse::Array(items)))
    }

    async fn formatting(&self, params: DocumentFormattingParams) -> Result<Option<Vec<TextEdit>>> {
        let Some(snapshot) = self.snapshot(&params.text_document.uri).filter(|s| s.language == Language::Annotation)
        else {
            return Ok(None);
        };
        let lines = Lines::new(&snapshot.text);
        Ok(Some(
            ide::formatting::format(&snapshot.text)
                .map(|edit| TextEdit::new(lines.range(edit.span), edit.new_text))
                .into_iter()
                .collect(),
        ))
    }

    async fn document_symbol(&self, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
        let Some(snapshot) = self.snapshot(&params.text_document.uri).filter(|s| s.language == Language::Annotation)
        else {
            return Ok(None);
        };
        let lines = Lines::new(&snapshot.text);
        #[allow(deprecated)]
        let symbols = ide::symbols::symbols(&snapshot.text)
            .into_iter()
            .map(|s| DocumentSymbol {
                name: s.name,
                detail: (!s.detail.is_empty()).then_some(s.detail),
                kind: SymbolKind::FUNCTION,
                tags: None,
                deprecated: None,
                range: lines.range(s.span),
                selection_range: lines.range(s.name_span),
                children: None,
            })
            .collect();
        Ok(Some(DocumentSymbolResponse::Nested(symbols)))
    }

    async fn semantic_tokens_full(&self, params: SemanticTokensParams) -> Result<Option<SemanticTokensResult>> {
        let Some(snapshot) = self.snapshot(&params.text_document.uri).filter(|s| s.language == Language::Annotation)
        else {
            return Ok(None);
        };
        let lines = Lines::new(&snapshot.text);
        let mut data = Vec::new();
        let (mut line, mut start) = (0, 0);
        for token in ide::semantic_tokens::semantic_tokens(&snapshot.text) {
            let range = lines.range(token.span);
            if range.start.line != range.end.line {
                continue;
            }
            let delta_line = range.start.line - line;
            let delta_start = if delta_line == 0 { range.start.character - start } else { range.start.character };
            data.push(SemanticToken {
                delta_line,
                delta_start,
                length: range.end.character - range.start.character,
                token_type: TokenType::ALL.iter().position(|&t| t == token.ty).unwrap_or(0) as u32,
                token_modifiers_bitset: 0,
            });
            (line, start) = (range.start.line, range.start.character);
        }
        Ok(Some(SemanticTokensResult::Tokens(SemanticTokens { result_id: None, data })))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let Some(snapshot) = self.snapshot(&params.text_document.uri) else {
            return Ok(None);
        };
        let lines = Lines::new(&snapshot.text);
        let diags = self.document_diagnostics(&snapshot).await;
        let actions = ide::code_actions::quick_fixes(&diags, lines.span(params.range))
            .into_iter()
            .map(|fix| {
                let edits = fix.edits.iter().map(|e| TextEdit::new(lines.range(e.span), e.new_text.clone())).collect();
                CodeActionOrCommand::CodeAction(CodeAction {
                    title: fix.title,
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![self.diagnostic(&lines, &fix.diagnostic)]),
                    edit: Some(WorkspaceEdit {
                        changes: Some([(snapshot.uri.clone(), edits)].into_iter().collect()),
                        ..Default::default()
                    }),
                    is_preferred: Some(true),
                    ..Default::default()
                })
            })
            .collect();
        Ok(Some(actions))
    }
}

/// The posh.toml files to report on, with their text and diagnostics: the one the workspace
/// plans with, and the ones nested below its root.
fn config_files(
    fs: &dyn posh_core::fs::FileSystem,
    world: &World,
    root: &std::path::Path,
) -> Vec<(PathBuf, String, Vec<Diagnostic>)> {
    let mounts: Vec<PathBuf> = world.config.mounts.iter().map(|m| m.path.clone()).collect();
    let nested = ide::config::nested_configs(fs, root, &mounts);
    world
        .config_path
        .iter()
        .chain(nested.iter().filter(|p| Some(*p) != world.config_path.as_ref()))
        .filter_map(|path| {
            let text = fs.read_to_string(path)?;
            let diags = ide::config::config_diagnostics(path, &text, world.config_path.as_deref());
            Some((path.clone(), text, diags))
        })
        .collect()
}
