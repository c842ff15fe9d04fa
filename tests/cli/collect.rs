//! `tracereplay collect`, the OTLP/HTTP receiver: the run it writes from a POSTed export is the
//! trace `ingest` makes of the same export written to a file (JSON, and protobuf gzipped), and
//! bad requests get the answer the docs give — malformed protobuf 400, a wrong content type 415,
//! a gzip bomb 413, a full receiver 503 with Retry-After — with nothing of them kept; a run
//! whose root span never comes is written when it goes idle or the receiver stops.

use super::remote_ingest::{gzip, protobuf};
use super::replay::Server;
use crate::util::*;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/ingest/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// POSTs `body` to the receiver; the status, the Retry-After header and the body text.
pub(super) fn post(
    server: &Server,
    kind: &str,
    gzipped: bool,
    body: &[u8],
) -> (u16, Option<String>, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut req = agent
        .post(&format!("{}/v1/traces", server.url))
        .header("content-type", kind);
    if gzipped {
        req = req.header("content-encoding", "gzip");
    }
    let mut resp = req.send(body).unwrap();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (
        resp.status().as_u16(),
        retry,
        resp.body_mut().read_to_string().unwrap_or_default(),
    )
}

/// The first export of the `otlp.jsonl` fixture with a span of a second trace added (a root):
/// one request that opens two runs.
fn two_runs_export() -> serde_json::Value {
    let two = fixture("otlp.jsonl");
    let first_line = two.split(|b| *b == b'\n').next().unwrap().to_vec();
    let mut doc: serde_json::Value = serde_json::from_slice(&first_line).unwrap();
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .unwrap();
    let mut other = spans[0].clone();
    other["traceId"] = serde_json::json!("ffffffffffffffffffffffffffffffff");
    other.as_object_mut().unwrap().remove("parentSpanId");
    spans.push(other);
    doc
}

pub(super) fn collect(env: &Env, extra: &[&str]) -> Server {
    let mut args = vec![
        "collect",
        "--out",
        "collected",
        "--unkeyed",
        "--settle",
        "0.2",
    ];
    args.extend_from_slice(extra);
    Server::spawn(env, &args, &[])
}

/// Every trace under `dir`, decompressed: (relative path, text).
fn traces(env: &Env, dir: &str) -> Vec<(String, String)> {
    files_under(&env.path(dir))
        .into_iter()
        .filter(|f| f.ends_with(".trace.ndjson.zst"))
        .map(|f| {
            let bytes = zstd::decode_all(&env.read(&format!("{dir}/{f}"))[..]).unwrap();
            (f, String::from_utf8(bytes).unwrap())
        })
        .collect()
}

#[test]
fn a_collected_run_is_the_trace_ingest_makes_of_the_same_export() {
    let env = Env::new();
    let json = fixture("openinference.otlp.json");
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let proto = protobuf(doc);
    env.write("export.json", &json);
    env.write("export.binpb", &proto);
    for (from, file, kind, body, gzipped) in [
        (
            "otlp-json",
            "export.json",
            "application/json",
            json.clone(),
            false,
        ),
        (
            "otlp-proto",
            "export.binpb",
            "application/x-protobuf",
            gzip(&proto),
            true,
        ),
    ] {
        let _ = std::fs::remove_dir_all(env.path("collected"));
        let _ = std::fs::remove_dir_all(env.path("ingested"));
        let server = collect(&env, &[]);
        let (status, _, text) = post(&server, kind, gzipped, &body);
        assert_eq!(status, 200, "{from}: {text}");
        // The root span came: the run is written once it settled, before the receiver stops.
        std::thread::sleep(std::time::Duration::from_millis(800));
        assert!(
            !traces(&env, "collected").is_empty(),
            "{from}: written before the stop"
        );
        let (code, printed) = server.finish(&[]);
        assert_eq!(code, 0, "{from}: {printed}");
        assert!(printed.contains("collected agent/"), "{from}: {printed}");
        let out = env.run(&[
            "ingest",
            "--unkeyed",
            "--from",
            from,
            "-o",
            "ingested",
            file,
        ]);
        assert_eq!(out.code, 0, "{from}: {}{}", out.stdout, out.stderr);
        let (collected, ingested) = (traces(&env, "collected"), traces(&env, "ingested"));
        assert_eq!(collected.len(), 1, "{from}");
        assert_eq!(collected, ingested, "{from}");
    }
}

