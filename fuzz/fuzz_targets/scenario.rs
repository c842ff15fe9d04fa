//! The scenario loader; what loads is judged against an empty and a full trace.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::scenario(data));
