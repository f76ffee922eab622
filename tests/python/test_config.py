"""ProfilerConfig: dataclass, environment variables, argparse flags, and Profiler.from_config."""
from __future__ import annotations

import argparse
import inspect
from dataclasses import fields
from pathlib import Path

import jax
import pytest

import jaxprof
from jaxprof import ProfilerConfig, add_argparse_arguments
from jaxprof.config import PROFILER_KWARGS

from conftest import read_xplane, only_xplane, step_dirs


def test_from_env_reads_every_variable(tmp_path):
    env = {
        "PROFILE_ENABLED": "true",
        "PROFILE_DIR": str(tmp_path),
        "PROFILE_START_STEP": "7",
        "PROFILE_INTERVAL": "20",
        "PROFILE_DURATION": "3",
        "PROFILE_MODE": "python",
    }
    cfg = ProfilerConfig.from_env(env)
    assert cfg.enable_profiling is True
    assert cfg.profiling_dir == str(tmp_path)
    assert cfg.profiler_start_step == 7
    assert cfg.profile_every_n_steps == 20
    assert cfg.profiler_num_steps == 3
    assert cfg.profile_python_trace is True and cfg.profile_gpu_trace is True


def test_from_env_defaults_and_interval_zero_means_once():
    cfg = ProfilerConfig.from_env({"PROFILE_INTERVAL": "0", "PROFILE_MODE": "host"})
    assert cfg.enable_profiling is False
    assert cfg.profile_every_n_steps == 0
    assert cfg.profile_gpu_trace is False


@pytest.mark.parametrize("env, name", [
    ({"PROFILE_ENABLED": "maybe"}, "PROFILE_ENABLED"),
    ({"PROFILE_START_STEP": "ten"}, "PROFILE_START_STEP"),
    ({"PROFILE_START_STEP": "-1"}, "profiler_start_step"),
    ({"PROFILE_MODE": "everything"}, "PROFILE_MODE"),
    ({"PROFILE_INTERVAL": "2", "PROFILE_DURATION": "5"}, "profiler_num_steps"),
])
def test_from_env_errors_name_the_variable_or_field(env, name):
    with pytest.raises(ValueError, match=name):
        ProfilerConfig.from_env(env)


@pytest.mark.parametrize("field, value", [
    ("profiler_num_steps", 0),
    ("profile_every_n_steps", -2),
    ("max_profile_count", 0),
    ("profile_duration_ms", -1),
    ("host_trace_level", 9),
    ("profiling_dir", ""),
])
def test_validate_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        ProfilerConfig(**{field: value}).validate()


def test_one_mapping_covers_every_field():
    """Every field but the log dir maps to a Profiler keyword, and profiler_kwargs() uses that map."""
    assert set(PROFILER_KWARGS) == {f.name for f in fields(ProfilerConfig)} - {"profiling_dir"}
    assert set(PROFILER_KWARGS.values()) < set(inspect.signature(jaxprof.Profiler).parameters)
    cfg = ProfilerConfig(profiler_start_step=3, max_profile_count=2, profile_processes=[1])
    kwargs = cfg.profiler_kwargs()
    assert kwargs == {kwarg: getattr(cfg, name) for name, kwarg in PROFILER_KWARGS.items()}
    assert (kwargs["start_step"], kwargs["max_profiles"], kwargs["processes"], kwargs["enabled"]) == (3, 2, [1], False)


@pytest.mark.parametrize("field, value, message", [
    ("profiler_start_step", -1, "{} must be >= 0, got -1"),
    ("host_trace_level", 9, "{} must be in [0, 3], got 9"),
    ("max_profile_count", 0, "{} must be >= 1, got 0"),
    ("profile_duration_ms", "5", "{} must be a number >= 0, got '5'"),
    ("profile_report", "loud", "{} must be True, False, 'short', 'full' or 'off', got 'loud'"),
    ("profile_max_total_bytes", 0, "{} must be >= 1, got 0"),
    ("profile_processes", [-2], "{}[] must be >= 0, got -2"),
])
def test_config_and_profiler_share_one_set_of_rules(tmp_path, field, value, message):
    """The same invalid value gets the same message from both, naming the field or the keyword."""
    kwarg = PROFILER_KWARGS[field]
    with pytest.raises(ValueError) as by_config:
        ProfilerConfig(**{field: value}).validate()
    assert str(by_config.value) == message.format(field)
    with pytest.raises(ValueError) as by_profiler:
        jaxprof.Profiler(tmp_path, num_steps=1, **{kwarg: value})
    assert str(by_profiler.value) == message.format(kwarg)
    assert not any(tmp_path.iterdir())


