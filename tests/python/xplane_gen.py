"""A dependency-free writer of synthetic XSpace profiles (.xplane.pb), for known-answer tests.

It hand-encodes the protobuf wire format of tensorflow.profiler.XSpace (see
docs/profile-format.md in the shared docs) and a minimal xla.HloProto, so tests can describe a
GPU or TPU profile event by event and know every number the analysis should produce:

    space = XSpace(hostnames=["gpu-host"])
    gpu = space.plane("/device:GPU:0")
    stream = gpu.line("Stream #13(Compute)", id=13, timestamp_ns=100_000)
    stream.span("sm80_gemm", 300, 360, {"hlo_op": Ref("dot.1"), "kernel_details": KERNEL})
    space.write(tmp_path / "host.xplane.pb")

Times given to `span` are absolute microseconds since the session start; `event` takes the raw
wire fields (offset_ps relative to the line's timestamp, duration_ps).

Stat values: int -> int64, float -> double, str -> str, bytes -> bytes, bool -> int64 0/1; wrap a
value in Uint, Int, Double, Str, Bytes, Ref (the string is the *name* of an XStatMetadata, written
as its id: how XLA stores repeated strings such as kernel_details) or Compressed (gzip bytes) to
choose the encoding explicitly.
"""
from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

__all__ = [
    "US", "MS", "Uint", "Int", "Double", "Str", "Bytes", "Ref", "Compressed", "StatValue", "Stats",
    "XSpace", "Plane", "Line", "HloInstruction", "HloComputation", "HloModule", "hlo_proto",
    "big_xplane",
]

US = 1_000_000          # picoseconds per microsecond
MS = 1_000_000_000      # picoseconds per millisecond

# ---- wire format --------------------------------------------------------------------------------

VARINT, FIXED64, LEN = 0, 1, 2


def varint(n: int) -> bytes:
    """Base-128 varint; negative numbers as their 64-bit two's complement (proto int64)."""
    if n < 0:
        n += 1 << 64
    if not 0 <= n < 1 << 64:
        raise ValueError(f"{n} does not fit in 64 bits")
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def f_varint(number: int, value: int) -> bytes:
    return tag(number, VARINT) + varint(value)


def f_bytes(number: int, value: bytes) -> bytes:
    return tag(number, LEN) + varint(len(value)) + value


def f_str(number: int, value: str) -> bytes:
    return f_bytes(number, value.encode())


def f_double(number: int, value: float) -> bytes:
    return tag(number, FIXED64) + struct.pack("<d", value)


def f_packed(number: int, values: Iterable[int]) -> bytes:
    return f_bytes(number, b"".join(varint(v) for v in values))


def gzip_bytes(data: bytes) -> bytes:
    """Reproducible gzip (no timestamp)."""
    return gzip.compress(data, mtime=0)


# ---- stat values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Uint:
    value: int


@dataclass(frozen=True)
class Int:
    value: int


@dataclass(frozen=True)
class Double:
    value: float


@dataclass(frozen=True)
class Str:
    value: str


@dataclass(frozen=True)
class Bytes:
    value: bytes


@dataclass(frozen=True)
class Ref:
    """A string stored as ref_value: the id of an XStatMetadata whose name is the string."""

    value: str


@dataclass(frozen=True)
class Compressed:
    """A string stored as compressed_str_value: its gzip bytes."""

    value: str


StatValue = Union[int, float, str, bytes, Uint, Int, Double, Str, Bytes, Ref, Compressed]
Stats = Mapping[str, StatValue]

# XStat field numbers
STAT_META_ID, STAT_DOUBLE, STAT_UINT, STAT_INT, STAT_STR, STAT_BYTES, STAT_REF, STAT_COMPRESSED = range(1, 9)


# ---- the XSpace model -----------------------------------------------------------------------------


@dataclass
class _Event:
    metadata_id: int
    offset_ps: Optional[int]          # None for aggregated events
    duration_ps: int
    num_occurrences: int
    stats: bytes                      # encoded XStat fields (number 4)


@dataclass
class _EventMeta:
    id: int
    name: str
    display_name: str = ""
    metadata: bytes = b""
    stats: bytes = b""                # encoded XStat fields (number 5)


