"""Writes the seed corpora of the fuzz targets (run from anywhere; the committed corpus/ came from
it, then `libFuzzer -merge=1` kept the inputs that add coverage):

    .venv/bin/python tests/fuzz/make_corpus.py

Seeds: the committed fixture tests/data/cpu_small.xplane.pb.gz (gunzipped for xspace and profile,
as-is for gzip, its HloProtos for hlo), small synthetic GPU and TPU profiles from
tests/python/xplane_gen.py, and HTTP request heads (good, traversal, huge, garbage).
"""
from __future__ import annotations

import gzip
import sys
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


def main() -> None:
    corpus = HERE / "corpus"
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
    }
    for target, files in seeds.items():
        d = corpus / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (d / f"seed_{name}").write_bytes(data)
        print(f"{target}: {len(files)} seeds")


if __name__ == "__main__":
    main()
