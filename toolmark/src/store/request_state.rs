//! The `requestState` of an MCP multi round-trip request (`toolmark::mcp`): a
//! handle to a deferred confirmation, never its content. The confirm id and its
//! expiry, sealed whole by the toolmark's one seal, with its purpose and the call
//! (the tool's name, the caller, the arguments as canonical JSON) as associated
//! data: it opens for that call only.
//!
//! Apart from the MCP server (which uses it) so that the `fuzz` feature's target
//! builds it without rmcp.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{call_binding, Purpose, Sealer};

/// The sealed content of a `requestState`.
#[derive(Serialize, Deserialize)]
pub(crate) struct Handle {
    /// The pending confirmation's id.
    pub(crate) id: String,
    /// Its expiry, in milliseconds since the Unix epoch.
    pub(crate) exp: u64,
}

pub(crate) fn seal_handle(
    sealer: &Sealer,
    tool: &str,
    principal: &str,
    args: &Value,
    id: &str,
    exp: u64,
) -> Option<String> {
    let plain = serde_json::to_vec(&Handle {
        id: id.to_owned(),
        exp,
    })
    .ok()?;
    sealer.seal(
        Purpose::RequestState,
        &call_binding(tool, principal, args),
        &plain,
    )
}

pub(crate) fn open_handle(
    sealer: &Sealer,
    tool: &str,
    principal: &str,
    args: &Value,
    text: &str,
) -> Option<Handle> {
    let plain = sealer.open(
        Purpose::RequestState,
        &call_binding(tool, principal, args),
        text,
    )?;
    serde_json::from_slice(&plain).ok()
}

/// The entry point of the `mrtr_handle` fuzz target (feature `fuzz`), through
/// `toolmark::__fuzz::check_mrtr_handle`.
#[cfg(feature = "fuzz")]
pub(crate) mod fuzz {
    use super::{call_binding, open_handle, seal_handle, Purpose, Sealer};
    use serde_json::{json, Value};

    const KEY: [u8; 32] = *b"fuzz-key-fuzz-key-fuzz-key-fuzz!";

    /// Target `mrtr_handle`: the fuzzer's bytes as the call a `requestState` comes
    /// with (line 1: the tool; line 2: the caller; line 3: the arguments, JSON)
    /// and as the `requestState` itself (the rest, and the whole). Anything a
    /// client sends is refused without a panic (forging a seal is out of reach);
    /// a genuine handle opens for its call only, with the id and expiry sealed in
    /// it, and not with any byte changed, cut short, under another key or as
    /// another purpose.
    pub fn check_handle(data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        let mut lines = text.splitn(4, '\n');
        let tool = lines.next().unwrap_or_default();
        let principal = lines.next().unwrap_or_default();
        let args = lines
            .next()
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .unwrap_or_else(|| json!({ "note": text }));
        let rest = lines.next().unwrap_or_default();
        let s = Sealer::new(&KEY);
        for sent in [rest, &*text] {
            assert!(open_handle(&s, tool, principal, &args, sent).is_none());
        }

        let id: String = data.iter().take(16).map(|b| format!("{b:02x}")).collect();
        let exp = u64::try_from(data.len())
            .unwrap_or(u64::MAX)
            .wrapping_mul(7919);
        let Some(handle) = seal_handle(&s, tool, principal, &args, &id, exp) else {
            return;
        };
        // The handle is the seal's text: nothing of the call in clear.
        assert!(handle.bytes().all(|b| b.is_ascii_hexdigit() || b == b':'));
        let opened =
            open_handle(&s, tool, principal, &args, &handle).expect("a genuine handle opens");
        assert_eq!((opened.id.as_str(), opened.exp), (id.as_str(), exp));

        // Bound to its call: another tool, caller or arguments do not open it.
        let other_tool = format!("{tool}x");
        assert!(open_handle(&s, &other_tool, principal, &args, &handle).is_none());
        let other_caller = format!("{principal}x");
        assert!(open_handle(&s, tool, &other_caller, &args, &handle).is_none());
        let other_args = json!({ "wrapped": args });
        assert!(open_handle(&s, tool, principal, &other_args, &handle).is_none());
        // One seal, purposes apart: not as a tool's questions' state, not under
        // another key.
        let binding = call_binding(tool, principal, &args);
        assert!(s.open(Purpose::ElicitState, &binding, &handle).is_none());
        assert!(open_handle(&Sealer::new(&[9; 32]), tool, principal, &args, &handle).is_none());

        // Any byte changed, or cut short: refused.
        let at = data.first().map_or(0, |b| usize::from(*b)) % handle.len();
        let mut changed = handle.clone().into_bytes();
        changed[at] = if changed[at] == b'0' { b'1' } else { b'0' };
        let changed = String::from_utf8(changed).expect("hex stays text");
        assert!(open_handle(&s, tool, principal, &args, &changed).is_none());
        assert!(open_handle(&s, tool, principal, &args, &handle[..at]).is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The `mrtr_handle` fuzz target's entry on a few seeds (the fuzzer runs it
    /// on many more in `.ci/run`).
    #[cfg(feature = "fuzz")]
    #[test]
    fn the_fuzz_entry_holds_on_seeds() {
        for seed in [
            &b""[..],
            b"pay.send\nBearer t\n{\"to\":\"ada\",\"card\":\"4111\"}\n1:00:00",
            b"\n\n[1,2,{\"b\":1,\"a\":[]}]\n",
            b"t\0x\n\0\nnull",
            "é\n✓\n\"q\"".as_bytes(),
        ] {
            fuzz::check_handle(seed);
        }
    }

    #[test]
    fn a_handle_opens_only_with_its_tool_caller_and_arguments() {
        let s = Sealer::new(&[3; 32]);
        let args = json!({"to": "zora", "card": "4111-SECRET", "n": [1, {"b": 1, "a": 2}]});
        let h = seal_handle(&s, "pay.send", "Bearer x", &args, "id-xyz", 42).unwrap();
        // The handle is lowercase hex: any of these would be the plain text showing
        // through (hex digits alone could turn up by chance).
        assert!(!h.contains("SECRET") && !h.contains("xyz") && !h.contains("zora"));
        let same_other_order =
            json!({"n": [1, {"a": 2, "b": 1}], "card": "4111-SECRET", "to": "zora"});
        let opened = open_handle(&s, "pay.send", "Bearer x", &same_other_order, &h).unwrap();
        assert_eq!((opened.id.as_str(), opened.exp), ("id-xyz", 42));
        assert!(
            open_handle(&s, "pay.other", "Bearer x", &args, &h).is_none(),
            "other tool"
        );
        assert!(
            open_handle(&s, "pay.send", "Bearer y", &args, &h).is_none(),
            "other caller"
        );
        let other = json!({"to": "eve", "card": "4111-SECRET", "n": [1, {"b": 1, "a": 2}]});
        assert!(
            open_handle(&s, "pay.send", "Bearer x", &other, &h).is_none(),
            "other args"
        );
        assert!(open_handle(&Sealer::new(&[4; 32]), "pay.send", "Bearer x", &args, &h).is_none());
        let mut t = h.into_bytes();
        let last = t.len() - 1;
        t[last] = if t[last] == b'0' { b'1' } else { b'0' };
        let t = String::from_utf8(t).unwrap();
        assert!(
            open_handle(&s, "pay.send", "Bearer x", &args, &t).is_none(),
            "tampered"
        );
    }
}
