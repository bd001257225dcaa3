#![allow(unused_variables)]

use toolmark::tool;

#[tool]
unsafe fn poke(address: usize) {}

fn main() {}
