"""The truth for per-program costs, independent of jaxprof: each compiled program's HLO as XLA's own
parser prints it (``XlaComputation(hlo_module).as_hlo_text()`` on the HloProtos an xplane's
``/host:metadata`` plane holds), the FLOPs and bytes of its ops counted here from those shapes, and
each (program, op)'s executions timed from the raw events with ``jax.profiler.ProfileData``.

The counting follows XLA's HloCostAnalysis: a dot or GEMM does 2 x output elements x contracted
size FLOPs, a convolution 2 x batch x output features x input features per group x the (output,
kernel) position pairs that read the input rather than padding, a fusion the sum of what it fuses;
bytes are the operands and the output at the op's boundary (a library call's first result). Only what the tests compare is
counted: dots, GEMMs, convolutions (plain or library custom-calls), elementwise arithmetic, reduces.
"""
from __future__ import annotations

import collections
import gzip
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from jax._src.lib import xla_client

DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
               "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3fnuz": 1,
               "f8e5m2fnuz": 1, "s4": 1, "u4": 1, "token": 0}
ELEMENTWISE = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "abs", "negate", "compare", "select",
               "clamp", "convert", "and", "or", "xor", "not", "floor", "ceil", "sign", "remainder"}


# ---- protobuf wire format (just enough for XSpace -> XPlane -> XEventMetadata -> XStat) --------------

def _varint(b: bytes, i: int) -> tuple[int, int]:
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def _fields(b: bytes) -> Iterator[tuple[int, int, Any]]:
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


@dataclass
class Program:
    module: str            # "jit_dot"
    program_id: int | None
    text: str              # XLA's own HLO text
    instrs: dict[str, "Instr"] = field(default_factory=dict)   # every computation's instructions by name
    entry: list[str] = field(default_factory=list)              # the entry computation's instructions


def _metadata_text(module_proto: bytes) -> str:
    """The module as XLA prints it with each instruction's metadata={op_name=...}."""
    from jax._src.lib import hlo

    opts = hlo.HloPrintOptions()
    opts.print_metadata = True
    return hlo.HloModule.from_serialized_hlo_module_proto(module_proto).to_string(opts)


def programs(path: str | Path, metadata: bool = False) -> list[Program]:
    """Every HloProto in the xplane's /host:metadata plane, printed by XLA's parser (metadata=True:
    with each instruction's metadata, op_name included)."""
    raw = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    out = []
    for num, _, plane in _fields(raw):
        if num != 1:
            continue
        fs = list(_fields(plane))
        if not any(n == 2 and v == b"/host:metadata" for n, _, v in fs):
            continue
        stat_names = {}
        for n, _, entry in fs:  # stat_metadata map<int64, XStatMetadata>
            if n == 5:
                for k, _, v in _fields(entry):
                    if k == 2:
                        md = {kk: vv for kk, _, vv in _fields(v)}
                        stat_names[md.get(1, 0)] = md.get(2, b"").decode()
        for n, _, entry in fs:  # event_metadata map<int64, XEventMetadata>
            if n != 4:
                continue
            for k, _, em in _fields(entry):
                if k != 2:
                    continue
                name, proto, pid = "", None, None
                for kk, _, vv in _fields(em):
                    if kk == 2:
                        name = vv.decode()
                    elif kk == 5:
                        st = {a: b for a, _, b in _fields(vv)}
                        sname = stat_names.get(st.get(1, 0), "")
                        if sname == "Hlo Proto":
                            proto = st.get(6)
                        elif sname == "program_id":
                            pid = st.get(4, st.get(3))
                if proto is None:
                    continue
                module_proto = next(v for a, _, v in _fields(proto) if a == 1)
                text = _metadata_text(module_proto) if metadata else xla_client.XlaComputation(module_proto).as_hlo_text()
                m = re.match(r"(.*)\((\d+)\)$", name)
                if pid is None and m:
                    pid = int(m.group(2))
                out.append(_parse(Program(name.split("(")[0], pid, text)))
    return out


