//! The tool table: registration records ([`ToolEntry`]), the checks made at
//! registration, and everything a call needs computed once, up front.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::scope::{segment_error, valid_segment, ScopeNode};
use crate::sensitive::{self, KeyTree, Matcher, NameMode, SensitivePath};
use crate::toolmark::Config;
use crate::tools::spec::{
    ChangesFn, DecodeFn, Handler, PrepareFn, RunFn, SensitiveFn, SensitiveSource, StaleCheck,
};
use crate::tools::summary::Template;
use crate::{Caller, CallerSet, Effect, Issue, RegisterError, ToolAnnotations, ToolInfo, ToolSpec};

/// What is sensitive in a tool's input.
pub(crate) enum EntrySensitive {
    /// Paths fixed at registration.
    Static(Matcher),
    /// Paths read from a fallible function at request and at approval time (boxed:
    /// rare, and every entry pays for the largest variant).
    Dynamic(Box<DynamicPaths>),
}

/// A `sensitive_fn` and what resolving its paths needs.
pub(crate) struct DynamicPaths {
    paths: SensitiveFn,
    schema: Arc<Value>,
    /// The property names the schema declares.
    names: Vec<Box<str>>,
}

/// A registered tool: everything a call or a manifest read needs, computed once.
///
/// Kept small (one per tool, for the life of the registration): the name is held
/// once (the manifest's `ToolInfo` is built from these fields when a manifest is
/// read), and what few tools have (keys, a summary, a `sensitive_fn`, a form's
/// version) is boxed.
pub(crate) struct ToolEntry {
    /// This registration's number, unique in the process: a confirmation runs only
    /// on the registration it was asked for, never on a tool registered again
    /// under the same name.
    pub(crate) serial: u64,
    /// The full name: the registry's key and the manifest's name.
    pub(crate) name: Arc<str>,
    /// The toolmark it is registered in (weak: the registry holds the entry).
    pub(crate) inner: std::sync::Weak<crate::toolmark::Inner>,
    pub(crate) scope: Arc<ScopeNode>,
    pub(crate) effect: Effect,
    pub(crate) callers: CallerSet,
    pub(crate) timeout: Option<Duration>,
    /// Whether the run reads its context (see `ToolSpec::uses_context`).
    pub(crate) uses_context: bool,
    /// MCP's `openWorldHint` (the spec's, or the effect's default).
    pub(crate) open_world: bool,
    /// MCP's `idempotentHint` (the spec's, or the effect's default).
    pub(crate) idempotent: bool,
    /// The manifest's description.
    description: Box<str>,
    /// What few tools have (a title, a summary template, a changes fn): one
    /// pointer, absent when all three are.
    rare: Option<Box<EntryRare>>,
    /// The input schema as the manifest shows it (sensitive paths `writeOnly`).
    pub(crate) input_schema: Arc<Value>,
    pub(crate) output_schema: Option<Arc<Value>>,
    pub(crate) decode: DecodeFn,
    /// How unknown (ignored) properties are found.
    pub(crate) unknown: crate::call::input::UnknownCheck,
    /// For a tool with sensitive paths: the input schema compiled to check that
    /// every key of an input is one it lists (whatever `allow_unknown_fields` says).
    pub(crate) keys: Option<Box<KeyTree>>,
    pub(crate) run: RunFn,
    /// Decode and build the run in one step, when the tool can.
    pub(crate) prepare: Option<PrepareFn>,
    pub(crate) sensitive: EntrySensitive,
    pub(crate) stale_check: Option<Box<StaleCheck>>,
    /// The tool as MCP lists it, built on its first listing.
    #[cfg(feature = "mcp")]
    pub(crate) mcp: std::sync::OnceLock<Arc<crate::mcp::list::McpTool>>,
}

/// The fields of a [`ToolEntry`] most tools leave empty.
struct EntryRare {
    /// The manifest's title.
    title: Option<Box<str>>,
    summary: Option<Box<Template>>,
    changes_fn: Option<Box<ChangesFn>>,
    /// The sensitive values of the state the tool works on (forms, wizards).
    state_secrets: Option<crate::sensitive::StateSecretsFn>,
}

