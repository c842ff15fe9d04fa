//! The result-cache reader (framing and rows).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::cache(data));
