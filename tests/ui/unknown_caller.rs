#![allow(unused_variables)]

use toolmark::tool;

#[tool(callers = [inapp, mpc])]
async fn list() {}

fn main() {}
