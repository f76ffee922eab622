"""Writes the seed corpora of the fuzz targets (run from anywhere; the committed corpus/ came from
it, then `libFuzzer -merge=1` kept the inputs that add coverage):

    .venv/bin/python tests/fuzz/make_corpus.py

Seeds: the committed fixture tests/data/cpu_small.xplane.pb.gz (gunzipped for xspace and profile,
as-is for gzip, its HloProtos for hlo), small synthetic GPU and TPU profiles from
tests/python/xplane_gen.py, HTTP request heads (good, traversal, huge, garbage), and the host
summaries `jaxprof summarize` writes of those profiles, with hostile edits.

    .venv/bin/python tests/fuzz/make_corpus.py --realistic [LOG_DIR]

adds (or refreshes) the seeds of realistic captures (issue 30): tests/python/realistic_models.py's
transformer LM, CNN, 500-array tuple and deeply nested / long-named module, captured into LOG_DIR
(a fresh temporary directory unless given), then minimised to at most SEED_MAX bytes each: for hlo,
each capture's largest HloProto (its entry computation kept, other computations dropped from the
end until it fits); for xspace and profile, the capture with /host:metadata holding only that
minimised HloProto and every line's events cut to the first N (N halved until it fits).
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))

from xplane_gen import (  # noqa: E402
    Bytes, Compressed, Double, HloComputation, HloInstruction, HloModule, Int, Ref, Str, Uint, XSpace,
    hlo_proto,
)

HLO = HloModule("jit_step", [
    HloComputation("fused_add", 2, [HloInstruction("param_0", "parameter"),
                                    HloInstruction("add.0", "add", op_name="jit(step)/jvp(loss)/add")]),
    HloComputation("main", 1, [
        HloInstruction("dot.1", "dot", op_name="jit(step)/jvp(loss)/dense/dot_general", source_file="m.py",
                       source_line=12),
        HloInstruction("fusion.2", "fusion", op_name="jit(step)/add", fusion_kind="kLoop",
                       called_computation_ids=(2,)),
        HloInstruction("all-reduce.3", "all-reduce", op_name="jit(step)/psum"),
    ]),
])


def gpu_space() -> XSpace:
    """A GPU profile using every stat encoding: kernels, memcpys, allocator events, steps."""
    space = XSpace(hostnames=["gpu-host"])
    space.hlo_module(5, HLO)
    py = space.plane("/host:CPU").line("python3", id=42)
    py.span("train", 0, 500, {"_r": 1, "step_num": 0})
    py.span("PjitFunction(step)", 100, 400)
    py.span("backend_compile_and_load", 110, 150)
    py.instant("MemoryAllocation", 120, {"allocator_name": Ref("GPU_0_bfc"), "bytes_allocated": Uint(4096),
                                         "peak_bytes_in_use": 8192})
    gpu = space.plane("/device:GPU:0")
    gpu.stats({"peak_teraflops_per_second": Double(19.5), "memory_bandwidth": Uint(1 << 40)})
    stream = gpu.line("Stream #13(Compute)", id=13, timestamp_ns=1000)
    common = {"hlo_module": "jit_step", "program_id": Int(5)}
    stream.span("sm80_gemm", 120, 160, {"hlo_op": Ref("dot.1"), "correlation_id": Uint(1),
                                        "kernel_details": Compressed("regs:16 grid:4,2,1 block:256,1,1"), **common})
    stream.span("loop_add", 170, 180, {"hlo_op": Str("fusion.2"), **common})
    stream.span("ncclAllReduce", 200, 260, {"hlo_op": "all-reduce.3", "raw": Bytes(b"\x00\x01"), **common})
    copies = gpu.line("Stream #14(MemcpyH2D)", id=14)
    copies.span("MemcpyH2D", 100, 110, {"memcpy_details": "kind_src:pageable size:4096", "bytes": Uint(4096)})
    return space


def tpu_space() -> XSpace:
    """A TPU profile: steps, modules and ops lines, cost stats on the event metadata."""
    space = XSpace(hostnames=["tpu-host"])
    space.hlo_module(7, HLO)
    tpu = space.plane("/device:TPU:0")
    tpu.stats({"peak_teraflops_per_second": Double(197.0), "peak_hbm_bw_gigabytes_per_second": Double(819.0)})
    tpu.event_meta("dot.1", stats={"flops": Double(2e9), "bytes_accessed": Uint(8_000_000),
                                   "hlo_category": Ref("convolution")})
    steps, modules = tpu.line("Steps", id=1), tpu.line("XLA Modules", id=2)
    ops = tpu.line("XLA Ops", id=3, timestamp_ns=50_000)
    for step, base in ((3, 0), (4, 1200)):
        steps.span(str(step), base, base + 1200, {"group_id": step})
        modules.span("jit_step(7)", base + 100, base + 1100, {"run_id": Uint(step)})
        ops.span("dot.1", base + 100, base + 300)
        ops.span("fusion.2", base + 300, base + 900)
        ops.span("all-reduce.3", base + 900, base + 1000)
    tpu.line("Aggregated", id=4).aggregated("add.0", 10, 5000)
    return space


def fields(buf: bytes):
    """Yields (number, wire, value) for each field of a protobuf message (value: int or bytes)."""
    i = 0
    while i < len(buf):
        key, i = varint_at(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint_at(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        elif wire == 2:
            n, i = varint_at(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, v


def varint_at(buf: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n, i


def hlo_protos(space: bytes) -> list[bytes]:
    """The bytes stats (HloProtos) of every event metadata of every plane."""
    out = []
    for number, _, plane in fields(space):
        if number != 1:
            continue
        for pn, _, entry in fields(plane):
            if pn != 4:  # map<int64, XEventMetadata>
                continue
            for en, _, meta in fields(entry):
                if en != 2:
                    continue
                for mn, _, stat in fields(meta):
                    if mn == 5:
                        out += [v for sn, _, v in fields(stat) if sn == 6 and len(v) > 16]
    return out


# ---- realistic captures, minimised (issue 30) -------------------------------------------------------

SEED_MAX = 200_000
XSPACE_PLANES, PLANE_NAME, PLANE_LINES, PLANE_EVENT_META = 1, 2, 3, 4
LINE_EVENTS, EMETA_NAME, EMETA_STATS, STAT_BYTES = 4, 2, 5, 6
HLO_MODULE, MODULE_COMPUTATIONS, MODULE_ENTRY_ID, COMP_INSTRUCTIONS, COMP_ID, COMP_ROOT_ID = 1, 3, 6, 2, 5, 6
INSTR_ID, EVENT_META_ID = 35, 1


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number: int, wire: int, value: int | bytes) -> bytes:
    """One protobuf field, as fields() yields it."""
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(value)  # type: ignore[arg-type]
    if wire == 2:
        return key + varint(len(value)) + value  # type: ignore[arg-type]
    return key + value  # type: ignore[operator]


def rewrite(buf: bytes, edit) -> bytes:
    """buf with each field replaced by edit(number, wire, value): bytes to keep (re-encoded), None
    to drop it; edit returning the value unchanged keeps the field as it was."""
    out = bytearray()
    for number, wire, value in fields(buf):
        new = edit(number, wire, value)
        if new is not None:
            out += field(number, wire, new)
    return bytes(out)


def hlo_modules(space: bytes) -> dict[str, bytes]:
    """Module name ("jit_step(6)") -> HloProto bytes, from /host:metadata's event metadata."""
    out = {}
    for number, _, plane in fields(space):
        if number != XSPACE_PLANES:
            continue
        for pn, _, entry in fields(plane):
            if pn != PLANE_EVENT_META:
                continue
            for en, _, meta in fields(entry):
                if en != 2:
                    continue
                name = next((v for mn, _, v in fields(meta) if mn == EMETA_NAME), b"").decode()
                protos = [v for mn, _, stat in fields(meta) if mn == EMETA_STATS
                          for sn, _, v in fields(stat) if sn == STAT_BYTES and len(v) > 16]
                if protos:
                    out[name] = protos[0]
    return out


