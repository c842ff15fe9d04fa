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
    /// `raw-prompt`, `raw-prompt-sidecar`, or a secret kind (`openai-key`, `anthropic-key`,
    /// `aws-access-key`, `github-token`, `slack-token`, `bearer-token`, `private-key`).
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
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
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
    (
        "bearer_token",
        r"(?i:\bbearer\s+)(?P<bearer>[A-Za-z0-9\-._~+/]{20,}=*)",
    ),
];

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
pub fn read_allow_file(path: &Utf8Path) -> HashSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Secrets in `bytes` (a decompressed trace or a scenario file), reported against `file`. One
/// pass over the whole buffer; line numbers are counted only when something is found.
pub fn scan_secrets(
    file: &str,
    bytes: &[u8],
    mode: SecretsMode,
    waived: &HashSet<String>,
) -> Vec<Finding> {
    if mode == SecretsMode::Off {
        return Vec::new();
    }
    let mut out = Vec::new();
    for caps in scanner().captures_iter(bytes) {
        let Some((kind, m)) = KINDS
            .iter()
            .find_map(|(name, _)| caps.name(name).map(|m| (*name, m)))
        else {
            continue;
        };
        let secret_match = caps.name("bearer").unwrap_or(m);
        let secret = String::from_utf8_lossy(secret_match.as_bytes());
        let fp = fingerprint(&secret);
        if waived.contains(&fp) {
            continue;
        }
        let line = memchr::memchr_iter(b'\n', &bytes[..m.start()]).count() + 1;
        let kind = kind.replace('_', "-");
        out.push(Finding {
            file: file.to_owned(),
            line: Some(line),
            message: format!("{kind} found; remove it and rotate it, or waive a false positive by adding `{fp}` to `.tracereplay-allow`"),
            kind,
            prefix: Some(secret.chars().take(4).collect()),
            fingerprint: Some(fp),
            fails: mode == SecretsMode::Fail,
        });
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
    let shown = crate::discover::display_path;
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
