"""Opening a capture in a viewer from Python: ``jaxprof view`` runs in a child process."""
from __future__ import annotations

import logging
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from ._log import log

UI = Literal["builtin", "perfetto", "tensorboard"]
_LINK_MARK = "/#!/?url="  # in the Perfetto UI link printed by `jaxprof view`
_REQUEST_LINE = re.compile(r"^jaxprof: [A-Z-]+ \S+ \d{3} \d+$")  # its log of one request


def jaxprof_binary() -> Path | None:
    """The ``jaxprof`` executable: ``$JAXPROF_BIN`` when set (a development build), else the one
    installed beside this Python, else the first on PATH."""
    if os.environ.get("JAXPROF_BIN"):
        return Path(os.environ["JAXPROF_BIN"])
    beside = Path(sys.executable).parent / "jaxprof"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("jaxprof")
    return Path(found) if found else None


@dataclass
class Viewer:
    """A running ``jaxprof view``: its address and the process serving it.

    ``url`` is what the process serves (the trace file for Perfetto, the TensorBoard page);
    ``link`` is what to open in a browser. The process runs until ``close()``, the end of a
    ``with`` block, or the end of this interpreter.
    """

    ui: str                         #: "perfetto" or "tensorboard"
    url: str                        #: served address, e.g. http://127.0.0.1:9001/<run>.pftrace
    link: str                       #: browser link, e.g. https://ui.perfetto.dev/#!/?url=...
    process: subprocess.Popen[str]  #: the ``jaxprof view`` child (TensorBoard replaces it in place)
    _finalizer: weakref.finalize = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Runs on close(), when the Viewer is collected, or at interpreter exit: no orphan server.
        self._finalizer = weakref.finalize(self, _stop, self.process)

    def close(self) -> None:
        """Stops the server (SIGINT, then SIGKILL if it lingers) and waits for it."""
        self._finalizer()

    def __enter__(self) -> "Viewer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _drain_stderr(stream: IO[str], tail: list[str]) -> None:
    """Keeps the child's stderr drained (a full pipe would stall it), remembers its last lines,
    and passes on jaxprof's own notes (port taken, exporting) but not its per-request lines."""
    with stream:
        for raw in stream:
            line = raw.rstrip("\n")
            tail.append(line)
            del tail[:-20]
            if line.startswith("jaxprof: ") and not _REQUEST_LINE.match(line):
                note = line.removeprefix("jaxprof: ")
                log.log(logging.INFO if note.startswith("exporting ") else logging.WARNING, "%s", note)


def _pump_stdout(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    """Hands stdout lines to the caller, then keeps draining (TensorBoard writes there too)."""
    with stream:
        for line in stream:
            lines.put(line.rstrip("\n"))
    lines.put(None)


def _read_link(lines: queue.Queue[str | None], timeout: float) -> tuple[str | None, bool]:
    """The text after "Open: " on the first such line (or None), and whether time ran out first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None, True
        if line is None:
            return None, False
        if line.startswith("Open: "):
            return line[len("Open: "):].strip(), False


def open_latest_profile(
    profile_dir: str | os.PathLike[str] = "profiles",
    ui: UI = "perfetto",
    port: int | None = None,
    browser: bool = True,
    timeout: float = 300.0,
) -> Viewer | None:
    """Opens the newest run under ``profile_dir`` in a viewer, serving it from a child process.

    ``ui="perfetto"`` exports the run's timeline (once; reused while newer than the capture) and
    serves it on 127.0.0.1 for https://ui.perfetto.dev (port 9001 unless ``port`` says
    otherwise); ``ui="tensorboard"`` starts TensorBoard on the log directory (port 6006). A
    browser opens when ``browser`` is true and a display is available. Returns as soon as the
    address is known (at most ``timeout`` seconds, the export included) with a ``Viewer`` to
    ``close()``; or ``None``, with the reason logged, when there is no run, no viewer or no
    ``jaxprof`` executable. Never blocks the caller beyond that.
    """
    if ui not in ("builtin", "perfetto", "tensorboard"):
        raise ValueError(f"ui must be 'builtin', 'perfetto' or 'tensorboard', not {ui!r}")
    binary = jaxprof_binary()
    if binary is None:
        log.warning("the jaxprof executable is not installed beside %s nor on PATH", sys.executable)
        return None
    # --exit-with-parent: the Perfetto server also ends if this interpreter is killed outright.
    cmd = [str(binary), "view", os.fspath(profile_dir), "--ui", ui, "--exit-with-parent"]
    if port is not None:
        cmd += ["--port", str(port)]
    if not browser:
        cmd.append("--no-browser")
    # A session of its own: Ctrl-C in the caller's terminal stops the training, not the viewer.
    process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, errors="replace", start_new_session=True)
    return _attach(process, ui, timeout)


def _attach(process: subprocess.Popen[str], ui: str, timeout: float) -> Viewer | None:
    """Waits for the child's link; wraps it in a Viewer, or stops the child and returns None."""
    assert process.stdout is not None and process.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    tail: list[str] = []
    err_thread = threading.Thread(target=_drain_stderr, args=(process.stderr, tail), daemon=True)
    err_thread.start()
    threading.Thread(target=_pump_stdout, args=(process.stdout, lines), daemon=True).start()
    link, timed_out = _read_link(lines, timeout)
    if link is None:
        _stop(process)
        err_thread.join(timeout=1)
        if timed_out:
            log.warning("jaxprof view gave no link within %g s; stopped it", timeout)
        elif not any(line.startswith("jaxprof: ") for line in tail):  # else the reason is logged already
            log.warning("jaxprof view failed: %s", next((x for x in reversed(tail) if x.strip()), "no output"))
        return None
    url = link.split(_LINK_MARK, 1)[1] if _LINK_MARK in link else link
    return Viewer(ui, url, link, process)
