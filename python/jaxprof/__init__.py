"""jaxprof: profile JAX programs and learn where the time goes.

Capture (this package): ``trace``, ``annotate``/``scope``, ``Profiler``, ``ProfilerConfig``,
``ProfilingMixin``, ``profile_function``, ``benchmark``, ``open_latest_profile``.
Analysis (``load``, ``report``, ``Profile``), comparison (``diff``, ``DiffResult``; regression
asserts in ``jaxprof.testing``) and trace export (``export_trace``) run in the C library behind
``jaxprof._core``, the same code as the ``jaxprof`` command.
"""
from __future__ import annotations

from ._core import __version__
from .analysis import Buffer, Frame, ModuleMemory, Profile, load, report
from .annotate import annotate, profile_scope, scope, trace_function
from .bench import BenchmarkResult, benchmark, benchmark_function, profile_function
from .config import ProfilerConfig, add_argparse_arguments
from .diff import DiffResult, diff
from .export import ExportResult, export_trace
from .inmemory import CapturedProfile, profile
from .mixin import ProfilingMixin
from .profiler import Capture, Profiler
from .runs import Run, find_runs, latest_run
from .sql import Database, sql
from .trace import ProfileContext, profile_trace, trace
from .viewers import open_latest_profile

__all__ = [
    "BenchmarkResult",
    "Buffer",
    "Capture",
    "CapturedProfile",
    "Database",
    "DiffResult",
    "ExportResult",
    "Frame",
    "ModuleMemory",
    "Profile",
    "ProfileContext",
    "Profiler",
    "ProfilerConfig",
    "ProfilingMixin",
    "Run",
    "__version__",
    "add_argparse_arguments",
    "annotate",
    "benchmark",
    "benchmark_function",
    "diff",
    "export_trace",
    "find_runs",
    "latest_run",
    "load",
    "open_latest_profile",
    "profile",
    "profile_function",
    "profile_scope",
    "profile_trace",
    "report",
    "scope",
    "sql",
    "trace",
    "trace_function",
]
