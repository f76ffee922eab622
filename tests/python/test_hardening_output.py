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
import stat as stat_mod
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


# ==== issue 30, section 3: what is at the output path, inputs, modes, extract, terminal, CSV ========

from conftest import run_jaxprof  # noqa: E402
from xplane_gen import HloComputation, HloInstruction, HloModule, Uint, XSpace  # noqa: E402


def hostile_space(names: list[str]) -> XSpace:
    """Two steps of one GPU kernel per name in `names` (an op name each, any bytes)."""
    hlo = HloModule("jit_step", [HloComputation("main", 1, [HloInstruction(n, "fusion", op_name="jit(step)/f")
                                                            for n in names])])
    space = XSpace(hostnames=["host"])
    space.hlo_module(7, hlo)
    py = space.plane("/host:CPU").line("python3", id=1)
    compute = space.plane("/device:GPU:0").line("Stream #13(Compute)", id=13)
    for step in range(2):
        py.span("train", step * 10000, step * 10000 + 5000, {"_r": 1, "step_num": step})
        for k, name in enumerate(names):
            t0 = step * 10000 + 100 + k * 200
            compute.span("kernel", t0, t0 + 100 + k, {"hlo_op": name, "hlo_module": "jit_step", "program_id": 7,
                                                      "correlation_id": Uint(step * 100 + k + 1)})
    return space


def jaxprof(*args: object, env: dict[str, str] | None = None, umask: int | None = None,
            timeout: int = 120) -> subprocess.CompletedProcess:
    """Runs the CLI with bytes output (names may be anything)."""
    return subprocess.run([str(JAXPROF_BIN), *(str(a) for a in args)], capture_output=True, timeout=timeout,
                          env=env, umask=-1 if umask is None else umask)


# ---- item 1: a FIFO, a device, /dev/stdout are written in place; a link is refused -----------------

STREAM_WRITERS: list[tuple[list[str], Callable[[bytes], None]]] = [
    (["export", "{data}", "-o", "{out}"], lambda b: json.loads(b)["traceEvents"] and None),
    (["report", "{data}", "--html", "{out}"], lambda b: b.startswith(b"<!DOCTYPE html>") or pytest.fail("html")),
    (["diff", "{data}", "{data}", "--html", "{out}"], lambda b: b.startswith(b"<!DOCTYPE html>") or pytest.fail("html")),
    (["flame", "{data}", "--pprof", "{out}"], lambda b: len(gzip.decompress(b)) > 100 or pytest.fail("pprof")),
    (["flame", "{data}", "--folded", "-o", "{out}"], lambda b: re.match(rb".+ \d+\n", b) or pytest.fail("folded")),
]
STREAM_IDS = [w[0][0] + ":" + w[0][-2] for w in STREAM_WRITERS]


@pytest.mark.parametrize("argv,check", STREAM_WRITERS, ids=STREAM_IDS)
def test_a_fifo_output_is_streamed_to_its_reader_and_stays_a_fifo(tmp_path: Path, argv: list[str],
                                                                   check: Callable[[bytes], None]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)  # a reader, as `cat pipe &` would be
    try:
        proc = jaxprof(*(a.format(data=DATA, out=fifo) for a in argv))
        got, _ = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert proc.returncode == 0, proc.stderr
    check(got)
    assert fifo.is_fifo()
    assert os.listdir(tmp_path) == ["pipe"]  # no temporary file, nothing renamed


def test_dev_stdout_is_written_as_a_stream(tmp_path: Path) -> None:
    """-o /dev/stdout, a link to /proc/self/fd/1 (the process's pipe): the trace is stdout, without
    the path line. The test names a link of its own made like /dev/stdout, never /dev/stdout
    itself: as root, a build that renames over links would replace the machine's /dev/stdout."""
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")
    proc = jaxprof("export", DATA, "-o", stdout)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["traceEvents"]
    proc = jaxprof("flame", DATA, "--folded", "-o", stdout)
    assert proc.returncode == 0 and re.match(rb".+ \d+\n", proc.stdout), proc.stderr
    assert stdout.is_symlink() and os.listdir(tmp_path) == ["stdout"]


