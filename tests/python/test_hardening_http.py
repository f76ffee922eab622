"""jaxprof view's HTTP server against stalled and hostile clients (issue 19, items 4 and 8).

A client that asks for a large answer and stops reading must cost only its own connection: the
others are answered while it still holds it, and it gets its whole answer when it reads again (or
is dropped alone at its write deadline). A NUL byte anywhere in the request head gets 400.

The order of events proves the point, not a stopwatch: the server writes one log line when a
response ends, so the stalled response's line comes after the others'. The other clients' socket
timeout (5 s, half the server's 10 s write deadline) only turns the old behaviour (every client
waited out the stalled one) into a failure instead of a slow pass."""
from __future__ import annotations

import hashlib
import json
import os
import re
import selectors
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import test_viewer_security as security
from xplane_gen import XSpace

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "cpu_small.xplane.pb.gz"
RUN = "plugins/profile/2024_01_02_03_04_05"
RUN_ID = RUN.encode().hex()             # the viewer's opaque run id (hex of the relative path)
TRACE_BYTES = 10 * 1024 * 1024          # the 10 MB answer
OTHERS_TIMEOUT_S = 5.0                  # the other clients' socket timeout; the server's write deadline is 10 s
SMALL_RCVBUF = 4096                     # a stalled client's receive buffer: the server's writes fill up soon


@dataclass
class Server:
    """A running `jaxprof view` and where it logs."""

    port: int
    stderr: Path

    def log_lines(self) -> list[str]:
        """The request log so far: "METHOD target status body-bytes", one line per ended response."""
        return [line[9:] for line in self.stderr.read_text().splitlines()
                if line.startswith("jaxprof: ") and re.fullmatch(r"\S+ \S+ \d{3} \d+", line[9:])]


def head_for(port: int, target: str, extra: bytes = b"", method: bytes = b"GET") -> bytes:
    """The raw head of a request for target with a valid Host."""
    return method + b" " + target.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port + extra + b"\r\n"


def exchange(port: int, head: bytes, timeout: float = OTHERS_TIMEOUT_S) -> tuple[int, dict[str, str], bytes]:
    """Sends head, reads the reply to the server's close: (status, lower-cased headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head)
        data = b""
        while chunk := s.recv(1 << 16):
            data += chunk
    return parse_reply(data)


def parse_reply(data: bytes) -> tuple[int, dict[str, str], bytes]:
    reply = security.parse_reply(data)
    return reply.status, reply.headers, reply.body


class StalledClient:
    """A client that sends its request, reads the first bytes of the answer and then stops reading
    (with a small receive buffer, so the server's socket fills up after a few hundred kB)."""

    def __init__(self, port: int, head: bytes) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_RCVBUF)
        self.sock.settimeout(60)
        self.sock.connect(("127.0.0.1", port))
        self.sock.sendall(head)
        self.start = self.sock.recv(64)  # the server has begun to answer
        assert self.start.startswith(b"HTTP/1.1 200 OK\r\n"), self.start

    def read_rest(self) -> bytes:
        """Reads again, to the server's close; returns the whole reply."""
        data = self.start
        while chunk := self.sock.recv(1 << 16):
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def trace_log_dir(tmp_path: Path) -> Path:
    """A run whose fresh perfetto_trace.pftrace (newer than the capture: served as it is) holds
    10 MB of random bytes: `view --ui perfetto` sends it from the file."""
    run = tmp_path / "logs" / RUN
    run.mkdir(parents=True)
    shutil.copy(FIXTURE, run / "host.xplane.pb.gz")
    trace = run / "perfetto_trace.pftrace"
    trace.write_bytes(os.urandom(TRACE_BYTES))
    later = (run / "host.xplane.pb.gz").stat().st_mtime + 10
    os.utime(trace, (later, later))
    return tmp_path / "logs"


@pytest.fixture
def wide_log_dir(tmp_path: Path) -> Path:
    """A GPU run with 2000 kernels of 3000-byte names: its /kernels answer is about 12 MB of JSON,
    which `view --ui builtin` sends from memory."""
    space = XSpace(hostnames=["h"])
    stream = space.plane("/device:GPU:0").line("Stream #13(Compute)", id=13)
    for i in range(2000):
        stream.span(f"kernel_{i}_" + "k" * 3000, 10 + 2 * i, 11 + 2 * i, {"hlo_op": f"fusion.{i}." + "x" * 3000})
    run = tmp_path / "logs" / RUN
    run.mkdir(parents=True)
    space.write(run / "h.xplane.pb")
    return tmp_path / "logs"


