//! The recorder's reading of one exchange, without HTTP: a request body captured as `record`
//! captures it, and an answer's stream fed in pieces of any size (SSE framing cut anywhere).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_net::fuzzing::recorded_answer(data));
