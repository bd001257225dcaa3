//! Scopes: groups of tools that share a name prefix, visibility, a queue and a
//! lifetime.
//!
//! - `tm.scope(name)` creates (or returns) a root-level scope; nesting is only through
//!   [`Scope::scope`].
//! - A scope's path prefixes the names of the tools registered into it:
//!   `challenges` → `create` → tool `fill` is `challenges.create.fill`. A
//!   [transparent](ScopeOptions::transparent) scope adds no segment.
//! - `when: false` hides a scope's tools, and its descendants', from the manifest and
//!   from calls (`unknown_tool`). A scope that starts hidden is declared on the
//!   builder, where the app is configured:
//!   [`ToolmarkBuilder::scope_at`](crate::ToolmarkBuilder::scope_at)`("billing",
//!   ScopeOptions::hidden())`; the options apply whenever that scope is created
//!   (by `#[tool(scope = "billing")]`, [`Toolmark::scope_at`](crate::Toolmark::scope_at),
//!   [`Scope::scope`], and again after a disposal).
//! - A tool shows or hides other scopes through its context:
//!   [`ToolContext::scope_at`](crate::ToolContext::scope_at)`("billing")`.
//! - [`Scope::dispose`] unregisters the tools of the scope and its descendants and
//!   drops their pending confirmations; registering into a disposed scope is
//!   `scope_disposed`. A [`ScopeGuard`] disposes on drop, like a component that
//!   unmounts.
//! - Each scope (transparent ones too) has its own queue: calls run one at a time
//!   in arrival order; separate scopes run in parallel. Unscoped tools share the
//!   root queue. On a multi-thread runtime, the call first in line waits for a
//!   run that is busy on another thread by spinning briefly (a few microseconds,
//!   its place in line kept) before it parks, as a short run ends sooner than a
//!   wake through the scheduler; it parks at once when the run is awaiting
//!   something.
//!
//! # Shared across instances
//!
//! A scope's `when` flag lives in each [`Toolmark`](crate::Toolmark). When the app
//! runs as several instances (behind a load balancer, on one `RedisStore`), a scope
//! shown on one of them should be shown on all, or a client's next `tools/list`
//! depends on which instance answers it. Declare such a scope on the builder with
//! [`ToolmarkBuilder::share_scope`](crate::ToolmarkBuilder::share_scope): its
//! `when` flag then goes through the app's
//! [`confirm_store`](crate::ToolmarkBuilder::confirm_store) (a
//! [`MemoryStore`](crate::store::MemoryStore) for toolmarks of one process, a
//! `RedisStore` across processes).
//!
//! ```
//! use serde_json::json;
//! use toolmark::store::MemoryStore;
//! use toolmark::{Caller, ScopeOptions, ToolError, ToolSpec, Toolmark};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let store = MemoryStore::new(); // a RedisStore across processes
//! let instance = || {
//!     let tm = Toolmark::builder()
//!         .confirm_store(store.clone())
//!         .seal_key([7; 32]) // the same on every instance
//!         .scope_at("admin", ScopeOptions::hidden())
//!         .share_scope("admin")
//!         .build()
//!         .unwrap();
//!     tm.scope_at("admin")
//!         .register(
//!             ToolSpec::new("stats", "Usage statistics")
//!                 .handler(|_ctx, _input| async { Ok::<_, ToolError>(json!(3)) }),
//!         )
//!         .unwrap();
//!     tm
//! };
//! let (a, b) = (instance(), instance());
//!
//! a.scope_at("admin").set_when(true); // shown here at once
//! a.sync_scopes().await.unwrap(); // sent (this also happens on its own)
//! b.sync_scopes().await.unwrap(); // read (or heard on the store's bus)
//! assert!(b.manifest(Caller::Mcp).iter().any(|t| t.name == "admin.stats"));
//!
//! // An instance that starts later starts with the current state.
//! let c = instance();
//! c.sync_scopes().await.unwrap();
//! assert!(c.scope_at("admin").when());
//! # }
//! ```
//!
//! - **Every instance agrees on the newest change.** Each change is numbered by
//!   the store (one counter for all instances) and the highest number wins on
//!   every instance, whatever order the changes arrive in. The instance that
//!   changed the flag shows it at once; the others apply it when the store's bus
//!   brings it (at once on Redis pub/sub) and, for anything the bus missed, when
//!   they read the store again (every two seconds, and on
//!   [`Toolmark::sync_scopes`](crate::Toolmark::sync_scopes)). Applying a change
//!   is a `set_when` there: the manifest version moves, [`Event::ManifestChanged`]
//!   is emitted, and MCP clients get `notifications/tools/list_changed` (2025-11-25
//!   sessions, and 2026-07-28 clients listening with `subscriptions/listen`).
//! - **An instance that starts late** reads the current states when it starts
//!   (await [`Toolmark::sync_scopes`](crate::Toolmark::sync_scopes) before serving
//!   so its first list already agrees); a shared scope created later (by a
//!   registration, [`Toolmark::scope_at`](crate::Toolmark::scope_at), or again
//!   after a disposal) starts with the newest state known, not its declared one.
//! - **Sealed like everything in the store.** Each state (path, number, `when`)
//!   is sealed whole under the app's seal key and bound to its path. Someone who
//!   can write to the store but lacks the key cannot forge a state, move one onto
//!   another scope, change its number, or bring an older one back on a running
//!   instance (a replayed or reordered message changes nothing: its number is not
//!   above the one the instance knows). They can delete states or keep changes
//!   from the other instances (as with any write access to the store); a running
//!   instance puts the newest state it knows back into a store that lost it. An
//!   instance that starts while the store holds an older state someone put back
//!   shows that one until a running instance puts the newest back (two seconds at
//!   most while one runs).
//! - **When the store cannot be reached**, each instance keeps its last known
//!   states, a change made on one of them shows there only, and
//!   [`Event::ScopeSyncFailed`] is emitted (for each change not sent, and once
//!   per outage for reading). Once the store answers, the instance sends its
//!   change (unless another instance's newer change reached the store first, which
//!   then wins) and reads the others'. Nothing panics and no call waits for the
//!   store.
//! - **Disposal stays local.** [`Scope::dispose`] (and a [`ScopeGuard`]) remove
//!   the scope's tools on this instance only: which tools an instance registers is
//!   its own code's business. A scope disposed and created again starts with the
//!   shared state.
//! - Only the `when` flag of the declared path is shared: a descendant's own flag
//!   stays local unless it is declared too (a hidden ancestor hides it anyway).
//!
//! [`Event::ManifestChanged`]: crate::Event::ManifestChanged
//! [`Event::ScopeSyncFailed`]: crate::Event::ScopeSyncFailed

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio_util::sync::CancellationToken;

