#![allow(unused_variables)]

use toolmark::tool;

#[tool(effect = "read")]
async fn store(secret: String) {}

fn main() {}
