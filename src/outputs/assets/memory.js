// memory.js - the viewer's Memory page: allocator use over time.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

// ---- memory ------------------------------------------------------------------------------------
async function memory() {
  const d = await runApi("memory");
  if (!d.memory.length) { $("#page").innerHTML = "<p>This profile records no allocations.</p>"; return; }
  const W = 900, H = 260, pad = 40;
  const series = Object.entries(d.memory_timeline);
  const tMax = Math.max(...series.flatMap(([, pts]) => pts.map((p) => p[0])), 1e-9);
  const bMax = Math.max(...series.flatMap(([, pts]) => pts.map((p) => p[1])), 1);
  const lines = series.map(([name, pts], k) => {
    const path = pts.map((p, i) => `${i ? "L" : "M"}${(pad + (p[0] / tMax) * (W - pad)).toFixed(1)},${(H - pad - (p[1] / bMax) * (H - 2 * pad)).toFixed(1)}`).join("");
    return `<path d="${path}" fill="none" stroke="${PART_COLORS[k % 8]}" stroke-width="1.5"><title>${esc(name)}</title></path>`;
  }).join("");
  const rows = d.memory.map((m) => `<tr>${Object.values(m).map((v) => `<td>${esc(typeof v === "number" ? +v.toFixed(3) : v)}</td>`).join("")}</tr>`).join("");
  $("#page").innerHTML = `<h2>Memory in use</h2><svg id="memory-chart" width="${W}" height="${H}">${lines}
    <text x="2" y="14">${(bMax / 1e6).toFixed(1)} MB</text><text x="${W - 80}" y="${H - 5}">${ms(tMax)} ms</text></svg>
    <table><tr>${Object.keys(d.memory[0]).map((k) => `<th>${esc(k)}</th>`).join("")}</tr>${rows}</table>`;
}
