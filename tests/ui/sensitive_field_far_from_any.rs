#![allow(unused_variables)]

use toolmark::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Card {
    number: String,
    cvc: String,
}

// No field is near `security_code`: the error names the field and the type only.
#[tool(sensitive = "security_code")]
async fn pay(card: Card) {}

fn main() {}
