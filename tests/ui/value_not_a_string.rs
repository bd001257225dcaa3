#![allow(unused_variables)]

use toolmark::tool;

#[tool(timeout = 30)]
async fn list() {}

fn main() {}
