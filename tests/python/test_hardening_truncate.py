"""Issue 19, item 1: a profile that shrinks while jaxprof reads it (another process rewriting it, a
copy being replaced) never kills the reader. jaxprof used to map files: a page past the new end then
raised SIGBUS, which killed `jaxprof report` (exit 135), the Python process inside `jaxprof.load`,
and the viewer, even long after the load (its cached timeline kept the mapping).

Each test truncates the file at several moments while the reader runs and asserts the only outcomes
a user may see: the full answer (the read was done before the cut) or exit 2 / an exception / an
HTTP error naming the file as truncated. No moment may give a signal."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import JAXPROF_BIN, run_jaxprof

ROOT = Path(__file__).resolve().parents[2]
# Moments of the cut, in seconds after the reader starts: while it reads the file, while it decodes
# it, and after; None: just before it starts (the one moment whose outcome is certain: an error).
CUTS = [None, 0.0, 0.03, 0.1, 0.25, 0.5]


@pytest.fixture(scope="module")
def big_profiles(tmp_path_factory) -> dict[str, bytes]:
    """Synthetic profiles large enough that reading and decoding them take a while: a CPU layout
    (host-heavy: one thread) and a GPU layout (device-heavy: the loader's second thread)."""
    out = tmp_path_factory.mktemp("big")
    blobs = {}
    for layout in ("cpu", "gpu"):
        path = out / f"{layout}.xplane.pb"
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_xplane.py"), "--layout", layout,
                        "--size-mb", "24", "-o", str(path)], check=True, capture_output=True)
        blobs[layout] = path.read_bytes()
    return blobs


def cut_later(path: Path, delay: float | None, keep: int) -> None:
    if delay is not None:
        time.sleep(delay)
        os.truncate(path, keep)


def assert_truncated_message(text: str, path: Path) -> None:
    """The file named and the cut: caught while reading it ("truncated at byte N while being
    read"; "changed while being read" when the size seen first was already the cut one but the
    cut's time stamp came after it) or met while decoding the bytes read ("truncated XSpace at
    byte N")."""
    assert f"{path}: truncated" in text or f"{path}: changed while being read" in text, text


@pytest.mark.parametrize("threads", ["1", "2"])
def test_report_survives_the_file_shrinking(tmp_path: Path, big_profiles: dict[str, bytes], threads: str) -> None:
    blob = big_profiles["gpu"]
    path = tmp_path / "host.xplane.pb"
    for delay in CUTS:
        path.write_bytes(blob)
        if delay is None:
            os.truncate(path, len(blob) // 3)
        proc = subprocess.Popen([str(JAXPROF_BIN), "report", str(path), "--threads", threads],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cut_later(path, delay, len(blob) // 3)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 2), f"cut at {delay}s: exit {proc.returncode} ({err[-300:]})"
        assert proc.returncode == 2 or delay is not None
        if proc.returncode == 2:
            assert out == "" and err.startswith("jaxprof: ")
            assert_truncated_message(err, path)


LOAD = """
import sys, jaxprof
print("ready", flush=True)
sys.stdin.readline()  # go
try:
    p = jaxprof.load(sys.argv[1])
    print("loaded", len(p.ops()))
except (ValueError, OSError, RuntimeError) as e:  # truncated: ValueError (jaxprof's corrupt input)
    print("error", type(e).__name__, e)
"""


@pytest.mark.parametrize("layout", ["cpu", "gpu"])
def test_python_load_survives_the_file_shrinking(tmp_path: Path, big_profiles: dict[str, bytes], layout: str) -> None:
    blob = big_profiles[layout]
    path = tmp_path / "host.xplane.pb"
    for delay in CUTS:
        path.write_bytes(blob)
        proc = subprocess.Popen([sys.executable, "-c", LOAD, str(path)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "ready\n"  # the interpreter and the package start first
        if delay is None:
            os.truncate(path, len(blob) // 3)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        cut_later(path, delay, len(blob) // 3)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"cut at {delay}s: exit {proc.returncode} ({err[-300:]})"
        kind = out.split()[0]
        assert kind == "error" or delay is not None
        if kind == "error":
            assert_truncated_message(out, path)


def get(port: int, target: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", target)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def serve_one_run(tmp_path: Path, blob: bytes, launch_view) -> tuple[subprocess.Popen, int, str, Path]:
    """`jaxprof view` of a log directory whose one run is blob: (server, port, run id, run file)."""
    run = tmp_path / "logs" / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    path = run / "host.xplane.pb"
    path.write_bytes(blob)
    proc, out, _ = launch_view(tmp_path / "logs", "--ui", "builtin", "--port", "0")
    port = int(out.split("http://127.0.0.1:")[1].split("/")[0])
    return proc, port, get(port, "/api/runs")[1][0]["id"], path


def test_viewer_keeps_serving_when_a_loaded_run_shrinks(tmp_path: Path, big_profiles: dict[str, bytes], launch_view) -> None:
    """The run is loaded and its timeline indexed (which keeps the decoded file); then the file is
    cut. Every later request for the run answers an error naming the truncation, other requests
    are still answered, and once the file is whole again the run is served again, fresh."""
    blob = big_profiles["gpu"]
    proc, port, rid, path = serve_one_run(tmp_path, blob, launch_view)
    status, window = get(port, f"/api/run/{rid}/timeline?px=1000")
    assert status == 200
    track = next(t for t in window["tracks"] if t["events"])
    event = f"/api/run/{rid}/event?track={track['id']}&index=0"
    status, before = get(port, event)
    assert status == 200 and get(port, f"/api/run/{rid}/overview")[0] == 200

    os.truncate(path, len(blob) // 2)
    for target in (event, f"/api/run/{rid}/timeline?px=1000", f"/api/run/{rid}/overview"):
        status, doc = get(port, target)
        assert status == 500, (target, status)
        assert_truncated_message(doc["error"], path)
    assert get(port, "/api/runs")[0] == 200 and proc.poll() is None

    path.write_bytes(blob)  # whole again: served again, from a fresh load
    assert get(port, f"/api/run/{rid}/overview")[0] == 200
    assert get(port, event) == (200, before)


def test_viewer_survives_a_cut_during_its_first_load(tmp_path: Path, big_profiles: dict[str, bytes], launch_view) -> None:
    blob = big_profiles["gpu"]
    proc, port, rid, path = serve_one_run(tmp_path, blob, launch_view)
    for delay in CUTS:
        path.write_bytes(blob)
        if delay is None:
            os.truncate(path, len(blob) // 3)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("GET", f"/api/run/{rid}/timeline?px=1000")
        cut_later(path, delay, len(blob) // 3)
        status = conn.getresponse().status
        conn.close()
        assert status in ((500,) if delay is None else (200, 500)) and proc.poll() is None, (delay, status)
    assert get(port, "/api/runs")[0] == 200