use crate::sync::lock;
use crate::toolmark::Inner;
use crate::{RegisterError, ToolSpec};

/// Options of a new scope. `..Default::default()` gives `when: true`,
/// `transparent: false`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeOptions {
    /// Whether the scope's tools are visible and callable (default `true`).
    pub when: bool,
    /// Group tools for `when` and disposal without adding a name segment
    /// (default `false`).
    pub transparent: bool,
}

impl Default for ScopeOptions {
    fn default() -> Self {
        ScopeOptions {
            when: true,
            transparent: false,
        }
    }
}

impl ScopeOptions {
    /// A scope that starts hidden (`when: false`): its tools appear once
    /// [`Scope::set_when`]`(true)` shows it.
    ///
    /// ```
    /// use toolmark::{Caller, ScopeOptions, Toolmark};
    ///
    /// let tm = Toolmark::builder()
    ///     .scope_at("billing", ScopeOptions::hidden())
    ///     .build()
    ///     .unwrap();
    /// assert!(!tm.scope_at("billing").is_visible());
    /// ```
    pub fn hidden() -> ScopeOptions {
        ScopeOptions {
            when: false,
            ..ScopeOptions::default()
        }
    }
}

/// Whether `s` is a valid name segment: `[A-Za-z0-9_-]+` (the grammar the
/// `#[tool]` macro checks names and scopes with: `toolmark_syntax::name`).
pub(crate) fn valid_segment(s: &str) -> bool {
    toolmark_syntax::name::is_segment(s)
}

