"""jaxprof view --ui builtin keeps serving when the analysis of one run fails (issue 30, section 2
and the viewer items of section 3).

Each run's analysis runs in a worker process of its own: a run whose load crashes (SIGSEGV),
aborts, is killed (as the OOM killer does) or hangs past --time-limit gets a JSON error naming the
run and the cause, while every other run, the run list and the pages are answered during and after.
Faults come from the library's test-only JAXPROF_TEST_FAULT (src/profile/testfault.h), one entry
per faulty run ("segv:run_segv,..."): loading that run segfaults, aborts, is killed (as the OOM
killer does), hangs, or is slow (3 s, then a normal load).

Order, not stopwatches: the server logs a line when each response ends, so "answered while the
slow one was still loading" is read from the log's order. Every socket has a timeout, so nothing
waits forever."""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import test_viewer_security as security

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "cpu_small.xplane.pb.gz"
GOOD, OTHER = "good/plugins/profile/run_a", "other/plugins/profile/run_b"
FAULTS = ["segv", "abort", "kill", "hang", "slow"]
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")  # JP_VIEWER_CSP
SIGNALS = {"segv": "killed by signal 11 (Segmentation fault)", "abort": "killed by signal 6 (Aborted)",
           "kill": "killed by signal 9 (Killed)"}


def rel_of(fault: str) -> str:
    return f"{fault}/plugins/profile/run_{fault}"


def run_id(rel: str) -> str:
    return rel.encode().hex()


def without_path(doc: dict) -> dict:
    """An overview less its "path" (the run's directory): copies of one capture then compare equal."""
    return {k: v for k, v in doc.items() if k != "path"}


@dataclass
class Server:
    """A running `jaxprof view` (builtin UI) on 127.0.0.1."""

    proc: subprocess.Popen
    port: int
    stderr: Path
    token: str = ""

    def get(self, target: str, timeout: float = 30) -> security.Reply:
        if self.token:
            target += ("&" if "?" in target else "?") + f"token={self.token}"
        head = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nConnection: close\r\n\r\n"
        return security.raw_request(self.port, head.encode(), timeout=timeout)

    def json(self, target: str) -> tuple[int, object]:
        r = self.get(target)
        assert r.headers["content-type"] == "application/json", (target, r.status, r.body[:200])
        return r.status, json.loads(r.body)

    def overview(self, rel: str) -> tuple[int, object]:
        return self.json(f"/api/run/{run_id(rel)}/overview")

    def log_lines(self) -> list[str]:
        """"METHOD target status bytes" per ended response, in order."""
        return [line[9:] for line in self.stderr.read_text().splitlines()
                if line.startswith("jaxprof: ") and re.fullmatch(r"\S+ \S+ \d{3} \d+", line[9:])]

    def wait_for_log(self, pred: Callable[[list[str]], bool], within_s: float = 60) -> list[str]:
        deadline = time.monotonic() + within_s
        while not pred(lines := self.log_lines()) and time.monotonic() < deadline:
            time.sleep(0.02)
        return lines


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """Two good runs and one run per fault, each a copy of the same small CPU capture."""
    logs = tmp_path / "logs"
    for rel in [GOOD, OTHER] + [rel_of(f) for f in FAULTS]:
        (logs / rel).mkdir(parents=True)
        shutil.copy(FIXTURE, logs / rel / "h.xplane.pb.gz")
    return logs


@pytest.fixture
def start(launch_view, monkeypatch) -> Callable[..., Server]:
    """Starts `jaxprof view LOGS --port 0 ARGS` with the fault hook on (and ASan, if this is an ASan
    build, leaving SIGSEGV to kill the worker as it would without it)."""
    monkeypatch.setenv("JAXPROF_TEST_FAULT", ",".join(f"{f}:run_{f}" for f in FAULTS))
    monkeypatch.setenv("ASAN_OPTIONS", "handle_segv=0:handle_abort=0")

    def run(logs: Path, *args: str) -> Server:
        proc, out, err = launch_view(logs, "--port", "0", *args)
        m = re.search(r"^Open: http://[^/]*:(\d+)/(?:\?token=([0-9a-f]+))?$", out, re.M)
        assert m, out
        return Server(proc, int(m.group(1)), err, m.group(2) or "")

    return run


