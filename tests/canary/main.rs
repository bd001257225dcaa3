//! The secret canary, as a property test: each case plants fresh marked secrets
//! (whole, as substrings, with characters escaping changes; under the sensitive
//! key, a serde alias, a case variant, an unknown key, a map key, a row; in form
//! and wizard state), drives one surface end to end, and fails if any part of a
//! secret appears in anything an observer can read: outcomes, bridge messages,
//! events, the pending list, what a confirm handler is shown, log messages,
//! provider results and messages, recorded span fields, and every `tracing` event
//! and span at TRACE.
//!
//! `core_surfaces` runs 10,000 cases over the in-process surfaces (core calls by
//! every caller, forms, wizards, the agent runner on all four providers with
//! `record_io`); the expensive surfaces run fewer cases each: the one deferred
//! flow over a `MemoryStore` shared by two instances (`stores`: every byte the
//! store is handed), WebMCP through its router (feature `webmcp`), MCP over stdio
//! and HTTP (feature `mcp`), rig (feature `rig`), the Redis store and its pub/sub
//! (feature `redis`; reported ignored without Redis, run in CI). `CANARY_CASES`
//! overrides the number of cases of every property test.

#[path = "../support/canary.rs"]
mod canary;
#[path = "../support/external.rs"]
mod external;
#[path = "../support/logs.rs"]
mod logs;

mod app;
mod core;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "rig")]
mod rig;
mod stores;
#[cfg(feature = "webmcp")]
mod webmcp;

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use crate::canary::Canary;

/// Where a planted secret goes, and how it looks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plant {
    /// The canary's seed.
    pub(crate) seed: u64,
    /// The secret's kind ([`Canary::variant`]).
    pub(crate) kind: u8,
    /// How it sits in its value ([`Canary::embedded`]).
    pub(crate) embed: u8,
    /// Under which key of the input ([`Plant::cvc_key`]).
    pub(crate) key: u8,
    /// Which caller, provider or mode (per surface).
    pub(crate) pick: u8,
}

impl Plant {
    /// The key the cvc is sent under: the declared one, the serde alias, a case
    /// variant, or a key the schema does not list.
    pub(crate) fn cvc_key(self) -> &'static str {
        ["cvc", "security_code", "CVC", "cvv", "Security_Code"][usize::from(self.key) % 5]
    }

    /// A canary and a fresh secret as this plant says.
    pub(crate) fn canary(self) -> (Canary, String) {
        let mut c = Canary::with_seed(self.seed);
        let s = c.variant(self.kind);
        (c, Canary::embedded(&s, self.embed))
    }

    /// The `vault.pay` input with `cvc` under this plant's key and `number` in a
    /// row (under `number` or its alias `pan`).
    pub(crate) fn pay_input(self, holder: &str, cvc: &str, number: &str) -> Value {
        let mut input = Map::new();
        input.insert("holder".into(), json!(holder));
        input.insert(self.cvc_key().into(), json!(cvc));
        let row_key = if self.key.is_multiple_of(2) {
            "number"
        } else {
            "pan"
        };
        input.insert(
            "cards".into(),
            json!([{"label": "main", row_key: number}, {"label": "spare", "number": number}]),
        );
        Value::Object(input)
    }
}

pub(crate) fn plants() -> impl Strategy<Value = Plant> {
    (any::<u64>(), 0u8..4, 0u8..4, 0u8..5, any::<u8>()).prop_map(
        |(seed, kind, embed, key, pick)| Plant {
            seed,
            kind,
            embed,
            key,
            pick,
        },
    )
}

/// A proptest runner of `cases` cases (`CANARY_CASES` overrides `default`),
/// without a regressions file (the failing case is printed).
pub(crate) fn runner(default: u32) -> proptest::test_runner::TestRunner {
    let cases = std::env::var("CANARY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    })
}

/// Without Redis the Redis canary is reported ignored, never `ok`; the in-process
/// surfaces always run.
#[test]
fn the_redis_canary_is_reported_ignored_unless_redis_is_expected() {
    let redis: &[&str] = if cfg!(feature = "redis") {
        &[
            "redis::redis_store_and_pub_sub",
            "redis::redis_records_while_pending",
        ]
    } else {
        &[]
    };
    external::assert_ignored_unless_expected(cfg!(toolmark_client = "redis"), redis);
    let ignored = external::ignored_tests();
    assert!(
        !ignored.iter().any(|t| !t.starts_with("redis::")),
        "{ignored:?}"
    );
}
