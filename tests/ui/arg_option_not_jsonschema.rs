#![allow(unused_variables)]

use toolmark::tool;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
}

// Only the missing derive is reported, once, at the argument's type.
#[tool]
async fn plot(#[arg] point: Option<Point>, label: String) {}

fn main() {}
