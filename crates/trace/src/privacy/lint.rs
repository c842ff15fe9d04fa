//! The privacy and secret lint: raw prompt text, raw-prompt sidecars, and secrets in traces and
//! scenarios. A finding names its file, line, kind and a fingerprint (`b3:` + 12 hex digits of
//! the secret), never the secret itself beyond a 4-character prefix.

use std::collections::HashSet;
use std::sync::OnceLock;

use camino::Utf8Path;
use serde::{Deserialize, Serialize};

/// What the lint found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Finding {
    /// The file, relative to the working directory.
    pub file: String,
    /// 1-based line, where there is one.
    pub line: Option<usize>,
    /// `raw-prompt`, `raw-prompt-sidecar`, `unreadable` (lint), or a secret kind (`openai-key`,
    /// `anthropic-key`, `aws-access-key`, `aws-secret-key`, `github-token`, `slack-token`,
    /// `bearer-token`, `jwt`, `private-key`).
    pub kind: String,
    /// `b3:` + the first 12 hex digits of the secret's BLAKE3 (for waivers).
    pub fingerprint: Option<String>,
    /// At most the first 4 characters of the secret.
    pub prefix: Option<String>,
    /// What to do about it.
    pub message: String,
    /// Whether it fails the run (`--secrets warn` and allowed sidecars do not).
    pub fails: bool,
}

/// Everything `lint` found, sorted: the document its formats write (the JSON format writes the
/// list itself).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct LintReport(pub Vec<Finding>);

impl LintReport {
    /// How many findings fail the run.
    pub fn failing(&self) -> usize {
        self.0.iter().filter(|f| f.fails).count()
    }
}

impl Finding {
    /// `file:line  kind  fingerprint`, as both `check` and `lint` print it.
    pub fn located(&self) -> String {
        let at = self.line.map(|l| format!(":{l}")).unwrap_or_default();
        let fp = self
            .fingerprint
            .as_deref()
            .map(|fp| format!("  {fp}"))
            .unwrap_or_default();
        format!("{}{at}  {}{fp}", self.file, self.kind)
    }
}

/// `--secrets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecretsMode {
    /// Secrets fail the run.
    #[default]
    Fail,
    /// Secrets are reported only.
    Warn,
    /// No secret scan.
    Off,
}

const KINDS: &[(&str, &str)] = &[
    // The whole block when it is there (so a masked key hides its body too; JSON writes its
    // line ends as `\n`), else the header alone.
    (
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:[A-Za-z0-9+/=\s\\]*-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)?",
    ),
    ("anthropic_key", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    (
        "openai_key",
        r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
    ),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    ("slack_token", r"\bxox[baprs]-[A-Za-z0-9\-]{10,}"),
    // A Google API key: `AIza` and 35 more characters.
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    // An Azure (OpenAI, API Management) key is 32 hex digits, too plain to find alone: found
    // where it is named, as a header or a setting, in the spellings clients write.
    (
        "azure_key",
        r#"(?:api-key|Api-Key|API-KEY|api_key|API_KEY|apiKey|Ocp-Apim-Subscription-Key|ocp-apim-subscription-key)["']?\s*[:=]\s*["']?(?P<azure>[0-9a-fA-F]{32})\b"#,
    ),
    // A cookie's `name=value` where a `Cookie` (or `Set-Cookie`) header is written.
    (
        "cookie",
        r#"(?:Cookie|cookie|COOKIE)["']?\s*[:=]\s*["']?(?P<cookieval>[A-Za-z0-9_\-.]{1,64}=[A-Za-z0-9_\-.%+/=]{16,})"#,
    ),
    (
        "bearer_token",
        r"(?i:\bbearer\s+)(?P<bearer>[A-Za-z0-9\-._~+/]{20,}=*)",
    ),
    // A JSON Web Token: two base64url JSON segments (`eyJ` is `{"`) and a signature.
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    // An AWS secret access key is 40 base64 characters, too plain to find alone: found where it
    // is named (`aws_secret_access_key = …`, `"SecretAccessKey": "…"`), in the four spellings
    // AWS's own tools write (a case-insensitive name would cost the scan its fast literal
    // search: 10 % of a cold `check`).
    (
        "aws_secret_key",
        r#"(?:secret_access_key|SECRET_ACCESS_KEY|SecretAccessKey|secretAccessKey)["']?\s*[:=]\s*["']?(?P<awssecret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)"#,
    ),
];

