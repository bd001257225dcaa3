#![allow(unused_variables)]

use toolmark::tool;

#[tool(name = "first", name = "second")]
async fn purge() {}

fn main() {}
