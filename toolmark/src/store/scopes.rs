//! Shared scope visibility: the `when` flag of a scope declared with
//! [`ToolmarkBuilder::share_scope`](crate::ToolmarkBuilder::share_scope), kept in
//! the confirmation store and carried on its bus, so that `set_when` on one
//! instance is what every instance's next listing shows.
//!
//! Each state is `{path, seq, when}` sealed whole (`Purpose::ScopeState`, bound to
//! `scope:<path>`). `seq` comes from the store's counter
//! ([`ConfirmStore::next_scope_seq`]) and is sealed with the state: the highest
//! seq of a path wins on every instance, whatever order the states arrive in, and
//! a state that does not open, or whose path or seq disagree with the store's
//! hints, changes nothing. A state is applied only when its seq is above the one
//! this instance knows, so a replayed or reordered message is ignored.
//!
//! One task per toolmark ([`run`]): it reads every state when it starts (an
//! instance that starts late), sends this instance's changes (in the order they
//! were made, the last one per path), applies the others' from the bus, and
//! every [`RESYNC_EVERY`] reads the store again (what the bus missed while the
//! store was away) and puts back the newest state it knows where the store lost
//! it. While the store cannot be reached, each instance keeps its last known
//! states and its own changes, emits [`Event::ScopeSyncFailed`], and sends the
//! changes once the store answers (unless a newer state from another instance
//! reached the store first).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;

use super::seal::{Purpose, Sealer};
use super::{ConfirmStore, ScopeRecord, StoreError};
use crate::event::Event;
use crate::scope::ScopeNode;
use crate::sync::lock;
use crate::toolmark::Inner;

/// How often each instance reads the shared states again (what its bus missed).
pub(crate) const RESYNC_EVERY: Duration = Duration::from_secs(2);

/// A scope state as sealed.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    path: String,
    seq: u64,
    when: bool,
}

/// A scope state on the store's bus (the bridge's messages have other fields, so
/// neither is read as the other).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    scope: ScopeRecord,
}

/// The newest state of a path this instance knows, and its sealed record (put
/// back into a store that lost it).
struct Known {
    seq: u64,
    when: bool,
    record: ScopeRecord,
}

/// A change made here and not yet in the store.
#[derive(Clone, Copy)]
struct Unsent {
    when: bool,
    /// The seq of the newest state known when it was made: a state above it from
    /// another instance supersedes it.
    after: u64,
    /// Which change (a later one of the same path replaces it).
    generation: u64,
}

/// The shared scopes of one toolmark.
pub(crate) struct ScopeSync {
    paths: HashSet<String>,
    known: Mutex<HashMap<String, Known>>,
    unsent: Mutex<HashMap<String, Unsent>>,
    generation: AtomicU64,
    /// Wakes the task to send `unsent`.
    wake: Arc<Notify>,
    bus: Mutex<Option<broadcast::Receiver<String>>>,
    /// One flush or read at a time (the task's and `sync_now`'s).
    busy: tokio::sync::Mutex<()>,
    /// Whether the last read of the store worked (a failure to read is reported
    /// once per outage).
    read_ok: AtomicBool,
}

impl ScopeSync {
    pub(crate) fn new(paths: HashSet<String>, store: &dyn ConfirmStore) -> Self {
        ScopeSync {
            paths,
            known: Mutex::new(HashMap::new()),
            unsent: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            wake: Arc::new(Notify::new()),
            bus: Mutex::new(Some(store.subscribe())),
            busy: tokio::sync::Mutex::new(()),
            read_ok: AtomicBool::new(true),
        }
    }

    pub(crate) fn is_shared(&self, path: &str) -> bool {
        self.paths.contains(path)
    }

    /// The `when` a shared scope created now starts with: the newest state known.
    pub(crate) fn known_when(&self, path: &str) -> Option<bool> {
        lock(&self.known).get(path).map(|k| k.when)
    }

    /// `set_when` was called on a shared scope here (`changed`: its flag moved):
    /// send it (in the background), unless it changed nothing anywhere.
    pub(crate) fn changed(&self, path: &str, when: bool, changed: bool) {
        let (after, same) = lock(&self.known)
            .get(path)
            .map_or((0, false), |k| (k.seq, k.when == when));
        if !changed && same && !lock(&self.unsent).contains_key(path) {
            return;
        }
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        lock(&self.unsent).insert(
            path.to_owned(),
            Unsent {
                when,
                after,
                generation,
            },
        );
        self.wake.notify_one();
    }

    fn floor(&self) -> u64 {
        lock(&self.known).values().map(|k| k.seq).max().unwrap_or(0)
    }

