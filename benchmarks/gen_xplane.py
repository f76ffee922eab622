"""Writes realistic large .xplane.pb profiles, of a chosen size, for the speed and memory benchmarks.

    python benchmarks/gen_xplane.py --layout cpu --size-mb 300 -o /tmp/cpu300.xplane.pb
    python benchmarks/gen_xplane.py --layout gpu --size-mb 80 -o /tmp/gpu80.xplane.pb

Two layouts, modelled on what JAX writes (the plane/line/stat layout of a real `jaxprof demo`
capture on XLA:CPU, and docs/profile-format.md for GPU):

- cpu: `/host:metadata` (one event metadata per compiled module: `Hlo Proto` bytes + `program_id`,
  plane stats jax_version...), `/host:CPU` with a `python3` thread (StepTraceAnnotation `train`
  with `_r`/`step_num`, `PjitFunction(train_step)`, PjRt execute events) and many worker threads
  `tf_XLAEigen/<n>` / `tf_XLAPjRtCpuClient/<n>` running one thunk TraceMe per HLO op (stats as XLA
  writes them: `hlo_op`/`hlo_module`/`_src` by ref, `program_id`, `run_id`, `device_ordinal`, flow
  `_pt`/`_p`), each followed by its `end: <op>` event (`_ct`/`_c`), plus ThreadpoolListener
  instants; `Task Environment`.
- gpu: `/host:metadata`, `/host:CPU` (python thread with the step and dispatch events, a launcher
  thread with one `cuLaunchKernel`/`cuMemcpyHtoDAsync`... per device activity, all carrying the
  `correlation_id` of their kernel or copy), one `/device:GPU:<n>` plane per GPU with device stats
  (peak_teraflops_per_second...), compute streams `Stream #N(Compute)` with kernels (`hlo_op`,
  `hlo_module`, `tf_op`, `kernel_details` by ref, `program_id`, `correlation_id`), copy streams
  `Stream #N(MemcpyH2D)` / `(MemcpyD2H)` with `memcpy_details`, a `CUPTI overhead` line.
  With --plant-launch: each GPU its own launcher thread, with launch delays and host-wait,
  kernel-to-kernel and other gaps of known length (PLANT; the --json output says how much of each).

Speed: one training step's events are encoded once per line as a byte template; every other step
is that template with its per-step fields (offset_ps, step_num, run_id, flow and correlation ids)
rewritten by numpy. Those fields are written as fixed-width varints (non-minimal varints are valid
protobuf and every reader accepts them), so all steps have the same length, the file's size is
known before it is written, and it streams out in chunks (about 1 GB in well under a minute).

The size is reached by the number of steps; everything else (threads, ops per step, modules) stays
fixed, so profiles of different sizes differ only in length, as captures of different durations do.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from xplane_gen import (  # noqa: E402
    LEN, VARINT, HloComputation, HloInstruction, HloModule, f_bytes, f_double, f_str,
    f_varint, hlo_proto, tag, varint,
)

US = 1_000_000                 # picoseconds per microsecond
OFFSET_W = 8                   # bytes of a fixed-width offset_ps varint: < 2**56 ps (20 hours)
ID_W = 5                       # bytes of a fixed-width step_num / run_id: < 2**35
FLOW_W = 9                     # bytes of a fixed-width flow / correlation id: < 2**63
LINE_TS_NS = 6249              # every line's timestamp_ns (a real capture's, normalised)


def fixed_varint(value: int, width: int) -> bytes:
    """value as a varint of exactly width bytes (continuation bits on the padding)."""
    if not 0 <= value < 1 << (7 * width):
        raise ValueError(f"{value} does not fit a {width}-byte varint")
    return bytes(((value >> (7 * i)) & 0x7F) | (0x80 if i < width - 1 else 0) for i in range(width))


# ---- per-plane metadata tables ------------------------------------------------------------------


class Plane:
    """The metadata of one XPlane: event metadata and stat metadata ids by name."""

    def __init__(self, id: int, name: str) -> None:
        self.id, self.name = id, name
        self.events: dict[str, int] = {}
        self.event_extra: dict[str, bytes] = {}       # encoded display_name / stats of a metadata
        self.stat_ids: dict[str, int] = {}
        self.stats = b""                               # plane stats, field 6

    def ev(self, name: str, id: Optional[int] = None) -> int:
        if name not in self.events:
            self.events[name] = id if id is not None else len(self.events) + 1
        return self.events[name]

    def sid(self, name: str) -> int:
        return self.stat_ids.setdefault(name, len(self.stat_ids) + 1)

    # One XStat's body; `number` is the value field (2 double, 3 uint, 4 int, 5 str, 6 bytes, 7 ref).
    def stat(self, key: str, value) -> bytes:
        head = f_varint(1, self.sid(key))
        if isinstance(value, Ref):
            return head + f_varint(7, self.sid(value.s))
        if isinstance(value, float):
            return head + f_double(2, value)
        if isinstance(value, int):
            return head + f_varint(4 if value < 0 or not isinstance(value, U) else 3, value)
        if isinstance(value, bytes):
            return head + f_bytes(6, value)
        return head + f_str(5, value)

    def plane_stats(self, stats: dict) -> None:
        for k, v in stats.items():
            self.stats += f_bytes(6, self.stat(k, v))

    def metadata_bytes(self) -> bytes:
        out = bytearray()
        for name, id in self.events.items():
            body = f_varint(1, id) + f_str(2, name) + self.event_extra.get(name, b"")
            out += f_bytes(4, f_varint(1, id) + f_bytes(2, body))
        for name, id in self.stat_ids.items():
            out += f_bytes(5, f_varint(1, id) + f_bytes(2, f_varint(1, id) + f_str(2, name)))
        return bytes(out + self.stats)


class U(int):
    """An int stat written as uint64 (field 3)."""


@dataclass(frozen=True)
class Ref:
    s: str


@dataclass(frozen=True)
class PerStep:
    """A stat or offset that changes every step: value = base + step * incr (fixed width)."""
    base: int
    incr: int
    width: int = ID_W


# ---- one line's template ---------------------------------------------------------------------------


@dataclass
class Template:
    """One step's events on one line, encoded, plus the fields each step rewrites."""
    buf: bytearray = field(default_factory=bytearray)
    pos: list = field(default_factory=list)        # byte position of each per-step field
    base: list = field(default_factory=list)
    incr: list = field(default_factory=list)
    width: list = field(default_factory=list)
    n_events: int = 0

    def event(self, plane: Plane, name: str, offset_ps: int, dur_ps: int, period_ps: int,
              stats: Optional[dict] = None) -> None:
        """An XEvent at offset_ps within step 0; each step s puts it at offset + s * period."""
        body = bytearray(f_varint(1, plane.ev(name)))
        patches = []
        body += tag(2, VARINT)
        patches.append((len(body), offset_ps, period_ps, OFFSET_W))
        body += fixed_varint(offset_ps, OFFSET_W)
        if dur_ps:
            body += f_varint(3, dur_ps)
        for key, value in (stats or {}).items():
            if isinstance(value, PerStep):
                st = bytearray(f_varint(1, plane.sid(key)) + tag(4 if key != "correlation_id" else 3, VARINT))
                at = len(body) + 2 + len(st)          # XStat tag + 1-byte length, then st
                patches.append((at, value.base, value.incr, value.width))
                st += fixed_varint(value.base, value.width)
                assert len(st) < 128
                body += f_bytes(4, bytes(st))
            else:
                body += f_bytes(4, plane.stat(key, value))
        head = tag(4, LEN) + varint(len(body))
        for at, base, incr, width in patches:
            self.pos.append(len(self.buf) + len(head) + at)
            self.base.append(base)
            self.incr.append(incr)
            self.width.append(width)
        self.buf += head + body
        self.n_events += 1

    def render(self, first: int, count: int) -> np.ndarray:
        """Steps first..first+count-1 of this line, as one (count, len) uint8 array."""
        arr = np.empty((count, len(self.buf)), dtype=np.uint8)
        arr[:] = np.frombuffer(bytes(self.buf), dtype=np.uint8)
        if not self.pos:
            return arr
        steps = np.arange(first, first + count, dtype=np.uint64)[:, None]
        pos, base = np.asarray(self.pos), np.asarray(self.base, dtype=np.uint64)
        incr, width = np.asarray(self.incr, dtype=np.uint64), np.asarray(self.width)
        for w in np.unique(width):
            sel = width == w
            vals = base[sel][None, :] + incr[sel][None, :] * steps
            p = pos[sel]
            for b in range(int(w)):
                byte = (vals >> np.uint64(7 * b)) & np.uint64(0x7F)
                if b < w - 1:
                    byte |= np.uint64(0x80)
                arr[:, p + b] = byte.astype(np.uint8)
        return arr


