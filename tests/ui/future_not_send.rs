#![allow(unused_variables)]

use std::rc::Rc;

use toolmark::tool;

async fn later() {}

#[tool]
async fn count(items: Vec<u32>) -> usize {
    let shared = Rc::new(items);
    later().await;
    shared.len()
}

fn main() {}
