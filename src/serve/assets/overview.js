// overview.js - the viewer's Overview page: the run's summary: steps, breakdown, KPIs, hosts, top lines and
// findings; with ?step=N, one step's view (its breakdown, top ops and scopes, a link into the Timeline).
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

// The headings of a table's columns, by key: each column's viewer label from columns.js (generated
// from the library's column descriptors), numbers right-aligned.
function colHeads(table, keys) {
  return keys.map((k) => {
    const c = JP_COLUMNS[table].find((col) => col.key === k);
    return `<th${c.type === "string" ? "" : ' class="num"'}>${esc(c.label)}</th>`;
  }).join("");
}

// ---- overview ----------------------------------------------------------------------------------
// The step chart: the library draws it (charts.c, the HTML report's chart, served by the chart
// endpoint); each bar's <title> names its step and times. Hovering a bar repeats its title under the
// chart, clicking it opens the step view (#/overview?step=N).
function stepChart(svg, steps) {
  if (!steps.length) return "<p class='muted'>No steps found.</p>";
  return `<div id="step-chart-box">${svg}</div><div id="step-hover" class="muted">&nbsp;</div>
    <p class="muted">click a step for its breakdown, top ops and scopes</p>`;
}

function onStepChart() {
  document.querySelectorAll("#step-chart g.step").forEach((g) => {
    const tip = g.querySelector("title").textContent, m = /^step (-?\d+):/.exec(tip);
    if (!m) return;
    g.dataset.step = m[1];
    g.onclick = () => go("overview", { step: m[1] });
    g.onmouseenter = () => { $("#step-hover").textContent = tip; };
  });
}

// A run some of whose hosts are here only as their summaries (process 0's copy of a pod's run, or
// the summaries alone copied to one place): the hosts side by side and the findings come from the
// summaries; what needs every event does not.
function podNote(d) {
  const run = state.runs.find((r) => String(r.id) === state.run);
  const others = run && run.hosts.length ? "the other pages show the files here"
    : "no host's file is here, so the other pages have nothing to read";
  return `<p id="pod-note" class="muted">${d.summarized_hosts} of ${d.hosts.length} hosts read from their summaries ` +
    `(jaxprof summarize): their steps, clocks, stragglers and findings are below; the run's steps, KPIs, ops and ` +
    `timeline need every host's file (${others}).</p>`;
}

// A KPI's value, or n/a where the profile cannot tell (no peaks, no sizes: rating "n/a").
function kpiValue(k) { return k.rating === "n/a" ? "n/a" : `${k.value.toFixed(2)} ${esc(k.unit)}`; }

