"""Issue 30, section 3: the decoding and loading probes. Each input below used to be read without a
word, hang, take gigabytes, or name the wrong thing; each is now one clean error naming the file and
the byte (exit 2), or a load that finishes with a warning saying what was odd.

- compressed stats that each inflate from 200 KB of gzip to 200 MB: bounded in total, per profile;
- the CPU peaks cache file as a FIFO or a link to /dev/zero: ignored with a warning, loads finish;
- events whose metadata id names no metadata: reported, and exported as "<unknown metadata N>";
- a file cut exactly after a plane: refused when nothing is left to analyse, else a warning;
- a loop of symbolic links, an over-long varint, events nested 300 deep: said as such, with bytes.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from conftest import REAL_CAPTURES, JAXPROF_BIN, run_jaxprof
from xplane_gen import XSpace, _Event, f_bytes, f_varint

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "cpu_small.xplane.pb.gz"
REAL = REAL_CAPTURES


def one_line_error(proc: subprocess.CompletedProcess, path: Path) -> str:
    """The single stderr line of a failed command (exit 2, nothing on stdout), without its prefix."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    prefix = f"jaxprof: {path}: "
    assert proc.stderr.startswith(prefix), proc.stderr
    return proc.stderr[len(prefix):].rstrip("\n")


# ---- 1. compressed stats are bounded in total -----------------------------------------------------

def stat_bomb(path: Path, n_stats: int = 10) -> bytes:
    """A 2 MB profile: one host line whose n_stats events each carry a compressed_str_value stat
    inflating to 200 MB of zeros. Returns the gzip bytes every stat holds."""
    space = XSpace(["h"])
    plane = space.plane("/host:CPU")
    line = plane.line("python", timestamp_ns=1000)
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = z.compress(bytes(200 << 20)) + z.flush()
    sid = plane.stat_id("hlo_op")
    for i in range(n_stats):
        stat = f_varint(1, sid) + f_bytes(8, bomb)
        line.events.append(_Event(plane.event_meta(f"op{i}"), i * 1_000_000, 500_000, 0, f_bytes(4, stat)))
    space.write(path)
    return bomb


def test_compressed_stats_are_bounded_in_total(tmp_path: Path) -> None:
    """Each stat got its own inflate allowance: 2.46 GB and 15 s for this file. Now the first stat
    already passes the profile's total (16 x 2 MB < 64 MiB floor): a clean error at its byte, in a
    process whose peak memory stays far below one inflated stat."""
    path = tmp_path / "bomb.xplane.pb"
    bomb = stat_bomb(path)
    assert 1_900_000 < path.stat().st_size < 2_200_000
    first = path.read_bytes().find(bomb)
    measure = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "print(p.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
               "sys.stdout.write(p.stderr)")
    out = subprocess.run([sys.executable, "-c", measure, str(JAXPROF_BIN), "report", str(path)],
                         capture_output=True, text=True, timeout=120).stdout.split("\n", 2)
    assert out[0] == "2", out
    assert int(out[1]) < 400_000, f"peak RSS {out[1]} KiB"  # one inflated stat is 204,800 KiB
    assert out[2] == (
        f"jaxprof: {path}: compressed stat at byte {first}: the profile's compressed stats inflate to more than "
        "67108864 bytes (the limit: 16 times the XSpace's size, at least 64 MiB, at most 1 GiB, for all compressed "
        "stats together); if the file is genuine, raise it with --max-inflate SIZE or JAXPROF_MAX_INFLATE\n")


