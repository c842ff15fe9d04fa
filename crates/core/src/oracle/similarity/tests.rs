//! `response-similarity` against reference tables computed by the Python packages it
//! reproduces (`tests/fixtures/similarity/generate.py` says how).

use serde_json::Value;

use super::{porter, rouge1, tokenize};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/similarity/{name}",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../..")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("json")
}

#[test]
fn porter_agrees_with_nltk_on_every_word_of_the_table() {
    let table = fixture("porter.json");
    let table = table.as_object().expect("object");
    assert!(table.len() > 2000, "{}", table.len());
    let wrong: Vec<String> = (table.iter())
        .filter_map(|(w, s)| {
            let ours = porter::stem(w);
            (ours != s.as_str().unwrap_or_default()).then(|| format!("{w}: nltk {s}, ours {ours}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} disagree:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn rouge1_agrees_with_adk_on_every_pair_of_the_table() {
    let rows = fixture("rouge1.json");
    for row in rows.as_array().expect("array") {
        let (cand, refr) = (
            row["candidate"].as_str().unwrap(),
            row["reference"].as_str().unwrap(),
        );
        let (p, r, f) = rouge1(cand, refr);
        let want = |k: &str| row[k].as_f64().unwrap();
        assert_eq!(
            (p, r, f),
            (want("precision"), want("recall"), want("f")),
            "{cand:?} vs {refr:?}: tokens {:?} / {:?}",
            tokenize(cand),
            tokenize(refr)
        );
    }
}

#[test]
fn cjk_characters_are_tokens_and_thai_splits_by_cluster() {
    assert_eq!(tokenize("我喜欢"), ["我", "喜", "欢"]);
    assert_eq!(tokenize("running Café"), ["run", "café"]);
    assert_eq!(tokenize("ｔｅｘｔ"), ["text"]);
}
