"""``python -m jaxprof <command>``: the commands that need JAX (the ``jaxprof`` binary hands them here)."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print("usage: python -m jaxprof {demo,capture,calibrate,run} [options]\n"
              "(python -m jaxprof CMD --help, or jaxprof help, for each command's options)")
        return 0 if args else 2
    if args[0] == "demo":
        from . import demo
        return demo.main(args[1:])
    if args[0] == "capture":
        from . import remote
        return remote.main(args[1:])
    if args[0] == "calibrate":
        from . import calibrate
        return calibrate.main(args[1:])
    if args[0] == "run":
        from . import launch
        return launch.main(args[1:])
    print(f"jaxprof: unknown command {args[0]!r} (python -m jaxprof runs: demo, capture, calibrate, run)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
