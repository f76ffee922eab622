"""Memory at the peak in the built-in viewer (a real headless Chromium through Selenium) and in Python
(`jaxprof.load(...).memory_buffers()`), on a real JAX CPU capture whose step makes one 64 MiB
intermediate on a known line, and on a real MI300 capture by others. The numbers the page shows are
checked against `jaxprof memory --json`; screenshots go to $JAXPROF_ARTIFACTS."""
from __future__ import annotations

import inspect
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Iterator

import jax
import jax.numpy as jnp
import pytest
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

import jaxprof
from conftest import headless_chromium, jaxprof_json
from test_viewer_browser import ARTIFACTS, REAL, serve_dir, table_rows, wait_for
from test_viewer_pages import get

BIG_BYTES = 4096 * 4096 * 4  # f32[4096,4096]
MI300 = REAL / "mi300_jax08_conv.xplane.pb.gz"


def page_big_step(a: jax.Array, b: jax.Array) -> jax.Array:
    # Named and shaped apart from test_memory_buffers.py's big_step: a capture's metadata holds
    # every module the process has compiled, and runs are counted by module name, so a jit_big_step
    # compiled there would count as run here too (see docs/design.md "Memory at the peak").
    big = jnp.dot(a, b)  # BIG_LINE: the 64 MiB intermediate
    s = jnp.sin(big) * jnp.cos(big)  # uses big twice, so XLA must keep it in memory
    return s.sum(axis=0) * big[0]


def small_step(x: jax.Array) -> jax.Array:
    """A second module in the capture, with a smaller peak."""
    return jnp.tanh(x @ x.T).sum(axis=1)


BIG_LINE = next(i for i, text in enumerate(inspect.getsource(page_big_step).splitlines()) if "# BIG_LINE" in text) \
    + inspect.getsourcelines(page_big_step)[1]
BIG_SOURCE = f"{Path(__file__).name}:{BIG_LINE}"


@pytest.fixture(scope="module")
def cpu_dir(tmp_path_factory) -> Path:
    """A real CPU capture of two runs of the jitted page_big_step."""
    log_dir = tmp_path_factory.mktemp("viewer_memory")
    a, b = jnp.ones((4096, 128), jnp.float32), jnp.ones((128, 4096), jnp.float32)
    x = jnp.ones((512, 64), jnp.float32)
    f, g = jax.jit(page_big_step), jax.jit(small_step)
    f(a, b).block_until_ready()  # compile outside the capture
    g(x).block_until_ready()
    with jax.profiler.trace(str(log_dir)):
        for _ in range(2):
            f(a, b).block_until_ready()
            g(x).block_until_ready()
    return log_dir


@pytest.fixture(scope="module")
def cpu_server(cpu_dir) -> Iterator[str]:
    yield from serve_dir(cpu_dir)


@pytest.fixture(scope="module")
def mi300_server(tmp_path_factory) -> Iterator[str]:
    """The real MI300 capture (a 3-D convolution) as a run of its own."""
    run = tmp_path_factory.mktemp("viewer_memory_mi300") / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    (run / "host.xplane.pb.gz").write_bytes(MI300.read_bytes())
    yield from serve_dir(run.parents[2])


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    yield from headless_chromium("1400,1000", page=(1400, 1000))