    /// What `record` holds, when it opens under its path and agrees with its
    /// hints; `None` otherwise (it changes nothing).
    fn open(&self, sealer: &Sealer, record: &ScopeRecord) -> Option<bool> {
        if !self.is_shared(&record.path) {
            return None;
        }
        let opened = sealer
            .open_json::<Body>(Purpose::ScopeState, &key(&record.path), &record.sealed)
            .filter(|b| b.path == record.path && b.seq == record.seq)
            .map(|b| b.when);
        if opened.is_none() {
            tracing::warn!(target: "toolmark", scope = %crate::tools::summary::one_line(&record.path), "a shared scope state failed its integrity check and was ignored");
        }
        opened
    }

    /// Take `record` (opened: `when`) as the state of its path when it is newer
    /// than the one known; show or hide the scope if it exists. Whether it was.
    fn apply(&self, inner: &Inner, record: &ScopeRecord, when: bool) -> bool {
        {
            let mut known = lock(&self.known);
            if known.get(&record.path).is_some_and(|k| k.seq >= record.seq) {
                return false;
            }
            known.insert(
                record.path.clone(),
                Known {
                    seq: record.seq,
                    when,
                    record: record.clone(),
                },
            );
        }
        self.reconcile(inner, &record.path);
        true
    }

    /// Make the scope at `path`, if it exists, show the newest state known. The
    /// flag changes under the `known` lock (two applies never cross); a scope
    /// created meanwhile read `known` while holding its parent's children lock,
    /// which [`find`] waits for, so it is found here or started with this state.
    fn reconcile(&self, inner: &Inner, path: &str) {
        let Some(node) = find(&inner.root, path) else {
            return;
        };
        let changed = {
            let known = lock(&self.known);
            let Some(k) = known.get(path) else { return };
            node.swap_when(k.when) != k.when
        };
        if changed {
            inner.scope_changed(&node);
        }
    }

    fn failed(&self, inner: &Inner, scope: Option<&str>, e: &StoreError) {
        tracing::warn!(target: "toolmark", scope = scope.unwrap_or(""), error = %e, "a shared scope state could not go through the confirmation store");
        if scope.is_some() || self.read_ok.swap(false, Ordering::AcqRel) {
            inner.emit(|| Event::ScopeSyncFailed {
                scope: scope.map(str::to_owned),
                reason: e.to_string(),
            });
        }
    }

    fn receive(&self, inner: &Inner, sealer: &Sealer, text: &str) {
        let Ok(wire) = serde_json::from_str::<Wire>(text) else {
            return;
        };
        if let Some(when) = self.open(sealer, &wire.scope) {
            self.apply(inner, &wire.scope, when);
        }
    }

    /// Read every state from the store, put back the newest known where the store
    /// lacks it, and send the changes made here. `Err` when the store could not
    /// be reached (this instance keeps what it knows).
    pub(crate) async fn sync_now(
        &self,
        inner: &Inner,
        store: &dyn ConfirmStore,
        sealer: &Sealer,
    ) -> Result<(), StoreError> {
        let _busy = self.busy.lock().await;
        if let Err(e) = self.read(inner, store, sealer).await {
            self.failed(inner, None, &e);
            return Err(e);
        }
        self.read_ok.store(true, Ordering::Release);
        self.flush(inner, store, sealer).await
    }

    async fn read(
        &self,
        inner: &Inner,
        store: &dyn ConfirmStore,
        sealer: &Sealer,
    ) -> Result<(), StoreError> {
        let records = store.scopes().await?;
        let mut stored: HashMap<String, u64> = HashMap::new();
        for record in &records {
            if let Some(when) = self.open(sealer, record) {
                self.apply(inner, record, when);
                let seq = stored.entry(record.path.clone()).or_default();
                *seq = (*seq).max(record.seq);
            }
        }
        // The store lost a state, or holds an older one than this instance knows
        // (a restart without persistence, a deletion): put the newest back, as it
        // was sealed.
        let heal: Vec<ScopeRecord> = lock(&self.known)
            .iter()
            .filter(|(path, k)| stored.get(*path).is_none_or(|s| *s < k.seq))
            .map(|(_, k)| k.record.clone())
            .collect();
        for record in heal {
            store.put_scope(record).await?;
        }
        Ok(())
    }

    async fn flush_now(&self, inner: &Inner, store: &dyn ConfirmStore, sealer: &Sealer) {
        let _busy = self.busy.lock().await;
        // A failure is reported (an event per scope) and the change stays unsent.
        let _ = self.flush(inner, store, sealer).await;
    }

