"""``ProfilerConfig``: profiling settings from code, environment variables or command-line flags."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, fields
from typing import Any, Mapping

#: PROFILE_MODE values: which tracers run.
MODES = {
    "full": dict(profile_gpu_trace=True, profile_python_trace=False, host_trace_level=2),
    "host": dict(profile_gpu_trace=False, profile_python_trace=False, host_trace_level=2),
    "device": dict(profile_gpu_trace=True, profile_python_trace=False, host_trace_level=1),
    "python": dict(profile_gpu_trace=True, profile_python_trace=True, host_trace_level=2),
}


#: ProfilerConfig field -> Profiler keyword argument: the one mapping between the two
#: (``profiling_dir`` is the Profiler's positional ``log_dir``).
PROFILER_KWARGS: dict[str, str] = {
    "enable_profiling": "enabled",
    "profiler_start_step": "start_step",
    "profiler_num_steps": "num_steps",
    "profile_every_n_steps": "every_n_steps",
    "max_profile_count": "max_profiles",
    "profile_duration_ms": "duration_ms",
    "profile_gpu_trace": "device_trace",
    "profile_python_trace": "python_trace",
    "host_trace_level": "host_trace_level",
    "profile_report": "report",
    "profile_max_total_bytes": "max_total_bytes",
    "profile_processes": "processes",
    "profile_report_timeout_s": "report_timeout_s",
}
_FIELD_OF = {kwarg: name for name, kwarg in PROFILER_KWARGS.items()}  # errors name the config's field


@dataclass
class ProfilerConfig:
    """Every setting of a :class:`jaxprof.Profiler`, in one serialisable place.

    >>> cfg = ProfilerConfig(enable_profiling=True, profiling_dir="/tmp/prof", profiler_start_step=10)
    >>> prof = Profiler.from_config(cfg)
    """

    enable_profiling: bool = False      #: off by default: a config only profiles when asked
    profiling_dir: str = "./profiles"   #: the log directory captures go under
    profiler_start_step: int = 10       #: first captured step
    profiler_num_steps: int = 5         #: steps per capture
    profile_every_n_steps: int = 0      #: 0 = capture once; K = again every K steps
    max_profile_count: int | None = None  #: with every_n_steps: stop after this many captures
    profile_duration_ms: float = 0      #: > 0: also end a capture after this much wall time
    profile_gpu_trace: bool = True      #: trace device activity (CUPTI on GPU)
    profile_python_trace: bool = False  #: trace Python function calls (slow; off by default)
    host_trace_level: int = 2           #: 0 off, 1 user annotations, 2 default, 3 verbose
    profile_report: bool | str = True   #: after each capture log one line (True), the report ("full"), or nothing (False)
    profile_max_total_bytes: int | None = None  #: stop capturing before captures pass this many bytes
    profile_processes: list[int] | None = None  #: jax.distributed process indices that capture; None = all
    profile_report_timeout_s: float | None = None  #: time limit of each capture's analysis (a child process); None: $JAXPROF_ANALYSIS_TIMEOUT or 300

    def validate(self) -> "ProfilerConfig":
        """Raises ValueError naming the first invalid field; returns self.

        The rules are the Profiler's own (:func:`check_profiler_args`), applied through
        :data:`PROFILER_KWARGS`, so a config that validates always makes a Profiler.
        """
        check_profiler_args(self.profiler_kwargs(), names=_FIELD_OF)
        if not isinstance(self.profiling_dir, (str, os.PathLike)) or not str(self.profiling_dir):
            raise ValueError(f"profiling_dir must be a non-empty path, got {self.profiling_dir!r}")
        return self

    def profiler_kwargs(self) -> dict[str, Any]:
        """The :class:`jaxprof.Profiler` keyword arguments this config stands for (all but the log dir)."""
        return {kwarg: getattr(self, name) for name, kwarg in PROFILER_KWARGS.items()}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **defaults: Any) -> "ProfilerConfig":
        """Reads the ``PROFILE_*`` environment variables over ``defaults``.

        ``PROFILE_ENABLED`` (1/true/yes/on), ``PROFILE_DIR``, ``PROFILE_START_STEP``,
        ``PROFILE_INTERVAL`` (steps between captures; 0 = once), ``PROFILE_DURATION`` (steps per
        capture), ``PROFILE_MODE`` (full | host | device | python), ``PROFILE_MAX_TOTAL_BYTES``
        (disk budget of all captures), ``PROFILE_PROCESSES`` (``0,3``: the jax.distributed processes
        that capture), ``PROFILE_REPORT_TIMEOUT`` (seconds the analysis of a capture may take).
        """
        env = os.environ if environ is None else environ
        cfg = cls(**defaults)
        if "PROFILE_ENABLED" in env:
            cfg.enable_profiling = _parse_bool("PROFILE_ENABLED", env["PROFILE_ENABLED"])
        if "PROFILE_DIR" in env:
            cfg.profiling_dir = env["PROFILE_DIR"]
        for var, attr in (("PROFILE_START_STEP", "profiler_start_step"),
                          ("PROFILE_INTERVAL", "profile_every_n_steps"),
                          ("PROFILE_DURATION", "profiler_num_steps"),
                          ("PROFILE_MAX_TOTAL_BYTES", "profile_max_total_bytes")):
            if var in env:
                setattr(cfg, attr, _parse_int(var, env[var]))
        if "PROFILE_PROCESSES" in env:
            cfg.profile_processes = _parse_int_list("PROFILE_PROCESSES", env["PROFILE_PROCESSES"])
        if "PROFILE_REPORT_TIMEOUT" in env:
            cfg.profile_report_timeout_s = _parse_float("PROFILE_REPORT_TIMEOUT", env["PROFILE_REPORT_TIMEOUT"])
        if "PROFILE_MODE" in env:
            mode = env["PROFILE_MODE"].strip().lower()
            if mode not in MODES:
                raise ValueError(f"PROFILE_MODE must be one of {sorted(MODES)}, got {env['PROFILE_MODE']!r}")
            for attr, value in MODES[mode].items():
                setattr(cfg, attr, value)
        return cfg.validate()

    @classmethod
    def from_args(cls, args: argparse.Namespace, **defaults: Any) -> "ProfilerConfig":
        """Builds a config from a namespace parsed with :func:`add_argparse_arguments`'s flags."""
        cfg = cls(**defaults)
        for f in fields(cls):
            value = getattr(args, f.name, None)
            if value is not None:
                setattr(cfg, f.name, value)
        return cfg.validate()


