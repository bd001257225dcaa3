//! Confirmation: deferred and inline modes, the confirm handler and queue, and the
//! store of pending confirmations. Redaction of what an approver sees comes from
//! `sensitive/`; this module never writes its own.
//!
//! The deferred confirmation is one flow (`deferred.rs`) for every store: the
//! built-in table (no store set; it keeps the decoded input in memory) and any
//! [`ConfirmStore`](crate::store::ConfirmStore), which holds it sealed. The rules —
//! expiry by the clock at approval, single use, the registration a confirmation
//! belongs to, hidden tools, person-only approvals, `stale` forms, edits restored
//! and re-validated, remembered decisions — are written there once; a backend only
//! keeps, takes and puts back. Inline confirmations and `ctx.confirm` (`flow.rs`)
//! stay in the process that waits on them.
//!
//! Who may make a decision that outlives its call is the app alone (see
//! [`policy`](crate::policy#who-may-make-a-lasting-decision)); nothing an app type
//! does (a held input whose `Drop` panics) escapes `confirm_pending` or stops the
//! expiry sweeper.

use serde::Serialize;
use serde_json::Value;

pub(crate) mod deferred;
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) mod external;
pub(crate) mod flow;
pub mod policy;
mod queue;
pub(crate) mod remember;
pub(crate) mod store;

pub(crate) use deferred::defer;
pub(crate) use flow::{ctx_confirm, inline_confirm};
pub use queue::{ConfirmQueue, QueueHandler};

use std::fmt;
use std::future::Future;
use std::time::SystemTime;

use futures_util::future::BoxFuture;

pub use crate::payload::Change;
use crate::{Caller, Issue};

impl Change {
    /// A change of the value at `path` from `before` to `after`.
    pub fn new(path: impl Into<String>, before: Option<Value>, after: Option<Value>) -> Self {
        Change {
            path: path.into(),
            before,
            after,
        }
    }
}

/// The approver's answer to a confirmation.
///
/// `input`, on an approval, is the edited input (for a call) or the edited list of
/// changes (for `ctx.confirm`, a JSON array of `{path, before, after}`): it may be
/// the public input sent back with its changes, `"[redacted]"` left where the
/// approver did not re-enter a secret. A rejection's `reason` reaches the agent.
#[derive(Clone, Default, PartialEq)]
pub struct Decision {
    /// Approve (`true`) or reject.
    pub approved: bool,
    /// The approver's edited input (re-validated), if any.
    pub input: Option<Value>,
    /// Why the approver rejected (or a note on an approval).
    pub reason: Option<String>,
}

impl Decision {
    /// Approve as is.
    pub fn approve() -> Self {
        Decision {
            approved: true,
            ..Decision::default()
        }
    }

    /// Approve with an edited input.
    pub fn approve_with(input: Value) -> Self {
        Decision {
            approved: true,
            input: Some(input),
            reason: None,
        }
    }

    /// Reject.
    pub fn reject() -> Self {
        Decision::default()
    }

    /// Reject with a reason the agent will see.
    pub fn reject_with(reason: impl Into<String>) -> Self {
        Decision {
            approved: false,
            input: None,
            reason: Some(reason.into()),
        }
    }
}

impl fmt::Debug for Decision {
    /// Never prints the edited input: it may hold a re-entered secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decision")
            .field("approved", &self.approved)
            .field("input", &self.input.as_ref().map(|_| "<edited input>"))
            .field("reason", &self.reason)
            .finish()
    }
}

/// What an inline confirmation asks the app's [`ConfirmHandler`].
///
/// `input` and `changes` carry `"[redacted]"` at the tool's sensitive paths.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmRequest {
    /// The confirmation id (128 random bits, hex).
    pub confirm_id: String,
    /// The tool's full name.
    pub tool: String,
    /// Who called.
    pub caller: Caller,
    /// A one-line summary for the user.
    pub summary: String,
    /// The changes, redacted.
    pub changes: Vec<Change>,
    /// The call's input, redacted.
    pub input: Value,
    /// When it expires.
    #[serde(with = "crate::clock::rfc3339")]
    pub expires_at: SystemTime,
    /// Why the previous answer to this same id was refused (an invalid edit, or
    /// "Re-enter sensitive field"): ask the user again.
    pub issues: Vec<Issue>,
}

