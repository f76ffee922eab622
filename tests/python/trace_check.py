"""Independent checkers for exported timelines, written from the formats' specifications alone.

Chrome trace event JSON (the "Trace Event Format" document) and Perfetto's ``TracePacket`` /
``TrackEvent`` protobuf (perfetto/protos/perfetto/trace/) are read here without any code shared
with jaxprof's exporter, so these functions are an oracle for it: decoding errors raise
``ValueError`` naming the byte offset, broken invariants raise ``AssertionError`` naming the events.
"""
from __future__ import annotations

import gzip
import json
import struct
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

__all__ = ["load_chrome_trace", "check_chrome_nesting", "decode_perfetto", "check_perfetto"]

GZIP_MAGIC = b"\x1f\x8b"

# TrackEvent.Type
SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
# TracePacket.SequenceFlags
SEQ_INCREMENTAL_STATE_CLEARED = 1

# Protobuf wire types.
WT_VARINT, WT_I64, WT_LEN, WT_SGROUP, WT_EGROUP, WT_I32 = 0, 1, 2, 3, 4, 5


def _read_bytes(path: str | Path) -> bytes:
    data = Path(path).read_bytes()
    return gzip.decompress(data) if data[:2] == GZIP_MAGIC else data


# ---- Chrome trace event JSON ------------------------------------------------------------------


def load_chrome_trace(path: str | Path) -> dict[str, Any]:
    """Reads a Chrome trace (gzip detected by its magic bytes). The JSON Array Format (a bare list
    of events) is returned as ``{"traceEvents": [...]}`` so callers see one shape."""
    doc = json.loads(_read_bytes(path))
    if isinstance(doc, list):
        return {"traceEvents": doc}
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: a Chrome trace is a JSON object or array, got {type(doc).__name__}")
    return doc


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _describe(ev: dict[str, Any]) -> str:
    return f"{ev.get('name')!r} (ts={ev.get('ts')}, dur={ev.get('dur')}, pid={ev.get('pid')}, tid={ev.get('tid')})"


def check_chrome_nesting(events: list[dict[str, Any]] | dict[str, Any]) -> None:
    """Asserts that complete events (``"ph": "X"``) nest strictly on each (pid, tid).

    Times are compared as integer nanoseconds (``round(ts * 1000)``) so that microsecond floats
    such as 1.1 + 0.2 do not make a child seem to outlive its parent. Sorted by (start, -dur), each
    event must either start at or after the enclosing event's end (which then closes) or end at or
    before it; a partial overlap raises AssertionError naming both events.
    """
    if isinstance(events, dict):
        events = events["traceEvents"]
    rows: dict[tuple[Any, Any], list[tuple[int, int, int, dict[str, Any]]]] = defaultdict(list)
    for i, ev in enumerate(events):
        if ev.get("ph") != "X":
            continue
        ts, dur = ev.get("ts"), ev.get("dur")
        assert _is_number(ts) and _is_number(dur), f"complete event #{i} {_describe(ev)} needs numeric ts and dur"
        start, length = round(ts * 1000), round(dur * 1000)
        assert length >= 0, f"complete event #{i} {_describe(ev)} has a negative duration"
        rows[(ev.get("pid"), ev.get("tid"))].append((start, start + length, i, ev))
    for row in rows.values():
        row.sort(key=lambda r: (r[0], -(r[1] - r[0]), r[2]))
        stack: list[tuple[int, int, int, dict[str, Any]]] = []
        for item in row:
            start, end, _, ev = item
            while stack and start >= stack[-1][1]:
                stack.pop()
            if stack and end > stack[-1][1]:
                top = stack[-1][3]
                raise AssertionError(f"partial overlap: {_describe(ev)} starts inside {_describe(top)} but ends after it")
            stack.append(item)


