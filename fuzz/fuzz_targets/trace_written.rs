//! A generated event list written through the trace writer, read back, then byte-edited.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::written(data));
