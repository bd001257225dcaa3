//! The one seal: every byte a confirmation store holds or publishes — a
//! confirmation record (the tombstone of a used one holds it too), a remembered
//! decision, a bridge message — is made here, and nothing read back from a store
//! is trusted unless it opens here. The MCP server's bytes go through it too: a
//! multi round-trip request's `requestState`, an approval page's token and the
//! decision made there, a task's state (`mcp/mrtr.rs`, `mcp/approval.rs`,
//! `mcp/tasks.rs`), and a shared scope's state (`store/scopes.rs`), each under a
//! purpose of its own and bound to what it belongs
//! to (for a `requestState`: the tool, the caller and the arguments,
//! [`call_binding`]).
//!
//! AES-256-GCM (RustCrypto `aes-gcm`) under the app's 32-byte key, a fresh 96-bit
//! random nonce per seal, and associated data that names the format version, the
//! purpose and the storage key the bytes live under
//! (`toolmark␀1␀record␀<confirm id>`). So a sealed value opens only where it was
//! written: a record copied onto another id, two keys' values swapped, a decision
//! moved to another tool or caller, a bridge message passed off as another id's,
//! or any byte changed, does not open.
//!
//! Text form: `1:<nonce hex>:<ciphertext and tag hex>`.

use std::sync::{Arc, OnceLock};

use aes_gcm::aead::{Aead, AeadInPlace, Payload};
use aes_gcm::{Aes256Gcm, KeyInit};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The format version, in the text form and in the associated data.
const VERSION: &str = "1";

/// What a sealed value is: part of the associated data, so a value sealed for one
/// purpose never opens as another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))] // the MCP server's purposes
pub(crate) enum Purpose {
    /// A deferred confirmation record, under its confirm id.
    Record,
    /// A remembered decision, under `{caller}:{tool}`.
    Decision,
    /// A bridge message, under its confirm id.
    Bridge,
    /// An MCP multi round-trip request's `requestState` for a confirmation (a
    /// handle: the confirm id and its expiry), under the call it belongs to
    /// (tool, caller, canonical arguments: see [`call_binding`]). Not stored:
    /// the client carries it.
    RequestState,
    /// An MCP multi round-trip request's `requestState` for a tool's own
    /// questions (`ctx.elicit`: the answers so far), under the call it belongs to.
    ElicitState,
    /// An approval page's one-time token (the confirm id and its expiry). Not
    /// stored: the person's browser carries it; the binding is the confirmation
    /// it names, which must still be pending.
    ApprovalToken,
    /// The decision a person made on the approval page, under `approval:<confirm id>`.
    ApprovalDecision,
    /// An MCP task's state, under `task:<task id>` and the caller it belongs to.
    Task,
    /// A `tasks/cancel` left for the instance running the task, under
    /// `task-cancel:<task id>` and the caller.
    TaskCancel,
    /// A shared scope's state (its path, sequence number and `when` flag), kept
    /// in the store and carried on its bus, under `scope:<path>`.
    ScopeState,
}

impl Purpose {
    fn name(self) -> &'static str {
        match self {
            Purpose::Record => "record",
            Purpose::Decision => "decision",
            Purpose::Bridge => "bridge",
            Purpose::RequestState => "request-state",
            Purpose::ElicitState => "elicit-state",
            Purpose::ApprovalToken => "approval-token",
            Purpose::ApprovalDecision => "approval-decision",
            Purpose::Task => "task",
            Purpose::TaskCancel => "task-cancel",
            Purpose::ScopeState => "scope-state",
        }
    }
}

/// The binding of what a client carries for one call (an MCP `requestState`):
/// the tool, the caller and the arguments as canonical JSON (object keys sorted),
/// NUL-separated. The arguments come last, and a tool name or an HTTP header
/// never holds a NUL, so two different calls never share a binding.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn call_binding(tool: &str, principal: &str, args: &serde_json::Value) -> String {
    let mut text = String::with_capacity(64);
    text.push_str(tool);
    text.push('\0');
    text.push_str(principal);
    text.push('\0');
    canonical(args, &mut text);
    text
}

/// JSON with every object's keys sorted: the same arguments give the same bytes
/// whatever order the client sent them in.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
fn canonical(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The app's key, ready to seal and open.
#[derive(Clone)]
pub(crate) struct Sealer {
    cipher: Arc<Aes256Gcm>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    let mut out = vec![0u8; b.len() / 2];
    crate::hex::decode_into(b, &mut out).then_some(out)
}

/// The associated data: version, purpose and storage key, each NUL-terminated
/// but the last (a purpose never holds a NUL, so the split is unambiguous).
fn aad(purpose: Purpose, key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + key.len());
    out.extend_from_slice(b"toolmark\0");
    out.extend_from_slice(VERSION.as_bytes());
    out.push(0);
    out.extend_from_slice(purpose.name().as_bytes());
    out.push(0);
    out.extend_from_slice(key.as_bytes());
    out
}

