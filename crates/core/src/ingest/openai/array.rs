//! A document that is a JSON array (a benchmark's results, one run each), read element by
//! element in parallel: each worker reads an element, checks it for keys held twice, splits it
//! into runs and builds each run whose name does not depend on its place in the input, so an
//! element's values are dropped by the worker that read them instead of the whole document's
//! values being held until every run is counted.
//!
//! What comes out is what reading the array whole, then splitting it and building its runs, gives:
//! the same runs, names and refusals, in the same order.

use rayon::prelude::*;
use serde_json::Value;
use serde_json::value::RawValue;

use super::split::{Piece, Run};
use super::{IngestOptions, RunIds, runs_of};

/// An element of the array, read.
enum Element {
    /// A message (it has a `role` or a `type`): if every element is one, the array is one
    /// conversation's message list, not a list of runs.
    Message(Value),
    /// A run, or several, or what was refused in it.
    Runs(Piece),
}

/// The pieces of `bytes` when it is a JSON array whose every element reads; `None` when it is
/// anything else or an element fails (the document is then read whole, which says where).
pub(super) fn pieces(bytes: &[u8], opts: &IngestOptions) -> Option<Vec<Piece>> {
    let elements: Vec<&RawValue> = serde_json::from_slice(bytes).ok()?;
    let read = |(i, raw): (usize, &&RawValue)| -> Option<Element> {
        let text = raw.get().as_bytes();
        crate::trace::json::no_duplicate_keys(text).ok()?;
        let value: Value = serde_json::from_slice(text).ok()?;
        Some(
            if value.get("role").is_some() || value.get("type").is_some() {
                Element::Message(value)
            } else {
                Element::Runs(split(value, at(i), opts))
            },
        )
    };
    let read: Vec<Element> = elements
        .par_iter()
        .enumerate()
        .map(read)
        .collect::<Option<_>>()?;
    if read.iter().all(|e| matches!(e, Element::Message(_))) {
        // One conversation: the array is its message list (an empty array included).
        let messages = (read.into_iter())
            .filter_map(|e| match e {
                Element::Message(m) => Some(m),
                Element::Runs(_) => None,
            })
            .collect();
        return Some(vec![split(Value::Array(messages), "document".into(), opts)]);
    }
    let pieces = (read.into_iter().enumerate()).map(|(i, e)| match e {
        Element::Runs(piece) => piece,
        // A message among runs is read as a run, as the rest.
        Element::Message(value) => split(value, at(i), opts),
    });
    Some(pieces.collect())
}

/// Where element `i` (from 0) stands in the document.
fn at(i: usize) -> String {
    format!("document, run {}", i + 1)
}

/// `value`, read at `at`, split into its runs, each built when it can be named already.
fn split(value: Value, at: String, opts: &IngestOptions) -> Piece {
    let mut piece = Piece::default();
    let mut raw = Vec::new();
    runs_of(value, at, &RunIds::default(), &mut raw, &mut piece.rejected);
    piece.runs = raw.into_iter().map(|run| Run::of(run, opts)).collect();
    piece
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(name: Option<&str>) -> IngestOptions {
        let mut opts = IngestOptions::for_tests(Some("runs"));
        opts.name = name.map(str::to_owned);
        opts
    }

    /// How many of the pieces' runs were built as they were read.
    fn built(pieces: &[Piece]) -> usize {
        (pieces.iter().flat_map(|p| &p.runs))
            .filter(|r| matches!(r, Run::Built(_)))
            .count()
    }

    /// The array read element by element gives what reading it whole gives, run for run and
    /// refusal for refusal, and builds as it reads the runs whose names do not depend on their
    /// place (`built`), leaving the others (`run-1`, `{n}`) until every run is counted.
    #[test]
    fn an_array_read_element_by_element_is_the_array_read_whole() {
        let turn = r##"[{"role": "user", "content": "refund #W1"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "refund", "arguments": "{\"order\": \"#W1\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
            {"role": "assistant", "content": "Refunded."}]"##;
        let tau = format!(
            r#"[{{"task_id": 1, "trial": 0, "traj": {turn}}}, {{"task_id": 1, "trial": 1, "traj": {turn}, "info": {{"x": [1]}}}},
                "text", null, {{"task_id": 3, "traj": "not a list"}}, {{"task_id": 4, "traj": []}}, [[{{"role": "user", "content": "nested"}}]]]"#
        );
        let by_place = format!(
            r#"[{{"messages": {turn}}}, {{"messages": {turn}}}, {{"id": "r9", "messages": {turn}}}]"#
        );
        let mixed = format!(r#"[{{"role": "user", "content": "hi"}}, {{"messages": {turn}}}]"#);
        let cases: [(&str, String, Option<&str>, usize); 7] = [
            // Task 4 names no trial, so its case is the file's stem and its place (`runs-6`).
            ("benchmark runs", tau.clone(), None, 2),
            ("named by place", by_place, None, 1),
            // Only the nested run, which has no `{task}`, is refused before its place is read.
            (
                "named by a template with {n}",
                tau,
                Some("bench/{task}-{n}"),
                1,
            ),
            ("a message among runs", mixed, None, 0),
            ("one conversation", turn.to_owned(), None, 0),
            (
                "responses items",
                r#"[{"type": "message", "role": "user", "content": "hi"}]"#.to_owned(),
                None,
                0,
            ),
            ("empty", "[]".to_owned(), None, 0),
        ];
        for (what, doc, name, built_as_read) in cases {
            let opts = opts(name);
            let pieces = pieces(doc.as_bytes(), &opts).expect(what);
            assert_eq!(built(&pieces), built_as_read, "{what}");
            let whole = super::super::split::finish(
                vec![super::super::split::read_whole(doc.as_bytes())],
                &opts,
            );
            let whole = format!("{whole:?}");
            assert_eq!(
                format!("{:?}", super::super::split::finish(pieces, &opts)),
                whole,
                "{what}"
            );
            // Every case but the empty one (a conversation with no message) writes runs.
            let wrote = whole.contains("runs: [IngestedRun");
            assert_eq!(wrote, what != "empty", "{what}: {whole}");
        }
    }

    /// Anything but an array whose every element reads is left to the whole read, which says
    /// where it fails.
    #[test]
    fn a_document_that_is_no_array_of_readable_elements_is_read_whole() {
        let opts = opts(None);
        for doc in [
            r#"{"messages": []}"#,
            "[{\"task_id\": 1}, {\"task_id\": 2, \"traj\": [], \"traj\": []}]",
            "[{\"task_id\": 1}, {\"task_id\": ]",
            "{\"a\": 1}\n{\"a\": 2}\n",
        ] {
            assert!(pieces(doc.as_bytes(), &opts).is_none(), "{doc}");
        }
    }
}
