#![allow(unused_variables)]

use toolmark::tool;

#[tool(timeout = "0s")]
async fn list() {}

fn main() {}
