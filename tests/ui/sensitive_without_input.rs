#![allow(unused_variables)]

use toolmark::tool;

#[tool(sensitive = "password")]
async fn logout() {}

fn main() {}
