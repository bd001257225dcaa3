#![allow(unused_variables)]

use toolmark::tool;

#[tool(name = "fill card")]
async fn fill() {}

fn main() {}
