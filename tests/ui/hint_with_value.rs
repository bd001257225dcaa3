#![allow(unused_variables)]

use toolmark::tool;

/// Set a flag.
#[tool(idempotent = true)]
async fn set_flag() {}

/// Read a page.
#[tool(read_only, open_world = false)]
async fn read_page() {}

fn main() {}
