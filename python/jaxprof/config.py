"""``ProfilerConfig``: profiling settings from code, environment variables or command-line flags."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

#: PROFILE_MODE values: which tracers run.
MODES = {
    "full": dict(profile_gpu_trace=True, profile_python_trace=False, host_trace_level=2),
    "host": dict(profile_gpu_trace=False, profile_python_trace=False, host_trace_level=2),
    "device": dict(profile_gpu_trace=True, profile_python_trace=False, host_trace_level=1),
    "python": dict(profile_gpu_trace=True, profile_python_trace=True, host_trace_level=2),
}

#: ``advanced_configuration`` keys JAX's device tracers read, with their value types (XLA's
#: cupti_tracer_options_utils.cc and the TPU tracer's options). Values are int, bool or str; a key
#: not listed is an error here, as the CUPTI tracer rejects keys it does not know.
ADVANCED_CONFIGURATION: dict[str, type] = {
    "gpu_max_callback_api_events": int,      # CUPTI callback (API) events kept per capture (XLA default 2 Mi)
    "gpu_max_activity_api_events": int,      # CUPTI activity (kernel, memcpy) events kept (XLA default 2 Mi)
    "gpu_max_annotation_strings": int,       # distinct annotation strings kept
    "gpu_enable_nvtx_tracking": bool,        # record NVTX ranges
    "gpu_enable_cupti_activity_graph_trace": bool,  # CUDA graphs as one activity each (crashed JAX 0.11.2:
                                                    # dropped unless JAXPROF_ALLOW_CRASHING_OPTIONS=1, _jax.py)
    "gpu_dump_graph_node_mapping": bool,     # log CUDA graph node -> op mapping
    "gpu_pm_sample_counters": str,           # comma-separated PM sampling metrics
    "gpu_pm_sample_interval_us": int,        # PM sampling interval
    "gpu_pm_sample_config_path": str,        # PM sampling config file
    "gpu_num_chips_to_profile_per_task": int,
    "tpu_trace_mode": str,                   # one of TPU_TRACE_MODES
    "tpu_num_chips_to_profile_per_task": int,
    "tpu_num_sparse_cores_to_trace": int,
    "tpu_num_sparse_core_tiles_to_trace": int,
}
TPU_TRACE_MODES = ("TRACE_ONLY_HOST", "TRACE_ONLY_XLA", "TRACE_COMPUTE", "TRACE_COMPUTE_AND_SYNC")

#: ``jax.profiler.ProfileOptions`` fields a capture may set, with their types. ``repository_path``
#: and ``session_id`` are left out: the Profiler names the capture's directory itself.
PROFILE_OPTION_FIELDS: dict[str, type] = {
    "host_tracer_level": int, "device_tracer_level": int, "python_tracer_level": int,
    "enable_hlo_proto": bool, "include_dataset_ops": bool, "raise_error_on_start_failure": bool,
    "start_timestamp_ns": int, "duration_ms": int, "advanced_configuration": dict,
}

#: Named sets of ProfileOptions values (``ProfilerConfig.preset``, ``PROFILE_PRESET``,
#: ``--profile_preset``, ``jaxprof run --preset``). ``lean``: for big GPU jobs, whose capture export
#: can take minutes on 16 GPUs with the default tracer levels: host TraceMes of level 1 only (user
#: annotations and the dispatches, not the runtime's internals), no Python tracer, no tf.data ops,
#: and CUPTI buffers capped at 1 Mi events each (XLA's default is 2 Mi): past the cap events are
#: dropped, which the capture's health then says.
PRESETS: dict[str, dict[str, Any]] = {
    "lean": {
        "host_tracer_level": 1,
        "python_tracer_level": 0,
        "include_dataset_ops": False,
        "advanced_configuration": {"gpu_max_activity_api_events": 1 << 20, "gpu_max_callback_api_events": 1 << 20},
    },
}


def check_profile_options(options: Mapping[str, Any], name: str = "options") -> dict[str, Any]:
    """Raises ValueError naming the first unknown field or ``advanced_configuration`` key (with the
    known ones) or a value of the wrong type; returns the options as a new dict."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        kind = PROFILE_OPTION_FIELDS.get(key)
        if kind is None:
            raise ValueError(f"{name}: unknown ProfileOptions field {key!r}; known: {sorted(PROFILE_OPTION_FIELDS)}")
        if kind is dict:
            value = check_advanced_configuration(value, f"{name}.{key}")
        else:
            _require_type(f"{name}.{key}", value, kind)
            if key.endswith("_level"):
                require_int(f"{name}.{key}", value, minimum=0, maximum=3)
        out[key] = value
    return out


