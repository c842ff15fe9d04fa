//! Tests of `fast_line.rs`: on every line it reads, its result is `serde_json`'s.

use super::*;

/// The reader's result for `line`, printed.
fn event(line: &str) -> Option<RawEvent<'_>> {
    let mut ev = RawEvent::default();
    read(line, &mut ev).then_some(ev)
}

/// What `serde_json` makes of `text` as a `T`, printed (every field, `None` for those absent).
fn by_serde<'a, T: serde::Deserialize<'a> + std::fmt::Debug>(text: &'a str) -> Option<String> {
    serde_json::from_str::<T>(text)
        .ok()
        .map(|v| format!("{v:?}"))
}

/// The reader's result for `text` (`read`, `T` as `serde_json` would read it), which must be
/// `serde_json`'s when it has one.
fn alike<'a, T>(text: &'a str, read: Option<T>) -> Option<String>
where
    T: serde::Deserialize<'a> + std::fmt::Debug,
{
    let fast = read.map(|v| format!("{v:?}"))?;
    assert_eq!(
        Some(&fast),
        by_serde::<T>(text).as_ref(),
        "the reader and serde_json differ on {text:?}"
    );
    Some(fast)
}

/// The reader's result for an event line, which must be `serde_json`'s when it has one.
fn checked(line: &str) -> Option<String> {
    alike(line, event(line))
}

/// Lines of every field of the format, as writers write them and as people might.
const LINES: &[&str] = &[
    r#"{"kind":"user_message","seq":1,"ts_ms":1764951420000,"prompt":{"h":"b3k:84c3a9fc09ff129cecda23ff5c11569d4cdbbb659cc75befc23188b322464dc7","len":41},"id":"in1"}"#,
    r#"{"kind":"inference","seq":2,"ts_ms":-5,"ts_sub_ns":999,"request_id":"r0","model":"m","input_h":"b3:00","system_h":null,"tools_offered":["read","write"],"consumes":[],"output":{"tool_calls":[{"call_id":"c0","tool":"read","args":{"limit":197,"path":"docs/status-0.md"}}]},"usage":{"input_tokens":1121,"output_tokens":83,"cost_usd":0.25},"finish":"tool_call","latency_ms":12,"truncated":false,"llm_calls":2,"request_h":{"/messages/0":"b3:00"}}"#,
    r#"{"kind":"tool_call","seq":3,"call_id":"c0","tool":"read","args":"{\"a\": 1}","copied":true}"#,
    r#"{"kind":"tool_result","seq":4,"call_id":"c0","ok":true,"output":"refund\ninvoice \"draft\" done\\ \/ \b\f\r\t \u00e9 \ud83d\ude00","output_h":"b3:11"}"#,
    r#"{"kind":"tool_result","seq":5,"call_id":"c1","ok":false,"error":"boom\nline two","output":[1,-2.5e+3,0.0,1E5,true,false,null,{},[],{"a":[{"b":"c"}]}]}"#,
    r#"{"kind":"approval_request","seq":6,"approval_id":"a1","tool":"deploy","reason":"needs a human"}"#,
    r#"{"kind":"approval_decision","seq":7,"approval_id":"a1","granted":true,"by":"ops"}"#,
    r#"{"kind":"assistant_message","seq":8,"phase":"final","text":"Done: \"refund\" issued.\nBye","reply_to":"in1","channel":"chat"}"#,
    r#"{"kind":"file_write","seq":9,"path":"out/report.md","h":"b3:22","bytes":1024,"mtime_ms":1764951420000}"#,
    r#"{"kind":"state_change","seq":10,"from":"idle","to":{"state":"busy"}}"#,
    r#"{"kind":"run_end","seq":11,"status":"ok","code":0,"message":"finished"}"#,
    r#" { "kind" : "run_end" , "seq" : 12 , "status" : "ok" } "#,
    r#"{"kind":"note","seq":13,"text":"é, ü and 😀 as UTF-8"}"#,
    r#"{"kind":"inference","seq":14,"usage":{"input_tokens":10,"output_tokens":0,"cache_read_tokens":4,"cache_write_tokens":null,"reasoning_tokens":2,"cost_usd":1e-3,"priced":true,"vendor":{"x":[1]}}}"#,
    r#"{"kind":"inference","seq":15,"usage":{"output_tokens":3,"input_tokens":1,"cost_usd":-0}}"#,
    r#"{"kind":"user_message","seq":16,"prompt":{"len":null,"h":"b3:00"}}"#,
    r#"{}"#,
    r#"{"kind":null,"seq":null,"output":null,"tools_offered":null,"usage":null,"prompt":null}"#,
];

#[test]
fn every_field_is_read_as_serde_json_reads_it() {
    for line in LINES {
        assert!(checked(line).is_some(), "not read: {line}");
    }
}

