#![allow(unused_variables)]

use toolmark::tool;

#[tool(scope = "")]
async fn list() {}

fn main() {}