    /// Send every change made here (the last one per path); one superseded by a
    /// newer state from another instance is dropped. A failed one stays unsent.
    async fn flush(
        &self,
        inner: &Inner,
        store: &dyn ConfirmStore,
        sealer: &Sealer,
    ) -> Result<(), StoreError> {
        let mut todo: Vec<(String, Unsent)> = lock(&self.unsent)
            .iter()
            .map(|(p, u)| (p.clone(), *u))
            .collect();
        todo.sort_by_key(|(_, u)| u.generation);
        let mut result = Ok(());
        for (path, change) in todo {
            let newest = lock(&self.known).get(&path).map_or(0, |k| k.seq);
            if newest > change.after {
                // Another instance's state reached the store after this change was
                // made here and is already shown: it wins.
                self.forget_unsent(&path, change.generation);
                continue;
            }
            match self.send(inner, store, sealer, &path, change.when).await {
                Ok(seq) => {
                    self.forget_unsent(&path, change.generation);
                    // A later change of the same path made meanwhile follows this one.
                    if let Some(later) = lock(&self.unsent).get_mut(&path) {
                        later.after = later.after.max(seq);
                    }
                }
                Err(e) => {
                    self.failed(inner, Some(&path), &e);
                    result = Err(e);
                }
            }
        }
        result
    }

    fn forget_unsent(&self, path: &str, generation: u64) {
        let mut unsent = lock(&self.unsent);
        if unsent.get(path).is_some_and(|u| u.generation == generation) {
            unsent.remove(path);
        }
    }

    /// Seal one change under a seq from the store, keep it there, apply it here,
    /// and tell the other instances. Its seq.
    async fn send(
        &self,
        inner: &Inner,
        store: &dyn ConfirmStore,
        sealer: &Sealer,
        path: &str,
        when: bool,
    ) -> Result<u64, StoreError> {
        let seq = store.next_scope_seq(self.floor()).await?;
        let body = Body {
            path: path.to_owned(),
            seq,
            when,
        };
        let sealed = sealer
            .seal_json(Purpose::ScopeState, &key(path), &body)
            .ok_or_else(|| StoreError::unavailable("the OS random source failed"))?;
        let record = ScopeRecord {
            path: path.to_owned(),
            seq,
            sealed,
        };
        // Not kept: a newer state is there (another instance's, sent meanwhile);
        // it comes here on the bus or at the next read.
        store.put_scope(record.clone()).await?;
        self.apply(inner, &record, when);
        let wire = serde_json::to_string(&Wire { scope: record })
            .map_err(|e| StoreError::unavailable(e.to_string()))?;
        if let Err(e) = store.publish(wire).await {
            // Kept in the store: the others read it at their next resync.
            self.failed(inner, Some(path), &e);
        }
        Ok(seq)
    }
}

/// The storage key a state is bound to.
fn key(path: &str) -> String {
    format!("scope:{path}")
}

/// The live scope at the dotted `path`, without creating any.
fn find(root: &Arc<ScopeNode>, path: &str) -> Option<Arc<ScopeNode>> {
    let mut node = Arc::clone(root);
    for segment in path.split('.') {
        let next = lock(&node.children).get(segment).cloned()?;
        node = next;
    }
    (!node.is_disposed()).then_some(node)
}

/// The shared scopes' task (see the module docs). Ends when the toolmark is
/// dropped or shut down.
pub(crate) async fn run(weak: Weak<Inner>, stop: CancellationToken, shutdown: CancellationToken) {
    let (wake, mut bus) = {
        let Some(inner) = weak.upgrade() else { return };
        let Some(sync) = scope_sync(&inner) else {
            return;
        };
        let bus = lock(&sync.bus).take();
        (Arc::clone(&sync.wake), bus)
    };
    let mut tick = tokio::time::interval(RESYNC_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    enum Next {
        Send,
        Bus(Result<String, broadcast::error::RecvError>),
        Read,
    }
    loop {
        let message = async {
            match bus.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            () = stop.cancelled() => return,
            () = shutdown.cancelled() => return,
            () = wake.notified() => Next::Send,
            m = message => Next::Bus(m),
            _ = tick.tick() => Next::Read,
        };
        if matches!(next, Next::Bus(Err(broadcast::error::RecvError::Closed))) {
            bus = None;
            continue;
        }
        let Some(inner) = weak.upgrade() else { return };
        let Some(shared) = inner.shared.as_ref() else {
            return;
        };
        let Some(sync) = shared.scopes.as_ref() else {
            return;
        };
        let (store, sealer) = (&*shared.store, shared.sealer());
        let step = async {
            match next {
                Next::Send => sync.flush_now(&inner, store, sealer).await,
                Next::Bus(Ok(text)) => sync.receive(&inner, sealer, &text),
                // Missed messages (or a closed bus): read them from the store.
                Next::Bus(Err(_)) | Next::Read => {
                    let _ = sync.sync_now(&inner, store, sealer).await;
                }
            }
        };
        if std::panic::AssertUnwindSafe(step)
            .catch_unwind()
            .await
            .is_err()
        {
            tracing::error!(target: "toolmark", "sharing a scope state panicked; the task goes on");
        }
    }
}

fn scope_sync(inner: &Inner) -> Option<&ScopeSync> {
    inner.shared.as_ref()?.scopes.as_ref()
}