# ---- HLO text -----------------------------------------------------------------------------------

@dataclass
class Instr:
    name: str
    shapes: list[tuple[str, list[int]]]   # the result's arrays (a tuple: several)
    opcode: str
    operands: list[str]
    attrs: str
    calls: str | None


SHAPE = re.compile(r"([a-z]+[0-9a-z]*)\[([0-9,]*)\]")
LINE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+([a-z][a-z0-9\-]*)\((.*)$")


def _shapes(s: str) -> list[tuple[str, list[int]]]:
    return [(d, [int(x) for x in dims.split(",") if x]) for d, dims in SHAPE.findall(s) if d in DTYPE_BYTES]


def _top_level_split(s: str) -> list[str]:
    """Splits an operand list at the commas outside brackets ("f32[2,3]{1,0} %x, %y")."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def _parse(p: Program) -> Program:
    comp, in_entry = None, False
    for line in p.text.splitlines():
        if line.rstrip().endswith("{") and "=" not in line.split("(")[0]:
            in_entry = line.startswith("ENTRY")
            comp = line
            continue
        m = LINE.match(line)
        if not m or comp is None:
            continue
        name, shape, opcode, rest = m.groups()
        depth, i = 1, 0
        while i < len(rest) and depth:
            depth += {"(": 1, ")": -1}.get(rest[i], 0)
            i += 1
        ops, attrs = rest[: i - 1], rest[i:]
        operands = [o.split()[-1].lstrip("%") for o in _top_level_split(ops) if o.strip()]
        calls = re.search(r"calls=%?([\w.\-]+)", attrs)
        p.instrs[name] = Instr(name, _shapes(shape), opcode, operands, attrs, calls.group(1) if calls else None)
        if in_entry:
            p.entry.append(name)
    # computations by name -> their instructions, for fusions; and each one's root
    p.computations = {}  # type: ignore[attr-defined]
    p.roots = {}  # type: ignore[attr-defined]
    comp_name = None
    for line in p.text.splitlines():
        head = re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if head and "=" not in line.split("(")[0]:
            comp_name = head.group(1)
            p.computations[comp_name] = []  # type: ignore[attr-defined]
            continue
        m = LINE.match(line)
        if m and comp_name:
            p.computations[comp_name].append(m.group(1))  # type: ignore[attr-defined]
            if line.lstrip().startswith("ROOT"):
                p.roots[comp_name] = m.group(1)  # type: ignore[attr-defined]
    return p


def _elems(dims: list[int]) -> int:
    return math.prod(dims) if dims else 1


def _nbytes(shapes: list[tuple[str, list[int]]]) -> int:
    return sum(DTYPE_BYTES[d] * _elems(dims) for d, dims in shapes)


def _dims_list(attrs: str, key: str) -> list[int]:
    m = re.search(key + r"=\{([0-9,]*)\}", attrs)
    return [int(x) for x in m.group(1).split(",") if x] if m else []


def _window(attrs: str) -> list[dict[str, int]]:
    """window={size=1x2x2 stride=1x2x2 pad=1_1x1_1x1_1 lhs_dilate=.. rhs_dilate=..} per spatial dim."""
    m = re.search(r"window=\{([^}]*)\}", attrs)
    if not m:
        return []
    parts = dict(kv.split("=") for kv in m.group(1).split())
    n = len(parts["size"].split("x"))
    def ints(key: str, default: int) -> list[int]:
        return [int(x) for x in parts[key].split("x")] if key in parts else [default] * n
    pads = [tuple(int(v) for v in p.split("_")) for p in parts["pad"].split("x")] if "pad" in parts else [(0, 0)] * n
    return [{"size": sz, "stride": st, "pad_lo": pl[0], "lhs_dilate": ld, "rhs_dilate": rd}
            for sz, st, pl, ld, rd in zip(ints("size", 1), ints("stride", 1), pads, ints("lhs_dilate", 1),
                                          ints("rhs_dilate", 1))]


def _valid(w: dict[str, int], in_size: int, kernel: int, out: int) -> int:
    """(output, kernel) position pairs of one spatial dimension that read the input, not padding."""
    n = 0
    for o in range(out):
        for k in range(kernel):
            u = o * w["stride"] - w["pad_lo"] + k * w["rhs_dilate"]
            if u % w["lhs_dilate"] == 0 and 0 <= u // w["lhs_dilate"] < in_size:
                n += 1
    return n


def conv_flops(p: Program, name: str, padded: bool = False) -> float:
    """2 x batch x output features x input features per group x, per spatial dimension, the
    (output, kernel) pairs that read the input (padded=True: every pair, padding included)."""
    ins = p.instrs[name]
    labels = re.search(r"dim_labels=([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)", ins.attrs)
    if not labels or len(ins.operands) < 2:
        return 0.0
    lhs_l, rhs_l, out_l = labels.groups()
    lhs = p.instrs[ins.operands[0]].shapes[0][1]
    rhs = p.instrs[ins.operands[1]].shapes[0][1]
    out = ins.shapes[0][1]
    fma = out[out_l.index("b")] * out[out_l.index("f")] * rhs[rhs_l.index("i")]
    for w, d in zip(_window(ins.attrs), sorted(c for c in out_l if c.isdigit())):
        kernel, o = rhs[rhs_l.index(d)], out[out_l.index(d)]
        fma *= kernel * o if padded else _valid(w, lhs[lhs_l.index(d)], kernel, o)
    return 2.0 * fma


def flops(p: Program, name: str) -> float:
    """One execution's FLOPs of instruction `name` (a fusion: what it fuses)."""
    ins = p.instrs[name]
    op = ins.opcode
    if op == "dot":
        lhs = p.instrs[ins.operands[0]].shapes[0][1]
        k = math.prod(lhs[d] for d in _dims_list(ins.attrs, "lhs_contracting_dims"))
        return 2.0 * _elems(ins.shapes[0][1]) * k
    if op == "convolution":
        return conv_flops(p, name)
    if op == "custom-call":
        target = re.search(r'custom_call_target="([^"]+)"', ins.attrs)
        t = target.group(1) if target else ""
        if "$conv" in t:
            return conv_flops(p, name)
        if "gemm" in t.lower() or "matmul" in t.lower():
            lhs = p.instrs[ins.operands[0]].shapes[0][1]
            m = re.search(r'"lhs_contracting_dimensions":\[([^\]]*)\]', ins.attrs)
            dims = [int(x.strip('"')) for x in m.group(1).split(",") if x] if m else []
            return 2.0 * _elems(ins.shapes[0][1]) * math.prod(lhs[d] for d in dims)
        return 0.0
    if op == "reduce":  # the reducer once per element folded in: inputs minus outputs
        reducer = re.search(r"to_apply=%?([\w.\-]+)", ins.attrs)
        per_call = sum(flops(p, n) for n in p.computations.get(reducer.group(1), [])) if reducer else 0  # type: ignore[attr-defined]
        inputs = len(ins.operands) // 2 or 1
        folded = _elems(p.instrs[ins.operands[0]].shapes[0][1]) - sum(_elems(d) for _, d in ins.shapes) / inputs
        return folded * per_call
    if op == "reduce-window":  # the reducer (window - 1) times per output element
        reducer = re.search(r"to_apply=%?([\w.\-]+)", ins.attrs)
        per_call = sum(flops(p, n) for n in p.computations.get(reducer.group(1), [])) if reducer else 0  # type: ignore[attr-defined]
        window = math.prod(w["size"] for w in _window(ins.attrs))
        return _elems(ins.shapes[0][1]) * (window - 1) * per_call
    if op == "fusion" and ins.calls:
        return sum(flops(p, n) for n in p.computations.get(ins.calls, []))  # type: ignore[attr-defined]
    if op in ELEMENTWISE:
        return float(_elems(ins.shapes[0][1]))
    return 0.0


def _fusion_bytes(p: Program, ins: Instr) -> float:
    """XLA's HloCostAnalysis for a fusion (hlo_cost_analysis.cc, FusionParameterReadBytes and
    FusionProcessOutputBytesAccessed): each fused parameter is read as its users inside take it (a
    slice or a dynamic slice of it: the part; a dynamic-update-slice of it: nothing, it is the
    output in place; a broadcast or reshape: whole, each; any other users: one shared whole read);
    an output made by a dynamic-update-slice writes the update only."""
    body = [p.instrs[n] for n in p.computations.get(ins.calls, []) if n in p.instrs]  # type: ignore[attr-defined]
    root = p.instrs.get(p.roots.get(ins.calls, ""))  # type: ignore[attr-defined]

    def written(x: Instr) -> int:
        if x.opcode == "dynamic-update-slice":
            return _nbytes(p.instrs[x.operands[1]].shapes)
        return _nbytes(x.shapes)

    out = sum(written(p.instrs[o]) for o in root.operands) if root and root.opcode == "tuple" else (
        written(root) if root else _nbytes(ins.shapes))
    read = 0
    for param in (x for x in body if x.opcode == "parameter"):
        shared = False
        for user in body:
            for k, o in enumerate(user.operands):
                if o != param.name:
                    continue
                if user.opcode == "slice" or (user.opcode == "dynamic-slice" and k == 0):
                    read += _nbytes(user.shapes)
                elif user.opcode == "dynamic-update-slice" and k == 0:
                    pass
                elif user.opcode in ("broadcast", "reshape"):
                    read += _nbytes(param.shapes)
                elif not shared:
                    shared = True
                    read += _nbytes(param.shapes)
    return float(out + read)


def nbytes(p: Program, name: str) -> float:
    """Operands read plus the output written (a library GEMM's or convolution's output tuple: its
    first array, the rest is the library's workspace); a fusion by XLA's rule (_fusion_bytes)."""
    ins = p.instrs[name]
    target = re.search(r'custom_call_target="([^"]+)"', ins.attrs)
    library = ins.opcode == "custom-call" and target and any(k in target.group(1) for k in ("gemm", "matmul", "$conv"))
    if ins.opcode == "fusion" and ins.calls in p.computations and not library:  # type: ignore[attr-defined]
        return _fusion_bytes(p, ins)
    out = ins.shapes[:1] if library else ins.shapes
    return float(_nbytes(out) + sum(_nbytes(p.instrs[o].shapes) for o in ins.operands if o in p.instrs))


def op_events(path: str | Path) -> dict[tuple[str, int | None, str], list[tuple[str, float]]]:
    """(module, program_id, hlo_op) -> (event name, duration in us) of every op event that names its
    HLO op (GPU kernels, TPU and XLA:CPU ops), read with jax.profiler.ProfileData."""
    import jax

    raw = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    by_plane: dict[bool, dict[tuple[str, int | None, str], list[tuple[str, float]]]] = {
        True: collections.defaultdict(list), False: collections.defaultdict(list)}
    for plane in jax.profiler.ProfileData.from_serialized_xspace(raw).planes:
        out = by_plane[plane.name.startswith("/device:")]
        for line in plane.lines:
            for ev in line.events:
                st = dict(ev.stats)
                if "hlo_op" in st and "hlo_module" in st and not ev.name.startswith("end:"):
                    out[(st["hlo_module"], st.get("program_id"), st["hlo_op"])].append((ev.name, ev.duration_ns / 1e3))
    # a GPU's host threads name the op they launch too: the device's events are the op's runs;
    # XLA:CPU has no device plane, its ops run on host threads
    return dict(by_plane[True] or by_plane[False])


def executions(events: list[tuple[str, float]]) -> int:
    """How often an op ran: the launches of its most launched kernel (a library convolution runs an
    Im2Col kernel and a GEMM per execution)."""
    return max(collections.Counter(name for name, _ in events).values())
