//! The run being polled on this thread ("current run" marker), and the scrubbing
//! panic hook that reads it.
//!
//! A run sets its marker around each poll of its future (the scope it holds, in
//! thread-local cells; its secrets, only when it has some), so code running inside
//! a tool can tell which runs it is inside: the panic hook scrubs the run's
//! secrets from a panic message, and a nested `tm.call` into a scope whose slot an
//! enclosing run holds is refused at once. A sync tool's thread inherits the
//! run's secrets, and its abandonment accounting from the run's context.

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Once};

use crate::scope::ScopeNode;
use crate::sensitive::scrub;
use crate::toolmark::Inner;

/// How many nested runs one thread tracks without allocating (deeper ones spill
/// into a vector).
const INLINE_DEPTH: usize = 16;

/// The scopes whose queue slots the runs polled on this thread hold, innermost
/// last. Plain cells and no destructor: entering a run is a few stores, with no
/// lazy registration and no borrow flag on the hot path.
struct ScopeStack {
    depth: Cell<usize>,
    addrs: [Cell<usize>; INLINE_DEPTH],
}

thread_local! {
    static SCOPES: ScopeStack = const {
        ScopeStack {
            depth: Cell::new(0),
            addrs: [const { Cell::new(0) }; INLINE_DEPTH],
        }
    };
    /// Scope addresses beyond `INLINE_DEPTH`.
    static DEEP: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// The secrets of the runs (with sensitive values) polled on this thread,
    /// innermost last: only runs that have secrets push here.
    static SECRETS: RefCell<Vec<Arc<[String]>>> = const { RefCell::new(Vec::new()) };
}

/// What a run exposes to code polled inside it: the scope whose queue slot it
/// holds and, for a tool with sensitive paths, its secret values. Kept by the run
/// between polls and made current around each poll (no clone per poll).
pub(crate) struct RunMarker {
    /// The address of the scope whose queue slot the run holds (0: none, a sync
    /// tool's thread). Only compared, never dereferenced.
    scope: usize,
    /// The run's secret values, when its tool has sensitive paths and the panic
    /// hook is on (moved to the thread's stack while the run is polled).
    secrets: Option<Arc<[String]>>,
}

impl RunMarker {
    #[inline]
    pub(crate) fn new(scope: Option<&ScopeNode>, secrets: Option<Arc<[String]>>) -> Self {
        RunMarker {
            scope: scope.map_or(0, |s| std::ptr::from_ref(s) as usize),
            secrets,
        }
    }

    /// Make the marker current until the guard drops (around one poll).
    #[inline]
    pub(crate) fn enter(&mut self) -> Entered<'_> {
        let depth = if self.scope == 0 {
            None
        } else {
            SCOPES
                .try_with(|s| {
                    let d = s.depth.get();
                    match s.addrs.get(d) {
                        Some(slot) => slot.set(self.scope),
                        None => push_deep(self.scope),
                    }
                    s.depth.set(d + 1);
                    d
                })
                .ok()
        };
        let secrets = self.secrets.is_some() && push_secrets(&mut self.secrets);
        Entered {
            marker: self,
            depth,
            secrets,
        }
    }
}

#[cold]
fn push_deep(addr: usize) {
    let _ = DEEP.try_with(|d| {
        if let Ok(mut d) = d.try_borrow_mut() {
            d.push(addr);
        }
    });
}

/// Move `secrets` onto the thread's stack; `false` (and `secrets` kept) when the
/// stack cannot be reached.
fn push_secrets(secrets: &mut Option<Arc<[String]>>) -> bool {
    SECRETS
        .try_with(|s| match s.try_borrow_mut() {
            Ok(mut s) => {
                s.extend(secrets.take());
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false)
}

/// Takes the marker back when dropped.
pub(crate) struct Entered<'m> {
    marker: &'m mut RunMarker,
    /// The thread's depth before this run was entered (`None`: not pushed).
    depth: Option<usize>,
    secrets: bool,
}

impl Drop for Entered<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(d) = self.depth {
            let _ = SCOPES.try_with(|s| s.depth.set(d));
            if d >= INLINE_DEPTH {
                let _ = DEEP.try_with(|v| {
                    if let Ok(mut v) = v.try_borrow_mut() {
                        v.truncate(d - INLINE_DEPTH);
                    }
                });
            }
        }
        if self.secrets {
            self.marker.secrets = SECRETS
                .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
                .ok()
                .flatten();
        }
    }
}

/// Is a run holding `node`'s queue slot polled on this thread (this run or an
/// enclosing one)?
pub(crate) fn holds_slot(node: &ScopeNode) -> bool {
    let addr = std::ptr::from_ref(node) as usize;
    let (found, depth) = SCOPES
        .try_with(|s| {
            let d = s.depth.get();
            let n = d.min(INLINE_DEPTH);
            (s.addrs[..n].iter().any(|c| c.get() == addr), d)
        })
        .unwrap_or((false, 0));
    found
        || (depth > INLINE_DEPTH
            && DEEP
                .try_with(|v| v.try_borrow().is_ok_and(|v| v.contains(&addr)))
                .unwrap_or(false))
}

/// The secrets of the innermost run with secrets polled on this thread.
fn current_secrets() -> Option<Arc<[String]>> {
    SECRETS
        .try_with(|s| s.try_borrow().ok().and_then(|s| s.last().cloned()))
        .ok()
        .flatten()
}

static HOOK: Once = Once::new();

/// Install the scrubbing panic hook once per process, chaining to the hook that
/// was set before.
///
/// A panic raised while a run with sensitive values is polled (or on the thread of
/// such a run's sync tool) whose message contains one of the run's secrets is
/// reported by this hook, with every secret replaced by `[redacted]`, in the
/// default hook's format on stderr; the previous hook is not called for it (it
/// would print the secret). Every other panic goes to the previous hook untouched.
pub(crate) fn install_panic_hook() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let scrubbed = current_secrets().and_then(|secrets| {
                let msg = panic_text(info.payload())?;
                let clean = scrub(msg, &secrets);
                (clean != msg).then_some(clean)
            });
            match scrubbed {
                Some(clean) => {
                    let thread = std::thread::current();
                    let name = thread.name().unwrap_or("<unnamed>");
                    let at = info
                        .location()
                        .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                        .unwrap_or_default();
                    eprintln!("\nthread '{name}' panicked at {at}:\n{clean}");
                }
                None => prev(info),
            }
        }));
    });
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// What a sync tool's thread inherits from its run: the secrets (for the panic
/// hook) and the abandonment accounting.
#[derive(Default)]
pub(crate) struct SyncInherit {
    pub(crate) secrets: Option<Arc<[String]>>,
    pub(crate) inner: Option<std::sync::Weak<Inner>>,
    pub(crate) tool: Option<Arc<str>>,
}

/// Snapshot, for a sync tool's thread, of the run `ctx` belongs to (its tool and
/// toolmark) and of the secrets of the run polled now.
pub(crate) fn sync_inherit(ctx: &crate::ToolContext) -> SyncInherit {
    let entry = ctx.call.entry();
    SyncInherit {
        secrets: current_secrets(),
        inner: entry.map(|e| e.inner.clone()),
        tool: entry.map(|e| Arc::clone(&e.name)),
    }
}
