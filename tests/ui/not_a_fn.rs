#![allow(unused_variables)]

use toolmark::tool;

#[tool]
struct Tool;

fn main() {}
