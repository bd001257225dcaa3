//! Opening a sealed confirmation record, as `confirm_pending` does with what a
//! store hands back: any bytes are refused without a panic; a genuine record
//! opens; one with any byte of its seal, its id, its caller or its expiry
//! changed never does.
//!
//! Run: `cargo +nightly fuzz run seal_open -- -max_total_time=60`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use toolmark::__fuzz_seal::{open_record, seal_record, SUMMARY_CHARS};

const KEY: [u8; 32] = *b"fuzz-key-fuzz-key-fuzz-key-fuzz!";
const ID: &str = "0123456789abcdef0123456789abcdef";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Anything a store could hand back: refused (forging a seal is out of reach),
    // never a panic.
    assert!(open_record(&KEY, &text).is_none());
    if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
        if v.is_object() {
            v["id"] = json!(ID);
            assert!(open_record(&KEY, &v.to_string()).is_none());
        }
    }

    // A genuine record carrying the input opens, under its key only (its summary
    // as a genuine one is: at most SUMMARY_CHARS characters).
    let summary: String = text.chars().take(SUMMARY_CHARS).collect();
    let Some(record) = seal_record(&KEY, ID, &summary, json!({ "note": text })) else {
        return;
    };
    assert_eq!(open_record(&KEY, &record).as_deref(), Some(&*summary));
    let mut other = KEY;
    other[0] ^= 1;
    assert!(open_record(&other, &record).is_none());

    // One character of the seal, the id, the caller or the expiry changed: refused.
    let v: Value = serde_json::from_str(&record).unwrap();
    let pick = data.first().copied().unwrap_or(0) as usize;
    let at = data.len().wrapping_mul(31).wrapping_add(pick);
    let sealed = v["sealed"].as_str().unwrap();
    let i = at % sealed.len();
    let mut b = sealed.as_bytes().to_vec();
    b[i] = if b[i] == b'a' { b'b' } else { b'a' };
    let changed_seal = String::from_utf8(b).unwrap();
    let mut changed = v.clone();
    changed["sealed"] = json!(changed_seal);
    if changed_seal != sealed {
        assert!(open_record(&KEY, &changed.to_string()).is_none());
    }
    let mut moved = v.clone();
    moved["id"] = json!(format!("{}{}", &ID[..31], if pick % 2 == 0 { "0" } else { "e" }));
    assert!(open_record(&KEY, &moved.to_string()).is_none());
    let mut caller = v.clone();
    caller["caller"] = json!(["human", "mcp", "webmcp", "tour", "test"][pick % 5]);
    assert!(open_record(&KEY, &caller.to_string()).is_none());
    let mut later = v;
    later["expiresMs"] = json!(later["expiresMs"].as_u64().unwrap() + 1 + pick as u64);
    assert!(open_record(&KEY, &later.to_string()).is_none());
});
