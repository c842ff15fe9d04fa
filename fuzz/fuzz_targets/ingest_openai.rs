//! `ingest --from openai-messages`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracereplay::internal::ingest::Format;

fuzz_target!(|data: &[u8]| tracereplay::internal::fuzzing::ingest(Format::OpenaiMessages, data));
