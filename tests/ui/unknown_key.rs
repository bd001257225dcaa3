#![allow(unused_variables)]

use toolmark::tool;

#[tool(sensitve = "secret")]
async fn store(secret: String) {}

fn main() {}