def cut_instructions(comp: bytes, n_keep: int) -> bytes:
    """The computation with its root instruction and its first n_keep others."""
    root = next((v for n, _, v in fields(comp) if n == COMP_ROOT_ID), None)
    seen = [0]

    def edit(n: int, w: int, v: bytes) -> bytes | None:
        if n != COMP_INSTRUCTIONS:
            return v
        if next((x for k, _, x in fields(v) if k == INSTR_ID), None) == root:
            return v
        seen[0] += 1
        return v if seen[0] <= n_keep else None
    return rewrite(comp, edit)


def shrink_hlo(proto: bytes, limit: int = SEED_MAX) -> bytes:
    """The HloProto with its entry computation, buffer assignment and everything else, and as many
    of its other computations (in order) as fit in limit bytes; when the entry alone is too big, its
    root (the output tuple) and as many of its first instructions as fit."""
    module = next(v for n, _, v in fields(proto) if n == HLO_MODULE)
    entry_id = next((v for n, _, v in fields(module) if n == MODULE_ENTRY_ID), None)
    comps = [v for n, _, v in fields(module) if n == MODULE_COMPUTATIONS]
    is_entry = [next((v for n, _, v in fields(c) if n == COMP_ID), None) == entry_id for c in comps]
    budget = limit - (len(proto) - sum(len(c) + 8 for c in comps))
    keep: dict[int, bytes] = {}
    for i in sorted(range(len(comps)), key=lambda i: not is_entry[i]):  # the entry first
        comp, n_keep = comps[i], 1 << 16
        while is_entry[i] and len(comp) + 8 > budget and n_keep > 0:
            n_keep //= 2
            comp = cut_instructions(comps[i], n_keep)
        if is_entry[i] or len(comp) + 8 <= budget:
            keep[i] = comp
            budget -= len(comp) + 8
    index = [-1]

    def comp_edit(n: int, w: int, v: bytes) -> bytes | None:
        if n != MODULE_COMPUTATIONS:
            return v
        index[0] += 1
        return keep.get(index[0])
    new_module = rewrite(module, comp_edit)
    return rewrite(proto, lambda n, w, v: new_module if n == HLO_MODULE else v)


