#![allow(unused_variables)]

use toolmark::tool;

/// Set a flag.
#[tool(idempotent, closed_world, idempotent, closed_world)]
async fn set_flag() {}

fn main() {}
