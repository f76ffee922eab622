// memory.js - the viewer's Memory page: allocator use over time, or why there is none and what to use instead.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

// ---- memory ------------------------------------------------------------------------------------
// No allocator events: say why (XLA:CPU records none) and what gives memory numbers instead.
function noAllocatorEvents(platform) {
  const why = platform === "cpu"
    ? `This is a CPU capture, and XLA:CPU records no allocator events: no allocations are recorded, so there is no
       memory timeline to draw.`
    : `This capture holds no allocator events (no allocations recorded): the device tracer was off, or the capture
       ended before any allocation.`;
  return `<div id="memory-none" class="notice"><h2>No memory timeline for this run</h2><p>${why}</p>
    <p>To see device memory:</p><ul>
      <li>capture on a GPU or TPU: their allocators record every allocation, and this page then shows bytes in use
        over time and the peak per memory space (<code>jaxprof memory</code> prints the same peaks);</li>
      <li>take a snapshot of live buffers from your program on any backend with
        <code>jax.profiler.save_device_memory_profile("memory.prof")</code> and open it with
        <code>pprof -http=: memory.prof</code> (what holds memory at that moment, by Python stack);</li>
      <li>on GPU/TPU, <code>jax.devices()[0].memory_stats()</code> gives the allocator's current and peak bytes in use.</li>
    </ul></div>`;
}

async function memory() {
  const d = await runApi("memory");
  if (!d.memory.length) { $("#page").innerHTML = noAllocatorEvents(d.platform); return; }
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