def test_a_crashing_run_gets_a_json_error_and_every_other_run_stays_served(log_dir, start):
    server = start(log_dir)
    status, want = server.overview(GOOD)
    assert status == 200 and want["section"] == "report"
    for fault in ["segv", "abort", "kill"]:
        for attempt in range(2):  # again: a new worker, the same fate, the same answer
            status, doc = server.overview(rel_of(fault))
            assert (status, doc) == (500, {"error": f"analysis of {rel_of(fault)} failed: {SIGNALS[fault]}"}), attempt
            assert server.overview(GOOD) == (200, want)  # its worker was never touched
        assert server.proc.poll() is None
    # A diff with a crashing run fails alike, naming both; a run never asked for loads fine.
    status, doc = server.json(f"/api/diff?base={run_id(GOOD)}&new={run_id(rel_of('segv'))}")
    assert (status, doc) == (500, {"error": f"diff of {GOOD} and {rel_of('segv')} failed: {SIGNALS['segv']}"})
    status, doc = server.overview(OTHER)
    assert status == 200 and without_path(doc) == without_path(want)
    status, runs = server.json("/api/runs")
    assert status == 200 and sorted(r["path"] for r in runs) == sorted([GOOD, OTHER] + [rel_of(f) for f in FAULTS])
    status, doc = server.json(f"/api/diff?base={run_id(GOOD)}&new={run_id(OTHER)}")
    assert status == 200 and doc["base"]["path"].endswith(GOOD) and doc["new"]["path"].endswith(OTHER)
    assert server.get("/").status == 200