@dataclass
class LineSpec:
    id: int
    name: str
    tpl: Template


@dataclass
class PlaneSpec:
    plane: Plane
    lines: list


# ---- HLO modules --------------------------------------------------------------------------------

OP_KINDS = [  # (name stem, opcode, fusion kind, jax primitive, mean duration us on CPU)
    ("dot", "dot", "", "dot_general", 120.0),
    ("ynn_fusion", "fusion", "kCustom", "dot_general", 300.0),
    ("multiply_add_fusion", "fusion", "kLoop", "add", 15.0),
    ("broadcast_maximum_fusion", "fusion", "kLoop", "max", 12.0),
    ("reduce_add_fusion", "fusion", "kInput", "reduce_sum", 25.0),
    ("subtract_exponential_fusion", "fusion", "kLoop", "exp", 18.0),
    ("convolution", "convolution", "", "conv_general_dilated", 250.0),
    ("copy", "copy", "", "copy", 6.0),
    ("all-reduce", "all-reduce", "", "psum", 40.0),
    ("transpose_bitcast_fusion", "fusion", "kLoop", "transpose", 9.0),
]
SCOPES = ["embed", "attn/qkv", "attn/softmax", "attn/out", "mlp/up", "mlp/down", "norm", "loss", "optimizer"]


