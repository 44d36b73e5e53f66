"""Agent text in a report is text: actions, outputs, replies, errors and the messages
the model saw can hold HTML and script, and none of it may run or change the page.

A policy's output is hostile, and reports are opened by the people who judge it (and
shared as CI artifacts): a report that ran agent-written script would let an agent
rewrite the numbers its reviewers see.
"""

from __future__ import annotations

import json

from report_helpers import console_errors, open_page, visible_rows
from selenium.webdriver.common.by import By

from intercode.llm.message_ids import message_id
from intercode.report.build import write_report

PAYLOADS = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "</script><script>window.__pwned = 3</script>",
    '"><svg onload="window.__pwned = 4">',
    "<!-- <script>window.__pwned = 5</script>",
    "{data}{script}{style}",  # the page template's own placeholders
    "\u2028\u2029 \x00 \x1b[31m",
]


def _hostile_run(folder):
    text = "\n".join(PAYLOADS)
    messages = {message_id("user", text): {"role": "user", "content": text},
                message_id("system", text): {"role": "system", "content": text}}
    turn = {"action": text, "observation": text, "reward": 0.0, "valid": True,
            "llm": {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 0.1,
                    "reply": text, "thought": text, "prompts": [list(messages)]}}
    records = [
        {"env": "sql", "dataset": "spider-dev", "task": 0, "query": text, "agent": text,
         "status": "ok", "reward": 0.0, "success": False, "turns": [turn], "category": text,
         "reward_info": {text: text}, "known_issue": text, "schema": 2,
         "extra": {"plan": text}},
        {"env": "sql", "dataset": "spider-dev", "task": 1, "query": "q", "agent": "a",
         "status": "error", "reward": None, "success": None, "turns": [turn],
         "error": text, "schema": 2},
    ]
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "messages.jsonl").write_text("".join(
        json.dumps({"id": k, **v}) + "\n" for k, v in messages.items()))
    (folder / "config.json").write_text(json.dumps({"env": "sql", "dataset": text,
                                                    "agent": text, "tasks": [0, 1]}))
    return folder


def test_hostile_text_never_runs_in_the_report(tmp_path, browser):
    run = _hostile_run(tmp_path / "<img src=x onerror=window.__pwned=9>")
    page = write_report([str(run)], tmp_path / "r.html")
    html = page.read_text()
    assert "<script>window.__pwned" not in html  # escaped or packed, never raw
    open_page(browser, page)
    assert browser.execute_script("return window.__pwned") is None
    assert browser.execute_script("return document.body.dataset.ready") == "1"
    assert visible_rows(browser) == 2
    for fragment in ("#t/0/0", "#t/0/1", "#t/0/<script>", "#t/9/9"):
        open_page(browser, page, fragment)
        assert browser.execute_script("return window.__pwned") is None
    open_page(browser, page, "#t/0/0")
    shown = browser.find_element(By.ID, "transcript").text
    assert PAYLOADS[0] in shown and PAYLOADS[2] in shown  # shown literally, as text
    assert browser.execute_script("return document.querySelectorAll('#transcript img, "
                                  "#transcript svg, #transcript script').length") == 0
    assert browser.execute_script("return window.__pwned") is None
    assert console_errors(browser) == []