def shrink_space(space: bytes, module: str, proto: bytes, limit: int = SEED_MAX) -> bytes:
    """The XSpace with /host:metadata holding only `module` (as proto) and each line's events cut
    to the first n, n halved until the whole fits in limit bytes."""
    def metadata_plane(plane: bytes) -> bytes:
        def entry(n: int, w: int, v: bytes) -> bytes | None:
            if n != PLANE_EVENT_META:
                return v
            meta = next(m for en, _, m in fields(v) if en == 2)
            name = next((x for mn, _, x in fields(meta) if mn == EMETA_NAME), b"").decode()
            if name != module:
                return None
            stats = lambda sn, sw, sv: rewrite(sv, lambda k, kw, kv: proto if k == STAT_BYTES else kv) \
                if sn == EMETA_STATS else sv  # noqa: E731
            return rewrite(v, lambda en, ew, ev: rewrite(ev, stats) if en == 2 else ev)
        return rewrite(plane, entry)

    def cut(n_events: int) -> bytes:
        def plane_edit(pn: int, pw: int, plane: bytes) -> bytes:
            if pn != XSPACE_PLANES:
                return plane
            name = next((v for n, _, v in fields(plane) if n == PLANE_NAME), b"")
            if name == b"/host:metadata":
                return metadata_plane(plane)

            used: set[int] = set()

            def line_edit(n: int, w: int, line: bytes) -> bytes:
                if n != PLANE_LINES:
                    return line
                seen = [0]

                def event_edit(en: int, ew: int, ev: bytes) -> bytes | None:
                    if en != LINE_EVENTS:
                        return ev
                    seen[0] += 1
                    if seen[0] > n_events:
                        return None
                    used.update(v for k, _, v in fields(ev) if k == EVENT_META_ID)
                    return ev
                return rewrite(line, event_edit)
            plane = rewrite(plane, line_edit)
            # the event metadata the kept events name (a capture's host plane has thousands)
            return rewrite(plane, lambda n, w, v: v if n != PLANE_EVENT_META or
                           next((k for kn, _, k in fields(v) if kn == 1), None) in used else None)
        return rewrite(space, plane_edit)

    n = 1 << 16
    out = cut(n)
    while len(out) > limit and n > 1:
        n //= 2
        out = cut(n)
    return out