@dataclass
class Op:
    name: str
    opcode: str
    op_name: str
    dur_ps: int


def make_module(name: str, n_ops: int, rng: random.Random, duration_scale: float) -> tuple[HloModule, list[Op]]:
    """A module whose entry computation runs n_ops instructions, fusions calling their own
    computations; op_name scopes and source lines like JAX's."""
    entry = HloComputation(f"main.{n_ops + 1}", 1)
    comps = [entry]
    ops = []
    counts: dict[str, int] = {}
    for i in range(n_ops):
        stem, opcode, kind, prim, mean_us = OP_KINDS[i % len(OP_KINDS)] if i % 3 else OP_KINDS[rng.randrange(len(OP_KINDS))]
        k = counts.get(stem, 0)
        counts[stem] = k + 1
        op = stem if k == 0 else f"{stem}.{k}"
        layer = i * 12 // n_ops
        scope = f"jit(train_step)/jit(main)/transpose(jvp(layer{layer}))/{SCOPES[i % len(SCOPES)]}/{prim}"
        called = ()
        if opcode == "fusion":
            cid = len(comps) + 1
            comps.append(HloComputation(f"fused_computation.{cid}", cid, [
                HloInstruction(f"param_0.{cid}", "parameter"),
                HloInstruction(f"param_1.{cid}", "parameter"),
                HloInstruction(f"{prim}.{cid}", opcode if opcode != "fusion" else "add", op_name=scope,
                               source_file="/workspace/model/train.py", source_line=40 + i),
            ]))
            called = (cid,)
        entry.instructions.append(HloInstruction(op, opcode, op_name=scope, source_file="/workspace/model/train.py",
                                                 source_line=40 + i, fusion_kind=kind, called_computation_ids=called))
        dur = max(1.0, rng.lognormvariate(0, 0.5) * mean_us * duration_scale)
        ops.append(Op(op, opcode, scope, int(dur * US)))
    return HloModule(name, comps), ops


def metadata_plane(pid: int, modules: list[tuple[int, HloModule]], platform: str) -> PlaneSpec:
    meta = Plane(pid, "/host:metadata")
    for program_id, mod in modules:
        name = f"{mod.name}({program_id})"
        meta.ev(name, id=program_id)
        meta.event_extra[name] = (f_str(4, name) + f_bytes(5, meta.stat("Hlo Proto", hlo_proto(mod)))
                                  + f_bytes(5, meta.stat("program_id", U(program_id))))
    meta.plane_stats({"jax_version": "0.10.2", "jaxlib_version": "0.10.2", f"{platform}_version": platform,
                      "process_id": 26902})
    return PlaneSpec(meta, [])


