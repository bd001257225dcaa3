#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn list(#[arg(description = 1)] page: u32) {}

fn main() {}
