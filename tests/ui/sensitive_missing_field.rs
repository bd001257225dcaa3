#![allow(unused_variables)]

use toolmark::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Card {
    number: String,
    cvc: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NewChallenge {
    title: String,
    cards: Vec<Card>,
}


#[tool(sensitive = "cards[].cvv")]
async fn fill(input: NewChallenge) {}

fn main() {}
