//! `ingest --from otel-spans`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracereplay::ingest::Format;

fuzz_target!(|data: &[u8]| tracereplay::fuzzing::ingest(Format::OtelSpans, data));
