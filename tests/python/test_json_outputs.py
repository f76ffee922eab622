"""Every JSON output stays valid JSON and valid UTF-8 whatever bytes a profile's names hold: an
XPlane's names are bytes, so a capture may name an op `dot\\xff\\xfe` (issue 22: `ops --json` wrote
those bytes as they were). One synthetic GPU profile whose op, kernel, thread and run names hold
invalid UTF-8 (stray bytes, an overlong form, a surrogate, a sequence cut short), quotes, backslashes
and control characters; each output is decoded as strict UTF-8 and parsed with json.loads, and
the names must come back exactly, each byte that is not UTF-8 as one U+FFFD."""
from __future__ import annotations

import gzip
import http.client
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import jaxprof
from conftest import JAXPROF_BIN
from test_view import free_port
from xplane_gen import XSpace

# Placeholders written through xplane_gen (which takes str), then swapped for the same number of
# raw bytes in the encoded XSpace, so every length prefix stays right.
RAW = {
    "dotQ~": b"dot\xff\xfe",      # bytes that are never UTF-8 (the op)
    "sR~~": b"s\xed\xa0\x80",     # the UTF-8 form of surrogate U+D800
    "oV~": b"o\xc0\xaf",          # an overlong '/'
    "tW~": b"t\xe2\x82",          # a three-byte sequence cut short
    "thrZ~": b"thr\xc3\x28",      # a lead byte, then no continuation byte
}
OTHER_OPS = ["q\"\\\n\t\x01\x7f", "é€𝄞"]  # escapes, and UTF-8 that must stay as it is
# What each name reads as in the JSON: one U+FFFD per byte that is not part of a UTF-8 character.
OPS = {"dot\ufffd\ufffd", "s\ufffd\ufffd\ufffd", "o\ufffd\ufffd", "t\ufffd\ufffd", *OTHER_OPS}
KERNELS = {"k_" + name for name in OPS}
THREAD = "thr\ufffd("
RUN_DIR = b"run\xff"
RUN = "run\ufffd"


def write_profile(path: Path) -> Path:
    space = XSpace(hostnames=["gpu-host"])
    host = space.plane("/host:CPU")
    host.line("python3", id=7).span("train", 0, 1000, {"_r": 1, "step_num": 5})
    host.line("thrZ~", id=8).span("launch", 10, 20)
    stream = space.plane("/device:GPU:0").line("Stream #7(Compute)", id=7)
    for i, name in enumerate([n for n in RAW if n != "thrZ~"] + OTHER_OPS):
        stream.span("k_" + name, 100 + 50 * i, 140 + 50 * i, {"hlo_module": "jit_step", "hlo_op": name})
    data = space.encode()
    for placeholder, raw in RAW.items():
        assert len(placeholder.encode()) == len(raw) and placeholder.encode() in data
        data = data.replace(placeholder.encode(), raw)
    path.write_bytes(data)
    return path


def strict_json(raw: bytes) -> Any:
    """The document, refusing any byte that is not UTF-8 (json.loads on bytes would let the
    encoded surrogates through) and, as json.loads does, raw control characters in strings."""
    return json.loads(raw.decode("utf-8"))


def strings(doc: Any) -> set[str]:
    """Every string in the document, keys and values, at any depth."""
    if isinstance(doc, str):
        return {doc}
    if isinstance(doc, dict):
        return set(doc) | {s for v in doc.values() for s in strings(v)}
    if isinstance(doc, list):
        return {s for v in doc for s in strings(v)}
    return set()


def cli(*args: str | Path) -> bytes:
    """stdout of the jaxprof under test, as bytes (text mode would decode them first)."""
    proc = subprocess.run([str(JAXPROF_BIN), *map(str, args)], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("json_outputs")
    run = Path(os.fsdecode(bytes(root / "plugins" / "profile") + b"/" + RUN_DIR))
    run.mkdir(parents=True)
    write_profile(run / "gpu-host.xplane.pb")
    return root


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    """The profile under a plain ASCII path: what goes wrong is the names' doing."""
    return write_profile(tmp_path_factory.mktemp("plain") / "gpu-host.xplane.pb")


def test_ops_json_names_every_op_exactly(profile):
    doc = strict_json(cli("ops", profile, "--json"))
    assert {r["name"] for r in doc["ops"]} == OPS


def test_python_api_reads_the_names(profile):
    """The Python API parses the same documents (the extension hands them over as str: bytes that
    are not UTF-8 used to fail there)."""
    p = jaxprof.load(profile)
    assert {r["name"] for r in p.ops()} == OPS
    assert {r["name"] for r in strict_json(p.render("kernels", "json").encode())["kernels"]} == KERNELS


def test_a_path_that_is_not_utf8(log_dir):
    (run,) = (log_dir / "plugins" / "profile").iterdir()
    doc = strict_json(cli("ops", run, "--json"))
    assert doc["path"] == str(log_dir / "plugins" / "profile" / RUN)
    assert {r["name"] for r in doc["ops"]} == OPS


@pytest.mark.parametrize("section", ["report", "kernels", "steps", "scopes", "findings", "hosts"])
def test_every_section_parses(profile, section):
    doc = strict_json(cli(section, profile, "--json"))
    if section in ("report", "kernels"):
        assert {r["name"] for r in doc["kernels"]} == KERNELS
        assert {r["op"] for r in doc["kernels"]} == OPS


def test_chrome_export_parses(profile, tmp_path):
    out = tmp_path / "trace.json.gz"
    subprocess.run([str(JAXPROF_BIN), "export", str(profile), "-o", str(out), "--format", "chrome"],
                   check=True, capture_output=True, timeout=120)
    doc = strict_json(gzip.decompress(out.read_bytes()))
    names = {e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    assert KERNELS <= names and OPS <= names
    threads = {e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert THREAD in threads


def test_list_json_names_the_run(log_dir):
    doc = strict_json(cli("list", log_dir, "--json"))
    (run,) = doc["runs"]
    assert run["name"] == RUN and run["path"].endswith(f"/plugins/profile/{RUN}")


class Viewer:
    """A client of a running `jaxprof view`, keeping every answer's raw bytes."""

    def __init__(self, port: int) -> None:
        self.port = port

    def json(self, path: str) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == 200, (path, resp.status, body[:300])
            return strict_json(body)
        finally:
            conn.close()


@pytest.fixture
def viewer(log_dir: Path, launch_view: Callable[..., tuple]) -> Iterator[Viewer]:
    port = free_port()
    launch_view(log_dir, "--ui", "builtin", "--port", str(port))
    yield Viewer(port)


def test_viewer_api_parses(viewer):
    (run,) = viewer.json("/api/runs")
    assert run["name"] == RUN
    rid = run["id"]
    assert {r["name"] for r in viewer.json(f"/api/run/{rid}/ops")["ops"]} == OPS
    timeline = viewer.json(f"/api/run/{rid}/timeline?px=1000000")
    found = strings(timeline)
    assert KERNELS <= found and OPS <= found
    tracks = ",".join(str(t["id"]) for t in timeline["tracks"])
    totals = viewer.json(f"/api/run/{rid}/timeline/aggregate?start_us=0&end_us=1000&tracks={tracks}")
    assert KERNELS <= strings(totals)
    # every event's detail (an event is [start_us, dur_us, name, level, index])
    details = set()
    for track in timeline["tracks"]:
        for ev in track["events"]:
            details |= strings(viewer.json(f"/api/run/{rid}/event?track={track['id']}&index={ev[4]}"))
    assert KERNELS <= details and OPS <= details
