"""jaxprof view: the trace server Perfetto UI loads from, TensorBoard, open_latest_profile, view_profile."""
from __future__ import annotations

import http.client
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import jax.numpy as jnp
import pytest

import jaxprof

from conftest import JAXPROF_BIN, read_until_link, stop, train_step

DATA = Path(__file__).resolve().parents[1] / "data"
PERFETTO = "https://ui.perfetto.dev"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    """A running `jaxprof view --ui perfetto` and what it printed."""

    proc: subprocess.Popen
    stdout: str     # everything printed up to the link
    link: str       # the Perfetto UI link
    url: str        # the served trace
    stderr: Path    # file collecting the server's stderr

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])

    @property
    def path(self) -> str:
        return "/" + self.url.split("/", 3)[3]


@pytest.fixture
def start_view(launch_view: Callable[..., tuple]) -> Callable[..., Served]:
    """Starts `jaxprof view DIR --ui perfetto --no-browser ARGS`; every server is killed at teardown."""

    def start(log_dir: Path, *args: str) -> Served:
        proc, out, err = launch_view(log_dir, "--ui", "perfetto", *args)
        link = next(line[6:] for line in out.splitlines() if line.startswith("Open: "))
        assert link.startswith(PERFETTO + "/#!/?url=")
        return Served(proc, out, link, link.split("?url=", 1)[1], err)

    return start


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real XLA:CPU capture made with jaxprof.trace: the log directory."""
    log_dir = tmp_path_factory.mktemp("capture")
    w, x = jnp.ones((64, 64)), jnp.ones((64, 64)) * 0.5
    train_step(w, x).block_until_ready()
    with jaxprof.trace(log_dir):
        for _ in range(3):
            w = train_step(w, x)
        w.block_until_ready()
    return log_dir


def fixture_run(root: Path) -> Path:
    """tests/data/cpu_small.xplane.pb.gz in the layout jax.profiler writes; returns the run dir."""
    run = root / "plugins" / "profile" / "2024_01_02_03_04_05"
    run.mkdir(parents=True)
    shutil.copy(DATA / "cpu_small.xplane.pb.gz", run / "host.xplane.pb.gz")
    return run


def get(port: int, path: str, method: str = "GET", headers: dict[str, str] | None = None
        ) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def raw(port: int, request: bytes) -> tuple[int, bytes]:
    """Sends bytes as they are; returns the status code and the whole reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    return int(reply.split(b" ", 2)[1]), reply


# ---- Perfetto: the server ------------------------------------------------------------------------


def test_serves_the_exported_trace_with_cors(capture, start_view):
    served = start_view(capture, "--port", str(free_port()))
    run = jaxprof.latest_run(capture)
    trace = run.path / "perfetto_trace.pftrace"
    assert trace.stat().st_mtime_ns > run.mtime_ns
    assert f"Serving {trace} on {served.url}" in served.stdout
    assert served.url == f"http://127.0.0.1:{served.port}/{run.name}.pftrace"
    status, headers, body = get(served.port, served.path)
    assert status == 200 and body == trace.read_bytes() and len(body) > 100
    assert headers["access-control-allow-origin"] == PERFETTO
    assert headers["content-length"] == str(len(body)) and headers["accept-ranges"] == "bytes"


def test_preflight_head_and_ranges(capture, start_view):
    served = start_view(capture, "--port", str(free_port()))
    body = (jaxprof.latest_run(capture).path / "perfetto_trace.pftrace").read_bytes()
    status, headers, reply = get(served.port, served.path, "OPTIONS", {
        "Origin": PERFETTO, "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Private-Network": "true"})
    assert status == 204 and reply == b""
    assert headers["access-control-allow-private-network"] == "true"
    assert headers["access-control-allow-methods"] == "GET, HEAD, OPTIONS"
    assert headers["access-control-allow-origin"] == PERFETTO and headers["access-control-allow-headers"] == "*"
    status, headers, reply = get(served.port, served.path, "HEAD")
    assert status == 200 and reply == b"" and headers["content-length"] == str(len(body))
    status, headers, reply = get(served.port, served.path, headers={"Range": "bytes=0-99"})
    assert status == 206 and reply == body[:100] and headers["content-range"] == f"bytes 0-99/{len(body)}"
    status, _, reply = get(served.port, served.path, headers={"Range": "bytes=-10"})
    assert status == 206 and reply == body[-10:]
    status, headers, _ = get(served.port, served.path, headers={"Range": f"bytes={len(body)}-"})
    assert status == 416 and headers["content-range"] == f"bytes */{len(body)}"


