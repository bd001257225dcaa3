#![allow(unused_variables)]

use toolmark::tool;

#[tool(sensitive = "pin")]
async fn unlock(user: String, password: String) {}

fn main() {}
