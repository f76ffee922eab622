"""Issue 19, items 5 and 6: output files. Every writer creates a new hidden temporary file with a
random name beside its output (never through a planted link) and renames it into place; SIGINT,
SIGTERM and SIGHUP during a write remove it and end the process by that signal.

The signal tests catch a real write in progress: a big synthetic profile keeps `export` and
`view --ui perfetto` writing for seconds, and the signal goes once the temporary file holds a
megabyte. The HTML and flame writers finish in milliseconds, so a small preloaded library holds
their rename of a "*.tmp" file (the moment the whole file is written) until the signal comes."""
from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import JAXPROF_BIN
from xplane_gen import big_xplane

DATA = Path(__file__).resolve().parents[1] / "data" / "cpu_small.xplane.pb.gz"
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
BIG_EVENTS = 3_000_000  # about 3 s of writing (210 MB of JSON), 48 MB of input
RUN = "plugins/profile/2026_01_01_00_00_00"

# rename() of a "*.tmp" file waits for a signal: the writer has written everything by then.
HOLD_RENAME_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>
int rename(const char *from, const char *to) {
    size_t n = strlen(from);
    if (n > 4 && strcmp(from + n - 4, ".tmp") == 0)
        for (;;) pause();
    int (*real)(const char *, const char *) = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    return real(from, to);
}
"""


@pytest.fixture(scope="module")
def big_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "host.xplane.pb"
    big_xplane(path, BIG_EVENTS, 8)
    return path


@pytest.fixture(scope="module")
def hold_rename(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment that preloads the rename-holding library."""
    d = tmp_path_factory.mktemp("preload")
    (d / "hold.c").write_text(HOLD_RENAME_C)
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", "-o", d / "hold.so", d / "hold.c", "-ldl"], check=True)
    return {**os.environ, "LD_PRELOAD": str(d / "hold.so")}


# Runs argv[1:] with SIGINT, SIGTERM, SIGHUP (and SIGPIPE) at their default action. A test run
# started in the background of a non-interactive shell, or under nohup, inherits them ignored, and
# jaxprof rightly keeps an ignored signal ignored, so the tests' signals would never arrive.
DEFAULT_SIGNALS = [sys.executable, "-c", "import os, signal, sys\n"
                   "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):\n"
                   "    signal.signal(s, signal.SIG_DFL)\n"
                   "os.execv(sys.argv[1], sys.argv[1:])"]


def run_dir_with(tmp_path: Path, xplane: Path) -> Path:
    """A log directory whose one run holds xplane (a hard link: no copy of 48 MB)."""
    run = tmp_path / "logs" / RUN
    run.mkdir(parents=True)
    os.link(xplane, run / "host.xplane.pb")
    return tmp_path / "logs"


