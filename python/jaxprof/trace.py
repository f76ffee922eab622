"""``jaxprof.trace``: one scoped capture, safe to wrap around anything."""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

import jax

from . import _jax, multihost
from ._log import log
from .export import export_perfetto


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
        self._private = self.log_dir  # where JAX writes: set by __enter__

    def __enter__(self) -> "trace":
        self.run_dir = None
        _jax.sync_devices()
        # JAX names a run by the second it stopped and writes straight to that name: in log_dir, a
        # second capture in the same second would overwrite the first's file. It writes into this
        # process's own directory instead, and the run is moved into log_dir under a free name.
        self._private = self.log_dir / f".jaxprof-trace-{os.getpid()}"
        self._runs_before = _run_names(self._private)
        outside = _jax.trace_active()
        # A Ctrl-C while starting waits until the trace has started; then, since the block (and so
        # __exit__) will not run, the trace is stopped before the KeyboardInterrupt is raised.
        with _jax.sigint_held(on_interrupt=lambda: self.__exit__(None, None, None)):
            try:
                self._active = _jax.start(self._private, self.options)
                if not self._active:
                    self._remove_private()
                if self._active and self.name:
                    self._annotation = jax.profiler.TraceAnnotation(self.name)
                    self._annotation.__enter__()
            except BaseException:
                # raised by code (signals wait): __exit__ will not run, so stop a trace JAX began
                if not outside and _jax.trace_active():
                    self._active = True
                    self.__exit__(None, None, None)
                raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._active:
            return
        # Nothing calls __exit__ again: a Ctrl-C waits until the trace is stopped and its run filed
        # (waiting for device work and the export run in C++, which never saw signals anyway).
        with _jax.sigint_held():
            self._active = False
            interrupt: BaseException | None = None  # raised by code while stopping: re-raised once stopped
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
            else:
                self.run_dir = self._file()
            self._remove_private()
        if self.run_dir is not None and self.perfetto and interrupt is None:
            export_perfetto(self.run_dir)
        if interrupt is not None:
            raise interrupt

    def _new_runs(self) -> list[Path]:
        """The runs JAX wrote during this capture (only this process writes in its directory)."""
        root = self._private / "plugins" / "profile"
        return [root / name for name in sorted(_run_names(self._private) - self._runs_before)]

    def _file(self) -> Path | None:
        """Moves the new run into ``log_dir/plugins/profile/`` under a name no other run has."""
        new = self._new_runs()
        if not new:
            return None
        try:
            return multihost.move_run(new[-1], self.log_dir / "plugins" / "profile")
        except OSError as exc:
            log.warning("could not move the capture into %s: %s; it stays in %s", self.log_dir, exc, new[-1])
            return new[-1]

    def _remove_new_runs(self) -> None:
        for run in self._new_runs():
            if run.is_dir() and not run.is_symlink():
                shutil.rmtree(run, ignore_errors=True)
                log.info("removed the incomplete capture in %s", run)

    def _remove_private(self) -> None:
        """Removes this process's write directory once empty (never anything in it but ours)."""
        for path in (self._private / "plugins" / "profile", self._private / "plugins", self._private):
            try:
                path.rmdir()
            except OSError:
                return


def _run_names(log_dir: Path) -> set[str]:
    """Names of the run directories under ``log_dir/plugins/profile``."""
    try:
        return set(os.listdir(log_dir / "plugins" / "profile"))
    except OSError:
        return set()


def profile_trace(log_dir: str | os.PathLike[str], name: str | None = None, **kwargs: Any) -> trace:
    """Alias of :class:`trace` (seed name)."""
    return trace(log_dir, name, **kwargs)


ProfileContext = trace