pub(crate) fn segment_error(s: &str) -> String {
    if s.is_empty() {
        "a name segment cannot be empty".to_owned()
    } else {
        format!("`{s}` is not a name segment: use only letters, digits, `_` and `-` (nest scopes with `.scope(..)`)")
    }
}

pub(crate) struct ScopeNode {
    pub(crate) name: String,
    /// Dotted path of every scope name from the root (transparent ones included).
    pub(crate) path: String,
    /// Name prefix for tools (transparent scopes add nothing).
    pub(crate) prefix: String,
    pub(crate) parent: Option<Arc<ScopeNode>>,
    pub(crate) transparent: bool,
    pub(crate) invalid_name: Option<String>,
    when: AtomicBool,
    disposed: AtomicBool,
    /// Cancelled on disposal; children's tokens are child tokens of this one.
    pub(crate) dispose_token: CancellationToken,
    pub(crate) children: Mutex<HashMap<String, Arc<ScopeNode>>>,
    /// How many tools are registered directly into this scope (changed under the
    /// registry lock; the registry holds the tools, found by their scope on disposal).
    pub(crate) tools: AtomicUsize,
    /// The scope's queue: one run at a time, FIFO.
    pub(crate) queue: crate::call::gate::Gate,
}

impl ScopeNode {
    pub(crate) fn root() -> Arc<ScopeNode> {
        Arc::new(ScopeNode {
            name: String::new(),
            path: String::new(),
            prefix: String::new(),
            parent: None,
            transparent: true,
            invalid_name: None,
            when: AtomicBool::new(true),
            disposed: AtomicBool::new(false),
            dispose_token: CancellationToken::new(),
            children: Mutex::new(HashMap::new()),
            tools: AtomicUsize::new(0),
            queue: crate::call::gate::Gate::new(),
        })
    }

    /// The child `name`: the existing one, or a new one with the options `opts`
    /// gives for its path.
    fn child(
        self: &Arc<Self>,
        name: &str,
        opts: impl FnOnce(&str) -> ScopeOptions,
    ) -> Arc<ScopeNode> {
        let mut children = lock(&self.children);
        if let Some(existing) = children.get(name)
            && !existing.is_disposed()
        {
            return Arc::clone(existing);
        }
        let join = |base: &str| {
            if base.is_empty() {
                name.to_owned()
            } else {
                format!("{base}.{name}")
            }
        };
        let path = join(&self.path);
        let opts = opts(&path);
        let invalid_name = (!valid_segment(name)).then(|| segment_error(name));
        let node = Arc::new(ScopeNode {
            name: name.to_owned(),
            path,
            prefix: if opts.transparent {
                self.prefix.clone()
            } else {
                join(&self.prefix)
            },
            parent: Some(Arc::clone(self)),
            transparent: opts.transparent,
            invalid_name,
            when: AtomicBool::new(opts.when),
            disposed: AtomicBool::new(self.is_disposed()),
            dispose_token: self.dispose_token.child_token(),
            children: Mutex::new(HashMap::new()),
            tools: AtomicUsize::new(0),
            queue: crate::call::gate::Gate::new(),
        });
        if !self.is_disposed() {
            children.insert(name.to_owned(), Arc::clone(&node));
        }
        node
    }

    /// Whether this scope is the one at `path`, or inside it: a scope's path
    /// names every scope from the root (transparent ones included); a
    /// non-transparent scope also answers to the prefix it gives its tools.
    pub(crate) fn within(&self, path: &str) -> bool {
        let mut node = self;
        loop {
            if node.parent.is_some()
                && (node.path == path || (!node.transparent && node.prefix == path))
            {
                return true;
            }
            match &node.parent {
                Some(parent) => node = parent,
                None => return false,
            }
        }
    }

    pub(crate) fn is_disposed(&self) -> bool {
        self.disposed.load(Ordering::Acquire)
    }

    pub(crate) fn when(&self) -> bool {
        self.when.load(Ordering::Acquire)
    }

