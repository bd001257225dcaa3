#![allow(unused_variables)]

use toolmark::tool;

struct Report {
    lines: Vec<String>,
}

#[tool(read_only)]
async fn report() -> Result<Report, toolmark::ToolError> {
    Ok(Report { lines: Vec::new() })
}

fn main() {}
