//! The trace reader on plain `.trace.ndjson` bytes (default limits).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::trace(data, false));
