// podplace HTML report: draws the placement map from the columnar data in
// <script id="data"> (encoding: docs/html-report.md). No network, no library.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var S = D.strings, M = D.map, N = M.nodes, P = M.pods;
  var nodeCount = N.name.length, podCount = P.name_rest.length;
  function podName(p) { return S[P.name_prefix[p]] + P.name_rest[p]; }
  var WHY = D.kind === "why" ? D.why : null;
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function cpu(m) { return m >= 1000 ? (m / 1000).toFixed(m % 1000 ? 2 : 0) + " CPU" : m + "m CPU"; }
  function mem(mi) { return mi >= 1024 ? (mi / 1024).toFixed(1) + " GiB" : mi + " MiB"; }
  function pct(a, b) { return b > 0 ? Math.round(100 * a / b) : 0; }

  // Per node: its pods and requests.
  var podsOn = [], reqCpu = new Array(nodeCount).fill(0), reqMem = new Array(nodeCount).fill(0);
  for (var i = 0; i < nodeCount; i++) podsOn.push([]);
  var pendingPods = [], workloadPods = {};
  for (var p = 0; p < podCount; p++) {
    var n = P.node[p], w = P.workload[p];
    (workloadPods[w] = workloadPods[w] || []).push(p);
    if (n < 0) { pendingPods.push(p); continue; }
    podsOn[n].push(p); reqCpu[n] += P.cpu_m[p]; reqMem[n] += P.mem_mi[p];
  }
  var workloads = Object.keys(workloadPods).map(Number)
    .sort(function (a, b) { return workloadPods[b].length - workloadPods[a].length || (S[a] < S[b] ? -1 : 1); });
  var nodeByName = {};
  for (i = 0; i < nodeCount; i++) nodeByName[S[N.name[i]]] = i;

  // why: each node's reasons, the plugins' colors, chosen and tied nodes.
  var reasonsOf = {}, plugins = [], colorOf = {}, feasible = {}, chosen = -1, tied = {};
  var PALETTE = ["#cf222e", "#bf8700", "#8250df", "#0969da", "#d4a72c", "#bc4c00", "#1b7c83", "#e85aad", "#6e7781", "#953800", "#116329", "#4c2889"];
  if (WHY) {
    (WHY.nodes || []).forEach(function (r) {
      var n = nodeByName[r.node];
      if (n === undefined) return;
      reasonsOf[n] = r.reasons;
      r.reasons.forEach(function (x) { if (plugins.indexOf(x.plugin) < 0) plugins.push(x.plugin); });
    });
    plugins.sort();
    plugins.forEach(function (pl, k) { colorOf[pl] = PALETTE[k % PALETTE.length]; });
    (WHY.scores || []).forEach(function (s) { if (nodeByName[s.node] !== undefined) feasible[nodeByName[s.node]] = s; });
    var c = WHY.node || WHY.would_land_on;
    if (c && nodeByName[c] !== undefined) chosen = nodeByName[c];
    (WHY.tied || []).forEach(function (t) { if (nodeByName[t] !== undefined) tied[nodeByName[t]] = 1; });
  }

  // Controls: fill mode, workload picker, search.
  var state = { mode: WHY ? "reason" : "workload", workload: workloads.length ? workloads[0] : -1, selected: -1 };
  var controls = document.getElementById("controls");
  var mode = el("select", { id: "mode", "aria-label": "fill" });
  (WHY ? [["reason", "rejection reason"]] : []).concat([["workload", "selected workload's replicas"], ["cpu", "requested CPU"], ["memory", "requested memory"]])
    .forEach(function (o) { var opt = el("option", { value: o[0] }, o[1]); mode.appendChild(opt); });
  mode.value = state.mode;
  var picker = el("select", { id: "workload", "aria-label": "workload" });
  workloads.forEach(function (w) { picker.appendChild(el("option", { value: w }, S[w] + " (" + workloadPods[w].length + ")")); });
  var search = el("input", { id: "search", type: "search", placeholder: "search a workload or node", list: "names" });
  var names = el("datalist", { id: "names" });
  workloads.slice(0, 2000).forEach(function (w) { names.appendChild(el("option", { value: S[w] })); });
  controls.appendChild(el("label", null, "Fill: ")).appendChild(mode);
  controls.appendChild(el("label", null, "Workload: ")).appendChild(picker);
  controls.appendChild(search); controls.appendChild(names);

  // The map: one column per group, one cell per node.
  var groups = {};
  for (i = 0; i < nodeCount; i++) (groups[N.group[i]] = groups[N.group[i]] || []).push(i);
  var groupKeys = Object.keys(groups).map(Number).sort(function (a, b) { return S[a] < S[b] ? -1 : S[a] > S[b] ? 1 : 0; });
  var named = nodeCount <= 60;
  var mapEl = document.getElementById("map");
  mapEl.className = named ? "named" : "tiny";
  var cells = new Array(nodeCount), frag = document.createDocumentFragment();
  groupKeys.forEach(function (g) {
    var ids = groups[g].sort(function (a, b) { return S[N.name[a]] < S[N.name[b]] ? -1 : 1; });
    var col = el("div", { "class": "group" });
    col.appendChild(el("h3", null, (S[g] || "(no " + M.group_by + ")") + " · " + ids.length));
    var box = el("div", { "class": "cells" });
    ids.forEach(function (n) {
      var c = el("div", { "class": "node", "data-node": S[N.name[n]], title: S[N.name[n]] });
      c._n = n;
      if (N.cordoned[n]) c.classList.add("cordoned");
      if (n === chosen) c.classList.add("chosen"); else if (tied[n]) c.classList.add("tied");
      if (named) { c.appendChild(el("span", { "class": "label" }, S[N.name[n]])); c.appendChild(el("span", { "class": "label fill" })); }
      cells[n] = c; box.appendChild(c);
    });
    col.appendChild(box); frag.appendChild(col);
  });
  mapEl.appendChild(frag);

  function shade(f) { // 0..1 -> white..blue
    f = Math.max(0, Math.min(1, f));
    var r = Math.round(255 - 246 * f), g = Math.round(255 - 150 * f), b = Math.round(255 - 37 * f);
    return "rgb(" + r + "," + g + "," + b + ")";
  }
  function draw() {
    var counts = null, max = 1;
    if (state.mode === "workload") {
      counts = new Array(nodeCount).fill(0);
      (workloadPods[state.workload] || []).forEach(function (p) { if (P.node[p] >= 0) counts[P.node[p]]++; });
      counts.forEach(function (x) { if (x > max) max = x; });
    }
    for (var n = 0; n < nodeCount; n++) {
      var c = cells[n], color, text;
      if (state.mode === "reason") {
        var rs = reasonsOf[n];
        if (rs && rs.length) { color = colorOf[rs[0].plugin]; text = rs[0].plugin; }
        else if (feasible[n]) { color = "#aceebb"; text = "feasible, score " + feasible[n].total; }
        else { color = "#eef1f4"; text = ""; }
      } else if (state.mode === "workload") {
        color = counts[n] ? shade(0.25 + 0.75 * counts[n] / max) : "#eef1f4"; text = counts[n] ? counts[n] + (counts[n] === 1 ? " replica" : " replicas") : "";
      } else if (state.mode === "cpu") {
        color = shade(reqCpu[n] / Math.max(1, N.cpu_m[n])); text = pct(reqCpu[n], N.cpu_m[n]) + "% CPU";
      } else {
        color = shade(reqMem[n] / Math.max(1, N.mem_mi[n])); text = pct(reqMem[n], N.mem_mi[n]) + "% memory";
      }
      c.style.backgroundColor = color;
      if (named) c.lastChild.textContent = text; else c.title = S[N.name[n]] + (text ? " · " + text : "");
    }
    drawLegend(max);
  }

  function drawLegend(max) {
    var lg = document.getElementById("legend");
    lg.textContent = "";
    if (state.mode === "reason") {
      lg.appendChild(el("h2", null, "Why nodes reject the pod"));
      // Counts per reason as the FailedScheduling line gives them: the
      // first failing plugin's status per node (reasons come in filter
      // order); NodeResourcesFit reports every insufficient resource at once.
      var byReason = {};
      Object.keys(reasonsOf).forEach(function (n) {
        var rs = reasonsOf[n];
        rs.forEach(function (r, i) {
          if (i > 0 && !(r.plugin === rs[0].plugin && r.plugin === "NodeResourcesFit")) return;
          var k = r.plugin + "\u0000" + r.reason;
          byReason[k] = (byReason[k] || 0) + 1;
        });
      });
      var ul = el("ul", { id: "reasons" });
      Object.keys(byReason).sort(function (a, b) { return byReason[b] - byReason[a]; }).forEach(function (k) {
        var parts = k.split("\u0000"), li = el("li");
        li.appendChild(el("span", { "class": "swatch", style: "background:" + colorOf[parts[0]] }));
        li.appendChild(document.createTextNode(byReason[k] + " × " + parts[1] + " (" + parts[0] + ")"));
        ul.appendChild(li);
      });
      var nf = Object.keys(feasible).length;
      if (nf) { var li = el("li"); li.appendChild(el("span", { "class": "swatch", style: "background:#aceebb" })); li.appendChild(document.createTextNode(nf + " feasible")); ul.appendChild(li); }
      lg.appendChild(ul);
      if (WHY.message) lg.appendChild(el("p", { "class": "muted", id: "message" }, WHY.message));
    } else if (state.mode === "workload") {
      lg.appendChild(el("h2", null, S[state.workload] || "no workload"));
      var placed = (workloadPods[state.workload] || []).filter(function (p) { return P.node[p] >= 0; }).length;
      lg.appendChild(el("p", null, placed + " replicas on nodes (darkest: " + max + " on one node), " + ((workloadPods[state.workload] || []).length - placed) + " Pending"));
    } else {
      lg.appendChild(el("p", null, "Fill: requested " + (state.mode === "cpu" ? "CPU" : "memory") + " / allocatable (white 0%, darkest 100%)"));
    }
  }

  function table(rows, head) {
    var t = el("table");
    if (head) { var tr = el("tr"); head.forEach(function (h) { tr.appendChild(el("th", null, h)); }); t.appendChild(tr); }
    rows.forEach(function (r) { var tr = el("tr"); r.forEach(function (c) { tr.appendChild(el("td", null, c)); }); t.appendChild(tr); });
    return t;
  }

  function showNode(n) {
    if (state.selected >= 0) cells[state.selected].classList.remove("sel");
    state.selected = n; cells[n].classList.add("sel");
    var panel = document.getElementById("panel");
    panel.textContent = "";
    panel.appendChild(el("h2", { id: "node-name" }, S[N.name[n]]));
    panel.appendChild(el("p", null, M.group_by + ": " + (S[N.group[n]] || "(none)") + (N.cordoned[n] ? " · cordoned" : "")));
    panel.appendChild(el("p", null, "Requested " + cpu(reqCpu[n]) + " of " + cpu(N.cpu_m[n]) + " (" + pct(reqCpu[n], N.cpu_m[n]) + "%), " +
      mem(reqMem[n]) + " of " + mem(N.mem_mi[n]) + " (" + pct(reqMem[n], N.mem_mi[n]) + "%)"));
    if (WHY) {
      var rs = reasonsOf[n] || [];
      var sec = el("div", { id: "node-reasons" });
      if (n === chosen) sec.appendChild(el("p", null, "The pod " + (WHY.node ? "runs" : "would land") + " here."));
      else if (tied[n]) sec.appendChild(el("p", null, "Tied for the best score."));
      else if (feasible[n]) sec.appendChild(el("p", null, "Feasible, total score " + feasible[n].total + "."));
      rs.forEach(function (r) {
        var d = el("div", { "class": "reason", style: "border-left-color:" + colorOf[r.plugin] });
        d.appendChild(el("b", null, r.plugin + ": ")); d.appendChild(document.createTextNode(r.reason));
        if (r.blockers && r.blockers.length) {
          d.appendChild(table(r.blockers.map(function (b) {
            return [b.pod, b.workload, b.term ? b.term.kind + " " + b.term.selector + " (" + b.term.topology_key + "=" + b.term.domain + ")" : ""];
          }), ["blocking pod", "workload", "term"]));
          if (r.blockers_total > r.blockers.length) d.appendChild(el("p", { "class": "muted" }, "and " + (r.blockers_total - r.blockers.length) + " more"));
        }
        if (r.detail && Object.keys(r.detail).length > 1) d.appendChild(el("pre", null, JSON.stringify(r.detail, null, 1)));
        sec.appendChild(d);
      });
      panel.appendChild(sec);
    }
    var labels = [];
    for (var k = 0; k < N.labels[n].length; k += 2) labels.push([S[N.labels[n][k]], S[N.labels[n][k + 1]]]);
    panel.appendChild(el("h2", null, "Labels"));
    panel.appendChild(table(labels));
    panel.appendChild(el("h2", null, "Taints"));
    panel.appendChild(N.taints[n].length ? table(N.taints[n].map(function (t) { return [S[t]]; })) : el("p", { "class": "muted" }, "none"));
    panel.appendChild(el("h2", null, "Pods (" + podsOn[n].length + ")"));
    panel.appendChild(table(podsOn[n].slice(0, 500).map(function (p) { return [podName(p), S[P.workload[p]], P.cpu_m[p] + "m", mem(P.mem_mi[p])]; }), ["pod", "workload", "cpu", "memory"]));
  }

  function drawPending() {
    var sec = document.getElementById("pending");
    var total = pendingPods.length + (D.counted || []).reduce(function (a, c) { return a + c.replicas; }, 0);
    sec.appendChild(el("h2", null, "Pending (" + total + ")"));
    // Grouped by workload and message: thousands of identical lines say less.
    var groupsP = {}, order = [];
    pendingPods.forEach(function (p) {
      var k = P.workload[p] + ":" + P.msg[p];
      if (!groupsP[k]) { groupsP[k] = { w: S[P.workload[p]], m: P.msg[p] >= 0 ? S[P.msg[p]] : "", pods: [] }; order.push(k); }
      groupsP[k].pods.push(podName(p));
    });
    var ul = el("ul", { id: "pending-list" });
    order.slice(0, 300).forEach(function (k) {
      var g = groupsP[k], li = el("li");
      li.appendChild(el("b", null, g.pods.length > 1 ? g.w + " (" + g.pods.length + " pods)" : g.pods[0]));
      li.appendChild(el("div", { "class": "muted" }, g.m));
      ul.appendChild(li);
    });
    (D.counted || []).forEach(function (c) {
      var li = el("li"); li.appendChild(el("b", null, c.workload + " (" + c.replicas + " counted replicas)"));
      li.appendChild(el("div", { "class": "muted" }, c.message)); ul.appendChild(li);
    });
    if (!total) ul.appendChild(el("li", { "class": "muted" }, "none"));
    sec.appendChild(ul);
  }

  function drawFixes() {
    if (!WHY) return;
    var sec = document.getElementById("fixes");
    sec.appendChild(el("h2", null, "Verified fixes (" + (WHY.fixes || []).length + ")"));
    (WHY.fixes || []).forEach(function (f) {
      var d = el("div", { "class": "fix" });
      d.appendChild(el("b", null, f.title));
      d.appendChild(el("p", { "class": "muted" }, f.target + (f.lands_on ? " → lands on " + f.lands_on : "") + (f.verification ? " (" + f.verification + ")" : "")));
      if (f.rationale) d.appendChild(el("p", null, f.rationale));
      if (f.patch) d.appendChild(el("pre", null, f.patch));
      if (f.command) d.appendChild(el("pre", null, f.command));
      sec.appendChild(d);
    });
    (WHY.notes || []).forEach(function (n) { sec.appendChild(el("p", { "class": "muted" }, n.text)); });
  }

  var summary = document.getElementById("summary");
  summary.textContent = nodeCount + " nodes in " + groupKeys.length + " " + M.group_by + " columns, " + podCount + " pods" +
    (WHY ? " · " + WHY.pod + ": " + WHY.phase : " · " + D.placed + " placed, " + D.pending + " Pending");

  mapEl.addEventListener("click", function (e) {
    var t = e.target.closest(".node");
    if (t) showNode(t._n);
  });
  mode.addEventListener("change", function () { state.mode = mode.value; draw(); });
  picker.addEventListener("change", function () { state.workload = Number(picker.value); if (state.mode !== "workload") { state.mode = mode.value = "workload"; } draw(); });
  search.addEventListener("input", function () {
    var q = search.value.trim().toLowerCase();
    var w = workloads.find(function (x) { return S[x].toLowerCase() === q; });
    if (w !== undefined) { picker.value = w; state.workload = w; state.mode = mode.value = "workload"; draw(); }
    for (var n = 0; n < nodeCount; n++) cells[n].classList.toggle("sel", q.length > 0 && S[N.name[n]].toLowerCase().indexOf(q) >= 0);
  });

  draw(); drawPending(); drawFixes();
  if (chosen >= 0) showNode(chosen);
  requestAnimationFrame(function () {
    document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
    document.body.setAttribute("data-ready", "1");
  });
})();