@pytest.fixture
def start(launch_view: Callable[..., tuple]) -> Callable[..., Server]:
    """Starts `jaxprof view DIR --no-browser --port 0 ARGS`; killed at teardown."""

    def run(log_dir: Path, *args: str) -> Server:
        _, out, err = launch_view(log_dir, "--port", "0", *args)
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", out.split("Open: ", 1)[1]).group(1))
        return Server(port, err)

    return run


@pytest.fixture
def small_server(tmp_path: Path, start) -> Server:
    run = tmp_path / "logs" / RUN
    run.mkdir(parents=True)
    shutil.copy(FIXTURE, run / "host.xplane.pb.gz")
    return start(tmp_path / "logs", "--ui", "builtin")


# ---- item 4: a client that stops reading ----------------------------------------------------------

TRACE_TARGET = f"/{RUN.rsplit('/', 1)[1]}.pftrace"  # where `view --ui perfetto` serves the trace
KERNELS_TARGET = f"/api/run/{RUN_ID}/kernels"


def wait_for_lines(server: Server, n: int, within_s: float = 30) -> list[str]:
    """The log once it has n lines (the server writes a line when a response ends, which may come
    a moment after the client saw the last byte)."""
    deadline = time.monotonic() + within_s
    while len(lines := server.log_lines()) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return lines


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_reader_that_stops_holds_only_its_own_connection_file(trace_log_dir, start):
    server = start(trace_log_dir, "--ui", "perfetto")
    want = (trace_log_dir / RUN / "perfetto_trace.pftrace").read_bytes()
    stalled = StalledClient(server.port, head_for(server.port, TRACE_TARGET))
    try:
        # Others come one after another; each is answered in full while the stalled client still
        # holds its connection (its response has not ended: it has no log line yet).
        for _ in range(5):
            status, headers, body = exchange(server.port, head_for(server.port, TRACE_TARGET, b"Range: bytes=0-99\r\n"))
            assert (status, headers["content-range"], body) == (206, f"bytes 0-99/{TRACE_BYTES}", want[:100])
        status, headers, body = exchange(server.port, head_for(server.port, TRACE_TARGET, method=b"HEAD"))
        assert (status, headers["content-length"], body) == (200, str(TRACE_BYTES), b"")
        assert server.log_lines() == [f"GET {TRACE_TARGET} 206 100"] * 5 + [f"HEAD {TRACE_TARGET} 200 0"]
        # The stalled client reads again: its answer is whole, and its log line comes last.
        status, _, body = parse_reply(stalled.read_rest())
    finally:
        stalled.close()
    assert status == 200 and sha(body) == sha(want)
    assert wait_for_lines(server, 7)[6:] == [f"GET {TRACE_TARGET} 200 {TRACE_BYTES}"]


def test_a_reader_that_stops_holds_only_its_own_connection_bytes(wide_log_dir, start):
    server = start(wide_log_dir, "--ui", "builtin")
    stalled = StalledClient(server.port, head_for(server.port, KERNELS_TARGET))
    try:
        runs = []
        for _ in range(5):
            status, _, body = exchange(server.port, head_for(server.port, "/api/runs"))
            assert status == 200
            runs.append(json.loads(body))
        assert [[r["id"] for r in listed] for listed in runs] == [[RUN_ID]] * 5
        status, headers, body = exchange(server.port, head_for(server.port, KERNELS_TARGET, method=b"HEAD"))
        assert status == 200 and body == b""
        size = int(headers["content-length"])
        assert size > 10_000_000
        logged = server.log_lines()
        assert logged[:5] == [logged[0]] * 5 and logged[0].startswith("GET /api/runs 200 ")
        assert logged[5:] == [f"HEAD {KERNELS_TARGET} 200 0"]
        status, headers, body = parse_reply(stalled.read_rest())
    finally:
        stalled.close()
    assert status == 200 and len(body) == size == int(headers["content-length"])
    doc = json.loads(body)
    assert doc["section"] == "kernels" and len(doc["kernels"]) == 2000
    assert wait_for_lines(server, 7)[6:] == [f"GET {KERNELS_TARGET} 200 {size}"]


