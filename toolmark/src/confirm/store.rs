//! The store of open confirmations: ids, expiry order, the `max_pending` cap and
//! single use (an id is taken out under one lock, never checked then acted on).

use std::borrow::Borrow;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;
use tokio::sync::oneshot;

use super::deferred::{Bound, Deferred, Taken};
use super::{ConfirmId, PendingConfirmation};
use crate::sensitive::CompactView;
use crate::tools::registry::ToolEntry;
use crate::tools::spec::Decoded;
use crate::Caller;

/// Why an open confirmation was dropped without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DropReason {
    Expired,
    ScopeDisposed,
    Cancelled,
    Shutdown,
}

/// A value of the app's (a decoded input) whose `Drop` may panic: dropped here,
/// the panic is caught and logged, so it never escapes `confirm_pending`, a call,
/// or the expiry sweeper.
pub(crate) struct Quiet<T>(Option<T>);

impl<T> Quiet<T> {
    pub(crate) fn new(value: T) -> Self {
        Quiet(Some(value))
    }

    pub(crate) fn none() -> Self {
        Quiet(None)
    }

    /// The value, moved out (it is the caller's to drop now).
    pub(crate) fn take(&mut self) -> Option<T> {
        self.0.take()
    }
}

impl<T> Drop for Quiet<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_quietly(value);
        }
    }
}

/// Drop `value`, catching a panic of its `Drop`.
pub(crate) fn drop_quietly<T>(value: T) {
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(value)));
    if dropped.is_err() {
        tracing::error!(target: "toolmark", "dropping a held input panicked; the panic was caught");
    }
}

/// A deferred call's input while it waits in the built-in table: as it came, or
/// compact. A JSON object's map allocates a whole B-tree node (about 630 B) however
/// few keys it has, and making it compact (its top-level entries as one exact-size
/// slice) and rebuilding it on approval costs a fifth of a plain call of the same
/// tool. So while the table holds fewer than [`HELD_WHOLE`] confirmations an input
/// is kept as it came (nothing to rebuild on approval; at most ~10 KB more per
/// toolmark), and once it holds that many, every new one is kept compact.
pub(crate) enum HeldInput {
    /// A top-level object's entries, in key order.
    Compact(Box<[(String, Value)]>),
    /// The value as it came.
    Whole(Value),
}

/// How many confirmations the built-in table holds before it keeps inputs compact
/// (see [`HeldInput`]).
pub(crate) const HELD_WHOLE: usize = 16;

impl HeldInput {
    /// `input`, held as it came.
    pub(crate) fn new(input: Value) -> HeldInput {
        HeldInput::Whole(input)
    }

    /// Keep an object compact: its top-level entries as one exact-size slice.
    pub(crate) fn compact(&mut self) {
        if let HeldInput::Whole(Value::Object(map)) = self {
            let map = std::mem::take(map);
            // Exact size: no spare capacity to give back.
            let mut entries = Vec::with_capacity(map.len());
            entries.extend(map);
            *self = HeldInput::Compact(entries.into_boxed_slice());
        }
    }

    /// The input, rebuilt.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            // Inserted in key order (no collect-and-sort pass for a few keys).
            HeldInput::Compact(entries) => Value::Object(entries.iter().fold(
                serde_json::Map::new(),
                |mut map, (k, v)| {
                    map.insert(k.clone(), v.clone());
                    map
                },
            )),
            HeldInput::Whole(v) => v.clone(),
        }
    }

    /// The input, moved out (`null` is left behind).
    pub(crate) fn take_value(&mut self) -> Value {
        match std::mem::replace(self, HeldInput::Whole(Value::Null)) {
            HeldInput::Compact(entries) => Value::Object(entries.into_vec().into_iter().fold(
                serde_json::Map::new(),
                |mut map, (k, v)| {
                    map.insert(k, v);
                    map
                },
            )),
            HeldInput::Whole(v) => v,
        }
    }
}

pub(crate) enum PendingKind {
    /// Waiting for `confirm_pending`: holds the real input and its decoded value.
    Deferred {
        /// What observers see of the call (built by its secret set), kept small;
        /// no input (`shown: None`) when it would equal the held input.
        view: CompactView,
        input: HeldInput,
        /// `None` with `decoded_is_input`: the decoded value is the JSON input
        /// itself (a dynamic tool), kept once.
        decoded: Quiet<Decoded>,
        decoded_is_input: bool,
        /// The form (or wizard) version the call was made at.
        form_version: Option<Vec<u64>>,
    },
    /// A call (or a `ctx.confirm`) waiting on the confirm handler: woken when the
    /// confirmation is dropped.
    Inline {
        wake: Option<oneshot::Sender<DropReason>>,
    },
}

