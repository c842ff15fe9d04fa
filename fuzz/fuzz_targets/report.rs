//! The JSON report reader that `merge` uses, and `merge` itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::report(data));
