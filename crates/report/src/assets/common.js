// podplace HTML reports, shared by the simulate and rebalance pages:
// DOM helpers, number formats and the placement map (one column per group,
// one cell per node). No network, no library.
var PP = (function () {
  "use strict";
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  var SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function cpu(m) { return m >= 1000 ? (m / 1000).toFixed(m % 1000 ? 2 : 0) + " CPU" : m + "m CPU"; }
  function mem(mi) { return mi >= 1024 ? (mi / 1024).toFixed(1) + " GiB" : mi + " MiB"; }
  function pct(a, b) { return b > 0 ? Math.round(100 * a / b) : 0; }
  function shade(f) { // 0..1 -> white..blue
    f = Math.max(0, Math.min(1, f));
    var r = Math.round(255 - 246 * f), g = Math.round(255 - 150 * f), b = Math.round(255 - 37 * f);
    return "rgb(" + r + "," + g + "," + b + ")";
  }
  var EMPTY = "#eef1f4";
  var PALETTE = ["#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e", "#bc4c00", "#1b7c83", "#e85aad", "#6e7781", "#953800", "#116329", "#4c2889"];
  function table(rows, head) {
    var t = el("table");
    if (head) { var tr = el("tr"); head.forEach(function (h) { tr.appendChild(el("th", null, h)); }); t.appendChild(tr); }
    rows.forEach(function (r) { var tr = el("tr"); r.forEach(function (c) { tr.appendChild(el("td", null, c)); }); t.appendChild(tr); });
    return t;
  }
  function data() { return JSON.parse(document.getElementById("data").textContent); }
  function byName(S) { return function (a, b) { return S[a] < S[b] ? -1 : S[a] > S[b] ? 1 : 0; }; }

  // The map of the node table N (columns name, group): returns the cells
  // (indexed by node) and a paint(n, color, text) function. `onPick(n)` is
  // called when a cell is clicked.
  function map(container, S, N, groupBy, onPick) {
    var nodeCount = N.name.length, groups = {};
    for (var i = 0; i < nodeCount; i++) (groups[N.group[i]] = groups[N.group[i]] || []).push(i);
    var groupKeys = Object.keys(groups).map(Number).sort(byName(S));
    var named = nodeCount <= 60;
    container.classList.add(named ? "named" : "tiny");
    var cells = new Array(nodeCount), frag = document.createDocumentFragment();
    groupKeys.forEach(function (g) {
      var ids = groups[g].sort(function (a, b) { return S[N.name[a]] < S[N.name[b]] ? -1 : 1; });
      var col = el("div", { "class": "group" });
      col.appendChild(el("h3", null, (S[g] || "(no " + groupBy + ")") + " · " + ids.length));
      var box = el("div", { "class": "cells" });
      ids.forEach(function (n) {
        var c = el("div", { "class": "node", "data-node": S[N.name[n]], title: S[N.name[n]] });
        c._n = n;
        if (named) { c.appendChild(el("span", { "class": "label" }, S[N.name[n]])); c.appendChild(el("span", { "class": "label fill" })); }
        cells[n] = c; box.appendChild(c);
      });
      col.appendChild(box); frag.appendChild(col);
    });
    container.appendChild(frag);
    container.addEventListener("click", function (e) {
      var t = e.target.closest(".node");
      if (t && onPick) onPick(t._n);
    });
    return {
      cells: cells,
      groups: groupKeys,
      paint: function (n, color, text) {
        var c = cells[n];
        c.style.backgroundColor = color;
        if (named) c.lastChild.textContent = text; else c.title = S[N.name[n]] + (text ? " · " + text : "");
      },
      select: function (n) {
        cells.forEach(function (c, k) { c.classList.toggle("sel", k === n); });
      }
    };
  }

  // A node's labels and taints, as the node panel shows them.
  function nodeFacts(panel, S, N, n) {
    var labels = [];
    for (var k = 0; k < N.labels[n].length; k += 2) labels.push([S[N.labels[n][k]], S[N.labels[n][k + 1]]]);
    panel.appendChild(el("h2", null, "Labels"));
    panel.appendChild(table(labels));
    panel.appendChild(el("h2", null, "Taints"));
    panel.appendChild(N.taints[n].length ? table(N.taints[n].map(function (t) { return [S[t]]; })) : el("p", { "class": "muted" }, "none"));
  }

  // Sets data-ready once the page has drawn (tests and screenshots wait).
  function ready() {
    requestAnimationFrame(function () {
      document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
      document.body.setAttribute("data-ready", "1");
    });
  }

  return { el: el, svg: svg, cpu: cpu, mem: mem, pct: pct, shade: shade, EMPTY: EMPTY, PALETTE: PALETTE,
    table: table, data: data, byName: byName, map: map, nodeFacts: nodeFacts, ready: ready };
})();