def test_bad_requests_get_4xx_and_the_server_keeps_serving(capture, start_view):
    served = start_view(capture, "--port", str(free_port()))
    port, path = served.port, served.path
    host = f"Host: 127.0.0.1:{port}\r\n".encode()

    def req(line: bytes, headers: bytes = host) -> int:
        return raw(port, line + b"\r\n" + headers + b"\r\n")[0]

    assert req(b"GET /other.pftrace HTTP/1.1") == 404
    assert req(b"GET / HTTP/1.1") == 404
    assert req(b"GET /../etc/passwd HTTP/1.1") == 403
    assert req(b"GET /%2e%2e/%2E%2E/etc/passwd HTTP/1.1") == 403
    assert req(b"GET /a%2f..%2fb HTTP/1.1") == 403
    assert req(b"GET /a%00b HTTP/1.1") == 400
    assert req(b"GET /a\\b HTTP/1.1") == 400
    assert req(b"GET /a%zz HTTP/1.1") == 400
    assert req(b"GET " + path.encode() + b" HTTP/1.1", b"Host: evil.example\r\n") == 403
    assert req(b"GET " + path.encode() + b" HTTP/1.1", f"Host: 127.0.0.1:{port + 1}\r\n".encode()) == 403
    assert req(b"GET " + path.encode() + b" HTTP/1.1", b"") == 400  # no Host at all
    assert req(b"GET " + path.encode() + b" HTTP/1.1", host + b"X-Big: " + b"a" * 20000 + b"\r\n") == 431
    assert req(b"\x16\x03\x01garbage") == 400
    assert req(b"GET") == 400
    status, reply = raw(port, b"POST " + path.encode() + b" HTTP/1.1\r\n" + host + b"Content-Length: 3\r\n\r\nabc")
    assert status == 405 and b"\r\nAllow: GET, HEAD, OPTIONS\r\n" in reply
    assert served.proc.poll() is None
    assert get(port, path)[0] == 200
    # An idle connection (a browser's pre-connect) does not hold up the next request.
    with socket.create_connection(("127.0.0.1", port)):
        started = time.monotonic()
        assert get(port, path)[0] == 200
        assert time.monotonic() - started < 2


def test_sigint_and_sigterm_end_it_with_status_0(capture, start_view):
    served = start_view(capture, "--port", str(free_port()))
    with socket.create_connection(("127.0.0.1", served.port)):  # even with a client connected
        served.proc.send_signal(signal.SIGINT)
        assert served.proc.wait(timeout=5) == 0
    served = start_view(capture, "--port", str(free_port()))
    served.proc.terminate()
    assert served.proc.wait(timeout=5) == 0


def test_fresh_trace_is_reused_and_stale_one_reexported(tmp_path, start_view):
    run = fixture_run(tmp_path)
    trace = run / "perfetto_trace.pftrace"
    trace.write_bytes(b"placed by the test")
    xplane_mtime = (run / "host.xplane.pb.gz").stat().st_mtime
    os.utime(trace, (xplane_mtime + 10, xplane_mtime + 10))
    served = start_view(tmp_path, "--port", str(free_port()))
    assert served.url.endswith("/2024_01_02_03_04_05.pftrace")
    assert get(served.port, served.path)[2] == b"placed by the test"
    served.proc.kill()
    os.utime(trace, (xplane_mtime - 10, xplane_mtime - 10))
    served = start_view(tmp_path, "--port", str(free_port()))
    body = get(served.port, served.path)[2]
    assert body != b"placed by the test" and body == trace.read_bytes() and len(body) > 100


def test_taken_port_moves_to_the_next_with_a_warning(tmp_path, start_view):
    fixture_run(tmp_path)
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        served = start_view(tmp_path, "--port", str(taken))
        assert served.port != taken and get(served.port, served.path)[0] == 200
    assert "only loads traces from http://127.0.0.1:9001" in served.stderr.read_text()


def test_no_run_and_bad_options(tmp_path):
    none = subprocess.run([str(JAXPROF_BIN), "view", str(tmp_path), "--no-browser"], capture_output=True,
                          text=True, timeout=30)
    assert none.returncode == 1 and "no profile" in none.stderr and none.stdout == ""
    for args in (["--ui", "chrome"], ["--port", "70000"], ["--port"], ["--frobnicate"]):
        bad = subprocess.run([str(JAXPROF_BIN), "view", str(tmp_path), *args], capture_output=True, text=True,
                             timeout=30)
        assert bad.returncode == 2 and bad.stderr.startswith("jaxprof: ") and bad.stderr.count("\n") == 1


# ---- TensorBoard ---------------------------------------------------------------------------------