async function overview() {
  const step = state.params.get("step");
  if (step !== null && step !== "") return stepView(step);
  const pending = runChart("steps"); // asked for beside the overview, awaited only where it is drawn:
  pending.catch(() => {});           // a pod's run merged from summaries has no steps chart
  const d = await runApi("overview");
  const chart = d.summarized_hosts ? null : await pending;
  if (!state.host) state.hosts[state.run] = d.hosts;
  const hosts = await runHosts();
  // the per-stream split and the queue series are the launch document's (not the report's)
  const launch = d.devices.some((v) => v.launched > 0) ? await runApi("launch") : null;
  const s = d.step_summary;
  const dev = d.devices.map((v) => `${esc(v.name)} (${esc(v.host)}) busy ${ms(v.busy_ms)} ms, ${v.ops} ops, ` +
    `idle ${v.idle_pct.toFixed(1)}%`).join("<br>") +
    `<br><small>idle: of each device's first-to-last activity (XProf's window), ${d.device_idle_pct.toFixed(1)}% ` +
    `over all; utilization and host overhead below: of step time</small>`;
  const kpis = d.kpis.map((k) => `<tr><td>${esc(k.name)}</td><td class="num">${kpiValue(k)}</td>
    <td class="rating-${k.rating === "above peak" ? "bad" : esc(k.rating)}">${esc(k.rating)}</td></tr>`).join("");
  const breakdown = PARTS.map((p) => `<td class="num">${ms(s.breakdown_ms[p])}</td>`).join("");
  $("#page").innerHTML = `<div class="toolbar">${hostPicker(hosts)}</div>
    <h2>${esc(d.path)}</h2>
    <p>platform ${esc(d.platform)} · hosts ${esc(d.hosts.join(", "))} · ${d.events.toLocaleString()} events · span ${ms(d.span_ms)} ms</p>
    ${healthBanner(d.capture_health || [])}
    <p>${dev}</p>
    ${idleSection(d.devices, launch)}
    ${d.summarized_hosts ? podNote(d) : `<h2>Steps</h2>
    <p id="step-summary">${s.count} steps (${esc(s.method)}), mean ${ms(s.mean_ms)} ms, median ${ms(s.median_ms)} ms, p90 ${ms(s.p90_ms)} ms</p>
    ${stepChart(chart, d.steps)}
    <table><tr>${PARTS.map((p) => `<th class="num">${p} ms</th>`).join("")}</tr><tr>${breakdown}</tr></table>`}
    ${hostsSection(d)}
    ${linesSection(d)}
    ${d.summarized_hosts ? "" : `<h2>KPIs</h2><table id="kpis">${kpis}</table>`}
    <h2>Findings</h2><div id="findings">${findingsHtml(d.findings)}</div>`;
  onStepChart();
  onHostPick(() => go("overview"));
  const tl = $("#idle-timeline");
  if (tl) tl.onclick = (ev) => { ev.preventDefault(); go("timeline"); };
  onIdleStreams();
  onQueueCharts(launch);
}

// Each device's idle time by cause (launch.c's device columns), where launches were matched to
// their device work (GPU captures with correlation ids): nothing otherwise. One stacked bar per
// device on one scale, the numbers beside it, and what each part means.
const IDLE_PARTS = [
  ["idle_host_ms", "waiting for the host", "#e15759",
    "the launch call of the work that ended the gap began after the device went idle: the host was late to launch"],
  ["idle_kernel_ms", "kernel to kernel", "#f28e2b",
    "gaps under 10 µs before work launched earlier: the launch overhead between queued kernels"],
  ["idle_other_ms", "other", "#bab0ac",
    "longer gaps before work launched earlier (a dependency, a synchronisation), gaps while the host compiled, or work whose launch is unknown"],
];
function idleBar(v, width) {
  const total = IDLE_PARTS.reduce((t, [k]) => t + v[k], 0);
  return `<div class="idle-bar" style="width:${width.toFixed(1)}px">${IDLE_PARTS.map(([k, label, c]) => v[k] > 0
    ? `<span style="width:${(100 * v[k] / total).toFixed(2)}%;background:${c}" title="${label} ${ms(v[k])} ms"></span>` : "").join("")}</div>`;
}
function idleSection(devices, launch) {
  const devs = devices.filter((v) => v.launched > 0);
  if (!devs.length) return "";
  const streams = (launch && launch.launch_streams) || [];
  const of = (v) => streams.filter((s) => s.device === v.name);
  const sum = (v) => IDLE_PARTS.reduce((t, [k]) => t + v[k], 0), max = Math.max(...devs.map(sum), 1e-9);
  const rows = devs.map((v, i) => {
    const mine = of(v), open = mine.length > 1
      ? ` <button class="idle-toggle" data-dev="${i}" title="this device's idle split per stream">▸ ${mine.length} streams</button>` : "";
    return `<tr class="idle-dev"><td>${esc(v.name)}${open}</td><td>${idleBar(v, 300 * sum(v) / max)}</td>
      ${IDLE_PARTS.map(([k]) => `<td class="num">${ms(v[k])}</td>`).join("")}<td class="num">${v.launched}</td>
      <td class="num">${v.queue_max}</td><td class="num">${v.queue_mean.toFixed(2)}</td></tr>` +
      (mine.length > 1 ? `<tr class="idle-streams" data-dev="${i}" hidden><td colspan="8">${streamTable(mine)}</td></tr>` : "");
  }).join("");
  return `<h2>Device idle by cause</h2>
    <table id="idle-table"><tr><th>device</th><th></th>${IDLE_PARTS.map(([, label, c]) =>
      `<th class="num"><i class="idle-sw" style="background:${c}"></i>${label} ms</th>`).join("")}
      <th class="num">launches</th><th class="num">queue max</th><th class="num">queue mean</th></tr>${rows}</table>
    <ul id="idle-help" class="muted">${IDLE_PARTS.map(([, label, , help]) => `<li><b>${label}</b>: ${help}</li>`).join("")}
      <li>Idle here: the gaps between the device's launched work (all streams together), from its first to its last; the
      <a href="#" id="idle-timeline">Timeline</a>'s <i>Launch delay</i> rows show each launch from its call to its work.</li>
      ${streams.length > devs.length ? `<li><b>per stream</b> (a device with several: ▸): the same rule on each stream alone, from
      its first event to its last, busy being the union of its events; a copy stream waits for the host while compute runs,
      so the streams' parts add up to more than the device's</li>` : ""}</ul>
    ${queueSection(devs, launch)}`;
}

