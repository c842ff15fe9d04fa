//! The documented flows end green, as a new user follows `docs/recording.md` word for word in a
//! project made by `init`: record with the documented examples (into the suite, no `finish`
//! call), check, review, accept, check green; change the agent's tool result, record again with
//! `--replace`, check shows the drift, accept, check green. And a check of a directory outside
//! the project's paths writes no pending baseline into it.

use super::record::{everything_under, key_vars, python, sentinel};
use super::replay::Server;
use crate::util::*;

/// The recorder's documented examples, one per SDK, as docs/recording.md writes them.
fn examples() -> Vec<String> {
    let docs = recording_docs_from("# Record an agent's runs");
    let end = docs.find("## What is recorded").unwrap();
    let examples = fenced_blocks(&docs[..end], "```python\n");
    assert_eq!(examples.len(), 3, "one example per SDK");
    examples
}

/// A project made by `init`, with the demo weather scenario's file in its suite (`traces/`),
/// as a user writes scenario files there.
fn project() -> Env {
    let env = Env::new();
    assert_eq!(env.run(&["init"]).code, 0);
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scenario = "agent.replay.weather/agent.replay.weather.scenario.json";
    env.write(
        &format!("traces/{scenario}"),
        std::fs::read(root.join("traces").join(scenario)).unwrap(),
    );
    env
}

/// `record` as the docs start it (no `--out`: into the suite), with `extra` flags.
fn record(env: &Env, upstream: &str, extra: &[&str]) -> Server {
    let mut args = vec!["record", "--upstream", upstream, "--unkeyed"];
    args.extend_from_slice(extra);
    Server::spawn(env, &args, &[])
}

/// Runs a documented example against the recorder; its standard output.
fn run_example(env: &Env, rec: &Server, example: &str, what: &str) -> String {
    let [openai, anthropic] = key_vars();
    let key = sentinel();
    let vars = [
        ("RECORDER", rec.url.as_str()),
        (&openai, &key),
        (&anthropic, &key),
    ];
    let unset = ["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"];
    run_python(&python(), example, env.root(), &vars, &unset, what)
}

const OFF_CI: [(&str, &str); 1] = [("CI", "false")];
const RECORDED: &str = "traces/agent.replay.weather/paris.trace.ndjson.zst";

#[test]
fn each_sdks_example_records_a_run_that_passes_its_scenario() {
    for (i, example) in examples().iter().enumerate() {
        assert!(example.lines().count() <= 5, "{example}");
        let what = format!("example {i}");
        let env = project();
        // The model: the demo's weather run replayed, from outside the suite.
        copy_dir(
            &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("traces/agent.replay.weather"),
            &env.path("model/agent.replay.weather"),
        );
        let up = Server::start(&env, &["model/agent.replay.weather"]);
        let rec = record(&env, &up.url, &[]);
        let stdout = run_example(&env, &rec, example, &what);
        assert!(stdout.contains("sunny"), "{what}: {stdout}");
        let (code, printed) = rec.finish(&[]);
        assert_eq!(code, 0, "{what}: {printed}");
        assert!(
            printed.contains("(completed, end inferred from the final answer) -> traces/"),
            "{what}: {printed}"
        );
        let (_, served) = up.finish(&[]);
        assert!(!served.contains("divergence"), "{what}: {served}");
        assert!(!everything_under(&env, "traces").contains("SENTINEL"));
        // Judged where it was recorded: every oracle of the scenario passes.
        let check = env.run_with(&["check", "--format", "json"], &OFF_CI);
        let report = json(&check);
        let row = row(&report, "paris.trace.ndjson.zst");
        assert_eq!(row["verdict"], "pass", "{what}: {row}");
        // Accepted, the project is green, under CI too.
        assert_eq!(env.run_with(&["baseline", "accept"], &OFF_CI).code, 0);
        let green = env.run_with(&["check"], &OFF_CI);
        assert_eq!(green.code, 0, "{what}: {}{}", green.stdout, green.stderr);
        assert_eq!(env.run(&["check"]).code, 0, "{what}: under CI");
    }
}