impl Sealer {
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        Sealer {
            cipher: Arc::new(Aes256Gcm::new(key.into())),
        }
    }

    /// A key drawn once per process from the OS random source: what a
    /// confirmation store that does not outlive the process seals with when the
    /// app gives no key. `None` when the random source fails.
    pub(crate) fn process() -> Option<Self> {
        static KEY: OnceLock<Option<[u8; 32]>> = OnceLock::new();
        let key = KEY.get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).ok().map(|()| key)
        });
        key.as_ref().map(Sealer::new)
    }

    /// `plain` sealed for `purpose` under the storage key `key`. `None` only when
    /// the OS random source fails.
    pub(crate) fn seal(&self, purpose: Purpose, key: &str, plain: &[u8]) -> Option<String> {
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).ok()?;
        let ct = self
            .cipher
            .encrypt(
                (&nonce).into(),
                Payload {
                    msg: plain,
                    aad: &aad(purpose, key),
                },
            )
            .ok()?;
        // Written as bytes (ASCII only), read as text once at the end.
        let mut text = Vec::with_capacity(VERSION.len() + 2 + 2 * (nonce.len() + ct.len()));
        text.extend_from_slice(VERSION.as_bytes());
        text.push(b':');
        crate::hex::encode_into(&mut text, &nonce);
        text.push(b':');
        crate::hex::encode_into(&mut text, &ct);
        String::from_utf8(text).ok()
    }

    /// What `text` holds, when it was sealed under this key for `purpose` under
    /// the storage key `key`, unchanged; `None` otherwise.
    pub(crate) fn open(&self, purpose: Purpose, key: &str, text: &str) -> Option<Vec<u8>> {
        let rest = text.strip_prefix(VERSION)?.strip_prefix(':')?;
        let (nonce, ct) = rest.split_once(':')?;
        let mut n = [0u8; 12];
        if !crate::hex::decode_into(nonce.as_bytes(), &mut n) {
            return None;
        }
        // Opened where it was read into: the tag is cut off, no second buffer.
        let mut buf = unhex(ct)?;
        self.cipher
            .decrypt_in_place((&n).into(), &aad(purpose, key), &mut buf)
            .ok()?;
        Some(buf)
    }

    /// `value` as JSON, sealed (see [`seal`](Self::seal)).
    pub(crate) fn seal_json<T: Serialize>(
        &self,
        purpose: Purpose,
        key: &str,
        value: &T,
    ) -> Option<String> {
        let plain = serde_json::to_vec(value).ok()?;
        self.seal(purpose, key, &plain)
    }

    /// A value sealed with [`seal_json`](Self::seal_json), opened and read back.
    pub(crate) fn open_json<T: DeserializeOwned>(
        &self,
        purpose: Purpose,
        key: &str,
        text: &str,
    ) -> Option<T> {
        serde_json::from_slice(&self.open(purpose, key, text)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_under_its_purpose_and_key_only() {
        let s = Sealer::new(&[7; 32]);
        let text = s.seal(Purpose::Record, "a", b"CVC-123").unwrap();
        assert!(!text.contains("CVC"));
        assert_eq!(s.open(Purpose::Record, "a", &text).unwrap(), b"CVC-123");
        assert!(s.open(Purpose::Record, "b", &text).is_none(), "another key");
        assert!(
            s.open(Purpose::Bridge, "a", &text).is_none(),
            "another purpose"
        );
        assert!(
            Sealer::new(&[8; 32])
                .open(Purpose::Record, "a", &text)
                .is_none(),
            "another seal key"
        );
        for i in 0..text.len() {
            let mut changed = text.clone().into_bytes();
            changed[i] = if changed[i] == b'0' { b'1' } else { b'0' };
            let changed = String::from_utf8(changed).unwrap();
            if changed != text {
                assert!(s.open(Purpose::Record, "a", &changed).is_none(), "byte {i}");
            }
        }
        assert!(s
            .open(Purpose::Record, "a", &text[..text.len() - 2])
            .is_none());
        assert!(s.open(Purpose::Record, "a", "").is_none());
    }

    #[test]
    fn hex_reads_back_lowercase_hex_of_the_exact_length_only() {
        let all: Vec<u8> = (0..=255).collect();
        let mut text = Vec::new();
        crate::hex::encode_into(&mut text, &all);
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.len(), 512);
        assert_eq!(unhex(&text).unwrap(), all);
        assert_eq!(&text[..8], "00010203");
        assert!(unhex(&text.to_uppercase()).is_none(), "uppercase");
        assert!(unhex(&text[..511]).is_none(), "odd length");
        for bad in ["0g", "g0", " 0", "0:", "\u{e9}"] {
            assert!(unhex(bad).is_none(), "{bad:?}");
        }
        assert_eq!(unhex("").unwrap(), Vec::<u8>::new());
        let mut nonce = [0u8; 2];
        assert!(crate::hex::decode_into(b"abcd", &mut nonce));
        assert_eq!(nonce, [0xab, 0xcd]);
        assert!(!crate::hex::decode_into(b"abcdef", &mut nonce), "too long");
        assert!(!crate::hex::decode_into(b"ab", &mut nonce), "too short");
    }

    #[test]
    fn a_key_that_only_extends_another_does_not_open_it() {
        // The storage key is the last part of the associated data: "ab" is not "a"
        // followed by anything else.
        let s = Sealer::new(&[7; 32]);
        let text = s.seal(Purpose::Decision, "mcp:a", b"x").unwrap();
        assert!(s.open(Purpose::Decision, "mcp:ab", &text).is_none());
        assert!(s.open(Purpose::Decision, "mcp:", &text).is_none());
    }

    #[test]
    fn no_purpose_opens_as_another() {
        let all = [
            Purpose::Record,
            Purpose::Decision,
            Purpose::Bridge,
            Purpose::RequestState,
            Purpose::ElicitState,
            Purpose::ApprovalToken,
            Purpose::ApprovalDecision,
            Purpose::Task,
            Purpose::TaskCancel,
            Purpose::ScopeState,
        ];
        let s = Sealer::new(&[7; 32]);
        for a in all {
            let text = s.seal(a, "k", b"x").unwrap();
            for b in all {
                assert_eq!(s.open(b, "k", &text).is_some(), a == b, "{a:?} as {b:?}");
            }
        }
    }

    #[test]
    fn a_call_binding_is_its_tool_caller_and_arguments_in_any_key_order() {
        let a = call_binding(
            "pay.send",
            "Bearer x",
            &serde_json::json!({"a": 1, "b": {"y": 2, "x": [1, {"q": 0, "p": 1}]}}),
        );
        let b = call_binding(
            "pay.send",
            "Bearer x",
            &serde_json::json!({"b": {"x": [1, {"p": 1, "q": 0}], "y": 2}, "a": 1}),
        );
        assert_eq!(a, b);
        let s = Sealer::new(&[7; 32]);
        let text = s.seal(Purpose::RequestState, &a, b"h").unwrap();
        assert_eq!(s.open(Purpose::RequestState, &b, &text).unwrap(), b"h");
        for other in [
            call_binding(
                "pay.sent",
                "Bearer x",
                &serde_json::json!({"a": 1, "b": {"y": 2, "x": [1, {"q": 0, "p": 1}]}}),
            ),
            call_binding(
                "pay.send",
                "Bearer y",
                &serde_json::json!({"a": 1, "b": {"y": 2, "x": [1, {"q": 0, "p": 1}]}}),
            ),
            call_binding(
                "pay.send",
                "Bearer x",
                &serde_json::json!({"a": 2, "b": {"y": 2, "x": [1, {"q": 0, "p": 1}]}}),
            ),
            call_binding(
                "pay.send",
                "Bearer x",
                &serde_json::json!({"a": 1, "b": {"y": 2, "x": [{"q": 0, "p": 1}, 1]}}),
            ),
        ] {
            assert!(s.open(Purpose::RequestState, &other, &text).is_none());
        }
        assert!(
            s.open(Purpose::ElicitState, &a, &text).is_none(),
            "a confirmation's handle is not a tool's questions' state"
        );
    }

    #[test]
    fn two_seals_of_one_value_differ() {
        let s = Sealer::new(&[7; 32]);
        assert_ne!(
            s.seal(Purpose::Record, "a", b"x"),
            s.seal(Purpose::Record, "a", b"x")
        );
    }

    #[test]
    fn the_process_key_is_one_per_process() {
        let a = Sealer::process().unwrap();
        let b = Sealer::process().unwrap();
        let text = a.seal(Purpose::Record, "k", b"x").unwrap();
        assert_eq!(b.open(Purpose::Record, "k", &text).unwrap(), b"x");
    }
}
