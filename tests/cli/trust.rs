//! Regression tests for the holes an attack on tracereplay found: false greens (an exit code 0
//! for a suite that should fail) and leaks (raw prompts or secrets in what the tool writes).

use crate::util::*;

/// A case name carrying a newline, an escape sequence and a forged workflow command cannot start
/// a line of its own in the human or Markdown report.
#[test]
fn trace_controlled_strings_cannot_forge_report_lines() {
    let env = Env::new();
    env.write("traces/s/s.scenario.json", scenario("s", "Low", "deploy"));
    let evil = r"x\n::warning file=a::forged\nPASS  fake  default  Low\u001b[2J|<!--";
    let c = call("c1", "search");
    env.write(
        "traces/s/t.trace.ndjson.zst",
        sealed_zst(&trace_text("s", evil, &[&c, END])),
    );
    for format in ["human", "markdown"] {
        let out = env.run(&["check", "traces/", "--format", format, "--fail-on", "any"]);
        assert_eq!(out.code, 1, "{format}: {}", out.stderr);
        for line in out.stdout.lines() {
            assert!(
                !line.starts_with("::warning") && !line.starts_with("PASS  fake"),
                "{format}: forged line {line:?} in\n{}",
                out.stdout
            );
        }
        assert!(!out.stdout.contains('\u{1b}'), "{format}: raw escape");
        assert!(
            out.stdout.contains(r"x\n::warning"),
            "{format}: {}",
            out.stdout
        );
    }
    let md = env.run(&["check", "traces/", "--format", "markdown"]);
    assert!(!md.stdout.contains("<!--"), "{}", md.stdout);
    assert!(md.stdout.contains("\\|&lt;!--"), "{}", md.stdout);
}

/// Every file under `dir`, read as (lossy) text: what a leak test searches.
fn all_text_under(env: &Env, dir: &str) -> String {
    files_under(&env.path(dir))
        .iter()
        .map(|f| String::from_utf8_lossy(&env.read(&format!("{dir}/{f}"))).into_owned())
        .collect()
}