def task_env_plane(pid: int, duration_ps: int) -> PlaneSpec:
    env = Plane(pid, "Task Environment")
    start = 1_795_281_318_954_165_083
    env.plane_stats({"profile_start_time": U(start), "profile_stop_time": U(start + duration_ps // 1000),
                     "profile_options": b"\x08\x01\x10\x02\x18\x01(\x018\x01"})
    return PlaneSpec(env, [])


def thread_id(name: str) -> int:
    return int.from_bytes(hashlib.sha1(name.encode()).digest()[:8], "little") >> 1


def side_modules(rng: random.Random) -> list[tuple[int, HloModule]]:
    """Small modules compiled once (initialisation), as every real capture's metadata holds."""
    out = []
    for i, stem in enumerate(["jit__threefry_split", "jit__normal", "jit_broadcast_in_dim", "jit_convert_element_type",
                              "jit_multiply", "jit_stage"]):
        out.append((2 * i + 4, make_module(stem, 6 + 20 * (i % 3), rng, 1.0)[0]))
    return out


# ---- layouts --------------------------------------------------------------------------------------


def cpu_layout(threads: int, ops_per_step: int, seed: int) -> tuple[list[PlaneSpec], dict]:
    rng = random.Random(seed)
    program_id = 40
    module, ops = make_module("jit_train_step", ops_per_step, rng, 1.0)
    host = Plane(2, "/host:CPU")
    host.plane_stats({"process_id": 26902})
    src_thunk = Ref("external/xla/xla/backends/cpu/runtime/thunk_executor.cc")
    src_pool = Ref("external/xla/xla/tsl/profiler/backends/cpu/threadpool_listener.cc")
    n_workers = max(1, threads - 1)
    workers = [f"tf_XLAEigen/{-(thread_id(str(i)) >> 2)}" if i % 4 else f"tf_XLAPjRtCpuClient/{-(thread_id(str(i)) >> 2)}"
               for i in range(n_workers)]
    tpls = [Template() for _ in workers]
    # Thunks of one step: ops round-robin over the workers, each worker's ops back to back.
    cursor = [20 * US + w * 3 * US for w in range(n_workers)]
    flows_per_step = ops_per_step + n_workers
    for w, tpl in enumerate(tpls):
        tpl.event(host, "ThreadpoolListener::StartRegion", cursor[w] - 2 * US, 0, 0,
                  {"_ct": 15, "_c": PerStep(1 + w, flows_per_step, FLOW_W), "_src": src_pool})
    wall = 0
    for i, op in enumerate(ops):
        w = i % n_workers
        tpl, t = tpls[w], cursor[w]
        flow = PerStep(n_workers + 1 + i, flows_per_step, FLOW_W)
        tpl.event(host, op.name, t, op.dur_ps, 0, {
            "hlo_op": Ref(op.name), "hlo_module": Ref("jit_train_step"), "program_id": program_id,
            "run_id": PerStep(1000, 1), "device_ordinal": 0, "_src": src_thunk, "_pt": 0, "_p": flow})
        tpl.event(host, f"end: {op.name}", t + op.dur_ps + 300_000, 400_000, 0,
                  {"_ct": 0, "_c": flow, "_src": src_thunk})
        cursor[w] = t + op.dur_ps + 2 * US
        wall = max(wall, cursor[w])
    for w, tpl in enumerate(tpls):
        tpl.event(host, "ThreadpoolListener::StopRegion", cursor[w], 0, 0, {"_src": src_pool})
    period = wall + 80 * US
    # The Python thread: the step, its dispatch, PjRt's execute, the wait.
    py = Template()
    py.event(host, "train", 2 * US, period - 4 * US, 0, {"_r": 1, "step_num": PerStep(0, 1)})
    py.event(host, "PjitFunction(train_step)", 4 * US, 14 * US, 0)
    py.event(host, "ParseArguments", 5 * US, 2 * US, 0)
    py.event(host, "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice", 8 * US, 9 * US, 0,
             {"run_id": PerStep(1000, 1), "device_ordinal": 0})
    py.event(host, "Handle inputs", 9 * US, 3 * US, 0)
    py.event(host, "ThunkExecutor::Execute (wait for completion)", 18 * US, wall - 18 * US, 0,
             {"run_id": PerStep(1000, 1), "device_ordinal": 0, "_src": Ref("external/xla/xla/pjrt/cpu/cpu_client.cc")})
    for tpl in [py] + tpls:  # every offset moves by one period per step
        for k in range(len(tpl.pos)):
            if tpl.width[k] == OFFSET_W:
                tpl.incr[k] = period
    lines = [LineSpec(thread_id("python3"), "python3", py)]
    lines += [LineSpec(thread_id(n), n, t) for n, t in zip(workers, tpls)]
    planes = [metadata_plane(1, [(program_id, module)] + side_modules(rng), "cpu"), PlaneSpec(host, lines)]
    info = {"program_id": program_id, "module": "jit_train_step", "ops": [o.name for o in ops],
            "op_ps": {o.name: o.dur_ps for o in ops}, "period_ps": period, "threads": 1 + n_workers}
    return planes, info


KERNELS = {  # opcode -> kernel name as CUPTI reports it
    "dot": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "convolution": "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x256x64_cudnn",
    "all-reduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
}


def gpu_layout(gpus: int, ops_per_step: int, seed: int) -> tuple[list[PlaneSpec], dict]:
    rng = random.Random(seed)
    program_id = 40
    module, ops = make_module("jit_train_step", ops_per_step, rng, 0.2)   # GPU kernels: ~5x faster
    host = Plane(2, "/host:CPU")
    host.plane_stats({"process_id": 26902})
    # Per step and GPU: one H2D copy of the batch, the kernels, one D2H copy of the loss.
    acts_per_gpu = ops_per_step + 2
    corr_per_step = gpus * acts_per_gpu
    py, launcher = Template(), Template()
    launch_at = 20 * US
    dev_planes = []
    period = 0
    for g in range(gpus):
        dev = Plane(3 + g, f"/device:GPU:{g}")
        dev.plane_stats({"device_vendor": "Nvidia", "device_type_string": "NVIDIA H100 80GB HBM3",
                         "clock_rate": 1_980_000, "core_count": 132, "memory_bandwidth": U(3_352_320_000_000),
                         "memory_size": U(85_029_158_912), "compute_cap_major": 9, "compute_cap_minor": 0,
                         "peak_teraflops_per_second": 989.4, "peak_hbm_bw_gigabytes_per_second": 3352.3})
        compute = [Template(), Template()]
        h2d, d2h, cupti = Template(), Template(), Template()
        c0 = g * acts_per_gpu
        t_dev = 30 * US
        size = 64 << 20
        h2d.event(dev, "MemcpyH2D", t_dev, 1400 * US // 100, 0, {
            "correlation_id": PerStep(1 + c0, corr_per_step, FLOW_W), "memcpy_details":
            f"kind_src:pinned kind_dst:device size:{size} dest:{g} async:1", "context_id": 1, "device_id": g})
        launcher.event(host, "cuMemcpyHtoDAsync_v2", launch_at, 6 * US, 0,
                       {"correlation_id": PerStep(1 + c0, corr_per_step, FLOW_W)})
        launch_at += 7 * US
        t_dev += 15 * US
        for i, op in enumerate(ops):
            corr = PerStep(2 + c0 + i, corr_per_step, FLOW_W)
            kname = KERNELS.get(op.opcode, op.name.replace(".", "_"))
            details = (f"regs:{32 * (1 + i % 4)} static_shared:0 dynamic_shared:{(i % 3) * 49152} "
                       f"grid:{132 * (1 + i % 5)},1,1 block:{128 * (1 + i % 2)},1,1 occ_pct:{50 + i % 50}")
            stream = compute[1] if op.opcode == "all-reduce" else compute[0]
            stream.event(dev, kname, t_dev, op.dur_ps, 0, {
                "correlation_id": corr, "kernel_details": Ref(details), "hlo_op": Ref(op.name),
                "hlo_module": Ref("jit_train_step"), "program_id": program_id, "tf_op": Ref(op.op_name),
                "context_id": 1, "device_id": g})
            launcher.event(host, "cuLaunchKernelEx" if i % 2 else "cuLaunchKernel", launch_at, 3 * US, 0,
                           {"correlation_id": corr})
            launch_at += 4 * US
            t_dev += op.dur_ps + 2 * US
        d2h.event(dev, "MemcpyD2H", t_dev, 3 * US, 0, {
            "correlation_id": PerStep(2 + c0 + ops_per_step, corr_per_step, FLOW_W),
            "memcpy_details": f"kind_src:device kind_dst:pinned size:4 dest:{g} async:0", "context_id": 1,
            "device_id": g})
        launcher.event(host, "cuMemcpyDtoHAsync_v2", launch_at, 5 * US, 0,
                       {"correlation_id": PerStep(2 + c0 + ops_per_step, corr_per_step, FLOW_W)})
        launch_at += 6 * US
        cupti.event(dev, "Overhead", t_dev + 5 * US, 2 * US, 0)
        period = max(period, t_dev + 20 * US, launch_at + 20 * US)
        lines = [LineSpec(13, "Stream #13(Compute)", compute[0]), LineSpec(17, "Stream #17(Compute)", compute[1]),
                 LineSpec(14, "Stream #14(MemcpyH2D)", h2d), LineSpec(15, "Stream #15(MemcpyD2H)", d2h),
                 LineSpec(1, "CUPTI overhead", cupti)]
        dev_planes.append(PlaneSpec(dev, [ln for ln in lines if ln.tpl.n_events]))
    py.event(host, "train", 2 * US, period - 4 * US, 0, {"_r": 1, "step_num": PerStep(0, 1)})
    py.event(host, "PjitFunction(train_step)", 4 * US, launch_at - 4 * US, 0)
    py.event(host, "ParseArguments", 5 * US, 2 * US, 0)
    py.event(host, "PjRtStreamExecutorLoadedExecutable::Execute", 10 * US, launch_at - 11 * US, 0,
             {"run_id": PerStep(1000, 1), "device_ordinal": 0})
    for tpl in [py, launcher] + [ln.tpl for p in dev_planes for ln in p.lines]:
        for k in range(len(tpl.pos)):
            if tpl.width[k] == OFFSET_W:
                tpl.incr[k] = period
    names = ["python3", "tf_XLAPjRtGpuClient/0"]
    lines = [LineSpec(thread_id(names[0]), names[0], py), LineSpec(thread_id(names[1]), names[1], launcher)]
    planes = [metadata_plane(1, [(program_id, module)] + side_modules(rng), "gpu"), PlaneSpec(host, lines)] + dev_planes
    info = {"program_id": program_id, "module": "jit_train_step", "ops": [o.name for o in ops],
            "op_ps": {o.name: o.dur_ps for o in ops}, "period_ps": period, "gpus": gpus}
    return planes, info


