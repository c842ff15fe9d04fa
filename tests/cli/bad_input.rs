//! Every kind of bad input gets a clear message naming the file (and line), the other traces in
//! the run are still judged, and nothing panics.

use crate::util::*;

/// Runs `check --format json` over a suite holding the good trace plus `name` with `bytes`, and
/// returns the bad row after asserting the common promises.
fn check_with_bad(name: &str, bytes: &[u8], extra: &[&str]) -> serde_json::Value {
    let env = Env::new();
    good_suite(&env);
    env.write(
        "traces/bad/bad.scenario.json",
        scenario("bad", "Low", "search"),
    );
    env.write(&format!("traces/bad/{name}"), bytes);
    let mut args = vec!["check", "traces", "--format", "json"];
    args.extend_from_slice(extra);
    let out = env.run(&args);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(
        out.code, 1,
        "an error verdict always fails the run\n{}\n{}",
        out.stdout, out.stderr
    );
    let report = json(&out);
    assert_eq!(
        row(&report, "good/default.trace.ndjson.zst")["verdict"],
        "pass",
        "the good trace is still judged"
    );
    let bad = row(&report, name).clone();
    assert_eq!(bad["verdict"], "error", "{bad:#}");
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("traces/bad/{name}")),
        "message names the file: {message}"
    );
    bad
}

fn good_text() -> String {
    let c = call("c1", "search");
    trace_text("bad", "default", &[&c, END])
}

fn expect(bad: &serde_json::Value, category: &str, needle: &str, line: Option<u64>) {
    assert_eq!(bad["error"]["category"], category, "{bad:#}");
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(message.contains(needle), "`{needle}` not in: {message}");
    match line {
        Some(l) => {
            assert_eq!(bad["error"]["line"], l, "{bad:#}");
            assert!(message.contains(&format!("line {l}")), "{message}");
        }
        None => assert!(bad["error"].get("line").is_none(), "{bad:#}"),
    }
}

#[test]
fn truncated_zstd_stream() {
    let z = sealed_zst(&good_text());
    let bad = check_with_bad("t.trace.ndjson.zst", &z[..z.len() / 2], &[]);
    expect(&bad, "unreadable", "not a valid zstd stream", None);
}

#[test]
fn bit_flipped_compressed_bytes() {
    let mut z = sealed_zst(&good_text());
    let mid = z.len() / 2;
    z[mid] ^= 0x10;
    let bad = check_with_bad("f.trace.ndjson.zst", &z, &[]);
    let category = bad["error"]["category"].as_str().unwrap();
    // Depending on where the flip lands, zstd's checksum or our seal catches it.
    assert!(
        matches!(category, "unreadable" | "integrity" | "malformed"),
        "{bad:#}"
    );
}

#[test]
fn one_byte_changed_inside_a_sealed_trace() {
    let sealed = String::from_utf8(sealed_bytes(&good_text())).unwrap();
    let tampered = sealed.replacen("\"search\"", "\"seArch\"", 1);
    assert_ne!(tampered, sealed);
    let bad = check_with_bad(
        "e.trace.ndjson.zst",
        &zstd::bulk::compress(tampered.as_bytes(), 3).unwrap(),
        &[],
    );
    expect(&bad, "integrity", "content hash mismatch", None);
    assert!(
        bad["oracles"].as_array().unwrap().is_empty(),
        "integrity failures are never judged"
    );
}

#[test]
fn footer_with_the_wrong_count() {
    let sealed = String::from_utf8(sealed_bytes(&good_text())).unwrap();
    let wrong = sealed.replace("\"events\":2", "\"events\":3");
    let bad = check_with_bad(
        "c.trace.ndjson.zst",
        &zstd::bulk::compress(wrong.as_bytes(), 3).unwrap(),
        &[],
    );
    expect(
        &bad,
        "integrity",
        "footer counts 3 events but the trace has 2 event lines",
        None,
    );
}

#[test]
fn compressed_trace_without_footer() {
    let z = zstd::bulk::compress(good_text().as_bytes(), 3).unwrap();
    let bad = check_with_bad("n.trace.ndjson.zst", &z, &[]);
    expect(&bad, "integrity", "must end with a footer", None);
}

#[test]
fn a_line_that_is_not_json() {
    let text = format!("{}{{\"kind\": oops}}\n", good_text());
    let bad = check_with_bad("j.trace.ndjson", text.as_bytes(), &[]);
    expect(&bad, "malformed", "not a valid JSON object", Some(4));
}