def realistic_seeds(log_dir: Path) -> dict[str, dict[str, bytes]]:
    """Captures tests/python/realistic_models.py's programs into log_dir (unless already there) and
    returns their minimised seeds per target."""
    script = ROOT / "tests" / "python" / "realistic_models.py"
    if not any(log_dir.rglob("*.xplane.pb")):
        subprocess.run([sys.executable, str(script), str(log_dir)], check=True, stdout=subprocess.DEVNULL)
    seeds: dict[str, dict[str, bytes]] = {"xspace": {}, "profile": {}, "hlo": {}, "writers": {}, "gzip": {}}
    jaxprof_cli = Path(sys.executable).parent / "jaxprof"
    for capture in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        (path,) = capture.rglob("*.xplane.pb")
        space = path.read_bytes()
        modules = hlo_modules(space)
        # the module that ran (the process's earlier modules are in every later capture too)
        memory = subprocess.run([str(jaxprof_cli), "memory", str(path), "--json"], check=True,
                                capture_output=True, text=True).stdout
        module = json.loads(memory)["modules"][0]["name"]
        proto = shrink_hlo(modules[module])
        small = shrink_space(space, module, proto)
        seeds["hlo"][f"real_{capture.name}"] = proto
        seeds["xspace"][f"real_{capture.name}"] = small
        seeds["profile"][f"real_{capture.name}"] = small
        seeds["writers"][f"real_{capture.name}"] = small
        seeds["gzip"][f"real_{capture.name}"] = gzip.compress(small, mtime=0)
    return seeds


HTTP = {
    "get": b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
    "get_query": b"GET /data/trace.json?token=abc&x=1 HTTP/1.1\r\nHost: localhost:8080\r\n"
                 b"Range: bytes=0-99\r\nUser-Agent: t\r\n\r\n",
    "head_allowed": b"HEAD /a%20b/c.txt HTTP/1.0\nHost: viewer.example:8080\n\n",
    "options": b"OPTIONS /x HTTP/1.1\r\nHost: [::1]:8080\r\nOrigin: http://a\r\n"
               b"Access-Control-Request-Private-Network: true\r\n\r\n",
    "token_cookie": b"GET /p HTTP/1.1\r\nHost: any.name:8080\r\n"
                    b"Cookie: a=b; jaxprof_token=0123456789abcdef0123456789abcdef\r\n\r\n",
    "token_query": b"GET /p?token=0123456789abcdef0123456789abcdef HTTP/1.1\r\nHost: x:8080\r\n\r\n",
    "traversal": b"GET /../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
    "traversal_enc": b"GET /a/%2e%2E/%2fetc%5cx HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
    "bad_escape": b"GET /%zz%0 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
    "post": b"POST /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 3\r\n\r\nabc",
    "bad_host": b"GET / HTTP/1.1\r\nHost: evil.example:8080\r\nHost: 127.0.0.1:8080\r\n\r\n",
    "many_headers": b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: %d\r\n" % (i, i) for i in range(70)) + b"\r\n",
    "huge_header": b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX: " + b"a" * 16000 + b"\r\n\r\n",
    "obs_fold": b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n folded\r\n\r\n",
    "cr_inside": b"GET /\r HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
    "nul_value": b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: a\x00b\r\n\r\n",
    "nul_host": b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\x00.evil.example\r\n\r\n",
    "http2": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "garbage": bytes(range(256)),
    "no_end": b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n",
}


