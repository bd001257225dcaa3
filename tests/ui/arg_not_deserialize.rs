#![allow(unused_variables)]

use toolmark::tool;

struct Point {
    x: f64,
}

#[tool]
async fn plot(#[arg] point: Point, label: String) {}

fn main() {}
