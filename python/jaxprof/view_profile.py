"""``python -m jaxprof.view_profile``: list, unpack or open the newest capture (seed-compatible CLI).

    python -m jaxprof.view_profile --profile-dir DIR [--ui tensorboard|perfetto|both]
                                   [--extract] [--list-only] [--port N] [--no-browser]

``--list-only`` prints every run (``jaxprof list DIR``) and exits. ``--extract`` first unpacks the
newest run's gzip-compressed trace files (``jaxprof extract DIR``), then opens the viewers.
``--ui`` picks the viewer (default perfetto; ``both`` starts Perfetto's server and TensorBoard).
``--port`` is the port of the first viewer started; with ``both`` TensorBoard keeps its default.
The viewers run until Ctrl-C. Exit status: 0, 1 when there is nothing to show, 2 on bad input.
"""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from .viewers import Viewer, jaxprof_binary, open_latest_profile


def build_parser() -> argparse.ArgumentParser:
    """The command-line options (also used by ``--help``)."""
    parser = argparse.ArgumentParser(prog="python -m jaxprof.view_profile",
                                     description="List, unpack or open the newest JAX profile capture.")
    parser.add_argument("--profile-dir", default="profiles", help="log directory holding the runs (default: ./profiles)")
    parser.add_argument("--ui", choices=("perfetto", "tensorboard", "both"), default="perfetto",
                        help="viewer to open (default: perfetto)")
    parser.add_argument("--extract", action="store_true", help="decompress the newest run's trace files first")
    parser.add_argument("--list-only", action="store_true", help="list the runs and exit")
    parser.add_argument("--port", type=int, default=None, help="port of the (first) viewer")
    parser.add_argument("--no-browser", action="store_true", help="print the links without opening a browser")
    return parser


def _run_cli(*args: str) -> int:
    """Runs one ``jaxprof`` command in the foreground; its output goes straight to ours."""
    binary = jaxprof_binary()
    if binary is None:
        print("jaxprof: the jaxprof executable is not installed", file=sys.stderr)
        return 2
    return subprocess.run([str(binary), *args], check=False).returncode


def _start_viewers(args: argparse.Namespace) -> list[Viewer] | None:
    uis = ("perfetto", "tensorboard") if args.ui == "both" else (args.ui,)
    viewers: list[Viewer] = []
    for i, ui in enumerate(uis):
        viewer = open_latest_profile(args.profile_dir, ui=ui, port=args.port if i == 0 else None,
                                     browser=not args.no_browser)
        if viewer is None:
            for v in viewers:
                v.close()
            return None
        print(f"{ui}: {viewer.link}", flush=True)
        viewers.append(viewer)
    return viewers


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.list_only:
        return _run_cli("list", args.profile_dir)
    if args.extract and (rc := _run_cli("extract", args.profile_dir)) != 0:
        return rc
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops the viewers too
    viewers: list[Viewer] = []
    rc = 0
    try:
        started = _start_viewers(args)
        if started is None:
            return 1
        viewers = started
        while all(v.process.poll() is None for v in viewers):
            time.sleep(0.5)
        rc = 1 if any(v.process.poll() for v in viewers) else 0  # a viewer ended by itself
    except KeyboardInterrupt:
        pass
    finally:
        for v in viewers:
            v.close()
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
