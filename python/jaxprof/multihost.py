"""Capture across the processes of a ``jax.distributed`` job.

Every process runs the same step-based schedule, so all capture the same steps; what they must
agree on is where the files go. JAX names each capture's run directory by the time its process
stopped, so left alone the processes of one capture would write several runs. Here process 0
names the run once, through the job's key-value store (the coordination service that
``jax.distributed.initialize`` started), and every process files its xplane under that name as
``<host>-p<process_index>.xplane.pb``: one run directory per capture, one file per process.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from ._log import log
from .runs import xplane_host

AGREE_TIMEOUT_S = 120.0  #: how long a process waits for process 0 to name the run
#: the other files JAX's profiler writes beside the xplanes (which runs.xplane_host recognises)
TRACE_SUFFIXES = (".trace.json.gz", ".trace.json", ".pftrace", ".pb")


@dataclass(frozen=True)
class Process:
    """This process's place in the job."""

    index: int
    count: int

    @property
    def multi(self) -> bool:
        return self.count > 1


def this_process() -> Process:
    """``jax.process_index()`` / ``jax.process_count()``; one process of one when JAX cannot say."""
    try:
        return Process(int(jax.process_index()), int(jax.process_count()))
    except Exception as exc:  # a backend that cannot start must not stop training
        log.warning("could not ask JAX for the process index: %s", exc)
        return Process(0, 1)


def _kv_client() -> Any | None:
    """The coordination service's client of ``jax.distributed`` (private to JAX; None without it)."""
    try:
        from jax._src import distributed
        return getattr(distributed.global_state, "client", None)
    except Exception:
        return None


def log_dir_digest(log_dir: Path) -> str:
    """The log directory as the job's processes all name it: the path as given (every process runs
    the same code with the same arguments), not as resolved, since the machines of a pod may mount
    it at different places or not share it at all."""
    return hashlib.sha1(os.fspath(log_dir).encode()).hexdigest()[:16]


def agree_run_name(log_dir: Path, instance: int, proc: Process, timeout_s: float = AGREE_TIMEOUT_S) -> str:
    """The run name every process of the job uses for the captures of Profiler number ``instance``
    (counted per log directory in each process, the same in all of them): process 0 picks it from its
    clock, the others read it. Without the store, or after ``timeout_s``, a process falls back to a
    name of its own (one warning): its files then form a run of their own, but nothing is lost."""
    own = time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime())
    client = _kv_client()
    if client is None:
        log.warning("jax.distributed's key-value store is not available: process %d names its runs alone", proc.index)
        return f"{own}-p{proc.index}"
    key = f"jaxprof/run/{log_dir_digest(log_dir)}/{instance}"
    try:
        if proc.index == 0:
            client.key_value_set(key, own)
            return own
        return str(client.blocking_key_value_get(key, int(timeout_s * 1000)))
    except Exception as exc:
        log.warning("processes could not agree on a run name (%s): process %d names its runs alone", exc, proc.index)
        return f"{own}-p{proc.index}"


def _with_process(name: str, index: int, tag: str = "") -> str:
    """``host.xplane.pb`` -> ``host-p<index><tag>.xplane.pb`` (hostnames may hold dots: match the suffix)."""
    host = xplane_host(name)
    if host:
        return f"{host}-p{index}{tag}{name[len(host):]}"
    for suffix in TRACE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return f"{name[:-len(suffix)]}-p{index}{tag}{suffix}"
    return f"p{index}{tag}-{name}"


def file_capture(written_run: Path, run_dir: Path, index: int) -> tuple[int, Path | None]:
    """Moves the files JAX wrote into ``written_run`` (this process's private run directory) into the
    shared ``run_dir``, each named for its process (:func:`claim`); returns the bytes moved and
    where this process's xplane went (None when JAX wrote none)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    moved, xplane = 0, None
    for f in sorted(written_run.iterdir()):
        if not f.is_file() or f.is_symlink():
            continue
        size = f.stat().st_size
        dest = claim(f, run_dir, index)
        xplane = dest if xplane_host(dest.name) else xplane
        moved += size
    return moved, xplane


def claim(src: Path, run_dir: Path, index: int) -> Path:
    """Moves ``src`` to ``run_dir`` as ``<host>-p<index>``, or ``<host>-p<index>-<pid>`` when another
    process took that name (the same process index without jax.distributed, another job filing
    into a run of the same name): ``os.link`` fails on an existing name, so a capture never
    replaces another's file. Same file system: a reader never sees half a file."""
    dest = run_dir / _with_process(src.name, index)
    try:
        os.link(src, dest)
    except FileExistsError:
        dest = run_dir / _with_process(src.name, index, f"-{os.getpid()}")
        os.link(src, dest)
    os.unlink(src)
    return dest


def new_dir(path: Path) -> Path:
    """Creates ``path``, or ``path-2``, ``path-3``, ... when that name is taken: ``mkdir`` is the
    claim, so two captures (threads, processes, hosts on a shared file system) never share a
    directory, and a capture that fails removes only the one it made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        candidate = path if n == 1 else path.with_name(f"{path.name}-{n}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def move_run(written_run: Path, parent: Path) -> Path:
    """Moves a run JAX wrote into a private directory to ``parent/<its name>`` (``-2``, ... when a
    run of that name is there: two captures in one second); returns where it went."""
    dest = new_dir(parent / written_run.name)
    for f in sorted(written_run.iterdir()):
        os.rename(f, dest / f.name)  # dest is new and ours: nothing of anyone's is replaced
    written_run.rmdir()
    return dest


def remove_private(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)


def wait_for_files(run_dir: Path, expected: int, timeout_s: float) -> int:
    """Waits until ``run_dir`` holds ``expected`` xplane files (the job's other processes are still
    writing theirs) or ``timeout_s`` passes; returns how many there are."""
    deadline = time.monotonic() + timeout_s
    while True:
        n = sum(1 for f in run_dir.iterdir() if f.is_file() and xplane_host(f.name)) if run_dir.is_dir() else 0
        if n >= expected or time.monotonic() >= deadline:
            return n
        time.sleep(0.2)
