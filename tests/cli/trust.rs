//! Regression tests for the holes an attack on tracereplay found: false greens (an exit code 0
//! for a suite that should fail) and leaks (raw prompts or secrets in what the tool writes).

use crate::util::*;

/// A case name carrying a newline, an escape sequence and a forged workflow command cannot start
/// a line of its own in the human or Markdown report.
#[test]
fn trace_controlled_strings_cannot_forge_report_lines() {
    let env = Env::new();
    env.write("traces/s/s.scenario.json", scenario("s", "Low", "deploy"));
    let evil = r"x\n::warning file=a::forged\nPASS  fake  default  Low\u001b[2J|<!--";
    let c = call("c1", "search");
    env.write(
        "traces/s/t.trace.ndjson.zst",
        sealed_zst(&trace_text("s", evil, &[&c, END])),
    );
    for format in ["human", "markdown"] {
        let out = env.run(&["check", "traces/", "--format", format, "--fail-on", "any"]);
        assert_eq!(out.code, 1, "{format}: {}", out.stderr);
        for line in out.stdout.lines() {
            assert!(
                !line.starts_with("::warning") && !line.starts_with("PASS  fake"),
                "{format}: forged line {line:?} in\n{}",
                out.stdout
            );
        }
        assert!(!out.stdout.contains('\u{1b}'), "{format}: raw escape");
        assert!(
            out.stdout.contains(r"x\n::warning"),
            "{format}: {}",
            out.stdout
        );
    }
    let md = env.run(&["check", "traces/", "--format", "markdown"]);
    assert!(!md.stdout.contains("<!--"), "{}", md.stdout);
    assert!(md.stdout.contains("\\|&lt;!--"), "{}", md.stdout);
}