class Line:
    """One XLine: a host thread, a GPU stream, or a TPU line such as "XLA Ops"."""

    def __init__(self, plane: "Plane", name: str, id: int, timestamp_ns: int, display_name: str,
                 duration_ps: int) -> None:
        self.plane = plane
        self.name = name
        self.id = id
        self.timestamp_ns = timestamp_ns
        self.display_name = display_name
        self.duration_ps = duration_ps
        self.events: list[_Event] = []

    def event(self, name: str, offset_ps: int, duration_ps: int = 0, stats: Optional[Stats] = None) -> "Line":
        """An event at offset_ps after the line's timestamp; returns the line for chaining."""
        meta = self.plane.event_meta(name)
        self.events.append(_Event(meta, offset_ps, duration_ps, 0, self.plane.encode_stats(4, stats)))
        return self

    def span(self, name: str, start_us: float, end_us: float, stats: Optional[Stats] = None) -> "Line":
        """An event from start_us to end_us, absolute microseconds since the session start."""
        start_ps, end_ps = round(start_us * US), round(end_us * US)
        if end_ps < start_ps:
            raise ValueError(f"{name}: ends before it starts")
        return self.event(name, start_ps - self.timestamp_ns * 1000, end_ps - start_ps, stats)

    def instant(self, name: str, at_us: float, stats: Optional[Stats] = None) -> "Line":
        return self.span(name, at_us, at_us, stats)

    def aggregated(self, name: str, num_occurrences: int, duration_ps: int, stats: Optional[Stats] = None) -> "Line":
        """An aggregated event: num_occurrences instead of an offset (XEvent's oneof)."""
        meta = self.plane.event_meta(name)
        self.events.append(_Event(meta, None, duration_ps, num_occurrences, self.plane.encode_stats(4, stats)))
        return self

    def encode(self) -> bytes:
        out = bytearray(f_varint(1, self.id))
        out += f_str(2, self.name)
        out += f_varint(3, self.timestamp_ns)
        for ev in self.events:
            body = bytearray(f_varint(1, ev.metadata_id))
            if ev.offset_ps is not None:
                body += f_varint(2, ev.offset_ps)
            if ev.duration_ps:
                body += f_varint(3, ev.duration_ps)
            body += ev.stats
            if ev.offset_ps is None:
                body += f_varint(5, ev.num_occurrences)
            out += f_bytes(4, bytes(body))
        if self.duration_ps:
            out += f_varint(9, self.duration_ps)
        out += f_varint(10, self.id)
        if self.display_name:
            out += f_str(11, self.display_name)
        return bytes(out)