# ---- protobuf wire format ---------------------------------------------------------------------


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Reads a base-128 varint at pos; returns (value, next position)."""
    start, value, shift = pos, 0, 0
    while True:
        if pos >= end:
            raise ValueError(f"truncated varint at byte {start}")
        b = buf[pos]
        pos += 1
        if shift == 63 and b > 1:
            raise ValueError(f"varint longer than 64 bits at byte {start}")
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError(f"varint longer than 10 bytes at byte {start}")


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, Any, int]]:
    """Yields (field number, wire type, value, offset of the key) for one message in buf[pos:end].

    Varints and fixed-width values come as ints; length-delimited ones as (start, end) of their
    payload; groups (deprecated) are skipped whole.
    """
    while pos < end:
        key_at = pos
        key, pos = _varint(buf, pos, end)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise ValueError(f"field number 0 at byte {key_at}")
        if wt == WT_VARINT:
            value, pos = _varint(buf, pos, end)
        elif wt == WT_I64:
            if pos + 8 > end:
                raise ValueError(f"truncated 64-bit field {field} at byte {key_at}")
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wt == WT_I32:
            if pos + 4 > end:
                raise ValueError(f"truncated 32-bit field {field} at byte {key_at}")
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        elif wt == WT_LEN:
            length, pos = _varint(buf, pos, end)
            if length > end - pos:
                raise ValueError(f"length {length} of field {field} at byte {key_at} runs past the end ({end})")
            value, pos = (pos, pos + length), pos + length
        elif wt == WT_SGROUP:
            pos = _skip_group(buf, pos, end, field, key_at)
            continue
        else:
            raise ValueError(f"bad wire type {wt} for field {field} at byte {key_at}")
        yield field, wt, value, key_at


def _skip_group(buf: bytes, pos: int, end: int, field: int, key_at: int) -> int:
    """Skips to just past the end-group key matching `field` (nested groups included)."""
    depth = 1
    while pos < end:
        key, pos = _varint(buf, pos, end)
        f, wt = key >> 3, key & 7
        if wt == WT_EGROUP:
            depth -= 1
            if depth == 0:
                if f != field:
                    raise ValueError(f"group {field} at byte {key_at} ends with field {f}")
                return pos
        elif wt == WT_SGROUP:
            depth += 1
        elif wt == WT_VARINT:
            _, pos = _varint(buf, pos, end)
        elif wt in (WT_I64, WT_I32):
            pos += 8 if wt == WT_I64 else 4
        elif wt == WT_LEN:
            length, pos = _varint(buf, pos, end)
            pos += length
        else:
            raise ValueError(f"bad wire type {wt} inside group {field} at byte {key_at}")
    raise ValueError(f"unterminated group {field} at byte {key_at}")


def _string(buf: bytes, span: tuple[int, int], at: int) -> str:
    try:
        return buf[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"string field at byte {at} is not UTF-8: {exc}") from None


def _expect(wt: int, want: int, field: int, at: int) -> None:
    if wt != want:
        raise ValueError(f"field {field} at byte {at} has wire type {wt}, expected {want}")


def _fixed64s(buf: bytes, wt: int, value: Any, field: int, at: int) -> list[int]:
    """A repeated fixed64 element: one value, or a packed run of them."""
    if wt == WT_I64:
        return [value]
    _expect(wt, WT_LEN, field, at)
    start, stop = value
    if (stop - start) % 8:
        raise ValueError(f"packed fixed64 field {field} at byte {at} has {stop - start} bytes, not a multiple of 8")
    return [int.from_bytes(buf[i:i + 8], "little") for i in range(start, stop, 8)]


def _varints(buf: bytes, wt: int, value: Any, field: int, at: int) -> list[int]:
    """A repeated varint element: one value, or a packed run of them."""
    if wt == WT_VARINT:
        return [value]
    _expect(wt, WT_LEN, field, at)
    out, pos = [], value[0]
    while pos < value[1]:
        v, pos = _varint(buf, pos, value[1])
        out.append(v)
    return out


# ---- Perfetto messages ------------------------------------------------------------------------


def _interned_entries(buf: bytes, span: tuple[int, int]) -> tuple[int, str]:
    """EventName / DebugAnnotationName: {iid = 1, name = 2}."""
    iid, name = 0, ""
    for f, wt, v, at in _fields(buf, *span):
        if f == 1:
            _expect(wt, WT_VARINT, f, at)
            iid = v
        elif f == 2:
            _expect(wt, WT_LEN, f, at)
            name = _string(buf, v, at)
    return iid, name


def _interned_data(buf: bytes, span: tuple[int, int], tables: dict[str, dict[int, str]]) -> None:
    """InternedData {event_names = 2, debug_annotation_names = 3} merged into the sequence's tables."""
    for f, wt, v, at in _fields(buf, *span):
        if f in (2, 3):
            _expect(wt, WT_LEN, f, at)
            iid, name = _interned_entries(buf, v)
            tables["event_names" if f == 2 else "debug_annotation_names"][iid] = name


