//! Fuzzes opening an MCP multi round-trip request's `requestState` handle (a
//! pending confirmation's id and expiry, sealed by toolmark's one seal and bound
//! to the call's tool, caller and arguments), as the server opens what a client
//! sends: anything is refused without a panic; a genuine handle opens for its call
//! only, under its key and purpose only, and not with a byte changed or cut short.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    toolmark::__fuzz::check_mrtr_handle(data);
});
