"""Capture and analyse with no files written.

    >>> with jaxprof.profile() as prof:
    ...     for _ in range(5):
    ...         state = train_step(state, batch)
    >>> print(prof.report())         # the `jaxprof report` text
    >>> prof.ops()[:3]               # typed rows, as jaxprof.load(...).ops()
    >>> prof.save("profiles")        # files after all: profiles/plugins/profile/<run>/<host>.xplane.pb

The capture is the serialized XSpace JAX's profiler session returns when it stops (``prof.xspace``).
Every analysis of it runs in a child process (the ``jaxprof`` command reading it on standard input,
under the time and memory limits of ``jaxprof._isolated``), as every analysis triggered inside a
training process does: a crash or a runaway there is one logged warning and empty results, never
the training's end. ``jaxprof.load(prof.xspace)`` analyses it in this process instead.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Iterator

from . import _isolated, _jax
from ._log import log
from .analysis import Profile, PathLike

__all__ = ["CapturedProfile", "profile"]


class CapturedProfile(Profile):
    """An in-memory capture: every :class:`~jaxprof.Profile` method, each analysed in a child
    process (results cached per question). Empty results, and one warning, when the capture or its
    analysis failed."""

    def __init__(self) -> None:  # noqa: super().__init__ would load a path
        self.path = "<memory>"
        self.xspace: bytes | None = None  #: the serialized XSpace, once the block has ended
        self._answers: dict[tuple[Any, ...], str] = {}

    def render(self, section: str = "report", format: str = "text", *, top: int = 0, sort: str | None = None,
               filter: str | None = None, width: int = 0, columns: str | None = None,
               module: str | None = None, group: str | None = None, table: str | None = None) -> str:
        key = (section, format, top, sort, filter, width, columns, module, group, table)
        if key not in self._answers:
            self._answers[key] = self._analyse(key)
        return self._answers[key]

    def _analyse(self, key: tuple[Any, ...]) -> str:
        section, format, top, sort, filter, width, columns, module, group, table = key
        if self.xspace is None:
            log.warning("no in-memory capture to analyse (the profiled block has not ended, or its capture failed)")
            return self._empty(section, format)
        args = [section, "-"] + ({"json": ["--json"], "csv": ["--csv"]}.get(format, []))
        for flag, value in (("--top", top), ("--sort", sort), ("--filter", filter), ("--width", width),
                            ("--columns", columns), ("--module", module), ("--group", group), ("--table", table)):
            if value:
                args += [flag, str(value)]
        outcome = _isolated.run(args, stdin=self.xspace)
        if not outcome.ok:
            log.warning("analysis of the in-memory capture %s; training continues", outcome.problem)
            return self._empty(section, format)
        return outcome.stdout

    def _empty(self, section: str, format: str) -> str:
        """What a failed analysis answers: no text, or a JSON document whose tables are empty."""
        return json.dumps(_EMPTY_DOC) if format == "json" else ""

    def save(self, log_dir: PathLike) -> Path | None:
        """Writes the capture where ``jax.profiler`` would have: ``log_dir/plugins/profile/<run>/
        <host>.xplane.pb`` (every jaxprof command reads ``log_dir``). Returns the file, or None (with a
        warning) when there is no capture or the write fails."""
        if self.xspace is None:
            log.warning("no in-memory capture to save")
            return None
        run = Path(log_dir) / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
        target = run / f"{socket.gethostname() or 'host'}.xplane.pb"
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            run.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(self.xspace)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
            return target
        except OSError as exc:
            log.warning("could not save the in-memory capture under %s: %s", log_dir, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return None

    def __repr__(self) -> str:
        size = f"{len(self.xspace):,} bytes" if self.xspace is not None else "no capture"
        return f"CapturedProfile({size})"


# the keys every table method reads, empty: a failed analysis gives empty tables, never a KeyError
_EMPTY_DOC: dict[str, Any] = {k: [] for k in (
    "devices", "kpis", "ops", "steps", "scopes", "kernels", "memory", "transfers", "compiles", "findings", "lines",
    "flame", "host_stats", "host_steps", "stragglers", "modules", "precision", "launches", "comm", "comm_instances",
    "launch_streams", "warnings", "capture_health")}
_EMPTY_DOC.update({"step_summary": {}, "launch_queue": {}, "host_ops": {}, "clock_method": ""})


@contextlib.contextmanager
def profile(options: Any | None = None) -> Iterator[CapturedProfile]:
    """Profiles the block in memory: nothing is written unless ``save`` is called. ``options``: a
    ``jax.profiler.ProfileOptions`` or a dict of its fields, as :class:`jaxprof.trace` takes. Device
    work the block queued is waited for before the session stops. A capture that cannot start
    (another trace is active) or stop is one warning; the block runs either way."""
    prof = CapturedProfile()
    started = _jax.start_in_memory(_jax.options_from(options))
    try:
        yield prof
    finally:
        if started:
            _jax.sync_devices()
            prof.xspace = _jax.stop_in_memory()
