"""ProfilerConfig: dataclass, environment variables, argparse flags, and Profiler.from_config."""
from __future__ import annotations

import argparse
import inspect
from dataclasses import fields
from pathlib import Path

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
