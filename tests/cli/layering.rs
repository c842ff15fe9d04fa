//! The import rules of the library's layers, checked over the `use` lines: no root module
//! depends on itself through others, each layer names only the layers below it (one line per
//! layer in [`each_layer_names_only_the_layers_below_it`]), the base of the oracles
//! (`oracle/facts.rs`) knows no oracle family, and the statistics of trials know nothing of
//! judging, reports or the command line. Between crates, Cargo holds the rule: the trace-format
//! crate (`crates/trace`) cannot name anything above it; inside it, the file, path and shared
//! value helpers are leaves and privacy names only them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn source(rel: &str) -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// The paths a file's `use` lines (and `super::`/`crate::` paths anywhere) name.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim_start) {
        if line.starts_with("//") {
            continue;
        }
        for prefix in ["super::", "crate::"] {
            let mut rest = line;
            while let Some(at) = rest.find(prefix) {
                let path: String = rest[at..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                out.push(path);
                rest = &rest[at + prefix.len()..];
            }
        }
    }
    out
}

/// The root modules of the judging core (`crates/core/src/*.rs` and `crates/core/src/*/`, the
/// test-only files left out), each with the root modules its code names (`crate::x`), its tests
/// left out.
fn root_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    root_dependencies_in("crates/core/src")
}

/// [`root_dependencies`] of the crate whose sources are under `dir`.
fn root_dependencies_in(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut roots = BTreeSet::new();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let name = name.strip_suffix(".rs").unwrap_or(&name).to_owned();
        if !["lib", "main", "cli"].contains(&name.as_str()) && !name.ends_with("_tests") {
            roots.insert(name);
        }
    }
    let items = root_items(&source(&format!("{dir}/lib.rs")));
    let mut deps = BTreeMap::new();
    for root in &roots {
        let files = match src.join(root).is_dir() {
            true => sources_under(&format!("{dir}/{root}"), false),
            false => vec![(
                src.join(format!("{root}.rs")),
                source(&format!("{dir}/{root}.rs")),
            )],
        };
        let mut named = BTreeSet::new();
        for (_, text) in files {
            // The code before its unit tests.
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            for path in named_paths(code) {
                let first = path
                    .trim_start_matches("crate::")
                    .split("::")
                    .next()
                    .unwrap_or("");
                // An item the crate root re-exports (`crate::Error`) names its module.
                let first = items.get(first).map_or(first, String::as_str);
                if path.starts_with("crate::") && first != root && roots.contains(first) {
                    named.insert(first.to_owned());
                }
            }
        }
        deps.insert(root.clone(), named);
    }
    deps
}