def test_more_stalled_readers_than_connection_slots_do_not_lock_the_others_out(trace_log_dir, start):
    server = start(trace_log_dir, "--ui", "perfetto", "--connections", "16")  # 1024 by default
    want = (trace_log_dir / RUN / "perfetto_trace.pftrace").read_bytes()
    stalled = [StalledClient(server.port, head_for(server.port, TRACE_TARGET)) for _ in range(20)]
    try:
        # 20 stalled readers against 16 slots: each arrival past the 16th waited in the backlog
        # until the response longest without progress had stalled for a second, then took its
        # slot; so does this one, which gets its whole answer. (A 10 s timeout.)
        status, _, body = exchange(server.port, head_for(server.port, TRACE_TARGET), timeout=10)
        assert status == 200 and sha(body) == sha(want)
        logged = wait_for_lines(server, 6)
        cut = [line for line in logged if int(line.split()[3]) < TRACE_BYTES]
        assert len(cut) >= 5 and all(line.startswith(f"GET {TRACE_TARGET} 200 ") for line in cut), logged
        assert logged.count(f"GET {TRACE_TARGET} 200 {TRACE_BYTES}") == 1
        # The newest stalled reader kept its slot: reading again, it gets the whole file.
        status, _, body = parse_reply(stalled[-1].read_rest())
        assert status == 200 and sha(body) == sha(want)
    finally:
        for client in stalled:
            client.close()


def test_500_clients_at_once_are_all_answered(small_server):
    """Connections opened together, each sending its request as soon as it is connected (one
    thread and non-blocking sockets, so no client is slow to send): none is dropped for another."""
    port = small_server.port
    want = exchange(port, head_for(port, "/api/runs"))
    sel = selectors.DefaultSelector()
    replies: dict[socket.socket, bytes] = {}
    for _ in range(500):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        sel.register(s, selectors.EVENT_WRITE)
        replies[s] = b""
    deadline = time.monotonic() + 120
    while sel.get_map() and time.monotonic() < deadline:
        for key, events in sel.select(timeout=1):
            s = key.fileobj
            if events & selectors.EVENT_WRITE:
                s.sendall(head_for(port, "/api/runs"))  # a few dozen bytes: the buffer takes them
                sel.modify(s, selectors.EVENT_READ)
                continue
            try:
                chunk = s.recv(1 << 16)
            except ConnectionError:
                chunk = b""
            replies[s] += chunk
            if not chunk:
                sel.unregister(s)
                s.close()
    assert not sel.get_map(), f"{len(sel.get_map())} clients still waiting"
    answers = [parse_reply(data) if data else (0, {}, b"") for data in replies.values()]
    assert [(status, body) for status, _, body in answers] == [(want[0], want[2])] * 500


def test_a_stalled_reader_is_dropped_alone_at_its_write_deadline(trace_log_dir, start):
    server = start(trace_log_dir, "--ui", "perfetto")
    stalled = StalledClient(server.port, head_for(server.port, TRACE_TARGET))
    try:
        # No progress for timeout_ms (10 s): the server ends this response, cut short.
        logged = wait_for_lines(server, 1, within_s=60)
        assert len(logged) == 1 and logged[0].startswith(f"GET {TRACE_TARGET} 200 ")
        sent = int(logged[0].split()[3])
        assert 0 < sent < TRACE_BYTES
        status, headers, body = parse_reply(stalled.read_rest())
    finally:
        stalled.close()
    assert (status, int(headers["content-length"]), len(body)) == (200, TRACE_BYTES, sent)
    status, _, body = exchange(server.port, head_for(server.port, TRACE_TARGET, b"Range: bytes=-10\r\n"))
    assert status == 206 and len(body) == 10


# ---- item 8: NUL bytes in the request head --------------------------------------------------------


def test_nul_bytes_in_the_head_get_400(small_server):
    port = small_server.port
    host = b"Host: 127.0.0.1:%d" % port
    good = b"GET /api/runs HTTP/1.1\r\n" + host + b"\r\nX-Note: a b\r\n\r\n"
    assert exchange(port, good)[0] == 200
    for bad in [
        b"GET /api/runs HTTP/1.1\r\n" + host + b"\r\nX-Note: a\x00b\r\n\r\n",          # inside a value
        b"GET /api/runs HTTP/1.1\r\n" + host + b"\r\nX-Note: \x00\r\n\r\n",             # a value of NUL only
        b"GET /api/runs HTTP/1.1\r\n" + host + b"\x00.evil.example\r\n\r\n",            # Host would pass as its head
        b"GET /api/runs HTTP/1.1\x00junk\r\n" + host + b"\r\n\r\n",                     # after the version
        b"GET /api/runs HTTP/1.1\r\n" + host + b"\r\nX\x00Y: 1\r\n\r\n",                # in a name
    ]:
        status, _, body = exchange(port, bad)
        assert (status, body) == (400, b"400 Bad Request\n"), bad
    assert exchange(port, good)[0] == 200
    logged = wait_for_lines(small_server, 7)
    # A NUL in the request line leaves it unread: no method or target to log.
    assert [line.rsplit(" ", 1)[0] for line in logged] == ["GET /api/runs 200"] + ["GET /api/runs 400"] * 3 + [
        "- - 400", "GET /api/runs 400", "GET /api/runs 200"]
