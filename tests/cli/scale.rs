//! Scale: the result cache, `--partition`, and `merge`.

use crate::util::*;

const CACHE: &str = ".tracereplay/cache/check-v8.bin";

/// `check traces/ --format json --drift ignore`, then `extra`.
fn json_check<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["check", "traces/", "--format", "json", "--drift", "ignore"];
    args.extend(extra);
    args
}

#[test]
fn the_cache_never_changes_the_output_and_never_serves_stale_rows() {
    let env = Env::new();
    copy_demo(&env, true);
    let cold = env.run(&["check", "traces/", "--format", "json"]);
    assert!(
        env.path(CACHE).exists(),
        "the cache is written (even under CI)"
    );
    let warm = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!((cold.code, &cold.stdout), (warm.code, &warm.stdout));
    let uncached = env.run(&["check", "traces/", "--format", "json", "--no-cache"]);
    assert_eq!(uncached.stdout, cold.stdout);

    // A corrupt or foreign cache is ignored and rebuilt.
    env.write(
        CACHE,
        b"{\"format\":\"tracereplay.cache\",\"version\":4,\"context\":\"x\",\"entries_hash\":\"y\"}\n\x00\x01garbage",
    );
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(out.stdout, cold.stdout);
    let rebuilt = env.read(CACHE);
    assert!(
        rebuilt.starts_with(b"{\"format\":\"tracereplay.cache\"") && !rebuilt.ends_with(b"garbage")
    );

    // An edited trace is judged again, not served from the cache.
    let t = "traces/agent.tool.timeout/default.trace.ndjson.zst";
    edit_trace(&env, t, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(out.code, 1, "the arguments drifted");
    assert!(out.stdout.contains("arguments-changed"));
    // A changed scenario is judged again too.
    let p = "traces/agent.tool.basic/agent.tool.basic.scenario.json";
    let changed = String::from_utf8(env.read(p))
        .unwrap()
        .replace("\"value\": \"demo\"", "\"value\": \"nothing like this\"");
    env.write(p, changed);
    let out = env.run(&json_check(&["--fail-on", "any"]));
    let r = json(&out);
    assert_eq!(
        row(&r, "agent.tool.basic/default.trace.ndjson.zst")["verdict"],
        "fail"
    );
}

/// A cache whose hash checks out but whose rows do not decode (written by something else) costs
/// a fresh judgement: a trace is never dropped or misreported because of the cache.
#[test]
fn cached_rows_that_do_not_decode_are_judged_afresh() {
    let env = Env::new();
    good_suite(&env);
    let fresh = env.run(&["check", "traces", "--format", "json", "--no-cache"]);
    assert_eq!(env.run(&["check", "traces"]).code, 0);
    let file = env.read(CACHE);
    let nl = file.iter().position(|&b| b == b'\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_slice(&file[..nl]).unwrap();
    // Spoil each row's first byte (an `Option` tag: only 0 or 1 are valid) and re-hash, as a
    // foreign writer might.
    let mut body = file[nl + 1..].to_vec();
    for row_start in cache_rows(&file) {
        body[row_start - nl - 1] = 7;
    }
    header["entries_hash"] = blake3::hash(&body).to_hex().to_string().into();
    let mut spoiled = serde_json::to_vec(&header).unwrap();
    spoiled.push(b'\n');
    spoiled.extend(body);
    env.write(CACHE, spoiled);
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!((out.code, &out.stdout), (fresh.code, &fresh.stdout));
}

#[test]
fn cached_rows_follow_the_fail_on_of_each_run() {
    let env = Env::new();
    copy_demo(&env, true);
    let args = |fail_on: &'static str| json_check(&["--fail-on", fail_on]);
    let strict = env.run(&args("any"));
    assert!(env.path(CACHE).exists());
    // Every row now comes from the cache, but whether a failure blocks is decided afresh.
    let lenient = env.run(&args("none"));
    let mut uncached = args("none");
    uncached.push("--no-cache");
    let fresh = env.run(&uncached);
    assert_eq!((lenient.code, &lenient.stdout), (fresh.code, &fresh.stdout));
    assert_ne!(strict.stdout, lenient.stdout);
    assert!(
        json(&strict)["summary"]["blocking"].as_u64()
            > json(&lenient)["summary"]["blocking"].as_u64()
    );
}

/// A cached row depends on more than its trace: an edited approved baseline or an edited
/// Harness Contract makes the next run judge again, exactly as a run without the cache does.
#[test]
fn baselines_and_contracts_are_part_of_the_cache_key() {
    let env = Env::new();
    copy_demo(&env, true);
    let check = |extra: &[&str]| {
        let mut args = vec!["check", "traces/", "--format", "json"];
        args.extend(extra);
        let out = env.run(&args);
        (out.code, out.stdout)
    };
    let first = check(&[]);
    assert!(env.path(CACHE).exists());

    let baseline = "baselines/agent.tool.basic/default.baseline.json";
    let edited = String::from_utf8(env.read(baseline))
        .unwrap()
        .replace("\"demo information\"", "\"other information\"");
    env.write(baseline, edited);
    let after_baseline = check(&[]);
    assert_eq!(after_baseline, check(&["--no-cache"]));
    assert!(after_baseline.1.contains("arguments-changed"));
    assert_ne!(after_baseline, first);

    let contract = "traces/agent.contract.release-notes/release-notes.contract.json";
    env.write(contract, "{");
    let after_contract = check(&[]);
    assert_eq!(after_contract, check(&["--no-cache"]));
    assert_ne!(after_contract.1, after_baseline.1);
}

/// Every trace file under `dir`.
fn traces_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            found.extend(traces_under(&path));
        } else if path.to_string_lossy().ends_with(".trace.ndjson.zst") {
            found.push(path);
        }
    }
    found
}

