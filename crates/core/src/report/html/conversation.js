// The conversation view of a trace, drawn by app.js: the run read as a conversation — user
// turns, what the model said and planned, each tool call with its arguments and its result
// inline, approvals, messages and edits, the final answer — in event order. The events that
// decided a verdict are marked; the raw event is a click away. Every value enters the DOM as
// text. `h` holds app.js's helpers (el, text, json).
var tracereplayConversation = (function () {
  "use strict";

  // The longest value shown whole; a longer one shows its beginning, the rest a click away.
  // A deciding entry shows much more, so what decided a verdict is in view without a click.
  var SHOWN = 300, SHOWN_DECIDING = 4000;

  function folded(h, value, cls, limit) {
    limit = limit || SHOWN;
    var s = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    if (s === undefined) s = "";
    var chars = Array.from(s);
    if (chars.length <= limit) return h.el("pre", { class: cls, text: s });
    // The report embeds at most the first 400 characters of a string (4,000 in a deciding
    // event) and says how long it was: `… (N characters)`.
    var total = chars.length, kept = null, cut = /… \((\d+) characters\)$/.exec(s);
    if (cut && Number(cut[1]) > chars.length) {
      total = Number(cut[1]);
      kept = chars.length - Array.from(cut[0]).length;
    }
    return h.el("div", { class: cls + " folded" }, [
      h.el("pre", { text: chars.slice(0, limit).join("") + "…" }),
      h.el("details", null, [
        h.el("summary", { text: "the rest (" + total + " characters in all" +
          (kept === null ? "" : "; the page holds the first " + kept + ", `tracereplay cat` prints the trace whole") + ")" }),
        h.el("pre", { text: s }),
      ]),
    ]);
  }

  function raw(h, events) {
    return h.el("details", { class: "raw" }, [
      h.el("summary", { text: "raw event" + (events.length > 1 ? "s" : "") }),
      h.el("pre", { text: events.map(function (e) { return h.json(e); }).join("\n") }),
    ]);
  }

  // A prompt: its sidecar text when the report carries it (the developer opted in), else its
  // hash and length.
  function prompt(h, p, prompts, limit) {
    if (!p) return h.el("p", { class: "muted", text: "(no prompt recorded)" });
    var t = p.h && prompts ? prompts[p.h] : undefined;
    if (t !== undefined) return folded(h, t, "said raw-prompt", limit);
    return h.el("p", { class: "hashed", text: "prompt " + h.text(p.h) + (p.len ? " · " + p.len + " characters" : "") + " (recorded as a hash)" });
  }

  // A result's error and output (once when they are the same text).
  function toolResult(h, r, limit) {
    if (!r) return h.el("p", { class: "result missing", text: "no result recorded" });
    var out = [h.el("span", { class: "badge " + (r.ok ? "v-pass" : "v-fail"), text: r.ok ? "ok" : "error" })];
    if (r.error) out.push(folded(h, r.error, "result error", limit));
    if (r.output !== undefined && r.output !== null && r.output !== r.error) out.push(folded(h, r.output, "result", limit));
    else if (r.output_h) out.push(h.el("p", { class: "muted", text: "output recorded as " + r.output_h }));
    return h.el("div", { class: "result" }, out);
  }

  // One entry of the conversation: who, what, and the events it stands for.
  function entry(h, who, cls, body, events, deciding) {
    var hot = events.some(function (e) { return deciding[e.seq]; });
    var seqs = events.map(function (e) { return "seq " + e.seq; }).join(", ");
    return h.el("li", { class: "turn t-" + cls + (hot ? " deciding" : ""), id: "cv-" + events[0].seq, "data-seq": events[0].seq }, [
      h.el("div", { class: "who" }, [
        h.el("strong", { text: who }),
        h.el("span", { class: "seq", text: seqs }),
        hot ? h.el("span", { class: "marker", text: "deciding" }) : null,
      ]),
      h.el("div", { class: "said" }, body),
      raw(h, events),
    ]);
  }

  // The result of each call, by the call's seq: each `tool_result` belongs to the latest
  // earlier call with its id that has none yet — the judging's rule. Real recordings reuse
  // call ids (tau-bench's gpt-4o runs do), so the id alone is not a key.
  function pairs(h, events) {
    var open = {}, out = {};
    events.forEach(function (e) {
      var id = h.text(e.call_id);
      if (e.kind === "tool_call") (open[id] = open[id] || []).push(e);
      else if (e.kind === "tool_result" && open[id] && open[id].length) out[open[id].pop().seq] = e;
    });
    return out;
  }

  function view(h, events, deciding, prompts) {
    var shown = {}, results = pairs(h, events);
    var list = h.el("ol", { class: "conversation", id: "conversation" });
    events.forEach(function (e) {
      var k = e.kind, body;
      if (k === "tool_result" && shown[e.seq]) return;
      var r = k === "tool_call" ? results[e.seq] : undefined;
      var lim = (deciding[e.seq] || (r && deciding[r.seq])) ? SHOWN_DECIDING : SHOWN;
      if (k === "user_message") {
        list.appendChild(entry(h, "user", "user", [prompt(h, e.prompt, prompts, lim)], [e], deciding));
      } else if (k === "inference") {
        var o = e.output || {};
        body = [];
        var meta = [e.model, e.usage ? e.usage.input_tokens + " tokens in, " + e.usage.output_tokens + " out" : null,
          e.finish ? "finish " + e.finish : null, (e.tools_offered || []).length ? "offered " + e.tools_offered.join(", ") : null];
        body.push(h.el("p", { class: "muted", text: meta.filter(Boolean).join(" · ") }));
        if (o.text) body.push(folded(h, o.text, "said", lim));
        (o.tool_calls || []).forEach(function (c) {
          body.push(h.el("p", { class: "plan" }, ["plans ", h.el("code", { text: h.text(c.tool) }), " ", h.el("code", { text: JSON.stringify(c.args) })]));
        });
        list.appendChild(entry(h, "model", "model", body, [e], deciding));
      } else if (k === "tool_call") {
        if (r) shown[r.seq] = true;
        body = [folded(h, e.args, "args", lim), toolResult(h, r, lim)];
        list.appendChild(entry(h, "tool " + h.text(e.tool) + " (" + h.text(e.call_id) + ")", "tool", body, r ? [e, r] : [e], deciding));
      } else if (k === "tool_result") {
        list.appendChild(entry(h, "result of " + h.text(e.call_id) + " (no call recorded)", "tool", [toolResult(h, e, lim)], [e], deciding));
      } else if (k === "approval_request") {
        list.appendChild(entry(h, "approval asked", "approval", [h.el("p", { text: (e.tool ? "for " + e.tool : "blanket") + (e.reason ? ": " + e.reason : "") })], [e], deciding));
      } else if (k === "approval_decision") {
        list.appendChild(entry(h, "approval " + (e.granted ? "granted" : "denied"), "approval", [h.el("p", { text: [e.by ? "by " + e.by : null, e.tool ? "for " + e.tool : null, e.approval_id ? "(" + e.approval_id + ")" : null].filter(Boolean).join(" ") })], [e], deciding));
      } else if (k === "message" || k === "message_edit") {
        var label = (k === "message" ? "message " : "edit of ") + h.text(e.id) + (e.phase ? " (" + e.phase + ")" : "");
        list.appendChild(entry(h, label, "message", [folded(h, e.text, "said", lim)], [e], deciding));
      } else if (k === "message_delete") {
        list.appendChild(entry(h, "message " + h.text(e.id) + " retracted", "message", [], [e], deciding));
      } else if (k === "artifact") {
        list.appendChild(entry(h, "wrote " + h.text(e.path), "artifact", [h.el("p", { class: "muted", text: h.text(e.bytes) + " bytes · " + h.text(e.h) }),
          e.text !== undefined ? folded(h, e.text, "said", lim) : null], [e], deciding));
      } else if (k === "final_answer") {
        list.appendChild(entry(h, "final answer", "final", [folded(h, e.text, "said", lim)], [e], deciding));
      } else if (k === "run_end") {
        list.appendChild(entry(h, "run " + h.text(e.status), "end", e.error ? [h.el("p", { class: "error", text: e.error })] : [], [e], deciding));
      } else if (k === "error") {
        list.appendChild(entry(h, "error", "end", [h.el("p", { class: "error", text: h.text(e.message) + (e.code ? " (" + e.code + ")" : "") })], [e], deciding));
      } else {
        list.appendChild(entry(h, h.text(k), "other", [h.el("p", { class: "muted", text: h.json(JSON.stringify(e), 300) })], [e], deciding));
      }
    });
    return list;
  }

  view.pairs = pairs;
  return view;
})();
