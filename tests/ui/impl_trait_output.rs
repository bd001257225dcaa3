#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn greet() -> impl serde::Serialize {
    "hello"
}

fn main() {}