# Planted launch timings (gpu layout with plant_launch): every value a test asserts.
PLANT = {"api_ps": 3 * US,          # each kernel's launch call
         "queue_ps": 5 * US,        # call end -> kernel start, for a launch that found the device idle
         "host_gap_ps": 50 * US,    # the host's pause before such a launch (the device drains)
         "k2k_ps": 2 * US,          # gap before a kernel launched in time: kernel to kernel
         "other_ps": 30 * US,       # gap before a kernel launched in time, waiting on something else
         "copy_api_ps": 6 * US, "copy_ps": 14 * US, "min_kernel_ps": 3 * US}


def plant_kind(i: int) -> str:
    """What precedes kernel i of a step: the host ("host"), a short gap ("k2k") or a long one ("other")."""
    return "host" if i % 10 == 5 else "other" if i % 10 == 7 else "k2k"


def gpu_launch_layout(gpus: int, ops_per_step: int, seed: int) -> tuple[list[PlaneSpec], dict]:
    """The gpu layout with planted launch timings (PLANT): each GPU has its own launcher thread that
    runs ahead of its device, except before every kernel i with plant_kind(i) == "host", where it
    pauses host_gap_ps after the device's previous work ended, so that kernel waits for the host.
    info["planted"] holds, per device, the idle it was given by cause, and its launches."""
    rng = random.Random(seed)
    program_id = 40
    module, ops = make_module("jit_train_step", ops_per_step, rng, 0.2)
    for op in ops:  # long enough that a launcher 4 µs per launch stays ahead
        op.dur_ps = max(op.dur_ps, PLANT["min_kernel_ps"])
    host = Plane(2, "/host:CPU")
    host.plane_stats({"process_id": 26902})
    acts = ops_per_step + 2
    corr_per_step = gpus * acts
    api, queue = PLANT["api_ps"], PLANT["queue_ps"]
    py = Template()
    launchers, dev_planes, planted = [], [], {}
    ends = []
    for g in range(gpus):
        dev = Plane(3 + g, f"/device:GPU:{g}")
        dev.plane_stats({"device_vendor": "Nvidia", "device_type_string": "NVIDIA H100 80GB HBM3",
                         "clock_rate": 1_980_000, "core_count": 132, "peak_teraflops_per_second": 989.4,
                         "peak_hbm_bw_gigabytes_per_second": 3352.3})
        compute, h2d, d2h, launcher = [Template(), Template()], Template(), Template(), Template()
        c0 = g * acts
        idle = {"host": 0, "k2k": 0, "other": 0}
        # the batch copy: called at 20 µs, starts queue_ps after the call returned
        call = 20 * US
        launcher.event(host, "cuMemcpyHtoDAsync_v2", call, PLANT["copy_api_ps"], 0,
                       {"correlation_id": PerStep(1 + c0, corr_per_step, FLOW_W)})
        first_start = call + PLANT["copy_api_ps"] + queue
        h2d.event(dev, "MemcpyH2D", first_start, PLANT["copy_ps"], 0, {
            "correlation_id": PerStep(1 + c0, corr_per_step, FLOW_W),
            "memcpy_details": f"kind_src:pinned kind_dst:device size:{64 << 20} dest:{g} async:1"})
        busy_end = first_start + PLANT["copy_ps"]
        free = call + PLANT["copy_api_ps"] + US  # when the launcher can call next
        for i, op in enumerate(ops):
            corr = PerStep(2 + c0 + i, corr_per_step, FLOW_W)
            kind = plant_kind(i)
            if kind == "host":
                call = max(free, busy_end + PLANT["host_gap_ps"])
                start = call + api + queue
            else:
                call = free
                start = busy_end + (PLANT["k2k_ps"] if kind == "k2k" else PLANT["other_ps"])
                assert call + api <= busy_end, "the launcher fell behind its device"
            idle[kind] += start - busy_end
            launcher.event(host, "cuLaunchKernel", call, api, 0, {"correlation_id": corr})
            stream = compute[1] if op.opcode == "all-reduce" else compute[0]
            stream.event(dev, KERNELS.get(op.opcode, op.name.replace(".", "_")), start, op.dur_ps, 0, {
                "correlation_id": corr, "hlo_op": Ref(op.name), "hlo_module": Ref("jit_train_step"),
                "program_id": program_id, "kernel_details": Ref("regs:32 grid:132,1,1 block:128,1,1")})
            free = call + api + US
            busy_end = start + op.dur_ps
        call = free  # the loss copy, launched in time: a kernel-to-kernel gap
        assert call + PLANT["copy_api_ps"] <= busy_end
        launcher.event(host, "cuMemcpyDtoHAsync_v2", call, PLANT["copy_api_ps"], 0,
                       {"correlation_id": PerStep(2 + c0 + ops_per_step, corr_per_step, FLOW_W)})
        d2h.event(dev, "MemcpyD2H", busy_end + PLANT["k2k_ps"], 3 * US, 0, {
            "correlation_id": PerStep(2 + c0 + ops_per_step, corr_per_step, FLOW_W),
            "memcpy_details": f"kind_src:device kind_dst:pinned size:4 dest:{g} async:0"})
        idle["k2k"] += PLANT["k2k_ps"]
        busy_end += PLANT["k2k_ps"] + 3 * US
        ends.append((busy_end, first_start))
        planted[f"/device:GPU:{g}"] = {"idle_ps": idle, "launches": acts}
        lines = [LineSpec(13, "Stream #13(Compute)", compute[0]), LineSpec(17, "Stream #17(Compute)", compute[1]),
                 LineSpec(14, "Stream #14(MemcpyH2D)", h2d), LineSpec(15, "Stream #15(MemcpyD2H)", d2h)]
        dev_planes.append(PlaneSpec(dev, [ln for ln in lines if ln.tpl.n_events]))
        launchers.append(launcher)
    # next step's batch copy is called at period + 20 µs, after the device drained: host wait
    period = max(e for e, _ in ends) + 40 * US
    for name, (end, first_start) in zip(planted, ends):
        planted[name]["between_steps_ps"] = period + first_start - end  # host wait, once per step after the first
    py.event(host, "train", 2 * US, period - 4 * US, 0, {"_r": 1, "step_num": PerStep(0, 1)})
    py.event(host, "PjitFunction(train_step)", 4 * US, 10 * US, 0)
    for tpl in [py] + launchers + [ln.tpl for p in dev_planes for ln in p.lines]:
        for k in range(len(tpl.pos)):
            if tpl.width[k] == OFFSET_W:
                tpl.incr[k] = period
    lines = [LineSpec(thread_id("python3"), "python3", py)]
    lines += [LineSpec(thread_id(f"launcher/{g}"), f"tf_XLAPjRtGpuClient/{g}", t) for g, t in enumerate(launchers)]
    planes = [metadata_plane(1, [(program_id, module)], "gpu"), PlaneSpec(host, lines)] + dev_planes
    info = {"program_id": program_id, "module": "jit_train_step", "ops": [o.name for o in ops],
            "op_ps": {o.name: o.dur_ps for o in ops}, "period_ps": period, "gpus": gpus, "planted": planted,
            "plant": dict(PLANT)}
    return planes, info


