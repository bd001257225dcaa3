#![allow(unused_variables)]

use toolmark::tool;

#[tool(toolmark::name = "store")]
async fn store(secret: String) {}

fn main() {}