// One device's streams (the launch document's launch_streams): a bar of each stream's first-to-last
// window, busy then the three idle parts (they add up to it), bars on one scale within the device.
const STREAM_BUSY = "#4e79a7";
function streamTable(streams) {
  const win = (s) => s.busy_ms + s.idle_host_ms + s.idle_kernel_ms + s.idle_other_ms;
  const max = Math.max(...streams.map(win), 1e-9);
  const rows = streams.map((s) => {
    const parts = [["busy_ms", "busy", STREAM_BUSY], ...IDLE_PARTS].map(([k, label, c]) => s[k] > 0
      ? `<span style="width:${(100 * s[k] / win(s)).toFixed(2)}%;background:${c}" title="${label} ${ms(s[k])} ms"></span>` : "").join("");
    return `<tr><td>${esc(s.stream)}</td><td><div class="idle-bar" style="width:${(240 * win(s) / max).toFixed(1)}px">${parts}</div></td>
      <td class="num">${ms(s.busy_ms)}</td>${IDLE_PARTS.map(([k]) => `<td class="num">${ms(s[k])}</td>`).join("")}
      <td class="num">${s.events}</td><td class="num">${s.launched}</td><td class="num">${ms(s.first_ms)}</td><td class="num">${ms(s.last_ms)}</td></tr>`;
  }).join("");
  return `<table class="idle-stream-table"><tr><th>stream</th><th>first to last</th>
    <th class="num"><i class="idle-sw" style="background:${STREAM_BUSY}"></i>busy ms</th>${IDLE_PARTS.map(([, label, c]) =>
      `<th class="num"><i class="idle-sw" style="background:${c}"></i>${label} ms</th>`).join("")}
    <th class="num">events</th><th class="num">launched</th><th class="num">first ms</th><th class="num">last ms</th></tr>${rows}</table>`;
}
function onIdleStreams() {
  document.querySelectorAll("#idle-table button.idle-toggle").forEach((b) => {
    b.onclick = () => {
      const row = document.querySelector(`#idle-table tr.idle-streams[data-dev="${b.dataset.dev}"]`);
      row.hidden = !row.hidden;
      b.textContent = `${row.hidden ? "▸" : "▾"} ${b.textContent.slice(2)}`;
    };
  });
}

