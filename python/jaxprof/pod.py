"""In-job analysis of a ``jax.distributed`` capture, where the data is.

After a capture every process summarises **its own** file in a child process (``jaxprof summarize``,
under the analysis limits: a crash there is a warning, never the training's end), writes the summary
beside its file and shares it through the job's key-value store (the coordination service
``jax.distributed.initialize`` started), in chunks under the store's value limits. Process 0 (the
first capturing process) gathers the summaries, waiting at most ``JAXPROF_GATHER_TIMEOUT`` seconds
(default 60) in all, writes the others' beside its own file and logs the merged multi-host report:
hosts side by side, clock alignment, stragglers per step, per-host top ops. A process that crashed,
hangs or never reports is named as missing. The raw files stay where they were written; no process
needs to see another's file system. Everything here runs on a background thread.
"""
from __future__ import annotations

import functools
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from . import _isolated, multihost
from ._log import log

ENV_GATHER_TIMEOUT = "JAXPROF_GATHER_TIMEOUT"
DEFAULT_GATHER_TIMEOUT_S = 60.0
SUMMARY_SUFFIX = ".jaxprof-summary.json"
CHUNK_CHARS = 256 * 1024  #: characters per key-value entry, well under the store's message limits
_SAFE_HOST = re.compile(r"[A-Za-z0-9_.:-]+\Z")


@dataclass(frozen=True)
class PodCapture:
    """One capture of one process, as the gathering sees it."""

    key: str                 #: the capture's prefix in the key-value store, the same in every process
    own_file: Path           #: this process's xplane
    run_dir: Path            #: where its summary and (process 0) the others' go
    index: int               #: this process's index
    processes: tuple[int, ...]  #: the process indices that capture
    reporter: int            #: the one that gathers and reports


def gather_timeout_s() -> float:
    raw = os.environ.get(ENV_GATHER_TIMEOUT, "")
    try:
        value = float(raw) if raw else DEFAULT_GATHER_TIMEOUT_S
    except ValueError:
        value = -1.0
    if value <= 0:
        log.warning("%s=%r is not a positive number of seconds; using %g", ENV_GATHER_TIMEOUT, raw,
                    DEFAULT_GATHER_TIMEOUT_S)
        return DEFAULT_GATHER_TIMEOUT_S
    return value


def capture_key(log_dir: Path, instance: int, capture: int) -> str:
    """The store prefix of capture number ``capture`` of Profiler number ``instance`` on ``log_dir``."""
    return f"jaxprof/pod/{multihost.log_dir_digest(log_dir)}/{instance}/{capture}"


def summarize(own_file: Path, limits: _isolated.Limits) -> tuple[str | None, str]:
    """This process's summary text (written beside its file by a child), or None and why not."""
    summary = own_file.parent / f"{multihost.xplane_host(own_file.name) or own_file.name}{SUMMARY_SUFFIX}"
    outcome = _isolated.run(["summarize", own_file, "-o", summary], limits)
    if not outcome.ok:
        _isolated.warn(own_file, outcome)
        return None, f"its analysis {outcome.failure}"
    try:
        return summary.read_text(encoding="utf-8"), ""
    except OSError as exc:
        return None, f"its summary could not be read back ({exc})"


def publish(client: Any, pc: PodCapture, text: str | None, why: str) -> None:
    """Puts this process's summary (or why there is none) under ``<key>/p<index>/``: the chunks
    first, then the count, so a reader that sees the count finds every chunk."""
    base = f"{pc.key}/p{pc.index}"
    try:
        if text is None:
            client.key_value_set(f"{base}/n", f"error: {why}")
            return
        chunks = [text[i:i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)] or [""]
        for k, chunk in enumerate(chunks):
            client.key_value_set(f"{base}/c{k}", chunk)
        client.key_value_set(f"{base}/n", str(len(chunks)))
    except Exception as exc:  # the store is gone (process 0 ended): the summary stays beside the file
        log.warning("could not share process %d's summary with process %d: %r", pc.index, pc.reporter, exc)


def _fetch(client: Any, base: str, deadline: float) -> tuple[str | None, str]:
    """One process's summary from the store, waiting until ``deadline`` for it to be complete."""
    left_ms = max(1, int((deadline - time.monotonic()) * 1000))
    try:
        count = str(client.blocking_key_value_get(f"{base}/n", left_ms))
    except Exception:
        return None, f"no summary within {gather_timeout_s():g} s (it crashed, hangs, or never captured)"
    if count.startswith("error: "):
        return None, count[len("error: "):]
    try:
        return "".join(str(client.blocking_key_value_get(f"{base}/c{k}", 10_000)) for k in range(int(count))), ""
    except Exception as exc:
        return None, f"its summary could not be read from the store ({exc!r})"


