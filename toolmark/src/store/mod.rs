//! Stores for deferred confirmations: where a `needs_confirmation` call waits for
//! its approval, so that it can outlive the process and be approved on another
//! instance.
//!
//! By default (no store set) a [`Toolmark`](crate::Toolmark) keeps its deferred
//! confirmations in its own memory, as fast as a map lookup. Give the builder a
//! [`ConfirmStore`] with
//! [`ToolmarkBuilder::confirm_store`](crate::ToolmarkBuilder::confirm_store) to
//! keep them elsewhere: [`MemoryStore`] (process memory, shareable by several
//! toolmarks of one process) or, with the `redis` feature, `RedisStore` (shared by
//! every instance of the app, survives restarts).
//!
//! Every store keeps the confirmation rules unchanged: a confirm id is single use
//! (a store takes a record out atomically), expiry is decided by the toolmark's
//! clock at approval (a store's own expiry is only a backstop), at most
//! `max_pending` are pending (per caller too) and the oldest go first, what an
//! approver sees is redacted, a re-sent `"[redacted]"` gets its secret back, and a
//! changed form is `stale`.
//!
//! **A store never holds a secret in clear.** A record holds the redacted input,
//! summary and changes (what an approver is shown) and, when the builder has a
//! `ToolmarkBuilder::seal_key` (feature `durable`, implied by
//! `redis`), the real input sealed with AES-256-GCM under that key with the confirm
//! id as associated data: a record changed in the store, or moved to another id, is
//! refused (`confirmation_expired`) and never runs. A durable store without a key
//! accepts only tools without sensitive paths: the builder fails with
//! `seal_key_required` when a collected `#[tool]` has some, and registering such a
//! tool later fails with the same code.
//!
//! Inline confirmations (a caller waiting on the confirm handler) are never stored:
//! they stay in the process that holds the waiting call (and are capped there).
//!
//! The store also keeps the [`For::Always`](crate::policy::For::Always) remembered
//! decisions, so every instance honours them and a revocation on one revokes for
//! all; [`For::Session`](crate::policy::For::Session) ones stay in each process
//! (see [`policy`](crate::policy#across-instances)).
//!
//! A store that cannot be reached makes the call or the approval refused
//! `unavailable`; nothing runs twice, and a record stored before the fault is
//! still there when the store comes back.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::Caller;

pub(crate) mod flow;
mod memory;
#[cfg(feature = "redis")]
mod redis;
pub(crate) mod seal;

pub use memory::MemoryStore;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis::{RedisStore, RedisStoreOptions};
pub(crate) use seal::Sealer;

/// One deferred confirmation as a store keeps it: the whole confirmation sealed
/// (`sealed`), and the few fields a store needs to order, cap and expire records
/// without the key.
///
/// Those fields are hints for the store only: the toolmark trusts what opens from
/// `sealed` and refuses a record whose `id`, `caller` or `expires_ms` disagree with
/// it (the record never runs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfirmRecord {
    /// The confirm id (128 random bits, hex): the key the record is stored under.
    pub id: String,
    /// The order of arrival, set by the store's [`put`](ConfirmStore::put):
    /// lower is older.
    #[serde(default)]
    pub seq: u64,
    /// Who called (for the per-caller caps).
    pub caller: Caller,
    /// When the confirmation expires, in milliseconds since the Unix epoch (for
    /// [`take_expired`](ConfirmStore::take_expired)).
    pub expires_ms: u64,
    /// The whole confirmation, sealed under the app's key and bound to `id`: what
    /// the approver sees (redacted), the real input, the policy context, the tool
    /// registration it belongs to.
    pub sealed: String,
}

impl ConfirmRecord {
    /// When the store may consider the confirmation expired.
    pub fn expires_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.expires_ms)
    }
}

/// One remembered decision ([`For::Always`](crate::policy::For::Always)) as a
/// store keeps it: sealed under the app's key and bound to its tool and caller.
/// At most one is kept per tool and caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionRecord {
    /// The decision's id (for [`forget`](ConfirmStore::forget)).
    pub id: String,
    /// The tool's full name.
    pub tool: String,
    /// The caller whose calls it answers.
    pub caller: Caller,
    /// The decision, sealed.
    pub sealed: String,
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn to_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The caps a [`put`](ConfirmStore::put) keeps: the builder's `max_pending` and
/// `max_pending_per_caller`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// The most records pending at once.
    pub max: usize,
    /// A caller's bound or share (see `hard`).
    pub per_caller: usize,
    /// `true`: `per_caller` is a hard bound (`max_pending_per_caller` was set): over
    /// it, the caller's own oldest goes. `false`: a share: at `max`, a caller over
    /// its share loses its own oldest first, and the oldest of all goes only when no
    /// caller is over its share.
    pub hard: bool,
}

