//! Credentials the recorder knows as credentials are written nowhere: an Azure-style `api-key`,
//! a `Cookie`, an `X-Goog-Api-Key` header and a `?key=` query parameter (shorter than eight
//! characters) — echoed by a 200 answer in its text and its tool arguments, handed back by the
//! agent in a tool result, and echoed by an error body JSON-escaped (`\/`, `\u002b`) where the
//! excerpt is cut — reach no trace, sidecar or output of `record` or `replay serve --upstream`.

use std::io::Write;

use super::record_faults::recorder;
use super::replay::Server;
use crate::util::*;

/// The secrets, built at run time (no key-shaped literal sits in the repository).
fn secrets() -> [String; 4] {
    [
        ["0123456789abcdef", "fedcba9876543210"].concat(),
        ["session=", "Zm9vYmFy/YmF6+cXV1eA", "4f2a9"].concat(),
        ["AI", "za", "SyD-1234567890abcdefghijklmnopqrstu"].concat(),
        ["sh", "rt7"].concat(),
    ]
}

/// An upstream that echoes every credential it was sent: in a 200 answer's text and a tool
/// call's arguments — or, when the request says `please fail`, in a 500 body that JSON-escapes
/// them (`/` as `\/`, `+` as `\u002b`) after 3,990 characters, so that the first straddles the
/// excerpt's cut.
fn echoing_upstream() -> String {
    loopback_upstream(|mut out, r| {
        let mut heard: Vec<String> = (r.headers.iter())
            .filter(|(n, _)| matches!(n.as_str(), "api-key" | "cookie" | "x-goog-api-key"))
            .map(|(_, v)| v.clone())
            .collect();
        heard.extend(r.path.split_once("?key=").map(|(_, q)| q.to_owned()));
        let all = heard.join(" ");
        let fail = String::from_utf8_lossy(&r.body).contains("please fail");
        let (status, answer) = if !fail {
            let args = serde_json::json!({"env": all}).to_string();
            let answer = serde_json::json!({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
                    "content": format!("your keys: {all}"),
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "env", "arguments": args}}]}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}});
            ("200 OK", answer.to_string())
        } else {
            let escaped = all.replace('/', "\\/").replace('+', "\\u002b");
            let pad = "x".repeat(3990);
            let body = format!(r#"{{"error":{{"message":"{pad}{escaped}"}}}}"#);
            ("500 Internal Server Error", body)
        };
        write!(
            out,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        )
    })
}

fn ask(tool_result: Option<&str>, fail: bool) -> String {
    let text = if fail { "please fail" } else { "hi" };
    let mut messages = vec![serde_json::json!({"role": "user", "content": text})];
    if let Some(r) = tool_result {
        messages.push(serde_json::json!({"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "env", "arguments": "{}"}}]}));
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": "call_1", "content": r}));
    }
    serde_json::json!({"model": "m", "messages": messages}).to_string()
}

/// Every spelling of the secrets a writer could leave: as sent, JSON-escaped, percent-encoded.
fn leaked(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for s in secrets() {
        let spellings = [
            s.clone(),
            s.replace('/', "\\/"),
            s.replace('+', "\\u002b"),
            s.replace('/', "\\/").replace('+', "\\u002b"),
            s.replace('/', "%2F")
                .replace('+', "%2B")
                .replace('=', "%3D"),
        ];
        // The half of a secret cut by the excerpt is a leak too.
        let half: String = s.chars().take(s.len() / 2 + 1).collect();
        for sp in spellings
            .into_iter()
            .chain([half])
            .filter(|sp| sp.len() >= 4)
        {
            if text.contains(&sp) {
                out.push(sp);
            }
        }
    }
    out
}

/// Sends the three requests of a session to `path` of `server` (a recorder or a live replay):
/// one answered with the echo, one handing the secrets back in a tool result, one failing with
/// the escaped echo.
fn requests(server: &Server, path: &str) {
    let [azure, cookie, google, short] = secrets();
    let headers = [
        ("api-key", azure.as_str()),
        ("cookie", cookie.as_str()),
        ("x-goog-api-key", google.as_str()),
    ];
    let url = format!("{path}?key={short}");
    let (status, body) = server.post(&url, &headers, &ask(None, false));
    assert_eq!(status, 200, "{body}");
    // The agent's tool printed its environment, and hands it back.
    let printed = format!("ENV: {azure} {cookie} {google} {short}");
    let (status, body) = server.post(&url, &headers, &ask(Some(&printed), false));
    assert_eq!(status, 200, "{body}");
    let (status, _) = server.post(&url, &headers, &ask(None, true));
    assert_eq!(status, 500);
}

#[test]
fn credentials_in_any_spelling_are_written_nowhere_by_record() {
    let env = Env::new();
    let up = echoing_upstream();
    let rec = recorder(&env, &up, &["--dev-raw-prompts"]);
    requests(&rec, "/record/s/keys/v1/chat/completions");
    let (code, printed) = rec.finish(&["s/keys"]);
    assert_eq!(code, 0, "{printed}");
    let trace = trace_body(&env, "out/s/keys.trace.ndjson.zst");
    assert!(trace.contains("[redacted]"), "{trace}");
    assert!(trace.contains(r#""code":"upstream-error""#), "{trace}");
    let everything = format!("{trace}{printed}{}", everything_written(&env, "out"));
    assert_eq!(leaked(&everything), Vec::<String>::new(), "{trace}");
    // And `lint` finds nothing left to flag.
    let lint = env.run(&["lint", "out", "--allow-raw-prompts"]);
    assert_eq!(lint.code, 0, "{}{}", lint.stdout, lint.stderr);
}

#[test]
fn credentials_in_any_spelling_are_written_nowhere_by_a_live_replay() {
    let env = Env::new();
    let up = echoing_upstream();
    env.write(
        "rec/s/keys.trace.ndjson",
        trace_text(
            "s",
            "keys",
            &[r#"{"kind":"inference","output":{"text":"served"}}"#, END],
        ),
    );
    let server = Server::start(
        &env,
        &[
            "rec/",
            "--record",
            "relived/",
            "--upstream",
            &up,
            "--live-from",
            "1",
        ],
    );
    requests(&server, "/v1/chat/completions");
    let (code, printed) = server.finish(&["s/keys"]);
    assert_eq!(code, 0, "{printed}");
    let trace = trace_body(&env, "relived/s/keys.trace.ndjson.zst");
    assert!(trace.contains("[redacted]"), "{trace}");
    assert_eq!(
        leaked(&format!("{trace}{printed}")),
        Vec::<String>::new(),
        "{trace}"
    );
}

/// The bytes of every file under `dir`, decompressed where they are zstd, as text.
fn everything_written(env: &Env, dir: &str) -> String {
    let mut out = String::new();
    for f in files_under(&env.path(dir)) {
        let bytes = env.read(&format!("{dir}/{f}"));
        let bytes = zstd::decode_all(&bytes[..]).unwrap_or(bytes);
        out.push_str(&String::from_utf8_lossy(&bytes));
    }
    out
}
