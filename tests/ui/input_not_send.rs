#![allow(unused_variables)]

use std::rc::Rc;

use toolmark::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    text: Rc<String>,
}

#[tool]
fn search(query: Query) {}

fn main() {}