def test_a_hanging_run_is_stopped_at_the_time_limit_while_others_are_answered(log_dir, start):
    server = start(log_dir, "--time-limit", "2")
    hang = f"/api/run/{run_id(rel_of('hang'))}/overview"
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(f"GET {hang} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
        # While that one hangs: the run list, another run (loaded now) and a page are answered.
        assert server.json("/api/runs")[0] == 200
        assert server.overview(GOOD)[0] == 200
        assert server.get("/app.js").status == 200
        logged = server.log_lines()
        assert [line.split()[1] for line in logged] == ["/api/runs", f"/api/run/{run_id(GOOD)}/overview", "/app.js"]
        data = b""
        while chunk := s.recv(1 << 16):
            data += chunk
    reply = security.parse_reply(data)
    assert (reply.status, json.loads(reply.body)) == (500, {
        "error": f"analysis of {rel_of('hang')} failed: it took longer than 2 s (the time limit) and was stopped"})
    assert server.wait_for_log(lambda lines: len(lines) == 4)[3].startswith(f"GET {hang} 500 ")
    assert server.overview(GOOD)[0] == 200 and server.proc.poll() is None


def test_a_slow_first_load_does_not_hold_up_the_run_list_or_a_cached_run(log_dir, start):
    server = start(log_dir)
    status, want = server.overview(GOOD)  # cached in its worker from now on
    assert status == 200
    slow = f"/api/run/{run_id(rel_of('slow'))}/overview"
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(f"GET {slow} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
        for _ in range(3):
            assert server.json("/api/runs")[0] == 200
            assert server.overview(GOOD) == (200, want)
        # All six were answered while the slow load (3 s) was still going: its line is not there.
        assert len(server.log_lines()) == 7 and not any(slow in line for line in server.log_lines())
        data = b""
        while chunk := s.recv(1 << 16):
            data += chunk
    reply = security.parse_reply(data)
    assert reply.status == 200 and without_path(json.loads(reply.body)) == without_path(want)  # the same capture
    assert server.wait_for_log(lambda lines: len(lines) == 8)[7].startswith(f"GET {slow} 200 ")


def test_requests_for_one_run_are_answered_by_one_worker_in_turn(log_dir, start):
    """Several sections of one run at once: one load (the cache header says miss once), all 200."""
    server = start(log_dir)
    socks = []
    for section in ["overview", "ops", "steps", "scopes", "findings"]:
        s = socket.create_connection(("127.0.0.1", server.port), timeout=60)
        s.sendall(f"GET /api/run/{run_id(OTHER)}/{section} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
        socks.append(s)
    replies = []
    for s in socks:
        data = b""
        while chunk := s.recv(1 << 16):
            data += chunk
        s.close()
        replies.append(security.parse_reply(data))
    assert [r.status for r in replies] == [200] * 5
    assert sorted(r.headers["x-jaxprof-cache"] for r in replies) == ["hit"] * 4 + ["miss"]


@pytest.mark.parametrize("token_mode", [False, True], ids=["loopback", "token"])
def test_300_idle_connections_do_not_stop_a_normal_client(log_dir, start, token_mode):
    """Slowloris: 300 connections that send part of a head (or nothing) and wait. A normal client
    still gets the run list and a run's overview; in token mode too (no token is checked before a
    whole head has come). The 30 s socket timeout bounds the test; success is what is asserted."""
    server = start(log_dir, *(["--bind", "0.0.0.0"] if token_mode else []))
    idle = []
    try:
        for i in range(300):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            if i % 2:
                s.sendall(f"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Slow: ".encode())
            idle.append(s)
        for _ in range(3):
            status, runs = server.json("/api/runs")
            assert status == 200 and len(runs) == 2 + len(FAULTS)
            status, doc = server.overview(GOOD)
            assert status == 200 and doc["section"] == "report"
        # The idle ones were not cut for it: the 300 are still open (nothing came back on them).
        for s in idle[:10]:
            s.setblocking(False)
            with pytest.raises(BlockingIOError):
                s.recv(1)
    finally:
        for s in idle:
            s.close()
    assert server.proc.poll() is None


def check_security_headers(reply: security.Reply, csp: str = CSP) -> None:
    assert reply.headers["content-security-policy"] == csp
    assert reply.headers["x-frame-options"] == "DENY"
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_every_answer_carries_csp_and_frame_options(log_dir, start):
    server = start(log_dir)
    for target, status in [("/", 200), ("/index.html", 200), ("/app.js", 200), ("/style.css", 200),
                           ("/api", 200), ("/api/runs", 200), (f"/api/run/{run_id(GOOD)}/overview", 200),
                           (f"/api/run/{run_id(GOOD)}/timeline?px=100", 200), ("/nothing", 404),
                           (f"/api/run/{run_id('nope')}/overview", 404), (f"/api/run/{run_id(GOOD)}/nope", 404),
                           (f"/api/run/{run_id(rel_of('segv'))}/overview", 500), ("/%00", 400), ("/../x", 403)]:
        reply = server.get(target)
        assert reply.status == status, target
        check_security_headers(reply)
    bad_host = security.raw_request(server.port, f"GET / HTTP/1.1\r\nHost: evil.example:{server.port}\r\n\r\n".encode())
    assert bad_host.status == 403
    check_security_headers(bad_host)
    # The inline-free pages: no <script> or <style> body and no inline event handler in index.html.
    page = server.get("/").body.decode()
    assert not re.search(r"<script>|<style|\son\w+=", page)


def test_perfetto_file_server_answers_carry_a_deny_all_csp(log_dir, launch_view):
    _, out, err = launch_view(log_dir / GOOD, "--ui", "perfetto", "--port", "0")
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", out.split("Open: ", 1)[1]).group(1))
    name = GOOD.rsplit("/", 1)[1]
    reply = security.raw_request(port, f"GET /{name}.pftrace HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    assert reply.status == 200 and len(reply.body) > 1000
    check_security_headers(reply, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")


def test_one_worker_slot_is_handed_to_the_next_run_when_idle(log_dir, start):
    """--workers 1: each run asked for stops the idle worker of the run before (least recently used)
    and loads afresh in its own: every answer right, every first one a cache miss."""
    server = start(log_dir, "--workers", "1")
    for rel in [GOOD, OTHER, GOOD]:
        first = server.get(f"/api/run/{run_id(rel)}/overview")
        again = server.get(f"/api/run/{run_id(rel)}/ops")
        assert (first.status, first.headers["x-jaxprof-cache"]) == (200, "miss"), rel
        assert (again.status, again.headers["x-jaxprof-cache"]) == (200, "hit"), rel
        assert json.loads(first.body)["path"].endswith(rel)
    status, doc = server.overview(rel_of("segv"))
    assert (status, doc) == (500, {"error": f"analysis of {rel_of('segv')} failed: {SIGNALS['segv']}"})
    assert server.overview(OTHER)[0] == 200
