#![allow(unused_variables)]

use toolmark::tool;

// A type deriving schemars 0.8's `JsonSchema` (the version many crates still use):
// the tool needs schemars 1's.
#[derive(serde::Deserialize, schemars08::JsonSchema)]
#[schemars(crate = "schemars08")]
struct Query {
    text: String,
}

#[tool]
async fn search(query: Query) {}

fn main() {}
