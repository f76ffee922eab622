"""jaxprof view --ui builtin: the built-in viewer's JSON API (runs, sections, timeline, events, cache)."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import pytest

import jaxprof
from conftest import SECTIONS as ALL_SECTIONS, capture_steps, jaxprof_json, only_xplane
from test_export import export, gpu_profile
from xplane_gen import big_xplane
from test_view import free_port

SECTIONS = [s for s in ALL_SECTIONS if s != "report"]  # the report is /overview
CAP = 20000


class Viewer:
    """A running `jaxprof view DIR --ui builtin` and a tiny client for it."""

    def __init__(self, proc: subprocess.Popen, port: int) -> None:
        self.proc, self.port = proc, port

    def get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def json(self, path: str, status: int = 200) -> Any:
        code, headers, body = self.get(path)
        assert code == status, (path, code, body[:300])
        assert headers["content-type"] == "application/json"
        return json.loads(body)

    def run_id(self, name: str | None = None) -> str:
        runs = self.json("/api/runs")
        return next(r["id"] for r in runs if name is None or r["name"] == name)


@pytest.fixture
def serve(launch_view: Callable[..., tuple]) -> Callable[..., Viewer]:
    def start(log_dir: Path) -> Viewer:
        port = free_port()
        proc, out, _ = launch_view(log_dir, "--ui", "builtin", "--port", str(port))
        assert f"http://127.0.0.1:{port}/" in out
        return Viewer(proc, port)

    return start


@pytest.fixture(scope="module")
def cpu_logdir(tmp_path_factory) -> Path:
    """A real XLA:CPU capture (as test_export's) in jaxprof's log directory layout."""
    return capture_steps(tmp_path_factory.mktemp("viewer_cpu"))


@pytest.fixture(scope="module")
def gpu_logdir(tmp_path_factory) -> Path:
    log_dir = tmp_path_factory.mktemp("viewer_gpu")
    run = log_dir / "plugins" / "profile" / "gpu_run"
    run.mkdir(parents=True)
    gpu_profile(run / "gpu-host.xplane.pb")
    return log_dir


def run_path(log_dir: Path, viewer: Viewer, run_id: str) -> Path:
    rel = next(r["path"] for r in viewer.json("/api/runs") if r["id"] == run_id)
    return Path(str(log_dir) + "/" + rel)


def all_events(doc: dict[str, Any]) -> list[list]:
    return [e for t in doc["tracks"] for e in t["events"]]


@pytest.mark.parametrize("which", ["cpu", "gpu"])
def test_every_section_equals_the_cli_json(which, cpu_logdir, gpu_logdir, serve):
    log_dir = cpu_logdir if which == "cpu" else gpu_logdir
    v = serve(log_dir)
    runs = v.json("/api/runs")
    (found,) = jaxprof.find_runs(log_dir)
    assert len(runs) == 1 and runs[0]["hosts"] == list(found.hosts) and len(found.hosts) == 1
    assert runs[0]["bytes"] == found.bytes and runs[0]["mtime_ms"] == found.mtime_ns // 10**6
    assert not runs[0]["path"].startswith("/") and ".." not in runs[0]["path"]
    rid = runs[0]["id"]
    path = run_path(log_dir, v, rid)
    assert path.is_dir()
    assert v.json(f"/api/run/{rid}/overview") == jaxprof_json("report", path)
    for section in SECTIONS:
        assert v.json(f"/api/run/{rid}/{section}") == jaxprof_json(section, path), section


def test_cache_hit_on_second_request(gpu_logdir, serve):
    v = serve(gpu_logdir)
    rid = v.run_id()
    assert v.get(f"/api/run/{rid}/ops")[1]["x-jaxprof-cache"] == "miss"
    assert v.get(f"/api/run/{rid}/ops")[1]["x-jaxprof-cache"] == "hit"
    assert v.get(f"/api/run/{rid}/steps")[1]["x-jaxprof-cache"] == "hit"
    assert v.get(f"/api/run/{rid}/timeline")[1]["x-jaxprof-cache"] == "miss"
    assert v.get(f"/api/run/{rid}/timeline?px=10")[1]["x-jaxprof-cache"] == "hit"
    # a host filter is a run of its own in the cache
    assert v.get(f"/api/run/{rid}/ops?host=gpu")[1]["x-jaxprof-cache"] == "miss"
    assert v.json(f"/api/run/{rid}/ops?host=nosuchhost", 404)["error"]


@pytest.mark.parametrize("which", ["cpu", "gpu"])
def test_full_window_returns_every_exported_event(which, cpu_logdir, gpu_logdir, serve, tmp_path):
    log_dir = cpu_logdir if which == "cpu" else gpu_logdir
    v = serve(log_dir)
    rid = v.run_id()
    counts = export(run_path(log_dir, v, rid), tmp_path / "t.json.gz")
    doc = v.json(f"/api/run/{rid}/timeline?px=1000000")
    # every source event, and the derived rows' events the exporter adds (Steps, GPU XLA rows), and
    # the viewer's own analysis rows (exposed communication, launch delay), which it does not
    assert counts["events_out"] == counts["events_in"] and counts["derived"] > 0
    assert doc["total_events"] == counts["events_out"] + counts["derived"] + doc["analysis_events"]
    if doc["total_events"] <= CAP:
        assert doc["aggregated"] == 0 and doc["returned_events"] == doc["total_events"]
        assert len(all_events(doc)) == doc["total_events"]
    # tracks: one per exported source thread (+ overlap threads), names in the exporter's style
    assert len({t["id"] for t in doc["tracks"]}) == len(doc["tracks"])
    for e in all_events(doc):
        assert e[2] == -1 or 0 <= e[2] < len(doc["names"])
    if which == "gpu":
        threads = {t["thread"] for t in doc["tracks"]}
        assert "Stream #7(Compute) (overlap 1)" in threads  # the partial overlap moved, as in export
        names = set(doc["names"])
        assert {"gemm_a", "gemm_b", "add", "overlapping", "marker", "aggregated", "cuLaunchKernel"} <= names


def test_narrow_window_returns_only_overlapping_events(gpu_logdir, serve):
    v = serve(gpu_logdir)
    rid = v.run_id()
    full = v.json(f"/api/run/{rid}/timeline?px=1000000")
    start_of = {full["names"][e[2]]: e[0] for t in full["tracks"] if t["kind"] != "launch_delay"  # the events, not
                for e in t["events"] if e[2] >= 0}                                                # their launches
    a_us, b_us = (start_of["gemm_a"] + start_of["gemm_b"]) / 2, (start_of["add"] + start_of["overlapping"]) / 2
    doc = v.json(f"/api/run/{rid}/timeline?start_ms={a_us / 1000}&end_ms={b_us / 1000}&px=1000000")
    got = sorted((round(e[0], 3), round(e[1], 3)) for e in all_events(doc))
    want = sorted((round(e[0], 3), round(e[1], 3)) for e in all_events(full)
                  if (e[1] > 0 and e[0] < b_us and e[0] + e[1] > a_us) or (e[1] == 0 and a_us <= e[0] < b_us))
    assert got == want and 0 < len(got) < len(all_events(full))
    names = {doc["names"][e[2]] for e in all_events(doc)}
    assert {"gemm_a", "gemm_b", "add", "train"} <= names and "cuLaunchKernel" not in names


def test_event_details(gpu_logdir, serve):
    v = serve(gpu_logdir)
    rid = v.run_id()
    doc = v.json(f"/api/run/{rid}/timeline?px=1000000")
    track = next(t for t in doc["tracks"] if t["thread"] == "Stream #7(Compute)")
    ev = next(e for e in track["events"] if doc["names"][e[2]] == "gemm_a")
    detail = v.json(f"/api/run/{rid}/event?track={track['id']}&index={ev[4]}")
    assert detail["name"] == "gemm_a" and detail["start_us"] == ev[0] and detail["dur_us"] == ev[1]
    assert detail["args"]["hlo_op"] == "dot.1" and detail["args"]["correlation_id"] == 100
    v.json(f"/api/run/{rid}/event?track=9999&index=0", 404)
    v.json(f"/api/run/{rid}/event?track={track['id']}&index=99999", 404)
    v.json(f"/api/run/{rid}/event?track=x", 400)


def test_small_px_aggregates_within_the_cap(cpu_logdir, serve):
    v = serve(cpu_logdir)
    rid = v.run_id()
    full = v.json(f"/api/run/{rid}/timeline?px=1000000")
    small = v.json(f"/api/run/{rid}/timeline?px=20")
    assert small["total_events"] == full["total_events"]
    assert small["aggregated"] > 0 and small["entries"] < full["entries"]
    assert small["returned_events"] + small["aggregated"] == small["total_events"]
    assert sum(e[4] for e in all_events(small) if e[2] == -1) == small["aggregated"]
    assert len(all_events(small)) == small["entries"] <= CAP


def test_bad_ids_and_paths_are_refused(gpu_logdir, serve, tmp_path):
    v = serve(gpu_logdir)
    outside = tmp_path / "outside"
    outside.mkdir()
    gpu_profile(outside / "x.xplane.pb")
    hexed = lambda s: s.encode().hex()  # noqa: E731
    for rid in ["0", "zz", "00", hexed("plugins/profile/nope"), hexed(".."), hexed("../" + outside.name),
                hexed(str(outside)), hexed("/etc"), "%2Fetc", "abc"]:
        code, headers, body = v.get(f"/api/run/{rid}/ops")
        assert code in (403, 404), (rid, code)
        if code == 404:
            assert headers["content-type"] == "application/json" and json.loads(body)["error"]
    for path in ["/api/run/../../etc/ops", "/api/run/%2e%2e/ops", "/api/run//etc/passwd/ops"]:
        assert v.get(path)[0] in (400, 403, 404), path
    rid = v.run_id()
    v.json(f"/api/run/{rid}/nosuchsection", 404)
    v.json(f"/api/run/{rid}/report", 404)
    v.json(f"/api/run/{rid}/timeline?start_ms=abc", 400)
    v.json(f"/api/run/{rid}/timeline?px=0", 400)
    v.json("/nope", 404)
    assert "/api/runs" in v.json("/api")["api"]


def test_million_event_profile_answers_within_the_cap(tmp_path, serve):
    run = tmp_path / "logs" / "plugins" / "profile" / "big"
    run.mkdir(parents=True)
    n = 1_000_000
    big_xplane(run / "big.xplane.pb", n, 4)
    v = serve(tmp_path / "logs")
    rid = v.run_id()
    t0 = time.perf_counter()
    doc = v.json(f"/api/run/{rid}/timeline?px=2000")
    first = time.perf_counter() - t0
    assert doc["total_events"] == n and doc["entries"] <= CAP and not doc["truncated"]
    assert doc["returned_events"] + doc["aggregated"] == n
    timings = []
    for start, end, px in [(0, 500, 2000), (0, 500, 200000), (100, 100.05, 2000), (250, 251, 1000)]:
        t0 = time.perf_counter()
        d = v.json(f"/api/run/{rid}/timeline?start_ms={start}&end_ms={end}&px={px}")
        timings.append((start, end, px, time.perf_counter() - t0, d["entries"], d["total_events"]))
        assert d["entries"] <= CAP
    narrow = v.json(f"/api/run/{rid}/timeline?start_ms=100&end_ms=100.01&px=2000")
    assert narrow["aggregated"] == 0 and narrow["total_events"] == 4 * 5  # 1 us every 2 us on 4 lines
    print(f"\n1M events: first window (decode + index + query) {first * 1e3:.0f} ms")
    for start, end, px, dt, entries, total in timings:
        print(f"  window [{start}, {end}) ms px={px}: {dt * 1e3:.1f} ms, {entries} entries for {total} events")


# ---- flows and hosts ---------------------------------------------------------------------------------

def event_at(v: Viewer, rid: str, track: int, index: int) -> dict[str, Any]:
    return v.json(f"/api/run/{rid}/event?track={track}&index={index}")


def check_flow_ends(v: Viewer, rid: str, doc: dict[str, Any]) -> list[tuple[dict, dict]]:
    """Every flow of a window names two real events: the arrow leaves the first's end and reaches
    the second's start, at the depths /event gives; both tracks are in the answer's track list."""
    tracks = {t["id"] for t in doc["tracks"]}
    ends = []
    for ft, fi, fd, f_us, tt, ti, td, t_us in doc["flows"]:
        assert ft in tracks and tt in tracks
        src, dst = event_at(v, rid, ft, fi), event_at(v, rid, tt, ti)
        assert (src["depth"], dst["depth"]) == (fd, td)
        assert f_us == pytest.approx(src["start_us"] + src["dur_us"], abs=1e-3) and t_us == pytest.approx(dst["start_us"], abs=1e-3)
        ends.append((src, dst))
    return ends


def test_gpu_window_links_each_launch_to_its_kernel(gpu_logdir, serve):
    v = serve(gpu_logdir)
    rid = v.run_id()
    doc = v.json(f"/api/run/{rid}/timeline?px=1000000")
    assert not doc["flows_truncated"] and len(doc["flows"]) == 3
    ends = check_flow_ends(v, rid, doc)
    got = sorted((s["name"], s["thread"], s["args"]["correlation_id"], d["name"], d["thread"], d["args"]["correlation_id"])
                 for s, d in ends)
    assert got == [("cuLaunchKernel", "cuda api", 100 + i, k, "Stream #7(Compute)", 100 + i)
                   for i, k in enumerate(["gemm_a", "gemm_b", "add"])]
    # A window holding only the kernels keeps their arrows, and the launches' track (without events).
    narrow = v.json(f"/api/run/{rid}/timeline?start_ms=0.29&end_ms=0.5&px=1000")
    assert len(narrow["flows"]) == 3
    check_flow_ends(v, rid, narrow)
    cuda = next(t for t in narrow["tracks"] if t["thread"] == "cuda api")
    assert cuda["events"] == [] and "cuLaunchKernel" not in narrow["names"]
    # Before the first launch ends and after the last kernel starts: no arrows.
    assert v.json(f"/api/run/{rid}/timeline?start_ms=0&end_ms=0.1&px=1000")["flows"] == []
    assert v.json(f"/api/run/{rid}/timeline?start_ms=0.41&end_ms=1&px=1000")["flows"] == []


def test_cpu_window_links_async_ops_to_their_ends(cpu_logdir, serve, tmp_path):
    v = serve(cpu_logdir)
    rid = v.run_id()
    counts = export(run_path(cpu_logdir, v, rid), tmp_path / "t.json.gz")
    doc = v.json(f"/api/run/{rid}/timeline?px=1000000")
    # XLA:CPU runs this capture's ops asynchronously (`_p`/`_c` stats); without them there is
    # nothing to check, which would be a change in JAX worth knowing about, not a pass.
    assert counts["flows"] > 0, "the XLA:CPU capture has no async ops to link"
    assert doc["flows"] and not doc["flows_truncated"]
    assert len(doc["flows"]) <= counts["flows"]
    for src, dst in check_flow_ends(v, rid, doc)[:20]:
        assert src["args"]["_p"] == dst["args"]["_c"], (src, dst)


@pytest.fixture(scope="module")
def multi_host_logdir(tmp_path_factory) -> Path:
    log_dir = tmp_path_factory.mktemp("viewer_hosts")
    run = log_dir / "plugins" / "profile" / "two_hosts"
    run.mkdir(parents=True)
    for host in ("host-a", "host-b"):
        gpu_profile(run / f"{host}.xplane.pb")
    return log_dir


def test_host_filter_keeps_one_hosts_tracks_and_flows(multi_host_logdir, serve):
    v = serve(multi_host_logdir)
    rid = v.run_id()
    both = v.json(f"/api/run/{rid}/timeline?px=1000000")
    # per host: 10 events, 4 of the derived rows (a step, a module, two ops) the exporter adds and 3
    # of the viewer's Launch delay rows (one per launch: the 3 flows)
    assert both["hosts"] == ["host-a", "host-b"] and both["total_events"] == 2 * (10 + 4 + 3)
    assert both["analysis_events"] == 6
    assert {t["host"] for t in both["tracks"]} == {"host-a", "host-b"}
    assert all(t["process"].startswith(t["host"] + ": ") for t in both["tracks"])
    assert len(both["flows"]) == 6  # correlation ids repeat across hosts; flows never cross them
    host_of = {t["id"]: t["host"] for t in both["tracks"]}
    assert all(host_of[f[0]] == host_of[f[4]] for f in both["flows"])
    for host in ("host-a", "host-b"):
        one = v.json(f"/api/run/{rid}/timeline?px=1000000&host={host}")
        assert one["hosts"] == both["hosts"] and one["total_events"] == 10 + 4 + 3
        assert {t["host"] for t in one["tracks"]} == {host}
        # track ids are the unfiltered index's: the same track keeps its id whichever host is picked
        assert {(t["id"], t["thread"]) for t in one["tracks"]} <= {(t["id"], t["thread"]) for t in both["tracks"]}
        assert len(one["flows"]) == 3 and all(host_of[f[0]] == host for f in one["flows"])
        check_flow_ends(v, rid, one)
    assert v.json(f"/api/run/{rid}/timeline?host=no-such-host", 404)["error"]


# ---- /api/diff: two runs through the diff engine ----------------------------------------------------

def _extra_step(w: jax.Array, x: jax.Array) -> jax.Array:
    """conftest's scoped_step plus a matmul chain under named_scope("extra")."""
    with jax.named_scope("forward"):
        h = jnp.tanh(x @ w)
    with jax.named_scope("extra"):
        g = jnp.tanh(h.T @ h)            # (128, 128) from (64, 128)
        g = jnp.tanh(g @ g) @ g          # two more 128^3 matmuls
    return w - 1e-3 * (h.T @ x) - 1e-6 * g


# Named as conftest's scoped_step, so both runs hold the module "jit_scoped_step" and the diff pairs
# their ops instead of calling every op added or removed.
_extra_step.__name__ = _extra_step.__qualname__ = "scoped_step"
extra_step = jax.jit(_extra_step)


def capture_extra(log_dir: Path, *, num_steps: int = 3, total: int = 5) -> Path:
    """conftest.capture_steps with extra_step in place of scoped_step."""
    w, x = jnp.ones((128, 128)) * 1e-2, jnp.ones((64, 128))
    extra_step(w, x).block_until_ready()  # compile outside the capture
    with jaxprof.Profiler(log_dir, start_step=1, num_steps=num_steps, report=False) as prof:
        for i in range(total):
            with prof.step(i):
                w = extra_step(w, x)
            w.block_until_ready()
    return log_dir


def two_run_logdir(root: Path) -> tuple[Path, Path, Path]:
    """One log directory holding a base capture and a new one with an extra scope: (log_dir, base
    run, new run). Each is captured on its own and moved under a fixed name; the base is made older
    so that the viewer lists it first."""
    log_dir = root / "logs"
    runs = log_dir / "plugins" / "profile"
    runs.mkdir(parents=True)
    made = []
    for name, capture in (("base", capture_steps), ("new", capture_extra)):
        capture(root / f"cap_{name}")
        shutil.move(str(only_xplane(root / f"cap_{name}").parent), str(runs / name))
        made.append(runs / name)
    old = time.time() - 600
    for f in made[0].rglob("*"):
        os.utime(f, (old, old))
    return log_dir, made[0], made[1]


@pytest.fixture(scope="module")
def diff_logdir(tmp_path_factory) -> tuple[Path, Path, Path]:
    return two_run_logdir(tmp_path_factory.mktemp("viewer_diff"))


def is_extra(scope: str) -> bool:
    """Whether a scope path is the new run's extra scope ("scoped_step/extra")."""
    return scope.split("/")[-1] == "extra"


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """A diff document without its paths (the CLI names the arguments as given, the viewer the runs)."""
    return {k: v for k, v in doc.items() if k not in ("base", "new")}


def test_diff_equals_the_cli_json(diff_logdir, serve):
    log_dir, base, new = diff_logdir
    v = serve(log_dir)
    runs = v.json("/api/runs")
    assert [r["name"] for r in runs] == ["base", "new"]
    ids = {r["name"]: r["id"] for r in runs}
    code, headers, body = v.get(f"/api/diff?base={ids['base']}&new={ids['new']}")
    assert code == 200 and headers["content-type"] == "application/json" and headers["x-jaxprof-cache"] == "miss"
    doc = json.loads(body)
    assert doc["schema_version"] == 1 and doc["kind"] == "diff"
    assert {"base", "new", "steps", "breakdown", "ops", "scopes", "summary", "findings", "options"} <= doc.keys()
    assert doc["base"]["path"].rstrip("/").endswith("base") and doc["new"]["path"].rstrip("/").endswith("new")
    assert doc["steps"]["base_n"] == doc["steps"]["new_n"] == 3
    assert doc["steps"]["verdict"] in ("slower", "faster", "unchanged")
    assert [p["part"] for p in doc["breakdown"]][:2] == ["compute", "collective"]
    # The extra scope exists only in the new run, and so do its matmuls.
    extra = [s for s in doc["scopes"] if is_extra(s["name"])]
    assert extra and extra[0]["change"] == "added" and extra[0]["base_ms"] == 0 and extra[0]["new_ms"] > 0
    added = [o for o in doc["ops"] if o["change"] == "added" and is_extra(o["scope"])]
    assert added and all(o["match"] == "none" and o["base_count"] == 0 and o["new_count"] >= 1 for o in added)
    assert sum(doc["summary"]["ops"].values()) == len(doc["ops"])
    assert sum(doc["summary"]["matched"].values()) == len(doc["ops"])
    assert doc["summary"]["matched"]["name"] + doc["summary"]["matched"]["op_name"] + doc["summary"]["matched"]["shape"] > 0
    # The CLI over the same run directories says exactly the same.
    cli = jaxprof_json("diff", base, str(new))
    assert comparable(doc) == comparable({k: v for k, v in cli.items() if k != "gate"})
    # Asked again: the kept answer, byte for byte.
    again = v.get(f"/api/diff?base={ids['base']}&new={ids['new']}")
    assert again[1]["x-jaxprof-cache"] == "hit" and again[2] == body
    # Reversed: the extra scope was removed.
    back = v.json(f"/api/diff?base={ids['new']}&new={ids['base']}")
    assert next(s for s in back["scopes"] if is_extra(s["name"]))["change"] == "removed"
    assert back["summary"]["ops"]["removed"] == doc["summary"]["ops"]["added"]


def test_diff_of_a_run_with_itself_is_all_unchanged(diff_logdir, serve):
    log_dir, _, _ = diff_logdir
    v = serve(log_dir)
    rid = v.run_id("new")
    doc = v.json(f"/api/diff?base={rid}&new={rid}")
    s = doc["summary"]
    assert doc["ops"] and s["ops"]["unchanged"] == len(doc["ops"]) and s["scopes"]["unchanged"] == len(doc["scopes"])
    assert all(s["ops"][c] == 0 and s["scopes"][c] == 0 for c in ("slower", "faster", "added", "removed"))
    assert s["matched"]["name"] == len(doc["ops"])
    assert doc["steps"]["change_pct"] == 0 and doc["steps"]["verdict"] == "unchanged" and not doc["steps"]["significant"]
    assert all(p["delta_ms"] == 0 for p in doc["breakdown"]) and doc["findings"] == []
    assert all(o["delta_ms"] == 0 and o["base_ms"] == o["new_ms"] for o in doc["ops"])


def test_diff_refuses_unknown_ids(diff_logdir, serve):
    log_dir, _, _ = diff_logdir
    v = serve(log_dir)
    rid = v.run_id("base")
    nope = "plugins/profile/nope".encode().hex()
    for query in [f"base={rid}&new={nope}", f"base={nope}&new={rid}", f"base={rid}&new=zz", f"base=00&new={rid}",
                  f"base={rid}&new={'..'.encode().hex()}", f"base={rid}&new=%2Fetc"]:
        assert v.json(f"/api/diff?{query}", 404)["error"], query
    assert v.json(f"/api/diff?base={rid}", 400)["error"]
    assert v.json("/api/diff", 400)["error"]
    assert v.json(f"/api/diff?base={rid}&new={rid}&host=no-such-host", 404)["error"]
    assert "/api/diff?base=&new=&host=" in v.json("/api")["api"]


def test_diff_survives_cache_eviction(tmp_path, serve):
    """More runs than cache slots, diffed in an order that evicts: every answer still right (run this
    against an ASan build to see that no analysis is freed while a diff reads it)."""
    runs = tmp_path / "logs" / "plugins" / "profile"
    for i in range(6):
        (runs / f"r{i}").mkdir(parents=True)
        gpu_profile(runs / f"r{i}" / "gpu-host.xplane.pb")
    v = serve(tmp_path / "logs")
    ids = [r["id"] for r in v.json("/api/runs")]
    assert len(ids) == 6
    want = None
    for a, b in [(0, 1), (2, 3), (4, 5), (1, 0), (5, 2), (3, 4), (0, 5), (1, 1)]:
        v.json(f"/api/run/{ids[(a + 3) % 6]}/ops")  # another run between, to move the LRU order
        doc = v.json(f"/api/diff?base={ids[a]}&new={ids[b]}")
        assert doc["ops"] and doc["summary"]["ops"]["unchanged"] == len(doc["ops"])  # the same profile six times
        got = [(o["name"], o["base_ms"], o["new_ms"]) for o in doc["ops"]]
        assert want is None or got == want
        want = got