# fuzz_hlotext reads a small program, not a proto (see the comment atop tests/fuzz/fuzz_hlotext.c);
# these spell out its byte layout. Opcode indices: 1 add, 2 tuple, 5 custom-call, 6 concatenate.
def _hlotext_instr(name=(5, 0), opcode=1, shape=b"\x01\x02\x10\x20", operands=(0, 0), op_name=(12, 1),
                   source=(6, 0), line=7, target=(0, 0)) -> bytes:
    return bytes([*name, opcode]) + shape + bytes([*operands, *op_name, *source, line, *target])


def _hlotext_buffers(*entries: tuple[int, list[int]]) -> bytes:
    """Per instruction: its size byte and shape index (at most 11 entries, each < 256)."""
    return b"".join(bytes([size, len(index), *index]) for size, index in entries)


F32_4096_4096_8 = b"\x01\x03\x80\x80\x08"  # f32[4096,4096,8]: dims 128 -> 4096
HLOTEXT = {
    # three small instructions, a heap trace
    "small": bytes([2, 2]) + _hlotext_instr() + _hlotext_instr(name=(7, 5), operands=(2, 0))
    + _hlotext_instr(opcode=2, shape=b"\x00\x03" + F32_4096_4096_8, operands=(3, 0))
    + _hlotext_buffers((1, []), (2, []), (3, [2])),
    # the issue 30 crash: an output tuple of 500 arrays (tuple_len(250) == 500) with its whole
    # shape as a buffer's; a tuple of 500 pairs of 500 operands with a buffer at {255}; buffers
    # located by name, a heap trace
    "tuple500": bytes([1, 3]) + _hlotext_instr(opcode=2, shape=b"\x00\xfa" + F32_4096_4096_8)
    + _hlotext_instr(opcode=2, shape=b"\x00\xfa\x00\x02" + F32_4096_4096_8, operands=(230, 0))
    + _hlotext_buffers((9, []), (9, [255])),
    # names of 1,024 bytes (text_len(143)) in 2-byte UTF-8, a 1,472-byte scope path, a custom-call target
    "long_names": bytes([1, 1]) + _hlotext_instr(name=(143, 2), op_name=(150, 1), source=(140, 3))
    + _hlotext_instr(name=(160, 4), opcode=5, op_name=(143, 6), target=(135, 3))
    + _hlotext_buffers((1, [1, 2]), (2, [7] * 11)),
    # tuples nested 12 deep, two elements each, down to a leaf
    "deep": bytes([0, 2]) + _hlotext_instr(opcode=2, shape=b"\x00\x02" * 12 + b"\x05\x01\x07")
    + _hlotext_buffers((4, [1] * 11)),
    # a concatenate of 896 operands (operand_count(255))
    "operands": bytes([3, 0]) + _hlotext_instr() * 3 + _hlotext_instr(opcode=6, operands=(255, 0))
    + _hlotext_buffers((1, []), (1, []), (1, []), (1, [])),
}


# fuzz_viewer's log directory holds runs a/r1 and b/r2 (ids: the hex of those paths).
R1, R2 = b"a/r1".hex().encode(), b"b/r2".hex().encode()


def viewer_get(target: bytes) -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1:8791\r\n\r\n"


VIEWER = {
    "index": viewer_get(b"/"),
    "api": viewer_get(b"/api"),
    "runs": viewer_get(b"/api/runs"),
    "asset": viewer_get(b"/timeline.js"),
    **{f"section_{s.decode()}": viewer_get(b"/api/run/" + R1 + b"/" + s)
       for s in [b"overview", b"ops", b"steps", b"scopes", b"transfers", b"kernels", b"memory", b"compiles",
                 b"findings", b"lines", b"flame", b"hosts", b"roofline"]},
    "steps": viewer_get(b"/api/run/" + R1 + b"/overview?steps=1:2&host=h"),
    "memory_module": viewer_get(b"/api/run/" + R2 + b"/memory?module=jit_f"),
    "timeline": viewer_get(b"/api/run/" + R1 + b"/timeline?start_ms=0&end_ms=1&px=300&host=h"),
    "aggregate": viewer_get(b"/api/run/" + R1 + b"/timeline/aggregate?start_us=0&end_us=500&tracks=0,2-5"),
    "event": viewer_get(b"/api/run/" + R2 + b"/event?track=1&index=0"),
    "diff": viewer_get(b"/api/diff?base=" + R1 + b"&new=" + R2 + b"&host=h"),
    "diff_same": viewer_get(b"/api/diff?base=" + R2 + b"&new=" + R2),
    "unknown_run": viewer_get(b"/api/run/2e2e2f6574632f706173737764/overview"),
    "bad_id": viewer_get(b"/api/run/zz/overview"),
    "head": b"HEAD /api/run/" + R1 + b"/ops HTTP/1.1\r\nHost: localhost:8791\r\n\r\n",
}


