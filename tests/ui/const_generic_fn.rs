#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn take<const N: usize>(items: [u8; N]) {}

fn main() {}