/// A deferred confirmation waiting for the app, as listed by
/// [`Toolmark::pending_confirmations`](crate::Toolmark::pending_confirmations).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingConfirmation {
    /// The confirmation id.
    pub confirm_id: String,
    /// The tool's full name.
    pub tool: String,
    /// Who called.
    pub caller: Caller,
    /// A one-line summary for the user.
    pub summary: String,
    /// The changes, redacted.
    pub changes: Vec<Change>,
    /// The call's input, redacted.
    pub input: Value,
    /// When it expires.
    #[serde(with = "crate::clock::rfc3339")]
    pub expires_at: SystemTime,
}

/// What a tool asks with [`ToolContext::confirm`](crate::ToolContext::confirm).
///
/// What the approver sees is made safe first: the summary is scrubbed of the run's
/// sensitive values and made one short line (control characters become spaces, at
/// most 200 characters); each change at or inside a sensitive path is
/// `"[redacted]"` there, and any other string that contains one of the run's
/// sensitive values has it replaced by `"[redacted]"`. A change path may be dotted
/// (`cards.0.cvc`) or a JSON Pointer (`/cards/0/cvc`); both match the sensitive
/// paths alike, and the approver (and the approved
/// [`ConfirmResult::changes`]) see the dotted form. An approver who sends a scrubbed
/// value back unchanged approves the original value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ask {
    /// A one-line summary for the user.
    pub summary: String,
    /// The changes to approve (redacted before the approver sees them).
    pub changes: Vec<Change>,
}

impl Ask {
    /// An ask with a summary and no changes.
    pub fn new(summary: impl Into<String>) -> Self {
        Ask {
            summary: summary.into(),
            changes: Vec::new(),
        }
    }

    /// This ask with `changes`.
    #[must_use]
    pub fn changes(mut self, changes: Vec<Change>) -> Self {
        self.changes = changes;
        self
    }
}

/// The answer to [`ToolContext::confirm`](crate::ToolContext::confirm). It never
/// fails: an impossible confirmation is `approved: false` with a reason.
#[derive(Clone, Default, PartialEq)]
pub struct ConfirmResult {
    /// Whether the user approved.
    pub approved: bool,
    /// Why not: the approver's reason, or `confirmation_unavailable`,
    /// `confirmation_expired`, `invalid`, `cancelled`, `scope_disposed`.
    pub reason: Option<String>,
    /// The approved changes, with the approver's edits applied and secrets
    /// restored (empty unless approved).
    pub changes: Vec<Change>,
}

impl ConfirmResult {
    pub(crate) fn approved(changes: Vec<Change>) -> Self {
        ConfirmResult {
            approved: true,
            reason: None,
            changes,
        }
    }

    pub(crate) fn denied(reason: impl Into<String>) -> Self {
        ConfirmResult {
            approved: false,
            reason: Some(reason.into()),
            changes: Vec::new(),
        }
    }
}

impl fmt::Debug for ConfirmResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfirmResult")
            .field("approved", &self.approved)
            .field("reason", &self.reason)
            .field("changes", &self.changes)
            .finish()
    }
}

/// The app's inline confirmation path: shown a [`ConfirmRequest`], it answers with
/// a [`Decision`] when the user has decided.
///
/// Any `Fn(ConfirmRequest) -> impl Future<Output = Decision>` closure is a handler;
/// [`ConfirmQueue::handler`] gives one that a UI renders from.
///
/// To say who decided and whether to remember it, answer with a
/// [`policy::Answer`] (`Decision::approve().by("user-42").remember(For::Session)`):
/// wrap such a closure in [`policy::answering`], or implement
/// [`answer`](Self::answer), which is what the runtime calls.
pub trait ConfirmHandler: Send + Sync + 'static {
    /// Ask the user; resolve with their decision.
    fn confirm(&self, request: ConfirmRequest) -> BoxFuture<'static, Decision>;

    /// Ask the user; resolve with their decision, who made it and whether to
    /// remember it. What the runtime calls; by default the [`confirm`](Self::confirm)
    /// decision with neither.
    fn answer(&self, request: ConfirmRequest) -> BoxFuture<'static, policy::Answer> {
        let decision = self.confirm(request);
        Box::pin(async move { policy::Answer::from(decision.await) })
    }
}

impl<F, Fut> ConfirmHandler for F
where
    F: Fn(ConfirmRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    fn confirm(&self, request: ConfirmRequest) -> BoxFuture<'static, Decision> {
        Box::pin(self(request))
    }
}

