"""jaxprof view --ui builtin: what the server refuses (traversal, symlinks, bad Host, bad heads) and
the token that guards it when --host exposes it beyond this machine.

Requests go out over raw sockets so nothing on the client side normalises the path or the Host."""
from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from conftest import JAXPROF_BIN

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "cpu_small.xplane.pb.gz"
SECRET = b"jaxprof-secret-outside-logdir"


@dataclass
class Reply:
    """One parsed HTTP response."""

    status: int
    headers: dict[str, str]  # lower-cased names; the last value wins
    body: bytes


def raw_request(port: int, head: bytes, timeout: float = 60) -> Reply:
    """Sends head as is to 127.0.0.1:port and reads the reply until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return parse_reply(data)


def parse_reply(data: bytes) -> Reply:
    """A whole HTTP/1.1 response as read from the socket."""
    head_bytes, _, body = data.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    m = re.fullmatch(r"HTTP/1\.1 (\d{3}) .*", lines[0])
    assert m, f"no status line in {data[:200]!r}"
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Reply(int(m.group(1)), headers, body)


@dataclass
class Server:
    """A running `jaxprof view` with the port it bound and what it printed."""

    proc: subprocess.Popen
    port: int
    stdout: str
    stderr: Path

    def get(self, target: str, host: str | None = None, extra: str = "", method: str = "GET") -> Reply:
        host = host if host is not None else f"127.0.0.1:{self.port}"
        head = f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
        return raw_request(self.port, head.encode("latin-1"))

    def runs(self, query: str = "", extra: str = "") -> list[dict]:
        import json

        r = self.get("/api/runs" + query, extra=extra)
        assert r.status == 200, (r.status, r.body[:200])
        assert r.headers["content-type"] == "application/json"
        return json.loads(r.body)


@pytest.fixture
def serve(launch_view: Callable[..., tuple]) -> Callable[..., Server]:
    """Starts `jaxprof view DIR --no-browser --port 0 ARGS` (the builtin UI); killed at teardown."""

    def start(log_dir: Path, *args: str) -> Server:
        proc, out, err = launch_view(log_dir, "--port", "0", *args)
        port = int(re.search(r"Open: http://[^/]*:(\d+)/", out).group(1))
        return Server(proc, port, out, err)

    return start


def hex_id(rel: str) -> str:
    """The viewer's run id: the hex of the run's path relative to the log directory (viewer.c)."""
    return rel.encode().hex()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """LOGDIR with one real run, beside an outside/ tree that LOGDIR links into:
    plugins/profile/linked_run -> outside/secret_run (a whole run behind a directory symlink),
    plugins/profile/run1/evil.xplane.pb.gz -> outside/secret_run/... (a linked file beside a real one),
    plugins/profile/only_link/h.xplane.pb.gz -> the same (a run made of a link only)."""
    logs, outside = tmp_path / "logs", tmp_path / "outside"
    run = logs / "plugins" / "profile" / "run1"
    secret_run = outside / "secret_run"
    run.mkdir(parents=True)
    secret_run.mkdir(parents=True)
    shutil.copy(FIXTURE, run / "h.xplane.pb.gz")
    shutil.copy(FIXTURE, secret_run / "secret.xplane.pb.gz")
    (outside / "passwd").write_bytes(SECRET)
    (logs / "plugins" / "profile" / "linked_run").symlink_to(secret_run, target_is_directory=True)
    (run / "evil.xplane.pb.gz").symlink_to(secret_run / "secret.xplane.pb.gz")
    (logs / "plugins" / "profile" / "only_link").mkdir()
    (logs / "plugins" / "profile" / "only_link" / "h.xplane.pb.gz").symlink_to(secret_run / "secret.xplane.pb.gz")
    return logs


REAL = "plugins/profile/run1"


# ---- loopback mode: paths ------------------------------------------------------------------------

TRAVERSALS = [
    ("/../etc/passwd", {403}),
    ("/../../../../../../etc/passwd", {403}),
    ("/%2e%2e/%2e%2e/etc/passwd", {403}),
    ("/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", {403}),
    ("/%252e%252e/etc/passwd", {404}),          # decoded once only: a literal "%2e%2e" segment
    ("/api/run/../../x", {403}),
    ("/api/run/%2e%2e/overview", {403}),
    ("//etc/passwd", {404}),
    ("/etc/passwd", {404}),
    ("http://127.0.0.1/etc/passwd", {400}),     # absolute form: not a path, refused
    ("/..%5c..%5cetc%5cpasswd", {400}),         # backslash, encoded
    ("/..\\..\\etc\\passwd", {400}),            # backslash, raw
    ("/%00/etc/passwd", {400}),
    ("/index.html/../../outside/passwd", {403}),
    ("/api/run/" + hex_id("../outside") + "/overview", {404}),
    ("/api/run/" + hex_id("/etc") + "/overview", {404}),
]


@pytest.mark.parametrize("target,statuses", TRAVERSALS)
def test_traversal_is_refused(serve, log_dir: Path, target: str, statuses: set[int]) -> None:
    srv = serve(log_dir)
    r = srv.get(target)
    assert r.status in statuses, (target, r.status, r.body[:200])
    assert SECRET not in r.body and b"root:" not in r.body
    assert srv.runs()[0]["path"] == REAL  # the server still answers


def test_unknown_run_ids_are_404(serve, log_dir: Path) -> None:
    srv = serve(log_dir)
    real = hex_id(REAL)
    assert srv.get(f"/api/run/{real}/overview").status == 200
    for bad in [hex_id("plugins/profile/run2"), hex_id("plugins/profile"), hex_id("."), real + "2f",
                real.upper(), "zz", real[:-1], "00" + real]:
        r = srv.get(f"/api/run/{bad}/overview")
        assert r.status == 404, (bad, r.status, r.body)
        assert r.body == b'{"error":"no such run"}\n'


# ---- loopback mode: symlinks ------------------------------------------------------------------------

def test_symlinks_out_of_logdir_are_not_served(serve, log_dir: Path) -> None:
    import json

    srv = serve(log_dir)
    runs = srv.runs()
    assert [(r["path"], r["hosts"]) for r in runs] == [(REAL, ["h"])]  # the linked file beside it is no host
    for rel in ["plugins/profile/linked_run", "plugins/profile/only_link"]:
        for what in ["overview", "timeline", "ops"]:
            r = srv.get(f"/api/run/{hex_id(rel)}/{what}")
            assert r.status == 404, (rel, what, r.status, r.body)
            assert r.body == b'{"error":"no such run"}\n'
    # The listed run loads its own file only, never the linked one beside it.
    r = srv.get(f"/api/run/{hex_id(REAL)}/overview")
    assert r.status == 200
    assert json.loads(r.body)["hosts"] == ["h"]
    r = srv.get(f"/api/run/{hex_id(REAL)}/overview?host=evil")
    assert (r.status, r.body) == (404, b'{"error":"no host matches \'evil\' (hosts: h)"}\n')


# ---- loopback mode: Host and malformed heads ------------------------------------------------------------

def test_bad_host_is_403(serve, log_dir: Path) -> None:
    srv = serve(log_dir)
    p = srv.port
    for host in [f"evil.example:{p}", f"127.0.0.1:{p + 1 if p < 65535 else p - 1}", "127.0.0.1", f"127.0.0.2:{p}",
                 f"localhost.evil.example:{p}", f"127.0.0.1:{p}0", f"[::2]:{p}", f"127.0.0.1:+{p}"]:
        r = srv.get("/api/runs", host=host)
        assert r.status == 403, (host, r.status)
        assert r.body == b"403 Forbidden\n"
        assert srv.runs()[0]["path"] == REAL
    for host in [f"127.0.0.1:{p}", f"localhost:{p}", f"LOCALHOST:{p}"]:
        assert srv.get("/api/runs", host=host).status == 200, host
    r = raw_request(p, b"GET /api/runs HTTP/1.1\r\nConnection: close\r\n\r\n")  # no Host at all
    assert r.status == 400
    r = srv.get("/api/runs", extra=f"Host: evil.example:{p}\r\n")  # a second Host field
    assert r.status == 400


def test_oversized_head_is_431(serve, log_dir: Path) -> None:
    srv = serve(log_dir)
    r = srv.get("/api/runs", extra="X-Pad: " + "a" * 17000 + "\r\n")
    assert r.status == 431
    assert r.body == b"431 Request Header Fields Too Large\n"
    r = srv.get("/" + "a" * 20000)
    assert r.status == 431
    assert srv.runs()[0]["path"] == REAL


@pytest.mark.parametrize("head", [
    b"garbage\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET /api/runs\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET  /api/runs HTTP/1.1\r\n\r\n",
    b"GET /api/runs HTTP/1.1 extra\r\n\r\n",
    b"G\x01T /api/runs HTTP/1.1\r\n\r\n",
    b"GET /api/\xffruns HTTP/1.1\r\n\r\n",
    b"GET api/runs HTTP/1.1\r\n\r\n",
    b"GET /api/runs HTTQ/1.1\r\n\r\n",
])
def test_garbage_request_line_is_400(serve, log_dir: Path, head: bytes) -> None:
    srv = serve(log_dir)
    r = raw_request(srv.port, head)
    assert r.status == 400, (head, r.status)
    assert r.body == b"400 Bad Request\n"
    assert srv.runs()[0]["path"] == REAL


# ---- --host: token mode ----------------------------------------------------------------------------------

def token_server(serve, log_dir: Path) -> tuple[Server, str]:
    srv = serve(log_dir, "--bind", "0.0.0.0")
    m = re.search(r"^Open: http://([^/:]+):(\d+)/\?token=([0-9a-f]+)$", srv.stdout, re.M)
    assert m, srv.stdout
    assert int(m.group(2)) == srv.port
    assert m.group(1) != "0.0.0.0"  # the machine's name: the any-address is no place to go
    return srv, m.group(3)


def test_token_mode_warns_and_prints_token_url(serve, log_dir: Path) -> None:
    srv, token = token_server(serve, log_dir)
    assert len(token) >= 32  # 128 bits or more
    time.sleep(0.2)
    err = srv.stderr.read_text()
    assert "warning" in err and "0.0.0.0" in err and "anyone who can reach the port" in err, err
    srv2, token2 = token_server(serve, log_dir)
    assert token2 != token  # fresh each start


def test_token_mode_refuses_without_the_token(serve, log_dir: Path) -> None:
    srv, token = token_server(serve, log_dir)
    wrong = ("0" if token[0] != "0" else "1") + token[1:]
    for target, extra in [("/api/runs", ""), ("/", ""), ("/app.js", ""),
                          (f"/api/runs?token={wrong}", ""), (f"/api/runs?token={token[:-1]}", ""),
                          (f"/api/runs?token={token}0", ""), (f"/api/runs?xtoken={token}", ""),
                          (f"/api/runs?token=%{token}", ""), (f"/api/runs?host={token}", ""),
                          ("/api/runs", f"Cookie: jaxprof_token={wrong}\r\n"),
                          ("/api/runs", f"Cookie: token={token}\r\n"),
                          ("/api/runs", f"X-Token: {token}\r\n"),
                          (f"/api/run/{hex_id(REAL)}/overview", "")]:
        r = srv.get(target, extra=extra)
        assert r.status == 403, (target, extra, r.status)
        assert r.body == b"403 Forbidden\n"
        assert "set-cookie" not in r.headers
        assert token.encode() not in r.body
    assert srv.get("/api/runs", method="OPTIONS").status == 403  # preflights need the token too
    assert srv.get("/api/runs", method="POST").status == 403     # 403 before 405: nothing learnt


def test_token_mode_accepts_the_token(serve, log_dir: Path) -> None:
    srv, token = token_server(serve, log_dir)
    cookie = f"jaxprof_token={token}; HttpOnly; SameSite=Strict; Path=/"
    r = srv.get(f"/?token={token}")
    assert r.status == 200
    assert r.headers["set-cookie"] == cookie
    assert r.headers["referrer-policy"] == "no-referrer"
    assert b"<html" in r.body.lower()
    runs = srv.runs(f"?token={token}")
    assert [x["path"] for x in runs] == [REAL]
    # The cookie alone is enough (the page's fetch("/api/...") calls), among other cookies.
    r = srv.get("/api/runs", extra=f"Cookie: theme=dark; jaxprof_token={token}; x=1\r\n")
    assert r.status == 200 and "set-cookie" not in r.headers
    r = srv.get(f"/api/run/{hex_id(REAL)}/overview", extra=f"Cookie: jaxprof_token={token}\r\n")
    assert r.status == 200 and b'"hosts":["h"]' in r.body
    # The token beside other parameters, anywhere in the query.
    r = srv.get(f"/api/run/{hex_id(REAL)}/timeline?px=100&token={token}&start_ms=0")
    assert r.status == 200, r.body[:200]
    # Any Host name (the machine is reached by its name or address), but the bound port only.
    assert srv.get(f"/api/runs?token={token}", host=f"evil.example:{srv.port}").status == 200
    assert srv.get(f"/api/runs?token={token}", host=f"10.1.2.3:{srv.port}").status == 200
    other = srv.port + 1 if srv.port < 65535 else srv.port - 1
    assert srv.get(f"/api/runs?token={token}", host=f"evil.example:{other}").status == 403
    assert srv.get(f"/api/runs?token={token}", host="evil.example").status == 403
    assert srv.get("/api/runs", extra=f"Cookie: jaxprof_token={token}\r\n", method="POST").status == 405
    # Traversal stays refused with the token.
    for target in [f"/../etc/passwd?token={token}", f"/%2e%2e/%2e%2e/etc/passwd?token={token}"]:
        r = srv.get(target)
        assert r.status == 403 and SECRET not in r.body
    # The request log shows where the token was, never the token.
    time.sleep(0.2)
    log = srv.stderr.read_text()
    assert f"GET /?token={'*' * len(token)} 200" in log, log
    assert token not in log


@pytest.mark.parametrize("ui", ["perfetto", "tensorboard"])
def test_bind_is_refused_for_other_uis(log_dir: Path, ui: str) -> None:
    proc = subprocess.run([str(JAXPROF_BIN), "view", str(log_dir), "--ui", ui, "--bind", "0.0.0.0", "--no-browser"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("jaxprof: --bind is for --ui builtin only: ")
    assert proc.stdout == ""


def test_old_host_spelling_still_binds_with_a_deprecation_line(serve, log_dir: Path) -> None:
    """view --host ADDR was the bind address; --host is the host filter everywhere else. Accepted
    for one release, with one line on stderr naming the new flag."""
    srv = serve(log_dir, "--host", "127.0.0.1")
    assert re.search(r"^Open: http://127\.0\.0\.1:\d+/$", srv.stdout, re.M), srv.stdout
    time.sleep(0.2)
    assert "jaxprof: view --host is deprecated and will be removed: use --bind\n" in srv.stderr.read_text()


def test_loopback_host_needs_no_token(serve, log_dir: Path) -> None:
    srv = serve(log_dir, "--bind", "127.0.0.1")
    assert "token" not in srv.stdout
    assert re.search(r"^Open: http://127\.0\.0\.1:\d+/$", srv.stdout, re.M), srv.stdout
    assert srv.runs()[0]["path"] == REAL
    assert "warning" not in srv.stderr.read_text()