pub(crate) struct Pending {
    /// The table's order, given when it is inserted (kept when it is put back).
    pub(crate) seq: u64,
    /// Inline (see [`ConfirmId`]): the store's two indexes hold copies.
    pub(crate) id: ConfirmId,
    pub(crate) entry: Arc<ToolEntry>,
    pub(crate) caller: Caller,
    pub(crate) expires_at: SystemTime,
    pub(crate) kind: PendingKind,
    /// The policy's context: rule, person-only, session.
    pub(crate) ask: super::policy::AskCtx,
}

/// A confirmation as the table holds it: the fields every confirmation has, inline;
/// those few have (a policy context, a form version), boxed together and absent
/// when both are empty.
pub(crate) struct Stored {
    seq: u64,
    id: ConfirmId,
    pub(crate) entry: Arc<ToolEntry>,
    caller: Caller,
    expires_at: SystemTime,
    kind: StoredKind,
    rare: Option<Box<Rare>>,
}

/// [`PendingKind`] without the form version (in [`Rare`]), and a deferred
/// confirmation's view (an inline one's is its waiting call's).
enum StoredKind {
    Deferred {
        /// What observers see (built by the call's secret set), kept small.
        view: CompactView,
        input: HeldInput,
        decoded: Quiet<Decoded>,
        decoded_is_input: bool,
    },
    Inline {
        wake: Option<oneshot::Sender<DropReason>>,
    },
}

/// The fields of a confirmation that most leave empty (a policy context, a form
/// version): boxed together, absent when both are.
#[derive(Default)]
pub(crate) struct Rare {
    pub(crate) ask: super::policy::AskCtx,
    pub(crate) form_version: Option<Vec<u64>>,
}

/// The policy context of a confirmation without one.
pub(crate) static NO_ASK: super::policy::AskCtx = super::policy::AskCtx {
    rule: None,
    person: false,
    session: None,
};

impl Rare {
    /// `ask` and `form_version`, boxed; `None` when both are empty.
    pub(crate) fn boxed(
        ask: super::policy::AskCtx,
        form_version: Option<Vec<u64>>,
    ) -> Option<Box<Rare>> {
        let plain = form_version.is_none() && ask == NO_ASK;
        (!plain).then(|| Box::new(Rare { ask, form_version }))
    }

    /// The policy context in `rare` (none: [`NO_ASK`]).
    pub(crate) fn ask(rare: &Option<Box<Rare>>) -> &super::policy::AskCtx {
        rare.as_ref().map_or(&NO_ASK, |r| &r.ask)
    }

    /// The form version in `rare`.
    pub(crate) fn form_version(rare: &Option<Box<Rare>>) -> Option<&[u64]> {
        rare.as_ref().and_then(|r| r.form_version.as_deref())
    }
}

impl Stored {
    /// An inline confirmation, or a deferred one put back (see
    /// [`PendingStore::insert`]).
    pub(crate) fn new(p: Pending) -> Stored {
        let Pending {
            seq,
            id,
            entry,
            caller,
            expires_at,
            kind,
            ask,
        } = p;
        let (kind, form_version) = match kind {
            PendingKind::Deferred {
                view,
                input,
                decoded,
                decoded_is_input,
                form_version,
            } => (
                StoredKind::Deferred {
                    view,
                    input,
                    decoded,
                    decoded_is_input,
                },
                form_version,
            ),
            PendingKind::Inline { wake } => (StoredKind::Inline { wake }, None),
        };
        Stored {
            seq,
            id,
            entry,
            caller,
            expires_at,
            kind,
            rare: Rare::boxed(ask, form_version),
        }
    }

    fn into_pending(self) -> Pending {
        let Stored {
            seq,
            id,
            entry,
            caller,
            expires_at,
            kind,
            rare,
        } = self;
        let Rare { ask, form_version } = rare.map(|r| *r).unwrap_or_default();
        let kind = match kind {
            StoredKind::Deferred {
                view,
                input,
                decoded,
                decoded_is_input,
            } => PendingKind::Deferred {
                view,
                input,
                decoded,
                decoded_is_input,
                form_version,
            },
            StoredKind::Inline { wake } => PendingKind::Inline { wake },
        };
        Pending {
            seq,
            id,
            entry,
            caller,
            expires_at,
            kind,
            ask,
        }
    }

