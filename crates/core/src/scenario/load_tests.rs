//! Tests of scenario loading: case-insensitive names, arrays, parse errors, strings, contracts.

use super::*;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> Utf8PathBuf {
    let p = Utf8PathBuf::from_path_buf(dir.path().join(name)).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn property_names_are_case_insensitive_and_arrays_load() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "a.scenario.json",
        r#"[{"ID":"one","Title":"T","RISK":"high","Expected":{"MUSTCALLTOOLS":[" web ", ""]},"Oracles":[{"Type":"tool-called"}],"KnownGap":true,"Metadata":{"unsafeTools":"deploy"}},
            {"id":"two","title":"T2"}]"#,
    );
    let loaded = load_scenarios(&[p], &[], &[]);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let s = &loaded.scenarios[0];
    assert_eq!(
        (s.id.as_str(), s.risk, s.known_gap),
        ("one", Risk::High, true)
    );
    assert_eq!(s.expected.must_call_tools, vec!["web".to_owned()]);
    assert_eq!(s.oracles[0].type_name(), "tool-called");
    assert_eq!(s.metadata("UNSAFETOOLS"), Some("deploy"));
    assert_eq!(loaded.scenarios[1].risk, Risk::Low);
}

#[test]
fn parse_errors_carry_line_and_column_and_other_files_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        &dir,
        "bad.scenario.json",
        "{\n  \"id\": \"x\",\n  \"title\": \"t\",\n}\n",
    );
    let good = write(&dir, "good.scenario.json", r#"{"id":"g","title":"t"}"#);
    let loaded = load_scenarios(&[bad.clone(), good], &[], &[]);
    assert_eq!(loaded.scenarios.len(), 1);
    match &loaded.errors[0] {
        ScenarioError::Parse {
            path,
            line,
            column,
            detail,
        } => {
            assert_eq!(path, &bad);
            assert_eq!((*line, *column), (4, 1));
            assert!(detail.contains("trailing comma"), "{detail}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn invalid_entries_are_reported_individually() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "s.scenario.json",
        r#"[{"id":" "},{"id":"r","risk":"extreme"},{"id":"ok","title":"t"}]"#,
    );
    let loaded = load_scenarios(&[p], &[], &[]);
    assert_eq!(loaded.scenarios.len(), 1);
    let msgs: Vec<String> = loaded.errors.iter().map(|e| e.to_string()).collect();
    assert!(
        msgs[0].contains("scenario 0 of the array: lacks a non-blank `id`"),
        "{msgs:?}"
    );
    assert!(
        msgs[1].contains("scenario `r`: `risk` is `extreme`"),
        "{msgs:?}"
    );
}

#[test]
fn a_scenario_parses_from_a_string() {
    let s: Scenario =
        r#"{"id":"s","title":"t","risk":"High","oracles":[{"type":"tool-called","tool":"x"}]}"#
            .parse()
            .unwrap();
    assert_eq!(
        (s.id.as_str(), s.risk, s.oracles.len()),
        ("s", Risk::High, 1)
    );
    assert!("[]".parse::<Scenario>().is_err());
    assert!("{".parse::<Scenario>().is_err());
}

#[test]
fn suite_files_named_as_contracts_are_not_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        &dir,
        "s.json",
        r#"{"id":"s","title":"t","contract":"./plan.json"}"#,
    );
    let c = write(&dir, "plan.json", r#"{"goal":"x"}"#);
    let loaded = load_scenarios(&[], &[s, c], &[]);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert_eq!(loaded.scenarios.len(), 1);
}
