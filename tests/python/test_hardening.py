"""Issue 19 (hardening, round two), the items done so far: a FIFO or other non-regular input is refused
at once (it used to hang for ever), and an output that is the input is refused before anything is
written. The timeouts turn a regression (a hang) into a failure instead of a stuck test run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL_CAPTURES, run_jaxprof
from test_hardening_truncate import get

DATA = Path(__file__).resolve().parents[1] / "data" / "cpu_small.xplane.pb.gz"


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.xplane.pb"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("argv", [["report"], ["ops", "--json"], ["export", "-o", "{tmp}/o.json.gz"], ["diff", "{data}"]])
def test_a_fifo_is_refused_not_waited_on(fifo: Path, tmp_path: Path, argv: list[str]) -> None:
    args = [a.format(tmp=tmp_path, data=DATA) for a in argv]
    proc = run_jaxprof(args[0], fifo, *args[1:], timeout=30)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{fifo}: not a regular file" in proc.stderr
    assert not (tmp_path / "o.json.gz").exists()


def test_a_fifo_is_refused_by_the_python_package(fifo: Path) -> None:
    code = f"import jaxprof\ntry:\n    jaxprof.load({str(fifo)!r})\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "not a regular file" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("argv", [["export", "-o"], ["report", "--html"], ["flame", "--pprof"], ["flame", "--folded", "-o"]])
def test_an_output_that_is_the_input_is_refused(tmp_path: Path, argv: list[str]) -> None:
    run = tmp_path / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    src = run / "host.xplane.pb.gz"
    shutil.copyfile(DATA, src)
    link = tmp_path / "alias.gz"
    link.symlink_to(src)  # another name for the same file counts too
    for target, given in ((src, src), (link, tmp_path)):
        proc = run_jaxprof(argv[0], given, *argv[1:], target, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == f"jaxprof: {target}: the output would overwrite the input {src}; write elsewhere\n"
        assert src.read_bytes() == DATA.read_bytes()  # the input is untouched
    ok = run_jaxprof(argv[0], src, *argv[1:], tmp_path / "elsewhere.out", timeout=60)
    assert ok.returncode == 0, ok.stderr


# ---- the viewer: run files swapped under it (item 3) ----------------------------------------------

TPU = REAL_CAPTURES / "jax_tpu_v6e_4core_inference.xplane.pb.gz"


def test_viewer_never_follows_a_run_file_swapped_for_a_link_or_a_fifo(tmp_path: Path, launch_view) -> None:
    """Someone who can write to the log directory swaps a run's file, again and again, for a symbolic
    link to a profile outside it (here a TPU capture; the run is a CPU one) and for a FIFO. The viewer
    lists the file as a regular file and then opens it: whatever it opens must be that same file.
    It may answer an error for a swapped file, but never the outside profile, and never hang."""
    import threading
    import time

    run = tmp_path / "logs" / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    target = run / "host.xplane.pb.gz"
    master = run / "master.bin"  # the run's real file, linked into place (no xplane suffix: not listed)
    shutil.copyfile(DATA, master)
    os.link(master, target)
    proc, out, _ = launch_view(tmp_path / "logs", "--ui", "builtin", "--port", "0")
    port = int(out.split("http://127.0.0.1:")[1].split("/")[0])

    stop = threading.Event()

    def swap() -> None:
        kinds = [lambda p: os.link(master, p), lambda p: os.symlink(TPU, p), os.mkfifo]
        i = 0
        while not stop.is_set():
            tmp = run / f"swap{i}"
            kinds[i % 3](tmp)
            os.replace(tmp, target)
            i += 1

    rid = get(port, "/api/runs")[1][0]["id"]
    swapper = threading.Thread(target=swap)
    swapper.start()
    # Every request a fresh load: host filters that all select the host, more than the 4 cached runs.
    hosts = ["h", "ho", "hos", "host", "o", "os", "ost", "s", "st", "t"]
    answers: dict[int, int] = {}
    deadline = time.monotonic() + 6
    try:
        i = 0
        while time.monotonic() < deadline:
            status, doc = get(port, f"/api/run/{rid}/overview?host={hosts[i % len(hosts)]}")
            i += 1
            answers[status] = answers.get(status, 0) + 1
            if status == 200:
                assert doc["platform"] == "cpu", doc["platform"]  # the run's own file, never the TPU one
            else:
                # the listing saw the link or FIFO (404, no profile), or the file changed after it (500)
                assert status in (404, 500) and "plugins/profile/r" in doc["error"], (status, doc)
    finally:
        stop.set()
        swapper.join()
    assert proc.poll() is None and answers.get(200, 0) > 0, answers


# ---- gzip inputs (item 8) ---------------------------------------------------------------------------

def test_gzip_members_trailing_bytes_and_the_inflate_limit(tmp_path: Path) -> None:
    import gzip
    import zlib

    raw = gzip.decompress(DATA.read_bytes())
    whole = run_jaxprof("ops", DATA, "--json", timeout=60)
    # `cat a.gz b.gz` is one gzip stream to gzip, and to jaxprof.
    two = tmp_path / "two.xplane.pb.gz"
    two.write_bytes(gzip.compress(raw[:4000]) + gzip.compress(raw[4000:]))
    got = run_jaxprof("ops", two, "--json", timeout=60)
    assert got.returncode == 0 and json_ops(got.stdout) == json_ops(whole.stdout)
    # Anything but zero padding after the last member is damage, said with its offset.
    tail = tmp_path / "tail.xplane.pb.gz"
    tail.write_bytes(DATA.read_bytes() + b"appended")
    got = run_jaxprof("ops", tail, timeout=60)
    size = DATA.stat().st_size
    assert got.returncode == 2 and got.stderr == (
        f"jaxprof: {tail}: corrupt gzip data at byte {size}: 8 bytes after the end of the gzip data are not gzip "
        "(damaged, or something was appended)\n")
    # A bomb: 300 MiB of zeros in 300 KB stops at 256 MiB, not at 8 GiB; --max-inflate raises the limit.
    bomb = tmp_path / "bomb.xplane.pb.gz"
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb.write_bytes(z.compress(bytes(300 << 20)) + z.flush())
    got = run_jaxprof("ops", bomb, timeout=120)
    assert got.returncode == 2 and "inflates beyond 268435456 bytes (the limit: 64 times the compressed size" in got.stderr
    assert "--max-inflate" in got.stderr
    got = run_jaxprof("ops", bomb, "--max-inflate", "400M", timeout=120)
    assert got.returncode == 2 and "corrupt XSpace at byte 0" in got.stderr  # inflated: zeros are no profile
    got = run_jaxprof("ops", DATA, "--max-inflate", "1.5G", timeout=60)
    assert got.returncode == 2 and got.stderr.startswith("jaxprof: --max-inflate needs a size in bytes")


def json_ops(text: str) -> list:
    import json

    return [(o["name"], o["count"], o["total_ms"]) for o in json.loads(text)["ops"]]


def test_calibrate_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    from jaxprof.calibrate import CpuPeaks, write

    victim = tmp_path / "victim"
    victim.write_text("keep me")
    path = tmp_path / "cpu_peaks.txt"
    path.with_name(path.name + ".tmp").symlink_to(victim)  # the old fixed temporary name
    assert write(CpuPeaks("h", 1.5, 20.0), path) == path
    assert victim.read_text() == "keep me"
    assert "peak_tflops=1.5\n" in path.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu_peaks.txt", "cpu_peaks.txt.tmp", "victim"]