def test_argparse_flags_round_trip(tmp_path):
    parser = add_argparse_arguments(argparse.ArgumentParser())
    args = parser.parse_args([
        "--enable_profiling", "--profiler_start_step", "4", "--profiler_num_steps", "2",
        "--profiler_every_n_steps", "10", "--profiling_dir", str(tmp_path),
    ])
    cfg = ProfilerConfig.from_args(args)
    assert (cfg.enable_profiling, cfg.profiler_start_step, cfg.profiler_num_steps,
            cfg.profile_every_n_steps, cfg.profiling_dir) == (True, 4, 2, 10, str(tmp_path))
    untouched = ProfilerConfig.from_args(parser.parse_args([]))
    assert untouched == ProfilerConfig()


def test_from_config_honours_every_field(tmp_path):
    cfg = ProfilerConfig(
        enable_profiling=True, profiling_dir=str(tmp_path), profiler_start_step=3, profiler_num_steps=2,
        profile_every_n_steps=6, max_profile_count=4, profile_duration_ms=250.0, profile_gpu_trace=False,
        profile_python_trace=True, host_trace_level=3,
    )
    prof = jaxprof.Profiler.from_config(cfg)
    assert prof.enabled is True
    assert prof.log_dir == Path(tmp_path)
    assert (prof.start_step, prof.num_steps, prof.every_n_steps, prof.max_profiles) == (3, 2, 6, 4)
    assert prof.duration_ms == 250.0
    assert prof.options.host_tracer_level == 3
    assert prof.options.python_tracer_level == 1
    if hasattr(prof.options, "device_tracer_level"):
        assert prof.options.device_tracer_level == 0
    prof.close()


def test_disabled_config_gives_a_profiler_that_never_captures(tmp_path, step_fn, w0):
    prof = jaxprof.Profiler.from_config(ProfilerConfig(profiling_dir=str(tmp_path), profiler_start_step=0))
    for i in range(3):
        with prof.step(i):
            step_fn(w0)
    prof.close()
    assert prof.captures == [] and not any(tmp_path.iterdir())


def test_config_driven_capture(tmp_path, step_fn, w0):
    cfg = ProfilerConfig.from_env({"PROFILE_ENABLED": "1", "PROFILE_DIR": str(tmp_path),
                                   "PROFILE_START_STEP": "2", "PROFILE_DURATION": "2", "PROFILE_INTERVAL": "5"})
    with jaxprof.Profiler.from_config(cfg, max_profiles=2) as prof:
        for i in range(20):
            with prof.step(i):
                step_fn(w0)
    assert step_dirs(tmp_path) == ["step_00000002", "step_00000007"]
    assert read_xplane(only_xplane(tmp_path / "step_00000007")).step_nums == [7, 8]


def test_processes_from_env_flag_and_config(tmp_path):
    """The jax.distributed processes that capture: PROFILE_PROCESSES, --profile_processes, the field."""
    cfg = ProfilerConfig.from_env({"PROFILE_PROCESSES": "3, 0"}, profiling_dir=str(tmp_path))
    assert cfg.profile_processes == [3, 0]
    assert jaxprof.Profiler.from_config(cfg).processes == (0, 3)
    parser = add_argparse_arguments(argparse.ArgumentParser())
    assert ProfilerConfig.from_args(parser.parse_args(["--profile_processes", "1"])).profile_processes == [1]
    with pytest.raises(ValueError, match="PROFILE_PROCESSES"):
        ProfilerConfig.from_env({"PROFILE_PROCESSES": "0,x"})
    with pytest.raises(ValueError, match="profile_processes"):
        ProfilerConfig(profile_processes=[-1]).validate()


# ---- issue 33 item 5: every ProfileOptions field and advanced_configuration key --------------------

from jaxprof.config import ADVANCED_CONFIGURATION, PRESETS, PROFILE_OPTION_FIELDS  # noqa: E402


def test_every_jax_profile_options_field_is_known():
    """The fields we set are those the installed JAX's ProfileOptions has (but the two the Profiler
    owns, and device_tracer_level, which this JAX does not expose and we warn about instead)."""
    theirs = {name for name in dir(jax.profiler.ProfileOptions) if not name.startswith("_")}
    assert theirs - set(PROFILE_OPTION_FIELDS) == {"repository_path", "session_id"}
    assert set(PROFILE_OPTION_FIELDS) - theirs <= {"device_tracer_level"}


