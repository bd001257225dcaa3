#![allow(unused_variables)]

use toolmark::tool;

#[tool(consequential, summary = "Send {amount} to {recipient}")]
async fn send(amount: u64, to: String) {}

fn main() {}
