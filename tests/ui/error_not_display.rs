#![allow(unused_variables)]

use toolmark::tool;

#[derive(Debug)]
struct Oops;

#[tool]
async fn fail() -> Result<(), Oops> {
    Err(Oops)
}

fn main() {}