def test_tensorboard_missing_names_the_install_command(tmp_path):
    fixture_run(tmp_path / "logs")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    binary = bin_dir / "jaxprof"
    shutil.copy(JAXPROF_BIN, binary)  # a copy: /proc/self/exe then has no tensorboard beside it
    env = {**os.environ, "PATH": str(tmp_path / "nothing-here")}
    proc = subprocess.run([str(binary), "view", str(tmp_path / "logs"), "--ui", "tensorboard"], capture_output=True,
                          text=True, timeout=30, env=env)
    assert proc.returncode == 1
    assert proc.stderr == ("jaxprof: TensorBoard is not installed. Install it with: python3 -m pip install "
                           "tensorboard tensorboard-plugin-profile\n")


@pytest.mark.parametrize("tool", ["tensorboard", "xprof"])
def test_tensorboard_or_xprof_is_started_with_loopback_and_port(tmp_path, tool):
    logs = tmp_path / "logs"
    fixture_run(logs)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    binary = bin_dir / "jaxprof"
    shutil.copy(JAXPROF_BIN, binary)
    fake = bin_dir / tool  # records how it was started
    fake.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/argv\n')
    fake.chmod(0o755)
    port = free_port()
    proc = subprocess.run([str(binary), "view", str(logs), "--ui", "tensorboard", "--port", str(port)],
                          capture_output=True, text=True, timeout=30, env={**os.environ, "PATH": str(bin_dir)})
    assert proc.returncode == 0, proc.stderr
    assert f"Open: http://127.0.0.1:{port}/\n" in proc.stdout
    argv = (tmp_path / "argv").read_text().split()
    if tool == "tensorboard":
        assert argv == ["--logdir", str(logs), "--host", "127.0.0.1", "--port", str(port)]
    else:
        assert argv == ["--logdir", str(logs), "--port", str(port)]
        assert "listens on every network interface" in proc.stderr


def test_tensorboard_serves_the_log_dir(tmp_path):
    fixture_run(tmp_path)
    port = free_port()
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.Popen([str(JAXPROF_BIN), "view", str(tmp_path), "--ui", "tensorboard", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        assert f"Open: http://127.0.0.1:{port}/" in read_until_link(proc)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
                    assert resp.status == 200
                    break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.5)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        finally:
            stop(proc)


# ---- Python: open_latest_profile and python -m jaxprof.view_profile --------------------------------


def test_open_latest_profile_returns_a_viewer_that_serves_the_file(capture):
    port = free_port()
    with jaxprof.open_latest_profile(capture, port=port, browser=False) as viewer:
        assert viewer is not None and viewer.ui == "perfetto"
        run = jaxprof.latest_run(capture)
        assert viewer.url == f"http://127.0.0.1:{port}/{run.name}.pftrace"
        assert viewer.link == f"{PERFETTO}/#!/?url={viewer.url}"
        with urllib.request.urlopen(viewer.url, timeout=10) as resp:
            assert resp.read() == (run.path / "perfetto_trace.pftrace").read_bytes()
    assert viewer.process.poll() == 0  # closed by the with block


def test_the_server_ends_when_the_python_that_opened_it_is_killed(tmp_path):
    fixture_run(tmp_path)
    port = free_port()
    code = ("import sys, time, jaxprof\n"
            "v = jaxprof.open_latest_profile(sys.argv[1], port=int(sys.argv[2]), browser=False)\n"
            "print(v.url, flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(port)], stdout=subprocess.PIPE,
                            text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith(f"http://127.0.0.1:{port}/") and get(port, "/" + url.split("/", 3)[3])[0] == 200
        proc.kill()  # no atexit, no finalizers
        proc.wait()
        deadline = time.monotonic() + 5
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                break
            assert time.monotonic() < deadline, "the server outlived its parent"
            time.sleep(0.1)
    finally:
        stop(proc)


def test_open_latest_profile_without_a_run_returns_none(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="jaxprof"):
        assert jaxprof.open_latest_profile(tmp_path, browser=False) is None
        deadline = time.monotonic() + 5  # the reason arrives from the child's stderr
        while "no profile" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "no profile" in caplog.text
    with pytest.raises(ValueError):
        jaxprof.open_latest_profile(tmp_path, ui="chrome")  # type: ignore[arg-type]


def test_view_profile_module_lists_and_serves(capture):
    module = [sys.executable, "-m", "jaxprof.view_profile", "--profile-dir", str(capture)]
    listed = subprocess.run([*module, "--list-only"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert jaxprof.latest_run(capture).name in listed.stdout
    port = free_port()
    proc = subprocess.Popen([*module, "--ui", "perfetto", "--port", str(port), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"perfetto: {PERFETTO}/#!/?url=http://127.0.0.1:{port}/"), line
        url = line.strip().split("?url=", 1)[1]
        assert get(port, "/" + url.split("/", 3)[3])[0] == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()  # the server went with it
    finally:
        stop(proc)