/// The capture groups that hold the secret itself when the pattern also matches its context.
const INNER: &[&str] = &["bearer", "awssecret", "azure", "cookieval"];

fn scanner() -> &'static regex::bytes::Regex {
    static RE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let alternation: Vec<String> = KINDS
            .iter()
            .map(|(name, re)| format!("(?P<{name}>{re})"))
            .collect();
        regex::bytes::Regex::new(&alternation.join("|")).expect("the secret patterns are valid")
    })
}

/// `b3:` + the first 12 hex digits of BLAKE3 of `secret`.
pub fn fingerprint(secret: &str) -> String {
    format!("b3:{}", &blake3::hash(secret.as_bytes()).to_hex()[..12])
}

/// Fingerprints waived by `.tracereplay-allow` (one per line; `#` starts a comment).
///
/// Only a regular file of at most 1 MiB is read; anything else (a FIFO, `/dev/zero`) waives
/// nothing.
pub fn read_allow_file(path: &Utf8Path) -> HashSet<String> {
    let bytes = crate::fsutil::read_regular(path, 1 << 20, "allow file").unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// One secret found: its kind, the secret, and where it starts.
pub struct Hit<'b> {
    /// `openai_key`…
    pub kind: &'static str,
    /// The secret.
    pub secret: std::borrow::Cow<'b, str>,
    /// Where it starts.
    pub start: usize,
}

/// Every secret in `bytes`, in order.
pub fn hits(bytes: &[u8]) -> impl Iterator<Item = Hit<'_>> {
    scanner().captures_iter(bytes).filter_map(|caps| {
        let (kind, m) = KINDS
            .iter()
            .find_map(|(name, _)| caps.name(name).map(|m| (*name, m)))?;
        let secret = INNER.iter().find_map(|g| caps.name(g)).unwrap_or(m);
        Some(Hit {
            kind,
            secret: String::from_utf8_lossy(secret.as_bytes()),
            start: secret.start(),
        })
    })
}

/// Every string value of `v` (object keys included), depth first.
fn strings_of(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|i| strings_of(i, out)),
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                out.push(k.clone());
                strings_of(v, out);
            }
        }
        _ => {}
    }
}

/// Secrets hidden from the byte scan by JSON escapes (`\u0067hp_…` is `ghp_…`): each line (or,
/// for a file that is one JSON document, the whole file) holding a `\u` escape is decoded and
/// its strings are scanned. Returns (line, hit) pairs; cheap when nothing is escaped.
fn escaped_hits(bytes: &[u8]) -> Vec<(Option<usize>, String, &'static str)> {
    let finder = memchr::memmem::Finder::new(b"\\u");
    if finder.find(bytes).is_none() {
        return Vec::new();
    }
    let scan = |v: &serde_json::Value, line: Option<usize>, out: &mut Vec<_>| {
        let mut strings = Vec::new();
        strings_of(v, &mut strings);
        for s in strings {
            for h in hits(s.as_bytes()) {
                out.push((line, h.secret.into_owned(), h.kind));
            }
        }
    };
    let mut out = Vec::new();
    if let Ok(whole) = serde_json::from_slice::<serde_json::Value>(bytes) {
        scan(&whole, None, &mut out);
        return out;
    }
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if finder.find(line).is_some() {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) {
                scan(&v, Some(i + 1), &mut out);
            }
        }
    }
    out
}

/// Secrets in `bytes` (a decompressed trace or a scenario file), reported against `file`: one
/// pass over the raw bytes, plus the decoded strings of any line that holds a JSON `\u` escape.
/// Line numbers are counted only when something is found.
pub fn scan_secrets(
    file: &str,
    bytes: &[u8],
    mode: SecretsMode,
    waived: &HashSet<String>,
) -> Vec<Finding> {
    if mode == SecretsMode::Off {
        return Vec::new();
    }
    let mut out: Vec<Finding> = Vec::new();
    let mut push = |line: Option<usize>, secret: &str, kind: &str| {
        let fp = fingerprint(secret);
        if waived.contains(&fp)
            || out
                .iter()
                .any(|f| f.line == line && f.fingerprint.as_deref() == Some(fp.as_str()))
        {
            return;
        }
        let kind = kind.replace('_', "-");
        out.push(Finding {
            file: file.to_owned(),
            line,
            message: format!("{kind} found; remove it and rotate it, or waive a false positive by adding `{fp}` to `.tracereplay-allow`"),
            kind,
            prefix: Some(secret.chars().take(4).collect()),
            fingerprint: Some(fp),
            fails: mode == SecretsMode::Fail,
        });
    };
    for h in hits(bytes) {
        let line = memchr::memchr_iter(b'\n', &bytes[..h.start]).count() + 1;
        push(Some(line), &h.secret, h.kind);
    }
    for (line, secret, kind) in escaped_hits(bytes) {
        push(line, &secret, kind);
    }
    out
}