def check_advanced_configuration(config: Any, name: str = "advanced_configuration") -> dict[str, Any]:
    """Raises ValueError unless ``config`` maps known keys (:data:`ADVANCED_CONFIGURATION`) to values
    of their types; returns it as a new dict."""
    if not isinstance(config, Mapping):
        raise ValueError(f"{name} must be a dict, got {config!r}")
    for key, value in config.items():
        kind = ADVANCED_CONFIGURATION.get(key)
        if kind is None:
            raise ValueError(f"{name}: unknown key {key!r}; known: {sorted(ADVANCED_CONFIGURATION)}")
        _require_type(f"{name}[{key!r}]", value, kind)
        if key == "tpu_trace_mode" and value not in TPU_TRACE_MODES:
            raise ValueError(f"{name}['tpu_trace_mode'] must be one of {list(TPU_TRACE_MODES)}, got {value!r}")
    return dict(config)


def _require_type(name: str, value: Any, kind: type) -> None:
    ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
    if not ok:
        raise ValueError(f"{name} must be {kind.__name__}, got {value!r}")


def parse_option(text: str, name: str = "option") -> tuple[str, Any]:
    """``"KEY=VALUE"``, KEY a ProfileOptions field or an ``advanced_configuration`` key, as the pair
    with VALUE typed as KEY wants it (ints, true/false, text); ValueError naming ``name`` otherwise."""
    key, eq, raw = text.partition("=")
    key = key.strip()
    if not eq or not key:
        raise ValueError(f"{name} must be KEY=VALUE, got {text!r}")
    kind = PROFILE_OPTION_FIELDS.get(key) or ADVANCED_CONFIGURATION.get(key)
    if kind is None or kind is dict:
        raise ValueError(f"{name}: unknown key {key!r}; known: ProfileOptions fields "
                         f"{sorted(k for k in PROFILE_OPTION_FIELDS if k != 'advanced_configuration')} and "
                         f"advanced_configuration keys {sorted(ADVANCED_CONFIGURATION)}")
    where = f"{name} {key}"
    value: Any = (_parse_bool(where, raw) if kind is bool else _parse_int(where, raw) if kind is int else raw.strip())
    return key, value


def options_of(pairs: list[tuple[str, Any]], base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """ProfileOptions fields from ``parse_option`` pairs over ``base`` (a preset's): advanced keys go
    into ``advanced_configuration``. Checked (:func:`check_profile_options`)."""
    out = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in (base or {}).items()}
    for key, value in pairs:
        if key in PROFILE_OPTION_FIELDS:
            out[key] = value
        else:
            out.setdefault("advanced_configuration", {})[key] = value
    return check_profile_options(out)


def preset_options(name: str, what: str = "preset") -> dict[str, Any]:
    """The ProfileOptions values of preset ``name`` (a copy); ValueError naming the known ones."""
    preset = PRESETS.get(str(name).strip().lower())
    if preset is None:
        raise ValueError(f"{what} must be one of {sorted(PRESETS)}, got {name!r}")
    return options_of([], preset)


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
    "enable_hlo_proto": "enable_hlo_proto",
    "include_dataset_ops": "include_dataset_ops",
    "raise_error_on_start_failure": "raise_error_on_start_failure",
    "start_timestamp_ns": "start_timestamp_ns",
    "trace_duration_ms": "trace_duration_ms",
    "advanced_configuration": "advanced_configuration",
}