// ---- the launch queue's depth over time (launch --json's launch_queue), a step line per device -------
const QUEUE_W = 640, QUEUE_H = 130, QUEUE_L = 44, QUEUE_R = 12, QUEUE_T = 10, QUEUE_B = 28;
function queueSection(devs, launch) {
  const series = ((launch && launch.launch_queue && launch.launch_queue.devices) || []).filter((q) => q.points.length);
  if (!series.length) return "";
  const charts = series.map((q) => {
    const dev = devs.find((v) => v.name === q.device);
    const note = q.downsampled ? `<div class="muted queue-note">downsampled: max per ${ms(q.bucket_ms)} ms bucket
      (${q.changes.toLocaleString()} changes, ${q.points.length.toLocaleString()} points drawn)</div>`
      : `<div class="muted queue-note">${q.changes.toLocaleString()} changes, every one drawn</div>`;
    return `<div class="queue-box"><div><b>${esc(q.device)}</b>${dev ? ` <span class="muted">max ${dev.queue_max} · mean
      ${dev.queue_mean.toFixed(2)}</span>` : ""}</div>${queueChart(q)}<div class="queue-hover muted">&nbsp;</div>${note}</div>`;
  }).join("");
  return `<h3>Launch queue depth over time</h3>
    <p class="muted">launches outstanding, each from its call's start to its work's end (ms from the capture's start); hover for the depth</p>
    <div class="columns" id="queue-charts">${charts}</div>`;
}

// The series as a step line: each point's depth holds until the next point.
function queueChart(q) {
  const pts = q.points, t0 = pts[0][0], t1 = Math.max(pts[pts.length - 1][0], t0 + 1e-6);
  const dmax = Math.max(1, ...pts.map((p) => p[1]));
  const [top, step] = queueNice(dmax);
  const X = (t) => QUEUE_L + (t - t0) / (t1 - t0) * (QUEUE_W - QUEUE_L - QUEUE_R);
  const Y = (d) => QUEUE_H - QUEUE_B - d / top * (QUEUE_H - QUEUE_T - QUEUE_B);
  let d = `M${X(pts[0][0]).toFixed(2)} ${Y(0).toFixed(2)}V${Y(pts[0][1]).toFixed(2)}`;
  for (let i = 1; i < pts.length; i++) d += `H${X(pts[i][0]).toFixed(2)}V${Y(pts[i][1]).toFixed(2)}`;
  let grid = "";
  for (let v = 0; v <= top; v += step) {
    grid += `<line x1="${QUEUE_L}" x2="${QUEUE_W - QUEUE_R}" y1="${Y(v)}" y2="${Y(v)}" stroke="#eee"/>
      <text x="${QUEUE_L - 4}" y="${Y(v) + 4}" text-anchor="end">${v}</text>`;
  }
  for (let i = 0; i <= 4; i++) {
    const t = t0 + (t1 - t0) * i / 4;
    grid += `<text x="${X(t)}" y="${QUEUE_H - QUEUE_B + 14}" text-anchor="${i === 0 ? "start" : i === 4 ? "end" : "middle"}">${ms(t)}</text>`;
  }
  return `<svg class="queue-chart" width="${QUEUE_W}" height="${QUEUE_H}" data-device="${esc(q.device)}" data-t0="${t0}" data-t1="${t1}"
    data-top="${top}">${grid}<line x1="${QUEUE_L}" x2="${QUEUE_W - QUEUE_R}" y1="${Y(0)}" y2="${Y(0)}" stroke="#999"/>
    <path class="queue-line" d="${d}" fill="none" stroke="#4e79a7" stroke-width="1.2"/>
    <line class="queue-cursor" y1="${QUEUE_T}" y2="${QUEUE_H - QUEUE_B}" stroke="#1d2330" stroke-width=".6" visibility="hidden"/>
    <text x="${(QUEUE_L + QUEUE_W - QUEUE_R) / 2}" y="${QUEUE_H - 4}" text-anchor="middle">ms</text></svg>`;
}
// The axis: a tick step of 1, 2, 2.5 or 5 times a power of ten (whole launches) giving at most 6
// ticks over v, and the top, the first tick at or above v.
function queueNice(v) {
  const want = v / 6, p = 10 ** Math.floor(Math.log10(Math.max(want, 1)));
  const step = Math.max(1, [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= want && Number.isInteger(s)));
  return [Math.ceil(v / step) * step, step];
}
// Hover: the depth at the pointer's time, the last point at or before it.
function onQueueCharts(launch) {
  const series = (launch && launch.launch_queue && launch.launch_queue.devices) || [];
  document.querySelectorAll("#queue-charts .queue-box").forEach((box) => {
    const svg = box.querySelector("svg"), out = box.querySelector(".queue-hover"), cur = svg.querySelector(".queue-cursor");
    const mine = series.find((x) => x.device === svg.dataset.device), q = mine.points, down = mine.downsampled, t0 = +svg.dataset.t0, t1 = +svg.dataset.t1;
    svg.onmousemove = (ev) => {
      const r = svg.getBoundingClientRect(), x = ev.clientX - r.left;
      const t = t0 + (x - QUEUE_L) / (QUEUE_W - QUEUE_L - QUEUE_R) * (t1 - t0);
      if (t < t0 || t > t1) { cur.setAttribute("visibility", "hidden"); out.innerHTML = "&nbsp;"; return; }
      let lo = 0, hi = q.length - 1;
      while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (q[mid][0] <= t) lo = mid; else hi = mid - 1; }
      cur.setAttribute("x1", x); cur.setAttribute("x2", x); cur.setAttribute("visibility", "visible");
      out.textContent = `${ms(t)} ms: ${q[lo][1]} outstanding${down ? " (the most in its bucket)" : ""}`;
    };
    svg.onmouseleave = () => { cur.setAttribute("visibility", "hidden"); out.innerHTML = "&nbsp;"; };
  });
}
// What the capture itself lacks (the JSON's capture_health): the profiler's own errors and
// warnings, devices that recorded nothing, modules without HLO; nothing for a complete capture.
function healthBanner(items) {
  if (!items.length) return "";
  const bad = items.some((h) => h.kind === "error" || h.kind === "empty device");
  const rows = items.map((h) => `<li><b>${esc(h.kind)}</b> (${esc(h.host)}): ${esc(h.text)}</li>`).join("");
  return `<div id="capture-health" class="finding ${bad ? "bad" : "warning"}"><b class="severity-${bad ? "bad" : "warning"}">
    Capture health: the capture is incomplete</b><ul>${rows}</ul></div>`;
}