def test_compressed_stats_within_the_limit_still_inflate(tmp_path: Path) -> None:
    """--max-inflate raises the total, as for gzip files: two 200 MB stats then load."""
    path = tmp_path / "two.xplane.pb"
    stat_bomb(path, n_stats=2)
    proc = run_jaxprof("ops", path, "--json", "--max-inflate", "1G", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert {op["name"] for op in json.loads(proc.stdout)["ops"]} <= {"op0", "op1"}


# ---- 2. the CPU peaks cache file cannot hang a load -----------------------------------------------

def peaks_cache(tmp_path: Path, kind: str) -> Path:
    cache = tmp_path / f"cache-{kind}"
    cache.mkdir()
    peaks = cache / "cpu_peaks"
    if kind == "fifo":
        os.mkfifo(peaks)
    else:
        peaks.symlink_to("/dev/zero")
    return cache


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_cpu_peaks_file_that_is_no_file_is_ignored(tmp_path: Path, kind: str, launch_view, monkeypatch) -> None:
    """`jaxprof report`, `jaxprof.load` and the viewer each waited for ever on a FIFO (or read
    /dev/zero without end) at JAXPROF_CACHE_DIR/cpu_peaks. They finish, the report saying why the
    calibration was not used."""
    cache = peaks_cache(tmp_path, kind)
    monkeypatch.setenv("JAXPROF_CACHE_DIR", str(cache))
    warning = f"warning: CPU peaks: {cache}/cpu_peaks: ignored: not a regular file (jaxprof calibrate writes one)\n"
    proc = run_jaxprof("report", FIXTURE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert warning in proc.stdout
    doc = json.loads(run_jaxprof("report", FIXTURE, "--json", timeout=60).stdout)
    assert doc["warnings"] == [warning[len("warning: "):-1]]

    code = "import sys, jaxprof; a = jaxprof.load(sys.argv[1]); print(len(a.steps())); print(a.warnings())"
    py = subprocess.run([sys.executable, "-c", code, str(FIXTURE)], capture_output=True, text=True, timeout=120,
                        env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert py.returncode == 0, py.stderr
    assert py.stdout == f"3\n{[warning[len('warning: '):-1]]}\n"

    run = tmp_path / "logs" / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    (run / "vm.xplane.pb.gz").write_bytes(FIXTURE.read_bytes())
    server, out, _ = launch_view(tmp_path / "logs", "--ui", "builtin", "--port", "0")
    port = int(out.split("http://127.0.0.1:")[1].split("/")[0])
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/api/runs")
    rid = json.loads(conn.getresponse().read())[0]["id"]
    conn.request("GET", f"/api/run/{rid}/overview")
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 200 and body["platform"] == "cpu", body
    assert server.poll() is None


# ---- 3. events whose metadata id names no metadata ------------------------------------------------

def test_events_naming_no_metadata_are_reported(tmp_path: Path) -> None:
    """They read as ops with an empty name and nothing said: the report now warns (count, plane,
    line, first byte) and the trace export names them "<unknown metadata N>"."""
    space = XSpace(["h"])
    line = space.plane("/host:CPU").line("python", timestamp_ns=1000)
    line.span("known", 1, 2)
    line.events.append(_Event(123, 5_000_000, 1_000_000, 0, b""))
    line.events.append(_Event(124, 7_000_000, 1_000_000, 0, b""))
    path = space.write(tmp_path / "unknown.xplane.pb")
    data = path.read_bytes()
    first = data.find(f_varint(1, 123) + f_varint(2, 5_000_000))  # the second event's body
    proc = run_jaxprof("report", path)
    assert proc.returncode == 0, proc.stderr
    assert (f"\nwarning: {path}: 2 events on /host:CPU/python name metadata ids the plane does not define "
            f"(first at byte {first})\n") in proc.stdout
    out = tmp_path / "t.json"
    proc = run_jaxprof("export", path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    names = [e["name"] for e in json.loads(out.read_text())["traceEvents"] if e.get("ph") == "X"]
    assert sorted(names) == ["<unknown metadata 123>", "<unknown metadata 124>", "known"]
    proc = run_jaxprof("export", path, "-o", tmp_path / "t.pftrace", "--format", "perfetto")
    assert proc.returncode == 0, proc.stderr
    assert b"<unknown metadata 124>" in (tmp_path / "t.pftrace").read_bytes()


# ---- 4. a file cut exactly after a plane -----------------------------------------------------------

def test_cut_after_a_plane_is_noticed(tmp_path: Path) -> None:
    """cpu_small holds /host:metadata (no events), /host:CPU, Task Environment, then its hostname.
    Cut after the first plane it read as a valid empty profile: now an error at the end of the
    file. Cut after a plane with events it loads, with a warning that it looks cut."""
    raw = gzip.decompress(FIXTURE.read_bytes())
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(raw[:4835])
    assert one_line_error(run_jaxprof("report", cut), cut) == (
        "file ends at byte 4835, right after plane 1: the file looks truncated (no hostnames field follows the planes)")
    later = tmp_path / "later.xplane.pb"
    later.write_bytes(raw[:8132])
    proc = run_jaxprof("report", later)
    assert proc.returncode == 0, proc.stderr
    assert (f"warning: {later}: file ends at byte 8132, right after plane 2: the file looks truncated (no hostnames "
            "field follows the planes)\n") in proc.stdout


def test_real_captures_all_still_load() -> None:
    """Never reject a real capture: every one loads; only XProf's TPU test file, which holds no
    hostnames at all, gets the warning."""
    captures = sorted(p for p in REAL.glob("*.xplane.pb.gz") if not p.name.startswith("mangled"))
    assert len(captures) == 8
    warned = []
    for path in captures:
        doc = json.loads(run_jaxprof("report", path, "--json", timeout=120).stdout)
        warned += [path.name for w in doc["warnings"] if "looks truncated" in w]
    assert warned == ["jax_tpu_v6e_4core_inference.xplane.pb.gz"]


# ---- 5-7. links, varints, nesting --------------------------------------------------------------------

def test_symlink_loop_is_named(tmp_path: Path) -> None:
    a, b = tmp_path / "a.xplane.pb", tmp_path / "b.xplane.pb"
    a.symlink_to(b)
    b.symlink_to(a)
    assert one_line_error(run_jaxprof("report", a), a) == "cannot open: too many levels of symbolic links"


def test_overlong_varint_is_malformed_not_truncated(tmp_path: Path) -> None:
    path = tmp_path / "varint.xplane.pb"
    path.write_bytes(b"\x0a\x0d\x08" + b"\xff" * 11 + b"\x01")  # plane { id: an 12-byte varint }
    assert one_line_error(run_jaxprof("report", path), path) == (
        "malformed varint at byte 3 in XPlane: more than 10 bytes (a varint holds at most 10 bytes, 64 bits)")


def test_deep_nesting_names_file_and_byte(tmp_path: Path) -> None:
    """300 events each inside the one before, on one thread: the 257th is named by its byte (the
    message named the host and a time)."""
    space = XSpace(["deep"])
    line = space.plane("/host:CPU").line("python", timestamp_ns=0)
    for k in range(300):
        line.span("scope", k, 600 - k)
    path = space.write(tmp_path / "deep.xplane.pb")
    data = path.read_bytes()
    meta = space.plane("/host:CPU").event_meta("scope")
    at = data.find(f_varint(1, meta) + f_varint(2, 256 * 1_000_000))
    assert one_line_error(run_jaxprof("report", path), path) == (
        f"XEvent at byte {at}: events nested more than 256 deep on line 'python' of plane '/host:CPU' (host deep, "
        "the event at 256000000 ps): jaxprof reads at most 256 levels")
