//! The HTML report's conversation view of a trace, in headless Chromium: the tool result that
//! decided a failure is on the screen without a click, long values are folded (not hidden),
//! prompts are hashes unless the developer opted in and a sidecar holds their text.

use crate::html::{app, ready, render_dom};
use crate::util::*;

const PROMPT_H: &str = "b3:7c1e5a0f9d2b4c6e8a1f3b5d7e9c2a4f6b8d0e1c3a5f7b9d2e4c6a8f0b1d3e5f";

/// A suite of one scenario, `shop`, whose `tool-result-contains` oracle fails on the result of
/// the `lookup` call; the trace's events after its header are `events`.
fn shop_suite(env: &Env, result: &str) {
    let oracle =
        serde_json::json!({"type": "tool-result-contains", "tool": "lookup", "value": "in stock"});
    shop(
        env,
        oracle,
        &[
            serde_json::json!({"kind": "user_message", "prompt": {"h": PROMPT_H, "len": 27}}),
            serde_json::json!({"kind": "inference", "model": "m-1", "output": {"tool_calls": [
                {"call_id": "c1", "tool": "lookup", "args": {"sku": "A-7"}}]}}),
            serde_json::json!({"kind": "tool_call", "call_id": "c1", "tool": "lookup", "args": {"sku": "A-7"}}),
            serde_json::json!({"kind": "tool_result", "call_id": "c1", "ok": true, "output": result}),
            serde_json::json!({"kind": "final_answer", "text": "Sorry, it is gone."}),
            serde_json::json!({"kind": "run_end", "status": "completed"}),
        ],
    );
}

/// Scenario `shop` with one `oracle`, and its sealed trace `default` of `events`.
fn shop(env: &Env, oracle: serde_json::Value, events: &[serde_json::Value]) {
    env.write(
        "traces/shop/shop.scenario.json",
        serde_json::json!({"id": "shop", "title": "t", "risk": "High", "oracles": [oracle]})
            .to_string(),
    );
    let events: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    let lines: Vec<&str> = events.iter().map(String::as_str).collect();
    env.write(
        "traces/shop/default.trace.ndjson.zst",
        sealed_zst(&trace_text("shop", "default", &lines)),
    );
}

/// The conversation entry whose id is `cv-SEQ`, up to its raw events (which are folded away).
fn entry(app: &str, seq: u64) -> &str {
    let start = (app.find(&format!("id=\"cv-{seq}\"")))
        .unwrap_or_else(|| panic!("no conversation entry cv-{seq} in {app}"));
    let start = app[..start].rfind("<li").unwrap();
    let end = start + app[start..].find("<details class=\"raw\"").unwrap();
    &app[start..end]
}

