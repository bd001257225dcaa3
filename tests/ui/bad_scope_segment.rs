#![allow(unused_variables)]

use toolmark::tool;

#[tool(scope = "billing/cards")]
async fn list() {}

fn main() {}
