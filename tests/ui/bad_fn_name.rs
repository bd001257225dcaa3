#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn café() {}

fn main() {}
