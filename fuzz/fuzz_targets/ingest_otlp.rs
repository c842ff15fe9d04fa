//! `ingest --from otlp-json`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracereplay_core::ingest::Format;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::ingest(Format::OtlpJson, data));