OPTIONS = dict(host_trace_level=1, profile_python_trace=True, profile_gpu_trace=True, enable_hlo_proto=False,
               include_dataset_ops=False, raise_error_on_start_failure=True, start_timestamp_ns=5,
               trace_duration_ms=7, advanced_configuration={"gpu_max_activity_api_events": 4000000,
                                                            "tpu_trace_mode": "TRACE_COMPUTE"})


def test_options_round_trip_dataclass_env_and_flags():
    """The same options as fields, as PROFILE_* variables and as flags make equal configs and equal
    ProfileOptions, and every value lands in JAX's ProfileOptions."""
    by_fields = ProfilerConfig(**OPTIONS)
    by_env = ProfilerConfig.from_env({
        "PROFILE_HOST_TRACER_LEVEL": "1", "PROFILE_PYTHON_TRACE": "1", "PROFILE_DEVICE_TRACE": "1",
        "PROFILE_ENABLE_HLO_PROTO": "0", "PROFILE_INCLUDE_DATASET_OPS": "false",
        "PROFILE_RAISE_ON_START_FAILURE": "yes", "PROFILE_START_TIMESTAMP_NS": "5", "PROFILE_TRACE_DURATION_MS": "7",
        "PROFILE_OPTIONS": "gpu_max_activity_api_events=4000000, tpu_trace_mode=TRACE_COMPUTE"})
    parser = add_argparse_arguments(argparse.ArgumentParser())
    by_flags = ProfilerConfig.from_args(parser.parse_args([
        "--host_trace_level", "1", "--profile_python_trace", "--profile_gpu_trace", "--no-enable_hlo_proto",
        "--no-include_dataset_ops", "--raise_error_on_start_failure", "--start_timestamp_ns", "5",
        "--trace_duration_ms", "7", "--profile_option", "gpu_max_activity_api_events=4000000",
        "--profile_option", "tpu_trace_mode=TRACE_COMPUTE"]))
    assert by_fields == by_env == by_flags
    # PROFILE_OPTIONS also takes the plain fields, by JAX's names
    assert ProfilerConfig.from_env({"PROFILE_OPTIONS": "host_tracer_level=1,python_tracer_level=1,enable_hlo_proto=0,"
                                    "include_dataset_ops=0,raise_error_on_start_failure=1,start_timestamp_ns=5,"
                                    "duration_ms=7,gpu_max_activity_api_events=4000000,"
                                    "tpu_trace_mode=TRACE_COMPUTE"}) == by_fields
    options = jaxprof.Profiler.from_config(by_fields).options
    assert (options.host_tracer_level, options.python_tracer_level, options.enable_hlo_proto,
            options.include_dataset_ops, options.raise_error_on_start_failure, options.start_timestamp_ns,
            options.duration_ms) == (1, 1, False, False, True, 5, 7)
    assert options.advanced_configuration == {"gpu_max_activity_api_events": 4000000, "tpu_trace_mode": "TRACE_COMPUTE"}


def test_lean_preset_values():
    """lean: host level 1, no Python tracer, no dataset ops, CUPTI buffers of 1 Mi events; the
    variables and flags given with it override it."""
    assert PRESETS["lean"] == {"host_tracer_level": 1, "python_tracer_level": 0, "include_dataset_ops": False,
                               "advanced_configuration": {"gpu_max_activity_api_events": 1048576,
                                                          "gpu_max_callback_api_events": 1048576}}
    cfg = ProfilerConfig.preset("lean", profile_python_trace=True)
    assert (cfg.host_trace_level, cfg.profile_python_trace, cfg.include_dataset_ops, cfg.enable_hlo_proto) == (1, True, False, True)
    assert cfg.advanced_configuration == {"gpu_max_activity_api_events": 1 << 20, "gpu_max_callback_api_events": 1 << 20}
    by_env = ProfilerConfig.from_env({"PROFILE_PRESET": "lean", "PROFILE_OPTIONS": "gpu_max_callback_api_events=99"})
    assert by_env.advanced_configuration == {"gpu_max_activity_api_events": 1 << 20, "gpu_max_callback_api_events": 99}
    by_flags = ProfilerConfig.from_args(add_argparse_arguments(argparse.ArgumentParser()).parse_args(
        ["--profile_preset", "lean", "--host_trace_level", "2"]))
    assert (by_flags.host_trace_level, by_flags.include_dataset_ops) == (2, False)
    options = jaxprof.Profiler.from_config(ProfilerConfig.preset("lean")).options
    assert (options.host_tracer_level, options.python_tracer_level, options.include_dataset_ops) == (1, 0, False)
    assert options.advanced_configuration == PRESETS["lean"]["advanced_configuration"]


