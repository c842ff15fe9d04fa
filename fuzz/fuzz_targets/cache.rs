//! The result-cache reader (framing and rows).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay::internal::fuzzing::cache(data));
