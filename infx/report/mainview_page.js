// The cross-hardware main view, drawn in the page from the data sent once (infx.analysis.mainview.MainView):
// filters, axis switching, envelopes (the same rule as infx.analysis.frontier.pareto_mask), CSV/PNG export per
// chart, state in the URL's fragment (a link reproduces the view), charts drawn when they come into view.
(function main() {
  "use strict";
  const root = document.getElementById("mainview");
  if (!root) return;
  if (!window.Plotly && document.readyState === "loading") {  // plotly loads deferred: start once it has
    document.addEventListener("DOMContentLoaded", main);
    return;
  }
  const cfg = JSON.parse(root.dataset.config || "{}");
  let D = null;
  const S = { x: "interactivity", y: "tput_gpu_total", chart: "", hw: "", fw: "", run: "", custom: "", as_of: "",
              runs: "", sel: "", at: "", cchart: "", model: "", scen: "", prec: "" };
  const palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
                   "#7f7f7f", "#bcbd22"];
  const drawn = new Set();
  let observer = null;

  function readState() {
    const q = new URLSearchParams(location.hash.replace(/^#/, ""));
    for (const k of Object.keys(S)) if (q.has(k)) S[k] = q.get(k);
  }
  function writeState() {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(S)) if (v) q.set(k, v);
    const h = "#" + q.toString();
    if (location.hash !== h) history.replaceState(null, "", h);
  }
  const list = (v) => (v ? v.split(",").filter(Boolean) : []);

  function metric(key) {
    if (key === "usd_mtok_custom") {
      return { key: key, label: "$ per million total tokens at $" + S.custom + "/GPU-hr", unit: "$/Mtok",
               direction: "min", basis: "total", inverse: true, input_metric: false };
    }
    return D.x_metrics.concat(D.y_metrics).find((m) => m.key === key);
  }
  function xKey() {  // input-token metrics read against TTFT, as InferenceX does
    const ym = metric(S.y);
    return ym && ym.input_metric && S.x === "interactivity" ? "ttft" : S.x;
  }
  function yValues(key) {
    if (key === "usd_mtok_custom") {
      const price = parseFloat(S.custom);
      return D.points.y.tput_gpu_total.map((t) => (t && price > 0 ? price / (t * 3600 / 1e6) : null));
    }
    return D.points.y[key];
  }

  // the envelope of each group: sort x best first, then y best first; keep a point when its y is the best of
  // its x and better than every strictly better x's (ties kept, invalid and missing figures never on it)
  function envelope(idx, xs, ys, xdir, ydir) {
    const sx = xdir === "max" ? 1 : -1, sy = ydir === "max" ? 1 : -1;
    const v = idx.filter((i) => xs[i] != null && ys[i] != null && isFinite(xs[i]) && isFinite(ys[i]) &&
                                D.points.invalid[i] == null);
    v.sort((a, b) => (xs[b] * sx - xs[a] * sx) || (ys[b] * sy - ys[a] * sy));
    const on = new Set();
    let best = -Infinity, k = 0;
    while (k < v.length) {
      let j = k;
      while (j < v.length && xs[v[j]] === xs[v[k]]) j++;
      const top = ys[v[k]] * sy;
      if (top > best) for (let t = k; t < j; t++) if (ys[v[t]] * sy === top) on.add(v[t]);
      best = Math.max(best, top);
      k = j;
    }
    return on;
  }

  function visibleGroups() {
    const hw = list(S.hw), fw = list(S.fw), runs = list(S.run);
    return D.groups.filter((g) => (!hw.length || hw.includes(g.hardware)) && (!fw.length || fw.includes(g.framework))
                                  && (!runs.length || runs.includes(g.run_id)));
  }
  const seqOf = (c) => (c.scenario === "agentic-coding" ? "agentic" : c.isl + "/" + c.osl);
  function visibleCharts() {
    const want = list(S.chart), models = list(S.model), seqs = list(S.scen), precs = list(S.prec);
    const groups = visibleGroups();
    return D.charts.filter((c) => (!want.length || want.includes(String(c.id))) && (!models.length || models.includes(c.model))
                                  && (!seqs.length || seqs.includes(seqOf(c))) && (!precs.length || precs.includes(c.precision))
                                  && groups.some((g) => g.chart === c.id));
  }

  // what one chart shows: per group its points, envelope membership and band
  function chartModel(chartId) {
    const xk = xKey(), xs = D.points.x[xk], ys = yValues(S.y);
    const xm = metric(xk), ym = metric(S.y);
    const groups = visibleGroups().filter((g) => g.chart === chartId);
    const byGroup = new Map(groups.map((g) => [g.id, []]));
    D.points.group.forEach((g, i) => { if (byGroup.has(g)) byGroup.get(g).push(i); });
    const out = [];
    for (const g of groups) {
      const idx = byGroup.get(g.id);
      const on = envelope(idx, xs, ys, xm.direction, ym.direction);
      out.push({ group: g, idx: idx, on: on, xs: xs, ys: ys });
    }
    return { xm: xm, ym: ym, xk: xk, groups: out };
  }

  function traces(model) {
    const t = [];
    const step = model.xm.direction === "max" ? "vh" : "hv";
    model.groups.forEach((m, n) => {
      const g = m.group, colour = palette[g.id % palette.length];
      const dash = g.official ? "solid" : "dash";
      const pts = m.idx.filter((i) => m.xs[i] != null && m.ys[i] != null);
      const missing = m.idx.length - pts.length;
      t.push({ type: "scatter", mode: "markers", name: g.label + (missing ? " (" + missing + " without a value)" : ""),
               legendgroup: "g" + g.id, meta: { group: g.id, kind: "points" },
               x: pts.map((i) => m.xs[i]), y: pts.map((i) => m.ys[i]),
               customdata: pts.map((i) => [D.points.run_id[i], D.points.point_id[i], m.on.has(i) ? 1 : 0]),
               text: pts.map((i) => D.points.parallelism[i] + " c" + D.points.conc[i] +
                     (D.points.invalid[i] ? " INVALID: " + D.points.invalid[i] : "") +
                     (D.points.acceptance[i] === "synthetic" ? " (synthetic acceptance)" : "")),
               hovertemplate: "%{text}<br>x %{x:.4g}<br>y %{y:.4g}<extra>" + g.label + "</extra>",
               marker: { color: colour, size: 7,
                         symbol: pts.map((i) => D.points.invalid[i] ? "x" :
                                 D.points.acceptance[i] === "synthetic" ? "diamond-open" :
                                 m.on.has(i) ? "circle" : "circle-open"),
                         opacity: pts.map((i) => (m.on.has(i) || D.points.invalid[i]) ? 1 : 0.4) } });
      const env = Array.from(m.on).sort((a, b) => m.xs[a] - m.xs[b]);
      if (!env.length) return;
      const ci = model.ym.basis === "output" ? D.points.ci_output : D.points.ci_total;
      if (model.ym.basis !== "none" && env.some((i) => ci[i])) {
        // a throughput's interval ends at zero (a two-trial Student-t interval can reach below it); a figure
        // that goes as 1/throughput then has no upper end: its band is left open there (null)
        const band = (lo) => env.map((i) => {
          const c = ci[i]; if (!c) return m.ys[i];
          const [cl, ch] = [Math.max(c[0], 0), Math.max(c[1], 0)];
          if (model.ym.inverse && (lo ? ch : cl) <= 0) return null;
          const r = model.ym.inverse ? 1 / (lo ? ch : cl) : (lo ? cl : ch);
          return m.ys[i] * r;
        });
        t.push({ type: "scatter", mode: "lines", x: env.map((i) => m.xs[i]), y: band(true), line: { width: 0, shape: step },
                 showlegend: false, hoverinfo: "skip", legendgroup: "g" + g.id, meta: { group: g.id, kind: "band" } });
        t.push({ type: "scatter", mode: "lines", x: env.map((i) => m.xs[i]), y: band(false), fill: "tonexty",
                 fillcolor: colour + "22", line: { width: 0, shape: step }, showlegend: false, hoverinfo: "skip",
                 legendgroup: "g" + g.id, meta: { group: g.id, kind: "band" } });
      }
      t.push({ type: "scatter", mode: "lines+text", x: env.map((i) => m.xs[i]), y: env.map((i) => m.ys[i]),
               text: env.map((i) => D.points.parallelism[i]), textposition: "top right",
               textfont: { size: 10, color: colour }, line: { color: colour, shape: step, dash: dash, width: 2 },
               showlegend: false, legendgroup: "g" + g.id, hoverinfo: "skip", meta: { group: g.id, kind: "envelope" } });
    });
    return t;
  }

  function draw(chartId) {
    const div = document.getElementById("mv-chart-" + chartId);
    if (!div || !window.Plotly) return;
    const model = chartModel(chartId);
    const c = D.charts[chartId];
    const xm = model.xm, ym = model.ym;
    const layout = { title: { text: c.label + ": " + ym.label, font: { size: 14 } }, height: 460,
                     margin: { t: 40, r: 10, b: 50, l: 70 },
                     xaxis: { title: { text: xm.label + " (" + xm.unit + ")" } },
                     yaxis: { title: { text: ym.label + " (" + ym.unit + ")" } }, legend: { font: { size: 10 } } };
    window.Plotly.react(div, traces(model), layout, { displaylogo: false, responsive: true });
    div.dataset.drawn = "1";
    drawn.add(chartId);
    if (window.performance && performance.mark && !performance.getEntriesByName("infx-first-chart").length) {
      performance.mark("infx-first-chart");
    }
    if (!div.dataset.clicks) {
      div.dataset.clicks = "1";
      div.on("plotly_click", (ev) => { const p = ev.points && ev.points[0]; if (p && p.data.meta) pick(p.data.meta.group); });
    }
    const notes = document.getElementById("mv-notes-" + chartId);
    const unpriced = visibleGroups().filter((g) => g.chart === chartId && S.y.startsWith("usd_mtok_") &&
                                                   g.not_priced[S.y.split(":")[1]]);
    notes.textContent = unpriced.map((g) => g.label + ": not priced (" + g.not_priced[S.y.split(":")[1]] + ")").join("; ");
  }

  function pick(groupId) {
    const sel = list(S.sel).map(Number).filter((g) => g !== groupId);
    sel.push(groupId);
    S.sel = sel.slice(-2).join(",");
    writeState();
    verdict();
    drawHistory();
  }
  function verdict() {
    const box = document.getElementById("mv-verdict");
    const sel = list(S.sel).map(Number);
    if (sel.length < 2) { box.innerHTML = sel.length ? "<p>Picked " + esc(D.groups[sel[0]].label) + ": click a second curve.</p>" : ""; return; }
    const [a, b] = sel;
    if (cfg.api) {
      const q = new URLSearchParams({ a: a, b: b, x: xKey(), y: S.y === "usd_mtok_custom" ? "tput_gpu_total" : S.y });
      if (S.runs) q.set("runs", S.runs);
      if (S.as_of) q.set("as_of", S.as_of);
      fetch(cfg.api + "/verdict?" + q.toString()).then((r) => r.text()).then((t) => { box.innerHTML = t; });
    } else {
      const v = (D.verdicts || {})[a + "-" + b] || (D.verdicts || {})[b + "-" + a];
      box.innerHTML = v ? "<p><small>verdict on total tok/s per GPU vs interactivity</small></p>" + v :
        "<p>No verdict table for this pair in the report (curves on different charts, or too many curves on " +
        "the chart): <code>infx serve</code> computes any pair.</p>";
    }
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));

  function csv(chartId) {
    const model = chartModel(chartId);
    const head = ["chart", "group", "hardware", "framework", "spec", "disagg", "run_id", "point_id", "parallelism",
                  "conc", model.xk, S.y, "on_envelope", "acceptance", "invalid"];
    const rows = [head.join(",")];
    const q = (v) => { const s = v == null ? "" : String(v); return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s; };
    for (const m of model.groups) {
      const g = m.group;
      for (const i of m.idx) {
        rows.push([D.charts[chartId].label, g.label, g.hardware, g.framework, g.spec, g.disagg ? "True" : "False",
                   D.points.run_id[i], D.points.point_id[i], D.points.parallelism[i], D.points.conc[i],
                   m.xs[i] == null ? "" : m.xs[i], m.ys[i] == null ? "" : m.ys[i], m.on.has(i) ? "True" : "False",
                   D.points.acceptance[i], D.points.invalid[i] || ""].map(q).join(","));
      }
    }
    return rows.join("\n") + "\n";
  }
  function download(name, text) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    a.download = name;
    document.body.appendChild(a); a.click(); a.remove();
  }

  function options(sel, items, chosen) {
    sel.innerHTML = items.map(([v, t]) => '<option value="' + esc(v) + '"' + (chosen.includes(String(v)) ? " selected" : "") +
                                          ">" + esc(t) + "</option>").join("");
  }
  function controls() {
    const ys = D.y_metrics.map((m) => [m.key, m.label + (m.missing ? " (" + m.missing + " without a value)" : "")]);
    ys.push(["usd_mtok_custom", "$/Mtok at a custom $/GPU-hr"]);
    options(document.getElementById("mv-y"), ys, [S.y]);
    options(document.getElementById("mv-x"), D.x_metrics.map((m) => [m.key, m.label]), [S.x]);
    const uniq = (f) => Array.from(new Set(D.groups.map(f))).sort();
    options(document.getElementById("mv-hw"), uniq((g) => g.hardware).map((h) => [h, h]), list(S.hw));
    options(document.getElementById("mv-fw"), uniq((g) => g.framework).map((h) => [h, h]), list(S.fw));
    options(document.getElementById("mv-run"), D.runs.map((r) => [r.run_id, r.run_id + (r.official ? "" : " (unofficial)")]), list(S.run));
    options(document.getElementById("mv-chart"), D.charts.map((c) => [c.id, c.label]), list(S.chart));
    const uc = (f) => Array.from(new Set(D.charts.map(f))).sort().map((v) => [v, v]);
    options(document.getElementById("mv-model"), uc((c) => c.model), list(S.model));
    options(document.getElementById("mv-scen"), uc(seqOf), list(S.scen));
    options(document.getElementById("mv-prec"), uc((c) => c.precision), list(S.prec));
    const runsBox = document.getElementById("mv-runs");
    if (runsBox) runsBox.value = S.runs;
    document.getElementById("mv-custom").value = S.custom;
    const asof = document.getElementById("mv-asof");
    if (asof) asof.value = S.as_of;
  }
  function bind() {
    const multi = (id, key) => document.getElementById(id).addEventListener("change", (e) => {
      S[key] = Array.from(e.target.selectedOptions).map((o) => o.value).join(","); refresh(); });
    document.getElementById("mv-y").addEventListener("change", (e) => { S.y = e.target.value; refresh(); });
    document.getElementById("mv-x").addEventListener("change", (e) => { S.x = e.target.value; refresh(); });
    multi("mv-hw", "hw"); multi("mv-fw", "fw"); multi("mv-run", "run"); multi("mv-chart", "chart");
    multi("mv-model", "model"); multi("mv-scen", "scen"); multi("mv-prec", "prec");
    const runsBox = document.getElementById("mv-runs");
    if (runsBox) runsBox.addEventListener("change", (e) => { S.runs = e.target.value.replace(/\s+/g, ""); writeState(); load(); });
    document.getElementById("mv-custom").addEventListener("change", (e) => {
      S.custom = e.target.value; if (S.custom) S.y = "usd_mtok_custom"; controls(); refresh(); });
    const asof = document.getElementById("mv-asof");
    if (asof) asof.addEventListener("change", (e) => { S.as_of = e.target.value; writeState(); load(); });
  }

  function layoutCharts() {
    const box = document.getElementById("mv-charts");
    const charts = visibleCharts();
    box.innerHTML = charts.map((c) => '<div class="chart mv-chart"><div class="mv-tools"><button data-csv="' + c.id +
      '">CSV</button> <button data-png="' + c.id + '">PNG</button> <span class="mv-notes" id="mv-notes-' + c.id +
      '"></span></div><div id="mv-chart-' + c.id + '" data-chart="' + c.id + '" style="min-height:460px"></div></div>').join("") ||
      "<p>No curve matches the filters.</p>";
    drawn.clear();
    box.querySelectorAll("[data-csv]").forEach((b) => b.addEventListener("click", () => {
      const id = Number(b.dataset.csv); download("infx-" + D.charts[id].label.replace(/[^\w.-]+/g, "_") + ".csv", csv(id)); }));
    box.querySelectorAll("[data-png]").forEach((b) => b.addEventListener("click", () => {
      const id = Number(b.dataset.png);
      window.Plotly.downloadImage(document.getElementById("mv-chart-" + id),
                                  { format: "png", filename: "infx-" + D.charts[id].label.replace(/[^\w.-]+/g, "_") }); }));
    if (observer) observer.disconnect();
    observer = "IntersectionObserver" in window ? new IntersectionObserver((entries) => {
      for (const e of entries) if (e.isIntersecting) { const id = Number(e.target.dataset.chart); if (!drawn.has(id)) draw(id); }
    }, { rootMargin: "200px" }) : null;
    const slots = box.querySelectorAll("[data-chart]");
    if (slots.length) draw(Number(slots[0].dataset.chart));  // the first chart at once, the rest when in view
    slots.forEach((d) => observer ? observer.observe(d) : draw(Number(d.dataset.chart)));
  }
  function refresh() {
    writeState();
    layoutCharts();
    const notes = D.notes.slice();
    const ym = metric(S.y);
    if (ym && ym.missing) notes.unshift(ym.label + ": " + ym.missing + " point(s) without a value (" + ym.missing_reason + ")");
    if (xKey() !== S.x) notes.unshift("x is TTFT (P99): an input-token metric is read against time to first token");
    document.getElementById("mv-summary").textContent = notes.join(" | ");
    verdict();
    drawCalc();
    drawHistory();
    if (!root.dataset.reliability) {  // below the fold: drawn when it comes into view
      root.dataset.reliability = "1";
      const rel = document.getElementById("mv-reliability");
      if ("IntersectionObserver" in window) {
        const io = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) { io.disconnect(); drawReliability(); } },
                                            { rootMargin: "200px" });
        io.observe(rel);
      } else drawReliability();
    }
    root.dataset.ready = "1";
    if (window.performance && performance.mark) performance.mark("infx-mainview-ready");
  }
  function start(data) {
    D = data;
    controls();
    refresh();
  }
  function load() {
    root.dataset.ready = "";
    if (cfg.embedded) { start(JSON.parse(document.getElementById(cfg.embedded).textContent)); return; }
    const q = new URLSearchParams();
    if (S.runs) q.set("runs", S.runs);
    if (S.as_of) q.set("as_of", S.as_of);
    fetch(cfg.api + "/mainview?" + q.toString()).then((r) => {
      if (!r.ok) return r.text().then((t) => { throw new Error(t); });
      return r.json();
    }).then(start).catch((e) => { document.getElementById("mv-summary").textContent = String(e.message || e); root.dataset.ready = "error"; });
  }

  // ---------------------------------------------------------------- calculator, historical, reliability
  // the envelope's value at interactivity t: linear between the two bracketing envelope points, the step's value
  // between the measured edge and the first envelope point, none beyond (infx.analysis.frontier.interpolate)
  function interpolate(m, t) {
    const env = Array.from(m.on).sort((a, b) => m.xs[a] - m.xs[b]);
    const all = m.idx.filter((i) => m.xs[i] != null && m.ys[i] != null && D.points.invalid[i] == null);
    if (!env.length) return null;
    const lo = Math.min(...all.map((i) => m.xs[i])), hi = Math.max(...all.map((i) => m.xs[i]));
    if (t < lo || t > hi) return null;
    const xs = env.map((i) => m.xs[i]), ys = env.map((i) => m.ys[i]);
    if (t > xs[xs.length - 1]) return null;
    if (t <= xs[0]) return ys[0];
    let j = xs.findIndex((x) => x >= t);
    if (xs[j] === t) return ys[j];
    const w = (t - xs[j - 1]) / (xs[j] - xs[j - 1]);
    return (1 - w) * ys[j - 1] + w * ys[j];
  }
  function calcModel() {
    const t = parseFloat(S.at);
    const charts = visibleCharts();
    if (!charts.length || !(t > 0)) return null;
    const cid = charts.some((c) => String(c.id) === S.cchart) ? Number(S.cchart) : charts[0].id;
    const tier = S.y.startsWith("usd_mtok_") && S.y.includes(":") ? S.y.split(":")[1] : Object.keys(D.tiers)[0];
    const keys = [["tput_gpu_total", "tok/s/GPU"], ["usd_mtok_total:" + tier, "$/Mtok (" + tier + ")"],
                  ["tput_mw_total", "tok/s/MW"]];
    const rows = visibleGroups().filter((g) => g.chart === cid).map((g) => {
      const idx = D.points.group.map((gg, i) => (gg === g.id ? i : -1)).filter((i) => i >= 0);
      const vals = keys.map(([k]) => {
        const ys = D.points.y[k], xs = D.points.x.interactivity, ym = metric(k);
        const on = envelope(idx, xs, ys, "max", ym.direction);
        return interpolate({ idx: idx, on: on, xs: xs, ys: ys }, t);
      });
      return { group: g, values: vals };
    });
    return { chart: cid, target: t, keys: keys, rows: rows };
  }
  function drawCalc() {
    const div = document.getElementById("mv-calc");
    if (!div || !window.Plotly) return;
    const cm = calcModel();
    if (!cm) { div.innerHTML = "<p><small>Set a target interactivity to compare every curve there.</small></p>"; return; }
    const traces = cm.keys.map(([k, label], n) => ({
      type: "bar", xaxis: "x" + (n ? n + 1 : ""), yaxis: "y" + (n ? n + 1 : ""), name: label,
      x: cm.rows.map((r) => r.group.label), y: cm.rows.map((r) => r.values[n]),
      text: cm.rows.map((r) => (r.values[n] == null ? (k.startsWith("usd") && r.group.not_priced[k.split(":")[1]] ?
             "not priced" : "out of range") : r.values[n].toPrecision(4))), textposition: "auto",
      customdata: cm.rows.map((r) => r.group.id), meta: { kind: "calc", key: k } }));
    const ax = (d) => ({ domain: d, automargin: true, tickfont: { size: 9 } });
    const layout = { title: { text: D.charts[cm.chart].label + " at " + cm.target + " tok/s/user (interpolated from measured points)",
                              font: { size: 13 } }, height: 380, showlegend: true, margin: { t: 40, b: 110 },
                     xaxis: ax([0, 0.3]), xaxis2: ax([0.35, 0.65]), xaxis3: ax([0.7, 1]),
                     yaxis: { anchor: "x", title: { text: cm.keys[0][1] } }, yaxis2: { anchor: "x2", title: { text: cm.keys[1][1] } },
                     yaxis3: { anchor: "x3", title: { text: cm.keys[2][1] } } };
    div.innerHTML = "";
    window.Plotly.react(div, traces, layout, { displaylogo: false, responsive: true });
    div.on("plotly_click", (ev) => { const p = ev.points && ev.points[0]; if (p) pick(p.customdata); });
    div.dataset.drawn = "1";
  }
  function calcCsv() {
    const cm = calcModel();
    if (!cm) return "";
    const rows = [["chart", "curve", "target_interactivity"].concat(cm.keys.map((k) => k[0])).join(",")];
    for (const r of cm.rows) rows.push([D.charts[cm.chart].label, r.group.label, cm.target].concat(
      r.values.map((v) => (v == null ? "" : v))).map((v) => (/[",]/.test(String(v)) ? '"' + v + '"' : v)).join(","));
    return rows.join("\n") + "\n";
  }

  function drawHistory() {
    const box = document.getElementById("mv-history");
    if (!box) return;
    const sel = list(S.sel).map(Number);
    if (!cfg.api) { box.innerHTML = "<p><small>Historical views read the store's snapshots: <code>infx serve</code>.</small></p>"; return; }
    const t = parseFloat(S.at);
    if (!sel.length || !(t > 0)) { box.innerHTML = "<p><small>Pick a curve and set a target interactivity for its history.</small></p>"; return; }
    const g = D.groups[sel[sel.length - 1]], c = D.charts[g.chart];
    const q = new URLSearchParams({ model: c.model, scenario: c.scenario, precision: c.precision, hardware: g.hardware,
                                    framework: g.framework, spec: g.spec, disagg: g.disagg ? "1" : "0", target: t,
                                    x: "interactivity", y: S.y === "usd_mtok_custom" ? "tput_gpu_total" : S.y });
    if (c.isl != null) q.set("isl", c.isl);
    if (c.osl != null) q.set("osl", c.osl);
    fetch(cfg.api + "/history?" + q.toString()).then((r) => r.json()).then((h) => {
      box.innerHTML = '<div class="mv-tools"><button id="mv-history-csv">CSV</button></div><div id="mv-history-chart"></div>';
      const pts = h.points.filter((p) => p.value != null);
      const trace = { type: "scatter", mode: "lines+markers", line: { shape: "hv" }, name: g.hardware + " " + g.framework,
        x: pts.map((p) => new Date(p.at * 1000).toISOString()), y: pts.map((p) => p.value),
        text: pts.map((p) => p.run_id + (p.step ? " (new image or recipe)" : "")),
        marker: { size: pts.map((p) => (p.step ? 13 : 7)), symbol: pts.map((p) => (p.step ? "star" : "circle")) },
        error_y: { type: "data", symmetric: false, array: pts.map((p) => (p.hi == null ? 0 : p.hi - p.value)),
                   arrayminus: pts.map((p) => (p.lo == null ? 0 : p.value - p.lo)) } };
      window.Plotly.react("mv-history-chart", [trace], { title: { text: "History of " + g.hardware + " " + g.framework + " " +
        c.label + ": " + metric(h.y).label + " at " + t + " tok/s/user", font: { size: 13 } }, height: 360 },
        { displaylogo: false });
      document.getElementById("mv-history-csv").addEventListener("click", () => download("infx-history.csv",
        "date,run_id,value,lo,hi,step,note\n" + h.points.map((p) => [p.date, p.run_id || "", p.value == null ? "" : p.value,
          p.lo == null ? "" : p.lo, p.hi == null ? "" : p.hi, p.step, '"' + (p.note || "").replace(/"/g, '""') + '"'].join(",")).join("\n") + "\n"));
    });
  }

  function drawReliability() {
    const box = document.getElementById("mv-reliability");
    if (!box) return;
    const show = (rows) => {
      if (!rows || !rows.length) { box.innerHTML = "<p>No runs.</p>"; return; }
      const head = "<tr><th>run</th><th>hardware</th><th>runner</th><th>done</th><th>failed</th><th>skipped</th>" +
                   "<th>success</th><th>failure classes</th></tr>";
      box.innerHTML = '<div class="mv-tools"><button id="mv-rel-csv">CSV</button></div><div id="mv-rel-chart"></div>' +
        '<table id="mv-rel-table">' + head + rows.map((r) => "<tr><td>" + esc(r.run_id) + "</td><td>" + esc(r.hardware) +
        "</td><td>" + esc(r.runner) + "</td><td class=num>" + r.done + "</td><td class=num>" + r.failed + "</td><td class=num>" +
        r.skipped + "</td><td class=num>" + (r.done + r.failed ? (100 * r.done / (r.done + r.failed)).toFixed(1) + " %" : "&ndash;") +
        "</td><td>" + esc(Object.entries(r.failure_classes).map(([k, v]) => k + " " + v).join(", ")) + "</td></tr>").join("") + "</table>";
      const cat = rows.map((r) => r.run_id + " · " + r.hardware + " · " + r.runner);
      const bar = (k, colour) => ({ type: "bar", name: k, x: cat, y: rows.map((r) => r[k]), marker: { color: colour } });
      window.Plotly.react("mv-rel-chart", [bar("done", "#2ca02c"), bar("failed", "#d62728"), bar("skipped", "#aaaaaa")],
                          { barmode: "stack", height: 320, title: { text: "Points per run, hardware and runner", font: { size: 13 } },
                            margin: { b: 120 } }, { displaylogo: false });
      document.getElementById("mv-rel-csv").addEventListener("click", () => download("infx-reliability.csv",
        "run_id,hardware,runner,done,failed,skipped,failure_classes\n" + rows.map((r) => [r.run_id, r.hardware, r.runner, r.done,
          r.failed, r.skipped, '"' + Object.entries(r.failure_classes).map(([k, v]) => k + " " + v).join("; ") + '"'].join(",")).join("\n") + "\n"));
    };
    if (cfg.api) fetch(cfg.api + "/reliability").then((r) => r.json()).then(show);
    else show(D.reliability);
  }
  function bindExtras() {
    const at = document.getElementById("mv-at");
    at.value = S.at;
    at.addEventListener("change", (e) => { S.at = e.target.value; writeState(); drawCalc(); drawHistory(); });
    document.getElementById("mv-calc-csv").addEventListener("click", () => download("infx-calculator.csv", calcCsv()));
    document.getElementById("mv-calc-png").addEventListener("click", () =>
      window.Plotly.downloadImage(document.getElementById("mv-calc"), { format: "png", filename: "infx-calculator" }));
  }

  readState();
  bind();
  bindExtras();
  load();
  window.addEventListener("hashchange", () => {  // a link followed within the page
    const before = S.runs + "|" + S.as_of;
    for (const k of Object.keys(S)) S[k] = "";
    S.x = "interactivity"; S.y = "tput_gpu_total";
    readState();
    if (S.runs + "|" + S.as_of !== before && cfg.api) { load(); return; }
    document.getElementById("mv-at").value = S.at;
    if (D) { controls(); refresh(); }
  });
  window.infxMainView = { state: S, csv: csv, calcModel: calcModel, calcCsv: calcCsv, chartModel: chartModel, draw: draw,
                          envelopeOf: (chartId) => { const m = chartModel(chartId); const out = {};
                            m.groups.forEach((g) => { out[g.group.label] = Array.from(g.on).map((i) => D.points.point_id[i]).sort(); });
                            return out; } };
})();