def interrupt(argv: list[str], out_dir: Path, sig: int, *, min_bytes: int,
              env: dict[str, str] | None = None) -> tuple[int, str | None]:
    """Starts argv, waits until a new file in out_dir holds min_bytes, sends sig. Returns the exit
    status and the name of the file it saw (None when the process ended first)."""
    before = set(os.listdir(out_dir))
    proc = subprocess.Popen([*DEFAULT_SIGNALS, *(str(a) for a in argv)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    seen = None
    try:
        while seen is None and proc.poll() is None:
            for entry in os.scandir(out_dir):
                try:
                    if entry.name not in before and entry.stat(follow_symlinks=False).st_size >= min_bytes:
                        seen = entry.name
                except FileNotFoundError:
                    pass
            if seen is None:
                time.sleep(0.002)
        if seen is not None:
            proc.send_signal(sig)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
    return proc.returncode, seen


def temp_pattern(out_name: str) -> re.Pattern[str]:
    return re.compile(rf"\.{re.escape(out_name)}\.[0-9a-f]{{16}}\.tmp")


# ---- item 6: no predictable temporary name, nothing written through a planted link ---------------

def planted(out: Path, victim: Path) -> list[Path]:
    """Links to victim at every name an attacker could guess for out's temporary file."""
    names = [f"{out.name}.tmp", f".{out.name}.tmp", f"{out.name}~", f".{out.name}.0000000000000000.tmp",
             f"{out.name}.tmp.gz", f"{out.name}.part"]
    links = [out.parent / n for n in names]
    for link in links:
        link.symlink_to(victim)
    return links


def check_json_gz(path: Path) -> None:
    assert json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def check_html(path: Path) -> None:
    assert path.read_text().startswith("<!DOCTYPE html>") and path.read_text().rstrip().endswith("</html>")


def check_pprof(path: Path) -> None:
    assert len(gzip.decompress(path.read_bytes())) > 100


def check_folded(path: Path) -> None:
    assert all(re.fullmatch(r".+ \d+", line) for line in path.read_text().splitlines())


WRITERS: list[tuple[list[str], str, Callable[[Path], None]]] = [
    (["export", "{data}", "-o", "{out}"], "trace.json.gz", check_json_gz),
    (["report", "{data}", "--html", "{out}"], "report.html", check_html),
    (["diff", "{data}", "{data}", "--html", "{out}"], "diff.html", check_html),
    (["flame", "{data}", "--pprof", "{out}"], "flame.pb.gz", check_pprof),
    (["flame", "{data}", "--folded", "-o", "{out}"], "flame.txt", check_folded),
]


@pytest.mark.parametrize("argv,name,check", WRITERS, ids=[w[0][0] + ":" + w[1] for w in WRITERS])
def test_a_planted_link_at_a_guessable_temporary_name_is_never_written_through(
        tmp_path: Path, argv: list[str], name: str, check: Callable[[Path], None]) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    out = out_dir / name
    links = planted(out, victim)
    proc = subprocess.run([str(JAXPROF_BIN), *(a.format(data=DATA, out=out) for a in argv)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_bytes() == b"precious\n"
    assert not out.is_symlink() and out.is_file()
    check(out)
    assert all(link.is_symlink() and os.readlink(link) == str(victim) for link in links)  # left alone
    assert sorted(os.listdir(out_dir)) == sorted([name] + [link.name for link in links])  # no temp left


def test_the_temporary_file_is_hidden_and_random_beside_the_output(tmp_path: Path, hold_rename: dict[str, str]) -> None:
    names = set()
    for _ in range(2):
        rc, seen = interrupt([JAXPROF_BIN, "export", DATA, "-o", tmp_path / "t.json.gz"], tmp_path, signal.SIGTERM,
                             min_bytes=1, env=hold_rename)
        assert rc == -signal.SIGTERM and seen is not None
        assert temp_pattern("t.json.gz").fullmatch(seen), seen
        names.add(seen)
    assert len(names) == 2  # a new name each time
    assert os.listdir(tmp_path) == []


# ---- item 5: a signal during a write leaves nothing behind --------------------------------------

@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_during_export_leaves_no_file(tmp_path: Path, big_input: Path, sig: signal.Signals) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    rc, seen = interrupt([JAXPROF_BIN, "export", big_input, "-o", out_dir / "big.json"], out_dir, sig,
                         min_bytes=1 << 20)
    assert seen is not None, "the export finished before a megabyte was seen"
    assert rc == -sig  # ended by the signal, as a shell reports it (128 + N)
    assert os.listdir(out_dir) == []
    assert temp_pattern("big.json").fullmatch(seen), seen  # it was a partial temporary file


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_during_view_perfetto_export_leaves_no_file(tmp_path: Path, big_input: Path,
                                                              sig: signal.Signals) -> None:
    logs = run_dir_with(tmp_path, big_input)
    run = logs / RUN
    rc, seen = interrupt([JAXPROF_BIN, "view", logs, "--ui", "perfetto", "--no-browser", "--port", "0"], run, sig,
                         min_bytes=1 << 20)
    assert seen is not None, "the export finished before a megabyte was seen"
    assert rc == -sig
    assert os.listdir(run) == ["host.xplane.pb"]
    assert temp_pattern("perfetto_trace.pftrace").fullmatch(seen), seen


SMALL_WRITERS = [w for w in WRITERS if w[0][0] != "export"]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("argv,name,check", SMALL_WRITERS, ids=[w[0][0] + ":" + w[1] for w in SMALL_WRITERS])
def test_a_signal_before_the_rename_leaves_no_file(tmp_path: Path, hold_rename: dict[str, str], sig: signal.Signals,
                                                   argv: list[str], name: str, check: Callable[[Path], None]) -> None:
    out = tmp_path / name
    rc, seen = interrupt([JAXPROF_BIN, *(a.format(data=DATA, out=out) for a in argv)], tmp_path, sig, min_bytes=1,
                         env=hold_rename)
    assert seen is not None, "no file was written"
    assert rc == -sig
    assert os.listdir(tmp_path) == []
    assert temp_pattern(name).fullmatch(seen), seen


def test_an_ignored_signal_stays_ignored(tmp_path: Path, hold_rename: dict[str, str]) -> None:
    """Under nohup (SIGHUP ignored, which exec keeps) SIGHUP must not end the export; a later
    SIGTERM does. Were SIGHUP caught, it would end the process first (exit status -SIGHUP)."""
    out = tmp_path / "t.json.gz"
    nohup = [*DEFAULT_SIGNALS, "/bin/sh", "-c", 'trap "" HUP; exec "$0" "$@"']  # SIGHUP ignored, then jaxprof
    proc = subprocess.Popen([*nohup, str(JAXPROF_BIN), "export", str(DATA), "-o", str(out)], env=hold_rename,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not os.listdir(tmp_path) and proc.poll() is None:
            time.sleep(0.002)
        proc.send_signal(signal.SIGHUP)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert os.listdir(tmp_path) == []


# ---- the Python API ------------------------------------------------------------------------------

def test_sigint_during_the_python_export_finishes_the_file_first(tmp_path: Path, big_input: Path) -> None:
    """Python's own SIGINT handler only sets a flag while the C export runs (it released the GIL):
    the export completes and renames, then KeyboardInterrupt ends the interpreter by SIGINT."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "big.json.gz"
    code = f"import jaxprof\njaxprof.export_trace({str(big_input)!r}, {str(out)!r})\n"
    rc, seen = interrupt([sys.executable, "-c", code], out_dir, signal.SIGINT, min_bytes=1 << 16)
    assert seen is not None and temp_pattern("big.json.gz").fullmatch(seen), seen
    assert rc == -signal.SIGINT
    assert os.listdir(out_dir) == ["big.json.gz"]  # the whole file, renamed; no temporary left
    last = b""
    with gzip.open(out, "rb") as f:  # reading to the end checks the gzip trailer's CRC and length
        while chunk := f.read(1 << 24):
            last = chunk
    assert last.rstrip().endswith(b"}")  # the JSON document was finished
