//! `tracereplay init`: lay out `traces/` with an example scenario and sealed trace, its approved
//! baseline, the project file, a GitHub Actions workflow and `.gitignore` lines, in the current
//! directory. Never overwrites anything (`.gitignore` is appended to, never duplicated).

use std::io::Write;

use anyhow::Context;
use camino::Utf8PathBuf;
use tracereplay::trace::PromptHasher;
use tracereplay::trace::{
    Args, EventBody, Header, Json, Limits, RunStatus, Str, TraceFile, TraceWriter, parse_trace,
};
use tracereplay_core::baseline::{BaselineFile, BaselineStore, Behaviour};
use tracereplay_core::oracle::judge;
use tracereplay_core::scenario::load_file;
use tracereplay_trace::fsutil::Confined;

use super::exit;

const SCENARIO: &str = r#"{
  "id": "example.search",
  "title": "The agent answers with one read-only search",
  "risk": "High",
  "type": "agent",
  "tags": ["tool-use"],
  "input": { "userMessage": "Find the project's documentation page." },
  "expected": { "mustCallTools": ["web_search"], "mustNotCallTools": ["shell"], "maxToolCalls": 2 },
  "oracles": [
    { "type": "tool-called" },
    { "type": "tool-not-called" },
    { "type": "max-tool-calls" },
    { "type": "final-answer-contains", "value": "documentation" },
    { "type": "approval-not-required" },
    { "type": "no-unsafe-tool" }
  ]
}
"#;

/// The project file `init` writes.
const PROJECT: &str = r#"# tracereplay's project file: where the suite is, and how it is judged.
paths = ["traces"]
baselines = "baselines"
fail-on = "high"
drift = "default"

# Picked automatically under CI: traces must be sealed there.
[profile.ci]
require-sealed = true
"#;

/// What `init` adds to `.gitignore` (each line once).
const GITIGNORE: &[&str] = &[
    "# tracereplay: the result cache, run folders, pending baselines, raw-prompt sidecars,",
    "# and the temporary files of a write in progress (or of a run that was killed)",
    ".tracereplay/",
    "*.baseline.json.new",
    "*.baseline.json.deleted",
    "*.prompts.ndjson",
    ".tracereplay-*.tmp",
];

/// The GitHub Actions workflow `init` writes, with `{VERSION}` for the version that writes it
/// ([`workflow`]). The gate needs only to read the repository; publishing the JUnit report as
/// a check needs `checks: write`, which a fork's pull request never gets, so it is a job of its
/// own that asks for it and is skipped where the token could not write.
const CI: &str = r#"# Gate pull requests (and pushes to the default branch) on recorded agent runs.
name: agent-traces
on:
  pull_request:
  push:
    branches: [main]
permissions:
  contents: read
env:
  # The version that wrote this workflow: installed exactly, and part of the cache key, so a
  # new release is never picked up unannounced. Raise it deliberately.
  TRACEREPLAY_VERSION: "{VERSION}"
jobs:
  tracereplay:
    runs-on: ubuntu-latest
    permissions:
      contents: read
    env:
      # Authenticates the result cache restored below (make one with `tracereplay key new`
      # and store it as a repository secret); without it, every trace is judged afresh.
      TRACEREPLAY_CACHE_KEY: ${{ secrets.TRACEREPLAY_CACHE_KEY }}
    steps:
      - uses: actions/checkout@v4
      - name: Restore the tracereplay binary
        id: bin
        uses: actions/cache@v4
        with:
          path: ~/.cargo/bin/tracereplay
          key: tracereplay-bin-${{ runner.os }}-${{ env.TRACEREPLAY_VERSION }}
      - name: Install tracereplay
        if: steps.bin.outputs.cache-hit != 'true'
        run: cargo install --locked tracereplay --version "=$TRACEREPLAY_VERSION"
      - name: Restore the result cache
        uses: actions/cache@v4
        with:
          path: .tracereplay/cache
          # A fresh checkout changes every file's time; the cache still hits by content.
          key: tracereplay-cache-${{ env.TRACEREPLAY_VERSION }}-${{ github.sha }}
          restore-keys: tracereplay-cache-${{ env.TRACEREPLAY_VERSION }}-
      - name: Quality gates
        run: tracereplay gates
      - name: Check
        run: >
          tracereplay check --profile ci --format github
          --junit tracereplay-junit.xml --artifacts .tracereplay/runs
      - name: Upload reports
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: tracereplay-reports
          path: |
            .tracereplay/runs
            tracereplay-junit.xml
  publish:
    # Shows the JUnit report as a check. A pull request from a fork gets a read-only token,
    # so it is skipped there (the reports are still uploaded above).
    needs: tracereplay
    if: >-
      always() && (github.event_name != 'pull_request'
      || github.event.pull_request.head.repo.full_name == github.repository)
    runs-on: ubuntu-latest
    permissions:
      contents: read
      checks: write
    steps:
      - uses: actions/download-artifact@v4
        with:
          name: tracereplay-reports
      - name: Publish JUnit
        uses: mikepenz/action-junit-report@v4
        with:
          report_paths: tracereplay-junit.xml
"#;

/// The workflow for this version of tracereplay.
pub(crate) fn workflow() -> String {
    CI.replace("{VERSION}", env!("CARGO_PKG_VERSION"))
}

