#![allow(unused_variables)]

use toolmark::tool;

#[tool(destructive, destructive)]
async fn purge() {}

fn main() {}
