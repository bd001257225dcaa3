#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn echo(text: &str) {}

fn main() {}