/// A new confirmation id: 16 bytes from the OS random source, hex-encoded.
///
/// The bytes are taken from a per-thread buffer filled by one `getrandom` call per
/// 16 ids (the syscall, not the bytes, is what costs): every id is still 128 bits
/// the OS handed out, used once. A child process made by `fork` without `exec`
/// would share the parent's unused buffer; Rust programs that fork do so through
/// `std::process::Command`, which execs.
pub(crate) fn new_confirm_id() -> String {
    let hex = confirm_id_hex();
    String::from(id_text(&hex))
}

/// A confirmation's id as this process holds it: one made here ([`ConfirmId::new`])
/// is its 32 hex digits, inline (no allocation); any other text (an id read back
/// from a store) is shared. Compared, hashed and borrowed (`Borrow<[u8]>`) as its
/// bytes, so either form finds the other.
#[derive(Clone)]
pub(crate) struct ConfirmId(IdText);

#[derive(Clone)]
enum IdText {
    Made(Hex),
    Other(std::sync::Arc<str>),
}

/// The 32 digits, word-aligned: `str::from_utf8` checks aligned ASCII a word at a
/// time (unaligned, byte by byte: four times the instructions).
#[derive(Clone)]
#[repr(align(8))]
struct Hex([u8; 32]);

impl ConfirmId {
    /// A new id, as [`new_confirm_id`] makes one.
    pub(crate) fn new() -> ConfirmId {
        ConfirmId(IdText::Made(Hex(confirm_id_hex())))
    }

    /// `text`, as an id.
    pub(crate) fn from_text(text: &str) -> ConfirmId {
        ConfirmId(IdText::Other(std::sync::Arc::from(text)))
    }

    /// The id's text.
    pub(crate) fn as_str(&self) -> &str {
        match &self.0 {
            IdText::Made(hex) => id_text(&hex.0),
            IdText::Other(text) => text,
        }
    }

    /// The id's text as bytes (what it is compared and hashed by).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            IdText::Made(hex) => &hex.0,
            IdText::Other(text) => text.as_bytes(),
        }
    }
}

impl std::ops::Deref for ConfirmId {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for ConfirmId {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for ConfirmId {}

impl std::hash::Hash for ConfirmId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl fmt::Display for ConfirmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ConfirmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// The id's text: ASCII hex digits only.
fn id_text(hex: &[u8; 32]) -> &str {
    std::str::from_utf8(hex).unwrap_or_default()
}

/// 128 random bits as 32 lowercase hex digits (see [`new_confirm_id`]).
fn confirm_id_hex() -> [u8; 32] {
    use std::cell::RefCell;
    const IDS_PER_FILL: usize = 16;
    struct Pool {
        bytes: [u8; 16 * IDS_PER_FILL],
        next: usize,
    }
    thread_local! {
        static POOL: RefCell<Pool> = const {
            RefCell::new(Pool { bytes: [0; 16 * IDS_PER_FILL], next: IDS_PER_FILL })
        };
    }
    let mut bytes = [0u8; 16];
    let drawn = POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        if pool.next == IDS_PER_FILL {
            if getrandom::fill(&mut pool.bytes).is_err() {
                return false;
            }
            pool.next = 0;
        }
        let at = pool.next * 16;
        bytes.copy_from_slice(&pool.bytes[at..at + 16]);
        // Never hand the same bytes out twice.
        pool.bytes[at..at + 16].fill(0);
        pool.next += 1;
        true
    });
    if !drawn {
        // The OS random source failed: fall back to a process-unique value mixed
        // with the time, still never reused within this process.
        use std::sync::atomic::{AtomicU64, Ordering};
        static FALLBACK: AtomicU64 = AtomicU64::new(0);
        let n = FALLBACK.fetch_add(1, Ordering::Relaxed);
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        bytes[8..].copy_from_slice(&(t as u64).to_le_bytes());
        tracing::error!(target: "toolmark", "the OS random source failed; confirmation ids are predictable");
    }
    hex32(bytes)
}

