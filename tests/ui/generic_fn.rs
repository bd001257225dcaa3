#![allow(unused_variables)]

use toolmark::tool;

#[tool]
async fn echo<T: serde::de::DeserializeOwned + schemars::JsonSchema>(input: T) {}

fn main() {}
