"""Capture health (issue 33 item 4): the XSpace's own errors and warnings (fields 2 and 3) at the top
of the report, in every JSON document and as a finding. The truth is read from the file's bytes by
the tiny protobuf reader below, never through jaxprof."""
from __future__ import annotations

import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxprof

from conftest import jaxprof_json, only_xplane, profile_steps, run_jaxprof


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if byte < 0x80:
            return value, at


def raw_notes(data: bytes) -> tuple[list[str], list[str]]:
    """The XSpace's top-level errors (field 2) and warnings (field 3), in file order."""
    errors, warnings, at = [], [], 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        else:
            assert wire == 2, wire
            length, at = _varint(data, at)
            if number in (2, 3):
                (errors if number == 2 else warnings).append(data[at:at + length].decode())
            at += length
    return errors, warnings


def _string_field(number: int, text: str) -> bytes:
    body = text.encode()
    assert len(body) < 128
    return bytes([number << 3 | 2, len(body)]) + body


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    """A real capture of three steps on XLA:CPU."""
    log_dir = tmp_path_factory.mktemp("health")
    f = jax.jit(lambda x: jnp.tanh(x @ x))
    x = jnp.ones((128, 128)) * 0.01
    f(x).block_until_ready()
    return only_xplane(profile_steps(log_dir, lambda i: f(x).block_until_ready(), 3))


def test_a_real_capture_without_errors_has_an_empty_health_list(capture):
    errors, warnings = raw_notes(capture.read_bytes())
    assert errors == [] and warnings == []
    report = jaxprof_json("report", capture)
    assert report["capture_health"] == [] and jaxprof.load(capture).capture_health() == []
    assert "capture_health" not in {f["id"] for f in report["findings"]}
    for command in ("ops", "steps", "findings"):  # every section document carries the list
        assert jaxprof_json(command, capture)["capture_health"] == []
    assert "capture health:" not in run_jaxprof("report", capture).stdout


def test_the_profilers_own_errors_and_warnings_are_shown(capture, tmp_path):
    """Repeated fields appended to a serialized message are part of it (protobuf merges them): the
    same capture with two errors and a warning, as a profiler whose CUPTI buffer ran full writes them."""
    path = tmp_path / "host.xplane.pb"
    shutil.copy(capture, path)
    with path.open("ab") as out:
        out.write(_string_field(2, "CUPTI buffer full: 3 events dropped"))
        out.write(_string_field(3, "GPU events dropped"))
        out.write(_string_field(2, "device tracer failed to start"))
    errors, warnings = raw_notes(path.read_bytes())
    assert errors == ["CUPTI buffer full: 3 events dropped", "device tracer failed to start"]
    assert warnings == ["GPU events dropped"]
    jax.profiler.ProfileData.from_file(str(path))  # still a valid XSpace to JAX itself
    want = [{"kind": "error", "host": "host", "text": errors[0]}, {"kind": "error", "host": "host", "text": errors[1]},
            {"kind": "warning", "host": "host", "text": warnings[0]}]
    report = jaxprof_json("report", path)
    assert report["capture_health"] == want
    assert jaxprof_json("ops", path)["capture_health"] == want
    assert jaxprof.load(path).capture_health() == want
    (finding,) = [f for f in report["findings"] if f["id"] == "capture_health"]
    assert finding["severity"] == "bad"
    assert all(f'"{text}"' in finding["evidence"] for text in errors + warnings)
    assert "gpu_max_activity_api_events" in finding["fix"]
    lines = run_jaxprof("report", path).stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("capture health:"))
    assert first <= 3  # right under the header (title, platform line, device idle line)
    assert lines[first:first + 3] == [f"capture health: error (host): {errors[0]}",
                                      f"capture health: error (host): {errors[1]}",
                                      f"capture health: warning (host): {warnings[0]}"]


def test_a_truncated_error_field_is_an_offset_error(capture, tmp_path):
    path = tmp_path / "cut.xplane.pb"
    data = capture.read_bytes()
    path.write_bytes(data + bytes([2 << 3 | 2, 40]) + b"only ten b")
    proc = run_jaxprof("report", path)
    assert proc.returncode != 0
    assert f"truncated XSpace at byte {len(data)}: field 2 claims 40 bytes, 10 remain" in proc.stderr


def test_the_viewers_overview_shows_the_health_banner(capture, tmp_path):
    """The Overview heads its page with the capture's health: each item's kind, host and text."""
    from selenium.webdriver.common.by import By

    from conftest import headless_chromium
    from test_viewer_browser import serve_dir, wait_for

    run = tmp_path / "log" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    data = capture.read_bytes() + _string_field(2, "CUPTI buffer full") + _string_field(3, "GPU events dropped")
    (run / "host.xplane.pb").write_bytes(data)
    for url in serve_dir(tmp_path / "log"):
        for browser in headless_chromium():
            browser.get(url + "#/overview")
            banner = wait_for(browser, "#capture-health", "Capture health")
            items = [li.text for li in banner.find_elements(By.TAG_NAME, "li")]
            assert items == ["error (host): CUPTI buffer full", "warning (host): GPU events dropped"]
            assert "bad" in banner.get_attribute("class").split()
            # above the devices line, right under the run's facts
            assert browser.execute_script(
                "const b = document.getElementById('capture-health');"
                "return b.previousElementSibling.textContent.startsWith('platform ')")


def test_the_html_report_heads_with_the_health(capture, tmp_path):
    """report --html: the capture's health is the page's first section, above the overview, each
    item's kind, host and text as the file's own fields say (errors bad, warnings warning); a
    complete capture has no such section."""
    import html.parser

    path = tmp_path / "host.xplane.pb"
    path.write_bytes(capture.read_bytes() + _string_field(2, "CUPTI buffer full: <3> events & more")
                     + _string_field(3, "GPU events dropped"))
    errors, warnings = raw_notes(path.read_bytes())

    class Sections(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.ids, self.items, self.li = [], [], None

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "section":
                self.ids.append(a.get("id"))
            elif tag == "li" and self.ids == ["capture-health"]:
                self.li = [a.get("class"), ""]

        def handle_endtag(self, tag):
            if tag == "li" and self.li:
                self.items.append(tuple(self.li))
                self.li = None

        def handle_data(self, data):
            if self.li:
                self.li[1] += data

    for target, want in ((path, [("bad", f"error (host): {errors[0]}"), ("warning", f"warning (host): {warnings[0]}")]),
                         (capture, [])):
        out = tmp_path / f"{target.stem}.html"
        proc = run_jaxprof("report", target, "--html", out)
        assert proc.returncode == 0, proc.stderr
        page = Sections()
        page.feed(out.read_text())
        assert page.items == want
        assert page.ids[:2] == (["capture-health", "overview"] if want else ["overview", page.ids[1]])
