// The cases of several trials, drawn by app.js above the table: each case's line — its verdict,
// pass count and rate, and, without opening it, whether it blocks the run, is flaky or drifted —
// cases needing attention first; opened, its notes (flaky oracles, drift with adjusted p) and its
// trials, each one click from its trace. `h` holds app.js's helpers (el, text, natural, and
// open(i), which opens row i's trace).
var tracereplayCases = (function () {
  "use strict";

  // What needs attention first: blocking, then errors, failures, flaky, drifted.
  function rank(c) {
    if (c.blocking) return 0;
    if (c.verdict === "error") return 1;
    if (c.verdict === "fail") return 2;
    if (c.flaky) return 3;
    if ((c.drift || []).length) return 4;
    return 5;
  }

  function badges(h, c) {
    var out = [];
    if (c.blocking) out.push(h.el("span", { class: "badge badge-blocking", text: "blocking" }));
    // A passing flaky case says FLAKY in its mark already.
    if (c.flaky && c.verdict !== "pass") out.push(h.el("span", { class: "badge badge-flaky", text: "flaky" }));
    if ((c.drift || []).some(function (d) { return d.fails; })) {
      out.push(h.el("span", { class: "badge badge-drift", text: "drift" }));
    }
    return out;
  }

  function item(h, c, rows, linked) {
    var el = h.el, text = h.text;
    var mark = c.verdict === "pass" ? (c.flaky ? "FLAKY" : "PASS") : c.verdict.toUpperCase();
    var rate = c.pass_rate === null || c.pass_rate === undefined ? "" :
      ", pass rate " + c.pass_rate.toFixed(2) + " (95% " + c.wilson[0].toFixed(2) + "–" + c.wilson[1].toFixed(2) + ")";
    var trials = [];
    rows.forEach(function (r, i) {
      if (r.scenario !== c.scenario || r.case !== c.case) return;
      trials.push(el("li", null, [
        el("button", { type: "button", class: "link", onclick: function () { h.open(i); } },
          ["trial " + text(r.trial) + ": " + r.verdict]),
        " " + text(r.path),
      ]));
    });
    var notes = [];
    if (c.reason) notes.push(el("p", { text: c.reason }));
    (c.flaky_oracles || []).forEach(function (f) {
      notes.push(el("p", { text: f.oracle + " passed " + f.passed + " of " + f.of + " trials" }));
    });
    (c.drift || []).forEach(function (d) {
      var p = d.p_adjusted === null || d.p_adjusted === undefined ? "" : " (adjusted p = " + d.p_adjusted.toPrecision(4) + ")";
      notes.push(el("p", { class: d.fails ? "error" : "muted", text: d.category + ": " + d.detail + p }));
    });
    if (c.underpowered_detail) notes.push(el("p", { class: "muted", text: "underpowered: " + c.underpowered_detail }));
    var open = linked === c;
    var line = mark + " " + c.scenario + "/" + c.case + ": " + c.passed + "/" + c.trials + " trials pass" + rate;
    return el("details", {
      class: "case verdict-" + c.verdict + (c.blocking ? " case-blocking" : ""),
      "data-case": c.scenario + "/" + c.case,
      id: open ? "linked-case" : null,
      open: open,
    }, [el("summary", null, [line].concat(badges(h, c)))].concat(notes).concat([el("ol", { class: "trials" }, trials)]));
  }

  // The section, or null when the report has no case of several trials. `linked` is the case a
  // link named: drawn open.
  return function (h, report, rows, linked) {
    var sets = (report.cases || []).filter(function (c) { return c.trials >= 2 || c.reason; }).slice();
    if (!sets.length) return null;
    sets.sort(function (a, b) {
      return rank(a) - rank(b) || h.natural(a.scenario, b.scenario) || h.natural(a.case, b.case);
    });
    var s = report.summary;
    return h.el("section", { id: "cases", "aria-label": "Cases" }, [
      h.el("h2", { text: "Cases (" + s.cases + ", " + s.flaky + " flaky, " + s.underpowered + " underpowered)" }),
    ].concat(sets.map(function (c) { return item(h, c, rows, linked); })));
  };
})();
