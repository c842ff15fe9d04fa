//! `check --otlp FILE`: the verdicts as OTLP/JSON logs, decoded with the OTLP protobuf types
//! (`opentelemetry-proto`), one `gen_ai.evaluation.result` event per oracle result, carrying an
//! ingested OpenTelemetry run's trace and span ids.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value::Value as Any};
use opentelemetry_proto::tonic::logs::v1::LogRecord;

use crate::util::{Env, copy_demo, json};

fn decode(env: &Env, file: &str) -> Vec<LogRecord> {
    let text = String::from_utf8(env.read(file)).unwrap();
    let request: ExportLogsServiceRequest =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not OTLP/JSON logs ({e}): {text}"));
    let resource = &request.resource_logs[0];
    let service = &resource.resource.as_ref().unwrap().attributes[0];
    assert_eq!(service.key, "service.name");
    let scope = &resource.scope_logs[0];
    assert_eq!(scope.scope.as_ref().unwrap().name, "tracereplay");
    scope.log_records.clone()
}

fn attribute<'r>(r: &'r LogRecord, key: &str) -> Option<&'r Any> {
    (r.attributes.iter())
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}

fn text<'r>(r: &'r LogRecord, key: &str) -> &'r str {
    match attribute(r, key) {
        Some(Any::StringValue(s)) => s,
        other => panic!("`{key}` is {other:?}"),
    }
}