    /// A deferred confirmation as the table keeps it, built from what the flow
    /// kept (`d`) in place: no intermediate [`Pending`], boxed once.
    #[inline(always)]
    pub(crate) fn deferred(
        d: Deferred,
        entry: Arc<ToolEntry>,
        decoded: Quiet<Decoded>,
        decoded_is_input: bool,
    ) -> Box<Stored> {
        let Deferred {
            seq,
            id,
            caller,
            view,
            input,
            expires_at,
            rare,
            ..
        } = d;
        Box::new(Stored {
            seq,
            id,
            entry,
            caller,
            expires_at,
            kind: StoredKind::Deferred {
                view,
                input,
                decoded,
                decoded_is_input,
            },
            rare,
        })
    }

    /// A deferred confirmation taken out for an answer, straight from the table's
    /// record (`None` for an inline one).
    ///
    /// Taken as the table's box: its fields are moved out of the box where they
    /// are (by value, the whole record was first copied out: +40 instructions a
    /// round trip).
    #[inline(always)]
    #[allow(clippy::boxed_local)]
    pub(crate) fn into_taken(self: Box<Stored>) -> Option<Taken> {
        let Stored {
            seq,
            id,
            entry,
            caller,
            expires_at,
            kind,
            rare,
        } = *self;
        let StoredKind::Deferred {
            view,
            input,
            decoded,
            decoded_is_input,
        } = kind
        else {
            return None;
        };
        Some(Taken {
            d: Deferred {
                seq,
                id,
                tool: Arc::clone(&entry.name),
                caller,
                view,
                input,
                expires_at,
                rare,
                bound: Bound::Entry(entry),
            },
            decoded,
            decoded_is_input,
            token: None,
        })
    }

    pub(crate) fn expires_at(&self) -> SystemTime {
        self.expires_at
    }

    fn is_deferred(&self) -> bool {
        matches!(self.kind, StoredKind::Deferred { .. })
    }

    /// What the pending list shows of a deferred confirmation (`None`: inline).
    fn info(&self) -> Option<PendingConfirmation> {
        let StoredKind::Deferred { view, input, .. } = &self.kind else {
            return None;
        };
        Some(PendingConfirmation {
            confirm_id: self.id.to_string(),
            tool: self.entry.name.to_string(),
            caller: self.caller,
            summary: view.summary().to_owned(),
            changes: view.changes().to_vec(),
            input: match view.shown() {
                Some(shown) => shown.clone(),
                None => input.to_value(),
            },
            expires_at: self.expires_at,
        })
    }
}

/// A boxed record in the id table, found by the id it holds: each of the table's
/// buckets (it keeps spare ones) is one pointer, not an id and a pointer.
struct ById(Box<Stored>);

impl Borrow<[u8]> for ById {
    fn borrow(&self) -> &[u8] {
        self.0.id.as_bytes()
    }
}

impl Hash for ById {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As the bytes it borrows as.
        self.0.id.as_bytes().hash(state)
    }
}

impl PartialEq for ById {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for ById {}

/// Id → confirmation. Fx hashing: the ids are random and made here, so lookups of
/// caller-given ids only probe and cannot degrade the table.
type PendingMap = HashSet<ById, rustc_hash::FxBuildHasher>;

/// One caller's confirmations in the table's order: (seq, id), oldest first. New
/// ones are numbered in increasing order, so an insert is a push at the back and an
/// answer (most often of the oldest, or of the only one) a removal near an end: a
/// few instructions where a B-tree searched and rebalanced (~210 per round trip).
/// A removal from the middle shifts the shorter side (at most half the caller's
/// open confirmations; `max_pending` is 100 by default).
#[derive(Default)]
struct SeqIndex(VecDeque<(u64, ConfirmId)>);

impl SeqIndex {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// The oldest.
    fn first(&self) -> Option<(u64, &ConfirmId)> {
        self.0.front().map(|(seq, id)| (*seq, id))
    }

    /// Where `seq` is, or would go.
    fn position(&self, seq: u64) -> usize {
        self.0.partition_point(|(s, _)| *s < seq)
    }