/// The next registration serial.
fn next_serial() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl ToolEntry {
    /// The manifest's title.
    pub(crate) fn title(&self) -> Option<&str> {
        self.rare.as_ref()?.title.as_deref()
    }

    /// The sensitive values of the state the tool works on (forms, wizards), when
    /// it has one.
    pub(crate) fn state_secrets(&self) -> Option<&crate::sensitive::StateSecretsFn> {
        self.rare.as_ref()?.state_secrets.as_ref()
    }

    /// The manifest's description.
    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    /// The sensitive-path matcher for this moment (dynamic paths are read now; a
    /// failure makes the whole input sensitive).
    pub(crate) fn matcher(&self) -> Matcher {
        match &self.sensitive {
            EntrySensitive::Static(m) => m.clone(),
            // A panicking `sensitive_fn` counts as a failing one.
            EntrySensitive::Dynamic(d) => read_paths(&d.paths)
                .ok()
                .and_then(|list| sensitive::resolve_all(&list, &d.schema, NameMode::Json).ok())
                .map_or_else(Matcher::unreadable, |p| {
                    Matcher::with_names(p, d.names.clone())
                }),
        }
    }

    /// Whether the tool may have sensitive values (static paths, or a
    /// `sensitive_fn`): one branch, no allocation.
    pub(crate) fn has_sensitive(&self) -> bool {
        match &self.sensitive {
            EntrySensitive::Static(m) => !m.is_empty() || self.state_secrets().is_some(),
            EntrySensitive::Dynamic { .. } => true,
        }
    }

    /// Whether calls from non-human callers need confirmation.
    pub(crate) fn guarded(&self) -> bool {
        self.effect.needs_confirmation()
    }

    /// The changes a confirmation of `input` shows, redacted.
    pub(crate) fn changes_for(&self, input: &Value, matcher: &Matcher) -> Vec<crate::Change> {
        match self.rare.as_ref().and_then(|r| r.changes_fn.as_ref()) {
            Some(f) => matcher.redact_changes(&f(input)),
            None => Vec::new(),
        }
    }

    /// The confirmation summary for `input`.
    pub(crate) fn summary_for(&self, input: &Value, matcher: &Matcher) -> String {
        match self.rare.as_ref().and_then(|r| r.summary.as_ref()) {
            Some(t) => t.render(input, matcher),
            None => crate::tools::summary::one_line(self.title().unwrap_or(self.description())),
        }
    }

    /// The manifest entry, as `caller` sees it.
    pub(crate) fn info(&self, caller: Caller) -> ToolInfo {
        ToolInfo {
            name: self.name.to_string(),
            title: self.title().map(str::to_owned),
            description: self.description().to_owned(),
            input_schema: Arc::clone(&self.input_schema),
            output_schema: self.output_schema.clone(),
            effect: self.effect,
            annotations: ToolAnnotations {
                read_only_hint: self.effect == Effect::Read,
                destructive_hint: self.effect == Effect::Destructive,
                open_world_hint: self.open_world,
                idempotent_hint: self.idempotent,
            },
            needs_confirmation: self.guarded() && caller != Caller::Human,
        }
    }
}

/// The tool table: the entries by full name. Each slot is one pointer (the entry
/// holds its name, read as the key), not a name and an entry.
#[derive(Default)]
pub(crate) struct Registry(HashSet<ByName, rustc_hash::FxBuildHasher>);

/// An entry in the table, hashed and compared by its full name.
struct ByName(Arc<ToolEntry>);

impl Borrow<str> for ByName {
    fn borrow(&self) -> &str {
        &self.0.name
    }
}

impl Hash for ByName {
    /// As `str` hashes, so a lookup by `&str` finds it.
    fn hash<H: Hasher>(&self, state: &mut H) {
        (*self.0.name).hash(state);
    }
}

impl PartialEq for ByName {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for ByName {}

impl Registry {
    /// The entry named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.0.get(name).map(|e| &e.0)
    }

    /// Whether a tool is named `name`.
    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// Add `entry` under its name (replacing and returning one of that name).
    pub(crate) fn insert(&mut self, entry: Arc<ToolEntry>) -> Option<Arc<ToolEntry>> {
        self.0.replace(ByName(entry)).map(|e| e.0)
    }

    /// Take out every entry `remove` picks; their names.
    pub(crate) fn remove_where(
        &mut self,
        mut remove: impl FnMut(&ToolEntry) -> bool,
    ) -> Vec<Arc<str>> {
        let mut removed = Vec::new();
        self.0.retain(|e| {
            let keep = !remove(&e.0);
            if !keep {
                removed.push(Arc::clone(&e.0.name));
            }
            keep
        });
        removed
    }

    /// Every entry, in no order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<ToolEntry>> {
        self.0.iter().map(|e| &e.0)
    }

    /// The number of tools.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Why a `sensitive_fn` gave no list.
enum PathsError {
    Failed,
    Panicked(String),
}

/// Read a `sensitive_fn`, catching a panic (the runtime must stay usable).
fn read_paths(paths: &SensitiveFn) -> Result<Vec<String>, PathsError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| paths())) {
        Ok(r) => r.map_err(|_| PathsError::Failed),
        Err(payload) => Err(PathsError::Panicked(
            payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic payload".to_owned()),
        )),
    }
}