    /// Set the `when` flag; the old one.
    pub(crate) fn swap_when(&self, when: bool) -> bool {
        self.when.swap(when, Ordering::AcqRel)
    }

    /// Visible: this scope and every ancestor have `when: true` and are not disposed.
    /// Whether this scope or a descendant holds a registered tool.
    pub(crate) fn has_tools(&self) -> bool {
        if self.tools.load(Ordering::Acquire) > 0 {
            return true;
        }
        let children: Vec<Arc<ScopeNode>> = lock(&self.children).values().cloned().collect();
        children.iter().any(|c| c.has_tools())
    }

    pub(crate) fn visible(&self) -> bool {
        let mut node = self;
        loop {
            if !node.when() || node.is_disposed() {
                return false;
            }
            match &node.parent {
                Some(parent) => node = parent,
                None => return true,
            }
        }
    }

    /// The full name of a tool named `name` registered here.
    pub(crate) fn full_name(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_owned()
        } else {
            // Sized once (`format!` costs a formatter pass per registration).
            let mut full = String::with_capacity(self.prefix.len() + 1 + name.len());
            full.push_str(&self.prefix);
            full.push('.');
            full.push_str(name);
            full
        }
    }

    /// Mark this scope and every descendant disposed; returns them all.
    fn mark_disposed(self: &Arc<Self>) -> Vec<Arc<ScopeNode>> {
        let mut all = Vec::new();
        let mut stack = vec![Arc::clone(self)];
        while let Some(node) = stack.pop() {
            if node.disposed.swap(true, Ordering::AcqRel) && !Arc::ptr_eq(&node, self) {
                continue;
            }
            stack.extend(lock(&node.children).drain().map(|(_, c)| c));
            all.push(node);
        }
        self.dispose_token.cancel();
        all
    }
}

/// A handle to a scope. Cheap to clone; every clone names the same scope.
#[derive(Clone)]
pub struct Scope {
    pub(crate) node: Arc<ScopeNode>,
    pub(crate) tm: Weak<Inner>,
}

impl Scope {
    /// The child scope `name`. It is created if it does not exist, with the
    /// options the builder declared for its path
    /// ([`ToolmarkBuilder::scope_at`](crate::ToolmarkBuilder::scope_at)) or else
    /// the default ones; an existing one is returned unchanged.
    pub fn scope(&self, name: &str) -> Scope {
        let tm = &self.tm;
        let node = self.node.child(name, |path| {
            shared_options(tm, path, declared_options(tm, path))
        });
        Scope {
            node,
            tm: self.tm.clone(),
        }
    }

    /// The child scope `name`, created with `options` if it does not exist (an
    /// existing scope is returned unchanged: options apply at creation).
    pub fn scope_with(&self, name: &str, options: ScopeOptions) -> Scope {
        let tm = &self.tm;
        let node = self
            .node
            .child(name, |path| shared_options(tm, path, options));
        Scope {
            node,
            tm: self.tm.clone(),
        }
    }

    /// The scope's own name (`""` for the root).
    pub fn name(&self) -> &str {
        &self.node.name
    }

    /// The dotted path of scope names from the root (`challenges.create`).
    pub fn path(&self) -> &str {
        &self.node.path
    }

    /// The prefix this scope gives its tools' names (transparent scopes add none).
    pub fn prefix(&self) -> &str {
        &self.node.prefix
    }

    /// Whether this scope is transparent.
    pub fn is_transparent(&self) -> bool {
        self.node.transparent
    }

    /// Show (`true`) or hide (`false`) this scope's tools and its descendants'.
    ///
    /// For a scope shared with
    /// [`ToolmarkBuilder::share_scope`](crate::ToolmarkBuilder::share_scope), this
    /// instance shows the change at once and sends it to the others in the
    /// background (see [Shared across instances](crate::scope#shared-across-instances)).
    pub fn set_when(&self, when: bool) {
        let old = self.node.swap_when(when);
        let Some(inner) = self.tm.upgrade() else {
            return;
        };
        if old != when {
            inner.scope_changed(&self.node);
        }
        if let Some(shared) = &inner.shared
            && let Some(sync) = &shared.scopes
            && sync.is_shared(&self.node.path)
            && !self.node.is_disposed()
        {
            sync.changed(&self.node.path, when, old != when);
            shared.start(&inner);
        }
    }

