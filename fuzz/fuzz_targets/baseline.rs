//! The approved-baseline reader.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::baseline(data));
