//! Fuzzes redaction and the restore rule: paths, an original input and an approver's
//! edit, one per line.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    toolmark::__fuzz::check_restore(data);
});