def test_a_character_device_is_written_never_replaced(tmp_path: Path) -> None:
    """As root a rename over /dev/null used to replace it with a regular file: here a node of our own
    (the same device, 1:3) when root may make one, else /dev/null itself (safe without root)."""
    if os.geteuid() == 0:
        node = tmp_path / "null"
        os.mknod(node, 0o666 | stat_mod.S_IFCHR, os.makedev(1, 3))
    else:
        node = Path("/dev/null")
    for argv in (["export", DATA, "-o", node], ["report", DATA, "--html", node], ["flame", DATA, "--pprof", node]):
        proc = jaxprof(*argv)
        assert proc.returncode == 0, proc.stderr
        st = os.lstat(node)
        assert stat_mod.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3
    if node.parent == tmp_path:
        assert os.listdir(tmp_path) == ["null"]


@pytest.mark.parametrize("argv,check", STREAM_WRITERS, ids=STREAM_IDS)
def test_a_symbolic_link_output_is_refused_and_left_alone(tmp_path: Path, argv: list[str],
                                                         check: Callable[[bytes], None]) -> None:
    """Refused, neither replaced (that broke the user's link) nor written through (a link planted at
    an output's name in a shared directory would aim the write at any file of the user's)."""
    target = tmp_path / "target.txt"
    target.write_bytes(b"precious\n")
    link = tmp_path / "out.link"
    link.symlink_to(target)
    proc = jaxprof(*(a.format(data=DATA, out=link) for a in argv))
    assert proc.returncode == 2
    assert f"{link}: is a symbolic link; refusing to replace it or write through it".encode() in proc.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == b"precious\n"
    assert sorted(os.listdir(tmp_path)) == ["out.link", "target.txt"]


def test_a_directory_output_is_refused(tmp_path: Path) -> None:
    proc = jaxprof("export", DATA, "-o", tmp_path)
    assert proc.returncode == 2 and f"{tmp_path}: is a directory; refusing to write over it".encode() in proc.stderr
    assert os.listdir(tmp_path) == []


# ---- item 2: an output that is one of the inputs is refused ---------------------------------------

@pytest.fixture()
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "a.xplane.pb"
    b = tmp_path / "b.xplane.pb"
    a.write_bytes(gzip.decompress(DATA.read_bytes()))
    b.write_bytes(a.read_bytes())
    return a, b


@pytest.mark.parametrize("alias", ["same", "hard link"])
@pytest.mark.parametrize("which", [0, 1])
def test_diff_html_over_an_input_is_refused(two_runs: tuple[Path, Path], tmp_path: Path, alias: str,
                                            which: int) -> None:
    a, b = two_runs
    out = two_runs[which]
    if alias == "hard link":
        out = tmp_path / "page.html"
        os.link(two_runs[which], out)
    before = two_runs[which].read_bytes()
    proc = jaxprof("diff", a, b, "--html", out)
    assert proc.returncode == 2, proc.stderr
    assert f"{out}: the output would overwrite the input {two_runs[which]}; write elsewhere".encode() in proc.stderr
    assert two_runs[which].read_bytes() == before


