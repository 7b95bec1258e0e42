// podplace rebalance report: the map before the plan and after it (the
// before map with each evicted pod moved to its replacement's node), each
// eviction an arrow from the node it leaves to the node its replacement
// lands on, colored by wave; each strategy's objective before -> after.
(function () {
  "use strict";
  var el = PP.el, D = PP.data(), S = D.strings, M = D.map, N = M.nodes, P = M.pods, E = D.evictions;
  var nodeCount = N.name.length, podCount = P.workload.length, evictionCount = E.wave.length;
  function podName(p) { return S[P.name_prefix[p]] + P.name_rest[p]; }
  function waveColor(w) { return PP.PALETTE[(w - 1) % PP.PALETTE.length]; }

  // After the plan: each evicted pod's replacement on the eviction's node.
  var after = Int32Array.from(P.node), replaced = {};
  for (var e = 0; e < evictionCount; e++) if (E.pod[e] >= 0) { after[E.pod[e]] = E.to[e]; replaced[E.pod[e]] = e; }

  var workloadPods = {};
  for (var p = 0; p < podCount; p++) (workloadPods[P.workload[p]] = workloadPods[P.workload[p]] || []).push(p);
  var evictedOf = {};
  for (e = 0; e < evictionCount; e++) evictedOf[E.workload[e]] = (evictedOf[E.workload[e]] || 0) + 1;
  var workloads = Object.keys(workloadPods).map(Number).sort(function (a, b) {
    return (evictedOf[b] || 0) - (evictedOf[a] || 0) || workloadPods[b].length - workloadPods[a].length || (S[a] < S[b] ? -1 : 1);
  });
  var state = { w: workloads.length ? workloads[0] : -1, fill: "workload", wave: 0, selected: -1 };

  // Controls.
  var controls = document.getElementById("controls");
  var fill = el("select", { id: "mode", "aria-label": "fill" });
  [["workload", "selected workload's replicas"], ["cpu", "requested CPU"], ["memory", "requested memory"]]
    .forEach(function (o) { fill.appendChild(el("option", { value: o[0] }, o[1])); });
  var picker = el("select", { id: "workload", "aria-label": "workload" });
  workloads.forEach(function (w) { picker.appendChild(el("option", { value: w }, S[w] + (evictedOf[w] ? " (" + evictedOf[w] + " evicted)" : ""))); });
  var waveSel = el("select", { id: "wave", "aria-label": "wave" });
  waveSel.appendChild(el("option", { value: 0 }, "all waves"));
  for (var w = 1; w <= D.waves; w++) waveSel.appendChild(el("option", { value: w }, "wave " + w));
  controls.appendChild(el("label", null, "Fill: ")).appendChild(fill);
  controls.appendChild(el("label", null, "Workload: ")).appendChild(picker);
  controls.appendChild(el("label", null, "Arrows: ")).appendChild(waveSel);

  function pick(n) { state.selected = n; showNode(); }
  var before = PP.map(document.getElementById("before"), S, N, M.group_by, pick);
  var afterMap = PP.map(document.getElementById("after"), S, N, M.group_by, pick);

  function paint(view, where) {
    var counts = new Int32Array(nodeCount), reqCpu = new Float64Array(nodeCount), reqMem = new Float64Array(nodeCount), max = 1;
    for (var p = 0; p < podCount; p++) {
      var n = where[p];
      if (n < 0) continue;
      reqCpu[n] += P.cpu_m[p]; reqMem[n] += P.mem_mi[p];
      if (P.workload[p] === state.w) counts[n]++;
    }
    counts.forEach(function (c) { if (c > max) max = c; });
    for (n = 0; n < nodeCount; n++) {
      var color, text;
      if (state.fill === "workload") { color = counts[n] ? PP.shade(0.25 + 0.75 * counts[n] / max) : PP.EMPTY; text = counts[n] ? counts[n] + (counts[n] === 1 ? " replica" : " replicas") : ""; }
      else if (state.fill === "cpu") { color = PP.shade(reqCpu[n] / Math.max(1, N.cpu_m[n])); text = PP.pct(reqCpu[n], N.cpu_m[n]) + "% CPU"; }
      else { color = PP.shade(reqMem[n] / Math.max(1, N.mem_mi[n])); text = PP.pct(reqMem[n], N.mem_mi[n]) + "% memory"; }
      view.paint(n, color, text);
      view.cells[n].classList.toggle("cordoned", !!N.cordoned[n]);
    }
  }

  // Arrows over the after map: from the center of the node left to the
  // center of the landing node; evictions between the same two nodes bend
  // apart so each stays visible.
  var arrows = document.getElementById("arrows"), wrap = document.getElementById("after-wrap");
  function drawArrows() {
    arrows.textContent = "";
    var box = wrap.getBoundingClientRect();
    arrows.setAttribute("width", wrap.offsetWidth); arrows.setAttribute("height", wrap.offsetHeight);
    function center(n) {
      var r = afterMap.cells[n].getBoundingClientRect();
      return [r.left - box.left + wrap.scrollLeft + r.width / 2, r.top - box.top + wrap.scrollTop + r.height / 2];
    }
    var seen = {}, drawn = 0;
    for (var e = 0; e < evictionCount; e++) {
      if (state.wave && E.wave[e] !== state.wave) continue;
      if (E.from[e] < 0 || E.to[e] < 0) continue;
      var a = center(E.from[e]), b = center(E.to[e]), key = E.from[e] + ">" + E.to[e];
      var nth = seen[key] = (seen[key] || 0) + 1;
      var dx = b[0] - a[0], dy = b[1] - a[1], len = Math.max(1, Math.sqrt(dx * dx + dy * dy));
      var bend = 18 + 12 * (nth - 1), mx = (a[0] + b[0]) / 2 - dy / len * bend, my = (a[1] + b[1]) / 2 + dx / len * bend;
      var color = waveColor(E.wave[e]);
      var g = PP.svg("g", { "class": "arrow", "data-wave": E.wave[e], "data-pod": S[E.name[e]] });
      g.appendChild(PP.svg("path", { d: "M" + a[0] + " " + a[1] + " Q" + mx + " " + my + " " + b[0] + " " + b[1], stroke: color, fill: "none", "stroke-width": 2.5 }));
      // The head: a triangle along the curve's last tangent.
      var tx = b[0] - mx, ty = b[1] - my, tl = Math.max(1, Math.sqrt(tx * tx + ty * ty)), ux = tx / tl, uy = ty / tl, s = 9;
      g.appendChild(PP.svg("path", { d: "M" + b[0] + " " + b[1] + " L" + (b[0] - ux * s - uy * s / 2) + " " + (b[1] - uy * s + ux * s / 2) + " L" + (b[0] - ux * s + uy * s / 2) + " " + (b[1] - uy * s - ux * s / 2) + "Z", fill: color }));
      g.appendChild(PP.svg("circle", { cx: a[0], cy: a[1], r: 3.5, fill: color }));
      var t = PP.svg("title");
      t.textContent = "wave " + E.wave[e] + ": " + S[E.name[e]] + " " + S[N.name[E.from[e]]] + " → " + S[N.name[E.to[e]]] + " [" + S[E.strategy[e]] + "]";
      g.appendChild(t);
      arrows.appendChild(g); drawn++;
    }
    document.getElementById("arrow-count").textContent = "· " + drawn + " eviction arrow" + (drawn === 1 ? "" : "s") + (state.wave ? " (wave " + state.wave + ")" : "");
  }

  function drawObjectives() {
    var sec = document.getElementById("objectives");
    sec.appendChild(el("h2", null, "Objectives (before → after)"));
    var t = PP.table([], ["strategy", "measures", "before", "after"]);
    t.id = "objective-table";
    (D.strategies || []).forEach(function (s) {
      var tr = el("tr");
      tr.appendChild(el("td", null, s.strategy)); tr.appendChild(el("td", null, s.measures));
      tr.appendChild(el("td", { "class": "num" }, s.before));
      var td = el("td", { "class": "num" }, s.after);
      var bar = el("div", { "class": "objbar" }), fillBar = el("div", { "class": "objfill" });
      fillBar.style.width = (s.before > 0 ? Math.round(100 * s.after / s.before) : 0) + "%";
      bar.appendChild(fillBar); td.appendChild(bar);
      tr.appendChild(td); t.appendChild(tr);
    });
    sec.appendChild(t);
    sec.appendChild(el("p", { "class": "muted" }, "Policy: " + D.policy));
  }

  function drawEvictions() {
    var sec = document.getElementById("evictions");
    sec.appendChild(el("h2", null, "Evictions (" + evictionCount + " in " + D.waves + " wave" + (D.waves === 1 ? "" : "s") + ")"));
    var ol = el("ol", { id: "eviction-list" });
    for (var e = 0; e < evictionCount; e++) {
      var li = el("li", { "data-wave": E.wave[e] });
      li.appendChild(el("span", { "class": "swatch", style: "background:" + waveColor(E.wave[e]) }));
      li.appendChild(el("b", null, "wave " + E.wave[e] + " · " + S[E.name[e]]));
      li.appendChild(el("div", null, (E.from[e] >= 0 ? S[N.name[E.from[e]]] : "?") + " → " + (E.to[e] >= 0 ? S[N.name[E.to[e]]] : "?") + "  [" + S[E.strategy[e]] + "]"));
      li.appendChild(el("div", { "class": "muted" }, S[E.rule[e]]));
      li.appendChild(el("div", { "class": "muted" }, "replacement " + E.replacement[e] + " scheduled " + E.scheduled[e] + "; score " +
        (E.score_from[e] === null ? "—" : E.score_from[e]) + " → " + E.score_to[e] +
        (E.tied[e].length ? " (tied with " + E.tied[e].filter(function (n) { return n >= 0; }).map(function (n) { return S[N.name[n]]; }).join(", ") + ")" : "") +
        "; objective " + E.objective_before[e] + " → " + E.objective_after[e]));
      ol.appendChild(li);
    }
    if (!evictionCount) ol.appendChild(el("li", { "class": "muted" }, "nothing to evict"));
    sec.appendChild(ol);
  }

  function drawKept() {
    var sec = document.getElementById("kept");
    if (D.kept_total) {
      sec.appendChild(el("h2", null, "Left in place (" + D.kept_total + ")"));
      var ul = el("ul");
      D.kept.forEach(function (k) { var li = el("li"); li.appendChild(el("b", null, k.pod + " ")); li.appendChild(document.createTextNode(k.reason)); ul.appendChild(li); });
      sec.appendChild(ul);
    }
    if (D.pending_total) {
      sec.appendChild(el("h2", null, "Stay Pending (" + D.pending_total + ")"));
      var pl = el("ul");
      D.pending.forEach(function (p) { pl.appendChild(el("li", null, p)); });
      sec.appendChild(pl);
    }
    (D.warnings || []).forEach(function (w) { sec.appendChild(el("p", { "class": "muted" }, "warning: " + w)); });
    sec.appendChild(el("p", { "class": "muted" }, D.model));
  }

  function showNode() {
    var n = state.selected, panel = document.getElementById("panel");
    before.select(n); afterMap.select(n);
    panel.textContent = "";
    panel.appendChild(el("h2", { id: "node-name" }, S[N.name[n]]));
    panel.appendChild(el("p", null, M.group_by + ": " + (S[N.group[n]] || "(none)") + (N.cordoned[n] ? " · cordoned" : "")));
    var rows = [];
    for (var p = 0; p < podCount; p++) {
      var e = replaced[p];
      if (P.node[p] === n && e !== undefined) rows.push([podName(p), S[P.workload[p]], "leaves → " + S[N.name[E.to[e]]] + " (wave " + E.wave[e] + ")"]);
      else if (after[p] === n && e !== undefined) rows.push([E.replacement[e], S[P.workload[p]], "arrives ← " + S[N.name[E.from[e]]] + " (wave " + E.wave[e] + ")"]);
      else if (P.node[p] === n) rows.push([podName(p), S[P.workload[p]], "stays"]);
    }
    panel.appendChild(el("h2", null, "Pods"));
    panel.appendChild(PP.table(rows.slice(0, 500), ["pod", "workload", "plan"]));
    PP.nodeFacts(panel, S, N, n);
  }

  function draw() { paint(before, P.node); paint(afterMap, after); drawArrows(); }
  fill.addEventListener("change", function () { state.fill = fill.value; draw(); });
  picker.addEventListener("change", function () { state.w = Number(picker.value); state.fill = fill.value = "workload"; draw(); });
  waveSel.addEventListener("change", function () { state.wave = Number(waveSel.value); drawArrows(); });
  window.addEventListener("resize", drawArrows);

  document.getElementById("summary").textContent = nodeCount + " nodes, " + podCount + " pods · " + evictionCount + " eviction" +
    (evictionCount === 1 ? "" : "s") + " in " + D.waves + " wave" + (D.waves === 1 ? "" : "s") + " · " + D.policy;
  if (state.w >= 0) picker.value = String(state.w);
  draw(); drawObjectives(); drawEvictions(); drawKept();
  PP.ready();
})();
