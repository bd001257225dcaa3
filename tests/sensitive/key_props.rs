//! Property: random inputs carrying a distinctive secret under keys the input
//! schema does not list (serde aliases, case variants, random extra keys, at any
//! depth), against inputs shaped by `alias`, `flatten`, internally and externally
//! tagged and untagged enums, `default` fields and structs without
//! `deny_unknown_fields` → the secret appears in no outcome, pending list,
//! confirmation request, event, bridge message, summary, `Debug` or tracing output.

use proptest::prelude::*;
use serde_json::{json, Value};
use toolmark::{Caller, Effect, ToolSpec, Toolmark};

use crate::capture::Capture;
use crate::keys::Observed;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Card {
    holder: String,
    #[serde(alias = "cvv")]
    cvc: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Flat {
    id: String,
    #[serde(flatten)]
    card: Card,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
#[serde(tag = "kind")]
enum Internal {
    Card {
        #[serde(alias = "cvv")]
        cvc: String,
    },
    Cash {
        note: String,
    },
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
enum External {
    Card {
        #[serde(alias = "cvv")]
        cvc: String,
    },
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
#[serde(untagged)]
enum Untagged {
    Card {
        #[serde(alias = "cvv")]
        cvc: String,
    },
    Token {
        token: String,
    },
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Tagged<T> {
    name: String,
    pay: T,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Defaults {
    name: String,
    #[serde(default, alias = "Cvc", alias = "CVC")]
    cvc: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Wallet {
    name: String,
    cards: Vec<Card>,
}

/// A consequential tool over `T` whose error message quotes everything it decoded.
fn shape<T>(name: &str, sensitive: &str) -> ToolSpec
where
    T: std::fmt::Debug + serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
{
    ToolSpec::typed(name, "Pay", |_ctx, input: T| async move {
        Err::<Value, _>(toolmark::ToolError::new(format!("declined: {input:?}")))
    })
    .effect(Effect::Consequential)
    .sensitive([sensitive])
    .summary("Pay {name}")
}

/// Each shape: its tool name and a valid input whose secrets sit at sensitive paths.
fn shapes() -> Vec<(&'static str, Value)> {
    vec![
        ("alias", json!({"holder": "Ada", "cvc": "c"})),
        ("flat", json!({"id": "1", "holder": "Ada", "cvc": "c"})),
        (
            "internal",
            json!({"name": "n", "pay": {"kind": "Card", "cvc": "c"}}),
        ),
        (
            "external",
            json!({"name": "n", "pay": {"Card": {"cvc": "c"}}}),
        ),
        ("untagged", json!({"name": "n", "pay": {"cvc": "c"}})),
        ("defaults", json!({"name": "n"})),
        (
            "wallet",
            json!({"name": "n", "cards": [{"holder": "a", "cvc": "c"}, {"holder": "b", "cvc": "d"}]}),
        ),
    ]
}

fn toolmark(b: toolmark::ToolmarkBuilder, allow_unknown: bool) -> Toolmark {
    let tm = b.allow_unknown_fields(allow_unknown).build().unwrap();
    let specs = [
        shape::<Card>("alias", "cvc"),
        shape::<Flat>("flat", "cvc"),
        shape::<Tagged<Internal>>("internal", "pay.cvc"),
        shape::<Tagged<External>>("external", "pay.Card.cvc"),
        shape::<Tagged<Untagged>>("untagged", "pay.cvc"),
        shape::<Defaults>("defaults", "cvc"),
        shape::<Wallet>("wallet", "cards[].cvc"),
    ];
    for spec in specs {
        tm.register(spec, Default::default()).unwrap();
    }
    tm
}

/// Every property name any shape lists: extra keys are never one of these.
const LISTED: [&str; 12] = [
    "holder", "cvc", "id", "kind", "note", "name", "pay", "Card", "Cash", "token", "cards",
    "summary",
];

fn extra_key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("cvv".to_owned()),
        Just("Cvc".to_owned()),
        Just("CVC".to_owned()),
        Just("cVc".to_owned()),
        Just("Holder".to_owned()),
        "[a-zA-Z_]{1,7}".prop_filter("not a listed name", |k| !LISTED.contains(&k.as_str())),
    ]
}

/// The JSON pointers of every object inside `v`.
fn objects(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            out.push(at.clone());
            for (k, c) in map {
                objects(c, format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, c) in items.iter().enumerate() {
                objects(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, .. ProptestConfig::default() })]

    #[test]
    fn no_secret_under_an_unlisted_key_reaches_anyone(
        which in any::<prop::sample::Index>(),
        extras in prop::collection::vec((extra_key(), any::<prop::sample::Index>()), 1..4),
        tag in 0u32..1_000_000,
        allow_unknown in any::<bool>(),
        deferred in any::<bool>(),
    ) {
        let all = shapes();
        let (name, mut input) = all[which.index(all.len())].clone();
        let secret = format!("ZQ{tag}SECRET");
        for (key, place) in &extras {
            let mut at = Vec::new();
            objects(&input, String::new(), &mut at);
            let pointer = &at[place.index(at.len())];
            input
                .pointer_mut(pointer)
                .and_then(Value::as_object_mut)
                .unwrap()
                .insert(key.clone(), json!(secret));
        }
        let (capture, logs) = Capture::new();
        let _guard = crate::logs::scoped(capture);
        let mut seen = Observed::new(logs, |b| toolmark(b, allow_unknown));
        let caller = if deferred { Caller::InApp } else { Caller::Mcp };
        let out = rt().block_on(seen.call(name, input.clone(), caller));
        prop_assert_eq!(out.refusal_code(), Some(toolmark::RefusalCode::Invalid), "{:?} {}", out, input);
        let text = seen.all();
        prop_assert!(!text.contains(&secret), "{} leaked for {}: {}", secret, input, text);
    }
}
