//! Fuzzes the sensitive-path parser, schema resolution, location matching and message
//! rewriting with arbitrary text.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    toolmark::__fuzz::check_path(data);
});
