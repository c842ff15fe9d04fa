//! `ingest` of a collector's bucket (`s3://…/otlp/`), against moto on loopback: the
//! `awss3exporter`'s layout of `otlp_json` and `otlp_proto` objects, gzip or not, read
//! incrementally; and the same files ingested from disk.

use std::io::Write;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde_json::Value;

use crate::s3::S3;
use crate::util::*;

/// The OpenInference fixture: one trace, a root span `agent` and four children.
fn fixture() -> Value {
    let path = format!(
        "{}/tests/fixtures/ingest/openinference.otlp.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The fixture with only the spans `keep` accepts (by span id).
fn with_spans(keep: impl Fn(&str) -> bool) -> Value {
    let mut doc = fixture();
    for rs in doc["resourceSpans"].as_array_mut().unwrap() {
        for ss in rs["scopeSpans"].as_array_mut().unwrap() {
            let spans = ss["spans"].as_array_mut().unwrap();
            spans.retain(|s| keep(s["spanId"].as_str().unwrap()));
        }
    }
    doc
}

fn is_root(span: &str) -> bool {
    span == "a000000000000001"
}

/// The crate's serde mapping reads enums as numbers only.
fn enums_as_numbers(v: &mut Value) {
    let number = |s: &str| match s {
        "SPAN_KIND_INTERNAL" | "STATUS_CODE_OK" => Some(1),
        "SPAN_KIND_SERVER" | "STATUS_CODE_ERROR" => Some(2),
        "SPAN_KIND_CLIENT" => Some(3),
        "SPAN_KIND_UNSPECIFIED" | "STATUS_CODE_UNSET" => Some(0),
        _ => None,
    };
    match v {
        Value::Object(o) => {
            for (k, inner) in o.iter_mut() {
                match inner.as_str().and_then(number) {
                    Some(n) if k == "kind" || k == "code" => *inner = Value::from(n),
                    _ => enums_as_numbers(inner),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(enums_as_numbers),
        _ => {}
    }
}

/// An `otlp_proto` object of `doc`.
pub(super) fn protobuf(mut doc: Value) -> Vec<u8> {
    enums_as_numbers(&mut doc);
    let request: ExportTraceServiceRequest = serde_json::from_value(doc).unwrap();
    request.encode_to_vec()
}

pub(super) fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// The sealed traces under `dir`: (relative path, bytes).
fn written(env: &Env, dir: &str) -> Vec<(String, Vec<u8>)> {
    files_under(&env.path(dir))
        .into_iter()
        .filter(|f| f.ends_with(".trace.ndjson.zst"))
        .map(|f| {
            let bytes = env.read(&format!("{dir}/{f}"));
            (f, bytes)
        })
        .collect()
}

fn ingest(s3: &S3, env: &Env, out: &str) -> Output {
    s3.run(
        env,
        &["ingest", "--unkeyed", "-o", out, "s3://telemetry/otlp/"],
    )
}

const PART: &str = "otlp/year=2026/month=12/day=04/hour=17/minute=05";

#[test]
fn a_collector_bucket_ingests_as_its_files_do_and_again_reads_nothing() {
    let env = Env::with_remote();
    let mut s3 = S3::start(
        &["telemetry=".to_owned() + &env.path("empty").display().to_string()],
        &env.path("s3.log"),
    );
    std::fs::create_dir_all(env.path("empty")).unwrap();
    // The children as gzip'd JSON, the root as protobuf, and a logs object beside them.
    let children = serde_json::to_vec(&with_spans(|s| !is_root(s))).unwrap();
    env.write("up/a.json.gz", gzip(&children));
    env.write("up/b.binpb", protobuf(with_spans(is_root)));
    env.write("up/c.json", br#"{"resourceLogs":[]}"#);
    s3.put(
        "telemetry",
        &format!("{PART}/traces_a.json.gz"),
        &env.path("up/a.json.gz"),
    );
    s3.put(
        "telemetry",
        &format!("{PART}/traces_b.binpb"),
        &env.path("up/b.binpb"),
    );
    s3.put(
        "telemetry",
        &format!("{PART}/logs_c.json"),
        &env.path("up/c.json"),
    );

    let first = ingest(&s3, &env, "bucket");
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let said = format!("{}{}", first.stdout, first.stderr);
    assert!(said.contains("2 export object(s) listed, 2 read"), "{said}");
    assert!(said.contains("1 of other signals skipped"), "{said}");
    assert!(!said.contains(&s3.secret), "{said}");

    // The same trace as `ingest` of the whole export from a file.
    let file = fixture();
    env.write("whole.otlp.json", serde_json::to_vec(&file).unwrap());
    let local = env.run_with(
        &["ingest", "--unkeyed", "-o", "local", "whole.otlp.json"],
        &[("CI", "true")],
    );
    assert_eq!(local.code, 0, "{}", local.stderr);
    let (from_bucket, from_file) = (written(&env, "bucket"), written(&env, "local"));
    assert_eq!(from_bucket.len(), 1, "{from_bucket:?}");
    assert_eq!(
        from_bucket.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        from_file.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    let events = |bytes: &[u8]| -> Vec<Value> {
        let text = String::from_utf8(zstd::decode_all(bytes).unwrap()).unwrap();
        let mut lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // The header names where it came from; the events must be the same.
        lines[0]["source"] = Value::Null;
        lines
    };
    assert_eq!(events(&from_bucket[0].1), events(&from_file[0].1));
    assert_eq!(
        s3.run(&env, &["verify", "bucket"]).code,
        0,
        "the ingested trace is sealed"
    );

    // Again: nothing is read, nothing is written.
    let reads = s3.reads("telemetry");
    let before = written(&env, "bucket");
    let again = ingest(&s3, &env, "bucket");
    assert_eq!(again.code, 0, "{}", again.stderr);
    let said = format!("{}{}", again.stdout, again.stderr);
    assert!(said.contains("2 export object(s) listed, 0 read"), "{said}");
    assert_eq!(s3.reads("telemetry"), reads, "a second ingest read objects");
    assert_eq!(written(&env, "bucket"), before);
}

#[test]
fn a_trace_without_its_root_is_held_back_until_the_root_arrives() {
    let env = Env::with_remote();
    std::fs::create_dir_all(env.path("empty")).unwrap();
    let mut s3 = S3::start(
        &["telemetry=".to_owned() + &env.path("empty").display().to_string()],
        &env.path("s3.log"),
    );
    env.write(
        "up/a.json",
        serde_json::to_vec(&with_spans(|s| !is_root(s))).unwrap(),
    );
    s3.put(
        "telemetry",
        &format!("{PART}/traces_a.json"),
        &env.path("up/a.json"),
    );

    let first = ingest(&s3, &env, "t");
    let said = format!("{}{}", first.stdout, first.stderr);
    assert_eq!(first.code, 0, "{said}");
    assert!(said.contains("1 trace(s) held back"), "{said}");
    assert!(
        written(&env, "t").is_empty(),
        "a trace without its root was written"
    );

    // The root comes in a later object: the older one is read again for its trace.
    env.write("up/b.binpb.gz", gzip(&protobuf(with_spans(is_root))));
    s3.put(
        "telemetry",
        &format!("{PART}/traces_b.binpb.gz"),
        &env.path("up/b.binpb.gz"),
    );
    let second = ingest(&s3, &env, "t");
    let said = format!("{}{}", second.stdout, second.stderr);
    assert_eq!(second.code, 0, "{said}");
    assert!(
        said.contains(
            "2 export object(s) listed, 2 read (1 new or changed, 1 again for their traces)"
        ),
        "{said}"
    );
    assert!(said.contains("0 trace(s) held back"), "{said}");
    let traces = written(&env, "t");
    assert_eq!(traces.len(), 1, "{said}");
    let text = String::from_utf8(zstd::decode_all(&traces[0].1[..]).unwrap()).unwrap();
    assert!(
        text.contains("\"get_time\""),
        "the children's tool call is in the trace: {text}"
    );
}

#[test]
fn a_corrupt_object_is_a_clear_error_and_is_not_read_again_until_it_changes() {
    let env = Env::with_remote();
    std::fs::create_dir_all(env.path("empty")).unwrap();
    let mut s3 = S3::start(
        &["telemetry=".to_owned() + &env.path("empty").display().to_string()],
        &env.path("s3.log"),
    );
    env.write("up/bad.json.gz", b"not gzip at all");
    env.write("up/ok.json", serde_json::to_vec(&fixture()).unwrap());
    s3.put(
        "telemetry",
        &format!("{PART}/traces_bad.json.gz"),
        &env.path("up/bad.json.gz"),
    );
    s3.put(
        "telemetry",
        &format!("{PART}/traces_ok.json"),
        &env.path("up/ok.json"),
    );

    let first = ingest(&s3, &env, "t");
    let said = format!("{}{}", first.stdout, first.stderr);
    assert_ne!(first.code, 0, "a corrupt object passed: {said}");
    assert!(
        said.contains("traces_bad.json.gz"),
        "the object is named: {said}"
    );
    assert!(!said.contains(&s3.secret), "{said}");
    // The good object's trace is not lost to the bad one.
    assert_eq!(written(&env, "t").len(), 1, "{said}");

    let reads = s3.reads("telemetry");
    let again = ingest(&s3, &env, "t");
    let said = format!("{}{}", again.stdout, again.stderr);
    assert_eq!(again.code, 0, "reported once: {said}");
    assert_eq!(s3.reads("telemetry"), reads, "{said}");
}

#[test]
fn a_collector_file_on_disk_ingests_by_its_name() {
    let env = Env::with_remote();
    env.write("x.binpb", protobuf(fixture()));
    env.write("y.json.gz", gzip(&serde_json::to_vec(&fixture()).unwrap()));
    for (input, out) in [("x.binpb", "p"), ("y.json.gz", "g")] {
        let o = env.run_with(
            &["ingest", "--unkeyed", "-o", out, input],
            &[("CI", "true")],
        );
        assert_eq!(o.code, 0, "{input}: {}{}", o.stdout, o.stderr);
        assert_eq!(written(&env, out).len(), 1, "{input}");
    }
    let (p, g) = (written(&env, "p"), written(&env, "g"));
    assert_eq!(p[0].0, g[0].0, "the same trace by name");
}
