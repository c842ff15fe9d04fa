// The tracereplay HTML report. Plain JavaScript, no dependencies. Everything it shows comes from
// the JSON document in <script id="data">, and every piece of it enters the DOM as text
// (textContent), never as markup. State lives in the URL's hash (`#verdict=fail&trace=3`), so
// a view can be linked, bookmarked and opened directly.
(function () {
  "use strict";
  var el = tracereplayDom.el, text = tracereplayDom.text, natural = tracereplayDom.natural;
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message));
    document.body.setAttribute("data-errors", errors.join(" | "));
  });

  var doc = JSON.parse(document.getElementById("data").textContent);
  var report = doc.report;
  var rows = report.results;
  var PAGE = 100;
  var VERDICT_RANK = { error: 0, fail: 1, pass: 3 };
  var RISKS = ["Critical", "High", "Medium", "Low"];
  var state = {};

  // ---- small helpers (the DOM ones are in dom.js) --------------------------------------
  function json(v, limit) {
    var s = typeof v === "string" ? v : JSON.stringify(v, null, 2);
    if (s === undefined) s = "";
    limit = limit || 4000;
    var n = Array.from(s).length;
    return n > limit ? Array.from(s).slice(0, limit).join("") + "… (" + n + " characters)" : s;
  }
  function drifted(r) {
    return (r.drift || []).length > 0;
  }
  function rank(r) {
    if (r.verdict === "pass" && drifted(r)) return 2;
    return VERDICT_RANK[r.verdict] === undefined ? 4 : VERDICT_RANK[r.verdict];
  }

  // ---- stable links ------------------------------------------------------------------------
  // A trace is linked by what it is — `scenario/case`, and `/trial` for a trial, each part
  // URL-encoded — so a link in a pull request keeps pointing at the same trace when other rows
  // come and go. A row that names no scenario and case, or shares them with another (error
  // rows), is linked by its row number.
  var KEYS = Object.create(null), KEY_COUNT = Object.create(null);
  rows.forEach(function (r) {
    var k = keyOf(r);
    if (k !== null) KEY_COUNT[k] = (KEY_COUNT[k] || 0) + 1;
  });
  rows.forEach(function (r, i) {
    var k = keyOf(r);
    if (k !== null && KEY_COUNT[k] === 1) KEYS[k] = i;
  });
  function keyOf(r) {
    if (r.scenario === null || r.scenario === undefined || r.case === null || r.case === undefined) return null;
    var k = encodeURIComponent(r.scenario) + "/" + encodeURIComponent(r.case);
    if (r.trial !== null && r.trial !== undefined) k += "/" + encodeURIComponent(String(r.trial));
    return k;
  }
  function linkOf(i) {
    var k = keyOf(rows[i]);
    return k !== null && KEYS[k] === i ? k : String(i);
  }
  // The row a link names: a stable key, else a row number.
  function rowOf(link) {
    if (link in KEYS) return KEYS[link];
    return /^\d+$/.test(link) ? parseInt(link, 10) : -1;
  }

  // ---- state in the hash -------------------------------------------------------------------
  function readHash() {
    var raw = location.hash.replace(/^#/, "");
    // `#scenario/case[/trial]` alone opens that trace.
    if (raw.indexOf("=") < 0 && raw.indexOf("/") > 0) raw = "trace=" + encodeURIComponent(raw);
    var p = new URLSearchParams(raw);
    state = {
      verdict: p.get("verdict") || "all",
      drift: p.get("drift") || "all",
      risk: p.get("risk") || "all",
      q: p.get("q") || "",
      sort: p.get("sort") || "default",
      dir: p.get("dir") === "-1" ? -1 : 1,
      page: Math.max(0, parseInt(p.get("page") || "0", 10) || 0),
      trace: p.get("trace"),
    };
  }
  function writeHash(changes) {
    Object.keys(changes).forEach(function (k) {
      state[k] = changes[k];
    });
    var p = new URLSearchParams();
    ["verdict", "drift", "risk", "q", "sort"].forEach(function (k) {
      var d = k === "sort" ? "default" : k === "q" ? "" : "all";
      if (state[k] !== d) p.set(k, state[k]);
    });
    if (state.dir === -1) p.set("dir", "-1");
    if (state.page) p.set("page", String(state.page));
    var open = state.trace !== null && state.trace !== undefined;
    var h = p.toString();
    // A trace opened from the unfiltered table is linked as `#scenario/case[/trial]` alone.
    if (open && !h && state.trace.indexOf("/") > 0) {
      h = state.trace;
    } else if (open) {
      p.set("trace", state.trace);
      h = p.toString();
    }
    history.replaceState(null, "", h ? "#" + h : location.pathname + location.search);
    draw();
  }

  // ---- filtering and sorting ---------------------------------------------------------------
  function selected() {
    var q = state.q.toLowerCase();
    var out = [];
    rows.forEach(function (r, i) {
      if (state.verdict === "failing" && r.verdict === "pass") return;
      if (state.verdict !== "all" && state.verdict !== "failing" && r.verdict !== state.verdict) return;
      if (state.drift === "drifted" && !drifted(r)) return;
      if (state.drift === "none" && drifted(r)) return;
      if (["all", "drifted", "none"].indexOf(state.drift) < 0 &&
          !(r.drift || []).some(function (d) { return d.category === state.drift; })) return;
      if (state.risk !== "all" && text(r.risk || "none") !== state.risk) return;
      if (q && (text(r.scenario) + " " + text(r.case) + " " + text(r.path)).toLowerCase().indexOf(q) < 0) return;
      out.push(i);
    });
    var key = {
      scenario: function (r) { return text(r.scenario); },
      case: function (r) { return text(r.case); },
      why: why,
      risk: function (r) { var k = RISKS.indexOf(r.risk); return k < 0 ? 9 : k; },
      verdict: rank,
      drift: function (r) { return (r.drift || []).map(function (d) { return d.category; }).join(","); },
      hash: function (r) { return text(r.content_hash); },
    }[state.sort];
    out.sort(function (a, b) {
      var ra = rows[a], rb = rows[b];
      var ka = key ? key(ra) : rank(ra), kb = key ? key(rb) : rank(rb);
      var c = typeof ka === "string" ? natural(ka, kb) : (ka < kb ? -1 : ka > kb ? 1 : 0);
      return c ? c * state.dir : a - b;
    });
    return out;
  }


  // The longest reason the table shows whole (a longer one is cut, and whole on hover and in
  // the trace view).
  var WHY = 240;
  function clip(s, n) {
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  function firstLine(s) {
    var t = text(s);
    var n = t.indexOf("\n");
    return n < 0 ? t : t.slice(0, n) + " …";
  }

  // Why a row is what it is, in a line: its error, else the first oracle that did not pass,
  // else the drift that blocks it (or the first drift).
  function why(r) {
    if (r.error) return text(r.error.category) + ": " + firstLine(r.error.message);
    var failing = (r.oracles || []).filter(function (o) { return o.verdict !== "pass"; });
    if (failing.length) return text(failing[0].type) + " " + text(failing[0].verdict) + ": " + firstLine(failing[0].message);
    var drift = r.drift || [];
    var d = drift.filter(function (x) { return x.fails; })[0] || drift[0];
    return d ? "drift " + text(d.category) + ": " + firstLine(d.detail) : "";
  }

  // The reason, cut in the table (whole on hover).
  function whyCell(reason) {
    return el("td", { class: "why", title: reason.length > WHY ? reason : null, text: clip(reason, WHY) });
  }

  // A trial row's case line: its trials' pass count and flaky mark.
  function caseOf(r) {
    if (r.trial === undefined || r.trial === null) return null;
    return (report.cases || []).filter(function (c) { return c.scenario === r.scenario && c.case === r.case; })[0] || null;
  }

  // ---- overview -----------------------------------------------------------------------------
  function bars(title, counts, total) {
    var list = el("ul", { class: "bars" });
    Object.keys(counts).forEach(function (k) {
      var n = counts[k];
      var pct = total ? Math.round((n * 1000) / total) / 10 : 0;
      list.appendChild(el("li", null, [
        el("span", { class: "bar-label", text: k }),
        el("span", { class: "bar-track", "aria-hidden": "true" }, [
          el("span", { class: "bar bar-" + k.toLowerCase().replace(/[^a-z0-9]+/g, "-"), style: "width:" + pct + "%" }),
        ]),
        el("span", { class: "bar-count", text: n + " (" + pct + " %)" }),
      ]));
    });
    if (!Object.keys(counts).length) list.appendChild(el("li", { class: "muted", text: "none" }));
    return el("section", { class: "card" }, [el("h3", { text: title }), list]);
  }

  function overview() {
    var s = report.summary;
    var verdicts = { pass: 0, fail: 0, error: 0 };
    var risks = { Critical: 0, High: 0, Medium: 0, Low: 0, none: 0 };
    var drift = {};
    rows.forEach(function (r) {
      verdicts[r.verdict] = (verdicts[r.verdict] || 0) + 1;
      risks[r.risk || "none"] = (risks[r.risk || "none"] || 0) + 1;
      (r.drift || []).forEach(function (d) { drift[d.category] = (drift[d.category] || 0) + 1; });
    });
    // A set of trials carries its drift on its case, not its rows: counted there, as
    // `summary.drifted` counts it.
    (report.cases || []).forEach(function (c) {
      (c.drift || []).forEach(function (d) { drift[d.category] = (drift[d.category] || 0) + 1; });
    });
    var counts = el("dl", { class: "counts", id: "counts" });
    [["traces", s.traces], ["scenarios", s.scenarios], ["passed", s.passed], ["failed", s.failed],
     ["errors", s.errors], ["ignored failures", s.ignored_failures], ["drifted", s.drifted],
     ["new", s.new], ["obsolete", s.obsolete], ["blocking", s.blocking], ["privacy findings", s.privacy]]
      .forEach(function (p) {
        counts.appendChild(el("div", { "data-count": p[0] }, [el("dt", { text: p[0] }), el("dd", { text: p[1] })]));
      });
    var ok = doc.exit_code === 0;
    return el("section", { id: "overview", "aria-label": "Overview" }, [
      el("p", { class: "exit " + (ok ? "exit-ok" : "exit-fail"), id: "exit-code" }, [
        "exit code " + doc.exit_code + (ok ? ": the run passes" : ": the run fails"),
      ]),
      counts,
      el("div", { class: "cards" }, [
        bars("Verdicts", verdicts, rows.length),
        bars("Risk", risks, rows.length),
        bars("Drift", drift, rows.length),
      ]),
      el("ul", { class: "usage", id: "usage" }, (doc.usage_lines || []).map(function (line) {
        return el("li", { class: /^budget: FAILED/.test(line) ? "exit-fail" : null, text: line });
      })),
      el("p", { class: "muted", text: report.baselines }),
    ]);
  }

  // ---- cases of several trials (cases.js) ---------------------------------------------------
  function isSet(c) { return c.trials >= 2 || c.reason; }
  // The set of trials a link names (`#SCENARIO/CASE` of a case of several trials), if any.
  function caseOfLink(link) {
    if (link === null || link === undefined || rowOf(link) >= 0) return null;
    return (report.cases || []).filter(function (c) {
      return isSet(c) && encodeURIComponent(c.scenario) + "/" + encodeURIComponent(c.case) === link;
    })[0] || null;
  }
  function casesView(linked) {
    var h = { el: el, text: text, natural: natural, open: function (i) { writeHash({ trace: linkOf(i) }); } };
    return tracereplayCases(h, report, rows, linked);
  }

  // ---- the table ----------------------------------------------------------------------------
  // A content hash shortened to its algorithm and 12 hex digits (the whole on hover, and in
  // the trace view).
  function shortHash(h) {
    h = text(h);
    var at = h.indexOf(":") + 1;
    return h.length > at + 12 ? h.slice(0, at + 12) + "…" : h;
  }

  // The case, and for a trial its number and its case's pass count (with the flaky mark).
  function caseCell(r) {
    var out = [text(r.case)];
    var c = caseOf(r);
    if (c) {
      out.push(el("span", { class: "trial", text: " · trial " + text(r.trial) + " · " + c.passed + "/" + c.trials + " pass" + (c.flaky ? " · flaky" : "") }));
    }
    return out;
  }

  function option(value, label, current) {
    return el("option", { value: value, text: label, selected: value === current });
  }
  function filters() {
    var categories = {};
    rows.forEach(function (r) { (r.drift || []).forEach(function (d) { categories[d.category] = 1; }); });
    var verdict = el("select", { id: "f-verdict", onchange: function (e) { writeHash({ verdict: e.target.value, page: 0 }); } },
      [["all", "every verdict"], ["failing", "failing (fail or error)"], ["fail", "fail"], ["error", "error"], ["pass", "pass"]]
        .map(function (p) { return option(p[0], p[1], state.verdict); }));
    var drift = el("select", { id: "f-drift", onchange: function (e) { writeHash({ drift: e.target.value, page: 0 }); } },
      [["all", "drift or not"], ["drifted", "drifted"], ["none", "no drift"]]
        .concat(Object.keys(categories).sort().map(function (c) { return [c, c]; }))
        .map(function (p) { return option(p[0], p[1], state.drift); }));
    var risk = el("select", { id: "f-risk", onchange: function (e) { writeHash({ risk: e.target.value, page: 0 }); } },
      [["all", "every risk"]].concat(RISKS.concat(["none"]).map(function (r) { return [r, r]; }))
        .map(function (p) { return option(p[0], p[1], state.risk); }));
    var q = el("input", { id: "f-q", type: "search", value: state.q, placeholder: "scenario, case or path",
      onchange: function (e) { writeHash({ q: e.target.value, page: 0 }); } });
    return el("form", { class: "controls", role: "search", onsubmit: function (e) { e.preventDefault(); } }, [
      el("label", null, ["Verdict ", verdict]),
      el("label", null, ["Drift ", drift]),
      el("label", null, ["Risk ", risk]),
      el("label", null, ["Find ", q]),
    ]);
  }

  function table() {
    var chosen = selected();
    var pages = Math.max(1, Math.ceil(chosen.length / PAGE));
    var page = Math.min(state.page, pages - 1);
    var columns = [["scenario", "Scenario"], ["case", "Case"], ["risk", "Risk"], ["verdict", "Verdict"], ["why", "Why"], ["drift", "Drift"], ["hash", "Content hash"]];
    var head = el("tr", null, columns.map(function (c) {
      var active = state.sort === c[0];
      return el("th", { scope: "col", "aria-sort": active ? (state.dir === 1 ? "ascending" : "descending") : "none" }, [
        el("button", { type: "button", class: "sort", onclick: function () {
          writeHash({ sort: c[0], dir: active ? -state.dir : 1, page: 0 });
        } }, [c[1] + (active ? (state.dir === 1 ? " ▲" : " ▼") : "")]),
      ]);
    }));
    var body = el("tbody");
    chosen.slice(page * PAGE, page * PAGE + PAGE).forEach(function (i) {
      var r = rows[i];
      body.appendChild(el("tr", { "data-row": i, "data-verdict": r.verdict, class: "row-" + r.verdict + (drifted(r) ? " row-drifted" : "") }, [
        el("td", null, [el("button", { type: "button", class: "open", "data-link": linkOf(i), "aria-label": "open the trace " + text(r.scenario) + " / " + text(r.case),
          onclick: function () { writeHash({ trace: linkOf(i) }); } }, [text(r.scenario) || "(no scenario)"])]),
        el("td", { class: "id" }, caseCell(r)),
        el("td", { text: r.risk || "" }),
        el("td", null, [el("span", { class: "badge v-" + r.verdict, text: r.verdict + (r.known_gap ? " (known gap)" : "") + (r.blocking ? " · blocking" : "") })]),
        whyCell(why(r)),
        el("td", { text: (r.drift || []).map(function (d) { return d.category; }).join(", ") }),
        el("td", { class: "hash", title: r.content_hash || "", text: shortHash(r.content_hash) }),
      ]));
    });
    var pager = el("nav", { class: "pager", "aria-label": "Pages" }, [
      el("button", { type: "button", disabled: page === 0, onclick: function () { writeHash({ page: page - 1 }); } }, ["Previous"]),
      el("span", { id: "shown", text: chosen.length ? "rows " + (page * PAGE + 1) + "–" + Math.min(chosen.length, page * PAGE + PAGE) + " of " + chosen.length : "no row matches" }),
      el("button", { type: "button", disabled: page >= pages - 1, onclick: function () { writeHash({ page: page + 1 }); } }, ["Next"]),
    ]);
    return el("section", { id: "table", "aria-label": "Traces" }, [
      filters(),
      el("table", null, [el("thead", null, [head]), body]),
      pager,
    ]);
  }

  // ---- the trace view -----------------------------------------------------------------------
  function summary(e, results) {
    var k = e.kind;
    if (k === "user_message") return "user turn · prompt " + text(e.prompt && e.prompt.h) + (e.prompt && e.prompt.len ? " (" + e.prompt.len + " characters)" : "");
    if (k === "inference") {
      var parts = ["inference"];
      if (e.model) parts.push(text(e.model));
      if (e.usage) parts.push("tokens " + e.usage.input_tokens + " in / " + e.usage.output_tokens + " out");
      var o = e.output || {};
      if (o.text) parts.push("“" + json(o.text, 300) + "”");
      (o.tool_calls || []).forEach(function (c) { parts.push("plans " + text(c.tool) + " " + json(JSON.stringify(c.args), 200)); });
      return parts.join(" · ");
    }
    if (k === "tool_call") {
      var r = results[e.seq];
      var outcome = !r ? "no result" : r.ok ? "→ ok" : "→ error" + (r.error ? ": " + json(r.error, 200) : "");
      return "call " + text(e.tool) + " " + json(JSON.stringify(e.args), 300) + " " + outcome;
    }
    if (k === "tool_result") return "result of " + text(e.call_id) + ": " + (e.ok ? "ok" : "error" + (e.error ? " " + json(e.error, 200) : ""));
    if (k === "approval_request") return "approval requested" + (e.tool ? " for " + e.tool : " (blanket)");
    if (k === "approval_decision") return "approval " + (e.granted ? "granted" : "denied") + (e.by ? " by " + e.by : "") + (e.approval_id ? " (" + e.approval_id + ")" : "");
    if (k === "message") return "message " + text(e.id) + " (" + text(e.phase) + "): " + json(e.text, 300);
    if (k === "message_edit") return "edit of " + text(e.id) + (e.phase ? " (" + e.phase + ")" : "") + ": " + json(e.text, 300);
    if (k === "message_delete") return "delete of " + text(e.id);
    if (k === "artifact") return "artifact " + text(e.path) + " (" + text(e.bytes) + " bytes)";
    if (k === "final_answer") return "final answer: " + json(e.text, 400);
    if (k === "run_end") return "run end: " + text(e.status) + (e.error ? " (" + e.error + ")" : "");
    return text(k) + " " + json(JSON.stringify(e), 300);
  }

  function sideBySide(diff) {
    var t = el("table", { class: "sbs" }, [el("thead", null, [el("tr", null, [el("th", { scope: "col", text: "approved" }), el("th", { scope: "col", text: "current" })])])]);
    var body = el("tbody");
    var left = [], right = [];
    function flush() {
      for (var i = 0; i < Math.max(left.length, right.length); i++) {
        body.appendChild(el("tr", null, [
          el("td", { class: left[i] !== undefined ? "del" : "", text: left[i] === undefined ? "" : left[i] }),
          el("td", { class: right[i] !== undefined ? "add" : "", text: right[i] === undefined ? "" : right[i] }),
        ]));
      }
      left = []; right = [];
    }
    text(diff).split("\n").forEach(function (line) {
      if (line.indexOf("---") === 0 || line.indexOf("+++") === 0 || line === "") return;
      var c = line.charAt(0), rest = line.slice(1);
      if (c === "-") left.push(rest);
      else if (c === "+") right.push(rest);
      else {
        flush();
        var cls = c === "@" ? "hunk" : "";
        body.appendChild(el("tr", { class: cls }, [el("td", { text: c === "@" ? line : rest }), el("td", { text: c === "@" ? "" : rest })]));
      }
    });
    flush();
    t.appendChild(body);
    return t;
  }

  // The differing keys an oracle reported (`differences`, directly or per failing turn or
  // inference), each with where it was found.
  function differencesOf(found) {
    var out = [];
    function visit(v, where) {
      if (!v || typeof v !== "object") return;
      (Array.isArray(v.differences) ? v.differences : []).forEach(function (d) {
        if (d && typeof d === "object") out.push({ where: where, key: d.key, expected: d.expected, found: d.found });
      });
      (Array.isArray(v.failing) ? v.failing : []).forEach(function (f) {
        if (!f || typeof f !== "object") return;
        var label = f.turn !== undefined ? "turn " + f.turn : f.inference !== undefined ? "inference " + f.inference : "";
        visit(f.found, label);
      });
    }
    visit(found, "");
    return out;
  }

  // A value in a differing-keys cell: compact JSON (an absent key as `(missing)`), cut long.
  function cellValue(v) {
    if (v === "(missing)") return v;
    var s = JSON.stringify(v);
    return clip(s === undefined ? "" : s, 400);
  }

  // A value without the keys that only serve the differing-keys table and the evidence.
  function withoutInternals(v) {
    if (Array.isArray(v)) return v.map(withoutInternals);
    if (!v || typeof v !== "object") return v;
    var out = {};
    Object.keys(v).forEach(function (k) {
      if (k !== "differences" && k !== "differs" && k !== "seq") out[k] = withoutInternals(v[k]);
    });
    return out;
  }

  function traceView(i) {
    var r = rows[i];
    if (!r) return el("p", { text: "No such trace." });
    var tl = doc.timelines[String(i)];
    var deciding = {};
    (r.oracles || []).forEach(function (o) {
      if (o.verdict !== "pass") (o.evidence || []).forEach(function (s) { deciding[s] = true; });
    });
    var close = el("button", { type: "button", id: "close", onclick: function () { writeHash({ trace: null }); } }, ["← Back to the table"]);
    var ident = el("dl", { class: "ident" }, [
      ["verdict", r.verdict + (r.blocking ? " (blocking)" : "") + (r.known_gap ? " (known gap)" : "")],
      ["risk", r.risk || "none"], ["trace", r.path || ""], ["content hash", r.content_hash || ""],
      ["scenario file", r.scenario_file || ""], ["baseline", r.baseline || "none"],
    ].map(function (p) { return el("div", null, [el("dt", { text: p[0] }), el("dd", { text: p[1] })]); }));
    var oracles = el("ol", { class: "oracles" });
    (r.oracles || []).forEach(function (o) {
      var evidence = el("span", { class: "evidence" }, (o.evidence || []).map(function (s) {
        return el("a", { href: "#", class: "ev-link", "data-seq": s, onclick: function (e) {
          e.preventDefault();
          var target = document.getElementById("cv-" + s) || document.getElementById("ev-" + s);
          if (target) { target.focus(); target.scrollIntoView({ block: "center" }); }
        } }, ["seq " + s]);
      }));
      var score = o.score > 0 && o.score < 1 ? " (score " + Math.round(o.score * 1000) / 1000 + ")" : "";
      var item = el("li", { class: "oracle o-" + o.verdict, "data-type": o.type }, [
        el("span", { class: "badge v-" + o.verdict, text: o.verdict }), " ",
        el("strong", { text: o.type + (o.index !== undefined ? " #" + o.index : "") + score }), ": ",
        el("span", { class: "message", text: o.message }), " ", evidence,
      ]);
      if (o.verdict !== "pass" && (o.expected !== undefined || o.found !== undefined)) {
        var diffs = differencesOf(o.found);
        var whole = el("div", { class: "ef" }, [
          el("div", null, [el("h5", { text: "expected" }), el("pre", { text: json(withoutInternals(o.expected)) })]),
          el("div", null, [el("h5", { text: "found" }), el("pre", { text: json(withoutInternals(o.found)) })]),
        ]);
        if (diffs.length) {
          // Only the keys that differ, both values side by side; the whole objects a click away.
          item.appendChild(el("table", { class: "keydiff" }, [
            el("thead", null, [el("tr", null, ["", "key", "expected", "found"].map(function (h) { return el("th", { scope: "col", text: h }); }))]),
            el("tbody", null, diffs.map(function (d) {
              return el("tr", null, [
                el("td", { class: "muted", text: d.where }),
                el("td", { class: "key", text: text(d.key) }),
                el("td", { class: "del" }, [el("code", { text: cellValue(d.expected) })]),
                el("td", { class: "add" }, [el("code", { text: cellValue(d.found) })]),
              ]);
            })),
          ]));
          item.appendChild(el("details", { class: "whole" }, [el("summary", { text: "expected and found, whole" }), whole]));
        } else {
          item.appendChild(whole);
        }
      }
      oracles.appendChild(item);
    });
    var events = el("ol", { class: "timeline", id: "timeline" });
    var note = null, conversation = null;
    if (tl) {
      var results = tracereplayConversation.pairs({ text: text }, tl.events);
      tl.events.forEach(function (e) {
        var hot = !!deciding[e.seq];
        events.appendChild(el("li", { id: "ev-" + e.seq, tabindex: "-1", class: "event k-" + text(e.kind) + (hot ? " deciding" : ""), "data-seq": e.seq }, [
          el("span", { class: "seq", text: "seq " + e.seq }),
          hot ? el("span", { class: "marker", text: "deciding" }) : null,
          el("span", { class: "what", text: summary(e, results) }),
          el("details", null, [el("summary", { text: "event" }), el("pre", { text: json(e) })]),
        ]));
      });
      if (tl.note) note = el("p", { class: "note", text: tl.note });
      conversation = tracereplayConversation({ el: el, text: text, json: json }, tl.events, deciding, tl.prompts);
    } else {
      note = el("p", { class: "note", text: "Events are embedded for failing and drifted traces; this one passed without drift." });
    }
    var drift = (r.drift || []).map(function (d) {
      return el("section", { class: "drift" }, [
        el("h4", { text: d.category + (d.fails ? "" : " (warning)") + ": " + d.detail }),
        d.diff ? sideBySide(d.diff) : null,
      ]);
    });
    return el("section", { id: "trace", "aria-label": "Trace " + text(r.scenario) + " / " + text(r.case) }, [
      close,
      el("h2", { text: text(r.scenario) + " / " + text(r.case) }),
      ident,
      r.error ? el("p", { class: "error", text: r.error.category + ": " + r.error.message }) : null,
      el("h3", { text: "Oracles" }),
      oracles,
      drift.length ? el("h3", { text: "Drift from the approved baseline" }) : null,
    ].concat(drift).concat([
      conversation ? el("h3", { text: "Conversation" }) : null, note, conversation,
      el("h3", { text: "Events" }), conversation ? null : note, events]));
  }

  // ---- drawing ------------------------------------------------------------------------------
  function identity() {
    return el("header", null, [
      el("h1", { text: "tracereplay report" }),
      el("p", { class: "muted", id: "identity", text: [report.tool.name + " " + report.tool.version, doc.generated ? "written " + doc.generated : null,
        doc.flags.length ? doc.flags.join(" ") : "default judging options"].filter(Boolean).join(" · ") }),
    ]);
  }

  function draw() {
    var started = performance.now();
    var app = document.getElementById("app");
    while (app.firstChild) app.removeChild(app.firstChild);
    app.appendChild(identity());
    // `#SCENARIO/CASE` of a case of several trials names the case, not one trace: its line,
    // opened, with its trials one click away.
    var linkedCase = caseOfLink(state.trace);
    if (state.trace !== null && state.trace !== undefined && !linkedCase) {
      document.body.classList.add("viewing");
      app.appendChild(traceView(rowOf(state.trace)));
      var c = document.getElementById("close");
      if (c) c.focus();
    } else {
      document.body.classList.remove("viewing");
      app.appendChild(overview());
      var cases = casesView(linkedCase);
      if (cases) app.appendChild(cases);
      app.appendChild(table());
      var target = document.getElementById("linked-case");
      if (target && target.scrollIntoView) target.scrollIntoView();
      refocus();
    }
    document.body.setAttribute("data-ready", "1");
    document.body.setAttribute("data-drawn-ms", String(Math.round(performance.now() - started)));
  }

  // Keys: Escape closes a trace (the row it came from keeps the focus); in the table, the
  // arrow keys (and j/k) move between rows and Enter opens one.
  var lastOpen = null;
  document.addEventListener("keydown", function (e) {
    var open = state.trace !== null && state.trace !== undefined;
    if (e.key === "Escape" && open) {
      lastOpen = state.trace;
      writeHash({ trace: null });
      return;
    }
    if (open || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.target && /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName)) return;
    var down = e.key === "ArrowDown" || e.key === "j", up = e.key === "ArrowUp" || e.key === "k";
    if (!down && !up) return;
    var opens = Array.prototype.slice.call(document.querySelectorAll("#table button.open"));
    if (!opens.length) return;
    var at = opens.indexOf(document.activeElement);
    var next = at < 0 ? (down ? 0 : opens.length - 1) : Math.max(0, Math.min(opens.length - 1, at + (down ? 1 : -1)));
    opens[next].focus();
    e.preventDefault();
  });
  // After a trace closes, the focus goes back to its row.
  function refocus() {
    if (lastOpen === null) return;
    var b = Array.prototype.slice.call(document.querySelectorAll("#table button.open"))
      .filter(function (x) { return x.getAttribute("data-link") === lastOpen; })[0];
    lastOpen = null;
    if (b) b.focus();
  }
  window.addEventListener("hashchange", function () { readHash(); draw(); });
  readHash();
  draw();
})();
