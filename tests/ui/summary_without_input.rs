#![allow(unused_variables)]

use toolmark::tool;

#[tool(destructive, summary = "Delete {id}")]
async fn delete_all() {}

fn main() {}
