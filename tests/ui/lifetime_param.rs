#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn echo<'a>(text: String) -> &'a str {
    ""
}

fn main() {}
