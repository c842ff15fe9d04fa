//! The comparison as one self-contained HTML page: a matrix of cases × the two runs, each cell
//! the case's verdict, pass count, flaky mark and drift, filterable to what changed. The data
//! is embedded as JSON (escaped for a script element) and drawn by `compare.js`, which puts
//! every value in the DOM as text.

use std::io::Write;

use super::RunComparison;

const SCRIPT: &str = include_str!("compare.js");

/// Writes the page; `generated` is the time it says it was written (`SOURCE_DATE_EPOCH`-aware,
/// from the caller).
pub fn render(c: &RunComparison, generated: &str, out: &mut dyn Write) -> std::io::Result<()> {
    let data = serde_json::json!({"generated": generated, "comparison": c});
    crate::report::html::page(
        out,
        "tracereplay comparison",
        "This page is drawn by a script; `tracereplay report --compare OLD NEW` prints the \
         same comparison.",
        &mut |w| serde_json::to_writer(w, &data).map_err(std::io::Error::from),
        &[SCRIPT],
    )
}