    /// Add `seq` (a new one at the back; one put back in its place).
    fn insert(&mut self, seq: u64, id: ConfirmId) {
        if self.0.back().is_none_or(|(last, _)| *last < seq) {
            self.0.push_back((seq, id));
            return;
        }
        let at = self.position(seq);
        match self.0.get_mut(at) {
            Some(slot) if slot.0 == seq => slot.1 = id,
            _ => self.0.insert(at, (seq, id)),
        }
    }

    /// Take `seq` out, if it is here; give the memory of a burst back once the
    /// index is mostly empty.
    fn remove(&mut self, seq: u64) {
        let at = match self.0.front() {
            Some((first, _)) if *first == seq => 0,
            _ => self.position(seq),
        };
        if self.0.get(at).is_some_and(|(s, _)| *s == seq) {
            self.0.remove(at);
        }
        if let Some(to) = shrunk(self.0.len(), self.0.capacity()) {
            self.0.shrink_to(to);
        }
    }
}

/// The capacity a table of `len` entries shrinks to once most of its `capacity` is
/// empty (after a burst of confirmations was answered), if it does: it never holds
/// more than four times its entries, and shrinking at a quarter keeps the cost
/// amortized. The id table and each caller's index follow it alike.
fn shrunk(len: usize, capacity: usize) -> Option<usize> {
    (capacity > 64 && len < capacity / 4).then_some(len * 2)
}

#[derive(Default)]
pub(crate) struct PendingStore {
    map: PendingMap,
    /// Per caller (indexed by `Caller as usize`): seq → id, oldest first (the
    /// oldest of all is the oldest of the callers' oldest).
    by_caller: [SeqIndex; 6],
    seq: u64,
    /// When the sweeper wakes next (`None`: only when woken). An insert expiring
    /// earlier wakes it; later ones do not (it would only sleep again).
    pub(crate) sweep_at: Option<SystemTime>,
}

/// How many confirmations one caller may hold.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PerCaller {
    /// Never more than this many (`max_pending_per_caller` set by the app).
    Hard(usize),
    /// Any number while there is room; at the global cap, a caller beyond this
    /// share loses its own oldest first (the default: 50).
    Share(usize),
}

/// Which cap pushed a confirmation out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cap {
    /// `max_pending`: every caller's confirmations together.
    Global,
    /// `max_pending_per_caller`: a caller beyond its bound or share lost its own.
    PerCaller,
}