/// 16 bytes as 32 lowercase hex digits, in order, four bytes at a time (a table
/// lookup per digit cost twice as many instructions per id).
fn hex32(bytes: [u8; 16]) -> [u8; 32] {
    let mut hex = [0u8; 32];
    for (quad, out) in bytes.chunks_exact(4).zip(hex.chunks_exact_mut(8)) {
        let word = u32::from_be_bytes([quad[0], quad[1], quad[2], quad[3]]);
        out.copy_from_slice(&crate::hex::hex8(word).to_be_bytes());
    }
    hex
}

/// The dotted paths at which `a` and `b` differ (for auditing edits: paths only).
pub(crate) fn diff_paths(a: &Value, b: &Value) -> Vec<String> {
    fn walk(a: &Value, b: &Value, at: &mut Vec<String>, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, va) in x {
                    at.push(k.clone());
                    match y.get(k) {
                        Some(vb) => walk(va, vb, at, out),
                        None => out.push(at.join(".")),
                    }
                    at.pop();
                }
                for k in y.keys().filter(|k| !x.contains_key(*k)) {
                    at.push(k.clone());
                    out.push(at.join("."));
                    at.pop();
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                    at.push(i.to_string());
                    walk(va, vb, at, out);
                    at.pop();
                }
            }
            (x, y) if x == y => {}
            _ => out.push(at.join(".")),
        }
    }
    let mut out = Vec::new();
    walk(a, b, &mut Vec::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::{hex32, new_confirm_id, ConfirmId};

    /// The reference: one table lookup per digit.
    fn hex_by_table(bytes: [u8; 16]) -> [u8; 32] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0u8; 32];
        for (i, b) in bytes.into_iter().enumerate() {
            hex[2 * i] = HEX[usize::from(b >> 4)];
            hex[2 * i + 1] = HEX[usize::from(b & 0x0f)];
        }
        hex
    }

    #[test]
    fn ids_are_the_bytes_in_lowercase_hex_in_order() {
        let bytes: [u8; 16] = [
            0x00, 0x01, 0x09, 0x0a, 0x0f, 0x10, 0x90, 0x9f, 0xa0, 0xaf, 0xf0, 0xff, 0x12, 0x34,
            0xcd, 0xef,
        ];
        assert_eq!(&hex32(bytes), b"0001090a0f10909fa0aff0ff1234cdef");
        // Every byte value in every position, against the table.
        for b in 0..=255u8 {
            for at in 0..16 {
                let mut bytes = [0x5a; 16];
                bytes[at] = b;
                assert_eq!(hex32(bytes), hex_by_table(bytes), "byte {b:#04x} at {at}");
            }
        }
    }

    #[test]
    fn confirm_ids_are_32_lowercase_hex_digits_and_never_repeat_across_refills() {
        // Both forms draw from the same pool.
        let ids: HashSet<String> = (0..10_000)
            .map(|i| {
                if i % 2 == 0 {
                    new_confirm_id()
                } else {
                    ConfirmId::new().to_string()
                }
            })
            .collect();
        assert_eq!(ids.len(), 10_000);
        for id in &ids {
            assert_eq!(id.len(), 32);
            assert!(id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }

    #[test]
    fn an_id_made_here_and_the_same_text_read_back_are_one_id() {
        use std::collections::HashSet;
        use std::hash::BuildHasher;

        let made = ConfirmId::new();
        let read = ConfirmId::from_text(made.as_str());
        assert_eq!(made, read);
        assert_eq!(made.as_str(), &*read);
        assert_eq!(made.to_string(), read.to_string());
        assert_eq!(format!("{made:?}"), format!("{:?}", made.as_str()));
        let hash = |id: &ConfirmId| rustc_hash::FxBuildHasher.hash_one(id);
        assert_eq!(hash(&made), hash(&read));
        // Hashed as the bytes it is looked up by.
        assert_eq!(
            hash(&made),
            rustc_hash::FxBuildHasher.hash_one(made.as_bytes())
        );
        assert_ne!(made, ConfirmId::new());
        assert_ne!(read, ConfirmId::from_text("other"));
        let ids: HashSet<ConfirmId> = [made.clone(), read, ConfirmId::new()].into();
        assert_eq!(ids.len(), 2);
    }

    #[test]
    fn confirm_ids_of_different_threads_differ() {
        let a: Vec<String> = std::thread::spawn(|| (0..64).map(|_| new_confirm_id()).collect())
            .join()
            .unwrap();
        let b: Vec<String> = (0..64).map(|_| new_confirm_id()).collect();
        assert!(a.iter().all(|id| !b.contains(id)));
    }
}
