//! The agent-testing rule, checked mechanically: no provider key, no read of a provider-key
//! variable and no HTTP client anywhere in `tests/`, `traces/` or `benches/`. Patterns are
//! assembled at run time so this file does not trip itself.

use std::path::{Path, PathBuf};

use tracereplay_trace::privacy::lint::{SecretsMode, scan_secrets};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn readable(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    if path.extension().is_some_and(|e| e == "zst") {
        return zstd::decode_all(&bytes[..])
            .ok()
            .and_then(|b| String::from_utf8(b).ok());
    }
    String::from_utf8(bytes).ok()
}

#[test]
fn no_provider_keys_key_variables_or_http_clients_in_tests_traces_or_benches() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for dir in ["tests", "traces", "benches"] {
        files(&root.join(dir), &mut all);
    }
    assert!(all.len() > 20, "the guard must see the suite");
    let key_vars: Vec<String> = [
        ["OPENAI", "_API_KEY"],
        ["ANTHROPIC", "_API_KEY"],
        ["GEMINI", "_API_KEY"],
        ["GOOGLE", "_API_KEY"],
        ["MISTRAL", "_API_KEY"],
        ["AZURE_OPENAI", "_API_KEY"],
        ["COHERE", "_API_KEY"],
    ]
    .iter()
    .map(|p| p.concat())
    .collect();
    let clients: Vec<String> = [
        ["reqwest", "::"],
        ["ureq", "::"],
        ["hyper", "::Client"],
        ["isahc", "::"],
        ["surf", "::"],
        ["TcpStream", "::connect"],
        ["curl", "::easy"],
    ]
    .iter()
    .map(|p| p.concat())
    .collect();
    let mut problems = Vec::new();
    for path in &all {
        let Some(text) = readable(path) else { continue };
        let shown = path.strip_prefix(&root).unwrap().display().to_string();
        for f in scan_secrets(
            &shown,
            text.as_bytes(),
            SecretsMode::Fail,
            &Default::default(),
        ) {
            problems.push(format!("{shown}:{}: {}", f.line.unwrap_or(0), f.kind));
        }
        // The replay server's and the recorder's tests talk HTTP to the servers they start
        // themselves, on the loopback address each prints or binds, and the keyboard tests talk
        // to the Chromium they start on the DevTools address it prints: those files may use a
        // client, and may name no URL but a loopback one (`127.0.0.1`, or an address they bound,
        // `http://{addr}`) and the reserved `example.com`, which the recorder refuses before it
        // connects anywhere.
        let talks_to_own_server = [
            "tests/cli/replay.rs",
            "tests/cli/hostile.rs",
            "tests/cli/html_keys.rs",
            "tests/cli/record_faults.rs",
            "tests/cli/replay_live.rs",
            "tests/cli/collect.rs",
            "tests/cli/collect_bounds.rs",
            "tests/cli/record_large.rs",
            "tests/cli/util.rs",
            "tests/cli/documented_loop.rs",
            "tests/cli/pytest_plugin.rs",
            "benches/record.rs",
            "benches/collect.rs",
        ]
        .contains(&shown.as_str());
        if talks_to_own_server {
            for literal in ["http://", "https://"] {
                for (at, _) in text.match_indices(literal) {
                    let rest = &text[at + literal.len()..];
                    let authority: String = rest
                        .chars()
                        .take_while(|c| !matches!(c, '"' | '/' | ' '))
                        .collect();
                    // (Credentials in a URL a test shows to be refused are not its host.)
                    let host = authority.rsplit('@').next().unwrap_or("");
                    let allowed = host.is_empty()
                        || host.starts_with("127.0.0.1")
                        || host.starts_with('{')
                        || host == "example.com"
                        || host.ends_with(".example.com");
                    if !allowed {
                        problems.push(format!(
                            "{shown}: names a URL (`{literal}{authority}`); use the server's own"
                        ));
                    }
                }
            }
        }
        for needle in key_vars.iter().chain(if talks_to_own_server {
            &[][..]
        } else {
            &clients[..]
        }) {
            if text.contains(needle.as_str()) {
                problems.push(format!("{shown}: mentions `{needle}`"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "provider access in the test suite:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_guard_catches_what_it_looks_for() {
    let key = ["sk-", "proj-", &"Zx9".repeat(10)].concat();
    assert_eq!(
        scan_secrets("x", key.as_bytes(), SecretsMode::Fail, &Default::default()).len(),
        1
    );
}