#[test]
fn a_line_over_the_limit() {
    let long = format!(r#"{{"kind":"note","seq":1,"text":"{}"}}"#, "x".repeat(5000));
    let text = trace_text("bad", "default", &[&long, END]);
    let bad = check_with_bad(
        "l.trace.ndjson.zst",
        &sealed_zst(&text),
        &["--max-line-bytes", "4096"],
    );
    expect(&bad, "too-large", "--max-line-bytes", Some(2));
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4096 bytes")
    );
}

#[test]
fn a_trace_over_the_size_limit_stops_decompressing() {
    let long = format!(
        r#"{{"kind":"note","seq":1,"text":"{}"}}"#,
        "x".repeat(100_000)
    );
    let text = trace_text("bad", "default", &[&long, END]);
    let bad = check_with_bad(
        "s.trace.ndjson.zst",
        &sealed_zst(&text),
        &["--max-trace-bytes", "50000"],
    );
    expect(&bad, "too-large", "--max-trace-bytes", None);
}

#[test]
fn header_with_version_2() {
    let text = good_text().replace("\"version\":1", "\"version\":2");
    let bad = check_with_bad("v.trace.ndjson.zst", &sealed_zst_unchecked(&text), &[]);
    expect(
        &bad,
        "unsupported-version",
        "unsupported trace format version 2",
        None,
    );
}

#[test]
fn an_empty_file() {
    let bad = check_with_bad("empty.trace.ndjson", b"", &[]);
    expect(&bad, "unreadable", "empty trace file", None);
    let bad = check_with_bad("empty.trace.ndjson.zst", b"", &[]);
    assert_eq!(bad["error"]["category"], "unreadable");
}

#[test]
fn a_trace_without_header() {
    let text = good_text();
    let headless: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let bad = check_with_bad("h.trace.ndjson", headless.as_bytes(), &[]);
    expect(
        &bad,
        "malformed",
        "the first line must be the header",
        Some(1),
    );
}

#[test]
fn a_malformed_event() {
    let text = trace_text(
        "bad",
        "default",
        &[r#"{"kind":"tool_call","call_id":"c1","args":{}}"#, END],
    );
    let bad = check_with_bad("m.trace.ndjson.zst", &sealed_zst_unchecked(&text), &[]);
    expect(
        &bad,
        "malformed",
        "`tool_call` lacks required field `tool`",
        Some(2),
    );
}

#[test]
fn a_scenario_file_with_a_trailing_comma() {
    let env = Env::new();
    good_suite(&env);
    env.write(
        "traces/bad/bad.scenario.json",
        "{\n  \"id\": \"bad\",\n  \"title\": \"t\",\n}\n",
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let report = json(&out);
    assert_eq!(
        row(&report, "good/default.trace.ndjson.zst")["verdict"],
        "pass"
    );
    let bad = row(&report, "bad.scenario.json");
    assert_eq!(bad["verdict"], "error");
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("traces/bad/bad.scenario.json")
            && message.contains("line 4, column 1")
            && message.contains("trailing comma"),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn a_directory_symlink_loop() {
    let env = Env::new();
    good_suite(&env);
    std::os::unix::fs::symlink(env.path("traces"), env.path("traces/good/loop")).unwrap();
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("traces/good/loop") && out.stderr.contains("symlink loop"),
        "{}",
        out.stderr
    );
    let report = json(&out);
    assert_eq!(
        report["summary"]["traces"], 1,
        "the looped trace counts once"
    );
}

#[test]
fn unsealed_traces_are_judged_and_flagged_unless_sealing_is_required() {
    let env = Env::new();
    good_suite(&env);
    env.write(
        "traces/good/raw.trace.ndjson",
        good_text()
            .replace("\"bad\"", "\"good\"")
            .replace("\"default\"", "\"raw\""),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = json(&out);
    let raw = row(&r, "raw.trace.ndjson");
    assert_eq!(
        (raw["verdict"].as_str(), raw["sealed"].as_bool()),
        (Some("pass"), Some(false))
    );
    let out = env.run(&["check", "traces", "--format", "json", "--require-sealed"]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    expect(
        row(&r, "raw.trace.ndjson"),
        "integrity",
        "--require-sealed",
        None,
    );
}

#[test]
fn raw_prompt_text_is_an_error_that_is_never_printed() {
    let secret = "please summarise my medical record";
    let prompt = format!(
        r#"{{"kind":"user_message","prompt":{{"h":"b3:{}","text":"{secret}"}}}}"#,
        "0".repeat(64)
    );
    let text = trace_text("bad", "default", &[&prompt, END]);
    let bad = check_with_bad("p.trace.ndjson", text.as_bytes(), &[]);
    expect(&bad, "privacy", "privacy violation", Some(2));
    assert!(!bad.to_string().contains(secret));
}