/// Appends the lines of [`GITIGNORE`] that `.gitignore` lacks; returns how many were added.
fn update_gitignore(here: &Confined) -> anyhow::Result<usize> {
    let path = camino::Utf8Path::new(".gitignore");
    let old = match here.read(path, 1 << 20, ".gitignore") {
        Ok(b) => String::from_utf8(b).context("`.gitignore` is not UTF-8")?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).context("cannot read `.gitignore`"),
    };
    let have: std::collections::HashSet<&str> = old.lines().map(str::trim).collect();
    let missing: Vec<&str> = (GITIGNORE.iter().copied())
        .filter(|l| !have.contains(l))
        .collect();
    if missing.iter().all(|l| l.starts_with('#')) {
        return Ok(0);
    }
    let mut text = old.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for l in &missing {
        text.push_str(l);
        text.push('\n');
    }
    here.write(path, text.as_bytes(), true)
        .context("cannot write `.gitignore`")?;
    Ok(missing.iter().filter(|l| !l.starts_with('#')).count())
}

/// Runs `init`; `Err` means exit 2.
pub(super) fn run(out: &mut dyn Write) -> anyhow::Result<i32> {
    let scenario_path = Utf8PathBuf::from("traces/example.search/example.search.scenario.json");
    let trace_path = Utf8PathBuf::from("traces/example.search/default.trace.ndjson.zst");
    let store = BaselineStore::new("baselines");
    let baseline_path = store.approved_path("example.search", "default");
    let ci_path = Utf8PathBuf::from(".github/workflows/tracereplay.yml");
    let project_path = Utf8PathBuf::from(super::settings::file::FILE_NAME);
    let targets = [
        &project_path,
        &scenario_path,
        &trace_path,
        &baseline_path,
        &ci_path,
    ];
    let existing: Vec<String> = targets
        .iter()
        .filter(|p| p.exists())
        .map(|p| format!("`{p}`"))
        .collect();
    if !existing.is_empty() {
        diag!(
            "error: {} already there; `init` never overwrites (remove them or start elsewhere)",
            existing.join(", ")
        );
        return Ok(exit::FAILURE);
    }
    // The example run: one search, one answer. Its prompt is hashed like any recorded prompt.
    let mut w = TraceWriter::with_prompts(
        Header::new("example.search", "default"),
        PromptHasher::unkeyed(),
        false,
    );
    w.user_message(
        Some(1_764_417_600_000),
        Some("in1"),
        "Find the project's documentation page.",
    );
    let args = Args::Object(Json::from_value(
        &serde_json::json!({"query": "project documentation"}),
    ));
    w.push(
        Some(1_764_417_601_000),
        EventBody::ToolCall {
            call_id: Str::from("c1"),
            tool: Str::from("web_search"),
            args,
        },
    );
    let output = Json::from_value(
        &serde_json::json!({"results": [{"title": "Documentation", "url": "https://example.invalid/docs"}]}),
    );
    w.push(
        Some(1_764_417_602_000),
        EventBody::ToolResult {
            call_id: Str::from("c1"),
            ok: true,
            output: Some(output),
            output_h: None,
            error: None,
        },
    );
    w.push(
        Some(1_764_417_603_000),
        EventBody::FinalAnswer {
            text: Str::from("The documentation is at https://example.invalid/docs."),
        },
    );
    w.push(
        Some(1_764_417_603_500),
        EventBody::RunEnd {
            status: RunStatus::Completed,
            error: None,
        },
    );
    let sealed = w.finish()?;
    // Everything `init` writes stays in the working directory: never through a symlinked
    // `.github`, `traces` or `baselines`.
    let here = Confined::new(".");
    here.write(&scenario_path, SCENARIO.as_bytes(), true)
        .with_context(|| format!("cannot write `{scenario_path}`"))?;
    // Placed as every trace is (the secret rule, nothing replaced); no raw prompt is written.
    let how = tracereplay::trace::Placement {
        dir: &here,
        raw_prompts: false,
        existing: tracereplay::trace::Existing::Refuse,
        durable: true,
        limits: Limits::default(),
        waived: &Default::default(),
    };
    let run = tracereplay::trace::RunName {
        scenario: "example.search",
        case: "default",
        trial: None,
    };
    sealed.check(run, trace_path.clone(), &how)?.write()?;
    // Approve the example as it is judged, so `check traces/` compares against it at once.
    let scenario = load_file(&scenario_path)?.remove(0)?;
    let file = TraceFile::from_bytes(trace_path.clone(), sealed.bytes.clone(), true);
    let seal = file.verify_seal(true)?;
    let parsed = parse_trace(&file, &seal, Limits::default())?;
    let results = judge(&scenario.oracles, &parsed.trace);
    let baseline = BaselineFile::new(
        &scenario.id,
        "default",
        &seal.content_hash,
        Behaviour::from_trace(&parsed.trace, &results),
    );
    here.write(&baseline_path, baseline.to_text().as_bytes(), true)
        .with_context(|| format!("cannot write `{baseline_path}`"))?;
    here.write(&ci_path, workflow().as_bytes(), true)
        .with_context(|| format!("cannot write `{ci_path}`"))?;
    here.write(&project_path, PROJECT.as_bytes(), true)
        .with_context(|| format!("cannot write `{project_path}`"))?;
    for p in targets {
        writeln!(out, "created {p}")?;
    }
    match update_gitignore(&here)? {
        0 => writeln!(
            out,
            "kept .gitignore (it already ignores tracereplay's files)"
        )?,
        n => writeln!(out, "updated .gitignore ({n} line(s) added)")?,
    }
    writeln!(out, "next: `tracereplay check traces/`")?;
    Ok(exit::OK)
}
