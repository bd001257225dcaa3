//! Fuzzes the tracked decode with alias and unknown keys (against serde_json's own
//! decode) and the call's secret set (no value the decode can read at a sensitive
//! path reaches the refusal or the recorded arguments), with any JSON input.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    toolmark::__fuzz::check_decode(data);
});