#[test]
fn every_oracle_result_is_one_evaluation_event_with_the_required_attributes() {
    let env = Env::new();
    copy_demo(&env, true);
    let vars = [("CI", "true"), ("SOURCE_DATE_EPOCH", "1764547200")];
    let out = env.run_with(
        &["check", "--format", "json", "--otlp", "verdicts.json"],
        &vars,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = json(&out);
    let records = decode(&env, "verdicts.json");
    let results: Vec<&serde_json::Value> = (report["results"].as_array().unwrap().iter())
        .flat_map(|r| r["oracles"].as_array().unwrap().iter())
        .collect();
    assert_eq!(records.len(), results.len());
    for (r, o) in records.iter().zip(&results) {
        assert_eq!(r.event_name, "gen_ai.evaluation.result");
        assert_eq!(r.time_unix_nano, 1_764_547_200_000_000_000);
        assert_eq!(text(r, "gen_ai.evaluation.name"), o["type"]);
        assert_eq!(text(r, "gen_ai.evaluation.score.label"), o["verdict"]);
        assert_eq!(text(r, "gen_ai.evaluation.explanation"), o["message"]);
        match attribute(r, "gen_ai.evaluation.score.value") {
            Some(Any::DoubleValue(v)) => assert_eq!(*v, o["score"].as_f64().unwrap()),
            other => panic!("score {other:?}"),
        }
        let expected = if o["verdict"] == "pass" { 9 } else { 13 };
        assert_eq!(r.severity_number, expected);
        // The demo was not recorded through OpenTelemetry: no ids to carry.
        assert!(r.trace_id.is_empty() && r.span_id.is_empty());
    }
    assert!(
        records
            .iter()
            .any(|r| text(r, "tracereplay.trace.path").ends_with("spirals.trace.ndjson.zst"))
    );
    // The same run gives the same bytes.
    let first = env.read("verdicts.json");
    env.run_with(&["check", "--otlp", "verdicts.json", "-j", "1"], &vars);
    assert_eq!(env.read("verdicts.json"), first);
}

#[test]
fn an_ingested_opentelemetry_run_keeps_its_ids_and_its_verdicts_carry_them() {
    let env = Env::new();
    let fixture = format!(
        "{}/tests/fixtures/ingest/vercel.otlp.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = env.run(&["ingest", "--unkeyed", "-o", "traces", &fixture]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let trace = "traces/order_status/22222222222222222222222222222222.trace.ndjson.zst";
    let header: serde_json::Value = {
        let text = env.run(&["cat", trace]).stdout;
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    };
    assert_eq!(
        header["labels"]["otel.trace_id"],
        "22222222222222222222222222222222"
    );
    let span = header["labels"]["otel.span_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let export: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&fixture).unwrap()).unwrap();
    assert!(
        export
            .to_string()
            .contains(&format!("\"spanId\":\"{span}\"")),
        "{span}"
    );
    env.write(
        "traces/order_status/order_status.scenario.json",
        r#"{"id":"order_status","title":"t","risk":"High","oracles":[{"type":"tool-called","tool":"lookup_order"},{"type":"tool-called","tool":"refund"}]}"#,
    );
    let out = env.run(&["check", "--otlp", "verdicts.json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let records = decode(&env, "verdicts.json");
    assert_eq!(records.len(), 3, "two oracles and run-completed");
    for r in &records {
        assert_eq!(hex(&r.trace_id), "22222222222222222222222222222222");
        assert_eq!(hex(&r.span_id), span);
    }
    let labels: Vec<&str> = records
        .iter()
        .map(|r| text(r, "gen_ai.evaluation.score.label"))
        .collect();
    assert_eq!(labels, ["pass", "fail", "pass"]);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_row_that_cannot_be_judged_is_an_error_event() {
    let env = Env::new();
    crate::util::good_suite(&env);
    env.write("traces/good/broken.trace.ndjson.zst", b"not zstd");
    let out = env.run(&["check", "--otlp", "verdicts.json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let records = decode(&env, "verdicts.json");
    let error = (records.iter())
        .find(|r| text(r, "gen_ai.evaluation.score.label") == "error")
        .expect("an error event");
    assert_eq!(text(error, "gen_ai.evaluation.name"), "tracereplay.judged");
    assert_eq!(text(error, "error.type"), "unreadable");
    assert!(text(error, "gen_ai.evaluation.explanation").contains("broken.trace.ndjson.zst"));
}

/// A one-request OTLP/HTTP receiver on loopback: answers `status` and hands back the request's
/// head (lowercased) and body.
fn receiver(status: u16) -> (String, std::thread::JoinHandle<(String, Vec<u8>)>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line.to_lowercase());
        }
        let length: usize = (head.lines())
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let reason = if status == 200 {
            "OK"
        } else {
            "Internal Server Error"
        };
        let answer = format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-length: 6\r\nconnection: close\r\n\r\nbroken"
        );
        (&stream).write_all(answer.as_bytes()).unwrap();
        (head, body)
    });
    (url, handle)
}

#[test]
fn otlp_endpoint_posts_the_same_logs_with_the_configured_headers() {
    let env = Env::new();
    copy_demo(&env, true);
    let (url, received) = receiver(200);
    let vars = [
        ("CI", "true"),
        ("SOURCE_DATE_EPOCH", "1764547200"),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Basic%20c2VjcmV0LXRva2Vu,x-tenant=ci",
        ),
    ];
    let out = env.run_with(
        &["check", "--otlp", "file.json", "--otlp-endpoint", &url],
        &vars,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (head, body) = received.join().unwrap();
    assert!(head.starts_with("post /v1/logs "), "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    assert!(
        head.contains("authorization: basic c2vjcmv0lxrva2vu"),
        "{head}"
    );
    assert!(head.contains("x-tenant: ci"), "{head}");
    assert_eq!(body, env.read("file.json"), "the same bytes as the file");
    assert!(!out.stdout.contains("c2VjcmV0") && !out.stderr.contains("c2VjcmV0"));

    // An endpoint that refuses: the reports are written, the run ends with exit 2, and the
    // message names the endpoint and its answer, not the headers.
    let (url, received) = receiver(500);
    let out = env.run_with(
        &["check", "--json", "r.json", "--otlp-endpoint", &url],
        &vars,
    );
    received.join().unwrap();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(env.path("r.json").exists());
    assert!(
        out.stderr.contains(&format!(
            "cannot send the OpenTelemetry logs to `{url}/v1/logs`: the endpoint answered 500"
        )) && out.stderr.contains("broken"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("c2VjcmV0"), "{}", out.stderr);
}