class Plane:
    """One XPlane with its metadata tables; ids are handed out on first use of a name."""

    def __init__(self, name: str, id: int) -> None:
        self.name = name
        self.id = id
        self.lines: list[Line] = []
        self._event_meta: dict[str, _EventMeta] = {}
        self._stat_ids: dict[str, int] = {}
        self._stats = b""

    def stat_id(self, name: str) -> int:
        """The id of the XStatMetadata called name, created on first use."""
        return self._stat_ids.setdefault(name, len(self._stat_ids) + 1)

    def encode_stats(self, number: int, stats: Optional[Stats]) -> bytes:
        """Repeated XStat fields numbered `number` (4 in XEvent, 5 in XEventMetadata, 6 in XPlane)."""
        out = bytearray()
        for key, value in (stats or {}).items():
            body = f_varint(STAT_META_ID, self.stat_id(key)) + self._stat_value(value)
            out += f_bytes(number, body)
        return bytes(out)

    def _stat_value(self, v: StatValue) -> bytes:
        if isinstance(v, bool):
            return f_varint(STAT_INT, int(v))
        if isinstance(v, (int, Int)):
            return f_varint(STAT_INT, v if isinstance(v, int) else v.value)
        if isinstance(v, Uint):
            if v.value < 0:
                raise ValueError("Uint needs a non-negative value")
            return f_varint(STAT_UINT, v.value)
        if isinstance(v, (float, Double)):
            return f_double(STAT_DOUBLE, v if isinstance(v, float) else v.value)
        if isinstance(v, (str, Str)):
            return f_str(STAT_STR, v if isinstance(v, str) else v.value)
        if isinstance(v, (bytes, Bytes)):
            return f_bytes(STAT_BYTES, v if isinstance(v, bytes) else v.value)
        if isinstance(v, Ref):
            return f_varint(STAT_REF, self.stat_id(v.value))
        if isinstance(v, Compressed):
            return f_bytes(STAT_COMPRESSED, gzip_bytes(v.value.encode()))
        raise TypeError(f"unsupported stat value {v!r}")

    def event_meta(self, name: str, *, stats: Optional[Stats] = None, metadata: bytes = b"",
                   display_name: str = "", id: Optional[int] = None) -> int:
        """The id of the XEventMetadata called name. Its stats apply to every such event; define
        them (or a chosen id) before the first event of that name uses it."""
        meta = self._event_meta.get(name)
        if meta is None:
            meta = _EventMeta(id if id is not None else len(self._event_meta) + 1, name)
            if any(m.id == meta.id for m in self._event_meta.values()):
                raise ValueError(f"event metadata id {meta.id} already used")
            self._event_meta[name] = meta
        elif id is not None and id != meta.id:
            raise ValueError(f"{name} already has id {meta.id}")
        if stats:
            meta.stats += self.encode_stats(5, stats)
        if metadata:
            meta.metadata = metadata
        if display_name:
            meta.display_name = display_name
        return meta.id

    def line(self, name: str, *, id: Optional[int] = None, timestamp_ns: int = 0, display_name: str = "",
             duration_ps: int = 0) -> Line:
        ln = Line(self, name, id if id is not None else len(self.lines) + 1, timestamp_ns, display_name, duration_ps)
        self.lines.append(ln)
        return ln

    def stats(self, stats: Stats) -> "Plane":
        """Plane-level stats (peak_teraflops_per_second, ...)."""
        self._stats += self.encode_stats(6, stats)
        return self

    def encode(self) -> bytes:
        # Events' stats were encoded when added, so every stat id is known by now. Fields go in
        # number order, as protobuf serializers write them: lines before the metadata naming them.
        out = bytearray(f_varint(1, self.id))
        out += f_str(2, self.name)
        for ln in self.lines:
            out += f_bytes(3, ln.encode())
        for meta in self._event_meta.values():
            body = bytearray(f_varint(1, meta.id))
            body += f_str(2, meta.name)
            if meta.metadata:
                body += f_bytes(3, meta.metadata)
            if meta.display_name:
                body += f_str(4, meta.display_name)
            body += meta.stats
            out += f_bytes(4, f_varint(1, meta.id) + f_bytes(2, bytes(body)))
        for name, sid in self._stat_ids.items():
            out += f_bytes(5, f_varint(1, sid) + f_bytes(2, f_varint(1, sid) + f_str(2, name)))
        out += self._stats
        return bytes(out)


class XSpace:
    """A whole profile: planes in order, plus the hostnames list."""

    def __init__(self, hostnames: Iterable[str] = ()) -> None:
        self.planes: list[Plane] = []
        self.hostnames = list(hostnames)

    def plane(self, name: str, id: Optional[int] = None) -> Plane:
        """The plane called name, created on first use."""
        for p in self.planes:
            if p.name == name:
                return p
        p = Plane(name, id if id is not None else len(self.planes) + 1)
        self.planes.append(p)
        return p

    def hlo_module(self, program_id: int, module: "HloModule") -> "XSpace":
        """Records a compiled module on /host:metadata the way XLA does: an event metadata named
        after the module, id = program_id, with a bytes stat `Hlo Proto` and int `program_id`."""
        meta = self.plane("/host:metadata")
        meta.event_meta(module.name, id=program_id,
                        stats={"Hlo Proto": Bytes(hlo_proto(module)), "program_id": Int(program_id)})
        return self

    def encode(self) -> bytes:
        out = bytearray()
        for p in self.planes:
            out += f_bytes(1, p.encode())
        for h in self.hostnames:
            out += f_str(4, h)
        return bytes(out)

    def write(self, path: Path, *, gz: Optional[bool] = None) -> Path:
        """Writes the profile; gzip-compressed when gz is True or the name ends in .gz."""
        data = self.encode()
        if gz if gz is not None else str(path).endswith(".gz"):
            data = gzip_bytes(data)
        Path(path).write_bytes(data)
        return Path(path)