# ---- writing --------------------------------------------------------------------------------------


def line_parts(ln: LineSpec) -> tuple[bytes, bytes]:
    head = f_varint(1, ln.id) + f_str(2, ln.name) + f_varint(3, LINE_TS_NS)
    tail = f_varint(10, ln.id) + f_str(11, ln.name)
    return head, tail


def plane_parts(p: PlaneSpec) -> tuple[bytes, bytes]:
    return f_varint(1, p.plane.id) + f_str(2, p.plane.name), p.plane.metadata_bytes()


def sizes(planes: list[PlaneSpec], steps: int) -> int:
    total = 0
    for p in planes:
        head, tail = plane_parts(p)
        body = len(head) + len(tail)
        for ln in p.lines:
            lh, lt = line_parts(ln)
            n = len(lh) + len(lt) + steps * len(ln.tpl.buf)
            body += 1 + len(varint(n)) + n
        total += 1 + len(varint(body)) + body
    return total + len(f_str(4, "gen-host"))


def write(path: Path, planes: list[PlaneSpec], steps: int, chunk_bytes: int = 32 << 20) -> int:
    with open(path, "wb", buffering=0) as f:
        for p in planes:
            head, tail = plane_parts(p)
            line_lens = []
            for ln in p.lines:
                lh, lt = line_parts(ln)
                line_lens.append(len(lh) + len(lt) + steps * len(ln.tpl.buf))
            body = len(head) + len(tail) + sum(1 + len(varint(n)) + n for n in line_lens)
            f.write(tag(1, LEN) + varint(body) + head)
            for ln, n in zip(p.lines, line_lens):
                lh, lt = line_parts(ln)
                f.write(tag(3, LEN) + varint(n) + lh)
                per = max(1, chunk_bytes // max(1, len(ln.tpl.buf)))
                for first in range(0, steps, per):
                    f.write(ln.tpl.render(first, min(per, steps - first)).data)
                f.write(lt)
            f.write(tail)
        f.write(f_str(4, "gen-host"))
        return f.tell()


def build(layout: str, *, threads: int, gpus: int, ops_per_step: int, seed: int,
          plant_launch: bool = False) -> tuple[list[PlaneSpec], dict]:
    if layout == "cpu":
        return cpu_layout(threads, ops_per_step, seed)
    if layout == "gpu" and plant_launch:
        return gpu_launch_layout(gpus, ops_per_step, seed)
    if layout == "gpu":
        return gpu_layout(gpus, ops_per_step, seed)
    raise ValueError(f"unknown layout {layout!r}")


def generate(path: Path, layout: str, *, size_mb: Optional[float] = None, steps: Optional[int] = None,
             threads: int = 32, gpus: int = 2, ops_per_step: int = 120, seed: int = 7,
             plant_launch: bool = False) -> dict:
    """Writes the profile; returns what it holds (steps, events per plane, ops, bytes). plant_launch
    (gpu): launch timings planted with known values (gpu_launch_layout), info["planted"]."""
    planes, info = build(layout, threads=threads, gpus=gpus, ops_per_step=ops_per_step, seed=seed,
                         plant_launch=plant_launch)
    # Task Environment's stop time depends on the number of steps: size it with a placeholder.
    per_step = sum(len(ln.tpl.buf) for p in planes for ln in p.lines)
    fixed = sizes(planes + [task_env_plane(len(planes) + 1, 0)], 0)
    if steps is None:
        if size_mb is None:
            raise ValueError("give size_mb or steps")
        steps = max(1, int((size_mb * 1e6 - fixed) // per_step))
    planes.append(task_env_plane(len(planes) + 1, steps * info["period_ps"]))
    t0 = time.perf_counter()
    n = write(Path(path), planes, steps)
    assert n == sizes(planes, steps), (n, sizes(planes, steps))
    events = {p.plane.name: steps * sum(ln.tpl.n_events for ln in p.lines) for p in planes}
    info.update(layout=layout, steps=steps, bytes=n, events=events, total_events=sum(events.values()),
                lines={p.plane.name: len(p.lines) for p in planes}, seconds=time.perf_counter() - t0)
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layout", choices=["cpu", "gpu"], required=True)
    size = ap.add_mutually_exclusive_group(required=True)
    size.add_argument("--size-mb", type=float, help="target file size in MB (10^6 bytes)")
    size.add_argument("--steps", type=int, help="number of training steps instead of a size")
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=32, help="cpu: host threads (1 python + workers)")
    ap.add_argument("--gpus", type=int, default=2, help="gpu: device planes")
    ap.add_argument("--ops", type=int, default=120, help="HLO ops executed per step")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print what was written as JSON")
    ap.add_argument("--plant-launch", action="store_true",
                    help="gpu: plant launch delays and host-wait gaps of known length (PLANT)")
    a = ap.parse_args()
    info = generate(a.out, a.layout, size_mb=a.size_mb, steps=a.steps, threads=a.threads, gpus=a.gpus,
                    ops_per_step=a.ops, seed=a.seed, plant_launch=a.plant_launch)
    if a.json:
        print(json.dumps({k: v for k, v in info.items() if k not in ("op_ps",)}))
    else:
        print(f"{a.out}: {info['bytes'] / 1e6:.1f} MB, {info['layout']}, {info['steps']} steps, "
              f"{info['total_events']:,} events, written in {info['seconds']:.1f} s")


if __name__ == "__main__":
    main()
