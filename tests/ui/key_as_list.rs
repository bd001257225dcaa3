#![allow(unused_variables)]

use toolmark::tool;

#[tool(scope("billing"))]
async fn list() {}

fn main() {}