/// A summary placeholder written with Rust field names (`{card_number}`, `{cards.0}`)
/// in the schema's JSON names: the segments before the first index are mapped the
/// way sensitive paths are.
fn rust_field_to_json(field: &str, schema: &Value) -> Result<String, String> {
    let segs: Vec<&str> = field.split('.').collect();
    let named = segs
        .iter()
        .position(|s| s.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or(segs.len());
    if named == 0 {
        return Ok(field.to_owned());
    }
    let prefix = segs[..named].join(".");
    let path = SensitivePath::parse(&prefix).map_err(|e| e.to_string())?;
    let resolved = sensitive::resolve_path(&path, schema, NameMode::Rust)
        .map_err(|e| format!("placeholder `{{{field}}}`: {e}"))?;
    let mut out = resolved.to_string();
    for rest in &segs[named..] {
        out.push('.');
        out.push_str(rest);
    }
    Ok(out)
}

/// Check `spec` and build its entry (everything but the duplicate and disposal
/// checks, which happen under the registry lock).
pub(crate) fn prepare(
    spec: ToolSpec,
    node: &Arc<ScopeNode>,
    config: &Config,
    inner: &std::sync::Weak<crate::toolmark::Inner>,
) -> Result<ToolEntry, RegisterError> {
    if let Some(reason) = &node.invalid_name {
        return Err(RegisterError::InvalidName {
            name: node.path.clone(),
            reason: reason.clone(),
        });
    }
    if !valid_segment(&spec.name) {
        return Err(RegisterError::InvalidName {
            name: spec.name.clone(),
            reason: segment_error(&spec.name),
        });
    }
    let full = node.full_name(&spec.name);
    let Some(handler) = spec.handler else {
        return Err(RegisterError::InvalidSpec {
            tool: full,
            reason: "it has no handler; add `.handler(..)`".to_owned(),
        });
    };
    let raw_schema = spec
        .input_schema
        .unwrap_or_else(|| Arc::new(json!({"type": "object"})));

    // Sensitive paths: parsed, mapped onto the schema's JSON names, marked writeOnly.
    let invalid_path = |(path, reason): (String, String)| RegisterError::InvalidSensitivePath {
        tool: full.clone(),
        path,
        reason,
    };
    let (sensitive, marked_paths) = match spec.sensitive {
        SensitiveSource::Static { paths, rust_names } => {
            let default = if rust_names {
                NameMode::Rust
            } else {
                NameMode::Json
            };
            let resolved =
                sensitive::resolve_all(&paths, &raw_schema, default).map_err(invalid_path)?;
            // Without paths the declared names are never read: no schema walk.
            let matcher = if resolved.is_empty() {
                Matcher::none()
            } else {
                Matcher::with_names(resolved.clone(), sensitive::declared_names(&raw_schema))
            };
            (EntrySensitive::Static(matcher), resolved)
        }
        SensitiveSource::Dynamic(paths) => {
            // Read once now to check and mark them; a failure here is tolerated
            // (the whole input then counts as sensitive at call time).
            let marked = match read_paths(&paths) {
                Ok(list) => sensitive::resolve_all(&list, &raw_schema, NameMode::Json)
                    .map_err(invalid_path)?,
                Err(PathsError::Panicked(msg)) => {
                    return Err(RegisterError::InvalidSpec {
                        tool: full,
                        reason: format!("its `sensitive_fn` panicked: {msg}"),
                    })
                }
                Err(PathsError::Failed) => Vec::new(),
            };
            (
                EntrySensitive::Dynamic(Box::new(DynamicPaths {
                    paths,
                    schema: Arc::clone(&raw_schema),
                    names: sensitive::declared_names(&raw_schema),
                })),
                marked,
            )
        }
    };
    // Keys are checked for every tool whose input has secrets: a key the schema
    // does not list could be read (by an alias, say) where redaction cannot see it.
    let has_secrets = match &sensitive {
        EntrySensitive::Static(m) => !m.is_empty(),
        EntrySensitive::Dynamic { .. } => true,
    };
    let keys = if has_secrets {
        Some(Box::new(KeyTree::compile(&raw_schema).map_err(
            |reason| RegisterError::InvalidSpec {
                tool: full.clone(),
                reason,
            },
        )?))
    } else {
        None
    };
    let schema = if marked_paths.is_empty() {
        Arc::clone(&raw_schema)
    } else {
        let mut s = (*raw_schema).clone();
        sensitive::mark_write_only(&mut s, &marked_paths);
        Arc::new(s)
    };
    // MCP `x-mcp-header` parameters: well formed, and never a sensitive one.
    let (matcher, dynamic) = match &sensitive {
        EntrySensitive::Static(m) => (m.clone(), false),
        EntrySensitive::Dynamic(_) => (Matcher::new(marked_paths.clone()), true),
    };
    super::param_headers::check(&schema, &matcher, dynamic).map_err(|reason| {
        RegisterError::InvalidSpec {
            tool: full.clone(),
            reason,
        }
    })?;

    for need in &spec.states {
        if !config.states.contains(need.type_id) {
            return Err(RegisterError::MissingState {
                tool: full,
                type_name: need.type_name,
            });
        }
    }

    let summary = match &spec.summary {
        Some(t) => {
            let invalid = |reason: String| RegisterError::InvalidSpec {
                tool: full.clone(),
                reason: format!("summary template: {reason}"),
            };
            let template = Template::parse(t).map_err(invalid)?;
            let template = if spec.rust_names {
                template
                    .map_fields(|field| rust_field_to_json(field, &raw_schema))
                    .map_err(invalid)?
            } else {
                template
            };
            Some(Box::new(template))
        }
        None => None,
    };

    if spec.effect.needs_confirmation() {
        let non_human: Vec<Caller> = spec
            .callers
            .iter()
            .filter(|c| *c != Caller::Human)
            .collect();
        // A caller whose client confirms (an MCP server asking by elicitation)
        // has a path too; which of its clients do is decided per call.
        let has_path = |c: &Caller| {
            !config.lacks_approver(&full, node, spec.effect, *c)
                || config.client_confirms.contains(*c)
        };
        if !non_human.is_empty() && !non_human.iter().any(has_path) {
            return Err(RegisterError::MissingConfirmHandler {
                tool: full,
                callers: non_human,
            });
        }
    }

    let (decode, run, prepare): (DecodeFn, RunFn, Option<PrepareFn>) = match handler {
        Handler::Typed {
            decode,
            run,
            prepare,
        } => (decode, run, prepare),
        Handler::Dynamic(run) => {
            let validator =
                jsonschema::validator_for(&raw_schema).map_err(|e| RegisterError::InvalidSpec {
                    tool: full.clone(),
                    reason: format!("its input schema is not a valid JSON Schema: {e}"),
                })?;
            let decode: DecodeFn = Arc::new(move |input: &Value, _allow_unknown: bool| {
                // A valid input (the common case) is only checked: the error
                // iterator (boxed) is built for an invalid one, to list its issues.
                if validator.is_valid(input) {
                    // Validated: the run gets its copy when it starts.
                    return Ok(crate::tools::spec::InputItself::decoded());
                }
                let mut issues: Vec<Issue> = Vec::new();
                for e in validator.iter_errors(input) {
                    let path = e
                        .instance_path()
                        .iter()
                        .map(|seg| match seg {
                            jsonschema::paths::LocationSegment::Property(p) => p.to_string(),
                            jsonschema::paths::LocationSegment::Index(i) => i.to_string(),
                        })
                        .collect::<Vec<String>>()
                        .join(".");
                    match e.kind() {
                        // One issue per key, like a typed tool's unknown fields (the
                        // validator's own message lists every key in one line).
                        jsonschema::error::ValidationErrorKind::AdditionalProperties {
                            unexpected,
                        } => issues.extend(unexpected.iter().map(|key| {
                            let at = if path.is_empty() {
                                key.clone()
                            } else {
                                format!("{path}.{key}")
                            };
                            Issue::new(at, "unknown field")
                        })),
                        // `masked` never quotes the instance value.
                        _ => issues.push(Issue::new(path, e.masked().to_string())),
                    }
                }
                if issues.is_empty() {
                    Ok(crate::tools::spec::InputItself::decoded())
                } else {
                    Err(issues)
                }
            });
            (decode, run, None)
        }
    };

    let changes_fn = spec.changes_fn.map(Box::new);
    let state_secrets = spec.state_secrets;
    let rare = (spec.title.is_some()
        || summary.is_some()
        || changes_fn.is_some()
        || state_secrets.is_some())
    .then(|| {
        Box::new(EntryRare {
            title: spec.title.map(String::into_boxed_str),
            summary,
            changes_fn,
            state_secrets,
        })
    });
    Ok(ToolEntry {
        serial: next_serial(),
        name: Arc::from(full),
        description: spec.description.into_boxed_str(),
        rare,
        input_schema: schema,
        output_schema: spec.output_schema,
        inner: inner.clone(),
        scope: Arc::clone(node),
        effect: spec.effect,
        callers: spec.callers,
        timeout: spec.timeout,
        uses_context: spec.uses_context,
        open_world: spec.open_world.unwrap_or(spec.effect.open_world()),
        idempotent: spec.idempotent.unwrap_or(spec.effect.idempotent()),
        decode,
        unknown: crate::call::input::UnknownCheck::for_shared(&raw_schema),
        keys,
        run,
        prepare,
        sensitive,
        stale_check: spec.stale_check.map(Box::new),
        #[cfg(feature = "mcp")]
        mcp: std::sync::OnceLock::new(),
    })
}
