//! The run being polled on this thread ("current run" marker), and the scrubbing
//! panic hook that reads it.
//!
//! A run sets the marker around each poll of its future (a thread-local pointer, no
//! allocation), so code running inside a tool can tell which run it belongs to:
//! the panic hook scrubs the run's secrets from a panic message, a nested
//! `tm.call` into a scope whose slot an enclosing run holds is refused at once, and
//! a sync tool's thread inherits the run's secrets and abandonment accounting.

use std::cell::RefCell;
use std::sync::{Arc, Once};

use crate::scope::ScopeNode;
use crate::sensitive::scrub;
use crate::toolmark::Inner;
use crate::tools::registry::ToolEntry;

/// What a run exposes to code polled inside it. Built once per run and moved into
/// the thread's stack of current runs around each poll (no clone per poll).
pub(crate) struct RunMarker {
    /// The address of the scope whose queue slot the run holds (0: none, a sync
    /// tool's thread). Only compared, never dereferenced.
    scope: usize,
    /// The tool (for a sync tool's thread: its toolmark and name).
    entry: Option<Arc<ToolEntry>>,
    /// The run's secret values, when its tool has sensitive paths and the panic
    /// hook is on.
    secrets: Option<Arc<[String]>>,
}

thread_local! {
    static STACK: RefCell<Vec<RunMarker>> = const { RefCell::new(Vec::new()) };
}

impl RunMarker {
    pub(crate) fn new(
        scope: Option<&ScopeNode>,
        entry: Option<Arc<ToolEntry>>,
        secrets: Option<Arc<[String]>>,
    ) -> Self {
        RunMarker {
            scope: scope.map_or(0, |s| std::ptr::from_ref(s) as usize),
            entry,
            secrets,
        }
    }
}

/// A run's marker, kept by the run between polls.
pub(crate) struct MarkerSlot(Option<RunMarker>);

impl MarkerSlot {
    pub(crate) fn new(marker: RunMarker) -> Self {
        MarkerSlot(Some(marker))
    }

    /// Make the marker current until the guard drops (around one poll).
    #[inline]
    pub(crate) fn enter(&mut self) -> Entered<'_> {
        let pushed = match self.0.take() {
            Some(m) => {
                let mut m = Some(m);
                let ok = STACK
                    .try_with(|s| {
                        if let Ok(mut s) = s.try_borrow_mut() {
                            s.extend(m.take());
                        }
                    })
                    .is_ok();
                if m.is_some() {
                    self.0 = m;
                    false
                } else {
                    ok
                }
            }
            None => false,
        };
        Entered { slot: self, pushed }
    }
}

/// Takes the marker back when dropped.
pub(crate) struct Entered<'s> {
    slot: &'s mut MarkerSlot,
    pushed: bool,
}

impl Drop for Entered<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.pushed {
            self.slot.0 = STACK
                .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
                .ok()
                .flatten();
        }
    }
}

/// Calls `f` with the markers of the runs polled on this thread, innermost last
/// (the default when the stack cannot be read).
fn with_stack<R: Default>(f: impl FnOnce(&[RunMarker]) -> R) -> R {
    STACK
        .try_with(|s| s.try_borrow().map(|s| f(&s)).unwrap_or_default())
        .unwrap_or_default()
}

/// Is a run holding `node`'s queue slot polled on this thread (this run or an
/// enclosing one)?
pub(crate) fn holds_slot(node: &ScopeNode) -> bool {
    let addr = std::ptr::from_ref(node) as usize;
    with_stack(|s| s.iter().any(|m| m.scope == addr))
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
            let scrubbed = with_stack(|s| {
                let secrets = s.iter().rev().find_map(|m| m.secrets.as_deref())?;
                let msg = panic_text(info.payload())?;
                let clean = scrub(msg, secrets);
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

/// Snapshot of the current run for a sync tool's thread.
pub(crate) fn sync_inherit() -> SyncInherit {
    with_stack(|s| {
        let secrets = s.iter().rev().find_map(|m| m.secrets.clone());
        let entry = s.last().and_then(|m| m.entry.as_ref());
        SyncInherit {
            secrets,
            inner: entry.map(|e| e.inner.clone()),
            tool: entry.map(|e| Arc::clone(&e.name)),
        }
    })
}
