// app.js - the jaxprof viewer's core: state, the JSON API, routing, the run and host pickers. Each page
// lives in its own file (overview.js, ops.js, ...), loaded after this one; start runs once all are.
"use strict";

const PARTS = ["compute", "collective", "h2d", "d2h", "d2d", "compile", "host", "idle"];
// the library's palette (src/render/charts.c), so the charts it draws and the page's own bars agree
const PART_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948", "#e15759", "#b07aa1", "#d3d3d3"];
// host: the picked host ("" for all), passed to every run request as ?host=; hosts: each run's host names.
const state = { runs: [], run: null, page: "overview", params: new URLSearchParams(), host: "", hosts: {} };
const $ = (sel) => document.querySelector(sel);

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function ms(v) { return v >= 100 ? v.toFixed(1) : v >= 1 ? v.toFixed(3) : v.toFixed(4); }
async function api(path) {
  const r = await fetch(path);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
function runApi(what, run) {
  const host = state.host ? `${what.includes("?") ? "&" : "?"}host=${encodeURIComponent(state.host)}` : "";
  return api(`/api/run/${encodeURIComponent(run || state.run)}/${what}${host}`);
}

// A chart as the library draws it for the HTML report ("steps", "roofline"): an HTML fragment.
async function runChart(name) {
  const host = state.host ? `?host=${encodeURIComponent(state.host)}` : "";
  const r = await fetch(`/api/run/${encodeURIComponent(state.run)}/chart/${name}${host}`);
  const body = await r.text();
  if (!r.ok) throw new Error(JSON.parse(body).error || r.statusText);
  return body;
}

// ---- routing: #/<page>?run=<id>&... -----------------------------------------------------------
function parseHash() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  state.page = path || "overview";
  state.params = new URLSearchParams(query || "");
  if (state.params.get("run")) state.run = state.params.get("run");
  state.host = state.params.get("host") || "";
}
function go(page, extra) {
  const p = new URLSearchParams(extra || {});
  p.set("run", state.run);
  if (state.host) p.set("host", state.host);
  location.hash = `#/${page}?${p}`;
}

// ---- hosts: a picker on the overview and the timeline ------------------------------------------
// Every host of the run, from an unfiltered answer (a filtered overview names only its host).
async function runHosts() {
  if (!state.hosts[state.run]) {
    const d = await api(`/api/run/${encodeURIComponent(state.run)}/overview`);
    state.hosts[state.run] = d.hosts;
  }
  return state.hosts[state.run];
}
function hostPicker(hosts) {
  if (hosts.length < 2) return "";
  return `<label>host <select id="host-pick"><option value="">all hosts</option>${hosts.map((h) =>
    `<option value="${esc(h)}" ${h === state.host ? "selected" : ""}>${esc(h)}</option>`).join("")}</select></label>`;
}
function onHostPick(then) {
  const sel = $("#host-pick");
  if (sel) sel.onchange = () => { state.host = sel.value; then(); };
}

// "2 hosts", "1 host + 2 from summaries", "3 hosts from summaries" (a pod's summaries alone)
function runHostsText(r) {
  const files = r.hosts.length, sums = (r.summarized_hosts || []).length;
  const count = (n) => `${n} host${n === 1 ? "" : "s"}`;
  if (!sums) return count(files);
  return files ? `${count(files)} + ${sums} from summaries` : `${count(sums)} from summaries`;
}

async function start() {
  parseHash();
  state.runs = await api("/api/runs");
  if (!state.runs.length) { $("#page").innerHTML = "<p>No profile runs under this directory.</p>"; return; }
  if (!state.runs.some((r) => String(r.id) === state.run)) state.run = String(state.runs[state.runs.length - 1].id);
  $("#run").innerHTML = state.runs.map((r) =>
    `<option value="${esc(r.id)}">${esc(r.path)} (${runHostsText(r)})</option>`).join("");
  $("#run").value = state.run;
  $("#run").onchange = () => { state.run = $("#run").value; state.host = ""; go(state.page); };
  document.querySelectorAll("#tabs a").forEach((a) => { a.onclick = () => go(a.dataset.page); });
  window.onhashchange = () => { parseHash(); render(); };
  render();
}

async function render() {
  document.querySelectorAll("#tabs a").forEach((a) => a.classList.toggle("active", a.dataset.page === state.page));
  const pages = { overview, ops, comm, flame, roofline, timeline, memory, compare };
  const page = pages[state.page] || overview;
  try { await page(); } catch (e) { $("#page").innerHTML = `<p class="rating-bad">${esc(e.message)}</p>`; }
}

document.addEventListener("DOMContentLoaded", start);