def test_python_export_trace_over_its_input_is_refused(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    import jaxprof as jp
    a, _ = two_runs
    before = a.read_bytes()
    with pytest.raises(Exception, match="would overwrite the input"):
        jp.export_trace(a, a)
    hard = tmp_path / "hard.json"
    os.link(a, hard)
    with pytest.raises(Exception, match="would overwrite the input"):
        jp.export_trace(a, hard)
    assert a.read_bytes() == before


def test_an_output_that_would_join_the_input_run_is_refused(tmp_path: Path) -> None:
    """A host-file name (*.xplane.pb[.gz]) in the input's run directory: the next load would read it
    as one more host. Decided: refused, for every writer; other names there are fine."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "h.xplane.pb.gz").write_bytes(DATA.read_bytes())
    for argv in (["export", run, "-o", run / "new.xplane.pb"], ["report", run, "--html", run / "r.xplane.pb.gz"],
                 ["diff", run, run, "--html", run / "d.xplane.pb"]):
        proc = jaxprof(*argv)
        assert proc.returncode == 2 and b"would become part of the profile it is made from" in proc.stderr, argv
    assert os.listdir(run) == ["h.xplane.pb.gz"]
    assert jaxprof("report", run, "--html", run / "report.html").returncode == 0


# ---- item 3: outputs are 0644 less the umask ------------------------------------------------------

UMASK_WRITERS = [w for w in WRITERS] + [(["extract", "{run}", "--out", "{dir}"], "h.xplane.pb", lambda p: None)]


@pytest.mark.parametrize("argv,name,check", UMASK_WRITERS, ids=[w[0][0] + ":" + w[1] for w in UMASK_WRITERS])
def test_outputs_are_0644_under_umask_000(tmp_path: Path, argv: list[str], name: str,
                                         check: Callable[[Path], None]) -> None:
    run = tmp_path / "logs" / RUN
    run.mkdir(parents=True)
    (run / "h.xplane.pb.gz").write_bytes(DATA.read_bytes())
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / name
    proc = jaxprof(*(a.format(data=DATA, out=out, run=tmp_path / "logs", dir=out_dir) for a in argv), umask=0)
    assert proc.returncode == 0, proc.stderr
    check(out)
    assert stat_mod.S_IMODE(os.stat(out).st_mode) == 0o644


# ---- items 4 and 5: extract cleans up on signals, never silently replaces a different file --------

@pytest.fixture(scope="module")
def big_gz_run(tmp_path_factory: pytest.TempPathFactory, big_input: Path) -> Path:
    """A log directory whose run holds the 48 MB profile as host.xplane.pb.gz (level 1)."""
    logs = tmp_path_factory.mktemp("bigrun") / "logs"
    run = logs / RUN
    run.mkdir(parents=True)
    with open(big_input, "rb") as src, gzip.open(run / "host.xplane.pb.gz", "wb", compresslevel=1) as dst:
        while chunk := src.read(1 << 22):
            dst.write(chunk)
    return logs


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_during_extract_leaves_no_temporary_file(tmp_path: Path, big_gz_run: Path,
                                                          sig: signal.Signals) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    rc, seen = interrupt([JAXPROF_BIN, "extract", big_gz_run, "--out", out_dir], out_dir, sig, min_bytes=1 << 20)
    assert seen is not None, "the extract finished before a megabyte was seen"
    assert rc == -sig
    assert os.listdir(out_dir) == []
    assert temp_pattern("host.xplane.pb").fullmatch(seen), seen


def test_extract_refuses_to_replace_a_different_file_unless_forced(tmp_path: Path) -> None:
    """Decided: an existing output with the same bytes is kept (not rewritten); with other bytes
    the extract stops with exit 2 naming both files, and --force replaces it (re-extracting after
    the .gz was rewritten on purpose is real; a silent loss of someone's edited file is not)."""
    logs = tmp_path / "logs"
    run = logs / RUN
    run.mkdir(parents=True)
    (run / "h.xplane.pb.gz").write_bytes(DATA.read_bytes())
    plain = gzip.decompress(DATA.read_bytes())
    (run / "h.xplane.pb").write_bytes(plain[:-1] + bytes([plain[-1] ^ 1]))  # the last byte differs
    proc = jaxprof("extract", logs)
    assert proc.returncode == 2
    assert (f"{run}/h.xplane.pb: exists and differs from what {run}/h.xplane.pb.gz decompresses to; not replaced "
            "(remove it, or extract with --force)").encode() in proc.stderr
    assert (run / "h.xplane.pb").read_bytes() != plain
    proc = jaxprof("extract", logs, "--force")
    assert proc.returncode == 0, proc.stderr
    assert (run / "h.xplane.pb").read_bytes() == plain
    ino = os.stat(run / "h.xplane.pb").st_ino
    proc = jaxprof("extract", logs)  # the same bytes now: kept as it is
    assert proc.returncode == 0 and proc.stdout == f"{run}/h.xplane.pb\n".encode(), proc.stderr
    assert os.stat(run / "h.xplane.pb").st_ino == ino
    assert sorted(os.listdir(run)) == ["h.xplane.pb", "h.xplane.pb.gz"]


# ---- item 6: control characters never reach the terminal raw ---------------------------------------

ESCAPES = ["\x1b]0;pwned\x07fusion.1", "\x1b[2J\x1b[Hfusion.2", "fusion\x9b31m.3", "tab\tnew\nline\r.4",
           "del\x7f.5", "\u00e9t\u00e9.6"]
RAW = [b"\x1b", b"\x07", b"\xc2\x9b", b"\x7f", b"\r"]


def no_raw_controls(text: bytes) -> None:
    for raw in RAW:
        assert raw not in text, (raw, text[:2000])


@pytest.fixture()
def hostile(tmp_path: Path) -> Path:
    return hostile_space(ESCAPES).write(tmp_path / "host.xplane.pb")


@pytest.mark.parametrize("cmd", [["ops"], ["report"], ["flame"], ["diff", "{p}"]], ids=["ops", "report", "flame", "diff"])
def test_control_characters_in_names_are_neutralised_in_text(hostile: Path, cmd: list[str]) -> None:
    proc = jaxprof(cmd[0], hostile, *(a.format(p=hostile) for a in cmd[1:]), "--width", "200")
    assert proc.returncode == 0, proc.stderr
    no_raw_controls(proc.stdout)
    no_raw_controls(proc.stderr)
    if cmd[0] in ("ops", "diff"):
        assert b"?]0;pwned?fusion.1" in proc.stdout and b"?[2J?[Hfusion.2" in proc.stdout
        assert b"fusion?31m.3" in proc.stdout and b"tab?new?line?.4" in proc.stdout
        assert "\u00e9t\u00e9.6".encode() in proc.stdout  # real text is kept


def test_json_and_html_escape_control_characters(hostile: Path, tmp_path: Path) -> None:
    proc = jaxprof("ops", hostile, "--json")
    for raw in (b"\x1b", b"\x07", b"\x7f", b"\r", b"\t"):  # C0 and DEL escaped (C1 is valid UTF-8 in JSON)
        assert raw not in proc.stdout
    names = {row["name"] for row in json.loads(proc.stdout)["ops"]}
    assert ESCAPES[0] in names  # escaped in JSON, exact once parsed
    page = tmp_path / "r.html"
    space = hostile_space(["<script>alert(1)</script>", "a&b\"c'd"])
    src = space.write(tmp_path / "h2.xplane.pb")
    assert jaxprof("report", src, "--html", page).returncode == 0
    html = page.read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_messages_and_list_neutralise_names_from_disk(tmp_path: Path) -> None:
    evil = tmp_path / "logs" / "plugins" / "profile" / "run\x1b]0;pwned\x07"
    evil.mkdir(parents=True)
    (evil / "h.xplane.pb").write_bytes(b"\x0a\xff\xff")  # a bad file: its error message names it
    proc = jaxprof("report", evil / "h.xplane.pb")
    assert proc.returncode == 2 and b"run?]0;pwned?" in proc.stderr
    no_raw_controls(proc.stderr)
    proc = jaxprof("list", tmp_path / "logs")
    no_raw_controls(proc.stdout)
    assert b"run?]0;pwned?" in proc.stdout


# ---- item 7: CSV cells that a spreadsheet would run as formulas -------------------------------------

def test_csv_formula_cells_get_a_quote_mark_numbers_do_not(tmp_path: Path) -> None:
    names = ["=cmd|' /C calc'!A0", "+SUM(1)", "-2+3", "@A1", "\tx", "-1.5", "+3", "-1e5", "plain", "a=b"]
    src = hostile_space(names).write(tmp_path / "h.xplane.pb")
    proc = jaxprof("ops", src, "--csv", "--columns", "name,self_ms")
    assert proc.returncode == 0, proc.stderr
    import csv
    import io
    rows = list(csv.reader(io.StringIO(proc.stdout.decode())))
    got = {r[0] for r in rows[1:]}
    assert got == {"'=cmd|' /C calc'!A0", "'+SUM(1)", "'-2+3", "'@A1", "'\tx", "-1.5", "+3", "-1e5", "plain", "a=b"}
    assert all(not r[1].startswith("'") for r in rows[1:])  # numeric cells are numbers
    proc = jaxprof("diff", src, src, "--csv")
    assert proc.returncode == 0, proc.stderr
    rows = {r[0]: r for r in csv.reader(io.StringIO(proc.stdout.decode()))}
    assert rows["'=cmd|' /C calc'!A0"][1] == "'=cmd|' /C calc'!A0"  # name and base_name
    assert rows["-1.5"][1] == "-1.5" and rows["'@A1"][13] == "0.000000"  # delta_ms, a number
