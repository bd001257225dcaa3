#![allow(unused_variables)]

use toolmark::tool;

/// Fetch a page.
#[tool(read_only, open_world, closed_world)]
async fn fetch() {}

fn main() {}
