#![allow(unused_variables)]

use toolmark::tool;

#[tool(read_only, destructive)]
async fn purge() {}

fn main() {}
