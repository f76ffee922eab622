"""``jaxprof.trace``: one scoped capture, safe to wrap around anything."""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

import jax

from . import _jax
from ._log import log
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
        self._runs_before: set[str] = set()

    def __enter__(self) -> "trace":
        self.run_dir = None
        _jax.sync_devices()
        self._runs_before = _run_names(self.log_dir)
        outside = _jax.trace_active()
        try:
            self._active = _jax.start(self.log_dir, self.options)
            if self._active and self.name:
                self._annotation = jax.profiler.TraceAnnotation(self.name)
                self._annotation.__enter__()
        except BaseException:
            # Ctrl-C while starting: __exit__ will not run, so stop a trace JAX already began.
            if not outside and _jax.trace_active():
                self._active = True
                self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._active:
            return
        self._active = False
        interrupt: BaseException | None = None  # a Ctrl-C while stopping: re-raised once stopped
        try:
            if self._annotation is not None:
                annotation, self._annotation = self._annotation, None
                annotation.__exit__(*exc)
            _jax.sync_devices()
        except BaseException as err:
            interrupt = err
        try:
            written = _jax.stop()
        except BaseException as err:
            interrupt = interrupt or err
            written = _jax.finish_interrupted_stop(lambda: bool(self._new_runs()))
        if not written:
            self._remove_new_runs()  # a failed write can leave a truncated xplane under its final name
        elif interrupt is None:
            run = latest_run(self.log_dir)
            self.run_dir = run.path if run else None
            if self.run_dir is not None and self.perfetto:
                export_perfetto(self.run_dir)
        if interrupt is not None:
            raise interrupt

    def _new_runs(self) -> list[Path]:
        root = self.log_dir / "plugins" / "profile"
        return [root / name for name in sorted(_run_names(self.log_dir) - self._runs_before)]

    def _remove_new_runs(self) -> None:
        for run in self._new_runs():
            if run.is_dir() and not run.is_symlink():
                shutil.rmtree(run, ignore_errors=True)
                log.info("removed the incomplete capture in %s", run)


def _run_names(log_dir: Path) -> set[str]:
    """Names of the run directories JAX has made under ``log_dir/plugins/profile``."""
    try:
        return set(os.listdir(log_dir / "plugins" / "profile"))
    except OSError:
        return set()


def profile_trace(log_dir: str | os.PathLike[str], name: str | None = None, **kwargs: Any) -> trace:
    """Alias of :class:`trace` (seed name)."""
    return trace(log_dir, name, **kwargs)


ProfileContext = trace
