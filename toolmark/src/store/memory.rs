//! [`MemoryStore`]: a [`ConfirmStore`] in process memory.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use tokio::sync::broadcast;

use super::expiring::Expiring;
use super::{
    to_ms, CapKind, Caps, ConfirmRecord, ConfirmStore, DecisionRecord, Evicted, ScopeRecord,
    StoreError, MAX_REMEMBERED,
};
use crate::sync::lock;
use crate::Caller;

/// A [`ConfirmStore`] in process memory, shared by every toolmark given a clone of
/// it (they see one another's confirmations and bridge messages, as instances on
/// one Redis do), and the reference for a store of your own.
///
/// It holds what a durable store holds — sealed records, tombstones, sealed
/// decisions — and runs the same path. It does not outlive the process
/// ([`durable`](ConfirmStore::durable) is `false`), so a seal key is optional:
/// without one the toolmark seals with a key drawn once per process from the OS
/// random source (every toolmark of the process shares it).
///
/// A toolmark without a store keeps its deferred confirmations in itself, which is
/// faster still (nothing to seal: nothing leaves the process).
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
    /// Used ids: the record, the token of the take that used it, until when.
    tombstones: Expiring<Tombstone>,
    /// The remembered decisions, oldest first (one per tool and caller).
    remembered: VecDeque<DecisionRecord>,
    /// The last scope sequence number handed out.
    scope_seq: u64,
    /// The shared scope states, by path.
    scopes: HashMap<String, ScopeRecord>,
}

struct Tombstone {
    record: ConfirmRecord,
    token: String,
}

impl State {
    /// Take `id` out into a tombstone (see [`ConfirmStore::take`]).
    fn take_into_tombstone(
        &mut self,
        id: &str,
        token: &str,
        until_ms: u64,
    ) -> Option<ConfirmRecord> {
        if self.tombstones.contains(id) {
            // A record written back under a used id is removed, never returned.
            let _ = self.take(id);
            return self
                .tombstones
                .get(id)
                .filter(|t| !t.token.is_empty() && t.token == token)
                .map(|t| t.record.clone());
        }
        let record = self.take(id)?;
        self.tombstones.insert(
            id,
            until_ms,
            Tombstone {
                record: record.clone(),
                token: token.to_owned(),
            },
        );
        Some(record)
    }

    fn insert(&mut self, record: ConfirmRecord) {
        // A record put again under its id replaces the old one, in order too.
        if let Some(old) = self.records.get(&record.id) {
            self.order.remove(&old.seq);
        }
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

    /// The caps, as the built-in store applies them; each record pushed out
    /// leaves a tombstone until `until_ms`.
    fn evict(&mut self, caller: Caller, caps: Caps, until_ms: u64) -> Vec<Evicted> {
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
        for e in &out {
            self.tombstones.insert(
                &e.record.id,
                until_ms,
                Tombstone {
                    record: e.record.clone(),
                    token: String::new(),
                },
            );
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
        let (caller, until) = (record.caller, record.expires_ms);
        state.insert(record);
        let evicted = state.evict(caller, caps, until);
        Box::pin(std::future::ready(Ok(evicted)))
    }

    fn take<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        keep_until: SystemTime,
    ) -> BoxFuture<'a, Result<Option<ConfirmRecord>, StoreError>> {
        let taken = lock(&self.inner).take_into_tombstone(id, token, to_ms(keep_until));
        Box::pin(std::future::ready(Ok(taken)))
    }

