//! The Harness Contract reader; what loads is judged by `contract-conformant`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::contract(data));