#[test]
fn bad_requests_are_answered_as_the_docs_say_and_nothing_of_them_is_kept() {
    let env = Env::new();
    let server = collect(&env, &["--max-open-runs", "1"]);
    let (status, _, text) = post(
        &server,
        "application/x-protobuf",
        false,
        b"\x0a\xff\xff\xff\xff\x0fnot protobuf",
    );
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("not kept"), "{text}");
    let (status, _, text) = post(&server, "text/plain", false, b"hello");
    assert_eq!(status, 415, "{text}");
    // A gzip bomb: 100 MB of zeros in about 100 KB.
    let bomb = gzip(&vec![0u8; 100 << 20]);
    assert!(bomb.len() < 1 << 20);
    let (status, _, text) = post(&server, "application/x-protobuf", true, &bomb);
    assert_eq!(status, 413, "{text}");
    // Two runs at once, where one may be open: 503, retry later, nothing kept.
    let doc = two_runs_export();
    let (status, retry, text) = post(
        &server,
        "application/json",
        false,
        doc.to_string().as_bytes(),
    );
    assert_eq!(status, 503, "{text}");
    assert_eq!(retry.as_deref(), Some("1"));
    // A second request refused alike is counted, not said again; a path it does not receive is
    // refused too (an exporter of metrics pointed at it).
    let (status, _, _) = post(&server, "text/plain", false, b"again");
    assert_eq!(status, 415);
    let metrics = ureq::post(&format!("{}/v1/metrics", server.url))
        .config()
        .http_status_as_error(false)
        .build()
        .content_type("application/x-protobuf")
        .send(&b""[..])
        .unwrap();
    assert_eq!(metrics.status().as_u16(), 404);
    let (code, printed) = server.finish(&[]);
    assert_eq!(
        code, 1,
        "requests were refused and their data lost: {printed}"
    );
    assert!(traces(&env, "collected").is_empty(), "{printed}");
    assert_eq!(
        printed.matches("refused a request: 415").count(),
        1,
        "{printed}"
    );
    for want in [
        "refused a request: 400 not kept:",
        "refused a request: 413 ",
        "refused a request: 404 `/v1/metrics` is not received",
        "refused a request: 503 the receiver is full",
        "collect: 0 run(s) written, 6 request(s) refused: 1 × 400 the body is not a readable OTLP trace export; 2 × 415 content type `text/plain` is not read; 1 × 413 ",
        "1 × 503 the receiver was full (back-pressure: the exporter retries); 1 × 404 `/v1/metrics` is not received",
    ] {
        assert!(printed.contains(want), "{want}\n{printed}");
    }
}

/// Back-pressure alone (503, which exporters retry) loses nothing: the receiver still exits 0.
#[test]
fn back_pressure_alone_is_not_a_failure() {
    let env = Env::new();
    let server = collect(&env, &["--max-open-runs", "1"]);
    let doc = two_runs_export();
    let (status, _, text) = post(
        &server,
        "application/json",
        false,
        doc.to_string().as_bytes(),
    );
    assert_eq!(status, 503, "{text}");
    let (code, printed) = server.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains("collect: 0 run(s) written, 1 request(s) refused: 1 × 503"),
        "{printed}"
    );
}

#[test]
fn a_run_whose_root_never_comes_is_written_when_idle_or_at_the_stop() {
    let env = Env::new();
    let json = fixture("openinference.otlp.json");
    let mut doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    // Only the spans that have a parent: the root never comes.
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .unwrap();
    spans.retain(|s| {
        s.get("parentSpanId")
            .is_some_and(|p| p.as_str().is_some_and(|p| !p.is_empty()))
    });
    assert!(!spans.is_empty());
    let body = doc.to_string();
    for (extra, wait) in [(&["--idle", "0.3"][..], 1000), (&[][..], 0)] {
        let _ = std::fs::remove_dir_all(env.path("collected"));
        let server = collect(&env, extra);
        let (status, _, text) = post(&server, "application/json", false, body.as_bytes());
        assert_eq!(status, 200, "{text}");
        std::thread::sleep(std::time::Duration::from_millis(wait));
        if wait > 0 {
            assert_eq!(
                traces(&env, "collected").len(),
                1,
                "idle: written before the stop"
            );
        }
        let (code, printed) = server.finish(&[]);
        assert_eq!(code, 0, "{printed}");
        assert_eq!(traces(&env, "collected").len(), 1, "{printed}");
        // In logs, a line as the run opened: the receiver never runs blind.
        assert_eq!(printed.matches("receiving run ").count(), 1, "{printed}");
    }
}

/// The tests run the binary the README builds: the default features, which read OTLP protobuf
/// (what the OpenTelemetry SDKs export) and leave object storage out — so a documented path that
/// needed a non-default feature would fail here, as it fails for a user.
#[test]
fn the_binary_under_test_is_the_default_build_which_reads_otlp_protobuf() {
    let env = Env::new();
    let remote = env.run(&["check", "s3://bucket/prefix/"]);
    assert_eq!(remote.code, 2, "{}", remote.stderr);
    assert!(
        remote.stderr.contains("built without the `remote` feature"),
        "{}",
        remote.stderr
    );
    let export = fixture("otlp.jsonl");
    let first = export.split(|b| *b == b'\n').next().unwrap();
    env.write(
        "spans.binpb",
        protobuf(serde_json::from_slice(first).unwrap()),
    );
    let ingested = env.run(&["ingest", "--unkeyed", "-o", "out", "spans.binpb"]);
    assert_eq!(ingested.code, 0, "{}{}", ingested.stdout, ingested.stderr);
    assert!(!traces(&env, "out").is_empty(), "{}", ingested.stdout);
}