def _process(buf: bytes, span: tuple[int, int], out: dict[str, Any]) -> None:
    """ProcessDescriptor {pid = 1, process_name = 6}."""
    for f, wt, v, at in _fields(buf, *span):
        if f == 1:
            _expect(wt, WT_VARINT, f, at)
            out["pid"] = _signed64(v)
        elif f == 6:
            _expect(wt, WT_LEN, f, at)
            out["process_name"] = _string(buf, v, at)


def _thread(buf: bytes, span: tuple[int, int], out: dict[str, Any]) -> None:
    """ThreadDescriptor {pid = 1, tid = 2, thread_name = 5}."""
    for f, wt, v, at in _fields(buf, *span):
        if f in (1, 2):
            _expect(wt, WT_VARINT, f, at)
            out["pid" if f == 1 else "tid"] = _signed64(v)
        elif f == 5:
            _expect(wt, WT_LEN, f, at)
            out["thread_name"] = _string(buf, v, at)


def _track_descriptor(buf: bytes, span: tuple[int, int]) -> dict[str, Any]:
    """TrackDescriptor {uuid = 1, name = 2, process = 3, thread = 4, parent_uuid = 5, static_name = 10}."""
    out: dict[str, Any] = dict.fromkeys(
        ("uuid", "name", "parent_uuid", "pid", "tid", "process_name", "thread_name"))
    for f, wt, v, at in _fields(buf, *span):
        if f in (1, 5):
            _expect(wt, WT_VARINT, f, at)
            out["uuid" if f == 1 else "parent_uuid"] = v
        elif f in (2, 10):  # name and static_name are a oneof
            _expect(wt, WT_LEN, f, at)
            out["name"] = _string(buf, v, at)
        elif f == 3:
            _expect(wt, WT_LEN, f, at)
            _process(buf, v, out)
        elif f == 4:
            _expect(wt, WT_LEN, f, at)
            _thread(buf, v, out)
    return out


def _lookup(tables: dict[str, dict[int, str]], table: str, iid: int, at: int) -> str:
    if iid not in tables[table]:
        raise ValueError(f"interned {table} iid {iid} used at byte {at} was never defined on this sequence")
    return tables[table][iid]


def _debug_annotation(buf: bytes, span: tuple[int, int], tables: dict[str, dict[int, str]], at0: int
                      ) -> tuple[str, Any]:
    """DebugAnnotation {name_iid = 1, bool = 2, uint = 3, int = 4, double = 5, string = 6, name = 10}."""
    name: str | None = None
    value: Any = None
    for f, wt, v, at in _fields(buf, *span):
        if f == 1:
            _expect(wt, WT_VARINT, f, at)
            name = _lookup(tables, "debug_annotation_names", v, at)
        elif f == 10:
            _expect(wt, WT_LEN, f, at)
            name = _string(buf, v, at)
        elif f == 2:
            _expect(wt, WT_VARINT, f, at)
            value = bool(v)
        elif f == 3:
            _expect(wt, WT_VARINT, f, at)
            value = v
        elif f == 4:
            _expect(wt, WT_VARINT, f, at)
            value = _signed64(v)
        elif f == 5:
            _expect(wt, WT_I64, f, at)
            value = struct.unpack("<d", v.to_bytes(8, "little"))[0]
        elif f == 6:
            _expect(wt, WT_LEN, f, at)
            value = _string(buf, v, at)
    if name is None:
        raise ValueError(f"debug annotation at byte {at0} has no name")
    return name, value


