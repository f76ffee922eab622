"""Issue 32, item 3: the library takes its configuration in options, never from the environment, and
its messages name those options as callers set them; each client maps them to its own words.

- the gzip inflate limit: the CLI fills jp_load_options.max_inflate from --max-inflate or
  JAXPROF_MAX_INFLATE (every command that reads a profile), the Python package from os.environ,
  read at each call (so a change made in this process applies to the next load);
- the messages: Python sees "sort", "filter", "columns", "module", "max_inflate"; the CLI prints
  the same messages with its flags, byte for byte as before the change.
"""
from __future__ import annotations

import http.client
import json
import shutil
from pathlib import Path

import pytest

import jaxprof
from conftest import run_jaxprof

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "cpu_small.xplane.pb.gz"

NEUTRAL_LIMIT = "inflates beyond 1000 bytes (the limit: max_inflate); if the file is genuine, raise the max_inflate limit"
CLI_LIMIT = ("inflates beyond 1000 bytes (the limit: JAXPROF_MAX_INFLATE); if the file is genuine, raise it with "
             "--max-inflate SIZE or JAXPROF_MAX_INFLATE")


def test_python_reads_max_inflate_at_each_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Load, export and diff take JAXPROF_MAX_INFLATE as it is when called, and say "max_inflate"."""
    monkeypatch.setenv("JAXPROF_MAX_INFLATE", "1000")
    with pytest.raises(RuntimeError) as load_err:
        jaxprof.load(FIXTURE)
    assert str(load_err.value).startswith(f"{FIXTURE}: gzip data at byte ")
    assert str(load_err.value).endswith(NEUTRAL_LIMIT)
    with pytest.raises(RuntimeError, match=r"\(the limit: max_inflate\)"):
        jaxprof.export_trace(FIXTURE, tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()
    with pytest.raises(RuntimeError, match=r"\(the limit: max_inflate\)"):
        jaxprof.diff(FIXTURE, FIXTURE)
    monkeypatch.setenv("JAXPROF_MAX_INFLATE", "64M")  # raised in this process: the next load reads it
    assert jaxprof.load(FIXTURE).ops()
    assert jaxprof.export_trace(FIXTURE, tmp_path / "t.json").events_out > 0
    monkeypatch.delenv("JAXPROF_MAX_INFLATE")  # the library's default limit (256 MiB floor)
    assert jaxprof.load(FIXTURE).ops()


@pytest.mark.parametrize("how", ["flag", "env"])
def test_cli_fills_max_inflate_for_every_command(tmp_path: Path, how: str) -> None:
    """The flag and the variable reach report, export, diff and list; the message is the CLI's."""
    run = tmp_path / "logs" / "run1"
    run.mkdir(parents=True)
    shutil.copy(FIXTURE, run / "h.xplane.pb.gz")
    extra = ["--max-inflate", "1000"] if how == "flag" else []
    env = {"JAXPROF_MAX_INFLATE": "1000"} if how == "env" else {}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        for args in (["report", str(FIXTURE)], ["export", str(FIXTURE), "-o", str(tmp_path / "t.json")],
                     ["diff", str(FIXTURE), str(FIXTURE)]):
            proc = run_jaxprof(*args, *extra)
            assert proc.returncode == 2, (args, proc.stderr)
            assert proc.stderr.rstrip("\n").endswith(CLI_LIMIT), (args, proc.stderr)
        listed = run_jaxprof("list", str(tmp_path / "logs"), "--json", *extra)
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)["runs"]
    assert entry["error"] == "h.xplane.pb.gz: gzip data at byte 638 " + NEUTRAL_LIMIT  # JSON: the library's words
    assert not (tmp_path / "t.json").exists()
    assert run_jaxprof("report", str(FIXTURE), "--max-inflate", "64M").returncode == 0


@pytest.mark.parametrize("view, python_says, cli_args, cli_says", [
    (dict(section="ops", sort="nonsense"), "sort: ops has no column 'nonsense' (columns: name,",
     ["ops", "--sort", "nonsense"], "jaxprof: --sort: ops has no column 'nonsense' (columns: name,"),
    (dict(section="ops", sort="self:up"), "sort self:up: the direction is :asc or :desc",
     ["ops", "--sort", "self:up"], "jaxprof: --sort self:up: the direction is :asc or :desc\n"),
    (dict(section="ops", columns="zz"), "columns: ops has no column 'zz'",
     ["ops", "--columns", "zz"], "jaxprof: --columns: ops has no column 'zz'"),
    (dict(section="ops", filter="("), "bad filter regex '('",
     ["ops", "--filter", "("], "jaxprof: bad --filter regex '('\n"),
    (dict(section="report", format="csv"), "CSV needs a table section (ops, steps, ...)",
     ["report", "--csv"], "jaxprof: --csv needs a table command (ops, steps, ...)\n"),
    (dict(section="memory", module="nope"), "module nope: ",
     ["memory", "--module", "nope"], "jaxprof: --module nope: "),
])
def test_messages_name_the_option_as_each_client_sets_it(view: dict, python_says: str, cli_args: list[str],
                                                         cli_says: str) -> None:
    profile = jaxprof.load(FIXTURE)
    with pytest.raises(ValueError) as err:
        profile.render(**view)
    assert str(err.value).startswith(python_says) and "--" not in str(err.value)
    proc = run_jaxprof(*cli_args[:1], str(FIXTURE), *cli_args[1:])
    assert proc.returncode == 2 and proc.stderr.startswith(cli_says), proc.stderr


def test_viewer_reads_runs_with_the_cli_limit(tmp_path: Path, launch_view) -> None:
    """`jaxprof view --max-inflate` reaches the built-in viewer's loads (jp_viewer_set_max_inflate),
    whose JSON errors carry the library's neutral words."""
    from test_view import free_port  # the other viewer tests' helper

    run = tmp_path / "logs" / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    shutil.copy(FIXTURE, run / "h.xplane.pb.gz")
    answers = {}
    for limit in ("1000", "64M"):
        port = free_port()
        launch_view(tmp_path / "logs", "--ui", "builtin", "--port", str(port), "--max-inflate", limit)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            conn.request("GET", "/api/runs")
            (rid,) = [r["id"] for r in json.loads(conn.getresponse().read())]
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("GET", f"/api/run/{rid}/ops")
            resp = conn.getresponse()
            answers[limit] = (resp.status, json.loads(resp.read()))
        finally:
            conn.close()
    status, doc = answers["1000"]
    assert status == 500 and doc["error"].endswith(NEUTRAL_LIMIT), answers["1000"]
    assert "h.xplane.pb.gz: gzip data at byte 638 " in doc["error"]
    status, doc = answers["64M"]
    assert status == 200 and doc["ops"], status
