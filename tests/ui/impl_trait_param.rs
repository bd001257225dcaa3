#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn echo(text: impl Into<String>) {}

fn main() {}
