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

from conftest import run_jaxprof

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