@pytest.mark.parametrize("make, message", [
    (lambda: ProfilerConfig(advanced_configuration={"gpu_max_events": 1}).validate(),
     "advanced_configuration: unknown key 'gpu_max_events'; known: \\['gpu_dump_graph_node_mapping'"),
    (lambda: ProfilerConfig(advanced_configuration={"gpu_max_activity_api_events": "many"}).validate(),
     "advanced_configuration\\['gpu_max_activity_api_events'\\] must be int, got 'many'"),
    (lambda: ProfilerConfig(advanced_configuration={"tpu_trace_mode": "FAST"}).validate(),
     "tpu_trace_mode'\\] must be one of \\['TRACE_ONLY_HOST'"),
    (lambda: ProfilerConfig.from_env({"PROFILE_OPTIONS": "no_such_key=1"}),
     "PROFILE_OPTIONS: unknown key 'no_such_key'; known: ProfileOptions fields"),
    (lambda: ProfilerConfig.from_env({"PROFILE_OPTIONS": "gpu_max_activity_api_events"}),
     "PROFILE_OPTIONS must be KEY=VALUE, got 'gpu_max_activity_api_events'"),
    (lambda: ProfilerConfig.from_env({"PROFILE_PRESET": "tiny"}), "PROFILE_PRESET must be one of \\['lean'\\]"),
    (lambda: jaxprof.Profiler("/nonexistent", advanced_configuration={"cupti": 1}),
     "advanced_configuration: unknown key 'cupti'"),
    (lambda: jaxprof.trace("/nonexistent", options={"advanced_configuration": {"cupti": 1}}),
     "options.advanced_configuration: unknown key 'cupti'"),
])
def test_unknown_keys_are_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_unknown_flag_key_is_a_usage_error(capsys):
    parser = add_argparse_arguments(argparse.ArgumentParser())
    with pytest.raises(SystemExit):
        parser.parse_args(["--profile_option", "gpu_events=5"])
    assert "--profile_option: unknown key 'gpu_events'" in capsys.readouterr().err


def _host_names(path: Path) -> list[str]:
    """Every event name of the /host:CPU plane, read with JAX's ProfileData."""
    data = jax.profiler.ProfileData.from_file(str(path))
    return [e.name for p in data.planes if p.name == "/host:CPU" for line in p.lines for e in line.events]


def test_options_reach_jax(tmp_path, step_fn, w0):
    """A config's tracer levels change what JAX records: host level 0 records no host event at all
    (level 2 records the dispatches), and the Python tracer records this test's own frames."""
    def capture(name: str, **options) -> list[str]:
        cfg = ProfilerConfig(enable_profiling=True, profiling_dir=str(tmp_path / name), profiler_start_step=0,
                             profiler_num_steps=1, profile_report=False, **options)
        with jaxprof.Profiler.from_config(cfg) as prof:
            with prof.step(0):
                step_fn(w0).block_until_ready()
        return _host_names(only_xplane(tmp_path / name))

    default = capture("default")
    assert any(n.startswith("PjitFunction(") for n in default)
    assert not any(n.startswith("$") for n in default)  # the Python tracer is off by default
    assert capture("off", host_trace_level=0) == []
    python = capture("python", profile_python_trace=True, advanced_configuration={"gpu_max_activity_api_events": 1000})
    assert f"$conftest.py:{step_fn.__code__.co_firstlineno} run" in python  # step_fn, called in the captured step


def test_an_option_that_crashed_jax_is_dropped_with_a_warning(caplog, monkeypatch):
    """gpu_enable_cupti_activity_graph_trace killed JAX 0.11.2 with a segmentation fault in 2 of 2
    GPU captures (tests/data/gpu/README.md): profiling must not end a training run, so it is dropped
    with a warning unless JAXPROF_ALLOW_CRASHING_OPTIONS=1; the other keys pass."""
    from jaxprof._jax import make_options

    wanted = {"advanced_configuration": {"gpu_enable_cupti_activity_graph_trace": True, "gpu_max_activity_api_events": 4096}}
    monkeypatch.delenv("JAXPROF_ALLOW_CRASHING_OPTIONS", raising=False)
    with caplog.at_level("WARNING", logger="jaxprof"):
        options = make_options(extra=wanted)
    assert dict(options.advanced_configuration) == {"gpu_max_activity_api_events": 4096}
    assert "gpu_enable_cupti_activity_graph_trace dropped" in caplog.text
    monkeypatch.setenv("JAXPROF_ALLOW_CRASHING_OPTIONS", "1")
    options = make_options(extra=wanted)
    assert dict(options.advanced_configuration) == wanted["advanced_configuration"]
