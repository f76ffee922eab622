"""The trace checkers can fail: hand-made Chrome JSON and hand-encoded Perfetto protobuf."""
from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import pytest

from trace_check import (COUNTER, INSTANT, SLICE_BEGIN, SLICE_END, check_chrome_nesting, check_perfetto,
                         decode_perfetto, load_chrome_trace)

# ---- a tiny protobuf encoder --------------------------------------------------------------------


def varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # negative int64/int32 go out as ten bytes of two's complement
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def key(field: int, wt: int) -> bytes:
    return varint(field << 3 | wt)


def vint(field: int, v: int) -> bytes:
    return key(field, 0) + varint(v)


def blob(field: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return key(field, 2) + varint(len(data)) + data


def fixed64(field: int, v: int) -> bytes:
    return key(field, 1) + struct.pack("<Q", v)


def double(field: int, v: float) -> bytes:
    return key(field, 1) + struct.pack("<d", v)


def fixed32(field: int, v: int) -> bytes:
    return key(field, 5) + struct.pack("<I", v)


def packet(*fields: bytes) -> bytes:
    return blob(1, b"".join(fields))


def process_track(uuid: int, pid: int, name: str) -> bytes:
    return blob(60, vint(1, uuid) + blob(3, vint(1, pid) + blob(6, name)))


def thread_track(uuid: int, parent: int, pid: int, tid: int, name: str) -> bytes:
    return blob(60, vint(1, uuid) + vint(5, parent) + blob(4, vint(1, pid) + vint(2, tid) + blob(5, name)))


def event(ts: int, kind: int, track: int, *extra: bytes, seq: int = 1) -> bytes:
    return packet(vint(8, ts), vint(10, seq), blob(11, vint(9, kind) + vint(11, track) + b"".join(extra)))


def write(tmp_path: Path, data: bytes, name: str = "t.pftrace") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# ---- Perfetto decoding --------------------------------------------------------------------------


def rich_trace() -> bytes:
    """Descriptors, interned names, every annotation kind, flows packed and not, unknown fields."""
    interned = blob(12, blob(2, vint(1, 1) + blob(2, "matmul")) + blob(3, vint(1, 7) + blob(2, "flops")))
    unknown = vint(99, 5) + fixed32(98, 1) + fixed64(97, 2) + blob(96, b"\x00\x01") + key(95, 3) + vint(1, 3) + key(95, 4)
    return b"".join([
        packet(process_track(10, 42, "host"), vint(10, 1), unknown),
        packet(thread_track(11, 10, 42, -7, "main"), vint(10, 1)),
        packet(vint(8, 1000), vint(10, 1), vint(13, 1), interned,
               blob(11, vint(9, SLICE_BEGIN) + vint(11, 11) + vint(10, 1) + unknown
                    + blob(4, vint(1, 7) + double(5, 2.5))
                    + blob(4, blob(10, "ok") + vint(2, 1))
                    + blob(4, blob(10, "n") + vint(3, 2**63 + 5))
                    + blob(4, blob(10, "neg") + vint(4, -3))
                    + blob(4, blob(10, "s") + blob(6, "text"))
                    + fixed64(47, 77) + blob(47, struct.pack("<QQ", 78, 79))
                    + blob(22, "cat") + blob(3, varint(1) + varint(2)))),
        event(1500, SLICE_END, 11, fixed64(48, 77), blob(48, struct.pack("<Q", 78))),
        event(1600, INSTANT, 11, blob(23, "mark"), fixed64(48, 79)),
        event(1700, COUNTER, 11),
    ])


def test_decode_resolves_names_args_and_flows(tmp_path: Path) -> None:
    packets = decode_perfetto(write(tmp_path, rich_trace()))
    assert len(packets) == 6
    assert packets[0]["track_descriptor"] == {"uuid": 10, "name": None, "parent_uuid": None, "pid": 42, "tid": None,
                                              "process_name": "host", "thread_name": None}
    assert packets[1]["track_descriptor"]["tid"] == -7 and packets[1]["track_descriptor"]["parent_uuid"] == 10
    begin = packets[2]
    assert begin["timestamp"] == 1000 and begin["sequence_id"] == 1
    assert begin["track_event"] == {
        "type": SLICE_BEGIN, "track_uuid": 11, "name": "matmul",
        "args": {"flops": 2.5, "ok": True, "n": 2**63 + 5, "neg": -3, "s": "text"},
        "flow_ids": [77, 78, 79], "terminating_flow_ids": [],
    }
    assert packets[3]["track_event"]["terminating_flow_ids"] == [77, 78]
    assert packets[4]["track_event"]["name"] == "mark"
    assert check_perfetto(packets) == {"slices": 1, "instants": 1, "tracks": 2, "flows": 3}


def test_gzip_is_detected_by_magic(tmp_path: Path) -> None:
    path = write(tmp_path, gzip.compress(rich_trace()), "t.bin")
    assert len(decode_perfetto(path)) == 6


def test_interned_tables_are_per_sequence_and_reset_by_the_cleared_flag(tmp_path: Path) -> None:
    def names(seq: int, iid: int, name: str, flags: int = 0) -> bytes:
        return packet(vint(10, seq), vint(13, flags), blob(12, blob(2, vint(1, iid) + blob(2, name))))

    data = b"".join([
        packet(process_track(1, 1, "p")),
        names(1, 1, "first", flags=1),
        event(10, INSTANT, 1, vint(10, 1), seq=1),
        names(1, 1, "second", flags=1),  # cleared: the same iid now means another name
        event(20, INSTANT, 1, vint(10, 1), seq=1),
        names(2, 5, "other", flags=1),
        event(30, INSTANT, 1, vint(10, 5), seq=2),
    ])
    packets = decode_perfetto(write(tmp_path, data))
    assert [p["track_event"]["name"] for p in packets if "track_event" in p] == ["first", "second", "other"]
    # iid 5 exists on sequence 2 only.
    with pytest.raises(ValueError, match="iid 5"):
        decode_perfetto(write(tmp_path, data + event(40, INSTANT, 1, vint(10, 5), seq=1)))
    # After a clear, sequence 2's old names are gone.
    cleared = data + packet(vint(10, 2), vint(13, 1)) + event(50, INSTANT, 1, vint(10, 5), seq=2)
    with pytest.raises(ValueError, match="never defined"):
        decode_perfetto(write(tmp_path, cleared))


@pytest.mark.parametrize("data, offset", [
    (b"\x0a\x05\x40", 0),                      # packet length past the end: at its key
    (b"\x0a\x02\x40\xff", 3),                  # truncated varint inside the packet: at its first byte
    (b"\x0a\x01\x47", 2),                      # wire type 7
    (b"\x0a\x03\x41\x00\x00", 2),              # truncated fixed64
    (b"\x0a\x00\x02", 2),                      # field 0 at the top level, after an empty packet
    (b"\x08" + b"\xff" * 10 + b"\x01", 1),     # varint over 10 bytes
    (b"\x0b\x08\x01", 0),                      # group never ended
])
def test_malformed_input_raises_with_the_byte_offset(tmp_path: Path, data: bytes, offset: int) -> None:
    with pytest.raises(ValueError, match=rf"byte {offset}\b"):
        decode_perfetto(write(tmp_path, data))


def test_wrong_wire_type_for_a_known_field_raises(tmp_path: Path) -> None:
    bad = packet(process_track(1, 1, "p")) + packet(vint(10, 1), blob(11, blob(9, b"x")))
    with pytest.raises(ValueError, match="wire type"):
        decode_perfetto(write(tmp_path, bad))


# ---- Perfetto invariants ------------------------------------------------------------------------


def tracks() -> bytes:
    return packet(process_track(1, 1, "p")) + packet(thread_track(2, 1, 1, 1, "t"))


def check(tmp_path: Path, data: bytes) -> dict[str, int]:
    return check_perfetto(decode_perfetto(write(tmp_path, data)))


def test_nested_slices_balance(tmp_path: Path) -> None:
    data = tracks() + b"".join([
        event(0, SLICE_BEGIN, 2, blob(23, "outer")), event(1, SLICE_BEGIN, 2, blob(23, "inner")),
        event(2, SLICE_END, 2), event(2, SLICE_BEGIN, 2, blob(23, "next")),  # same ts: stream order kept
        event(3, SLICE_END, 2), event(4, SLICE_END, 2, blob(23, "outer")),
    ])
    assert check(tmp_path, data) == {"slices": 3, "instants": 0, "tracks": 2, "flows": 0}


@pytest.mark.parametrize("events, message", [
    ([event(5, SLICE_END, 2)], "never begun"),
    ([event(5, SLICE_BEGIN, 2, blob(23, "open"))], "never ended"),
    ([event(5, SLICE_BEGIN, 2, blob(23, "a")), event(6, SLICE_END, 2, blob(23, "b"))], "another name"),
    ([event(5, INSTANT, 2), event(4, INSTANT, 2)], "back in time"),
    ([event(5, INSTANT, 9)], "no earlier descriptor"),
    ([event(5, INSTANT, 2, fixed64(47, 1))], "single end"),
])
def test_broken_streams_fail(tmp_path: Path, events: list[bytes], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check(tmp_path, tracks() + b"".join(events))


def test_descriptor_must_come_before_its_events(tmp_path: Path) -> None:
    late = event(5, INSTANT, 2) + tracks()
    with pytest.raises(AssertionError, match="no earlier descriptor"):
        check(tmp_path, late)
    orphan = packet(thread_track(2, 99, 1, 1, "t"))
    with pytest.raises(AssertionError, match="never described"):
        check(tmp_path, orphan)


# ---- Chrome JSON ---------------------------------------------------------------------------------


def x(name: str, ts: float, dur: float, tid: int = 1, pid: int = 1) -> dict:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def test_chrome_nesting_accepts_proper_nesting(tmp_path: Path) -> None:
    events = [
        x("step", 1.0, 0.3), x("a", 1.1, 0.2),  # 1.1 + 0.2 > 1.3 in floats; equal in nanoseconds
        x("b", 1.1, 0.1), x("c", 1.2, 0.1), x("zero", 1.3, 0), x("later", 2, 1),
        x("other thread overlaps freely", 1.05, 5, tid=2),
        {"ph": "i", "name": "instant", "ts": 1.15, "pid": 1, "tid": 1, "s": "t"},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
    ]
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    doc = load_chrome_trace(path)
    assert doc["traceEvents"] == events
    check_chrome_nesting(doc["traceEvents"])
    check_chrome_nesting(doc)
    plain = tmp_path / "t.json"
    plain.write_text(json.dumps(events))  # the array format
    assert load_chrome_trace(plain) == {"traceEvents": events}


def test_chrome_nesting_rejects_partial_overlap() -> None:
    events = [x("parent", 10, 10), x("child", 12, 3), x("straddler", 15, 6)]
    with pytest.raises(AssertionError, match=r"'straddler'.*'parent'"):
        check_chrome_nesting(events)
    with pytest.raises(AssertionError, match="numeric"):
        check_chrome_nesting([{"ph": "X", "name": "s", "ts": "1", "dur": 1, "pid": 1, "tid": 1}])
    with pytest.raises(AssertionError, match="negative"):
        check_chrome_nesting([x("neg", 1, -1)])
