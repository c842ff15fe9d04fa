//! Reading an OpenAI-messages input: one JSON document, or else JSON Lines (a value per line);
//! an array of runs is read apart first (`array.rs`), in parallel, and read here only when
//! one of its elements fails, to say where.
//! An object holding a key twice (a message with `role` twice, say) is refused with where it
//! is, never resolved last-wins.

use serde_json::Value;

use crate::ingest::IngestOutcome;

/// What receives each value read, with where it was read from (`document`, `line N`).
pub(super) type Each<'a> = dyn FnMut(Value, String, &mut IngestOutcome) + 'a;

/// Reads `bytes` as one document, else as JSON Lines, giving `each` every value in order and
/// rejecting into `outcome` what cannot be read.
pub(super) fn read(bytes: &[u8], outcome: &mut IngestOutcome, each: &mut Each<'_>) {
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

    /// A key held twice in an array's element is refused at its place in the whole document
    /// (line and column), as when the document was only ever read whole.
    #[test]
    fn a_key_held_twice_in_an_element_is_refused_where_it_stands_in_the_document() {
        let doc = "[\n  {\"task_id\": 1},\n  {\"task_id\": 2, \"traj\": [], \"traj\": []}\n]";
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
