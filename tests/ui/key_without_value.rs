#![allow(unused_variables)]

use toolmark::tool;

#[tool(name)]
async fn list() {}

fn main() {}
