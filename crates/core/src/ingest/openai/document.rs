//! Reading an OpenAI-messages input: one JSON document, or else JSON Lines (a value per line).
//! An object holding a key twice (a message with `role` twice, say) is refused with where it
//! is, never resolved last-wins.

use rayon::prelude::*;
use serde_json::Value;

use crate::ingest::IngestOutcome;

/// What receives each value read, with where it was read from (`document`, `line N`).
pub(super) type Each<'a> = dyn FnMut(Value, String, &mut IngestOutcome) + 'a;

/// Reads `bytes` as one document, else as JSON Lines, giving `each` every value in order and
/// rejecting into `outcome` what cannot be read.
pub(super) fn read(bytes: &[u8], outcome: &mut IngestOutcome, each: &mut Each<'_>) {
    // An array's elements are checked for keys held twice as they are read.
    if let Some(runs) = array_read_in_parallel(bytes) {
        return each(runs, "document".into(), outcome);
    }
    let duplicate = |text: &[u8]| crate::trace::json::no_duplicate_keys(text).err();
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => match duplicate(bytes) {
            Some(e) => outcome.reject(
                format!("line {}, column {}", e.line(), e.column()),
                crate::trace::json::message_without_position(&e),
            ),
            None => each(v, "document".into(), outcome),
        },
        Err(_) => {
            // JSON Lines: one run per line.
            for (i, line) in String::from_utf8_lossy(bytes).lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(line) {
                    Ok(v) => match duplicate(line.as_bytes()) {
                        Some(e) => outcome.reject(
                            format!("line {}, column {}", i + 1, e.column()),
                            crate::trace::json::message_without_position(&e),
                        ),
                        None => each(v, format!("line {}", i + 1), outcome),
                    },
                    Err(e) => outcome.reject(
                        format!("line {}, column {}", i + 1, e.column()),
                        format!(
                            "not JSON: {}",
                            crate::trace::json::message_without_position(&e)
                        ),
                    ),
                }
            }
        }
    }
}

/// A document that is a JSON array (a benchmark's results, one run each), its elements read and
/// checked for keys held twice in parallel, as whole. `None` when it is anything else or any
/// element fails: the document is then read whole, as one, which says where it fails.
fn array_read_in_parallel(bytes: &[u8]) -> Option<Value> {
    let elements: Vec<&serde_json::value::RawValue> = serde_json::from_slice(bytes).ok()?;
    let read = |raw: &&serde_json::value::RawValue| {
        let text = raw.get().as_bytes();
        crate::trace::json::no_duplicate_keys(text).ok()?;
        serde_json::from_slice::<Value>(text).ok()
    };
    let items: Option<Vec<Value>> = elements.par_iter().map(read).collect();
    items.map(Value::Array)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value read, or each problem, with its position.
    type At<T> = Vec<(String, T)>;

    /// Every value `read` gives, with its position, and what it rejected.
    fn read_all(text: &str) -> (At<Value>, At<String>) {
        let mut outcome = IngestOutcome::default();
        let mut values = Vec::new();
        read(text.as_bytes(), &mut outcome, &mut |v, at, _| {
            values.push((at, v))
        });
        let problems = (outcome.problems.iter())
            .map(|p| (p.position.clone(), p.message.clone()))
            .collect();
        (values, problems)
    }

    #[test]
    fn an_array_read_in_parallel_is_the_array_read_whole() {
        let docs = [
            r#"[{"task_id": 1, "traj": [{"role": "user", "content": "hi"}]}, {"task_id": 2.5e3}]"#,
            "[]",
            r#"[[{"role": "user"}], "text", null, 18446744073709551616, {"a": {"b": [1, 2]}}]"#,
        ];
        for doc in docs {
            let whole: Value = serde_json::from_str(doc).unwrap();
            assert_eq!(
                array_read_in_parallel(doc.as_bytes()),
                Some(whole.clone()),
                "{doc}"
            );
            assert_eq!(
                read_all(doc),
                (vec![("document".to_owned(), whole)], vec![])
            );
        }
        // Not an array: read whole, as before.
        assert_eq!(array_read_in_parallel(br#"{"messages": []}"#), None);
    }

    /// A key held twice in an array's element is refused at its place in the whole document
    /// (line and column), as when the document was only ever read whole.
    #[test]
    fn a_key_held_twice_in_an_element_is_refused_where_it_stands_in_the_document() {
        let doc = "[\n  {\"task_id\": 1},\n  {\"task_id\": 2, \"traj\": [], \"traj\": []}\n]";
        assert_eq!(array_read_in_parallel(doc.as_bytes()), None);
        let (values, problems) = read_all(doc);
        assert!(values.is_empty());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "line 3, column 35");
        assert!(
            problems[0].1.contains("duplicate key `traj`"),
            "{problems:?}"
        );
    }

    #[test]
    fn json_lines_are_read_a_value_per_line() {
        let (values, problems) = read_all("{\"a\": 1}\n\n{\"a\": 2, \"a\": 3}\n[1]\nnot json\n");
        let at: Vec<&str> = values.iter().map(|(at, _)| at.as_str()).collect();
        assert_eq!(at, ["line 1", "line 4"]);
        let where_: Vec<&str> = problems.iter().map(|(at, _)| at.as_str()).collect();
        assert_eq!(where_, ["line 3, column 12", "line 5, column 2"]);
    }
}
