// Small helpers shared by the report's script (app.js, conversation.js) and the comparison's
// (compare.js): building DOM nodes — every value as text, never as markup — and ordering ids
// as people read them.
var tracereplayDom = (function () {
  "use strict";

  function el(tag, props, children) {
    var node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "text") node.textContent = String(v);
        else if (k === "class") node.className = v;
        else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
        else node.setAttribute(k, v === true ? "" : String(v));
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function text(v) {
    return v === null || v === undefined ? "" : String(v);
  }

  // Ids compared as people read them: runs of digits by value, so `task-2` sorts before
  // `task-10`; otherwise by code unit, and a tie by the plain comparison.
  function natural(a, b) {
    var pa = a.match(/\d+|\D+/g) || [], pb = b.match(/\d+|\D+/g) || [];
    for (var i = 0; i < Math.min(pa.length, pb.length); i++) {
      var x = pa[i], y = pb[i];
      var dx = /^\d/.test(x), dy = /^\d/.test(y);
      if (dx && dy) {
        var nx = x.replace(/^0+(?=\d)/, ""), ny = y.replace(/^0+(?=\d)/, "");
        if (nx.length !== ny.length) return nx.length < ny.length ? -1 : 1;
        if (nx !== ny) return nx < ny ? -1 : 1;
      } else if (x !== y) {
        return x < y ? -1 : 1;
      }
    }
    if (pa.length !== pb.length) return pa.length < pb.length ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
  }

  return { el: el, text: text, natural: natural };
})();
