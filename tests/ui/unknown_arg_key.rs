#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn list(#[arg(descripton = "The page")] page: u32) {}

fn main() {}
