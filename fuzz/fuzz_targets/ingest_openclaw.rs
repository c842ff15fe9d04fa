//! `ingest --from openclaw-scenario`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracereplay::internal::ingest::Format;

fuzz_target!(|data: &[u8]| tracereplay::internal::fuzzing::ingest(Format::OpenclawScenario, data));