/// A fresh checkout gives every trace new times and inodes, so every stat key misses; the
/// traces' bytes (read and hashed, not decompressed) still find their rows.
#[test]
fn a_fresh_checkout_still_hits_the_cache_by_content() {
    let env = Env::new();
    copy_demo(&env, true);
    let args = json_check(&["--timings"]);
    let first = env.run(&args);
    assert!(
        first.stderr.contains("(20 traces, 0 from the cache)"),
        "{}",
        first.stderr
    );
    let warm = env.run(&args);
    assert!(
        warm.stderr.contains("(20 traces, 20 from the cache)"),
        "{}",
        warm.stderr
    );
    let traces = traces_under(&env.path("traces"));
    assert_eq!(traces.len(), 20);
    // A fresh checkout: every trace and every approved baseline a new file with the same bytes.
    let baselines: Vec<std::path::PathBuf> = (files_under(&env.path("baselines")).iter())
        .map(|f| env.path("baselines").join(f))
        .collect();
    assert!(baselines.len() >= 10);
    for t in traces.iter().chain(&baselines) {
        let bytes = std::fs::read(t).unwrap();
        std::fs::remove_file(t).unwrap();
        std::fs::write(t, bytes).unwrap();
    }
    let before = env.read(CACHE);
    let checkout = env.run(&args);
    assert_eq!(
        (checkout.code, &checkout.stdout),
        (first.code, &first.stdout)
    );
    assert!(
        checkout.stderr.contains("(20 traces, 20 from the cache)"),
        "{}",
        checkout.stderr
    );
    // The cache learns the new stat keys (so the next run need not read the traces), and a run
    // that changes nothing leaves the file alone.
    let learned = env.read(CACHE);
    assert_ne!(learned, before);
    env.run(&args);
    assert_eq!(env.read(CACHE), learned);
    // Changed bytes never hit.
    let t = "traces/agent.tool.timeout/default.trace.ndjson.zst";
    edit_trace(&env, t, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");
    let edited = env.run(&args);
    assert!(
        edited.stderr.contains("(20 traces, 19 from the cache)"),
        "{}",
        edited.stderr
    );
}

/// Where each row of a cache file starts (after the header line, each entry is three 16-byte
/// keys, a 4-byte little-endian length and the row).
fn cache_rows(file: &[u8]) -> Vec<usize> {
    let mut at = file.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut rows = Vec::new();
    while at < file.len() {
        rows.push(at + 52);
        at += 52 + u32::from_le_bytes(file[at + 48..at + 52].try_into().unwrap()) as usize;
    }
    rows
}

/// The number of rows in the cache file.
fn cache_entries(env: &Env) -> usize {
    cache_rows(&env.read(CACHE)).len()
}

/// A run filtered by scenario, tag or partition keeps the cached rows of the traces it left
/// out, so the next full run still finds them; a full run drops the rows of traces gone.
#[test]
fn a_filtered_run_keeps_the_rows_it_did_not_look_at() {
    let env = Env::new();
    copy_demo(&env, true);
    let full = json_check(&[]);
    let first = env.run(&full);
    let all = cache_entries(&env);
    assert!(all >= 10, "{all}");
    for filter in [
        ["--scenario", "agent.tool.basic"],
        ["--partition", "hash:2/3"],
    ] {
        let mut args = full.to_vec();
        args.extend(filter);
        env.run(&args);
        assert_eq!(cache_entries(&env), all, "after {filter:?}");
    }
    let again = env.run(&full);
    assert_eq!((again.code, &again.stdout), (first.code, &first.stdout));
    assert_eq!(cache_entries(&env), all);
    // A trace removed: the next full run drops its row.
    std::fs::remove_file(env.path("traces/agent.tool.basic/default.trace.ndjson.zst")).unwrap();
    env.run(&full);
    assert_eq!(cache_entries(&env), all - 1);
}

/// With no memory for rows (`--row-memory 0`) every row goes to a temporary file and the cache
/// is read back from disk: the reports, the exit codes and the cache file itself are the same
/// as with rows in memory, cold, cached, filtered and after an edit.
#[test]
fn rows_held_on_disk_change_nothing() {
    let env = Env::new();
    copy_demo(&env, true);
    let run = |extra: &[&str]| {
        let out = env.run(&json_check(extra));
        (out.code, out.stdout)
    };
    let in_memory = run(&["--no-cache"]);
    assert!(in_memory.1.contains("\"results\""));
    let on_disk = ["--row-memory", "0"];
    assert_eq!(run(&["--no-cache", "--row-memory", "0"]), in_memory);
    assert_eq!(run(&on_disk), in_memory, "cold, filling the cache");
    let filled = env.read(CACHE);
    assert_eq!(run(&on_disk), in_memory, "every row from the cache on disk");
    assert_eq!(run(&[]), in_memory, "the same cache, read whole");
    assert_eq!(env.read(CACHE), filled, "nothing to rewrite");

    let human = |extra: &[&str]| {
        let mut args = vec!["check", "traces/", "--drift", "ignore"];
        args.extend(extra);
        env.run(&args).stdout
    };
    assert_eq!(human(&on_disk), human(&["--no-cache"]));

    // A filtered run keeps the rows it left out, read back from the old file as it writes the
    // new one; an edited trace is judged again.
    let only = ["--scenario", "agent.tool.basic"];
    let filtered = run(&[&only[..], &["--no-cache"]].concat());
    assert_eq!(filtered.0, 0);
    assert_eq!(run(&[&only[..], &on_disk].concat()), filtered);
    assert_eq!(env.read(CACHE), filled);
    // The same bytes under a new inode: found by content, so the cache file is rewritten (with
    // the new stat key) while the run's rows are still read from the old one.
    let basic = "traces/agent.tool.basic/default.trace.ndjson.zst";
    let bytes = env.read(basic);
    std::fs::remove_file(env.path(basic)).unwrap();
    env.write(basic, bytes);
    let rewritten = run(&[&only[..], &on_disk].concat());
    assert_eq!(rewritten, filtered, "rows read across a save");
    assert_ne!(env.read(CACHE), filled);
    let t = "traces/agent.tool.timeout/default.trace.ndjson.zst";
    edit_trace(&env, t, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");
    let edited = run(&["--no-cache"]);
    assert_ne!(edited, in_memory);
    assert_eq!(run(&on_disk), edited);
    assert_eq!(run(&on_disk), edited);
    assert_eq!(cache_entries(&env), cache_rows(&filled).len());

    // No temporary directory to spill to: the rows stay in memory and nothing changes.
    let args = json_check(&["--no-cache", "--row-memory", "0"]);
    let out = env.run_with(&args, &[("CI", "true"), ("TMPDIR", "/no/such/dir")]);
    assert_eq!((out.code, out.stdout), edited);
}

/// A cache that cannot be written only costs time: the run's verdict and report stand, and
/// the user is told why the next run will not be faster.
#[test]
fn an_unwritable_cache_is_a_warning_not_a_failure() {
    let env = Env::new();
    good_suite(&env);
    env.write("blocked", "a file where the cache directory would go");
    let fresh = env.run(&["check", "traces", "--format", "json", "--no-cache"]);
    let out = env.run(&[
        "check",
        "traces",
        "--format",
        "json",
        "--cache-dir",
        "blocked/cache",
    ]);
    let (report, expected) = (json(&out), json(&fresh));
    assert_eq!(out.code, fresh.code);
    assert_eq!(report["results"], expected["results"]);
    assert_eq!(report["summary"], expected["summary"]);
    let warning = "cannot write the result cache `blocked/cache/check-v8.bin`: ";
    assert!(report["warnings"][0].as_str().unwrap().starts_with(warning));
    assert!(
        out.stderr.contains(&format!("warning: {warning}")),
        "{}",
        out.stderr
    );
}

#[test]
fn no_cache_writes_no_cache() {
    let env = Env::new();
    good_suite(&env);
    assert_eq!(env.run(&["check", "traces", "--no-cache"]).code, 0);
    assert!(!env.path(".tracereplay").exists());
    assert_eq!(
        env.run(&["check", "traces", "--cache-dir", "elsewhere"])
            .code,
        0
    );
    assert!(env.path("elsewhere/check-v8.bin").exists());
}

/// A cache file of an earlier version can never be read again, so the first save removes it.
#[test]
fn older_cache_files_are_removed() {
    let env = Env::new();
    good_suite(&env);
    let old = ".tracereplay/cache/check-v3.bin";
    env.write(old, b"an earlier version's cache");
    env.write(".tracereplay/cache/notes.txt", b"not ours");
    assert_eq!(env.run(&["check", "traces"]).code, 0);
    assert!(env.path(CACHE).exists());
    assert!(!env.path(old).exists());
    assert!(env.path(".tracereplay/cache/notes.txt").exists());
}

#[test]
fn partitions_cover_every_row_exactly_once_and_merge_back() {
    let env = Env::new();
    copy_demo(&env, true);
    // One unreadable trace: rows without a scenario belong to share 1.
    env.write("traces/broken.trace.ndjson.zst", b"not zstd");
    let whole = env.run(&["check", "traces/", "--format", "json", "--no-cache"]);
    let whole_json = json(&whole);
    let n = 3;
    let mut paths = Vec::new();
    let mut shares = Vec::new();
    for k in 1..=n {
        let file = format!("share{k}.json");
        let out = env.run(&[
            "check",
            "traces/",
            "--partition",
            &format!("hash:{k}/{n}"),
            "--json",
            &file,
            "--no-cache",
        ]);
        assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
        let r: serde_json::Value = serde_json::from_slice(&env.read(&file)).unwrap();
        for row in r["results"].as_array().unwrap() {
            paths.push(row["path"].as_str().unwrap().to_owned());
        }
        shares.push(file);
    }
    let mut expected: Vec<String> = whole_json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_owned())
        .collect();
    paths.sort();
    expected.sort();
    assert_eq!(paths, expected, "every row in exactly one share");
    let mut args = vec!["merge", "--format", "json"];
    args.extend(shares.iter().map(String::as_str));
    let merged = env.run(&args);
    assert_eq!(merged.code, whole.code);
    assert_eq!(
        merged.stdout, whole.stdout,
        "merged shares equal the whole run"
    );
}

#[test]
fn partition_and_merge_errors() {
    let env = Env::new();
    good_suite(&env);
    for bad in ["hash:0/3", "hash:4/3", "hash:1/0", "mod:1/2", "hash:x/2"] {
        let out = env.run(&["check", "traces", "--partition", bad]);
        assert_eq!(out.code, 2, "{bad}");
    }
    // Some share of a one-scenario suite is empty: that is fine.
    let codes: Vec<i32> = (1..=4)
        .map(|k| {
            env.run(&["check", "traces", "--partition", &format!("hash:{k}/4")])
                .code
        })
        .collect();
    assert!(codes.iter().all(|c| *c == 0), "{codes:?}");
    env.write("not-a-report.json", "{}");
    env.write("cut.json", "{\"schema_version\":1,\"results\":[");
    std::fs::create_dir_all(env.path("a-dir.json")).unwrap();
    for (file, says) in [
        (
            "not-a-report.json",
            "`not-a-report.json` is not a tracereplay JSON report",
        ),
        ("cut.json", "`cut.json` is not a tracereplay JSON report"),
        ("missing.json", "cannot read `missing.json`"),
        ("a-dir.json", "cannot read `a-dir.json`"),
    ] {
        let out = env.run(&["merge", file]);
        assert_eq!(out.code, 2, "{file}");
        assert!(out.stderr.contains(says), "{file}: {}", out.stderr);
    }
}

#[test]
fn the_share_function_is_the_specified_one() {
    // First 8 bytes of BLAKE3 of the lowercased id, little-endian, modulo N, plus one.
    let id = "Agent.Tool.Basic";
    let digest = blake3::hash(id.to_lowercase().as_bytes());
    let n = u64::from_le_bytes(digest.as_bytes()[..8].try_into().unwrap());
    assert_eq!(tracereplay_core::eval::partition_share(id, 7), n % 7 + 1);
}

/// Pending baseline texts share the rows' memory budget: with `--row-memory 0` a first run
/// off CI keeps every pending text in the temporary file, and writes the same pending files
/// as a run that held them in memory.
#[test]
fn pending_baselines_held_on_disk_are_written_the_same() {
    let written = |extra: &[&str]| {
        let env = Env::new();
        copy_demo(&env, false);
        std::fs::create_dir(env.path("baselines")).unwrap();
        let mut args = vec!["check", "traces/", "--no-cache"];
        args.extend(extra);
        let out = env.run_with(&args, &[("CI", "")]);
        assert!(out.code <= 1, "{}", out.stderr);
        let files = files_under(&env.path("baselines"));
        assert!(files.len() >= 10, "{files:?}");
        assert!(
            files.iter().all(|f| f.ends_with(".baseline.json.new")),
            "{files:?}"
        );
        (files.iter())
            .map(|f| (f.clone(), env.read(&format!("baselines/{f}"))))
            .collect::<Vec<_>>()
    };
    let in_memory = written(&[]);
    assert!(in_memory.iter().all(|(_, text)| text.starts_with(b"{")));
    assert_eq!(written(&["--row-memory", "0"]), in_memory);
}
