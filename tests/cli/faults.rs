//! Faults: processes killed at random points while they write, two runs at once on the same
//! files, a full disk and a failed write-back (injected: `TRACEREPLAY_FAULT_FULL_DISK`,
//! `TRACEREPLAY_FAULT_SYNC`, honoured by debug builds, which `cargo test` runs). Nothing that
//! existed before may be lost or torn.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::util::*;

/// Scenarios in the suites below: enough that a run takes long enough to be killed mid-way.
const SCENARIOS: usize = 120;

/// Lays out `SCENARIOS` scenarios with one trace each; the trace calls `search` with `q`. With
/// `every_other`, only the even-numbered traces take `q` (the others keep `a`).
fn suite(env: &Env, q: &str, every_other: bool) {
    for i in 0..SCENARIOS {
        let id = format!("s{i:03}");
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            scenario(&id, "High", "search"),
        );
        let q = if every_other && i % 2 == 1 { "a" } else { q };
        let call = format!(
            r#"{{"kind":"tool_call","call_id":"c1","tool":"search","args":{{"q":"{q}"}}}}"#
        );
        env.write(
            &format!("traces/{id}/default.trace.ndjson.zst"),
            sealed_zst(&trace_text(&id, "default", &[&call, END])),
        );
    }
}

/// Files by relative path.
type Files = BTreeMap<String, Vec<u8>>;

/// Every file under `dir` in `env` (relative path → bytes).
fn snapshot(env: &Env, dir: &str) -> Files {
    (files_under(&env.path(dir)).into_iter())
        .map(|f| {
            let bytes = env.read(&format!("{dir}/{f}"));
            (f, bytes)
        })
        .collect()
}

/// Puts `dir` back to exactly `files`.
fn restore(env: &Env, dir: &str, files: &Files) {
    let _ = std::fs::remove_dir_all(env.path(dir));
    for (f, bytes) in files {
        env.write(&format!("{dir}/{f}"), bytes);
    }
}

/// Kills per command: rounds go on until this many runs were killed before they ended (a run
/// that ends first still has its files checked), within [`MAX_ROUNDS`].
const KILLS: usize = 12;
const MAX_ROUNDS: usize = 100;

