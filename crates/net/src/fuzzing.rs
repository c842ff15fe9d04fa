//! The replay server's request and event surfaces, without HTTP: a fuzzed input is a sequence
//! of requests to one session of a fixed recording. Besides "no panic": whatever was answered,
//! the session's recording seals and reads back as a valid trace (a recording is always
//! writable), and no request made it outgrow the trace size limit.

use crate::trace::PromptHasher;
use crate::trace::{Limits, TraceFile, parse_trace};
use crate::{Options, Replay, Script, Step};

/// A two-step recording: a tool call (offering `weather`), then an answer.
fn script() -> Script {
    let step = |text: Option<&str>, calls: bool| Step {
        seq: 1,
        ts_ms: None,
        model: None,
        text: text.map(str::to_owned),
        tool_calls: if calls {
            vec![crate::script::PlannedCall {
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
        trial: None,
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
        waived: Default::default(),
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

/// The recorder's reading of one exchange: the input's first byte picks the API, the part up to
/// the first `\0` is the request body (captured as `record` captures it), the rest the answer's
/// stream, fed in pieces whose sizes the bytes choose (SSE framing cut anywhere). Besides "no
/// panic": what is kept of the answer never passes `ANSWER_KEEP`, and the exchange — answered
/// or failed — records a trace that seals and reads back.
pub fn recorded_answer(data: &[u8]) {
    use crate::canonical::Api;
    use crate::stream_reader::{ANSWER_KEEP, StreamReader};
    let Some((pick, rest)) = data.split_first() else {
        return;
    };
    let api = [Api::Chat, Api::Responses, Api::Anthropic][usize::from(*pick % 3)];
    let (request, stream) = match rest.iter().position(|b| *b == 0) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let request: serde_json::Value = serde_json::from_slice(request).unwrap_or_default();
    let hasher = PromptHasher::unkeyed();
    let captured = crate::capture::capture(api, &request, &hasher, pick & 4 != 0);
    let mut reader = StreamReader::new(api);
    let mut at = 0;
    while at < stream.len() {
        let n = 1 + usize::from(stream[at] % 61);
        reader.feed(&stream[at..(at + n).min(stream.len())]);
        at += n;
    }
    let (answer, over) = reader.finish();
    let step = answer.step();
    let kept = step.text.as_ref().map_or(0, String::len)
        + (step.tool_calls.iter())
            .map(|c| c.id.len() + c.name.len() + c.arguments.len())
            .sum::<usize>();
    assert!(kept <= ANSWER_KEEP, "{kept} bytes kept");
    let limits = Limits::default();
    let mut recording = crate::record::Recording::default();
    let _ = recording.results(&captured, limits);
    let timing = crate::record::Timing::default();
    if answer.complete && answer.error.is_none() && !over {
        recording.inference(Some("m"), &step, &captured, (timing, limits));
    } else {
        let why = ("the answer was cut", "stream-truncated");
        recording.failed(Some("m"), (&step, true), &captured, why, (timing, limits));
    }
    let run = crate::record::RunHeader {
        scenario: "fuzz",
        case: "answer",
        trial: None,
        model: None,
        source: "record",
    };
    let secrets = std::collections::BTreeSet::from(["sk-fuzz".to_owned()]);
    let sealed = (recording.seal(&run, (&hasher, &secrets), limits))
        .expect("an exchange's recording always seals");
    let file = TraceFile::from_bytes("fuzz/recorded.trace.ndjson", sealed.bytes, false);
    let seal = file.verify_seal(true).expect("the recording is sealed");
    parse_trace(&file, &seal, limits).expect("the recording reads back");
}

#[cfg(test)]
mod tests {
    /// Every committed seed and past finding of this crate's fuzz targets, replayed through
    /// their checks on stable (as `tracereplay-core` replays the others').
    #[test]
    fn seeds_and_findings_pass_their_checks() {
        let fuzz = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz"));
        let mut replayed = 0;
        type Check = fn(&[u8]);
        let targets: [(&str, Check); 2] = [
            ("replay_requests", super::replay_requests),
            ("recorded_answer", super::recorded_answer),
        ];
        for (target, check) in targets {
            for dir in ["corpus", "regressions"] {
                replayed += tracereplay_core::fuzzing::replay_inputs(fuzz, dir, target, check);
            }
        }
        assert!(replayed > 4, "{replayed} inputs replayed");
    }
}
