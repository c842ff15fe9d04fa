//! The replay server's request and event surfaces, without HTTP: a fuzzed input is a sequence
//! of requests to one session of a fixed recording. Besides "no panic": whatever was answered,
//! the session's recording seals and reads back as a valid trace (a recording is always
//! writable), and no request made it outgrow the trace size limit.

use crate::replay::{Options, Replay, Script, Step};
use crate::trace::PromptHasher;
use crate::trace::{Limits, TraceFile, parse_trace};

/// A two-step recording: a tool call (offering `weather`), then an answer.
fn script() -> Script {
    let step = |text: Option<&str>, calls: bool| Step {
        seq: 1,
        ts_ms: None,
        model: None,
        text: text.map(str::to_owned),
        tool_calls: if calls {
            vec![crate::replay::script::PlannedCall {
                id: "call_1".into(),
                name: "weather".into(),
                arguments: r#"{"city":"Paris"}"#.into(),
            }]
        } else {
            Vec::new()
        },
        finish: None,
        usage: None,
        input_h: None,
        tools_offered: Some(vec!["weather".into()]),
        request_h: None,
    };
    Script {
        path: "fuzz/recording.trace.ndjson".into(),
        content_hash: "b3:00".into(),
        scenario: "fuzz".into(),
        case: "replay".into(),
        model: Some("m".into()),
        hash_scheme: ("blake3".into(), None),
        steps: vec![step(None, true), step(Some("sunny"), false)],
    }
}

/// Requests to one session: the input split at `\0` bytes, each part's first byte choosing
/// the route (`c` chat, `r` responses, `e` events, `f` finish) and the rest its body.
pub fn replay_requests(data: &[u8]) {
    // A small size limit, so that the fuzzer reaches it.
    let limits = Limits {
        max_line_bytes: 4096,
        max_trace_bytes: 96 << 10,
    };
    let options = Options {
        hasher: PromptHasher::unkeyed(),
        record: None,
        trial: None,
        strict: data.first().is_some_and(|b| b & 1 == 1),
        raw_prompts: false,
        limits,
        signer: None,
        chunking: Default::default(),
        live: None,
    };
    let replay = Replay::new(vec![script()], options);
    for part in data.split(|b| *b == 0).take(64) {
        let Some((route, body)) = part.split_first() else {
            continue;
        };
        let route = match route {
            b'c' => "chat",
            b'r' => "responses",
            b'e' => "events",
            b'f' => "finish",
            _ => "other",
        };
        let status = replay.answer(route, body);
        assert!((200..600).contains(&status), "status {status}");
    }
    for sealed in replay.seal_all() {
        let bytes = sealed.expect("a session's recording always seals");
        assert!(
            bytes.len() as u64 <= limits.max_trace_bytes,
            "{} bytes",
            bytes.len()
        );
        let file = TraceFile::from_bytes("fuzz/replayed.trace.ndjson", bytes, false);
        let seal = file.verify_seal(true).expect("the recording is sealed");
        parse_trace(&file, &seal, limits).expect("the recording reads back");
    }
}
