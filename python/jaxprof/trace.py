"""``jaxprof.trace``: one scoped capture, safe to wrap around anything."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import jax

from . import _jax
from .export import export_perfetto
from .runs import latest_run


class trace(contextlib.ContextDecorator):
    """Captures a profile of the enclosed block into ``log_dir`` (TensorBoard layout).

    >>> with jaxprof.trace("/tmp/prof") as t:
    ...     train_step(state, batch)
    >>> t.run_dir   # /tmp/prof/plugins/profile/2026_11_21_15_10_24

    On exit it waits for all outstanding device work before stopping, so a forgotten
    ``block_until_ready()`` never yields an empty trace. ``name`` adds a host annotation spanning
    the block. ``perfetto=True`` also writes ``perfetto_trace.json.gz`` into the run directory with
    jaxprof's exporter (every event, no blocking link).
    ``options`` is a ``jax.profiler.ProfileOptions`` or a dict of its fields.

    Faults never reach the caller: if another trace is active or the directory is unusable, the
    block runs untraced with a logged warning; an exception inside the block stops the trace
    cleanly (files are written) and is re-raised.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        name: str | None = None,
        *,
        perfetto: bool = False,
        options: Any | None = None,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.name = name
        self.perfetto = perfetto
        self.options = _jax.options_from(options)
        self.run_dir: Path | None = None  #: set after exit when a capture was written
        self._active = False
        self._annotation: Any | None = None

    def __enter__(self) -> "trace":
        self.run_dir = None
        _jax.sync_devices()
        self._active = _jax.start(self.log_dir, self.options)
        if self._active and self.name:
            self._annotation = jax.profiler.TraceAnnotation(self.name)
            self._annotation.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._active:
            return
        self._active = False
        if self._annotation is not None:
            self._annotation.__exit__(*exc)
            self._annotation = None
        _jax.sync_devices()
        if _jax.stop():
            run = latest_run(self.log_dir)
            self.run_dir = run.path if run else None
            if self.run_dir is not None and self.perfetto:
                export_perfetto(self.run_dir)


def profile_trace(log_dir: str | os.PathLike[str], name: str | None = None, **kwargs: Any) -> trace:
    """Alias of :class:`trace` (seed name)."""
    return trace(log_dir, name, **kwargs)


ProfileContext = trace
