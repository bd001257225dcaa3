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
//! ```
//! use serde_json::json;
//! use toolmark::store::MemoryStore;
//! use toolmark::{CallOptions, Caller, Decision, Effect, ToolError, ToolSpec, Toolmark};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // Two instances of an app on one store (a `RedisStore` across processes).
//! let store = MemoryStore::new();
//! let key = [7u8; 32]; // load yours from a secret store; the same on every instance
//! let instance = || {
//!     let tm = Toolmark::builder().confirm_store(store.clone()).seal_key(key).build().unwrap();
//!     tm.register(
//!         ToolSpec::new("send", "Send the newsletter")
//!             .effect(Effect::Consequential)
//!             .handler(|_ctx, _input| async { Ok::<_, ToolError>(json!("sent")) }),
//!         Default::default(),
//!     )
//!     .unwrap();
//!     tm
//! };
//! let (a, b) = (instance(), instance());
//! let asked = a.call("send", json!({}), CallOptions::new(Caller::InApp)).await;
//! let id = asked.confirm_id().unwrap().to_owned();
//! // Listed and approved on the other instance; used once.
//! assert_eq!(b.pending_confirmations_async().await.unwrap()[0].confirm_id, id);
//! assert!(b.confirm_pending(&id, Decision::approve()).await.is_ok());
//! let again = a.confirm_pending(&id, Decision::approve()).await;
//! assert_eq!(again.refusal_code(), Some(toolmark::RefusalCode::ConfirmationExpired));
//! # }
//! ```
//!
//! # One flow
//!
//! Every store runs the same deferred flow as the built-in table, so every rule
//! holds unchanged: a confirm id is single use (a store takes a record out
//! atomically), expiry is decided by the toolmark's clock at approval (a store's
//! own expiry is only a backstop), at most `max_pending` are pending (per caller
//! too) and the oldest go first, what an approver sees is redacted, a re-sent
//! `"[redacted]"` gets its secret back, a changed form is `stale`, and a
//! confirmation runs only on the tool registration it was asked for (once that
//! tool's scope is disposed it is dropped, even when a tool of the same name is
//! registered again). On another instance it runs only on a tool of the name with
//! the effect and sensitive paths the approver was shown.
//!
//! Inline confirmations (a caller waiting on the confirm handler) are never stored:
//! they stay in the process that holds the waiting call (and are capped there).
//!
//! The store also keeps the [`For::Always`](crate::policy::For::Always) remembered
//! decisions, so every instance honours them and a revocation on one revokes for
//! all; [`For::Session`](crate::policy::For::Session) ones stay in each process
//! (see [`policy`](crate::policy#across-instances)).
//!
//! And it keeps the `when` flag of the scopes declared with
//! [`ToolmarkBuilder::share_scope`](crate::ToolmarkBuilder::share_scope), so a scope
//! shown or hidden on one instance is shown or hidden on all (see
//! [`scope`](crate::scope#shared-across-instances)).
//!
//! # One seal
//!
//! **Everything a store holds or publishes is sealed as a whole** with AES-256-GCM
//! under the app's 32-byte key: each confirmation record (what the approver is
//! shown, the real input, the policy context, the form version, the registration
//! it belongs to, its expiry), the tombstone a used one leaves, each remembered
//! decision, each bridge message, each shared scope's state (its path, number and
//! `when` flag). The associated data of every seal names the format version, what
//! it is (a record, a decision, a bridge message, a scope state) and the key it is
//! stored under (the confirm id; `{caller}:{tool}` for a decision; `scope:{path}`
//! for a scope state), so a sealed value opens only where it was written. Nothing
//! read back is trusted unless it opens: a record that does not is refused
//! (`confirmation_expired`, "failed its integrity check") and never runs; a
//! decision that does not answers nothing; a bridge message or a scope state that
//! does not is dropped.
//!
//! A record keeps three fields outside the seal, for the store alone: its seq
//! (order), caller (per-caller caps) and expiry (sweeps). They are hints: the
//! toolmark checks the caller and expiry against the sealed ones and refuses a
//! record where they differ.
//!
//! **Only the seal key makes a record the toolmark trusts.** A durable store
//! ([`ConfirmStore::durable`], `RedisStore` and yours by default) requires
//! [`ToolmarkBuilder::seal_key`](crate::ToolmarkBuilder::seal_key):
//! [`build`](crate::ToolmarkBuilder::build) fails `seal_key_required` without one.
//! Give every instance the same key, and keep it across restarts, or their records
//! do not open. A [`MemoryStore`] needs none: without one, the toolmark seals with a
//! key drawn once per process from the OS random source, which every toolmark of
//! the process shares.
//!
//! # What someone with access to the store can do
//!
//! - **Read access** (a Redis replica, a backup, `MONITOR`): sees no secret and no
//!   input, summary or change of any confirmation. It sees confirm ids, callers,
//!   expiry times, the order and number of pending confirmations, which ids were
//!   used, the tool names and callers of remembered decisions, and when bridge
//!   messages are published.
//! - **Write access without the seal key**: can **delete** — drop pending
//!   confirmations, remembered decisions and tombstones, flood or cut the bridge
//!   channel, shorten expiries (a deleted or emptied store is refused or asked
//!   again, never approved) — but can **never forge** a record, decision or bridge
//!   message; never **change** one (a summary, the changes, the input, the expiry,
//!   whether a person must approve, the policy rule, the form version, the
//!   registration); never **swap** two keys' values or **copy** one onto another id
//!   or another tool; never **replay** a used record (its tombstone refuses it
//!   until past its expiry, and every instance that used the id or heard of its use
//!   refuses it as well), a bridge message (each id is delivered once) or a
//!   remembered decision onto another tool or caller; and never **widen** a decision
//!   (it covers its tool, caller and effect, and an approval only while the tool
//!   has no sensitive paths). For a shared scope: never forge a state, move one
//!   onto another scope or change its number, and never bring an older one back
//!   on a running instance (it applies only a number above the one it knows, and
//!   puts the newest it knows back into the store); writing a state's number hint
//!   very high (or deleting states) can keep later changes out of the store, so
//!   that an instance started since does not see them (availability, below).
//!
//! What is **not** guaranteed:
//!
//! - **Rolling back** is not detected where nothing remembers: someone who can
//!   delete and write may put the store back as it was earlier, as restoring a
//!   backup would — bring back a decision that was revoked with
//!   [`forget_async`](crate::Toolmark::forget_async), or delete a used id's
//!   tombstone and write its record back, which an instance started since (that
//!   never heard of the use) answers once more before the record's expiry.
//! - **Availability**: deletion, a full store or a cut channel make calls and
//!   approvals refused `unavailable` or confirmations expire; a bridge message can
//!   be kept from the other instances.
//! - **The key holder**: anyone with the seal key can make records every instance
//!   trusts. Keep it in a secret store, never in the same place as the data.
//! - **Metadata**: the ids, times, counts and tool names listed above.
//!
//! # When the store goes away
//!
//! A store that cannot be reached makes a call that needs a confirmation, or an
//! approval, refused `unavailable`, and the tool does not run. An approval sent
//! while the store went away is never "used up and not run": either the store took
//! it and it ran (once), or the answer is `unavailable` ("the tool did not run…
//! the confirmation stays answerable") and the confirmation is put back for another
//! answer as soon as the store answers again (this instance remembers the
//! approvals whose reply was lost and puts them back first). A call asked while
//! the store went away, and refused, is withdrawn the same way.
//!
//! That holds across a **Redis restart** only when Redis keeps its writes:
//! turn on append-only persistence with every write synced before it is
//! acknowledged — `appendonly yes` and `appendfsync always` in `redis.conf`, or at
//! run time `CONFIG SET appendonly yes`, `CONFIG SET appendfsync always`,
//! `CONFIG REWRITE`. With `appendfsync everysec` (Redis's default when AOF is on) a
//! crash may lose the last second of writes: a confirmation asked then is lost,
//! and one used then may come back (every instance that used it or heard of it
//! still refuses it). Without persistence a restart loses every confirmation and
//! remembered decision (they are refused `confirmation_expired` and asked again).
//! If the instance that sent an approval stops too before the store is back, that
//! confirmation stays used until its tombstone expires, and nothing ran.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::Caller;

