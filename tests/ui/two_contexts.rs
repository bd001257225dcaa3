#![allow(unused_variables)]

use toolmark::{tool, ToolContext};

#[tool]
async fn list(first: ToolContext, second: ToolContext) {}

fn main() {}