/// Secrets in scenario files (given with their bytes) and a finding per raw-prompt sidecar: what
/// `check` and `lint` report besides the traces themselves.
pub fn scan_scenarios_and_sidecars(
    scenarios: &[(&Utf8Path, &[u8])],
    sidecars: &[camino::Utf8PathBuf],
    mode: SecretsMode,
    waived: &HashSet<String>,
    allow_raw_prompts: bool,
) -> Vec<Finding> {
    use rayon::prelude::*;
    let shown = crate::paths::display_path;
    let mut out: Vec<Finding> = scenarios
        .par_iter()
        .flat_map_iter(|(path, bytes)| scan_secrets(&shown(path), bytes, mode, waived))
        .collect();
    out.extend(
        sidecars
            .iter()
            .map(|f| sidecar_finding(&shown(f), allow_raw_prompts)),
    );
    out
}

/// The sidecar files a trace may have beside it.
pub fn sidecars_of(trace: &Utf8Path) -> Vec<camino::Utf8PathBuf> {
    let name = trace.file_name().unwrap_or("");
    let stem = name.strip_suffix(".zst").unwrap_or(name);
    let Some(stem) = stem.strip_suffix(".trace.ndjson") else {
        return Vec::new();
    };
    ["prompts.ndjson", "prompts.ndjson.zst"]
        .iter()
        .map(|s| trace.with_file_name(format!("{stem}.{s}")))
        .filter(|p| p.exists())
        .collect()
}