/// A fixed-seed xorshift: the kill points differ from one kill to the next, not between runs
/// of the test.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Runs `args` (off CI) and kills it with SIGKILL after a random part of `full` (how long an
/// uninterrupted run takes); true when it was killed before it ended.
fn run_and_kill(env: &Env, args: &[&str], full: Duration, rng: &mut Rng) -> bool {
    let delay = Duration::from_micros(rng.below(full.as_micros() as u64));
    let mut child = env
        .command(args, &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let killed = matches!(child.try_wait(), Ok(None));
    let _ = child.kill();
    child.wait().unwrap();
    killed
}

/// How long `args` takes uninterrupted (off CI), and its outcome.
fn timed(env: &Env, args: &[&str]) -> (Duration, Output) {
    let start = Instant::now();
    let out = env.run_with(args, &[]);
    (start.elapsed(), out)
}

/// The approved baselines (`*.baseline.json`) of a snapshot of `baselines/`.
fn approved(files: &Files) -> Files {
    (files.iter())
        .filter(|(f, _)| f.ends_with(".baseline.json"))
        .map(|(f, b)| (f.clone(), b.clone()))
        .collect()
}

/// Every approved baseline is byte for byte the old or the new one; every pending file left is
/// whole (the one an uninterrupted run writes).
fn assert_old_or_new(env: &Env, old: &Files, new: &Files, what: &str) {
    let now = snapshot(env, "baselines");
    for (f, old_bytes) in old {
        let current = now
            .get(f)
            .unwrap_or_else(|| panic!("{what}: `{f}` is gone"));
        assert!(
            current == old_bytes || Some(current) == new.get(f),
            "{what}: `{f}` is neither the old nor the new baseline"
        );
    }
    for (f, bytes) in &now {
        if let Some(approved) = f.strip_suffix(".new") {
            assert_eq!(Some(bytes), new.get(approved), "{what}: `{f}` is torn");
        }
    }
}

/// The suite approved with `q=a`, then re-recorded with `q=b`: the approved baselines (old), the
/// pending ones a check writes (new, keyed by the approved path) and `baselines/` with both.
fn drifted(env: &Env) -> (Files, Files, Files) {
    suite(env, "a", false);
    assert_eq!(env.run_with(&["baseline", "approve"], &[]).code, 0);
    let old = approved(&snapshot(env, "baselines"));
    assert_eq!(old.len(), SCENARIOS);
    suite(env, "b", false);
    assert_eq!(env.run_with(&["check", "--no-cache"], &[]).code, 1);
    let with_pending = snapshot(env, "baselines");
    // The check wrote pending files beside the approved ones and changed none of them.
    assert_eq!(approved(&with_pending), old);
    let new: Files = (with_pending.iter())
        .filter_map(|(f, b)| Some((f.strip_suffix(".new")?.to_owned(), b.clone())))
        .collect();
    assert_eq!(new.len(), SCENARIOS);
    (old, new, with_pending)
}

#[test]
fn killed_accept_and_approve_leave_every_baseline_old_or_new() {
    let env = Env::new();
    let (old, new, with_pending) = drifted(&env);
    let mut rng = Rng(0x5eed_0001);

    // `baseline accept`, killed at random points, then run to the end.
    let (full, out) = timed(&env, &["baseline", "accept"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(approved(&snapshot(&env, "baselines")), new);
    let mut killed = 0;
    for round in 0..MAX_ROUNDS {
        if killed >= KILLS {
            break;
        }
        restore(&env, "baselines", &with_pending);
        killed += usize::from(run_and_kill(&env, &["baseline", "accept"], full, &mut rng));
        assert_old_or_new(&env, &old, &new, &format!("accept, kill {round}"));
        // What the killed run left pending, the next accept promotes.
        if snapshot(&env, "baselines")
            .keys()
            .any(|f| f.ends_with(".new"))
        {
            let again = env.run_with(&["baseline", "accept"], &[]);
            assert_eq!(again.code, 0, "accept after kill {round}: {}", again.stderr);
        }
        assert_eq!(approved(&snapshot(&env, "baselines")), new);
    }
    assert!(
        killed >= KILLS,
        "only {killed} of {MAX_ROUNDS} runs were killed before they ended"
    );

    // `baseline approve` (writes pending files, then renames them), likewise.
    restore(&env, "baselines", &old);
    let (full, out) = timed(&env, &["baseline", "approve"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(approved(&snapshot(&env, "baselines")), new);
    let mut killed = 0;
    for round in 0..MAX_ROUNDS {
        if killed >= KILLS {
            break;
        }
        restore(&env, "baselines", &old);
        killed += usize::from(run_and_kill(&env, &["baseline", "approve"], full, &mut rng));
        assert_old_or_new(&env, &old, &new, &format!("approve, kill {round}"));
        let again = env.run_with(&["baseline", "approve"], &[]);
        assert_eq!(
            again.code, 0,
            "approve after kill {round}: {}{}",
            again.stdout, again.stderr
        );
        assert_eq!(approved(&snapshot(&env, "baselines")), new);
    }
    assert!(
        killed >= KILLS,
        "only {killed} of {MAX_ROUNDS} runs were killed before they ended"
    );
}

#[test]
fn a_killed_check_leaves_baselines_whole_and_a_cache_that_is_read_or_rebuilt() {
    let env = Env::new();
    let (old, new, _) = drifted(&env);
    let only_old = approved(&snapshot(&env, "baselines"));
    let json_check = ["check", "--format", "json"];
    let reference = env.run_with(&["check", "--format", "json", "--no-cache"], &[]);
    // A cache from the earlier recording, so the killed runs replace it.
    suite(&env, "a", false);
    assert_eq!(env.run_with(&json_check, &[]).code, 0);
    let earlier_cache = snapshot(&env, ".tracereplay/cache");
    suite(&env, "b", false);
    restore(&env, "baselines", &only_old);
    let (full, out) = timed(&env, &json_check);
    assert_eq!((out.code, &out.stdout), (reference.code, &reference.stdout));

    let mut rng = Rng(0x5eed_0002);
    let mut killed = 0;
    for round in 0..MAX_ROUNDS {
        if killed >= KILLS {
            break;
        }
        restore(&env, "baselines", &only_old);
        restore(&env, ".tracereplay/cache", &earlier_cache);
        killed += usize::from(run_and_kill(&env, &json_check, full, &mut rng));
        let what = format!("check, kill {round}");
        assert_old_or_new(&env, &old, &new, &what);
        assert_eq!(approved(&snapshot(&env, "baselines")), only_old, "{what}");
        // The next run reads the cache the killed one left, or rebuilds it: the same report.
        let next = env.run_with(&json_check, &[]);
        assert_eq!(
            (next.code, &next.stdout),
            (reference.code, &reference.stdout),
            "{what}"
        );
    }
    assert!(
        killed >= KILLS,
        "only {killed} of {MAX_ROUNDS} runs were killed before they ended"
    );
}

#[test]
fn two_checks_at_once_report_correctly_and_leave_an_intact_cache() {
    // Replace-only protocol, no lock: every file is replaced whole by a rename, and a temporary
    // file is taken for a leftover only when it is 15 minutes old.
    let env = Env::new();
    suite(&env, "a", false);
    assert_eq!(env.run_with(&["baseline", "approve"], &[]).code, 0);
    // Half the traces drift (not cached, pending files written), half do not (cached).
    suite(&env, "b", true);
    let args = ["check", "--format", "json", "--timings"];
    let reference = env.run_with(&["check", "--format", "json", "--no-cache"], &[]);
    assert_eq!(reference.code, 1);
    for round in 0..6 {
        let _ = std::fs::remove_dir_all(env.path(".tracereplay/cache"));
        let spawn = || {
            env.command(&args, &[])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(1), "round {round}");
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                reference.stdout,
                "round {round}"
            );
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert!(!stderr.contains("cannot write"), "round {round}: {stderr}");
        }
        // The cache the two left is whole: the next run takes every passing trace's row from it.
        let next = env.run_with(&args, &[]);
        assert_eq!(next.stdout, reference.stdout, "round {round}");
        let from_cache = format!("{} from the cache", SCENARIOS / 2);
        assert!(
            next.stderr.contains(&from_cache),
            "round {round}: {}",
            next.stderr
        );
        let pending = files_under(&env.path("baselines"))
            .into_iter()
            .filter(|f| f.ends_with(".new"))
            .count();
        assert_eq!(pending, SCENARIOS / 2, "round {round}");
    }
}

/// Runs `args` off CI with writes to paths containing `target` failing as a full disk does.
fn on_full_disk(env: &Env, args: &[&str], target: &str) -> Output {
    let out = env.run_with(args, &[("TRACEREPLAY_FAULT_FULL_DISK", target)]);
    assert_eq!(
        out.code, 2,
        "a full disk must exit 2 (the fault hook needs a debug build: `cargo test`, not `--release`)\n{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("No space left on device"),
        "{}",
        out.stderr
    );
    out
}

fn no_temporary_files(env: &Env) {
    let left: Vec<String> = (files_under(env.root()).into_iter())
        .filter(|f| f.contains(".tracereplay-") && f.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn a_full_disk_loses_nothing_and_exits_2() {
    let env = Env::new();
    let (old, _, with_pending) = drifted(&env);

    // `baseline accept`: the first promotion fails; everything stays as it was.
    let out = on_full_disk(&env, &["baseline", "accept"], "default.baseline.json");
    assert!(out.stderr.contains("cannot move"), "{}", out.stderr);
    assert_eq!(snapshot(&env, "baselines"), with_pending);

    // `baseline approve`: its pending files cannot be written, so nothing is approved, and no
    // older pending file is left to be approved in their place.
    let out = on_full_disk(&env, &["baseline", "approve"], ".baseline.json.new");
    assert!(
        out.stderr.contains("no approved baseline was changed"),
        "{}",
        out.stderr
    );
    assert_eq!(snapshot(&env, "baselines"), old);
    no_temporary_files(&env);

    // `check` writing pending files: the report is shown, then exit 2.
    restore(&env, "baselines", &with_pending);
    let out = on_full_disk(&env, &["check", "--no-cache"], ".baseline.json.new");
    assert!(out.stdout.contains("drifted"), "{}", out.stdout);
    assert!(out.stderr.contains("the disk is full"), "{}", out.stderr);
    assert_eq!(snapshot(&env, "baselines"), old);

    // `check --json`: the earlier report file stays whole, the report still reaches stdout.
    env.write("report.json", "the earlier report");
    let out = on_full_disk(
        &env,
        &["check", "--ci", "--no-cache", "--json", "report.json"],
        "report.json",
    );
    assert!(out.stdout.contains("drifted"), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("cannot write the JSON report to `report.json`"),
        "{}",
        out.stderr
    );
    assert_eq!(env.read("report.json"), b"the earlier report");

    // The result cache: the earlier cache stays byte for byte. (Rows with drift are not
    // cached, so the baselines are brought up to date first.)
    restore(&env, "baselines", &with_pending);
    assert_eq!(env.run_with(&["baseline", "accept"], &[]).code, 0);
    assert_eq!(env.run_with(&["check", "--ci"], &[]).code, 0);
    let cache = snapshot(&env, ".tracereplay/cache");
    assert_eq!(cache.len(), 1);
    suite(&env, "c", false);
    let out = on_full_disk(&env, &["check", "--ci"], "check-v8.bin");
    assert!(
        out.stderr
            .contains("the disk is full: cannot write the result cache"),
        "{}",
        out.stderr
    );
    assert_eq!(snapshot(&env, ".tracereplay/cache"), cache);
    no_temporary_files(&env);
}

/// One promotion of `baseline approve` fails (its rename only: the hook matches the approved
/// path's end, not its `.new`'s). The promotions run together, so every other one is done,
/// reported and made durable, whether before or after the failed one in the report's order;
/// the failed case keeps its old baseline and its pending file, and the command exits 2.
#[test]
fn one_failed_promotion_of_approve_keeps_every_other_one() {
    let env = Env::new();
    let (old, new, _) = drifted(&env);
    let failing = "baselines/s007/default.baseline.json";
    let out = on_full_disk(&env, &["baseline", "approve"], &format!("{failing}$"));
    assert!(out.stderr.contains("cannot move"), "{}", out.stderr);
    let now = snapshot(&env, "baselines");
    let f = failing.strip_prefix("baselines/").unwrap();
    assert_eq!(
        now.get(f),
        old.get(f),
        "the failed case keeps its old baseline"
    );
    assert_eq!(
        now.get(&format!("{f}.new")),
        new.get(f),
        "and its pending file"
    );
    let promoted: Vec<&String> = (new.keys()).filter(|k| k.as_str() != f).collect();
    assert_eq!(promoted.len(), SCENARIOS - 1);
    for k in &promoted {
        assert_eq!(now.get(*k), new.get(*k), "`{k}` approved");
        assert!(!now.contains_key(&format!("{k}.new")), "`{k}.new` promoted");
        let line = format!("approved {}/default -> baselines/{k}", &k[..4]);
        assert!(out.stdout.contains(&line), "{line} in {}", out.stdout);
    }
    assert!(!out.stdout.contains("approved s007/"), "{}", out.stdout);
    no_temporary_files(&env);
}

/// A sync that fails (injected: `TRACEREPLAY_FAULT_SYNC`, a failed write-back of the batch
/// holding a matching path) is an error, never a success, whether the batch was synced with one
/// `syncfs` of its filesystem (a large one, here 120 pending files) or file by file (one):
/// approve changes no approved baseline, leaves no pending or temporary file and exits 2;
/// `check` leaves no pending file it could not make durable, and says so.
#[test]
fn a_failed_write_back_approves_nothing_and_exits_2() {
    let env = Env::new();
    let (old, _, with_pending) = drifted(&env);
    let approve_on_failed_sync = |args: &[&str]| {
        // Nothing else unwritten on the machine: a large batch is synced whole where it can be.
        let vars = [
            ("TRACEREPLAY_FAULT_SYNC", ".baseline.json.new"),
            ("TRACEREPLAY_FAULT_UNWRITTEN", "0"),
        ];
        let out = env.run_with(args, &vars);
        assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("Input/output error"), "{}", out.stderr);
        out
    };
    for paths in [&[][..], &["traces/s001"]] {
        restore(&env, "baselines", &with_pending);
        let mut args = vec!["baseline", "approve"];
        args.extend(paths);
        let out = approve_on_failed_sync(&args);
        assert!(
            out.stderr.contains("cannot make pending baseline")
                && out.stderr.contains("no approved baseline was changed"),
            "{}",
            out.stderr
        );
        // The 120 pending files with one `syncfs`, where this filesystem and kernel allow it;
        // the one alone.
        let whole = paths.is_empty() && syncs_whole(&env.path("baselines"));
        let said = out.stderr.contains("syncing the whole filesystem");
        assert_eq!(said, whole, "{}", out.stderr);
        let left = snapshot(&env, "baselines");
        if paths.is_empty() {
            assert_eq!(left, old, "nothing approved, no pending file left");
        } else {
            assert_eq!(approved(&left), old, "nothing approved");
            assert!(!left.contains_key("s001/default.baseline.json.new"));
        }
        no_temporary_files(&env);
    }

    // `check`: a write that failed other than on a full disk is a warning (the exit code is
    // the verdict's: 1, the drift), and the report says the pending files were not written.
    restore(&env, "baselines", &old);
    let vars = [("TRACEREPLAY_FAULT_SYNC", ".baseline.json.new")];
    let out = env.run_with(&["check", "--no-cache"], &vars);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let warning = "cannot make pending baseline `baselines/s000/default.baseline.json.new` durable: Input/output error";
    assert!(out.stderr.contains(warning), "{}", out.stderr);
    let said = format!("{SCENARIOS} pending file(s) could not be written (see the warnings)");
    assert!(out.stdout.contains(&said), "{}", out.stdout);
    let next = format!(
        "next: {SCENARIOS} trace(s) drifted, new or obsolete, but their pending baselines could not be written (see the warnings)"
    );
    assert!(out.stdout.contains(&next), "{}", out.stdout);
    assert_eq!(snapshot(&env, "baselines"), old, "no pending file left");
    no_temporary_files(&env);
}

/// Whether a large batch written under `dir` is synced with one `syncfs` (on ext4, XFS or
/// btrfs, Linux 5.8 or later), as `fsutil` decides when little else is unwritten.
fn syncs_whole(dir: &std::path::Path) -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut numbers = release
        .split(['.', '-'])
        .map(|n| n.trim().parse::<u32>().ok());
    let new_enough = matches!((numbers.next(), numbers.next()), (Some(Some(a)), Some(Some(b))) if (a, b) >= (5, 8));
    let kind = rustix::fs::statfs(dir).map_or(0, |s| s.f_type as u64 & 0xFFFF_FFFF);
    new_enough && [0xEF53, 0x5846_5342, 0x9123_683E].contains(&kind)
}
