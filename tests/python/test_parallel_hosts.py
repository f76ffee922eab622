"""A run of several host files is read on several threads (`--threads N`, by default one file per
CPU), each host into a model of its own, merged in file order (docs/design.md "Multi-host
profiles"). Every output of every section, as text, JSON and CSV, the HTML report, the exports and
the errors, is byte-for-byte what one thread (`--threads 1`, the files read one after another)
gives: on a real two-process jax.distributed job, on generated CPU and GPU hosts, on runs mixing
real TPU, GPU (command buffers), ROCm and TensorFlow captures, and on runs whose hosts fail."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import JAXPROF_BIN, REAL_CAPTURES, SECTIONS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gen_xplane  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
THREADS = ("2", "3", "8")


def run(*args: str, threads: str, out: Path | None = None) -> tuple[int, str, str, bytes]:
    """`jaxprof ARGS --threads N`: exit code, stdout, stderr, and the bytes of the file it wrote."""
    if out is not None and out.exists():
        out.unlink()
    p = subprocess.run([str(JAXPROF_BIN), *args, "--threads", threads], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr, out.read_bytes() if out is not None and out.exists() else b""


def outputs(path: Path, tmp: Path, threads: str, every: bool) -> dict[str, tuple]:
    """Every output of the run at `path` (every section as text, JSON and CSV when `every`, else the
    report's JSON, the hosts table and the exports)."""
    got = {}
    for section in SECTIONS if every else ["report", "hosts"]:
        for fmt in (["--json"], ["--csv"], ["--width", "120"]):
            got[f"{section} {fmt[0]}"] = run(section, str(path), *fmt, threads=threads)
    got["steps window"] = run("report", str(path), "--steps", "1:2", "--width", "120", threads=threads)
    got["host filter"] = run("report", str(path), "--host", "b", "--json", threads=threads)
    html = tmp / "report.html"
    got["html"] = run("report", str(path), "--html", str(html), threads=threads, out=html)
    for fmt in ("chrome", "perfetto"):
        trace = tmp / f"trace.{fmt}"
        got[f"export {fmt}"] = run("export", str(path), "--format", fmt, "-o", str(trace), threads=threads, out=trace)
    folded = tmp / "flame.txt"
    got["folded"] = run("flame", str(path), "--folded", "-o", str(folded), threads=threads, out=folded)
    return got


def assert_same_outputs(path: Path, tmp: Path) -> dict[str, tuple]:
    one = outputs(path, tmp, "1", every=True)
    assert one["report --json"][0] == 0, one["report --json"][2]
    for n in THREADS:
        many = outputs(path, tmp, n, every=n == "2")
        for name, got in many.items():
            assert got == one[name], f"{name} with --threads {n} differs from --threads 1"
    return one


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """Small generated hosts of both layouts, each its own seed, as one run."""
    d = tmp_path_factory.mktemp("gen")
    for i, (layout, seed) in enumerate([("cpu", 1), ("gpu", 2), ("cpu", 3), ("gpu", 4), ("cpu", 5)]):
        gen_xplane.generate(d / f"{'abcde'[i]}.xplane.pb", layout, size_mb=0.6, seed=seed)
    return d


def test_generated_hosts_read_in_parallel_give_every_output_of_one_thread(generated, tmp_path):
    one = assert_same_outputs(generated, tmp_path)
    assert json.loads(one["report --json"][1])["hosts"] == ["a", "b", "c", "d", "e"]


def test_a_real_two_process_job_gives_every_output_of_one_thread(tmp_path):
    from test_multihost import run_job  # the jax.distributed job on CPU (gloo), two processes
    run_job(tmp_path / "logs", "--slow", "3,4", "--late", "0.5")
    run_dir = next((tmp_path / "logs").rglob("*.xplane.pb")).parent
    assert len(list(run_dir.glob("*.xplane.pb"))) == 2
    one = assert_same_outputs(run_dir, tmp_path)
    doc = json.loads(one["report --json"][1])
    assert len(doc["hosts"]) == 2 and doc["clock_method"] and doc["stragglers"]  # aligned, a straggler named


def test_real_captures_of_every_layout_as_hosts_give_every_output_of_one_thread(tmp_path):
    """TPU twice (run ids of TPU executions count the earlier hosts'), H200 command buffers twice
    (kernel sums and their ops shared across hosts), ROCm, TensorFlow on V100s, XLA:CPU."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    hosts = [REAL_CAPTURES / "jax_tpu_v6e_4core_inference.xplane.pb.gz", DATA / "gpu" / "h200_scan_cb.xplane.pb.gz",
             REAL_CAPTURES / "mi300_jax08_conv.xplane.pb.gz", REAL_CAPTURES / "jax_tpu_v6e_4core_inference.xplane.pb.gz",
             DATA / "gpu" / "h200_transformer_cb.xplane.pb.gz", REAL_CAPTURES / "tf_bert_8xv100_worker0.xplane.pb.gz",
             DATA / "gpu" / "h200_scan_cb.xplane.pb.gz", DATA / "cpu_small.xplane.pb.gz"]
    for i, src in enumerate(hosts):
        dst = run_dir / f"host{i}.xplane.pb.gz"
        if src.is_relative_to(REAL_CAPTURES):
            os.link(src, dst)  # real captures are never copied
        else:
            shutil.copyfile(src, dst)  # committed fixtures
    one = assert_same_outputs(run_dir, tmp_path)
    assert json.loads(one["report --json"][1])["hosts"] == [f"host{i}" for i in range(len(hosts))]


def test_hosts_that_use_an_earlier_hosts_hlo_give_every_output_of_one_thread(generated, tmp_path):
    """b and d have no HLO metadata of their own (the plane renamed): read one after another, their
    ops take a's HloProtos (same program ids), so their parts cannot be merged as they are; they
    are built in place and the workers go on after each."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    stripped = (generated / "a.xplane.pb").read_bytes().replace(b"/host:metadata", b"/host:metadatx")
    for name in ("a", "c"):
        os.link(generated / f"{name}.xplane.pb", run_dir / f"{name}.xplane.pb")
    for name in ("b", "d"):
        (run_dir / f"{name}.xplane.pb").write_bytes(stripped)
    one = assert_same_outputs(run_dir, tmp_path)
    host_ops = json.loads(one["report --json"][1])["host_ops"]
    for host in ("b", "d"):  # a's HLO: category, scope and source line, which b's own file lacks
        op = next(op for op in host_ops[host] if op["name"] == "ynn_fusion.2")
        assert op["category"] == "custom fusion" and op["source"] == "/workspace/model/train.py:71", op


def corrupt(src: Path, dst: Path, at: float) -> None:
    """src with 12 bytes at fraction `at` of it overwritten by 0xff: a malformed varint there."""
    b = bytearray(src.read_bytes())
    k = int(len(b) * at)
    b[k:k + 12] = b"\xff" * 12
    dst.write_bytes(bytes(b))


def errors(path: Path) -> set[tuple]:
    got = set()
    for n in ("1",) + THREADS:
        code, out, err, _ = run("report", str(path), "--json", threads=n)
        got.add((code, out, err))
    return got


def test_a_corrupt_host_in_the_middle_fails_as_one_thread_fails(generated, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("a", "b", "d", "e"):
        os.link(generated / f"{name}.xplane.pb", run_dir / f"{name}.xplane.pb")
    corrupt(generated / "c.xplane.pb", run_dir / "c.xplane.pb", 0.5)
    got = errors(run_dir)
    assert len(got) == 1, got  # one exit code, output and message whatever the thread count
    code, out, err = got.pop()
    assert code == 2 and out == ""
    assert err.startswith(f"jaxprof: {run_dir / 'c.xplane.pb'}: malformed varint at byte "), err


def test_of_two_failing_hosts_the_first_in_file_order_is_reported(generated, tmp_path):
    """b fails late in its file, d at once: d's error comes first in time, b's is the one reported."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("a", "c", "e"):
        os.link(generated / f"{name}.xplane.pb", run_dir / f"{name}.xplane.pb")
    corrupt(generated / "b.xplane.pb", run_dir / "b.xplane.pb", 0.9)
    whole = (generated / "d.xplane.pb").read_bytes()
    (run_dir / "d.xplane.pb").write_bytes(whole[: len(whole) // 3])  # truncated: fails when opened
    got = errors(run_dir)
    assert len(got) == 1, got
    code, out, err = got.pop()
    assert code == 2 and err.startswith(f"jaxprof: {run_dir / 'b.xplane.pb'}: malformed varint at byte "), err
    (run_dir / "b.xplane.pb").unlink()  # without b, d's error is the one
    code, _, err = errors(run_dir).pop()
    assert code == 2 and err.startswith(f"jaxprof: {run_dir / 'd.xplane.pb'}: truncated XSpace at byte "), err


def test_a_host_filter_and_a_device_that_matches_nothing_fail_alike(generated):
    for args in (["--host", "nosuch"], ["--device", "nosuch"]):
        got = set()
        for n in ("1",) + THREADS:
            code, out, err, _ = run("report", str(generated), *args, threads=n)
            got.add((code, out, err))
        assert len(got) == 1, got
        code, _, err = got.pop()
        assert code == 2 and "matches 'nosuch'" in err, err
