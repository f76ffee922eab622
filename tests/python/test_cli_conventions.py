"""The conventions users try first (issue 18): per-command help, filters that match nothing, findings
with their evidence and fix, --columns / --sort direction / --width on text tables, the run directory
named in every header, and `extract --run` refusing an ambiguous name. All on real JAX CPU captures."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

import jaxprof
from conftest import JAXPROF_BIN, REAL_CAPTURES, SECTIONS, capture_steps, jaxprof_json, read_until_link, run_jaxprof, stop
from jaxprof import _core
from test_view import free_port

C_COMMANDS = SECTIONS + ["export", "diff", "list", "latest", "extract", "view", "version", "help"]
PYTHON_COMMANDS = ["demo", "capture", "calibrate", "run"]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    return capture_steps(tmp_path_factory.mktemp("conventions"))


@pytest.fixture(scope="module")
def run(log_dir) -> Path:
    (run,) = {p.parent for p in log_dir.rglob("*.xplane.pb*")}
    return run


@pytest.mark.parametrize("command", C_COMMANDS + PYTHON_COMMANDS)
def test_every_command_has_help(command):
    flags = [("--help",), ("-h",)] if command not in ("help", "version") else [()]
    outputs = []
    for flag in flags:
        proc = run_jaxprof(command, *flag) if command not in ("help", "version") else run_jaxprof("help", command)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"usage: jaxprof {command}"), proc.stdout[:200]
        outputs.append(proc.stdout)
    assert len(set(outputs)) == 1  # --help and -h print the same
    assert run_jaxprof("help", command).stdout == outputs[0]  # so does `jaxprof help CMD`
    if command in ("ops", "report", "lines"):
        assert "--columns" in outputs[0] and "--device NAME|N" in outputs[0] and "--sort KEY" in outputs[0]


def test_usage_and_the_api_index_list_every_section_of_the_registry(log_dir):
    """jaxprof help and the viewer's /api read the registry: each section once, with its summary."""
    usage = run_jaxprof("help").stdout
    for name, summary, _flags in _core.sections():
        assert f"  {name} [PATH]" in usage and summary in usage, name
    port = free_port()
    proc = subprocess.Popen([str(JAXPROF_BIN), "view", str(log_dir), "--port", str(port), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        read_until_link(proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=30) as r:
            api = json.load(r)["api"]
    finally:
        stop(proc)
    for name, _summary, flags in _core.sections():
        path = "/api/run/<id>/" + ("overview" if name == "report" else name)
        assert sum(e == path or e.startswith(path + "?") for e in api) == 1, name
        assert (path + "?steps=A:B" in api or path + "?steps=A:B&module=" in api) == ("whole_run" not in flags), name


def test_help_for_an_unknown_command_is_exit_2():
    proc = run_jaxprof("help", "nonsense")
    assert proc.returncode == 2 and proc.stderr == "jaxprof: unknown command 'nonsense' (see jaxprof help)\n"
    bad = run_jaxprof("ops", "--bogus")
    assert bad.returncode == 2 and bad.stderr == "jaxprof: bad option '--bogus' (see jaxprof ops --help)\n"


def test_a_filter_that_matches_nothing_names_what_exists(run):
    host = next(run.glob("*.xplane.pb*")).name.split(".xplane.pb")[0]
    for args, message in ((("--device", "5"), "no device matches '5' (devices: /host:CPU (device 0))"),
                          (("--device", "GPU"), "no device matches 'GPU' (devices: /host:CPU (device 0))"),
                          (("--host", "nohost"), f"no host matches 'nohost' (hosts: {host})")):
        for command in ("report", "ops", "findings"):
            proc = run_jaxprof(command, run, *args)
            assert proc.returncode == 2 and proc.stdout == "", (command, args)
            assert proc.stderr == f"jaxprof: {message}\n"
    # device 0 of a CPU profile is its CPU: the same numbers as no filter
    assert jaxprof_json("ops", run, "--device", "0")["ops"] == jaxprof_json("ops", run)["ops"]


# A real JAX GPU (MI300) capture with two findings; a CPU capture's findings depend on its timing.
MI300_CONV = REAL_CAPTURES / "mi300_jax08_conv.xplane.pb.gz"


def test_findings_show_evidence_and_fix_wrapped():
    run = MI300_CONV
    findings = jaxprof_json("findings", run)["findings"]
    # step 0 runs 15x the others (its first execution builds buffer allocations); the typical steps
    # are host-bound and leave the device idle half the time; GPU 0's launch calls take longer than
    # the work they launch (launch_bound, test_launch.py)
    assert [f["id"] for f in findings] == ["slow_step", "host_bound", "launch_bound", "device_idle"]
    for width in (60, 100):
        text = run_jaxprof("findings", run, "--width", str(width)).stdout
        assert text.startswith(f"Findings ({len(findings)})\n")
        # a line runs past the width only when it is one word too long for any line
        assert all(len(line) <= width or len(line.split()) == 1 for line in text.splitlines())
        flat = " ".join(line.strip() for line in text.splitlines())  # undo the wrapping
        for f in findings:
            assert f"[{f['severity']}] {f['title']} ({f['id']})" in flat
            assert f"evidence: {f['evidence']}" in flat and f"fix: {f['fix']}" in flat
    report = run_jaxprof("report", run, "--width", "70").stdout
    tail = report[report.index("\nFindings ("):]
    assert all(len(line) <= 70 or len(line.split()) == 1 for line in tail.splitlines()) and "fix: " in tail


def parse_text_table(text: str) -> tuple[list[str], list[list[str]]]:
    """Splits a text table at runs of two or more spaces (cells never hold two spaces)."""
    rows = [[c for c in line.strip().split("  ") if c] for line in text.splitlines() if line.strip()]
    rows = [[c.strip() for c in r] for r in rows]
    return rows[0], rows[1:]


def test_columns_pick_text_csv_and_json_columns(run):
    ops = jaxprof_json("ops", run)["ops"]
    head, rows = parse_text_table(run_jaxprof("ops", run, "--columns", "name,self,scope,op_name", "--width", "400").stdout)
    assert head == ["op", "self", "scope", "op_name"]
    assert [r[0] for r in rows] == [o["name"] for o in ops]  # the default order: self time, largest first
    assert [r[2:] for r in rows] == [[o["scope"], o["op_name"]] for o in ops]
    table = list(csv.reader(io.StringIO(run_jaxprof("ops", run, "--csv", "--columns", "op_name,count").stdout)))
    assert table[0] == ["op_name", "count"] and table[1:] == [[o["op_name"], str(o["count"])] for o in ops]
    doc = jaxprof_json("ops", run, "--columns", "name,source")
    assert doc["ops"] == [{"name": o["name"], "source": o["source"]} for o in ops]
    for several in ("report", "hosts"):  # tables with different columns: no one list fits them all
        proc = run_jaxprof(several, run, "--columns", "name")
        assert proc.returncode == 2 and "--columns picks the columns of one table" in proc.stderr
    bad = run_jaxprof("ops", run, "--columns", "name,nonsense")
    assert bad.returncode == 2 and "--columns: ops has no column 'nonsense' (columns: name, category," in bad.stderr


def test_sort_direction(run):
    ops = jaxprof_json("ops", run)["ops"]
    up = jaxprof_json("ops", run, "--sort", "self:asc")["ops"]
    assert [o["self_ms"] for o in up] == sorted(o["self_ms"] for o in ops)
    names = [o["name"] for o in jaxprof_json("ops", run, "--sort", "name:desc")["ops"]]
    assert names == sorted(names, reverse=True) and len(names) == len(ops)
    assert run_jaxprof("ops", run, "--sort", "self:sideways").returncode == 2


def test_group_sums_the_ops_as_python_does(run):
    """ops --group KEY is the library's grouping, the rows Python's Profile.ops(group=KEY) gives; the
    other sections refuse it before the profile is read, and a bad key is named."""
    cli = jaxprof_json("ops", run, "--group", "category")["ops"]
    python = [r.to_dict() for r in jaxprof.load(run).ops(group="category")]
    assert cli == json.loads(json.dumps(python))  # (as JSON: a row's stack is a tuple in Python)
    ops = jaxprof_json("ops", run)["ops"]
    assert sorted(r["name"] for r in cli) == sorted({o["category"] for o in ops}) and len(cli) >= 2
    assert sum(r["count"] for r in cli) == sum(o["count"] for o in ops)
    proc = run_jaxprof("steps", run, "--group", "category")
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr == "jaxprof: --group goes only with ops\n"
    bad = run_jaxprof("ops", run, "--group", "x")
    assert bad.returncode == 2 and bad.stderr == "jaxprof: --group 'x': category, module, scope or source\n"


def test_width_widens_text_and_never_cuts_categories(run):
    ops = jaxprof_json("ops", run)["ops"]
    longest = max(len(o["name"]) for o in ops)
    for width in (40, 60, 100, 200):
        text = run_jaxprof("ops", run, "--width", str(width)).stdout
        head, rows = parse_text_table(text)
        assert [r[1] for r in rows] == [o["category"] for o in ops]  # whole at every width
        names = [r[0] for r in rows]
        if max(len(line) for line in text.splitlines()) > width:  # too narrow: names gave all they could
            assert {len(n) for n in names if n.startswith("...")} == {12}
        else:  # names are cut only as far as the width needs
            assert all(n == o["name"] or (n.startswith("...") and o["name"].endswith(n[3:]))
                       for n, o in zip(names, ops))
    _, rows = parse_text_table(run_jaxprof("ops", run, "--width", "200").stdout)
    assert [r[0] for r in rows] == [o["name"] for o in ops] and longest < 120
    wide = run_jaxprof("ops", run, "--columns", "name,scope,op_name,source", "--width", "400").stdout
    _, rows = parse_text_table(wide)
    assert not any("..." in c for r in rows for c in r)  # room for everything: nothing cut
    narrow = run_jaxprof("ops", run, "--columns", "name,scope,op_name,source", "--width", "80").stdout
    assert max(len(line) for line in narrow.splitlines()) <= 80


def test_outputs_name_the_run_read(log_dir, run, tmp_path):
    assert run_jaxprof("report", log_dir).stdout.startswith(f"jaxprof report: {run}\n")
    assert jaxprof_json("ops", log_dir)["path"] == str(run)
    html = tmp_path / "r.html"
    assert run_jaxprof("report", log_dir, "--html", html).returncode == 0
    assert str(run) in html.read_text()
    diff = run_jaxprof("diff", log_dir, log_dir)
    assert diff.stdout.startswith(f"jaxprof diff: {run} → {run}\n")


def test_extract_refuses_an_ambiguous_run(run, tmp_path):
    for parent in ("a", "b"):
        copy = tmp_path / "logs" / parent / "plugins" / "profile" / run.name
        shutil.copytree(run, copy)
    proc = run_jaxprof("extract", tmp_path / "logs", "--run", run.name, "--out", tmp_path / "out")
    assert proc.returncode == 2 and not (tmp_path / "out").exists()
    lines = proc.stderr.splitlines()
    assert lines[0] == f"jaxprof: 2 runs under {tmp_path / 'logs'} match '{run.name}'; name one of them:"
    assert sorted(lines[1:]) == [f"  {tmp_path / 'logs' / p / 'plugins' / 'profile' / run.name}" for p in ("a", "b")]
    one = run_jaxprof("extract", tmp_path / "logs", "--run", f"b/plugins/profile/{run.name}", "--out", tmp_path / "out")
    assert one.returncode == 0 and (tmp_path / "out").is_dir()
    missing = run_jaxprof("extract", tmp_path / "logs", "--run", "1999_01_01")
    assert missing.returncode == 2 and "no run named '1999_01_01'" in missing.stderr


# ---- one option parser, one meaning per flag (issue 32) ------------------------------------------

HELP_OPTION = re.compile(r"^  (?:(-\w), )?(--[\w-]+)(?: (\S+))?", re.M)


@pytest.mark.parametrize("command", C_COMMANDS[:-2])  # not version, help
def test_every_option_in_help_is_one_the_parser_takes(command, run, tmp_path):
    """--help is printed from the table the parser reads: each option listed parses (an unknown one
    would be "bad option"), with its short spelling too."""
    listed = HELP_OPTION.findall(run_jaxprof(command, "--help").stdout)
    assert listed and ("--help" in [name for _, name, _ in listed])
    for short, name, metavar in listed:
        if name == "--help":
            continue
        for flag in filter(None, (short, name)):
            argv = [command, flag] + (["1:2" if "A:B" in metavar else "x"] if metavar else [])
            proc = run_jaxprof(*argv, "--no-such-option-after")
            assert "bad option '" + flag not in proc.stderr and "needs a value" not in proc.stderr, (argv, proc.stderr)


@pytest.mark.parametrize("argv, old, new", [
    (["view", "DIR", "--host", "127.0.0.1", "--ui", "perfetto"], "--host", "--bind"),
    (["extract", "DIR", "-o", "OUT"], "-o", "--out"),
    (["export", "DIR", "--min-duration-us", "50", "-o", "OUT/t.json"], "--min-duration-us", "--min-duration"),
])
def test_old_spellings_work_for_one_release_with_one_line_on_stderr(argv, old, new, log_dir, tmp_path):
    argv = [str(log_dir) if a == "DIR" else a.replace("OUT", str(tmp_path / "out")) for a in argv]
    (tmp_path / "out").mkdir()
    proc = run_jaxprof(*argv)
    first = proc.stderr.splitlines()[0]
    assert first == f"jaxprof: {argv[0]} {old} is deprecated and will be removed: use {new}", proc.stderr
    if argv[0] == "export":
        assert proc.returncode == 0 and (tmp_path / "out" / "t.json").stat().st_size > 0
    if argv[0] == "extract":
        assert proc.returncode == 0 and any((tmp_path / "out").iterdir())
    if argv[0] == "view":  # the old --host still meant the bind address: refused for Perfetto as --bind is
        assert proc.returncode == 2 and "--bind is for --ui builtin only" in proc.stderr


def test_durations_take_units_and_bare_numbers_keep_their_unit(run, tmp_path):
    """export --min-duration 50us, 0.05ms and a bare 50 (the old flag's microseconds) cut the same events."""
    said = []
    for i, value in enumerate(["50us", "0.05ms", "50", "50000ns"]):
        proc = run_jaxprof("export", run, "--min-duration", value, "-o", tmp_path / f"t{i}.json")
        assert proc.returncode == 0, proc.stderr
        said.append(re.search(r"exported (\d+) of (\d+) events", proc.stderr).groups())
    assert len(set(said)) == 1 and int(said[0][0]) < int(said[0][1])
    window = [run_jaxprof("export", run, "--window", w, "-o", tmp_path / "w.json").stderr for w in ("0:5", "0ms:5ms", ":0.005s")]
    assert len({re.search(r"exported \d+ of \d+ events", s).group(0) for s in window}) == 1, window
    bad = run_jaxprof("export", run, "--min-duration", "5 parsecs", "-o", tmp_path / "b.json")
    assert bad.returncode == 2 and bad.stderr.startswith("jaxprof: --min-duration needs a duration: ")


def test_every_command_defaults_to_the_profiles_directory(log_dir, run, tmp_path):
    """report/tables, list, latest, extract and view all look in ./profiles, where run/demo/capture write."""
    cwd = tmp_path / "project"
    shutil.copytree(log_dir, cwd / "profiles")
    here = {"cwd": cwd}
    latest = subprocess.run([str(JAXPROF_BIN), "latest"], capture_output=True, text=True, timeout=120, **here)
    rel = run.relative_to(log_dir)
    assert latest.returncode == 0 and latest.stdout == f"profiles/{rel}\n", latest
    listed = subprocess.run([str(JAXPROF_BIN), "list", "--json"], capture_output=True, text=True, timeout=120, **here)
    assert listed.returncode == 0 and json.loads(listed.stdout)["dir"] == "profiles"
    steps = subprocess.run([str(JAXPROF_BIN), "steps", "--json"], capture_output=True, text=True, timeout=120, **here)
    assert steps.returncode == 0 and json.loads(steps.stdout)["steps"]
    extract = subprocess.run([str(JAXPROF_BIN), "extract"], capture_output=True, text=True, timeout=120, **here)
    assert extract.returncode == 0 and extract.stdout.startswith(f"profiles/{rel}/"), extract
    for command in ("view", "list", "latest", "extract", "ops"):  # and their help says so
        assert "(default ./profiles)" in run_jaxprof(command, "--help").stdout or \
            "default ./profiles." in run_jaxprof(command, "--help").stdout, command
