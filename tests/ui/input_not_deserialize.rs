#![allow(unused_variables)]

use toolmark::tool;

#[derive(schemars::JsonSchema)]
struct Query {
    text: String,
}

#[tool]
async fn search(query: Query) {}

fn main() {}