def add_argparse_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Adds ``--enable_profiling``, ``--profiler_start_step``, ``--profiler_num_steps``,
    ``--profiler_every_n_steps``, ``--profiling_dir`` (and a few more) to ``parser``.

    Read them back with ``ProfilerConfig.from_args(parser.parse_args())``.
    """
    group = parser.add_argument_group("profiling (jaxprof)")
    group.add_argument("--enable_profiling", action="store_true", default=None, help="capture profiles")
    group.add_argument("--profiling_dir", default=None, help="log directory for captures")
    group.add_argument("--profiler_start_step", type=int, default=None, help="first captured step")
    group.add_argument("--profiler_num_steps", type=int, default=None, help="steps per capture")
    group.add_argument("--profiler_every_n_steps", type=int, default=None, dest="profile_every_n_steps",
                       help="capture again every N steps (0 = once)")
    group.add_argument("--max_profile_count", type=int, default=None, help="stop after this many captures")
    group.add_argument("--profile_duration_ms", type=float, default=None, help="end a capture after this many ms")
    group.add_argument("--profile_max_total_bytes", type=int, default=None,
                       help="stop capturing before all captures together pass this many bytes")
    group.add_argument("--profile_processes", type=lambda v: _parse_int_list("--profile_processes", v), default=None,
                       help="comma-separated jax.distributed process indices that capture (default: all)")
    group.add_argument("--profile_report_timeout_s", type=float, default=None,
                       help="seconds the analysis of a capture may take (default: 300)")
    return parser


def _parse_int_list(name: str, text: str) -> list[int]:
    """``"0, 3"`` -> ``[0, 3]``; ValueError naming ``name`` otherwise."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"{name} must be comma-separated integers, got {text!r}") from None


def check_profiler_args(args: Mapping[str, Any], names: Mapping[str, str] | None = None) -> None:
    """Raises ValueError unless ``args`` (Profiler keyword arguments, ``num_steps`` resolved) are valid.

    The one set of rules for :class:`jaxprof.Profiler` and :meth:`ProfilerConfig.validate`; an
    error names an argument as ``names`` maps it (a config's field), else by its keyword.
    """
    def name(kwarg: str) -> str:
        return (names or {}).get(kwarg, kwarg)

    for kwarg in ("start_step", "num_steps", "every_n_steps", "skip_first"):
        if kwarg in args:
            require_int(name(kwarg), args[kwarg], minimum=0)
    require_int(name("host_trace_level"), args.get("host_trace_level", 2), minimum=0, maximum=3)
    for kwarg in ("max_profiles", "max_total_bytes"):
        if args.get(kwarg) is not None:
            require_int(name(kwarg), args[kwarg], minimum=1)
    duration = args.get("duration_ms", 0)
    if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not duration >= 0:
        raise ValueError(f"{name('duration_ms')} must be a number >= 0, got {duration!r}")
    if "report" in args:
        report_mode(args["report"], name("report"))
    timeout = args.get("report_timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise ValueError(f"{name('report_timeout_s')} must be a number > 0 or None, got {timeout!r}")
    for index in args.get("processes") or ():
        require_int(f"{name('processes')}[]", index, minimum=0)
    steps, every = args.get("num_steps", 1), args.get("every_n_steps", 0)
    if steps == 0 and duration <= 0:
        raise ValueError(f"{name('num_steps')} must be >= 1 unless {name('duration_ms')} bounds the capture")
    if every and steps > every:
        raise ValueError(f"{name('num_steps')} ({steps}) must not exceed {name('every_n_steps')} ({every})")


def report_mode(report: bool | str, name: str = "report") -> str:
    """``Profiler(report=...)`` as "short" (True: one line per capture), "full" or "off" (False)."""
    mode = ("short" if report else "off") if isinstance(report, bool) else str(report).lower()
    if mode not in ("short", "full", "off"):
        raise ValueError(f"{name} must be True, False, 'short', 'full' or 'off', got {report!r}")
    return mode


def require_int(name: str, value: Any, *, minimum: int, maximum: int | None = None) -> None:
    """Raises ValueError naming ``name`` unless ``value`` is an int in range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be {bound}, got {value}")


def _parse_int(var: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"{var} must be an integer, got {text!r}") from None


def _parse_float(var: str, text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError(f"{var} must be a number, got {text!r}") from None


def _parse_bool(var: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{var} must be a boolean (1/0, true/false), got {text!r}")