mod expiring;
#[cfg(feature = "mcp")]
pub(crate) use expiring::Expiring;
pub(crate) mod flow;
mod memory;
#[cfg(feature = "redis")]
mod redis;
#[cfg(any(feature = "mcp", feature = "fuzz"))]
pub(crate) mod request_state;
pub(crate) mod scopes;
pub(crate) mod seal;

pub use memory::MemoryStore;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis::{RedisStore, RedisStoreOptions};
#[cfg_attr(not(feature = "mcp"), allow(unused_imports))]
pub(crate) use seal::{call_binding, Purpose, Sealer};

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
    /// forget the tombstones kept until `now` or before. A record under an id
    /// whose tombstone is there is removed and not returned.
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

    /// Whether this store keeps the shared scope states of
    /// [`ToolmarkBuilder::share_scope`](crate::ToolmarkBuilder::share_scope)
    /// ([`next_scope_seq`](Self::next_scope_seq),
    /// [`put_scope`](Self::put_scope), [`scopes`](Self::scopes)). Default: `false`
    /// ([`build`](crate::ToolmarkBuilder::build) then refuses `share_scope`).
    fn keeps_scopes(&self) -> bool {
        false
    }

    /// The next scope sequence number: greater than every one this store handed
    /// out before, and than `at_least` (the highest an instance has seen, so a
    /// store that lost its data does not hand out numbers the instances already
    /// passed). Atomic across instances: two callers never get the same one.
    fn next_scope_seq(&self, at_least: u64) -> BoxFuture<'_, Result<u64, StoreError>> {
        let _ = at_least;
        Box::pin(std::future::ready(Err(no_scopes())))
    }

    /// Keep `record` as the state of the scope at `record.path`, unless the one
    /// kept there has a `seq` as high or higher: whether it was kept.
    fn put_scope(&self, record: ScopeRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = record;
        Box::pin(std::future::ready(Err(no_scopes())))
    }

    /// Every scope state kept (one per path, in no particular order).
    fn scopes(&self) -> BoxFuture<'_, Result<Vec<ScopeRecord>, StoreError>> {
        Box::pin(std::future::ready(Err(no_scopes())))
    }
}

fn no_scopes() -> StoreError {
    StoreError::unavailable("this confirmation store keeps no scope states")
}

/// The shared state of one scope ([`ToolmarkBuilder::share_scope`](crate::ToolmarkBuilder::share_scope))
/// as a store keeps it and its bus carries it: the scope's `when` flag sealed under
/// the app's key with its path and sequence number.
///
/// `path` and `seq` are hints for the store (which keeps the highest `seq` per
/// path); the toolmark trusts only what opens from `sealed`, and drops a record
/// whose path or seq disagree with it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeRecord {
    /// The scope's dotted path (`"admin"`, `"billing.cards"`).
    pub path: String,
    /// Its sequence number, from [`ConfirmStore::next_scope_seq`]: the highest wins.
    pub seq: u64,
    /// The state (path, seq, `when`), sealed and bound to the path.
    pub sealed: String,
}

/// The most remembered decisions a store keeps (as a toolmark keeps in itself).
pub const MAX_REMEMBERED: usize = crate::confirm::remember::MAX_REMEMBERED;
