#![allow(unused_variables)]

use toolmark::{tool, ToolContext};

#[tool]
async fn list(#[arg] ctx: ToolContext, page: u32) {}

fn main() {}