/// The items a crate root re-exports from its modules (`pub use suite::{Error, Suite}`), by
/// name, with the module each comes from.
fn root_items(lib: &str) -> BTreeMap<String, String> {
    fn leaves(tree: &syn::UseTree, out: &mut Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => leaves(&p.tree, out),
            syn::UseTree::Name(n) => out.push(n.ident.to_string()),
            syn::UseTree::Rename(r) => out.push(r.rename.to_string()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| leaves(t, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    let file = syn::parse_file(lib).expect("lib.rs parses");
    let mut items = BTreeMap::new();
    for item in &file.items {
        if let syn::Item::Use(u) = item
            && let syn::UseTree::Path(p) = &u.tree
        {
            let mut names = Vec::new();
            leaves(&p.tree, &mut names);
            for n in names {
                items.insert(n, p.ident.to_string());
            }
        }
    }
    items
}

#[test]
fn items_named_through_the_crate_root_count_as_their_modules() {
    let items = root_items(&source("crates/core/src/lib.rs"));
    assert_eq!(items.get("Error").map(String::as_str), Some("suite"));
    assert_eq!(items.get("CheckOptions").map(String::as_str), Some("eval"));
    let deps = root_dependencies();
    assert!(deps["suite"].contains("eval"), "{:?}", deps["suite"]);
}

#[test]
fn no_root_module_depends_on_itself_through_others() {
    let deps = root_dependencies();
    assert!(deps.len() > 12, "{deps:?}");
    // Depth-first from each module: reaching it again is a cycle, named in full.
    for start in deps.keys() {
        let mut stack: Vec<Vec<&str>> = vec![vec![start.as_str()]];
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            let last = *path.last().unwrap();
            for next in &deps[last] {
                let mut longer = path.clone();
                longer.push(next);
                assert!(
                    next != start,
                    "a cycle of root modules: {}",
                    longer.join(" -> ")
                );
                if seen.insert(next.as_str()) {
                    stack.push(longer);
                }
            }
        }
    }
}

#[test]
fn each_layer_names_only_the_layers_below_it() {
    let deps = root_dependencies();
    let below = |module: &str, allowed: &[&str]| {
        for d in &deps[module] {
            assert!(
                allowed.contains(&d.as_str()),
                "`{module}` names `{d}`, which is not below it"
            );
        }
    };
    // The trace format, shared values, file and path helpers and privacy are the trace crate,
    // below everything here (`the_trace_crates_helpers_are_leaves`).
    below("trials", &["common", "trace"]);
    below("oracle", &["common", "fsutil", "paths", "privacy", "trace"]);
    below("prices", &["common", "oracle", "trace"]);
    below(
        "baseline",
        &["common", "fsutil", "oracle", "privacy", "trace", "trials"],
    );
    below(
        "diff",
        &[
            "baseline", "common", "fsutil", "oracle", "privacy", "trace", "trials",
        ],
    );
    below(
        "scenario",
        &["common", "fsutil", "oracle", "paths", "trace", "trials"],
    );
    below("gates", &["common", "oracle", "paths", "scenario", "trace"]);
    below(
        "ingest",
        &["common", "oracle", "privacy", "scenario", "trace", "trials"],
    );
    // The report's model, stores and formats: filled by the pipeline, never calling it.
    let report = [
        "baseline", "common", "diff", "fsutil", "oracle", "paths", "privacy",
    ];
    below(
        "report",
        &[&report[..], &["scenario", "trace", "trials"]].concat(),
    );
    // Leaves the pipeline calls, never calling back.
    below("sign", &["common", "fsutil", "report", "trace"]);
    below("remote", &["common", "fsutil", "ingest", "trace"]);
    below(
        "discover",
        &["common", "fsutil", "paths", "remote", "trace"],
    );
    // The pipeline: every layer above but the suite that drives it and the fuzzing checks.
    let pipeline = [
        "baseline", "diff", "discover", "gates", "ingest", "oracle", "prices", "remote", "report",
        "scenario", "sign", "trials",
    ];
    below("eval", &pipeline);
    // The API's entry point drives the pipeline; the fuzzing checks reach whatever they check.
    below("suite", &[&pipeline[..], &["eval"]].concat());
    below("fuzzing", &[&pipeline[..], &["eval"]].concat());
    // The run record stamps what the suite discovered, for the options the pipeline takes.
    below("run_record", &[&pipeline[..], &["eval", "suite"]].concat());
}

#[test]
fn every_root_module_has_its_rule() {
    // Each root module of the core is named in `each_layer_names_only_the_layers_below_it`, so a
    // new module cannot go unruled.
    let text = source("tests/cli/layering.rs");
    for module in root_dependencies().keys() {
        assert!(
            text.contains(&format!("below(\"{module}\""))
                || text.contains(&format!("below(\n        \"{module}\"")),
            "`{module}` has no layering rule"
        );
    }
}

#[test]
fn the_trace_crates_helpers_are_leaves() {
    let deps = root_dependencies_in("crates/trace/src");
    assert!(deps.len() > 15, "{deps:?}");
    for leaf in ["common", "fsutil", "paths"] {
        assert!(deps[leaf].is_empty(), "`{leaf}` names {:?}", deps[leaf]);
    }
    // What may be written (the secret lint, masking, the raw-prompt opt-in) knows no trace:
    // the one writer applies the privacy rules when it places a trace.
    let privacy: Vec<&str> = deps["privacy"].iter().map(String::as_str).collect();
    assert_eq!(privacy, ["fsutil", "paths"]);
}

#[test]
fn the_oracles_base_knows_no_oracle_family() {
    let families = [
        "sequence",
        "counts",
        "calls",
        "replies",
        "artifacts",
        "harness",
        "contract",
        "similarity",
        "compose",
        "expr",
    ];
    for path in named_paths(&source("crates/core/src/oracle/facts.rs")) {
        for f in families {
            assert!(
                !path.starts_with(&format!("super::{f}"))
                    && !path.starts_with(&format!("crate::oracle::{f}")),
                "oracle/facts.rs reaches into the `{f}` family: {path}"
            );
        }
    }
}

#[test]
fn shared_parameters_come_from_params_not_from_another_family() {
    for path in named_paths(&source("crates/core/src/oracle/replies.rs")) {
        assert!(
            !path.starts_with("super::counts"),
            "replies.rs takes `{path}` from counts"
        );
    }
}

#[test]
fn the_statistics_of_trials_know_nothing_of_judging_reports_or_the_cli() {
    for file in [
        "crates/core/src/trials/stats.rs",
        "crates/core/src/trials/policy.rs",
        "crates/core/src/diff/trial_drift.rs",
    ] {
        for path in named_paths(&source(file)) {
            for layer in ["crate::eval", "crate::report", "crate::cli"] {
                assert!(
                    !path.starts_with(layer),
                    "{file} depends on `{layer}`: {path}"
                );
            }
        }
    }
}

#[test]
fn reports_and_baselines_name_files_without_discovery() {
    let files: Vec<(PathBuf, String)> = [
        "crates/core/src/report",
        "crates/core/src/baseline",
        "crates/core/src/trials",
    ]
    .into_iter()
    .flat_map(|dir| sources_under(dir, true))
    .collect();
    assert!(files.len() > 10);
    for (f, text) in files {
        let paths = named_paths(&text);
        assert!(
            !paths.iter().any(|p| p.starts_with("crate::discover")),
            "{} depends on discovery (use `crate::paths::display_path`)",
            f.display()
        );
    }
}

#[test]
fn the_command_line_keeps_no_settings_in_globals() {
    // Settings are resolved once into `settings::Settings` and passed to the commands that
    // read them; a process-wide cell would let a command see another's settings, or none.
    let files = sources_under("src/cli", true);
    assert!(files.len() > 20);
    for (file, text) in files {
        for cell in [
            "OnceLock",
            "OnceCell",
            "LazyLock",
            "static mut",
            "thread_local!",
        ] {
            assert!(!text.contains(cell), "{} holds a `{cell}`", file.display());
        }
    }
}

#[test]
fn the_expression_budget_is_a_value_not_a_global() {
    // `gates --strength` gives the judging of its mutants a run budget; a process-wide deadline
    // would reach every other judging in the process (a library user's, or a test's).
    let budget = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/core/src/oracle/budget.rs"),
    )
    .unwrap();
    for global in ["static ", "thread_local!", "Mutex", "OnceLock"] {
        assert!(
            !budget.contains(global),
            "crates/core/src/oracle/budget.rs holds `{global}`"
        );
    }
}

/// The `.rs` files under `dir` with their text (`*tests.rs` only `with_tests`).
fn sources_under(dir: &str, with_tests: bool) -> Vec<(PathBuf, String)> {
    let mut stack = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir)];
    let mut out = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if name.ends_with(".rs") && (with_tests || !name.ends_with("tests.rs")) {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p, text));
            }
        }
    }
    assert!(!out.is_empty(), "no sources under {dir}");
    out
}

