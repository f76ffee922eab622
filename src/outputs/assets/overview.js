// overview.js - the viewer's Overview page: the run's summary: steps, breakdown, KPIs, hosts, top lines and findings.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

// ---- overview ----------------------------------------------------------------------------------
function stepChart(steps) {
  if (!steps.length) return "<p class='muted'>No steps found.</p>";
  const W = 900, H = 220, pad = 30, max = Math.max(...steps.map((s) => s.duration_ms)) || 1;
  const bw = Math.max(2, (W - pad) / steps.length - 2);
  let bars = "";
  steps.forEach((s, i) => {
    let y = H - pad;
    const x = pad + i * (bw + 2);
    PARTS.forEach((p, k) => {
      const h = (s[p + "_ms"] / max) * (H - 2 * pad);
      if (h <= 0) return;
      y -= h;
      bars += `<rect x="${x}" y="${y}" width="${bw}" height="${h}" fill="${PART_COLORS[k]}"><title>step ${s.step} ${p} ${ms(s[p + "_ms"])} ms</title></rect>`;
    });
  });
  const legend = PARTS.map((p, k) => `<span><i style="background:${PART_COLORS[k]}"></i>${p}</span>`).join("");
  return `<svg id="step-chart" width="${W}" height="${H}" role="img"><text x="2" y="12" class="muted">${ms(max)} ms</text>${bars}</svg>
    <div class="legend">${legend}</div>`;
}

async function overview() {
  const d = await runApi("overview");
  if (!state.host) state.hosts[state.run] = d.hosts;
  const hosts = await runHosts();
  const s = d.step_summary;
  const dev = d.devices.map((v) => `${esc(v.name)} (${esc(v.host)}) busy ${ms(v.busy_ms)} ms, ${v.ops} ops, ` +
    `idle ${v.idle_pct.toFixed(1)}%`).join("<br>") +
    `<br><small>idle: of each device's first-to-last activity (XProf's window), ${d.device_idle_pct.toFixed(1)}% ` +
    `over all; utilization and host overhead below: of step time</small>`;
  const kpis = d.kpis.map((k) => `<tr><td>${esc(k.name)}</td><td class="num">${k.value.toFixed(2)} ${esc(k.unit)}</td>
    <td class="rating-${esc(k.rating)}">${esc(k.rating)}</td></tr>`).join("");
  const findings = d.findings.length ? d.findings.map((f) => `<div class="finding ${esc(f.severity)}">
    <b class="severity-${esc(f.severity)}">${esc(f.title)}</b><br>${esc(f.evidence)}<br><i>Fix:</i> ${esc(f.fix)}</div>`).join("")
    : "<p>No findings: nothing stands out.</p>";
  const breakdown = PARTS.map((p) => `<td class="num">${ms(s.breakdown_ms[p])}</td>`).join("");
  $("#page").innerHTML = `<div class="toolbar">${hostPicker(hosts)}</div>
    <h2>${esc(d.path)}</h2>
    <p>${esc(d.platform.toUpperCase())} · hosts ${esc(d.hosts.join(", "))} · ${d.events.toLocaleString()} events · span ${ms(d.span_ms)} ms</p>
    <p>${dev}</p>
    <h2>Steps</h2>
    <p id="step-summary">${s.count} steps (${esc(s.method)}), mean ${ms(s.mean_ms)} ms, median ${ms(s.median_ms)} ms, p90 ${ms(s.p90_ms)} ms</p>
    ${stepChart(d.steps)}
    <table><tr>${PARTS.map((p) => `<th class="num">${p} ms</th>`).join("")}</tr><tr>${breakdown}</tr></table>
    ${hostsSection(d)}
    ${linesSection(d)}
    <h2>KPIs</h2><table>${kpis}</table>
    <h2>Findings</h2><div id="findings">${findings}</div>`;
  onHostPick(() => go("overview"));
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
    <table id="hosts-table"><tr><th>host</th><th>clock</th><th class="num">offset ms</th><th class="num">steps</th>
      <th class="num">mean step ms</th><th class="num">collective ms</th><th class="num">waiting ms</th>
      <th class="num">idle ms</th><th class="num">straggler in</th><th>top op</th></tr>${rows}</table>
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
  return `<h2>Top source lines</h2><table id="lines-table"><tr><th>line</th><th>function</th><th class="num">self ms</th>
      <th class="num">% device</th><th>top ops</th></tr>${rows}</table>
    <p class="muted">${d.lines.length} line${d.lines.length === 1 ? "" : "s"} with device time ·
      <a href="#/flame?${esc(p)}">by call stack</a></p>`;
}