# ---- xla.HloProto (the fields jaxprof reads) -----------------------------------------------------------


@dataclass
class HloInstruction:
    name: str
    opcode: str
    op_name: str = ""                 # OpMetadata.op_name: "jit(f)/jvp(loss)/dot_general"
    source_file: str = ""
    source_line: int = 0
    fusion_kind: str = ""             # "kLoop", "kInput", "kOutput", "kCustom" for fusions
    called_computation_ids: tuple[int, ...] = ()


@dataclass
class HloComputation:
    name: str
    id: int
    instructions: list[HloInstruction] = field(default_factory=list)


@dataclass
class HloModule:
    name: str
    computations: list[HloComputation] = field(default_factory=list)


def _instruction(ins: HloInstruction) -> bytes:
    out = bytearray(f_str(1, ins.name) + f_str(2, ins.opcode))
    if ins.op_name or ins.source_file:
        meta = bytearray()
        if ins.op_name:
            meta += f_str(2, ins.op_name)
        if ins.source_file:
            meta += f_str(3, ins.source_file) + f_varint(4, ins.source_line)
        out += f_bytes(7, bytes(meta))
    if ins.fusion_kind:
        out += f_str(11, ins.fusion_kind)
    if ins.called_computation_ids:
        out += f_packed(38, ins.called_computation_ids)
    return bytes(out)


def hlo_proto(module: HloModule) -> bytes:
    """Serialized HloProto{hlo_module=1: HloModuleProto{name=1, computations=3}}, each
    HloComputationProto{name=1, instructions=2, id=5}."""
    body = bytearray(f_str(1, module.name))
    for comp in module.computations:
        c = bytearray(f_str(1, comp.name))
        for ins in comp.instructions:
            c += f_bytes(2, _instruction(ins))
        c += f_varint(5, comp.id)
        body += f_bytes(3, bytes(c))
    return f_bytes(1, bytes(body))


# ---- big profiles, encoded in bulk (the export and viewer benchmarks, JAX's 5M-event cap) ----------

def big_xplane(path: Path, n_events: int, n_lines: int) -> None:
    """An XSpace with n_events 1 us slices spread over n_lines lines of one plane, encoded with numpy:
    each XEvent has the same 16-byte layout (offset_ps as a fixed-width 7-byte varint)."""
    import numpy as np  # only this generator needs numpy

    per_line = -(-n_events // n_lines)
    lines = []
    for li in range(n_lines):
        n = min(per_line, n_events - li * per_line)
        off = np.arange(n, dtype=np.uint64) * np.uint64(2_000_000)  # every 2 us
        ev = np.zeros((n, 16), dtype=np.uint8)
        ev[:, 0], ev[:, 1], ev[:, 2] = 0x22, 14, 0x08     # events=4 LEN 14; metadata_id=1
        ev[:, 3], ev[:, 4] = 1, 0x10                         # metadata id 1; offset_ps=2
        for b in range(7):
            byte = (off >> np.uint64(7 * b)) & np.uint64(0x7F)
            ev[:, 5 + b] = byte | (0x80 if b < 6 else 0)
        ev[:, 12] = 0x18                                     # duration_ps=3: 1_000_000 as 3 bytes
        ev[:, 13:16] = [0xC0, 0x84, 0x3D]
        body = bytes([0x08]) + varint(li + 1) + bytes([0x12]) + varint(6) + b"line%02d" % li + ev.tobytes()
        lines.append(bytes([0x1A]) + varint(len(body)) + body)     # plane.lines = 3
    meta = bytes([0x08, 1, 0x12, 4]) + b"tick"                      # XEventMetadata id 1 "tick"
    entry = bytes([0x08, 1, 0x12]) + varint(len(meta)) + meta      # map entry key 1
    plane_body = bytes([0x08, 1, 0x12, 10]) + b"/synthetic" + b"".join(lines) + \
        bytes([0x22]) + varint(len(entry)) + entry                 # event_metadata = 4
    with open(path, "wb") as f:
        f.write(bytes([0x0A]) + varint(len(plane_body)))           # XSpace.planes = 1
        f.write(plane_body)
