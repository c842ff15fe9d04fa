//! `merge` of partitioned reports: up to four JSON reports, split at NUL bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::merge(data));
