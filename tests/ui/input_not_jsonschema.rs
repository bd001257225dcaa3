#![allow(unused_variables)]

use toolmark::tool;

#[derive(serde::Deserialize)]
struct Query {
    text: String,
}

#[tool]
async fn search(query: Query) {}

fn main() {}
