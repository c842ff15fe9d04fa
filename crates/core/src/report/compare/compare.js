// The tracereplay comparison page: cases × two runs. Plain JavaScript, no dependencies; the
// data is the JSON in <script id="data">, and every value enters the DOM as text. The filter
// lives in the URL's hash (`#show=broke&q=task`), so a view can be linked.
(function () {
  "use strict";
  var el = tracereplayDom.el, natural = tracereplayDom.natural;
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message));
    document.body.setAttribute("data-errors", errors.join(" | "));
  });
  var doc = JSON.parse(document.getElementById("data").textContent);
  var cmp = doc.comparison;
  var CHANGES = ["broke", "fixed", "changed", "added", "removed", "same"];
  var state = {};

  function readHash() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ""));
    state = { show: p.get("show") || "changes", q: p.get("q") || "" };
  }
  function writeHash(changes) {
    Object.keys(changes).forEach(function (k) { state[k] = changes[k]; });
    var p = new URLSearchParams();
    if (state.show !== "changes") p.set("show", state.show);
    if (state.q) p.set("q", state.q);
    var h = p.toString();
    history.replaceState(null, "", h ? "#" + h : location.pathname + location.search);
    draw();
  }

  function shown(c) {
    if (state.show === "changes" && c.change === "same") return false;
    if (state.show !== "changes" && state.show !== "all" && c.change !== state.show) return false;
    var q = state.q.toLowerCase();
    return !q || (c.scenario + "/" + c.case).toLowerCase().indexOf(q) >= 0;
  }

  function sideCell(s) {
    if (!s) return el("td", { class: "side absent", text: "—" });
    var rate = s.passed + "/" + s.trials + " pass" + (s.flaky ? " · flaky" : "");
    return el("td", { class: "side" }, [
      el("span", { class: "badge v-" + s.verdict, text: s.verdict }), " ",
      el("span", { class: "rate", text: rate }),
      s.drift.length ? el("div", { class: "muted drift", text: "drift: " + s.drift.join(", ") }) : null,
    ]);
  }

  function draw() {
    var app = document.getElementById("app");
    while (app.firstChild) app.removeChild(app.firstChild);
    var counts = el("dl", { class: "counts", id: "counts" }, CHANGES.map(function (c) {
      return el("div", { "data-count": c }, [el("dt", { text: c }), el("dd", { text: cmp.counts[c] || 0 })]);
    }));
    var show = el("select", { id: "f-show", onchange: function (e) { writeHash({ show: e.target.value }); } },
      [["changes", "what changed"], ["all", "every case"]].concat(CHANGES.map(function (c) { return [c, c]; }))
        .map(function (p) { return el("option", { value: p[0], text: p[1], selected: p[0] === state.show }); }));
    var q = el("input", { id: "f-q", type: "search", value: state.q, placeholder: "scenario or case",
      onchange: function (e) { writeHash({ q: e.target.value }); } });
    var chosen = cmp.cases.filter(shown).sort(function (a, b) {
      return natural(a.scenario, b.scenario) || natural(a.case, b.case);
    });
    var body = el("tbody", null, chosen.map(function (c) {
      var why = c.new && c.new.why ? c.new.why : c.old && c.old.why && c.change === "fixed" ? "was: " + c.old.why : "";
      return el("tr", { class: "change-" + c.change, "data-case": c.scenario + "/" + c.case, "data-change": c.change }, [
        el("td", { text: c.scenario }),
        el("td", { class: "id", text: c.case }),
        sideCell(c.old),
        sideCell(c.new),
        el("td", null, [el("span", { class: "badge c-" + c.change, text: c.change })]),
        el("td", { class: "why", text: why }),
      ]);
    }));
    var head = el("tr", null, ["Scenario", "Case", "Old: " + cmp.old, "New: " + cmp.new, "Change", "Why (new run)"]
      .map(function (h) { return el("th", { scope: "col", text: h }); }));
    app.appendChild(el("header", null, [
      el("h1", { text: "tracereplay comparison" }),
      el("p", { class: "muted", id: "identity", text: cmp.old + " → " + cmp.new + (doc.generated ? " · written " + doc.generated : "") }),
    ]));
    app.appendChild(el("section", { id: "overview" }, [counts]));
    app.appendChild(el("section", { id: "table" }, [
      el("form", { class: "controls", role: "search", onsubmit: function (e) { e.preventDefault(); } }, [
        el("label", null, ["Show ", show]), el("label", null, ["Find ", q]),
      ]),
      el("table", null, [el("thead", null, [head]), body]),
      el("p", { id: "shown", text: chosen.length ? chosen.length + " of " + cmp.cases.length + " cases" : "no case matches" }),
    ]));
    document.body.setAttribute("data-ready", "1");
  }

  window.addEventListener("hashchange", function () { readHash(); draw(); });
  readHash();
  draw();
})();
