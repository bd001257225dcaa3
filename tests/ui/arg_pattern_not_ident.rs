#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn plot((x, y): (f64, f64), label: String) {}

fn main() {}
