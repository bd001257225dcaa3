#![allow(unused_variables)]

use std::collections::HashMap;

use toolmark::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Card {
    number: String,
    cvc: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wallet {
    cards: HashMap<String, Card>,
}

// `[]` after the map's values (a struct, neither a sequence nor a map).
#[tool(sensitive = "cards[][].cvc")]
async fn pay(input: Wallet) {}

fn main() {}