def _track_event(buf: bytes, span: tuple[int, int], tables: dict[str, dict[int, str]]) -> dict[str, Any]:
    """TrackEvent, with its interned name and argument names resolved."""
    out: dict[str, Any] = {"type": 0, "track_uuid": None, "name": None, "args": {}, "flow_ids": [],
                           "terminating_flow_ids": []}
    for f, wt, v, at in _fields(buf, *span):
        if f in (9, 11):
            _expect(wt, WT_VARINT, f, at)
            out["type" if f == 9 else "track_uuid"] = v
        elif f == 10:
            _expect(wt, WT_VARINT, f, at)
            out["name"] = _lookup(tables, "event_names", v, at)
        elif f == 23:
            _expect(wt, WT_LEN, f, at)
            out["name"] = _string(buf, v, at)
        elif f == 4:
            _expect(wt, WT_LEN, f, at)
            key, value = _debug_annotation(buf, v, tables, at)
            out["args"][key] = value
        elif f in (47, 48):
            out["flow_ids" if f == 47 else "terminating_flow_ids"] += _fixed64s(buf, wt, v, f, at)
        elif f == 3:
            _varints(buf, wt, v, f, at)  # category_iids: validated, not resolved (no table asked for)
        elif f == 22:
            _expect(wt, WT_LEN, f, at)
    return out


def _packet(buf: bytes, span: tuple[int, int], sequences: dict[int, dict[str, dict[int, str]]]
            ) -> dict[str, Any] | None:
    """One TracePacket. Interned data and the cleared flag apply before this packet's event."""
    out: dict[str, Any] = {"timestamp": None, "sequence_id": None}
    flags, interned, event, descriptor = 0, [], None, None
    for f, wt, v, at in _fields(buf, *span):
        if f in (8, 10, 13):
            _expect(wt, WT_VARINT, f, at)
            if f == 8:
                out["timestamp"] = v
            elif f == 10:
                out["sequence_id"] = v
            else:
                flags = v
        elif f in (11, 12, 60):
            _expect(wt, WT_LEN, f, at)
            if f == 11:
                event = v
            elif f == 12:
                interned.append(v)
            else:
                descriptor = v
    seq = out["sequence_id"] or 0
    if flags & SEQ_INCREMENTAL_STATE_CLEARED or seq not in sequences:
        sequences[seq] = {"event_names": {}, "debug_annotation_names": {}}
    for span_i in interned:
        _interned_data(buf, span_i, sequences[seq])
    if descriptor is not None:
        out["track_descriptor"] = _track_descriptor(buf, descriptor)
    if event is not None:
        out["track_event"] = _track_event(buf, event, sequences[seq])
    return out if descriptor is not None or event is not None else None


def decode_perfetto(path: str | Path) -> list[dict[str, Any]]:
    """Decodes a ``perfetto.protos.Trace`` file (gzip detected by magic) into plain dicts.

    Each returned packet has ``timestamp`` and ``sequence_id`` and a ``track_descriptor``
    ({uuid, name, parent_uuid, pid, tid, process_name, thread_name}) and/or a ``track_event``
    ({type, track_uuid, name, args, flow_ids, terminating_flow_ids}), names and argument names
    resolved through the interned tables of the packet's sequence. Packets with neither (interned
    data alone, clock snapshots, ...) are consumed but not returned. Unknown fields are skipped by
    wire type; malformed bytes raise ValueError with the byte offset (in the decompressed data).
    """
    buf = _read_bytes(path)
    sequences: dict[int, dict[str, dict[int, str]]] = {}
    packets = []
    for f, wt, v, at in _fields(buf, 0, len(buf)):
        if f != 1:
            continue
        _expect(wt, WT_LEN, f, at)
        packet = _packet(buf, v, sequences)
        if packet is not None:
            packets.append(packet)
    return packets


