//! `ingest --from openai-messages`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracereplay_core::ingest::Format;

fuzz_target!(|data: &[u8]| tracereplay_core::fuzzing::ingest(Format::OpenaiMessages, data));
