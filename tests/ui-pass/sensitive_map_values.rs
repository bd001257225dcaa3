//! `[]` in a sensitive path also steps into every value of a map (`HashMap`,
//! `BTreeMap`, `serde_json::Map`), `Option` around the map or its values included.
use std::collections::{BTreeMap, HashMap};

use toolmark::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Card {
    number: String,
    cvc: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wallets {
    wallet: HashMap<String, Card>,
    sorted: BTreeMap<String, Option<Card>>,
    maybe: Option<HashMap<String, Vec<Card>>>,
    pins: HashMap<String, String>,
    raw: serde_json::Map<String, serde_json::Value>,
}

#[tool(
    consequential,
    sensitive = ["wallet[].cvc", "sorted[].cvc", "maybe[][].cvc", "pins[]", "raw[]"]
)]
async fn pay(input: Wallets) -> usize {
    input.wallet.len() + input.sorted.len() + input.pins.len() + input.raw.len()
}

/// Plain arguments: the map is an argument.
#[tool(consequential, sensitive = "cards[].cvc")]
async fn pay_args(cards: BTreeMap<String, Card>) -> usize {
    cards.values().map(|c| c.number.len()).sum()
}

fn main() {
    let _ = (pay, pay_args);
}