#: ProfileOptions field -> the ProfilerConfig field that sets it (a preset's values land there);
#: the tracer levels of devices and Python are the config's on/off switches.
_CONFIG_OF_OPTION = {
    "host_tracer_level": "host_trace_level", "device_tracer_level": "profile_gpu_trace",
    "python_tracer_level": "profile_python_trace", "enable_hlo_proto": "enable_hlo_proto",
    "include_dataset_ops": "include_dataset_ops", "raise_error_on_start_failure": "raise_error_on_start_failure",
    "start_timestamp_ns": "start_timestamp_ns", "duration_ms": "trace_duration_ms",
    "advanced_configuration": "advanced_configuration",
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
    # the rest of jax.profiler.ProfileOptions (defaults: JAX's own)
    enable_hlo_proto: bool = True       #: save each module's HloProto (FLOPs, bytes, memory need it)
    include_dataset_ops: bool = True    #: trace tf.data / grain dataset ops
    raise_error_on_start_failure: bool = False  #: a tracer that fails to start fails the capture (else a warning)
    start_timestamp_ns: int = 0         #: ProfileOptions.start_timestamp_ns: when the session starts (0: now)
    trace_duration_ms: int = 0          #: ProfileOptions.duration_ms: the session's own limit (0: none)
    advanced_configuration: dict[str, Any] = field(default_factory=dict)  #: device tracer keys (ADVANCED_CONFIGURATION)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "ProfilerConfig":
        """A config with preset ``name``'s values (:data:`PRESETS`), then ``overrides``."""
        cfg = cls()
        cfg.apply_preset(name)
        for key, value in overrides.items():
            setattr(cfg, key, value)
        return cfg.validate()

    def apply_preset(self, name: str, what: str = "preset") -> "ProfilerConfig":
        """Sets the fields preset ``name`` names (advanced keys merged over the present ones)."""
        for option, value in preset_options(name, what).items():
            self._set_option(option, value)
        return self

    def _set_option(self, option: str, value: Any) -> None:
        attr = _CONFIG_OF_OPTION[option]
        if option == "advanced_configuration":
            value = {**self.advanced_configuration, **value}
        elif attr in ("profile_gpu_trace", "profile_python_trace"):
            value = bool(value)
        setattr(self, attr, value)

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

        The capture's ProfileOptions: ``PROFILE_PRESET`` (``lean``; read first, the rest override
        it), ``PROFILE_HOST_TRACER_LEVEL``, ``PROFILE_DEVICE_TRACE``, ``PROFILE_PYTHON_TRACE``,
        ``PROFILE_ENABLE_HLO_PROTO``, ``PROFILE_INCLUDE_DATASET_OPS``,
        ``PROFILE_RAISE_ON_START_FAILURE``, ``PROFILE_START_TIMESTAMP_NS``,
        ``PROFILE_TRACE_DURATION_MS``, and ``PROFILE_OPTIONS`` (``KEY=VALUE,...``: any ProfileOptions
        field or ``advanced_configuration`` key, e.g. ``gpu_max_activity_api_events=4000000``).
        """
        env = os.environ if environ is None else environ
        cfg = cls(**defaults)
        if "PROFILE_PRESET" in env:  # first: the variables below override its values
            cfg.apply_preset(env["PROFILE_PRESET"], "PROFILE_PRESET")
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
        for var, attr in (("PROFILE_HOST_TRACER_LEVEL", "host_trace_level"),
                          ("PROFILE_START_TIMESTAMP_NS", "start_timestamp_ns"),
                          ("PROFILE_TRACE_DURATION_MS", "trace_duration_ms")):
            if var in env:
                setattr(cfg, attr, _parse_int(var, env[var]))
        for var, attr in (("PROFILE_DEVICE_TRACE", "profile_gpu_trace"),
                          ("PROFILE_PYTHON_TRACE", "profile_python_trace"),
                          ("PROFILE_ENABLE_HLO_PROTO", "enable_hlo_proto"),
                          ("PROFILE_INCLUDE_DATASET_OPS", "include_dataset_ops"),
                          ("PROFILE_RAISE_ON_START_FAILURE", "raise_error_on_start_failure")):
            if var in env:
                setattr(cfg, attr, _parse_bool(var, env[var]))
        if "PROFILE_OPTIONS" in env:  # "KEY=VALUE,KEY=VALUE": ProfileOptions fields or advanced keys
            pairs = [parse_option(part, "PROFILE_OPTIONS") for part in env["PROFILE_OPTIONS"].split(",") if part.strip()]
            for option, value in options_of(pairs).items():
                cfg._set_option(option, value)
        return cfg.validate()

    @classmethod
    def from_args(cls, args: argparse.Namespace, **defaults: Any) -> "ProfilerConfig":
        """Builds a config from a namespace parsed with :func:`add_argparse_arguments`'s flags."""
        cfg = cls(**defaults)
        if getattr(args, "profile_preset", None) is not None:  # first: the flags override its values
            cfg.apply_preset(args.profile_preset, "--profile_preset")
        for f in fields(cls):
            value = getattr(args, f.name, None)
            if value is not None and f.name != "advanced_configuration":
                setattr(cfg, f.name, value)
        for option, value in options_of(getattr(args, "profile_option", None) or []).items():
            cfg._set_option(option, value)
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
    group.add_argument("--profile_preset", choices=sorted(PRESETS), default=None,
                       help="a named set of ProfileOptions (lean: for big GPU jobs); the flags below override it")
    group.add_argument("--host_trace_level", type=int, default=None, help="host tracer level 0-3 (default 2)")
    group.add_argument("--profile_gpu_trace", action=argparse.BooleanOptionalAction, default=None,
                       help="trace device activity (default: on)")
    group.add_argument("--profile_python_trace", action=argparse.BooleanOptionalAction, default=None,
                       help="trace Python calls (default: off)")
    group.add_argument("--enable_hlo_proto", action=argparse.BooleanOptionalAction, default=None,
                       help="save each module's HloProto (default: on)")
    group.add_argument("--include_dataset_ops", action=argparse.BooleanOptionalAction, default=None,
                       help="trace dataset ops (default: on)")
    group.add_argument("--raise_error_on_start_failure", action=argparse.BooleanOptionalAction, default=None,
                       help="fail the capture when a tracer cannot start (default: off)")
    group.add_argument("--start_timestamp_ns", type=int, default=None, help="ProfileOptions.start_timestamp_ns")
    group.add_argument("--trace_duration_ms", type=int, default=None, help="ProfileOptions.duration_ms (0: none)")
    group.add_argument("--profile_option", action="append", metavar="KEY=VALUE", default=None,
                       type=lambda v: _arg(parse_option, v, "--profile_option"),
                       help="any ProfileOptions field or advanced_configuration key "
                            "(gpu_max_activity_api_events=4000000); repeatable")
    return parser


def _arg(parse: Any, text: str, name: str) -> Any:
    """An argparse type from a parser that raises ValueError: its message as the usage error."""
    try:
        return parse(text, name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
    for kwarg in ("enable_hlo_proto", "include_dataset_ops", "raise_error_on_start_failure"):
        if kwarg in args:
            _require_type(name(kwarg), args[kwarg], bool)
    for kwarg in ("start_timestamp_ns", "trace_duration_ms"):
        if kwarg in args:
            require_int(name(kwarg), args[kwarg], minimum=0)
    if "advanced_configuration" in args:
        check_advanced_configuration(args["advanced_configuration"], name("advanced_configuration"))
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
