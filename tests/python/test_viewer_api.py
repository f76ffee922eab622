"""jaxprof view --ui builtin: the built-in viewer's JSON API (runs, sections, timeline, events, cache)."""
from __future__ import annotations

import http.client
import json
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import JAXPROF_BIN, capture_steps, jaxprof_json
from test_export import big_xplane, export, gpu_profile
from test_view import free_port, read_until_link, stop

SECTIONS = ["ops", "steps", "scopes", "transfers", "kernels", "memory", "compiles", "findings"]
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
def serve(tmp_path: Path) -> Iterator:
    procs: list[subprocess.Popen] = []

    def start(log_dir: Path) -> Viewer:
        port = free_port()
        proc = subprocess.Popen([str(JAXPROF_BIN), "view", str(log_dir), "--ui", "builtin", "--port", str(port),
                                 "--no-browser"], stdout=subprocess.PIPE, stderr=open(tmp_path / "err.txt", "w"))
        procs.append(proc)
        out = read_until_link(proc)
        assert f"http://127.0.0.1:{port}/" in out
        return Viewer(proc, port)

    yield start
    for proc in procs:
        stop(proc)


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
    assert len(runs) == 1 and runs[0]["hosts"] == 1 and runs[0]["bytes"] > 0 and runs[0]["mtime_ms"] > 0
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
    assert doc["total_events"] == counts["events_out"] == counts["events_in"]
    if counts["events_out"] <= CAP:
        assert doc["aggregated"] == 0 and doc["returned_events"] == counts["events_out"]
        assert len(all_events(doc)) == counts["events_out"]
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
    start_of = {full["names"][e[2]]: e[0] for e in all_events(full) if e[2] >= 0}
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
    if counts["flows"] == 0:
        pytest.skip("this XLA:CPU capture has no async ops")
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
    assert both["hosts"] == ["host-a", "host-b"] and both["total_events"] == 20
    assert {t["host"] for t in both["tracks"]} == {"host-a", "host-b"}
    assert all(t["process"].startswith(t["host"] + ": ") for t in both["tracks"])
    assert len(both["flows"]) == 6  # correlation ids repeat across hosts; flows never cross them
    host_of = {t["id"]: t["host"] for t in both["tracks"]}
    assert all(host_of[f[0]] == host_of[f[4]] for f in both["flows"])
    for host in ("host-a", "host-b"):
        one = v.json(f"/api/run/{rid}/timeline?px=1000000&host={host}")
        assert one["hosts"] == both["hosts"] and one["total_events"] == 10
        assert {t["host"] for t in one["tracks"]} == {host}
        # track ids are the unfiltered index's: the same track keeps its id whichever host is picked
        assert {(t["id"], t["thread"]) for t in one["tracks"]} <= {(t["id"], t["thread"]) for t in both["tracks"]}
        assert len(one["flows"]) == 3 and all(host_of[f[0]] == host for f in one["flows"])
        check_flow_ends(v, rid, one)
    assert v.json(f"/api/run/{rid}/timeline?host=no-such-host", 404)["error"]