/// Which cap pushed a record out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapKind {
    /// `max_pending`.
    Global,
    /// `max_pending_per_caller` (a bound or a share).
    PerCaller,
}

/// A record a [`put`](ConfirmStore::put) pushed out, in eviction order.
#[derive(Clone, Debug, PartialEq)]
pub struct Evicted {
    /// The record pushed out (no longer in the store).
    pub record: ConfirmRecord,
    /// The cap that pushed it.
    pub cap: CapKind,
}

/// Why a store operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The store cannot be reached (connection lost, timeout): the call or
    /// approval is refused `unavailable`.
    Unavailable {
        /// What failed (no stored value is quoted).
        reason: String,
    },
    /// A record could not be read back (not a record this version wrote).
    Corrupt {
        /// The confirm id.
        id: String,
    },
}

impl StoreError {
    /// The stable code: `unavailable` or `corrupt`.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Unavailable { .. } => "unavailable",
            StoreError::Corrupt { .. } => "corrupt",
        }
    }

    /// An `unavailable` error.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        StoreError::Unavailable {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable { reason } => {
                write!(
                    f,
                    "unavailable: the confirmation store cannot be reached: {reason}"
                )
            }
            StoreError::Corrupt { id } => {
                write!(f, "corrupt: the stored confirmation `{id}` cannot be read")
            }
        }
    }
}

impl std::error::Error for StoreError {}

/// Where deferred confirmations wait. Implement it to keep them in a database of
/// your own; [`MemoryStore`] is the reference implementation.
///
/// A store holds only sealed bytes and the hints of [`ConfirmRecord`] and
/// [`DecisionRecord`]; it never sees a secret, and nothing it returns is trusted
/// unless it opens under the app's key. Every operation is atomic: two instances
/// calling [`take`](Self::take) on one id at once get the record once between them.
pub trait ConfirmStore: Send + Sync + 'static {
    /// Whether records outlive the process (then the builder needs a seal key).
    /// Default: `true`.
    fn durable(&self) -> bool {
        true
    }

    /// Store `record` (its `seq` set to the next in order) and apply `caps`,
    /// returning the records pushed out, in order. A record pushed out leaves a
    /// tombstone as [`take`](Self::take) does, kept until `record.expires_ms`.
    fn put(
        &self,
        record: ConfirmRecord,
        caps: Caps,
    ) -> BoxFuture<'_, Result<Vec<Evicted>, StoreError>>;

    /// Take the record `id` out (single use), leaving a tombstone of it that holds
    /// the record and `token` until `keep_until`:
    ///
    /// - a record `id` is there: it leaves every index and is returned;
    /// - no record, and the tombstone of `id` holds `token`: the same record is
    ///   returned again (a take retried after its answer was lost);
    /// - otherwise `None`, and a record written back under `id` while its
    ///   tombstone is there is removed, never returned.
    fn take<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        keep_until: SystemTime,
    ) -> BoxFuture<'a, Result<Option<ConfirmRecord>, StoreError>>;

    /// Put back the record a [`take`](Self::take) with `token` left in the
    /// tombstone of `id` (an answer that was refused, or whose outcome was lost):
    /// same id, same place in the order, no caps applied; the tombstone goes.
    /// Whether there was one.
    fn restore<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Every record, oldest first.
    fn list(&self) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>>;

    /// Take out every record that has expired at `now` (`expires_ms <= now`), and
    /// forget the tombstones kept until `now` or before.
    fn take_expired(
        &self,
        now: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>>;

    /// Send `message` to every subscriber of this store, on every instance
    /// (best effort: a subscriber that is disconnected misses it).
    fn publish(&self, message: String) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The messages [`publish`](Self::publish)ed from now on, by any instance.
    fn subscribe(&self) -> broadcast::Receiver<String>;

    /// Keep a remembered decision. It replaces the one kept for the same tool and
    /// caller, if any; at most [`MAX_REMEMBERED`] are kept, the oldest dropped
    /// first.
    fn remember(&self, decision: DecisionRecord) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The decision kept for calls of `tool` (full name) by `caller`, if any.
    fn remembered_for<'a>(
        &'a self,
        tool: &'a str,
        caller: Caller,
    ) -> BoxFuture<'a, Result<Option<DecisionRecord>, StoreError>>;

    /// Every decision kept, oldest first.
    fn remembered(&self) -> BoxFuture<'_, Result<Vec<DecisionRecord>, StoreError>>;

    /// Revoke the decision `id`: whether there was one.
    fn forget<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// The most remembered decisions a store keeps (as a toolmark keeps in itself).
pub const MAX_REMEMBERED: usize = crate::confirm::remember::MAX_REMEMBERED;
