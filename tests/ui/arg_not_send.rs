#![allow(unused_variables)]

use std::rc::Rc;

use toolmark::tool;

#[tool]
async fn count(#[arg] items: Rc<Vec<u32>>, label: String) {}

fn main() {}
