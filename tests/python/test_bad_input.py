"""Bad input never crashes the CLI: a cut or corrupted profile is one clean error line naming the
file and the byte where decoding stopped, and exit status 2 (tests/data/cpu_small.xplane.pb.gz is
the committed real capture; tests/c/test_profile.c fuzzes the library itself under ASan)."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import run_jaxprof

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "cpu_small.xplane.pb.gz"


def gz_bytes() -> bytes:
    return FIXTURE.read_bytes()


def raw_bytes() -> bytes:
    return gzip.decompress(FIXTURE.read_bytes())


def flip(data: bytes, at: int, mask: int = 0x55) -> bytes:
    b = bytearray(data)
    b[at] ^= mask
    return bytes(b)


# name -> (file name, bytes, exact offset expected in the message or None)
CASES = {
    "gzip cut in half": ("cut.xplane.pb.gz", lambda: gz_bytes()[: len(gz_bytes()) // 2], None),
    "xspace cut in half": ("cut.xplane.pb", lambda: raw_bytes()[: len(raw_bytes()) // 2], 0),
    "gzip byte flipped": ("flipped.xplane.pb.gz", lambda: flip(gz_bytes(), len(gz_bytes()) // 2), None),
    "xspace first tag corrupt": ("tag.xplane.pb", lambda: b"\x0f" + raw_bytes()[1:], 0),
    "xspace trailing garbage": ("tail.xplane.pb", lambda: raw_bytes() + b"\xff\xff\xff", len(raw_bytes())),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", [["report"], ["ops", "--json"], ["steps", "--csv"]])
def test_bad_profile_is_one_clean_error(tmp_path, case, command):
    name, make, offset = CASES[case]
    path = tmp_path / name
    path.write_bytes(make())
    proc = run_jaxprof(command[0], path, *command[1:])
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    msg = lines[0]
    assert msg.startswith(f"jaxprof: {path}: "), msg
    assert " at byte " in msg, msg
    if offset is not None:
        assert f" at byte {offset}" in msg, msg
    for crash in ("Traceback", "Sanitizer", "runtime error", "Segmentation", "Abort"):
        assert crash not in proc.stderr


def test_truncated_run_directory_names_the_file(tmp_path):
    """A run directory (as JAX writes it) whose only host file was cut short."""
    run = tmp_path / "plugins" / "profile" / "2025_01_01_00_00_00"
    run.mkdir(parents=True)
    host = run / "host.xplane.pb.gz"
    host.write_bytes(gz_bytes()[:100])
    for target in (run, tmp_path):  # the run itself, and a log dir resolved to its newest run
        proc = run_jaxprof("report", target)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and str(host) in proc.stderr and " at byte " in proc.stderr


def test_the_fixture_itself_reports(tmp_path):
    """The uncorrupted fixture loads, as a control for the cases above."""
    proc = run_jaxprof("steps", FIXTURE, "--csv")
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.strip().splitlines()
    assert len(rows) == 4  # header + steps 0, 1, 2