impl PendingStore {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Insert a new confirmation `p`, numbered here (its `seq`, the expiry order,
    /// is given under the insert's lock); return the confirmations pushed out, in
    /// order. A hard
    /// per-caller bound first pushes out the inserting caller's own oldest; then,
    /// while more than `max` are open, the oldest of a caller holding more than its
    /// share goes first (the inserting caller's own when it is one), and only when no
    /// caller is over its share, the oldest of all.
    pub(crate) fn insert(
        &mut self,
        mut p: Box<Stored>,
        max: usize,
        per_caller: PerCaller,
    ) -> Vec<(Pending, Cap)> {
        // A table holding many keeps each new input small (see `HeldInput`).
        if self.map.len() >= HELD_WHOLE
            && let StoredKind::Deferred { input, .. } = &mut p.kind
        {
            input.compact();
        }
        p.seq = self.next_seq();
        let caller = p.caller as usize;
        self.reinsert(p);
        let mut evicted = Vec::new();
        let share = match per_caller {
            PerCaller::Hard(n) => {
                while self.by_caller[caller].len() > n {
                    match self.oldest_of(caller).and_then(|id| self.take(&id)) {
                        Some(old) => evicted.push((old, Cap::PerCaller)),
                        None => break,
                    }
                }
                n
            }
            PerCaller::Share(n) => n,
        };
        while self.map.len() > max {
            let over = if self.by_caller[caller].len() > share {
                Some(caller)
            } else {
                (0..self.by_caller.len())
                    .filter(|c| self.by_caller[*c].len() > share)
                    .min_by_key(|c| self.by_caller[*c].first().map(|(s, _)| s))
            };
            let victim = match over {
                Some(c) => self.oldest_of(c).map(|id| (id, Cap::PerCaller)),
                None => self.oldest().map(|id| (id, Cap::Global)),
            };
            match victim.and_then(|(id, cap)| self.take(&id).map(|p| (p, cap))) {
                Some(out) => evicted.push(out),
                None => break,
            }
        }
        evicted
    }

    /// Whether an insert expiring at `at` must wake the sweeper (it sleeps past it).
    pub(crate) fn wakes_sweeper(&self, at: SystemTime) -> bool {
        self.sweep_at.is_none_or(|next| at < next)
    }

    /// Give back the table's memory once most of it is empty (see [`shrunk`]).
    fn shrink(&mut self) {
        if let Some(to) = shrunk(self.map.len(), self.map.capacity()) {
            self.map.shrink_to(to);
        }
    }

    fn oldest_of(&self, caller: usize) -> Option<ConfirmId> {
        let (_, id) = self.by_caller[caller].first()?;
        Some(id.clone())
    }

    /// The oldest confirmation of all.
    fn oldest(&self) -> Option<ConfirmId> {
        self.by_caller
            .iter()
            .filter_map(SeqIndex::first)
            .min_by_key(|(seq, _)| *seq)
            .map(|(_, id)| id.clone())
    }

    /// Put back a confirmation taken for an approval that was refused (its place
    /// in the expiry order is kept).
    pub(crate) fn reinsert(&mut self, p: Box<Stored>) {
        self.by_caller[p.caller as usize].insert(p.seq, p.id.clone());
        self.map.replace(ById(p));
    }

    /// Take `id` out (single use).
    pub(crate) fn take(&mut self, id: &str) -> Option<Pending> {
        let p = self.map.take(id.as_bytes())?;
        Some(self.taken(p))
    }

    /// Take `id` out only if it is deferred (one lookup: an inline confirmation
    /// taken by mistake goes straight back).
    pub(crate) fn take_deferred(&mut self, id: &str) -> Option<Box<Stored>> {
        let p = self.map.take(id.as_bytes())?;
        if p.0.is_deferred() {
            Some(self.taken_record(p))
        } else {
            self.map.insert(p);
            None
        }
    }

    /// The rest of taking `p` out of the id table: its index entry, the table's
    /// memory.
    fn taken(&mut self, p: ById) -> Pending {
        self.taken_record(p).into_pending()
    }

    /// [`taken`](Self::taken), the record left as the table held it.
    fn taken_record(&mut self, p: ById) -> Box<Stored> {
        let p = p.0;
        self.by_caller[p.caller as usize].remove(p.seq);
        self.shrink();
        p
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.map.contains(id.as_bytes())
    }

    /// Take out every confirmation that has expired at `now`.
    pub(crate) fn take_expired(&mut self, now: SystemTime) -> Vec<Pending> {
        let ids: Vec<ConfirmId> = self
            .map
            .iter()
            .filter(|p| now >= p.0.expires_at)
            .map(|p| p.0.id.clone())
            .collect();
        ids.iter().filter_map(|id| self.take(id)).collect()
    }

    /// Take out every confirmation `pred` selects.
    pub(crate) fn take_where(&mut self, pred: impl Fn(&Stored) -> bool) -> Vec<Pending> {
        let ids: Vec<ConfirmId> = self
            .map
            .iter()
            .filter(|p| pred(&p.0))
            .map(|p| p.0.id.clone())
            .collect();
        ids.iter().filter_map(|id| self.take(id)).collect()
    }

    /// The earliest expiry.
    pub(crate) fn next_expiry(&self) -> Option<SystemTime> {
        self.map.iter().map(|p| p.0.expires_at).min()
    }

    /// The deferred confirmations, oldest first.
    pub(crate) fn deferred(&self) -> Vec<PendingConfirmation> {
        let mut deferred: Vec<&Stored> = self
            .map
            .iter()
            .map(|p| &*p.0)
            .filter(|p| p.is_deferred())
            .collect();
        deferred.sort_unstable_by_key(|p| p.seq);
        deferred.into_iter().filter_map(Stored::info).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn seqs(index: &SeqIndex) -> Vec<u64> {
        index.0.iter().map(|(s, _)| *s).collect()
    }

    #[test]
    fn the_per_caller_index_keeps_the_table_order_whatever_is_answered() {
        let mut index = SeqIndex::default();
        for seq in [3, 5, 8, 9, 12] {
            index.insert(seq, ConfirmId::from_text(&format!("id{seq}")));
        }
        assert_eq!(
            index.first().map(|(s, id)| (s, id.to_string())),
            Some((3, "id3".into()))
        );
        // The oldest, one in the middle, the newest, and one that is not there.
        index.remove(3);
        index.remove(9);
        index.remove(12);
        index.remove(4);
        assert_eq!(seqs(&index), [5, 8]);
        // A put-back keeps its place; the same seq again replaces its id.
        index.insert(6, ConfirmId::from_text("id6"));
        index.insert(1, ConfirmId::from_text("id1"));
        index.insert(6, ConfirmId::from_text("id6b"));
        index.insert(20, ConfirmId::from_text("id20"));
        assert_eq!(seqs(&index), [1, 5, 6, 8, 20]);
        assert_eq!(&*index.0[2].1, "id6b");
        assert_eq!(index.len(), 5);
        assert_eq!(index.first().map(|(s, _)| s), Some(1));
    }

    #[test]
    fn the_per_caller_index_gives_a_bursts_memory_back() {
        let mut index = SeqIndex::default();
        for seq in 0..1_000 {
            index.insert(seq, ConfirmId::from_text("id"));
        }
        for seq in 0..990 {
            index.remove(seq);
        }
        assert_eq!(seqs(&index), (990..1_000).collect::<Vec<_>>());
        assert!(index.0.capacity() <= 64, "{} kept", index.0.capacity());
    }

    #[test]
    fn a_held_input_gives_back_the_same_value() {
        for input in [
            json!({"title": "hi", "tags": ["a", {"b": 1}], "nested": {"z": 1, "a": null}}),
            json!({}),
            json!([1, 2]),
            json!("text"),
        ] {
            for compact in [false, true] {
                let mut held = HeldInput::new(input.clone());
                if compact {
                    held.compact();
                }
                assert_eq!(held.to_value(), input);
                assert_eq!(held.to_value(), input, "to_value leaves it in place");
                assert_eq!(held.take_value(), input);
                assert_eq!(held.take_value(), Value::Null, "taken once");
            }
        }
    }

    #[test]
    fn a_compact_object_is_an_exact_slice_of_its_entries() {
        let mut held = HeldInput::new(json!({"b": 2, "a": 1}));
        assert!(matches!(held, HeldInput::Whole(_)), "held as it came");
        held.compact();
        let HeldInput::Compact(entries) = &held else {
            panic!("a compact object is held as entries");
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b"]);
        // Anything else stays as it came.
        let mut other = HeldInput::new(json!([1, 2]));
        other.compact();
        assert!(matches!(other, HeldInput::Whole(_)));
    }

    /// How many deferred inputs the table holds as they came, and how many compact.
    fn held_forms(tm: &crate::Toolmark) -> (usize, usize) {
        let pending = crate::sync::lock(&tm.inner.pending);
        pending
            .map
            .iter()
            .fold((0, 0), |(whole, compact), p| match &p.0.kind {
                StoredKind::Deferred {
                    input: HeldInput::Whole(_),
                    ..
                } => (whole + 1, compact),
                StoredKind::Deferred {
                    input: HeldInput::Compact(_),
                    ..
                } => (whole, compact + 1),
                StoredKind::Inline { .. } => (whole, compact),
            })
    }

    #[tokio::test]
    async fn the_table_keeps_inputs_as_they_came_until_it_holds_many() {
        let tm = crate::Toolmark::builder().build().unwrap();
        tm.register(
            crate::ToolSpec::new("send", "Send")
                .effect(crate::Effect::Consequential)
                .handler(|_ctx, input| async move { Ok(input) }),
            Default::default(),
        )
        .unwrap();
        let mut ids = Vec::new();
        for i in 0..HELD_WHOLE + 4 {
            let out = tm
                .call(
                    "send",
                    json!({"title": format!("t{i}")}),
                    crate::CallOptions::new(Caller::InApp),
                )
                .await;
            ids.push(out.confirm_id().unwrap().to_owned());
        }
        assert_eq!(held_forms(&tm), (HELD_WHOLE, 4));
        // Either form runs with the input as it was sent.
        for (i, id) in [(0, &ids[0]), (HELD_WHOLE + 3, &ids[HELD_WHOLE + 3])] {
            let out = tm.confirm_pending(id, crate::Decision::approve()).await;
            assert_eq!(out.output(), Some(&json!({"title": format!("t{i}")})));
        }
    }

    #[test]
    fn only_an_earlier_expiry_wakes_the_sweeper() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let mut store = PendingStore::default();
        // Not scheduled (or no timer, as with a clock that reports its jumps): wake.
        assert!(store.wakes_sweeper(t));
        store.sweep_at = Some(t);
        assert!(store.wakes_sweeper(t - Duration::from_secs(1)));
        assert!(!store.wakes_sweeper(t));
        assert!(!store.wakes_sweeper(t + Duration::from_secs(1)));
    }
}