    fn restore<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut state = lock(&self.inner);
        let ours = state
            .tombstones
            .get(id)
            .is_some_and(|t| !t.token.is_empty() && t.token == token);
        if ours && let Some(t) = state.tombstones.remove(id) {
            state.insert(t.record);
        }
        Box::pin(std::future::ready(Ok(ours)))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        let state = lock(&self.inner);
        let all = state
            .order
            .values()
            .filter(|id| !state.tombstones.contains(id))
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
        // A record under a used id is removed, never returned.
        let mut taken = Vec::new();
        for id in &due {
            if let Some(r) = state.take(id)
                && !state.tombstones.contains(id)
            {
                taken.push(r);
            }
        }
        state.tombstones.prune(now);
        Box::pin(std::future::ready(Ok(taken)))
    }

    fn publish(&self, message: String) -> BoxFuture<'_, Result<(), StoreError>> {
        let _ = self.bus.send(message);
        Box::pin(std::future::ready(Ok(())))
    }

    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.bus.subscribe()
    }

    fn remember(&self, decision: DecisionRecord) -> BoxFuture<'_, Result<(), StoreError>> {
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
    ) -> BoxFuture<'a, Result<Option<DecisionRecord>, StoreError>> {
        let found = lock(&self.inner)
            .remembered
            .iter()
            .find(|r| r.tool == tool && r.caller == caller)
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn remembered(&self) -> BoxFuture<'_, Result<Vec<DecisionRecord>, StoreError>> {
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

    fn keeps_scopes(&self) -> bool {
        true
    }

    fn next_scope_seq(&self, at_least: u64) -> BoxFuture<'_, Result<u64, StoreError>> {
        let mut state = lock(&self.inner);
        state.scope_seq = state.scope_seq.max(at_least).saturating_add(1);
        Box::pin(std::future::ready(Ok(state.scope_seq)))
    }

    fn put_scope(&self, record: ScopeRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        let mut state = lock(&self.inner);
        let newer = state
            .scopes
            .get(&record.path)
            .is_none_or(|kept| kept.seq < record.seq);
        if newer {
            state.scopes.insert(record.path.clone(), record);
        }
        Box::pin(std::future::ready(Ok(newer)))
    }

    fn scopes(&self) -> BoxFuture<'_, Result<Vec<ScopeRecord>, StoreError>> {
        let all = lock(&self.inner).scopes.values().cloned().collect();
        Box::pin(std::future::ready(Ok(all)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::*;

    fn record(id: &str, caller: Caller, expires_ms: u64) -> ConfirmRecord {
        ConfirmRecord {
            id: id.to_owned(),
            seq: 0,
            caller,
            expires_ms,
            sealed: format!("sealed-{id}"),
        }
    }

    fn caps(max: usize) -> Caps {
        Caps {
            max,
            per_caller: max,
            hard: false,
        }
    }

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[tokio::test]
    async fn a_take_leaves_a_tombstone_that_only_its_token_reads_or_restores() {
        let store = MemoryStore::new();
        store
            .put(record("a", Caller::InApp, 1_000), caps(10))
            .await
            .unwrap();
        store
            .put(record("b", Caller::InApp, 1_000), caps(10))
            .await
            .unwrap();
        let taken = store.take("a", "t1", at(5_000)).await.unwrap().unwrap();
        assert_eq!(taken.sealed, "sealed-a");
        // Single use; the same token reads it again (a retried take), another not.
        assert!(store.take("a", "t2", at(5_000)).await.unwrap().is_none());
        assert_eq!(
            store.take("a", "t1", at(5_000)).await.unwrap(),
            Some(taken.clone())
        );
        assert!(store.take("a", "", at(5_000)).await.unwrap().is_none());
        // Written back while its tombstone is there: not listed, never taken.
        store.put(taken.clone(), caps(10)).await.unwrap();
        let ids: Vec<String> = store
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["b"]);
        assert!(store.take("a", "t3", at(5_000)).await.unwrap().is_none());
        // Restored by its token only, in its place.
        assert!(!store.restore("a", "t2").await.unwrap());
        assert!(store.restore("a", "t1").await.unwrap());
        let ids: Vec<String> = store
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["a", "b"], "back in its place");
        assert!(!store.restore("a", "t1").await.unwrap(), "once");
    }

    #[tokio::test]
    async fn a_record_pushed_out_leaves_a_tombstone_nobody_restores() {
        let store = MemoryStore::new();
        store
            .put(record("old", Caller::Mcp, 1_000), caps(1))
            .await
            .unwrap();
        let evicted = store
            .put(record("new", Caller::Mcp, 2_000), caps(1))
            .await
            .unwrap();
        assert_eq!(evicted.len(), 1);
        assert_eq!(
            (evicted[0].record.id.as_str(), evicted[0].cap),
            ("old", CapKind::PerCaller)
        );
        store
            .put(evicted[0].record.clone(), caps(10))
            .await
            .unwrap();
        assert!(store.take("old", "t", at(9_000)).await.unwrap().is_none());
        assert!(!store.restore("old", "").await.unwrap());
    }

    #[tokio::test]
    async fn tombstones_are_forgotten_once_past_their_time() {
        let store = MemoryStore::new();
        store
            .put(record("a", Caller::InApp, 1_000), caps(10))
            .await
            .unwrap();
        let r = store.take("a", "t", at(3_000)).await.unwrap().unwrap();
        // Written back: taken out as expired, never returned (its id is used).
        store.put(r.clone(), caps(10)).await.unwrap();
        assert!(store.take_expired(at(2_999)).await.unwrap().is_empty());
        assert!(store.list().await.unwrap().is_empty());
        assert!(
            store.take("a", "u", at(3_000)).await.unwrap().is_none(),
            "still buried"
        );
        store.take_expired(at(3_000)).await.unwrap();
        assert!(lock(&store.inner).tombstones.is_empty());
    }
}
