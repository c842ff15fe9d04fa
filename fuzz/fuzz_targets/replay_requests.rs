//! The replay server's request bodies and event posts, without HTTP: a sequence of requests to
//! one session, split at NUL bytes, each led by its route (`c`, `r`, `e`, `f`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tracereplay_net::fuzzing::replay_requests(data));
