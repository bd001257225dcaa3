//! The suite package's build script: which real clients the external-client tests
//! may expect (see `tests/support/clients.rs` and `tests/support/external.rs`).
//!
//! For each client it sets `cfg(toolmark_client = "<name>")` when the client is
//! expected: under CI (`CI` set: every client, so a missing one fails its tests)
//! or when all of the client's variables are set. A test without its client is then
//! reported by libtest as `ignored, <what it needs>`, never as `ok`.
//!
//! Only variables are read (no file is probed), so the script reruns only when one
//! of them changes.

include!("tests/support/clients.rs");

fn main() {
    println!("cargo::rerun-if-changed=tests/support/clients.rs");
    println!("cargo::rerun-if-env-changed=CI");
    let names: Vec<String> = EXTERNAL_CLIENTS
        .iter()
        .map(|c| format!("\"{}\"", c.name))
        .collect();
    println!(
        "cargo::rustc-check-cfg=cfg(toolmark_client, values({}))",
        names.join(", ")
    );
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    for client in EXTERNAL_CLIENTS {
        let mut all_set = true;
        for var in client.vars {
            println!("cargo::rerun-if-env-changed={var}");
            all_set &= std::env::var_os(var).is_some_and(|v| !v.is_empty());
        }
        if ci || all_set {
            println!("cargo::rustc-cfg=toolmark_client=\"{}\"", client.name);
        }
    }
}