#[test]
fn the_deciding_tool_result_is_shown_inline_in_the_conversation() {
    let env = Env::new();
    shop_suite(&env, "out of stock: 0 left");
    let out = env.run(&["check", "traces/", "--html", "report.html"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let (dom, console) = render_dom(&env.path("report.html"), "#shop/default");
    ready(&dom, &console);
    let app = app(&dom);
    assert!(app.contains("<h3>Conversation</h3>"), "{app}");
    // In event order: the user turn, the model's plan, the call with its result, the answer.
    let at = |s: &str| app.find(s).unwrap_or_else(|| panic!("{s} in {app}"));
    assert!(at("id=\"cv-1\"") < at("id=\"cv-2\"") && at("id=\"cv-2\"") < at("id=\"cv-3\""));
    assert!(at("id=\"cv-3\"") < at("id=\"cv-5\""));
    assert!(
        !app.contains("id=\"cv-4\""),
        "the result sits in its call's entry: {app}"
    );
    let user = entry(app, 1);
    assert!(
        user.contains(&format!(
            "prompt {PROMPT_H} · 27 characters (recorded as a hash)"
        )),
        "{user}"
    );
    let plan = entry(app, 2);
    assert!(
        plan.contains("plans <code>lookup</code> <code>{\"sku\":\"A-7\"}</code>"),
        "{plan}"
    );
    // The call and the result that decided the failure: marked, and readable without a click.
    let tool = entry(app, 3);
    assert!(tool.contains("class=\"turn t-tool deciding\""), "{tool}");
    assert!(tool.contains("<strong>tool lookup (c1)</strong>"), "{tool}");
    assert!(tool.contains("seq 3, seq 4"), "{tool}");
    assert!(tool.contains("out of stock: 0 left"), "{tool}");
    assert!(!tool.contains("<details"), "nothing to expand: {tool}");
    assert!(entry(app, 5).contains("Sorry, it is gone."));
    // A passing entry is not marked.
    assert!(!entry(app, 5).contains("deciding"));
}

#[test]
fn a_long_tool_result_is_folded_not_hidden() {
    // A deciding entry shows up to 4,000 characters whole (what decided is in view without a
    // click); past that, as in every entry past 300, the beginning is inline and the rest one
    // click away, with the whole length.
    for (repeat, whole) in [(45, true), (600, false)] {
        let env = Env::new();
        let long = format!("out of stock. {}", "details ".repeat(repeat));
        shop_suite(&env, &long);
        let out = env.run(&["check", "traces/", "--html", "report.html"]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        let (dom, console) = render_dom(&env.path("report.html"), "#shop/default");
        ready(&dom, &console);
        let app = app(&dom);
        let tool = entry(app, 3);
        assert!(tool.contains("deciding"), "{tool}");
        if whole {
            assert!(
                tool.contains(&format!("<pre class=\"result\">{long}</pre>")),
                "{tool}"
            );
            assert!(!tool.contains("<details"), "nothing to expand: {tool}");
            continue;
        }
        assert!(
            tool.contains("<pre>out of stock. details details"),
            "{tool}"
        );
        // The page holds the first 4,000 characters of a deciding value, and says so.
        assert!(
            tool.contains(&format!(
                "the rest ({} characters in all; the page holds the first 4000,",
                long.chars().count()
            )),
            "{tool}"
        );
    }
}

#[test]
fn prompt_text_comes_from_the_sidecar_only_behind_the_opt_in() {
    let env = Env::new();
    shop_suite(&env, "out of stock");
    let said = "Is the A-7 lamp in stock? <b>now</b>";
    env.write(
        "traces/shop/default.prompts.ndjson",
        format!("{}\n", serde_json::json!({"h": PROMPT_H, "text": said})),
    );
    // Without the opt-in the text is nowhere in the page.
    env.run(&["check", "traces/", "--html", "report.html"]);
    let html = std::fs::read_to_string(env.path("report.html")).unwrap();
    assert!(
        !html.contains("A-7 lamp"),
        "raw prompt text without the opt-in"
    );
    // With it, the user turn shows the text (as text).
    let out = env.run(&[
        "check",
        "traces/",
        "--allow-raw-prompts",
        "--html",
        "opted.html",
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let (dom, console) = render_dom(&env.path("opted.html"), "#shop/default");
    ready(&dom, &console);
    let user = entry(app(&dom), 1);
    assert!(
        user.contains("Is the A-7 lamp in stock? &lt;b&gt;now&lt;/b&gt;"),
        "{user}"
    );
    assert!(!user.contains("recorded as a hash"), "{user}");
}

#[test]
fn a_reused_call_id_pairs_each_call_with_the_result_that_follows_it() {
    // Real recordings reuse call ids (tau-bench's gpt-4o runs do): each call takes the next
    // result of its id, not the first one in the trace.
    let env = Env::new();
    shop(
        &env,
        serde_json::json!({"type": "tool-args", "tool": "order", "args": {"sku": "A-7"}}),
        &[
            serde_json::json!({"kind": "tool_call", "call_id": "c1", "tool": "lookup", "args": {"sku": "A-7"}}),
            serde_json::json!({"kind": "tool_result", "call_id": "c1", "ok": true, "output": "3 in stock"}),
            serde_json::json!({"kind": "tool_call", "call_id": "c1", "tool": "order", "args": {"sku": "B-8"}}),
            serde_json::json!({"kind": "tool_result", "call_id": "c1", "ok": false, "error": "B-8 is not a product"}),
            serde_json::json!({"kind": "run_end", "status": "completed"}),
        ],
    );
    let out = env.run(&["check", "traces/", "--html", "report.html"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let (dom, console) = render_dom(&env.path("report.html"), "#shop/default");
    ready(&dom, &console);
    let app = app(&dom);
    let first = entry(app, 1);
    assert!(
        first.contains("seq 1, seq 2") && first.contains("3 in stock"),
        "{first}"
    );
    let second = entry(app, 3);
    assert!(second.contains("seq 3, seq 4"), "{second}");
    assert!(second.contains("B-8 is not a product"), "{second}");
    assert!(!second.contains("3 in stock"), "{second}");
    assert!(second.contains("deciding"), "{second}");
    // The error, recorded once, is shown once.
    assert_eq!(
        second.matches("B-8 is not a product").count(),
        1,
        "{second}"
    );
}