/// A raw-prompt sidecar: allowed only with `--allow-raw-prompts`.
pub fn sidecar_finding(file: &str, allowed: bool) -> Finding {
    Finding {
        file: file.to_owned(),
        line: None,
        kind: "raw-prompt-sidecar".into(),
        fingerprint: None,
        prefix: None,
        message: if allowed {
            "raw prompt text in a sidecar, admitted by `--allow-raw-prompts`; keep sidecars out of version control".into()
        } else {
            "raw prompt text in a sidecar; delete it (and `.gitignore` `*.prompts.ndjson*`), or pass `--allow-raw-prompts` on a developer machine".into()
        },
        fails: !allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fake secrets are assembled at run time so no literal key ever sits in the repository.
    fn fake(parts: &[&str]) -> String {
        parts.concat()
    }

    #[test]
    fn every_kind_is_caught_without_leaking_the_secret() {
        let body = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0";
        let cases = [
            (fake(&["sk-", "proj-", body]), "openai-key"),
            (fake(&["sk-", body]), "openai-key"),
            (fake(&["sk-", "ant-", "api03-", body]), "anthropic-key"),
            (fake(&["AK", "IA", "IOSFODNN7EXAMPLE"]), "aws-access-key"),
            (fake(&["gh", "p_", body]), "github-token"),
            (fake(&["github", "_pat_", body]), "github-token"),
            (fake(&["xo", "xb-", "1234567890-abcdefghij"]), "slack-token"),
            (
                fake(&[
                    "Authorization: Bearer ",
                    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
                ]),
                "bearer-token",
            ),
            (
                fake(&["-----BEGIN ", "RSA PRIVATE", " KEY-----"]),
                "private-key",
            ),
            (
                fake(&[
                    "eyJhbGciOiJIUzI1NiJ9",
                    ".eyJzdWIiOiIxMjM0NTY3ODkwIn0",
                    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                ]),
                "jwt",
            ),
            (
                fake(&[
                    "aws_secret_access_key = ",
                    "wJalrXUtnFEMI/K7MDENG/",
                    "bPxRfiCYEXAMPLEKEY",
                ]),
                "aws-secret-key",
            ),
            (
                fake(&["AI", "za", "SyD-1234567890abcdefghijklmnopqrstu"]),
                "google-api-key",
            ),
            (
                fake(&["api-key: ", "0123456789abcdef", "fedcba9876543210"]),
                "azure-key",
            ),
            (
                fake(&["Cookie: ", "session=", "Zm9vYmFyYmF6cXV1eA", "-4f2a9"]),
                "cookie",
            ),
        ];
        for (secret, kind) in cases {
            let text = format!(
                "{{\"kind\":\"note\",\"seq\":1}}\n{{\"kind\":\"note\",\"seq\":2,\"text\":\"use {secret} here\"}}\n"
            );
            let found = scan_secrets(
                "t.trace.ndjson",
                text.as_bytes(),
                SecretsMode::Fail,
                &HashSet::new(),
            );
            assert_eq!(found.len(), 1, "{kind}: {found:?}");
            let f = &found[0];
            assert_eq!(
                (f.kind.as_str(), f.line, f.fails),
                (kind, Some(2), true),
                "{secret}"
            );
            let shown = serde_json::to_string(f).unwrap();
            // Nothing of the secret beyond a 4-character prefix appears in the finding: no run
            // of 5 characters from its distinctive tail.
            let tail: Vec<char> = secret
                .chars()
                .rev()
                .take(12)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            for w in tail.windows(5) {
                let w: String = w.iter().collect();
                assert!(!shown.contains(&w), "{kind}: `{w}` leaked in {shown}");
            }
        }
    }

    /// A secret with its characters written as JSON `\u` escapes is still found, on its line.
    #[test]
    fn escaped_secrets_are_found_in_the_decoded_strings() {
        let token = fake(&["gh", "p_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"]);
        let escaped: String = token
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if i < 3 {
                    format!("\\u{:04x}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect();
        let text = format!(
            "{{\"kind\":\"note\",\"seq\":1}}\n{{\"kind\":\"note\",\"seq\":2,\"text\":\"{escaped}\"}}\n"
        );
        assert!(!text.contains(&token));
        let found = scan_secrets("t", text.as_bytes(), SecretsMode::Fail, &HashSet::new());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].kind.as_str(), found[0].line),
            ("github-token", Some(2))
        );
        assert_eq!(found[0].fingerprint, Some(fingerprint(&token)));
        // A scenario file is one JSON document: found there too.
        let doc = format!("{{\n  \"value\": \"{escaped}\"\n}}");
        assert_eq!(
            scan_secrets("s", doc.as_bytes(), SecretsMode::Fail, &HashSet::new()).len(),
            1
        );
    }

    #[test]
    fn masking_keeps_the_fingerprint_and_a_prefix_only() {
        let token = fake(&["gh", "p_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"]);
        let fp = fingerprint(&token);
        let text = format!("use {token}!");
        let masked = crate::privacy::mask::mask_secrets(&text, &HashSet::new());
        assert_eq!(masked, format!("use [secret github-token {fp} ghp_…]!"));
        let mut v = serde_json::json!({"a": [format!("x {token}")], token.clone(): 1});
        crate::privacy::mask::mask_value(&mut v, &HashSet::new());
        assert!(!v.to_string().contains(&token[5..]), "{v}");
        // A waived fingerprint is a declared false positive: left as it is.
        let kept = crate::privacy::mask::mask_secrets(&token, &HashSet::from([fp]));
        assert_eq!(kept, token);
    }

    #[test]
    fn waivers_and_modes() {
        let secret = fake(&["AK", "IA", "IOSFODNN7EXAMPLE"]);
        let text = format!("x {secret} y\n");
        let fp = fingerprint(&secret);
        assert!(
            scan_secrets(
                "f",
                text.as_bytes(),
                SecretsMode::Fail,
                &HashSet::from([fp.clone()])
            )
            .is_empty()
        );
        assert!(scan_secrets("f", text.as_bytes(), SecretsMode::Off, &HashSet::new()).is_empty());
        assert!(!scan_secrets("f", text.as_bytes(), SecretsMode::Warn, &HashSet::new())[0].fails);
        assert_eq!(fp.len(), 15);
        assert!(
            scan_secrets(
                "f",
                b"sk-short and AKIA-not-a-key and bearer tokens",
                SecretsMode::Fail,
                &HashSet::new()
            )
            .is_empty()
        );
    }
}