/// Raw prompt text on the prompt side fails closed (an error row, exit 1, named by line and
/// key) and appears in nothing the tool writes: no output format, no run folder, no cache,
/// not `explain`, `diff`, `pack`'s refusal or `lint`.
#[test]
fn raw_prompt_text_is_refused_and_never_echoed() {
    let secret = "WHAT-THE-USER-TYPED ".repeat(150); // 3 KB, as the attack used
    let secret = secret.trim_end();
    for (line, key) in [
        (
            format!(r#"{{"kind":"user_message","prompt":"{secret}"}}"#),
            "`prompt`",
        ),
        (
            format!(
                r#"{{"kind":"user_message","prompt":{{"h":"b3:{}"}},"text":"{secret}"}}"#,
                "0".repeat(64)
            ),
            "`text`",
        ),
        (
            format!(
                r#"{{"kind":"user_message","prompt":{{"h":"b3:{}","Text":"{secret}"}}}}"#,
                "0".repeat(64)
            ),
            "`prompt.Text`",
        ),
        (
            format!(
                r#"{{"kind":"inference","messages":[{{"role":"user","content":"{secret}"}}]}}"#
            ),
            "`messages[0].content`",
        ),
        (
            format!(
                r#"{{"kind":"user_message","seq":"{secret}","prompt":{{"h":"b3:{}"}}}}"#,
                "0".repeat(64)
            ),
            "`seq`",
        ),
    ] {
        let env = Env::new();
        env.write("traces/s/s.scenario.json", scenario("s", "Low", "search"));
        let c = call("c1", "search");
        let text = trace_text("s", "default", &[&line, &c, END]);
        // `trace_text` adds a `seq` only where none is written.
        env.write(
            "traces/s/default.trace.ndjson.zst",
            sealed_zst_unchecked(&text),
        );
        env.write("raw/t.trace.ndjson", &text);
        let mut outputs = Vec::new();
        for format in ["human", "json", "junit", "markdown", "github"] {
            let out = env.run(&[
                "check",
                "traces/",
                "--format",
                format,
                "--fail-on",
                "none",
                "--artifacts",
                ".tracereplay/runs",
                "--json",
                "r.json",
            ]);
            assert_eq!(out.code, 1, "{line}\n{}", out.stdout);
            outputs.push(out);
        }
        let report = json(&outputs[1]);
        let row = row(&report, "default.trace.ndjson.zst");
        let category = row["error"]["category"].as_str().unwrap();
        let expected = if key == "`seq`" {
            "malformed"
        } else {
            "privacy"
        };
        assert_eq!(category, expected, "{line}: {row}");
        assert_eq!(row["error"]["line"], 2);
        assert!(
            row["error"]["message"].as_str().unwrap().contains(key),
            "{row}"
        );
        outputs.push(env.run(&["explain", "traces/s/default.trace.ndjson.zst"]));
        outputs.push(env.run(&["diff", "--from", "traces/", "--to", "traces/"]));
        outputs.push(env.run(&["pack", "raw/t.trace.ndjson", "-o", "packed"]));
        let lint = env.run(&["lint", "traces/"]);
        if expected == "privacy" {
            assert_eq!(lint.code, 1, "{line}: {}", lint.stdout);
        }
        outputs.push(lint);
        for out in &outputs {
            assert!(
                !out.stdout.contains("WHAT-THE-USER") && !out.stderr.contains("WHAT-THE-USER"),
                "{line}: echoed in\n{}\n{}",
                out.stdout,
                out.stderr
            );
        }
        for written in [
            all_text_under(&env, ".tracereplay"),
            String::from_utf8_lossy(&env.read("r.json")).into_owned(),
        ] {
            assert!(
                !written.contains("WHAT-THE-USER"),
                "{line}: written to a file"
            );
        }
    }
}

/// `--allow-raw-prompts` (the developer opt-in) admits text in fields the format does not
/// define, never in the prompt object.
#[test]
fn the_opt_in_admits_undefined_fields_only() {
    let env = Env::new();
    env.write("traces/s/s.scenario.json", scenario("s", "Low", "search"));
    let c = call("c1", "search");
    let h = format!(r#"{{"h":"b3:{}"}}"#, "0".repeat(64));
    let undefined = format!(r#"{{"kind":"user_message","prompt":{h},"channel":"web chat"}}"#);
    env.write(
        "traces/s/default.trace.ndjson.zst",
        sealed_zst_unchecked(&trace_text("s", "default", &[&undefined, &c, END])),
    );
    assert_eq!(env.run(&["check", "traces/"]).code, 1);
    let out = env.run(&["check", "traces/", "--allow-raw-prompts"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

/// `lint` never calls a trace it could not read clean: it could hold anything.
#[test]
fn lint_reports_traces_it_cannot_read() {
    let env = Env::new();
    good_suite(&env);
    assert_eq!(env.run(&["lint", "traces/"]).code, 0);
    env.write(
        "traces/good/corrupt.trace.ndjson.zst",
        b"\x28\xb5\x2f\xfd not zstd at all",
    );
    let out = env.run(&["lint", "traces/"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("traces/good/corrupt.trace.ndjson.zst  unreadable"),
        "{}",
        out.stdout
    );
    std::fs::remove_file(env.path("traces/good/corrupt.trace.ndjson.zst")).unwrap();
    let big = format!(r#"{{"kind":"note","text":"{}"}}"#, "x".repeat(100_000));
    env.write(
        "traces/good/big.trace.ndjson.zst",
        sealed_zst(&trace_text("good", "big", &[&big, END])),
    );
    let out = env.run(&["lint", "traces/", "--max-trace-bytes", "50000"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("big.trace.ndjson.zst  unreadable"),
        "{}",
        out.stdout
    );
}

/// A secret the scan finds is masked wherever a value is rendered (the oracle evidence quoting
/// the final answer included), and one whose first characters are JSON-escaped is still found.
#[test]
fn secrets_are_found_escaped_and_masked_everywhere() {
    let token = ["gh", "p_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"].concat();
    let tail = &token[6..];
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
    for written in [token.clone(), escaped] {
        let env = Env::new();
        env.write(
            "traces/s/s.scenario.json",
            r#"{"id":"s","title":"t","risk":"Low","oracles":[{"type":"final-answer-contains","value":"refund issued"}]}"#,
        );
        let answer =
            format!(r#"{{"kind":"final_answer","text":"here is the key {written} for you"}}"#);
        let text = trace_text("s", "default", &[&answer, END]);
        env.write("traces/s/default.trace.ndjson.zst", sealed_zst(&text));
        let lint = env.run(&["lint", "traces/"]);
        assert_eq!(lint.code, 1, "{}", lint.stdout);
        assert!(lint.stdout.contains("github-token"), "{}", lint.stdout);
        let mut outputs = Vec::new();
        for format in ["human", "json", "junit", "markdown", "github"] {
            let out = env.run(&[
                "check",
                "traces/",
                "--format",
                format,
                "--fail-on",
                "none",
                "--artifacts",
                "runs",
            ]);
            assert_eq!(out.code, 1, "the secret fails the run: {}", out.stdout);
            outputs.push(out);
        }
        let report = json(&outputs[1]);
        let found = report["results"][0]["oracles"][0]["found"].to_string();
        assert!(found.contains("[secret github-token b3:"), "{found}");
        outputs.push(env.run(&["explain", "traces/s/default.trace.ndjson.zst"]));
        outputs.push(env.run(&["explain", "--last", "--runs", "runs"]));
        for out in &outputs {
            assert!(
                !out.stdout.contains(tail) && !out.stderr.contains(tail),
                "the secret leaked:\n{}\n{}",
                out.stdout,
                out.stderr
            );
        }
        assert!(!all_text_under(&env, "runs").contains(tail));
    }
}

/// `merge` takes the N shares of one suite, each exactly once: a lost share (a cancelled CI
/// job), a share given twice, a share of another suite or a whole-run report is refused with
/// exit 2, naming what is wrong; never a green merged run.
#[test]
fn merge_refuses_an_incomplete_duplicated_or_foreign_set_of_shares() {
    let env = Env::new();
    copy_demo(&env, false);
    let share = |k: u64, file: &str| {
        let out = env.run(&[
            "check",
            "traces/",
            "--fail-on",
            "any",
            "--partition",
            &format!("hash:{k}/3"),
            "--json",
            file,
            "--no-cache",
        ]);
        assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
        let r = serde_json::from_slice::<serde_json::Value>(&env.read(file)).unwrap();
        assert_eq!(r["partition"]["share"], k);
        assert_eq!(r["partition"]["of"], 3);
        (out.code, r)
    };
    let shares: Vec<(i32, serde_json::Value)> =
        (1..=3).map(|k| share(k, &format!("s{k}.json"))).collect();
    let suite = &shares[0].1["partition"]["suite"];
    assert!(suite.as_str().unwrap().starts_with("b3:"));
    assert!(
        shares
            .iter()
            .all(|(_, r)| &r["partition"]["suite"] == suite)
    );
    // The demo fails under --fail-on any: whichever shares hold its failures, dropping one
    // of them must not give 0.
    let failing: Vec<usize> = (0..3).filter(|&i| shares[i].0 == 1).collect();
    assert!(!failing.is_empty());
    let merge = |files: &[&str]| {
        let mut args = vec!["merge"];
        args.extend(files);
        env.run(&args)
    };
    assert_eq!(merge(&["s1.json", "s2.json", "s3.json"]).code, 1);
    for (files, says) in [
        (vec!["s2.json", "s3.json"], "share(s) 1/3 missing"),
        (vec!["s1.json", "s3.json"], "share(s) 2/3 missing"),
        (
            vec!["s1.json", "s2.json", "s3.json", "s2.json"],
            "share 2/3 is given 2 times",
        ),
        (vec!["s1.json", "s1.json"], "share 1/3 is given 2 times"),
    ] {
        let out = merge(&files);
        assert_eq!(out.code, 2, "{files:?}: {}", out.stdout);
        assert!(out.stderr.contains(says), "{files:?}: {}", out.stderr);
    }
    // A share of another commit: one trace's bytes changed.
    let t = "traces/agent.tool.basic/default.trace.ndjson.zst";
    let original = env.read(t);
    edit_trace(&env, t, "demo information", "demo info");
    share(3, "other3.json");
    let out = merge(&["s1.json", "s2.json", "other3.json"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("`other3.json` (share 3/3) was cut from another suite"),
        "{}",
        out.stderr
    );
    // Other flags (the same traces, judged under another `--fail-on`) make another suite too.
    env.write(t, original);
    let out = env.run(&[
        "check",
        "traces/",
        "--partition",
        "hash:3/3",
        "--json",
        "flags3.json",
        "--no-cache",
    ]);
    assert!(out.code <= 1);
    share(3, "again3.json");
    assert_eq!(merge(&["s1.json", "s2.json", "again3.json"]).code, 1);
    assert_eq!(merge(&["s1.json", "s2.json", "flags3.json"]).code, 2);
    // A whole run's report is not a share.
    env.run(&["check", "traces/", "--json", "whole.json", "--no-cache"]);
    let out = merge(&["whole.json"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`whole.json` is not a share"),
        "{}",
        out.stderr
    );
}

/// An entry of the cache file: its 36-byte frame and its row.
type CacheEntry = (Vec<u8>, Vec<u8>);

/// The cache file as an attacker who can write `.tracereplay/cache` but not read the key sees
/// it: a JSON header line, then entries (16-byte stat key, 16-byte content key, 4-byte length,
/// row).
fn cache_entries(file: &[u8]) -> (serde_json::Value, Vec<CacheEntry>) {
    let nl = file.iter().position(|&b| b == b'\n').unwrap();
    let header = serde_json::from_slice(&file[..nl]).unwrap();
    let mut at = nl + 1;
    let mut entries = Vec::new();
    while at < file.len() {
        // A frame: stat key, content key, scenario key (16 bytes each), the row's length.
        let len = u32::from_le_bytes(file[at + 48..at + 52].try_into().unwrap()) as usize;
        entries.push((
            file[at..at + 52].to_vec(),
            file[at + 52..at + 52 + len].to_vec(),
        ));
        at += 52 + len;
    }
    (header, entries)
}

/// A forged cache row never decides a verdict: a PASS row put under a failing trace's keys,
/// with the header's hash recomputed the way anyone could, is not trusted, and `check` gives
/// the honest verdict.
#[test]
fn a_forged_cache_row_is_never_trusted() {
    const CACHE: &str = ".tracereplay/cache/check-v8.bin";
    let env = Env::new();
    env.write("traces/s/s.scenario.json", scenario("s", "High", "search"));
    let (good, bad) = (call("c1", "search"), call("c1", "srch"));
    env.write(
        "traces/s/a.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "a", &[&good, END])),
    );
    env.write(
        "traces/s/b.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "b", &[&bad, END])),
    );
    let honest = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(honest.code, 1);
    let (mut header, entries) = cache_entries(&env.read(CACHE));
    let find = |needle: &[u8]| {
        entries
            .iter()
            .position(|(_, row)| row.windows(needle.len()).any(|w| w == needle))
            .unwrap()
    };
    let (a, b) = (find(b"s/a.trace"), find(b"s/b.trace"));
    let mut forged_row = entries[a].1.clone();
    let at = forged_row
        .windows(9)
        .position(|w| w == b"s/a.trace")
        .unwrap();
    forged_row[at + 2] = b'b';
    let mut body = Vec::new();
    for (i, (frame, row)) in entries.iter().enumerate() {
        let row = if i == b { &forged_row } else { row };
        body.extend_from_slice(&frame[..48]);
        body.extend_from_slice(&(row.len() as u32).to_le_bytes());
        body.extend_from_slice(row);
    }
    // The attacker recomputes every hash the header holds, without the key.
    let rehash = blake3::hash(&body).to_hex().to_string();
    for field in ["mac", "entries_hash"] {
        if header.get(field).is_some() {
            header[field] = serde_json::json!(rehash);
        }
    }
    let mut file = serde_json::to_vec(&header).unwrap();
    file.push(b'\n');
    file.extend_from_slice(&body);
    env.write(CACHE, &file);
    let out = env.run(&["check", "traces/", "--format", "json", "--timings"]);
    assert_eq!(out.code, 1, "a forged PASS row was trusted: {}", out.stdout);
    assert_eq!(row(&json(&out), "b.trace.ndjson.zst")["verdict"], "fail");
    assert_eq!(out.stdout, honest.stdout);
    assert!(out.stderr.contains("0 from the cache"), "{}", out.stderr);
}

/// A cache restored on another machine is used only when both share `TRACEREPLAY_CACHE_KEY`
/// (a CI secret); otherwise its MAC does not verify and every trace is judged again.
#[test]
fn a_restored_cache_is_used_only_under_the_same_key() {
    let env = Env::new();
    copy_demo(&env, false);
    let elsewhere = tempfile::tempdir().unwrap();
    let other_machine = elsewhere.path().to_str().unwrap();
    let timings = |vars: &[(&str, &str)]| {
        let out = env.run_with(&["check", "traces/", "--timings"], vars);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stderr
    };
    timings(&[("CI", "true")]);
    assert!(timings(&[("CI", "true")]).contains("20 from the cache"));
    // Another machine, its own key: nothing is trusted (and it saves the cache under its key).
    let other = timings(&[("CI", "true"), ("XDG_CACHE_HOME", other_machine)]);
    assert!(other.contains("0 from the cache"), "{other}");
    // Two machines sharing the secret share the cache.
    let shared = [("CI", "true"), ("TRACEREPLAY_CACHE_KEY", "a-ci-secret")];
    timings(&shared);
    let hit = timings(&[shared[0], shared[1], ("XDG_CACHE_HOME", other_machine)]);
    assert!(hit.contains("20 from the cache"), "{hit}");
    let wrong = timings(&[("CI", "true"), ("TRACEREPLAY_CACHE_KEY", "another-secret")]);
    assert!(wrong.contains("0 from the cache"), "{wrong}");
}

/// Checking another directory from the suite's root claims none of the suite's baselines: none
/// is obsolete, no `.deleted` file is written, and the exit code is the other directory's.
/// The suite's own run still finds a baseline whose scenario is gone.
#[test]
fn checking_another_directory_leaves_the_suites_baselines_alone() {
    let env = Env::new();
    copy_demo(&env, true);
    let other = tempfile::tempdir().unwrap();
    let other_dir = other.path().join("suite");
    let id = "elsewhere";
    std::fs::create_dir_all(other_dir.join(id)).unwrap();
    std::fs::write(
        other_dir.join(format!("{id}/{id}.scenario.json")),
        scenario(id, "High", "search"),
    )
    .unwrap();
    let c = call("c1", "search");
    std::fs::write(
        other_dir.join(format!("{id}/default.trace.ndjson.zst")),
        sealed_zst(&trace_text(id, "default", &[&c, END])),
    )
    .unwrap();
    let before = files_under(&env.path("baselines"));
    let out = env.run_with(
        &[
            "check",
            other_dir.to_str().unwrap(),
            "--format",
            "json",
            "--drift",
            "warn",
        ],
        &[("CI", "false")],
    );
    let report = json(&out);
    assert_eq!(report["summary"]["obsolete"], 0, "{}", out.stdout);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let after = files_under(&env.path("baselines"));
    assert!(!after.iter().any(|f| f.ends_with(".deleted")), "{after:?}");
    let added: Vec<&String> = after.iter().filter(|f| !before.contains(f)).collect();
    assert_eq!(
        added,
        [&format!("{id}/default.baseline.json.new")],
        "only the scenario it found"
    );
    // The suite's own run, with one scenario gone, still calls its baseline obsolete.
    std::fs::remove_dir_all(env.path("traces/agent.cancel.on.request")).unwrap();
    let out = env.run(&["check", "--format", "json"]);
    assert_eq!(json(&out)["summary"]["obsolete"], 1, "{}", out.stdout);
    let out = env.run(&["check", ".", "--format", "json"]);
    assert_eq!(
        json(&out)["summary"]["obsolete"],
        1,
        "`.` holds the suite's root"
    );
}

/// Whatever discovery cannot list, resolve or read under a checked path is an `error` row
/// naming it (exit 1) and keeps approved baselines from being called obsolete: a dangling
/// `*.trace.ndjson.zst` symlink, a FIFO with a trace's name, a path too long to resolve, a
/// symlink out of the checked paths (here to `/`, which is never walked), and (when not run as
/// root, whom permissions do not stop) an unreadable directory.
#[cfg(unix)]
#[test]
fn what_discovery_cannot_reach_is_an_error_row() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let run = |env: &Env| {
        let out = env.run(&["check", "traces/", "--fail-on", "any", "--format", "json"]);
        (out.code, json(&out), out.stderr)
    };
    let unreachable = |report: &serde_json::Value| -> Vec<String> {
        (report["results"].as_array().unwrap().iter())
            .filter(|r| r["error"]["category"] == "unreachable")
            .map(|r| r["path"].as_str().unwrap().to_owned())
            .collect()
    };
    type Setup = Box<dyn Fn(&Env)>;
    let setups: Vec<(&str, Setup)> = vec![
        (
            "dangling",
            Box::new(|env: &Env| {
                symlink(env.path("gone"), env.path("traces/good/x.trace.ndjson.zst")).unwrap()
            }),
        ),
        (
            "fifo",
            Box::new(|env: &Env| {
                let status = std::process::Command::new("mkfifo")
                    .arg(env.path("traces/good/f.trace.ndjson.zst"))
                    .status()
                    .unwrap();
                assert!(status.success());
            }),
        ),
        (
            "outside",
            Box::new(|env: &Env| symlink("/", env.path("traces/good/root")).unwrap()),
        ),
        (
            "too long",
            Box::new(|env: &Env| {
                // Built from the top down by renames, so no path the test uses is long; the
                // deepest directory's path is far over PATH_MAX.
                let base = env.path("traces/good");
                std::fs::create_dir(base.join("c")).unwrap();
                for _ in 0..450 {
                    std::fs::create_dir(base.join("n")).unwrap();
                    std::fs::rename(base.join("c"), base.join("n/dddddddddd")).unwrap();
                    std::fs::rename(base.join("n"), base.join("c")).unwrap();
                }
            }),
        ),
    ];
    for (what, setup) in setups {
        let env = Env::new();
        copy_demo(&env, true);
        good_suite(&env);
        setup(&env);
        let (code, report, stderr) = run(&env);
        assert_eq!(code, 1, "{what}: {stderr}");
        let rows = unreachable(&report);
        assert_eq!(rows.len(), 1, "{what}: {rows:?} {stderr}");
        assert!(rows[0].starts_with("traces/good/"), "{what}: {rows:?}");
        assert_eq!(report["summary"]["obsolete"], 0, "{what}");
        // `lint` and `verify` do not call it clean either.
        assert_eq!(env.run(&["lint", "traces/"]).code, 1, "{what}");
        assert_eq!(env.run(&["verify", "traces/"]).code, 1, "{what}");
    }
    // Root reads a mode-000 directory anyway; everyone else gets an error row for it.
    let env = Env::new();
    good_suite(&env);
    std::fs::create_dir_all(env.path("traces/locked")).unwrap();
    std::fs::set_permissions(
        env.path("traces/locked"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let readable_anyway = std::fs::read_dir(env.path("traces/locked")).is_ok();
    let (code, report, _) = run(&env);
    std::fs::set_permissions(
        env.path("traces/locked"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    if !readable_anyway {
        assert_eq!(code, 1);
        assert_eq!(unreachable(&report), ["traces/locked"]);
    }
}

/// Misspelled, mistyped or duplicated scenario keys, each meant to forbid what the trace does,
/// used to be ignored (a clean `gates`, exit 0 on a Critical scenario). Each is now a `gates`
/// error naming the key (with what was probably meant), and the scenario's trace an `error`
/// row in `check`.
#[test]
fn misconfigured_scenarios_never_pass() {
    const DEPLOY: [&str; 1] =
        [r#"{"kind":"tool_call","call_id":"c1","tool":"deploy","args":{"env":"prod"}}"#];
    const APPROVED_DEPLOY: [&str; 2] =
        [r#"{"kind":"approval_request","tool":"deploy"}"#, DEPLOY[0]];
    let oracle = |o: &str| format!(r#"{{"id":"s","title":"t","risk":"Critical","oracles":[{o}]}}"#);
    let cases: Vec<(String, &str, &[&str])> = vec![
        (oracle(r#"{"type":"no-unsafe-tool","tools":"deploy"}"#), "`tools` must be an array of strings, found a string", &DEPLOY[..]),
        (oracle(r#"{"type":"no-unsafe-tool","tool":"deploy"}"#), "unknown parameter `tool` for no-unsafe-tool; did you mean `tools`?", &DEPLOY[..]),
        (oracle(r#"{"type":"approval-required","tools":["deploy"]}"#), "unknown parameter `tools` for approval-required; did you mean `tool`?", &APPROVED_DEPLOY[..]),
        (oracle(r#"{"type":"step-count","kind":"tool_cal","max":0}"#), "did you mean `tool_call`?", &DEPLOY[..]),
        (oracle(r#"{"type":"tool-called","tool":"deploy","args":{"env":"staging"}}"#), "unknown parameter `args` for tool-called; did you mean tool-args, which takes it?", &DEPLOY[..]),
        (oracle(r#"{"type":"max-tool-calls","tool":"deploy","limit":5}"#), "unknown parameter `tool` for max-tool-calls", &DEPLOY[..]),
        (oracle(r#"{"type":"tool-not-called","tool":"deploy","Tool":"other"}"#), "`tool` is given twice", &DEPLOY[..]),
        (r#"{"id":"s","title":"t","risk":"Critical","oracles":[{"type":"tool-not-called","tool":"deploy"}],"oracles":[{"type":"approval-not-required"}]}"#.to_owned(), "duplicate key `oracles`", &DEPLOY[..]),
        (r#"{"id":"s","title":"t","risk":"Critical","risk":"Low","oracles":[{"type":"tool-not-called","tool":"deploy"}]}"#.to_owned(), "duplicate key `risk`", &DEPLOY[..]),
        (r#"{"id":"s","title":"t","risk":"Critical","oracle":[{"type":"tool-not-called","tool":"deploy"}],"oracles":[{"type":"approval-not-required"}]}"#.to_owned(), "unknown key `oracle`, which the scenario format does not define; did you mean `oracles`?", &DEPLOY[..]),
        (r#"{"id":"s","title":"t","riks":"Critical","oracles":[{"type":"tool-not-called","tool":"deploy"}]}"#.to_owned(), "did you mean `risk`?", &DEPLOY[..]),
        (r#"{"id":"s","title":"t","oracles":[{"type":"tool-not-called","tool":"deploy"}]}"#.to_owned(), "risk not set: failures of this scenario never fail the run under the default --fail-on high", &[][..]),
        (oracle(r#"{"type":"tool-sequence","mode":"exact","calls":[{"tool":"deploy","arg":{"env":"staging"}}]}"#), "unknown key `arg` in `calls[0]`; did you mean `args`?", &DEPLOY[..]),
        (oracle(r#"{"type":"tool-not-calld","tool":"deploy"}"#), "did you mean `tool-not-called`?", &DEPLOY[..]),
    ];
    for (scenario, says, events) in cases {
        let env = Env::new();
        env.write("traces/s/s.scenario.json", &scenario);
        let mut lines: Vec<&str> = events.to_vec();
        lines.push(END);
        env.write(
            "traces/s/default.trace.ndjson.zst",
            sealed_zst(&trace_text("s", "default", &lines)),
        );
        let gates = env.run(&["gates", "traces/"]);
        assert_eq!(gates.code, 1, "{scenario}\n{}", gates.stdout);
        assert!(
            gates.stdout.contains(says),
            "{scenario}: want `{says}` in\n{}",
            gates.stdout
        );
        let out = env.run(&["check", "traces/", "--format", "json"]);
        assert_eq!(out.code, 1, "{scenario}: {}", out.stdout);
        let report = json(&out);
        let errors = report["summary"]["errors"].as_u64().unwrap();
        assert!(errors >= 1, "{scenario}: {}", out.stdout);
    }
}
