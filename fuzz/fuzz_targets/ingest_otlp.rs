//! `ingest --from otlp-json`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracereplay_core::ingest::InputFormat;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::ingest(InputFormat::OtlpJson, data));