def _summary_host(text: str) -> str | None:
    """The host a summary names, when it is a name safe to use as a file name."""
    try:
        host = json.loads(text).get("host")
    except (ValueError, AttributeError):
        return None
    return host if isinstance(host, str) and _SAFE_HOST.match(host) and host not in (".", "..") else None


def gather(client: Any, pc: PodCapture) -> dict[int, str]:
    """Process 0: the other processes' summaries written into its run directory (a summary already
    there, on a shared file system, is left as it is); returns why each missing one is missing."""
    deadline = time.monotonic() + gather_timeout_s()
    missing: dict[int, str] = {}
    for index in pc.processes:
        if index == pc.index:
            continue
        text, why = _fetch(client, f"{pc.key}/p{index}", deadline)
        host = _summary_host(text) if text is not None else None
        if text is not None and host is None:
            text, why = None, "its summary names no usable host"
        if text is None:
            missing[index] = why
            continue
        dest = pc.run_dir / f"{host}{SUMMARY_SUFFIX}"
        if not dest.exists():
            try:
                tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, dest)
            except OSError as exc:
                missing[index] = f"its summary could not be written into {pc.run_dir} ({exc})"
    return missing


_pending: list[threading.Thread] = []  # exchanges jax.distributed.shutdown waits for
_pending_lock = threading.Lock()


def hold_shutdown_for(thread: threading.Thread) -> None:
    """Makes ``jax.distributed.shutdown()`` wait (bounded) for ``thread``'s exchange: a process that
    shut the job's runtime down at once would take the key-value store away from the others'
    summaries. Installed once, the first time a capture is shared."""
    with _pending_lock:
        _pending[:] = [t for t in _pending if t.is_alive()] + [thread]
        original = jax.distributed.shutdown
        if getattr(original, "_jaxprof_holds", False):
            return

        @functools.wraps(original)
        def shutdown(*args: Any, **kwargs: Any) -> Any:
            deadline = time.monotonic() + gather_timeout_s() + 60.0
            with _pending_lock:
                waiting = list(_pending)
            for t in waiting:
                t.join(max(0.0, deadline - time.monotonic()))
            return original(*args, **kwargs)

        shutdown._jaxprof_holds = True  # type: ignore[attr-defined]
        jax.distributed.shutdown = shutdown


def share_and_report(pc: PodCapture, line: str, full: bool, limits: _isolated.Limits) -> None:
    """The whole in-job step for one process: summarise, share; process 0 gathers and logs the
    merged report. Never raises."""
    try:
        text, why = summarize(pc.own_file, limits)
        client = multihost._kv_client()
        if client is None:
            log.warning("jax.distributed's key-value store is gone: process %d's summary stays beside %s",
                        pc.index, pc.own_file)
            return
        if pc.index != pc.reporter:
            publish(client, pc, text, why)
            return
        missing = gather(client, pc)
        if text is None:
            missing[pc.index] = why
        log_merged_report(pc, line, missing, full, limits)
    except Exception as exc:  # nothing of this may reach the training loop
        log.warning("the multi-host analysis of %s failed: %r", pc.run_dir, exc)


def _missing_words(missing: dict[int, str]) -> str:
    return "; ".join(f"process {i} missing: {why}" for i, why in sorted(missing.items()))


def log_merged_report(pc: PodCapture, line: str, missing: dict[int, str], full: bool,
                      limits: _isolated.Limits) -> None:
    """Logs the merged report of the run's summaries (``jaxprof report`` on the run directory)."""
    outcome = _isolated.run(["report", pc.run_dir, "--json"], limits)
    try:
        doc = json.loads(outcome.stdout) if outcome.ok else None
    except ValueError:
        doc = None
    if doc is None:
        log.info("%s -> %s; %s", line, pc.run_dir, _missing_words(missing) or "every process reported")
        _isolated.warn(pc.run_dir, outcome)
        return
    hosts = len(doc.get("hosts", []))
    lags = doc.get("stragglers", [])
    said = ", ".join(f"step {s['step']} {s['host']} (+{s['behind_ms']:.1f} ms)" for s in lags[:6])
    said += ", ..." if len(lags) > 6 else ""
    findings = doc.get("findings", [])
    top = f"top finding [{findings[0]['severity']}] {findings[0]['title']}" if findings else "no finding"
    head = (f"{line}; {hosts} of {len(pc.processes)} processes merged from their summaries; "
            f"stragglers: {said or 'none'}; {top}")
    if missing:
        head += f"; {_missing_words(missing)}"
    text = ""
    if full:
        report = _isolated.run(["report", pc.run_dir], limits)
        text = "\n" + report.stdout.rstrip() if report.ok else ""
    log.info("%s -> %s%s", head, pc.run_dir, text)
