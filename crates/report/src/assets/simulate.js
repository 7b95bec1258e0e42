// podplace simulate report: replays the per-step deltas (docs/html-report.md)
// to draw each step's map, Pending pods and findings, and charts each
// workload's running replicas per column (or per node) and Pending over time.
(function () {
  "use strict";
  var el = PP.el, D = PP.data(), S = D.strings, M = D.map, N = M.nodes, P = M.pods, T = D.steps;
  var nodeCount = N.name.length, podCount = P.workload.length, stepCount = T.title.length;
  var TERMINATING = 2, GATED = 4, CORDONED = 1, NOT_READY = 2, ABSENT = 4;
  function podName(p) { return S[P.name_prefix[p]] + P.name_rest[p]; }

  // The replayed state: after step `cur`.
  var podNode = new Int32Array(podCount), podFlags = new Uint8Array(podCount), podMsg = new Int32Array(podCount);
  var nodeFlags = new Uint8Array(nodeCount), cur = -1;
  function reset() { podNode.fill(-2); podFlags.fill(0); podMsg.fill(-1); nodeFlags.fill(ABSENT); cur = -1; }
  function applyStep(k, onPod) {
    var d = T.pods[k], i;
    for (i = 0; i < d.length; i += 4) {
      var p = d[i];
      if (onPod) onPod(p, -1);
      podNode[p] = d[i + 1]; podFlags[p] = d[i + 2]; podMsg[p] = d[i + 3];
      if (onPod) onPod(p, 1);
    }
    var nd = T.nodes[k];
    for (i = 0; i < nd.length; i += 2) nodeFlags[nd[i]] = nd[i + 1];
  }
  function goTo(k) { if (k < cur) reset(); while (cur < k) applyStep(++cur); }
  function running(p) { return podNode[p] >= 0 && !(podFlags[p] & TERMINATING); }

  // Workloads, columns, and the findings naming each workload per step.
  var workloadPods = {};
  for (var p = 0; p < podCount; p++) (workloadPods[P.workload[p]] = workloadPods[P.workload[p]] || []).push(p);
  var workloads = Object.keys(workloadPods).map(Number);
  var wIndex = {};
  workloads.forEach(function (w, i) { wIndex[w] = i; });
  var W = workloads.length;
  var groupKeys = [], gi = {};
  for (var n = 0; n < nodeCount; n++) if (gi[N.group[n]] === undefined) { gi[N.group[n]] = 0; groupKeys.push(N.group[n]); }
  groupKeys.sort(PP.byName(S));
  groupKeys.forEach(function (g, i) { gi[g] = i; });
  var G = groupKeys.length, nodeGroup = new Int32Array(nodeCount);
  for (n = 0; n < nodeCount; n++) nodeGroup[n] = gi[N.group[n]];
  var byNodeOK = nodeCount <= 60;
  var flagged = []; // per step: {workload index: [kinds]}
  for (var k = 0; k < stepCount; k++) {
    var f = T.findings[k], m = {};
    for (var i = 0; i < f.length; i += 5) if (f[i + 2] >= 0 && wIndex[f[i + 2]] !== undefined) (m[wIndex[f[i + 2]]] = m[wIndex[f[i + 2]]] || []).push(S[f[i]]);
    flagged.push(m);
  }

  // One pass over the steps: per step, per workload, running replicas per
  // column (and per node on small clusters) and Pending, the last slot.
  var wOf = new Int32Array(podCount);
  for (p = 0; p < podCount; p++) wOf[p] = wIndex[P.workload[p]];
  var cg = new Int32Array(W * (G + 1)), cn = byNodeOK ? new Int32Array(W * (nodeCount + 1)) : null;
  var seriesG = [], seriesN = [];
  function account(p, sign) {
    var n = podNode[p], w = wOf[p];
    if (running(p)) { cg[w * (G + 1) + nodeGroup[n]] += sign; if (cn) cn[w * (nodeCount + 1) + n] += sign; }
    else if (n === -1) { cg[w * (G + 1) + G] += sign; if (cn) cn[w * (nodeCount + 1) + nodeCount] += sign; }
  }
  reset();
  for (k = 0; k < stepCount; k++) {
    applyStep(k, account); cur = k;
    seriesG.push(cg.slice());
    if (cn) seriesN.push(cn.slice());
  }
  var peak = new Int32Array(W);
  seriesG.forEach(function (s) {
    for (var w = 0; w < W; w++) { var t = 0; for (var g = 0; g <= G; g++) t += s[w * (G + 1) + g]; if (t > peak[w]) peak[w] = t; }
  });
  var hasFinding = new Uint8Array(W);
  flagged.forEach(function (m) { Object.keys(m).forEach(function (w) { hasFinding[w] = 1; }); });
  // Charted first: workloads with findings, then the largest.
  var order = workloads.map(function (w, i) { return i; }).sort(function (a, b) {
    return hasFinding[b] - hasFinding[a] || peak[b] - peak[a] || (S[workloads[a]] < S[workloads[b]] ? -1 : 1);
  });

  var state = { step: stepCount - 1, w: order.length ? order[0] : -1, fill: "workload", dim: G > 1 || !byNodeOK ? "group" : "node", selected: -1 };

  // Controls.
  var controls = document.getElementById("controls");
  var fill = el("select", { id: "mode", "aria-label": "fill" });
  [["workload", "selected workload's replicas"], ["cpu", "requested CPU"], ["memory", "requested memory"]]
    .forEach(function (o) { fill.appendChild(el("option", { value: o[0] }, o[1])); });
  var picker = el("select", { id: "workload", "aria-label": "workload" });
  order.forEach(function (i) { picker.appendChild(el("option", { value: i }, S[workloads[i]] + " (peak " + peak[i] + ")")); });
  var dimSel = el("select", { id: "chart-by", "aria-label": "chart by" });
  dimSel.appendChild(el("option", { value: "group" }, "per " + M.group_by));
  if (byNodeOK) dimSel.appendChild(el("option", { value: "node" }, "per node"));
  dimSel.value = state.dim;
  controls.appendChild(el("label", null, "Fill: ")).appendChild(fill);
  controls.appendChild(el("label", null, "Workload: ")).appendChild(picker);

  // Charts: small multiples, one per workload (the first 12, and the
  // selected one), stacked bars per step.
  var chartsEl = document.getElementById("charts");
  var CHARTS = 12;
  function dimName(d) {
    if (state.dim === "node") return d === nodeCount ? "Pending" : S[N.name[d]];
    return d === G ? "Pending" : (S[groupKeys[d]] || "(no " + M.group_by + ")");
  }
  function dimColor(d, dims) { return d === dims ? "#ff8182" : PP.PALETTE[d % PP.PALETTE.length]; }
  function drawCharts() {
    chartsEl.textContent = "";
    var head = el("div", { "class": "chart-head" });
    head.appendChild(el("h2", null, "Replicas over time"));
    head.appendChild(el("label", null, "Chart: ")).appendChild(dimSel);
    var dims = state.dim === "node" ? nodeCount : G;
    var legend = el("div", { "class": "chart-legend" });
    for (var d = 0; d <= dims; d++) {
      var item = el("span");
      item.appendChild(el("span", { "class": "swatch", style: "background:" + dimColor(d, dims) }));
      item.appendChild(document.createTextNode(dimName(d)));
      legend.appendChild(item);
    }
    legend.appendChild(el("span", { "class": "muted" }, "▲ a finding names the workload"));
    head.appendChild(legend);
    chartsEl.appendChild(head);
    var box = el("div", { "class": "charts" });
    var shown = order.slice(0, CHARTS);
    if (state.w >= 0 && shown.indexOf(state.w) < 0) shown.push(state.w);
    shown.forEach(function (w) { box.appendChild(chart(w, dims)); });
    chartsEl.appendChild(box);
    if (order.length > CHARTS) chartsEl.appendChild(el("p", { "class": "muted" }, (order.length - CHARTS) + " more workloads: pick one in the list below the charts"));
  }
  function chart(w, dims) {
    var series = state.dim === "node" ? seriesN : seriesG, stride = dims + 1;
    var max = 1, k, d;
    for (k = 0; k < stepCount; k++) { var t = 0; for (d = 0; d <= dims; d++) t += series[k][w * stride + d]; if (t > max) max = t; }
    var bw = Math.max(2, Math.min(40, Math.floor(360 / stepCount))), H = 80, Wd = bw * stepCount;
    var s = PP.svg("svg", { width: Wd, height: H + 10, viewBox: "0 0 " + Wd + " " + (H + 10), "class": "chart-svg" });
    for (k = 0; k < stepCount; k++) {
      var g = PP.svg("g", { "class": "bar", "data-step": k }), y = H, parts = [];
      for (d = 0; d <= dims; d++) {
        var v = series[k][w * stride + d];
        if (!v) continue;
        var h = v / max * H;
        g.appendChild(PP.svg("rect", { x: k * bw, y: y - h, width: Math.max(1, bw - 1), height: h, fill: dimColor(d, dims) }));
        y -= h; parts.push(dimName(d) + " " + v);
      }
      g.appendChild(PP.svg("rect", { x: k * bw, y: 0, width: bw, height: H + 10, fill: "transparent" }));
      var title = PP.svg("title");
      title.textContent = "step " + k + ": " + S[T.title[k]] + "\n" + (parts.join(", ") || "no replicas") + (flagged[k][w] ? "\n" + flagged[k][w].join(", ") : "");
      g.appendChild(title);
      if (flagged[k][w]) g.appendChild(PP.svg("path", { d: "M" + (k * bw + bw / 2) + " " + (H + 2) + "l3 7h-6z", fill: "#cf222e", "class": "finding-mark" }));
      s.appendChild(g);
    }
    s.appendChild(PP.svg("rect", { "class": "cur", x: state.step * bw, y: 0, width: bw, height: H + 10 }));
    var c = el("div", { "class": "chart" + (w === state.w ? " on" : ""), "data-workload": S[workloads[w]] });
    c.appendChild(el("div", { "class": "chart-title", title: S[workloads[w]] }, S[workloads[w]].replace(/^[^/]*\//, "") + " · peak " + peak[w]));
    c.appendChild(s);
    c.addEventListener("click", function (e) {
      var bar = e.target.closest ? e.target.closest(".bar") : null;
      if (bar) state.step = Number(bar.getAttribute("data-step"));
      select(w);
    });
    return c;
  }

  // Step list and slider.
  var list = document.getElementById("steps"), items = [];
  for (k = 0; k < stepCount; k++) {
    var li = el("li", { "class": "step", "data-step": k });
    li.appendChild(el("span", { "class": "step-no" }, k === 0 ? "0" : String(k)));
    li.appendChild(el("span", { "class": "step-title" }, S[T.title[k]]));
    li.appendChild(el("span", { "class": "muted" }, " t=" + T.time[k]));
    var kinds = {};
    for (i = 0; i < T.findings[k].length; i += 5) kinds[S[T.findings[k][i]]] = (kinds[S[T.findings[k][i]]] || 0) + 1;
    Object.keys(kinds).sort().forEach(function (kd) { li.appendChild(el("span", { "class": "badge " + kd }, kinds[kd] > 1 ? kd + " ×" + kinds[kd] : kd)); });
    li.addEventListener("click", (function (k) { return function () { state.step = k; drawStep(); }; })(k));
    items.push(li); list.appendChild(li);
  }
  var slider = document.getElementById("step-slider");
  slider.max = String(stepCount - 1);
  slider.addEventListener("input", function () { state.step = Number(slider.value); drawStep(); });
  document.getElementById("prev").addEventListener("click", function () { if (state.step > 0) { state.step--; drawStep(); } });
  document.getElementById("next").addEventListener("click", function () { if (state.step < stepCount - 1) { state.step++; drawStep(); } });

  // The map.
  var view = PP.map(document.getElementById("map"), S, N, M.group_by, function (n) { state.selected = n; showNode(); });
  function paint() {
    var counts = new Int32Array(nodeCount), reqCpu = new Float64Array(nodeCount), reqMem = new Float64Array(nodeCount), max = 1;
    for (var p = 0; p < podCount; p++) {
      var n = podNode[p];
      if (n < 0) continue;
      reqCpu[n] += P.cpu_m[p]; reqMem[n] += P.mem_mi[p];
      if (wOf[p] === state.w && running(p)) { counts[n]++; if (counts[n] > max) max = counts[n]; }
    }
    var flaggedNodes = {};
    for (var i = 0; i < T.findings[state.step].length; i += 5) if (T.findings[state.step][i + 3] >= 0) flaggedNodes[T.findings[state.step][i + 3]] = 1;
    for (n = 0; n < nodeCount; n++) {
      var color, text, c = view.cells[n];
      if (state.fill === "workload") { color = counts[n] ? PP.shade(0.25 + 0.75 * counts[n] / max) : PP.EMPTY; text = counts[n] ? counts[n] + (counts[n] === 1 ? " replica" : " replicas") : ""; }
      else if (state.fill === "cpu") { color = PP.shade(reqCpu[n] / Math.max(1, N.cpu_m[n])); text = PP.pct(reqCpu[n], N.cpu_m[n]) + "% CPU"; }
      else { color = PP.shade(reqMem[n] / Math.max(1, N.mem_mi[n])); text = PP.pct(reqMem[n], N.mem_mi[n]) + "% memory"; }
      if (nodeFlags[n] & ABSENT) text = "not in the cluster";
      else if (nodeFlags[n] & NOT_READY) text = "NotReady" + (text ? " · " + text : "");
      view.paint(n, color, text);
      c.classList.toggle("cordoned", !!(nodeFlags[n] & CORDONED));
      c.classList.toggle("notready", !!(nodeFlags[n] & NOT_READY));
      c.classList.toggle("absent", !!(nodeFlags[n] & ABSENT));
      c.classList.toggle("flag", !!flaggedNodes[n]);
    }
    return { reqCpu: reqCpu, reqMem: reqMem };
  }

  var req = null;
  function drawStep() {
    goTo(state.step);
    slider.value = String(state.step);
    items.forEach(function (li, k) { li.classList.toggle("on", k === state.step); });
    document.getElementById("step-label").textContent = "step " + state.step + " of " + (stepCount - 1) + ": " + S[T.title[state.step]] + " (t=" + T.time[state.step] + ")";
    req = paint();
    var info = document.getElementById("step-info");
    info.textContent = "";
    info.appendChild(el("h2", null, (state.step === 0 ? "Initial state" : "Step " + state.step + ": " + S[T.title[state.step]]) + " · t=" + T.time[state.step]));
    var ch = T.changes[state.step], ul = el("ul", { id: "changes" });
    ch.slice(0, 200).forEach(function (c) { ul.appendChild(el("li", null, S[c])); });
    if (ch.length > 200) ul.appendChild(el("li", { "class": "muted" }, "and " + (ch.length - 200) + " more"));
    if (!ch.length) ul.appendChild(el("li", { "class": "muted" }, "no change"));
    info.appendChild(ul);
    var fs = document.getElementById("findings"), F = T.findings[state.step];
    fs.textContent = "";
    fs.appendChild(el("h2", null, "Findings (" + F.length / 5 + ")"));
    for (var i = 0; i < F.length; i += 5) {
      var d = el("div", { "class": "finding " + S[F[i]] });
      d.appendChild(el("b", null, S[F[i]] + ": "));
      d.appendChild(document.createTextNode(S[F[i + 1]]));
      if (F[i + 4] >= 0) d.appendChild(el("p", { "class": "muted" }, "fix: " + S[F[i + 4]]));
      fs.appendChild(d);
    }
    drawPending();
    drawCharts();
    if (state.selected >= 0) showNode();
  }

  function drawPending() {
    var sec = document.getElementById("pending"), groups = {}, keys = [], total = 0;
    sec.textContent = "";
    for (var p = 0; p < podCount; p++) {
      if (podNode[p] !== -1) continue;
      total++;
      var key = P.workload[p] + ":" + podMsg[p];
      if (!groups[key]) { groups[key] = { w: S[P.workload[p]], m: podMsg[p] >= 0 ? S[podMsg[p]] : "", gated: !!(podFlags[p] & GATED), pods: [] }; keys.push(key); }
      groups[key].pods.push(podName(p));
    }
    sec.appendChild(el("h2", null, "Pending (" + total + ")"));
    var ul = el("ul", { id: "pending-list" });
    keys.slice(0, 300).forEach(function (key) {
      var g = groups[key], li = el("li");
      li.appendChild(el("b", null, (g.pods.length > 1 ? g.w + " (" + g.pods.length + " pods)" : g.pods[0]) + (g.gated ? " · gated" : "")));
      li.appendChild(el("div", { "class": "muted" }, g.m));
      ul.appendChild(li);
    });
    if (!total) ul.appendChild(el("li", { "class": "muted" }, "none"));
    sec.appendChild(ul);
  }

  function showNode() {
    var n = state.selected, panel = document.getElementById("panel");
    view.select(n);
    panel.textContent = "";
    panel.appendChild(el("h2", { id: "node-name" }, S[N.name[n]]));
    var st = [];
    if (nodeFlags[n] & ABSENT) st.push("not in the cluster at this step");
    if (nodeFlags[n] & CORDONED) st.push("cordoned");
    if (nodeFlags[n] & NOT_READY) st.push("NotReady");
    panel.appendChild(el("p", null, M.group_by + ": " + (S[N.group[n]] || "(none)") + (st.length ? " · " + st.join(", ") : "")));
    panel.appendChild(el("p", null, "Requested " + PP.cpu(req.reqCpu[n]) + " of " + PP.cpu(N.cpu_m[n]) + " (" + PP.pct(req.reqCpu[n], N.cpu_m[n]) + "%), " +
      PP.mem(req.reqMem[n]) + " of " + PP.mem(N.mem_mi[n]) + " (" + PP.pct(req.reqMem[n], N.mem_mi[n]) + "%)"));
    PP.nodeFacts(panel, S, N, n);
    var on = [];
    for (var p = 0; p < podCount; p++) if (podNode[p] === n) on.push(p);
    panel.appendChild(el("h2", null, "Pods (" + on.length + ")"));
    panel.appendChild(PP.table(on.slice(0, 500).map(function (p) {
      return [podName(p) + (podFlags[p] & TERMINATING ? " (terminating)" : ""), S[P.workload[p]], P.cpu_m[p] + "m", PP.mem(P.mem_mi[p])];
    }), ["pod", "workload", "cpu", "memory"]));
  }

  function select(w) { state.w = w; picker.value = String(w); state.fill = fill.value = "workload"; drawStep(); }
  fill.addEventListener("change", function () { state.fill = fill.value; drawStep(); });
  picker.addEventListener("change", function () { select(Number(picker.value)); });
  dimSel.addEventListener("change", function () { state.dim = dimSel.value; drawCharts(); });

  var failed = D.failed_expectations;
  document.getElementById("summary").textContent = nodeCount + " nodes in " + G + " " + M.group_by + " column" + (G === 1 ? "" : "s") + ", " +
    podCount + " pods over " + (stepCount - 1) + " steps · " + (failed ? failed + " expectation(s) failed" : "all expectations held") +
    (D.warnings.length ? " · " + D.warnings.length + " warning(s)" : "");
  reset();
  if (state.w >= 0) picker.value = String(state.w);
  drawStep();
  PP.ready();
})();
