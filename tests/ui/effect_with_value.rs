#![allow(unused_variables)]

use toolmark::tool;

#[tool(read_only = true)]
async fn list() {}

fn main() {}
