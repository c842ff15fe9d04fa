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
    let style = crate::report::html::STYLE;
    write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>tracereplay comparison</title>\n<style>\n{style}</style>\n</head>\n<body>\n\
         <noscript><p>This page is drawn by a script; `tracereplay report --compare OLD NEW` \
         prints the same comparison.</p></noscript>\n\
         <div id=\"app\" aria-live=\"polite\"></div>\n\
         <script type=\"application/json\" id=\"data\">"
    )?;
    let data = serde_json::json!({"generated": generated, "comparison": c});
    out.write_all(crate::report::html::escape_for_script(&data.to_string()).as_bytes())?;
    write!(
        out,
        "</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}
