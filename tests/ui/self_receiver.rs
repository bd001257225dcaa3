#![allow(unused_variables)]

use toolmark::tool;

struct Shop;

impl Shop {
    #[tool]
    async fn list(&self) {}
}

fn main() {}