    /// This scope's own `when` flag.
    pub fn when(&self) -> bool {
        self.node.when()
    }

    /// Whether this scope's tools are visible: its `when` and every ancestor's are
    /// true and none is disposed.
    pub fn is_visible(&self) -> bool {
        self.node.visible()
    }

    /// Whether this scope has been disposed.
    pub fn is_disposed(&self) -> bool {
        self.node.is_disposed()
    }

    /// Dispose this scope and its descendants: their tools are unregistered, their
    /// queued calls refused `scope_disposed`, their running calls aborted
    /// (`cancelled`), their pending confirmations dropped (each with a bridge
    /// message). Idempotent.
    pub fn dispose(&self) {
        if self.node.is_disposed() || self.node.parent.is_none() {
            return;
        }
        if let Some(parent) = &self.node.parent {
            let mut children = lock(&parent.children);
            if children
                .get(&self.node.name)
                .is_some_and(|c| Arc::ptr_eq(c, &self.node))
            {
                children.remove(&self.node.name);
            }
        }
        let nodes = self.node.mark_disposed();
        if let Some(inner) = self.tm.upgrade() {
            inner.on_disposed(&nodes);
        }
    }

    /// A guard that disposes this scope when dropped.
    pub fn guard(&self) -> ScopeGuard {
        ScopeGuard(self.clone())
    }

    /// Register `spec` into this scope (the same as
    /// `tm.register(spec, RegisterOptions { scope: Some(scope) })`).
    pub fn register(&self, spec: ToolSpec) -> Result<(), RegisterError> {
        match self.tm.upgrade() {
            Some(inner) => inner.register(spec, Some(self)),
            None => Err(RegisterError::ScopeDisposed {
                scope: self.node.path.clone(),
            }),
        }
    }

    /// Whether two handles name the same scope.
    pub fn same_scope(&self, other: &Scope) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }
}

/// The options the builder declared for the scope at `path`, else the defaults.
fn declared_options(tm: &Weak<Inner>, path: &str) -> ScopeOptions {
    tm.upgrade()
        .and_then(|inner| inner.config.scopes.get(path).copied())
        .unwrap_or_default()
}

/// `options`, with the `when` of the newest state known when the scope at `path`
/// is shared across instances.
fn shared_options(tm: &Weak<Inner>, path: &str, options: ScopeOptions) -> ScopeOptions {
    let when = tm.upgrade().and_then(|inner| {
        let sync = inner.shared.as_ref()?.scopes.as_ref()?;
        sync.known_when(path)
    });
    match when {
        Some(when) => ScopeOptions { when, ..options },
        None => options,
    }
}

/// Checks a dotted scope path (`"billing.cards"`): every segment a name segment.
pub(crate) fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("the scope path is empty (the root scope has no options)".to_owned());
    }
    match path.split('.').find(|seg| !valid_segment(seg)) {
        Some(seg) => Err(format!("scope path `{path}`: {}", segment_error(seg))),
        None => Ok(()),
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("path", &self.node.path)
            .field("when", &self.node.when())
            .field("transparent", &self.node.transparent)
            .field("disposed", &self.node.is_disposed())
            .finish()
    }
}

/// Disposes its scope when dropped. Derefs to the [`Scope`].
///
/// ```
/// # let tm = toolmark::Toolmark::builder().build().unwrap();
/// {
///     let dialog = tm.scope("dialog").guard();
///     assert!(!dialog.is_disposed());
/// } // the dialog closed: its tools are gone
/// ```
#[must_use = "dropping the guard disposes the scope at once"]
#[derive(Debug)]
pub struct ScopeGuard(Scope);

impl ScopeGuard {
    /// The guarded scope.
    pub fn scope(&self) -> &Scope {
        &self.0
    }
}

impl std::ops::Deref for ScopeGuard {
    type Target = Scope;
    fn deref(&self) -> &Scope {
        &self.0
    }
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        self.0.dispose();
    }
}