#[test]
fn what_it_might_read_otherwise_is_left_to_serde_json() {
    // Each of these is read by serde_json — to an event or to an error — and not here.
    for line in [
        r#"{"kind":"x","seq":-0}"#,
        r#"{"kind":"x","ts_ms":-0}"#,
        r#"{"kind":"x","ts_ms":-9223372036854775808}"#,
        r#"{"kind":"x","seq":01}"#,
        r#"{"kind":"x","seq":1.0}"#,
        r#"{"kind":"x","seq":1e2}"#,
        r#"{"kind":"x","seq":18446744073709551616}"#,
        r#"{"kind":"x","ts_sub_ns":4294967296}"#,
        r#"{"kind":"x","ts_ms":9223372036854775808}"#,
        r#"{"kind":"x","text":"caf\u00e9"}"#,
        r#"{"kind":"x","kind":"y"}"#,
        r#"{"kind":"x","seq":null,"seq":1}"#,
        r#"{"ki\u006ed":"x"}"#,
        r#"{"kind":"x","unknown":1}"#,
        r#"{"kind":"x",}"#,
        r#"{"kind":"x"} x"#,
        "{\"kind\":\"x\",\t\"seq\":1}",
        "{\"kind\":\"a\u{1}b\"}",
        r#"["x",1]"#,
        r#"{"kind":"x","output":"\x"}"#,
        r#"{"kind":"x","output":"\u12"}"#,
        r#"{"kind":"x","output":01}"#,
        r#"{"kind":"x","output":1.}"#,
        r#"{"kind":"x","output":.5}"#,
        r#"{"kind":"x","output":[1,]}"#,
        r#"{"kind":"x","output":{"a"}}"#,
        r#"{"kind":"x","output":tru}"#,
        r#"{"kind":"x","output":NaN}"#,
        r#"{"kind":"x","prompt":{"h":"b3:00","extra":1}}"#,
        r#"{"kind":"x","usage":{"input_tokens":-1,"output_tokens":2}}"#,
        r#"{"kind":"x","tools_offered":["a",null]}"#,
        r#"{"kind":"x","copied":"yes"}"#,
        r#"{"kind":"x","usage":{"input_tokens":1}}"#,
        r#"{"kind":"x","usage":{"input_tokens":1,"output_tokens":2,"input_tokens":3}}"#,
        r#"{"kind":"x","usage":{"input_tokens":1,"output_tokens":2,"cost_usd":1e400}}"#,
        r#"{"kind":"x","prompt":{"len":3}}"#,
        r#"{"kind":"x","prompt":{"h":null}}"#,
        r#"{"kind":"x""#,
        r#"{"kind":"x"#,
        "",
    ] {
        assert_eq!(event(line).map(|e| format!("{e:?}")), None, "{line}");
    }
    let deep = |n: usize| {
        format!(
            r#"{{"kind":"x","output":{}1{}}}"#,
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    assert!(checked(&deep(MAX_DEPTH - 1)).is_some());
    assert!(event(&deep(MAX_DEPTH)).is_none());
    assert!(
        by_serde::<RawEvent>(&deep(MAX_DEPTH)).is_some(),
        "serde_json reads it"
    );
}

#[test]
fn a_control_character_is_found_wherever_it_stands() {
    for len in 0..100 {
        let clean = "a".repeat(len);
        assert!(!has_control(clean.as_bytes()));
        for at in 0..len {
            for c in [0u8, 0x09, 0x0a, 0x1f] {
                let mut bytes = clean.clone().into_bytes();
                bytes[at] = c;
                assert!(has_control(&bytes), "{c:#x} at {at} of {len}");
            }
            let mut bytes = clean.clone().into_bytes();
            bytes[at] = 0x20;
            assert!(!has_control(&bytes));
        }
    }
}

/// Every event line of the demo suite, compressed or not.
fn demo_lines() -> Vec<String> {
    let root = camino::Utf8Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut files = vec![];
    let mut dirs = vec![root.into_std_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().contains(".trace.ndjson") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut lines = vec![];
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let bytes = if path.extension().is_some_and(|e| e == "zst") {
            zstd::decode_all(&bytes[..]).unwrap()
        } else {
            bytes
        };
        let text = String::from_utf8(bytes).unwrap();
        lines.extend(text.lines().skip(1).map(str::to_owned));
    }
    lines
}

#[test]
fn every_line_of_the_demo_suite_is_read_as_serde_json_reads_it() {
    let lines = demo_lines();
    assert!(lines.len() > 100, "{} lines", lines.len());
    let read = lines.iter().filter(|l| checked(l).is_some()).count();
    // Only the footers (keys no event has) are left to serde_json.
    let footers = lines.iter().filter(|l| l.contains(r#""kind":"footer""#));
    assert_eq!(read, lines.len() - footers.count());
}

/// SplitMix64, seeded: the same mutations every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// One to three changes at random places: a byte replaced, removed or inserted (one that
/// matters to the grammar, or one that does not), or a piece repeated.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    const ALPHABET: &[u8] = b"\"\\{}[],: -+.0123456789eEunltrfasbx/\t\x01";
    for _ in 0..=rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        let c = ALPHABET[rng.below(ALPHABET.len())];
        match rng.below(4) {
            0 if at < bytes.len() => bytes[at] = c,
            1 if at < bytes.len() => drop(bytes.remove(at)),
            2 => {
                let end = (at + rng.below(12)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
            _ => bytes.insert(at, c),
        }
    }
}

#[test]
fn mutated_lines_are_read_as_serde_json_reads_them_or_left_to_it() {
    let mut seeds: Vec<String> = LINES.iter().map(|l| l.to_string()).collect();
    seeds.extend(demo_lines().into_iter().filter(|l| l.len() < 2000));
    let mut rng = Rng(67);
    let (mut read, mut agreed_elsewhere) = (0, 0);
    for _ in 0..60_000 {
        let mut bytes = seeds[rng.below(seeds.len())].clone().into_bytes();
        mutate(&mut rng, &mut bytes);
        let Ok(line) = String::from_utf8(bytes) else {
            continue;
        };
        match checked(&line) {
            Some(_) => read += 1,
            None if by_serde::<RawEvent>(&line).is_some() => agreed_elsewhere += 1,
            None => {}
        }
    }
    // The mutations leave enough lines well-formed for both readers to be tried on them.
    assert!(read > 5_000, "only {read} mutated lines read");
    eprintln!("{read} read, {agreed_elsewhere} left to serde_json and read by it");
    assert!(agreed_elsewhere > 20, "{agreed_elsewhere}");
}

#[test]
fn a_quote_or_backslash_is_found_first_wherever_it_stands() {
    // Bytes next to the two sought in value, with the high bit set, and zero.
    const BYTES: &[u8] = b"\"\\!#[]\xa2\xdc\x00\x80\xff a";
    let mut rng = Rng(7);
    for _ in 0..20_000 {
        let len = rng.below(40);
        let bytes: Vec<u8> = (0..len).map(|_| BYTES[rng.below(BYTES.len())]).collect();
        let naive = bytes.iter().position(|&b| b == b'"' || b == b'\\');
        assert_eq!(quote_or_backslash(&bytes), naive, "{bytes:?}");
    }
}

/// The reader's `output`, which must be `serde_json`'s when it has one.
fn output_checked(text: &str) -> Option<String> {
    alike(text, output(text))
}

const OUTPUTS: &[&str] = &[
    r#"{"tool_calls":[{"call_id":"c0","tool":"read","args":{"filters":{"kind":"markdown","recursive":true},"limit":197,"path":"docs/status-0.md"}}]}"#,
    r#"{"text":"Done.\nBye \"now\"","tool_calls":[]}"#,
    r#"{"text":null,"tool_calls":null}"#,
    r#"{"tool_calls":[{"tool":"a","args":"{\"x\":1}","call_id":"c1","index":0},{"call_id":"c2","tool":"b","args":{}}],"refusal":null,"extra":[1,{"y":2}]}"#,
    r#" { "text" : "t" } "#,
    r#"{}"#,
];

#[test]
fn an_inferences_output_is_read_as_serde_json_reads_it() {
    for text in OUTPUTS {
        assert!(output_checked(text).is_some(), "not read: {text}");
    }
    for text in [
        r#"{"text":"a","text":"b"}"#,
        r#"{"tool_calls":[{"call_id":"c","tool":"t"}]}"#,
        r#"{"tool_calls":[{"call_id":"c","tool":"t","args":{},"tool":"u"}]}"#,
        r#"{"tool_calls":[{"call_id":null,"tool":"t","args":{}}]}"#,
        r#"{"text":"caf\u00e9"}"#,
        r#"{"text":1}"#,
        r#"[]"#,
        r#"{"text":"a"} x"#,
    ] {
        assert_eq!(output(text).map(|o| format!("{o:?}")), None, "{text}");
    }
}

#[test]
fn mutated_outputs_are_read_as_serde_json_reads_them_or_left_to_it() {
    let mut rng = Rng(68);
    let mut read = 0;
    for _ in 0..30_000 {
        let mut bytes = OUTPUTS[rng.below(OUTPUTS.len())].as_bytes().to_vec();
        mutate(&mut rng, &mut bytes);
        if let Ok(text) = String::from_utf8(bytes) {
            read += usize::from(output_checked(&text).is_some());
        }
    }
    assert!(read > 3_000, "only {read} mutated outputs read");
}