function findingsHtml(findings) {
  return findings.length ? findings.map((f) => `<div class="finding ${esc(f.severity)}">
    <b class="severity-${esc(f.severity)}">${esc(f.title)}</b><br>${esc(f.evidence)}<br><i>Fix:</i> ${esc(f.fix)}</div>`).join("")
    : "<p>No findings: nothing stands out.</p>";
}

// ---- one step: its breakdown, top ops and scopes, from the API's step window (?steps=N:N) --------
// The Timeline reads its window from the hash: start_us/end_us, and start/end in ms as it did before.
function timelineHash(startMs, endMs) {
  const p = new URLSearchParams({ run: state.run, start_us: (startMs * 1000).toFixed(3), end_us: (endMs * 1000).toFixed(3),
    start: String(startMs), end: String(endMs) });
  if (state.host) p.set("host", state.host);
  return `#/timeline?${p}`;
}

function opCell(r) { return `<td class="wrap" title="${esc(r.op_name || "")}">${wrapName(r.name)}</td>`; }

async function stepView(step) {
  const win = `steps=${encodeURIComponent(step)}:${encodeURIComponent(step)}`;
  const [all, d, o, sc] = await Promise.all([runApi("steps"), runApi(`overview?${win}`), runApi(`ops?${win}`), runApi(`scopes?${win}`)]);
  const s = d.steps[0], i = all.steps.findIndex((x) => String(x.step) === String(step));
  const prev = all.steps[i - 1], next = all.steps[i + 1];
  const parts = PARTS.filter((p) => s[p + "_ms"] > 0);
  const bar = parts.map((p) => { const pct = 100 * s[p + "_ms"] / s.duration_ms;
    return `<span style="width:${pct.toFixed(2)}%;background:${PART_COLORS[PARTS.indexOf(p)]}${p === "idle" ? ";color:#1d2330" : ""}"
      title="${p} ${ms(s[p + "_ms"])} ms">${pct >= 8 ? `${p} ${pct.toFixed(0)}%` : ""}</span>`; }).join("");
  const opTime = o.ops.reduce((t, r) => t + r.self_ms, 0) || 1;
  const ops = [...o.ops].sort((a, b) => b.self_ms - a.self_ms).slice(0, 15).map((r) => `<tr>${opCell(r)}
    <td>${esc(r.category)}</td><td class="num">${r.count}</td><td class="num">${ms(r.self_ms)}</td><td class="num">${ms(r.total_ms)}</td>
    <td class="num">${(100 * r.self_ms / opTime).toFixed(1)}</td><td class="clip" title="${esc(r.scope)}">${esc(r.scope)}</td></tr>`).join("");
  // device scopes (named_scope paths), then host ones (annotations, JAX runtime events), 10 of each
  const scopes = (device, n) => sc.scopes.filter((r) => (r.kind === "device") === device).slice(0, n).map((r) => `<tr>
    <td class="clip" title="${esc(r.scope)}">${esc(r.scope)}</td>${device ? "" : `<td>${esc(r.kind)}</td>`}<td class="num">${r.count}</td>
    <td class="num">${ms(r.total_ms)}</td><td class="num">${ms(r.self_ms)}</td></tr>`).join("");
  const scopeTable = (id, device, title) => { const rows = scopes(device, 10); return rows ? `<div><h3>${title}</h3><table id="${id}">
    <tr>${colHeads("scopes", device ? ["scope", "count", "total_ms", "self_ms"] : ["scope", "kind", "count", "total_ms", "self_ms"])}</tr>${rows}</table></div>` : ""; };
  const nav = (t, label) => t ? `<button class="step-nav" data-step="${t.step}">${label}</button>` : "";
  const opsLink = new URLSearchParams({ run: state.run, steps: `${step}:${step}` });
  if (state.host) opsLink.set("host", state.host);
  $("#page").innerHTML = `<div class="toolbar"><a href="#" id="step-back">← all steps</a>${nav(prev, `‹ step ${prev && prev.step}`)}
      ${nav(next, `step ${next && next.step} ›`)}<a class="button" id="step-timeline" href="${timelineHash(s.start_ms, s.start_ms + s.duration_ms)}">Open in Timeline</a></div>
    <h2 id="step-title">Step ${esc(s.step)}</h2>
    <p id="step-facts">${ms(s.duration_ms)} ms, from ${ms(s.start_ms)} to ${ms(s.start_ms + s.duration_ms)} ms · ${s.ops} op occurrences ·
      ${s.compiles} compile${s.compiles === 1 ? "" : "s"}${s.outlier ? " · <b class='rating-bad'>outlier</b> (over 1.5× the median step)" : ""}
      ${s.no_device_work ? " · <b class='rating-bad'>no device work</b> (no device op ran in it: left out of the run's step numbers)" : ""}
      ${s.issued_ms > 0 ? ` · issued by the host from ${ms(s.issued_start_ms)} to ${ms(s.issued_start_ms + s.issued_ms)} ms (its marker or dispatch)` : ""}
      · run median ${ms(all.step_summary.median_ms)} ms</p>
    <div class="stack-bar" id="step-bar">${bar}</div>
    <table id="step-breakdown"><tr>${parts.map((p) => `<th class="num">${p} ms</th>`).join("")}</tr>
      <tr>${parts.map((p) => `<td class="num">${ms(s[p + "_ms"])} <span class="muted">${(100 * s[p + "_ms"] / s.duration_ms).toFixed(0)}%</span></td>`).join("")}</tr></table>
    <h2>Top ops in this step</h2>
    <table id="step-ops"><tr><th>op</th><th>category</th><th class="num">count</th><th class="num">self ms</th>
      <th class="num">total ms</th><th class="num">% op time</th><th>scope</th></tr>${ops}</table>
    <p class="muted">${o.ops.length} op${o.ops.length === 1 ? "" : "s"} ran in this step · <a href="#/ops?${esc(opsLink)}">all of them on the Ops page</a></p>
    <div class="columns">${scopeTable("step-scopes", true, "Device scopes")}${scopeTable("step-host-scopes", false, "Host scopes (annotations and JAX runtime)")}</div>
    <h2>Findings in this step</h2><div id="findings">${findingsHtml(d.findings)}</div>`;
  $("#step-back").onclick = (ev) => { ev.preventDefault(); go("overview"); };
  document.querySelectorAll(".step-nav").forEach((b) => { b.onclick = () => go("overview", { step: b.dataset.step }); });
}

