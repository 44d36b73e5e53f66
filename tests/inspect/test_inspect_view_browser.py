"""An exported run opened in Inspect's own viewer (``inspect view``) in headless Chromium.

The run is real (``--agent tools`` against the scripted Chat Completions server); the
page is read as text, never as pixels: the log's header has a duration (not "NaN"), and a
sample's transcript shows its model calls and tool calls. Screenshots are saved in the
test's temporary folder.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys

import pytest
from report_helpers import spider_run
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from intercode.cli import main


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    """``inspect view`` serving a folder with the export of a tools run; its address."""
    base = tmp_path_factory.mktemp("view")
    spider_run(base / "run", agent="tools", wander=0, detour=2, tasks=(0, 1, 2))
    logs = base / "logs"
    logs.mkdir()
    assert main(["export", "inspect", str(base / "run"), "-o", str(logs / "tools.eval")]) == 0
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "inspect_ai", "view", "--log-dir",
                               str(logs), "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until it listens (or it died)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    server.wait(0.2)
                assert server.returncode is None, "inspect view exited"
        yield f"http://127.0.0.1:{port}/#/tasks/tools.eval"
    finally:
        server.terminate()
        server.wait()


def _text_until(browser, predicate) -> str:
    """The page's text once ``predicate`` holds for it (the viewer draws asynchronously)."""
    WebDriverWait(browser, 60).until(
        lambda d: predicate(d.find_element(By.TAG_NAME, "body").text))
    return str(browser.find_element(By.TAG_NAME, "body").text)


def test_the_header_shows_a_duration_not_nan(viewer, browser, tmp_path):
    browser.get(viewer)
    text = _text_until(browser, lambda t: "DURATION" in t and "SAMPLES" in t)
    browser.save_screenshot(str(tmp_path / "log.png"))
    assert "NaN" not in text
    duration = text.split("DURATION", 1)[1].split("\n")[1]
    assert duration.endswith("sec"), duration
    # the samples' list shows the gold as target and the tokens of each sample
    assert "SELECT T1.Name FROM people" in text


def test_the_transcript_shows_model_and_tool_events(viewer, browser, tmp_path):
    browser.get(viewer + "/samples/sample/1/1/transcript")
    text = _text_until(browser, lambda t: "TOOL: EXECUTE" in t or "size limit" in t)
    browser.save_screenshot(str(tmp_path / "transcript.png"))
    assert "exceeds the browser's size limit" not in text
    assert "MODEL CALL: SCRIPTED" in text
    assert "TOOL: EXECUTE" in text and "TOOL: SUBMIT" in text
    # a tool call, not a text that describes one
    assert "[tool call" not in text