def shot(driver: webdriver.Chrome, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"memory_{name}.png"
    driver.save_screenshot(str(path))
    return path


def mib_text(v: int) -> str:
    """The page's memBytes(): the largest unit at most v, up to two decimals, zeros dropped."""
    for name, unit in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if v >= unit:
            return f"{round(v / unit, 2):g} {name}"
    return f"{v} B"


def open_memory(driver: webdriver.Chrome, url: str) -> None:
    driver.get("about:blank")
    driver.get(url + "#/memory")
    wait_for(driver, "#mem-live-title")


def click_point(driver: webdriver.Chrome, point: int, n_points: int) -> None:
    """Clicks the chart at timeline point `point` of n_points (the middle of its column)."""
    hit = driver.find_element(By.ID, "mem-hit")
    width = hit.rect["width"]
    ActionChains(driver).move_to_element_with_offset(hit, int(-width / 2 + width * (point + 0.5) / n_points), 0).click().perform()


def buffer_rows(driver: webdriver.Chrome) -> list[dict[str, str]]:
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#mem-buffers th")]
    return [dict(zip(heads, cells)) for cells in table_rows(driver, "mem-buffers")]


def check_page(driver: webdriver.Chrome, url: str, doc: dict) -> dict:
    """The picker lists the modules that ran, largest peak first, and the page's headline peak is
    the CLI's. Returns the first module's detail from the API."""
    open_memory(driver, url)
    modules = doc["modules"]
    options = Select(driver.find_element(By.ID, "mem-module")).options
    assert [o.get_attribute("value") for o in options] == [m["name"] for m in modules]
    assert mib_text(modules[0]["peak_bytes"]) in options[0].text
    summary = driver.find_element(By.ID, "mem-summary").text
    assert f"{modules[0]['peak_bytes']:,} bytes" in summary
    run = driver.execute_script("return state.run")
    status, detail = get(url + f"api/run/{run}/memory?module={urllib.request.quote(modules[0]['name'])}")
    assert status == 200 and len(detail["modules"]) == 1
    return detail["modules"][0]


# ---- the page on the 64 MiB CPU capture ----------------------------------------------------------

def test_cpu_peak_lists_the_64_mib_buffer_and_its_line(cpu_dir, cpu_server, browser):
    doc = jaxprof_json("memory", cpu_dir)
    top = doc["modules"][0]
    assert top["name"].startswith("jit_page_big_step(") and top["peak_bytes"] >= BIG_BYTES
    m = check_page(browser, cpu_server, doc)
    assert m["peak_bytes"] == top["peak_bytes"] and len(m["timeline"]) >= 2
    # The peak is marked where the timeline peaks; the page opens on it.
    peak_point = m["peak_index"] + 1
    assert m["timeline"][peak_point]["bytes"] == m["peak_bytes"] == max(p["bytes"] for p in m["timeline"])
    assert "at the peak" in driver_text(browser, "#mem-live-title")
    # Before the first heap event only the always-live buffers are: the 64 MiB one is not.
    click_point(browser, 0, len(m["timeline"]))
    wait_for(browser, "#mem-live-title", "at point 0")
    assert m["timeline"][0]["bytes"] == m["always_live_bytes"]  # nothing on the heap yet
    assert driver_text(browser, "#mem-live-title").startswith(f"{mib_text(m['always_live_bytes'])} live at point 0")
    assert not [r for r in buffer_rows(browser) if r["bytes"] == f"{BIG_BYTES:,}"]
    shot(browser, "cpu_point0")
    # Clicking the peak lists the 64 MiB buffer with its shape and line.
    browser.find_element(By.CSS_SELECTOR, "#mem-peak circle").click()
    wait_for(browser, "#mem-live-title", "at the peak")
    rows = buffer_rows(browser)
    big = [r for r in rows if r["bytes"] == f"{BIG_BYTES:,}" and r["source"] == BIG_SOURCE]
    assert len(big) == 1, rows
    assert big[0]["shape"] == "f32[4096,4096]" and big[0]["kind"] == "temporary"
    assert len(rows) == len(m["buffers"])
    assert sum(int(r["bytes"].replace(",", "")) for r in rows) == sum(b["bytes"] for b in m["buffers"])
    shot(browser, "cpu_peak")
    # Clicking it shows its instruction, op_name, line and stack, and its life on the chart.
    want = next(b for b in m["buffers"] if b["bytes"] == BIG_BYTES and b["source"].endswith(BIG_SOURCE))
    browser.find_elements(By.CSS_SELECTOR, "#mem-buffers tr[data-buffer]")[rows.index(big[0])].click()
    wait_for(browser, "#mem-b-name", want["instruction"])
    assert BIG_SOURCE in driver_text(browser, "#mem-b-source")
    assert driver_text(browser, "#mem-b-opcode") == want["opcode"] != ""
    assert driver_text(browser, "#mem-b-op-name") == want["op_name"] and "dot_general" in want["op_name"]
    assert f"{Path(__file__).name}:{BIG_LINE}" in driver_text(browser, "#mem-b-stack")
    life = browser.find_element(By.CSS_SELECTOR, "#mem-span rect.mem-life")
    assert float(life.get_attribute("width")) > 0
    assert f"heap event {want['start']}" in driver_text(browser, "#mem-b-life")
    # The allocator part on CPU is one line under the buffers, not a page-wide notice.
    assert "XLA:CPU records no allocator events" in driver_text(browser, "#memory-none")
    assert not browser.find_elements(By.ID, "memory-chart")
    shot(browser, "cpu_buffer")
    # The second module from the picker: its own headline, kept in the URL over a reload.
    small = doc["modules"][1]
    assert small["name"].startswith("jit_small_step(") and small["peak_bytes"] < top["peak_bytes"]
    Select(browser.find_element(By.ID, "mem-module")).select_by_value(small["name"])
    wait_for(browser, "#mem-summary", f"{small['peak_bytes']:,} bytes")
    url = browser.current_url
    assert urllib.parse.parse_qs(url.split("?", 1)[1])["module"] == [small["name"]]
    browser.get("about:blank")
    browser.get(url)
    wait_for(browser, "#mem-summary", f"{small['peak_bytes']:,} bytes")
    assert Select(browser.find_element(By.ID, "mem-module")).first_selected_option.get_attribute("value") == small["name"]
    shot(browser, "cpu_second_module")


def driver_text(driver: webdriver.Chrome, css: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, css).text


# ---- the page on a real MI300 capture -------------------------------------------------------------

def test_mi300_conv_peak_and_its_largest_buffer(mi300_server, browser):
    doc = jaxprof_json("memory", MI300)
    top = doc["modules"][0]
    # XProf 2.24.2's memory viewer on this capture: 1,158,144,000 bytes at heap event 2, the largest
    # buffer input_transpose_fusion (an output) of 572,026,880 bytes.
    assert top["name"] == "jit_forward_3d_conv(15)" and top["peak_bytes"] == 1158144000 and top["peak_index"] == 2
    m = check_page(browser, mi300_server, doc)
    click_point(browser, 0, len(m["timeline"]))
    wait_for(browser, "#mem-live-title", "at point 0")
    browser.find_element(By.CSS_SELECTOR, "#mem-peak circle").click()
    wait_for(browser, "#mem-live-title", "at the peak")
    rows = buffer_rows(browser)
    assert rows[0]["bytes"] == "572,026,880" and rows[0]["instruction"].replace("\n", "") == "input_transpose_fusion"
    assert rows[0]["kind"] == "output"
    browser.find_elements(By.CSS_SELECTOR, "#mem-buffers tr[data-buffer]")[0].click()
    wait_for(browser, "#mem-b-name", "input_transpose_fusion")
    assert driver_text(browser, "#mem-b-opcode") == m["buffers"][0]["opcode"] == "fusion"
    shot(browser, "mi300")


# ---- the API -------------------------------------------------------------------------------------

def test_api_module_parameter(cpu_server):
    url = cpu_server
    run = get(url + "api/runs")[1][0]["id"]
    listed = get(url + f"api/run/{run}/memory")[1]["modules"]
    assert all("timeline" not in m for m in listed)
    status, one = get(url + f"api/run/{run}/memory?module={urllib.request.quote(listed[0]['name'])}")
    assert status == 200 and [m["name"] for m in one["modules"]] == [listed[0]["name"]]
    m = one["modules"][0]
    assert m["timeline"][m["peak_index"] + 1]["bytes"] == m["peak_bytes"] and m["timeline"][-1]["instruction"] == ""
    status, err = get(url + f"api/run/{run}/memory?module=no_such_module")
    assert status in (400, 404) and "no_such_module" in err["error"]
    assert get(url + f"api/run/{run}/ops?module=x")[0] == 400


# ---- Python ------------------------------------------------------------------------------------------

def test_python_memory_buffers(cpu_dir):
    p = jaxprof.load(cpu_dir)
    doc = jaxprof_json("memory", cpu_dir)
    modules = p.memory_modules()
    assert [m.name for m in modules] == [m["name"] for m in doc["modules"]]
    top = modules[0]
    assert top.peak_bytes == doc["modules"][0]["peak_bytes"] and top.runs == 2
    # every module that ran, module by module; then one module in detail: every buffer at its peak
    every = p.memory_buffers()
    assert {b.module for b in every} == {m.name for m in modules}
    mine = p.memory_buffers(top.name)
    assert all(b.module == top.name for b in mine) and [b.bytes for b in mine] == sorted((b.bytes for b in mine), reverse=True)
    big = [b for b in mine if b.bytes == BIG_BYTES and b.source.endswith(BIG_SOURCE)]
    assert len(big) == 1, [(b.bytes, b.source) for b in mine]
    b = big[0]
    assert b.kind == "temporary" and b.shape == "f32[4096,4096]" and "dot_general" in b.op_name and b.function == "page_big_step"
    assert b.stack[0].line == BIG_LINE and b.stack[0].file.endswith(Path(__file__).name) and not b.stack[0].library
    assert 0 <= b.start <= b.end
    # here every always-live allocation holds one buffer, so the rows at the peak add up to it
    assert sum(x.bytes for x in mine) == top.peak_bytes
    assert p.memory_buffers("jit_page_big_step") == mine  # the plain module name works too
    with pytest.raises(ValueError):
        p.memory_buffers("no_such_module")


def test_python_memory_buffers_lists_every_buffer_of_every_module():
    """TransformerEngine's loss: 12 buffers at its peak (more than the CLI's 10 per module)."""
    p = jaxprof.load(REAL / "te_fused_attn_934987a2fc2f.xplane.pb.gz")
    every = p.memory_buffers()
    top = p.memory_modules()[0]
    # XProf 2.24.2's memory viewer: peak 520,618,120 bytes, the largest row gemm_fusion_dot.3 (201,326,592)
    assert top.name == "jit_loss_fn(17)" and top.peak_bytes == 520618120
    mine = p.memory_buffers(top.name)
    assert len(mine) == 12 and mine[0].instruction == "gemm_fusion_dot.3" and mine[0].bytes == 201326592
    assert [b for b in every if b.module == top.name] == mine
    assert {b.module for b in every} == {m.name for m in p.memory_modules()}
