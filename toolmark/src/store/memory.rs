//! [`MemoryStore`]: a [`ConfirmStore`] in process memory.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use tokio::sync::broadcast;

use super::{
    to_ms, CapKind, Caps, ConfirmRecord, ConfirmStore, Evicted, StoreError, MAX_REMEMBERED,
};
use crate::policy::Remembered;
use crate::sync::lock;
use crate::Caller;

/// A [`ConfirmStore`] in process memory, shared by every toolmark given a clone of
/// it (they see one another's confirmations and bridge messages, as instances on
/// one Redis do). It does not outlive the process ([`durable`](ConfirmStore::durable)
/// is `false`, so no seal key is required), and is the reference for a store of
/// your own.
///
/// Without a seal key, a record of a tool with sensitive paths keeps its real
/// input in this process's memory (as the built-in store does); with one, it is
/// sealed as in a durable store.
///
/// A toolmark without a store keeps its deferred confirmations in itself, which is
/// faster still; this store runs the same path a durable store does.
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Mutex<State>>,
    bus: broadcast::Sender<String>,
}

#[derive(Default)]
struct State {
    records: HashMap<String, ConfirmRecord>,
    /// seq → id, oldest first.
    order: BTreeMap<u64, String>,
    seq: u64,
    /// The remembered decisions, oldest first (one per tool and caller).
    remembered: VecDeque<Remembered>,
}

impl State {
    fn insert(&mut self, record: ConfirmRecord) {
        self.order.insert(record.seq, record.id.clone());
        self.records.insert(record.id.clone(), record);
    }

    fn take(&mut self, id: &str) -> Option<ConfirmRecord> {
        let record = self.records.remove(id)?;
        self.order.remove(&record.seq);
        Some(record)
    }

    /// The ids of `caller`'s records, oldest first.
    fn of(&self, caller: Caller) -> impl Iterator<Item = &String> {
        self.order
            .values()
            .filter(move |id| self.records.get(*id).is_some_and(|r| r.caller == caller))
    }

    fn count(&self, caller: Caller) -> usize {
        self.of(caller).count()
    }

    fn oldest_of(&self, caller: Caller) -> Option<String> {
        self.of(caller).next().cloned()
    }

    /// The caps, as the built-in store applies them.
    fn evict(&mut self, caller: Caller, caps: Caps) -> Vec<Evicted> {
        let mut out = Vec::new();
        if caps.hard {
            while self.count(caller) > caps.per_caller {
                let Some(r) = self.oldest_of(caller).and_then(|id| self.take(&id)) else {
                    break;
                };
                out.push(Evicted {
                    record: r,
                    cap: CapKind::PerCaller,
                });
            }
        }
        while self.records.len() > caps.max {
            let over = if self.count(caller) > caps.per_caller {
                Some(caller)
            } else {
                // The caller over its share whose oldest is the oldest.
                self.order.values().find_map(|id| {
                    let c = self.records.get(id)?.caller;
                    (self.count(c) > caps.per_caller).then_some(c)
                })
            };
            let victim = match over {
                Some(c) => self.oldest_of(c).map(|id| (id, CapKind::PerCaller)),
                None => self
                    .order
                    .values()
                    .next()
                    .cloned()
                    .map(|id| (id, CapKind::Global)),
            };
            match victim.and_then(|(id, cap)| self.take(&id).map(|r| (r, cap))) {
                Some((record, cap)) => out.push(Evicted { record, cap }),
                None => break,
            }
        }
        out
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        let (bus, _) = broadcast::channel(1024);
        MemoryStore {
            inner: Arc::default(),
            bus,
        }
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("records", &lock(&self.inner).records.len())
            .finish()
    }
}

impl ConfirmStore for MemoryStore {
    fn durable(&self) -> bool {
        false
    }

    fn put(
        &self,
        mut record: ConfirmRecord,
        caps: Caps,
    ) -> BoxFuture<'_, Result<Vec<Evicted>, StoreError>> {
        let mut state = lock(&self.inner);
        state.seq += 1;
        record.seq = state.seq;
        let caller = record.caller;
        state.insert(record);
        let evicted = state.evict(caller, caps);
        Box::pin(std::future::ready(Ok(evicted)))
    }

    fn take<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<ConfirmRecord>, StoreError>> {
        let taken = lock(&self.inner).take(id);
        Box::pin(std::future::ready(Ok(taken)))
    }

    fn restore(&self, record: ConfirmRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        lock(&self.inner).insert(record);
        Box::pin(std::future::ready(Ok(())))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        let state = lock(&self.inner);
        let all = state
            .order
            .values()
            .filter_map(|id| state.records.get(id).cloned())
            .collect();
        Box::pin(std::future::ready(Ok(all)))
    }

    fn take_expired(
        &self,
        now: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        let now = to_ms(now);
        let mut state = lock(&self.inner);
        let due: Vec<String> = state
            .order
            .values()
            .filter(|id| state.records.get(*id).is_some_and(|r| r.expires_ms <= now))
            .cloned()
            .collect();
        let taken = due.iter().filter_map(|id| state.take(id)).collect();
        Box::pin(std::future::ready(Ok(taken)))
    }

    fn publish(&self, message: String) -> BoxFuture<'_, Result<(), StoreError>> {
        let _ = self.bus.send(message);
        Box::pin(std::future::ready(Ok(())))
    }

    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.bus.subscribe()
    }

    fn remember(&self, decision: Remembered) -> BoxFuture<'_, Result<(), StoreError>> {
        let mut state = lock(&self.inner);
        state
            .remembered
            .retain(|r| !(r.tool == decision.tool && r.caller == decision.caller));
        while state.remembered.len() >= MAX_REMEMBERED {
            state.remembered.pop_front();
        }
        state.remembered.push_back(decision);
        Box::pin(std::future::ready(Ok(())))
    }

    fn remembered_for<'a>(
        &'a self,
        tool: &'a str,
        caller: Caller,
    ) -> BoxFuture<'a, Result<Option<Remembered>, StoreError>> {
        let found = lock(&self.inner)
            .remembered
            .iter()
            .find(|r| r.tool == tool && r.caller == caller)
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn remembered(&self) -> BoxFuture<'_, Result<Vec<Remembered>, StoreError>> {
        let all = lock(&self.inner).remembered.iter().cloned().collect();
        Box::pin(std::future::ready(Ok(all)))
    }

    fn forget<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut state = lock(&self.inner);
        let before = state.remembered.len();
        state.remembered.retain(|r| r.id != id);
        let gone = state.remembered.len() != before;
        Box::pin(std::future::ready(Ok(gone)))
    }
}