// Multi-host runs: each host's totals, then its step times side by side, the straggler marked.
function hostsSection(d) {
  if (!d.host_stats || d.host_stats.length < 2) return "";
  const names = d.host_stats.map((h) => h.host);
  const rows = d.host_stats.map((h) => `<tr><td>${esc(h.host)}</td><td>${esc(h.clock)}</td>
    <td class="num">${ms(h.offset_ms)}</td><td class="num">${h.steps}</td><td class="num">${ms(h.mean_step_ms)}</td>
    <td class="num">${ms(h.collective_ms)}</td><td class="num">${ms(h.wait_ms)}</td><td class="num">${ms(h.idle_ms)}</td>
    <td class="num">${h.straggler_steps}</td><td>${esc(h.top_op)}</td></tr>`).join("");
  const bySteps = new Map();
  for (const r of d.host_steps) {
    if (!bySteps.has(r.step)) bySteps.set(r.step, {});
    bySteps.get(r.step)[r.host] = r;
  }
  const steps = [...bySteps.entries()].map(([step, per]) => {
    const lag = d.stragglers.find((g) => g.step === step);
    return `<tr><td class="num">${step}</td>${names.map((n) => per[n]
      ? `<td class="num${lag && lag.host === n ? " straggler" : ""}">${ms(per[n].duration_ms)}</td>` : "<td></td>").join("")}
      <td>${lag ? `${esc(lag.host)} held the others ${ms(lag.behind_ms)} ms` : ""}</td></tr>`;
  }).join("");
  return `<h2>Hosts</h2><p id="clock-method">clocks aligned by ${esc(d.clock_method)}</p>
    <table id="hosts-table"><tr>${colHeads("host_stats", ["host", "clock", "offset_ms", "steps", "mean_step_ms", "collective_ms",
      "wait_ms", "idle_ms", "straggler_steps", "top_op"])}</tr>${rows}</table>
    <table id="host-steps"><tr><th class="num">step</th>${names.map((n) => `<th class="num">${esc(n)} ms</th>`).join("")}
      <th>straggler</th></tr>${steps}</table>`;
}

// The source lines whose ops took the most device time, first ten; nothing when no op has a line.
function linesSection(d) {
  if (!d.lines || !d.lines.length) return "";
  const rows = d.lines.slice(0, 10).map((l) => `<tr><td title="${esc(l.file)}"><code>${esc(l.source)}</code></td>
    <td>${esc(l.function)}</td><td class="num">${ms(l.self_ms)}</td><td class="num">${l.pct_device.toFixed(1)}</td>
    <td>${esc(l.ops)}</td></tr>`).join("");
  const p = new URLSearchParams({ run: state.run });
  if (state.host) p.set("host", state.host);
  return `<h2>Top source lines</h2><table id="lines-table"><tr>${colHeads("lines", ["source", "function", "self_ms", "pct_device",
      "ops"])}</tr>${rows}</table>
    <p class="muted">${d.lines.length} line${d.lines.length === 1 ? "" : "s"} with device time ·
      <a href="#/flame?${esc(p)}">by call stack</a></p>`;
}