def summary_seeds(spaces: dict[str, bytes]) -> dict[str, bytes]:
    """Host summaries (`jaxprof summarize` of each profile) and hostile edits of the CPU one: times at
    the reader's bounds, steps whose parts do not add up, another schema version."""
    jaxprof = Path(sys.executable).with_name("jaxprof")
    seeds = {}
    with tempfile.TemporaryDirectory(prefix="jaxprof-summary-") as tmp:
        for name, space in spaces.items():
            f = Path(tmp) / f"{name}.xplane.pb"
            f.write_bytes(space)
            out = Path(tmp) / f"{name}.json"
            subprocess.run([str(jaxprof), "summarize", str(f), "-o", str(out)], check=True, stdout=subprocess.DEVNULL)
            seeds[name] = out.read_bytes()
    doc = json.loads(seeds["cpu_small"])
    edge = json.loads(seeds["cpu_small"])
    for st in edge["steps"]:
        st["start_ps"], st["sync_ps"], st["host_start_ps"] = -(1 << 61), 1 << 61, 1 << 61
    edge["capture_start_ns"] = (1 << 63) - 1
    seeds["edge_times"] = json.dumps(edge).encode()
    bad_parts = json.loads(seeds["cpu_small"])
    bad_parts["steps"][0]["parts_ps"]["idle"] += 1
    seeds["bad_parts"] = json.dumps(bad_parts).encode()
    seeds["version2"] = json.dumps(dict(doc, jaxprof_host_summary=2)).encode()
    return seeds


def write(corpus: Path, seeds: dict[str, dict[str, bytes]]) -> None:
    for target, files in seeds.items():
        d = corpus / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (d / f"seed_{name}").write_bytes(data)
        print(f"{target}: {len(files)} seeds ({max(map(len, files.values()))} bytes at most)")


def main() -> None:
    corpus = HERE / "corpus"
    if sys.argv[1:2] == ["--realistic"]:
        if len(sys.argv) > 2:
            write(corpus, realistic_seeds(Path(sys.argv[2])))
        else:
            with tempfile.TemporaryDirectory(prefix="jaxprof-realistic-") as tmp:
                write(corpus, realistic_seeds(Path(tmp)))
        return
    fixture_gz = (ROOT / "tests" / "data" / "cpu_small.xplane.pb.gz").read_bytes()
    fixture = gzip.decompress(fixture_gz)
    spaces = {"cpu_small": fixture, "gpu": gpu_space().encode(), "tpu": tpu_space().encode()}
    seeds: dict[str, dict[str, bytes]] = {
        "xspace": dict(spaces, empty_plane=b"\x0a\x00"),
        "profile": dict(spaces),
        "gzip": {"cpu_small": fixture_gz, **{k: gzip.compress(v, mtime=0) for k, v in spaces.items() if k != "cpu_small"}},
        "hlo": {"synthetic": hlo_proto(HLO),
                **{f"cpu_small_{i}": p for i, p in enumerate(hlo_protos(fixture))}},
        "http": HTTP,
        "hlotext": HLOTEXT,
        "viewer": VIEWER,
        "summary": summary_seeds(spaces),
    }
    write(corpus, seeds)


if __name__ == "__main__":
    main()