# ---- Perfetto invariants ----------------------------------------------------------------------


def _event_desc(i: int, p: dict[str, Any]) -> str:
    ev = p["track_event"]
    return f"packet #{i} (type {ev['type']}, name {ev['name']!r}, ts {p['timestamp']}, track {ev['track_uuid']})"


def _check_descriptors(packets: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Every event's track described earlier in the stream; every parent described somewhere."""
    tracks: dict[int, dict[str, Any]] = {}
    for i, p in enumerate(packets):
        if "track_descriptor" in p:
            d = p["track_descriptor"]
            assert d["uuid"], f"packet #{i}: track descriptor without a uuid"
            tracks[d["uuid"]] = d
        if "track_event" in p:
            uuid = p["track_event"]["track_uuid"]
            assert uuid in tracks, f"{_event_desc(i, p)} uses a track with no earlier descriptor"
            assert p["timestamp"] is not None, f"{_event_desc(i, p)} has no timestamp"
    for uuid, d in tracks.items():
        assert d["parent_uuid"] is None or d["parent_uuid"] in tracks, (
            f"track {uuid} ({d['name']!r}) has parent {d['parent_uuid']} which is never described")
    return tracks


def _check_track(events: list[tuple[int, dict[str, Any]]]) -> tuple[int, int]:
    """Balance of one track's slices in timestamp order; returns (slices, instants)."""
    for (i, a), (j, b) in zip(events, events[1:]):
        assert b["timestamp"] >= a["timestamp"], f"{_event_desc(j, b)} goes back in time after {_event_desc(i, a)}"
    slices = instants = 0
    stack: list[tuple[int, dict[str, Any]]] = []
    for i, p in sorted(events, key=lambda e: e[1]["timestamp"]):
        kind = p["track_event"]["type"]
        if kind == SLICE_BEGIN:
            stack.append((i, p))
        elif kind == SLICE_END:
            assert stack, f"{_event_desc(i, p)} ends a slice that was never begun"
            j, begin = stack.pop()
            name = p["track_event"]["name"]
            assert name is None or name == begin["track_event"]["name"], (
                f"{_event_desc(i, p)} ends {_event_desc(j, begin)} under another name")
            slices += 1
        elif kind == INSTANT:
            instants += 1
    assert not stack, f"{_event_desc(*stack[-1])} is never ended ({len(stack)} slices left open)"
    return slices, instants


def check_perfetto(packets: list[dict[str, Any]]) -> dict[str, int]:
    """Asserts the invariants a viewer relies on and returns {"slices", "instants", "tracks", "flows"}.

    Every track event's track has a descriptor earlier in the stream; per track, timestamps never
    decrease and, in timestamp order (stable for equal timestamps), each SLICE_END closes the most
    recent open SLICE_BEGIN, with nothing left open at the end. Each flow id must join at least two
    events (an arrow has two ends).
    """
    tracks = _check_descriptors(packets)
    per_track: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    flow_ends: dict[int, int] = defaultdict(int)
    for i, p in enumerate(packets):
        if "track_event" in p:
            ev = p["track_event"]
            per_track[ev["track_uuid"]].append((i, p))
            for fid in ev["flow_ids"] + ev["terminating_flow_ids"]:
                flow_ends[fid] += 1
    slices = instants = 0
    for events in per_track.values():
        s, n = _check_track(events)
        slices, instants = slices + s, instants + n
    dangling = sorted(fid for fid, n in flow_ends.items() if n < 2)
    assert not dangling, f"flow ids with a single end: {dangling[:10]}"
    return {"slices": slices, "instants": instants, "tracks": len(tracks), "flows": len(flow_ends)}