#[track_caller]
fn none_names(dir: &str, layers: &[&str]) {
    for (file, text) in sources_under(dir, false) {
        for path in named_paths(&text) {
            for layer in layers {
                assert!(
                    !path.starts_with(layer),
                    "{} depends on `{layer}`: {path}",
                    file.display()
                );
            }
        }
    }
}

#[test]
fn the_oracles_know_no_scenario() {
    // Scenarios load into oracle specs; oracles are configured from specs and fallbacks.
    none_names("crates/core/src/oracle", &["crate::scenario"]);
}

#[test]
fn the_report_knows_no_judging_and_the_html_page_no_run_folder() {
    none_names(
        "crates/core/src/report/html",
        &["super::runfolder", "crate::report::runfolder"],
    );
    // The report owns its model and its row store; judging fills them and knows the report,
    // never the other way round.
    none_names("crates/core/src/report", &["crate::eval"]);
}

#[test]
fn the_judging_workers_only_read_the_plan() {
    // The plan is a value the workers read; what they saw comes back in their results
    // (`Judgements::seen`), never written into it.
    let reads = [
        "Entries",
        "Entry",
        "entry_of",
        "out_of_scope_of",
        "unknown_scenario_message",
    ];
    for file in [
        "crates/core/src/eval/judging.rs",
        "crates/core/src/eval/row.rs",
    ] {
        let text = source(file);
        for line in text.lines().filter(|l| l.contains("plan::")) {
            let used = line.split("plan::").nth(1).unwrap_or("");
            let names: Vec<&str> = used
                .trim_matches(|c| c == '{' || c == '}' || c == ';')
                .split([',', '{', '}', ';', '('])
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect();
            for n in names {
                assert!(reads.contains(&n), "{file} uses `plan::{n}`: {line}");
            }
        }
    }
}

#[test]
fn every_test_runs_under_a_deadline_that_names_and_kills_it() {
    // `.ci/run` runs the README's test command: nextest's `ci` profile, which kills a test past
    // its deadline and fails it by name, then the doc tests (which nextest does not run).
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let command = "scripts/install-test-deps && cargo nextest run --profile ci && cargo test --doc";
    let ci = read(".ci/run");
    assert!(ci.lines().any(|l| l.trim() == command), "{ci}");
    let config: toml::Table = toml::from_str(&read(".config/nextest.toml")).unwrap();
    let ci_profile = &config["profile"]["ci"];
    let slow = &ci_profile["slow-timeout"];
    let period: u64 = slow["period"]
        .as_str()
        .unwrap()
        .trim_end_matches('s')
        .parse()
        .unwrap();
    let after = slow["terminate-after"].as_integer().unwrap() as u64;
    assert!(
        period * after <= 600,
        "a hung test is killed within 10 minutes: {slow}"
    );
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("\n{command} ")),
        "the README's test command"
    );
}
