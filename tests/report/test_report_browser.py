"""Reports opened in headless Chromium: a whole Spider run and a two-run comparison.

The runs are real (Try Again and single-turn against the scripted Chat Completions
server on all 1034 Spider tasks); the pages are checked for console errors, their
episode rows, a working filter and a transcript; a screenshot of each is saved in the
test's temporary folder.
"""

from __future__ import annotations

import json

import pytest
from report_helpers import console_errors, open_page, records, spider_run, visible_rows
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from intercode.cli import main
from intercode.report.runs import load_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    spider_run(base / "try-again", wander=4)
    spider_run(base / "single-turn", agent="single-turn", turns=1, wander=0)
    return base / "try-again", base / "single-turn"


def test_a_whole_spider_run(runs, browser, tmp_path, capsys):
    run, _ = runs
    recs = records(run)
    assert len(recs) == 1034 and max(len(r["turns"]) for r in recs.values()) >= 5
    assert main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 0
    assert capsys.readouterr().out.strip().endswith("r.html")
    open_page(browser, tmp_path / "r.html")
    assert browser.execute_script("return document.body.dataset.ready") == "1"
    assert console_errors(browser) == []
    assert visible_rows(browser) == 1034
    assert browser.find_element(By.ID, "f-count").text == "1034 of 1034 episodes"
    browser.save_screenshot(str(tmp_path / "report.png"))
    assert (tmp_path / "report.png").stat().st_size > 10_000
    # the headline and the plots are there
    headline = browser.find_element(By.CSS_SELECTOR, "table.headline").text
    solved = sum(1 for r in recs.values() if r["success"])
    assert f"({solved}/1034)" in headline
    assert len(browser.find_elements(By.CSS_SELECTOR, "figure.plot svg")) == 4

    # filters: not solved, then a category, then text
    Select(browser.find_element(By.ID, "f-success")).select_by_value("0")
    assert visible_rows(browser) == 1034 - solved
    Select(browser.find_element(By.ID, "f-success")).select_by_value("")
    Select(browser.find_element(By.ID, "f-category")).select_by_value("hard")
    assert visible_rows(browser) == sum(1 for r in recs.values() if r["category"] == "hard")
    Select(browser.find_element(By.ID, "f-category")).select_by_value("")
    query = recs[17]["query"]
    box = browser.find_element(By.ID, "f-text")
    box.send_keys(query)
    browser.implicitly_wait(0)
    import time

    deadline = time.monotonic() + 10
    while visible_rows(browser) == 1034 and time.monotonic() < deadline:
        time.sleep(0.05)
    same = sum(1 for r in recs.values() if query.lower() in r["query"].lower())
    assert visible_rows(browser) == same >= 1

    # a transcript: click the row of task 9 (it looked around four times)
    box.clear()
    browser.execute_script("document.getElementById('f-text').dispatchEvent(new Event('input'))")
    deadline = time.monotonic() + 10
    while visible_rows(browser) != 1034 and time.monotonic() < deadline:
        time.sleep(0.05)
    row = browser.find_element(By.CSS_SELECTOR, "#episode-table tr[data-key='0/9']")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.click()
    view = browser.find_element(By.ID, "transcript")
    assert view.is_displayed() and not browser.find_element(By.ID, "overview").is_displayed()
    turns = view.find_elements(By.CSS_SELECTOR, ".turn")
    assert len(turns) == len(recs[9]["turns"])
    actions = [t.find_element(By.CSS_SELECTOR, "pre.action").text for t in turns]
    assert actions == [t["action"] for t in recs[9]["turns"]]
    outputs = [t.find_element(By.CSS_SELECTOR, "pre.output").text for t in turns]
    assert outputs[0] == recs[9]["turns"][0]["observation"].strip()
    # what the model saw: the system prompt and the query, in full, in the first turn
    loaded = load_run(run)
    first = turns[0].text
    for message in loaded.messages.values():
        if message["role"] == "system" and message["content"].startswith("You answer"):
            assert message["content"].splitlines()[0] in first
    assert recs[9]["query"] in first
    browser.save_screenshot(str(tmp_path / "transcript.png"))
    browser.back()
    assert browser.find_element(By.ID, "overview").is_displayed()
    assert console_errors(browser) == []


def test_two_runs_side_by_side(runs, browser, tmp_path):
    a, b = runs
    out = tmp_path / "two.html"
    assert main(["report", str(a), str(b), "-o", str(out)]) == 0
    open_page(browser, out)
    assert console_errors(browser) == []
    assert visible_rows(browser) == 2 * 1034
    heads = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "table.headline thead th")]
    assert heads[1:] == ["try-again", "single-turn"]
    # the paired comparison: single-turn (B) against try-again (A)
    ra, rb = records(a), records(b)
    losses = sorted(t for t in ra if ra[t]["success"] and not rb[t]["success"])
    wins = sorted(t for t in ra if rb[t]["success"] and not ra[t]["success"])
    rows = browser.find_elements(By.CSS_SELECTOR, "table.compare tbody tr")
    first = [c.text for c in rows[0].find_elements(By.CSS_SELECTOR, "th, td")]
    assert first[:2] == ["all", "1034"]
    assert first[6].startswith(f"{len(wins)} / {len(losses)} / ")
    assert len(rows) == 1 + len({r["category"] for r in ra.values()})
    link = browser.find_element(By.CSS_SELECTOR, f"table.compare + p a[href='#t/1/{losses[0]}']")
    assert link.text == str(losses[0])
    Select(browser.find_element(By.ID, "f-run")).select_by_value("1")
    assert visible_rows(browser) == 1034
    Select(browser.find_element(By.ID, "f-status")).select_by_value("error")
    assert visible_rows(browser) == 0
    browser.save_screenshot(str(tmp_path / "two.png"))
    # an episode of the second run, straight from its address
    open_page(browser, out, "#t/1/3")
    turns = browser.find_elements(By.CSS_SELECTOR, "#transcript .turn")
    assert len(turns) == len(records(b)[3]["turns"]) == 1
    assert console_errors(browser) == []


def test_the_papers_recorded_run(mirror, browser, tmp_path):
    source = mirror / "results" / "sql" / "gpt-3.5" / "ic_sql_multiturn_gpt-3.5_10_turns.json"
    out = tmp_path / "upstream.html"
    assert main(["report", str(source), "-o", str(out)]) == 0
    open_page(browser, out)
    assert console_errors(browser) == []
    assert visible_rows(browser) == 1034
    headline = browser.find_element(By.CSS_SELECTOR, "table.headline").text
    assert "47.3% (489/1034)" in headline  # the paper's GPT-3.5 figure for Spider, 10 turns
    open_page(browser, out, "#t/0/0")
    text = browser.find_element(By.ID, "transcript").text
    assert "did not record the prompts" in text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#transcript .turn")) == 10


def test_search_finds_outputs_and_rewards_have_no_float_noise(browser, tmp_path):
    """The search box looks in the turns' outputs too; a reward shows as at most four
    significant digits (0.6900000000000001 is 0.69) in the table and the transcript."""

    def record(task, reward, output):
        return {"env": "sql", "dataset": "spider-dev", "task": task, "source": "s",
                "source_index": task, "query": f"q{task}", "agent": "gold", "status": "ok",
                "reward": reward, "success": False, "category": "easy", "schema": 2,
                "reward_info": {"reward_parts": {"iou": reward, "kendall_tau": 1.0}},
                "turns": [{"action": "SELECT 1", "observation": output, "reward": reward}]}

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        record(0, 0.6900000000000001, "[('needle-in-the-output',)]"),
        record(1, 0.5, "[(1,)]"))))
    assert main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 0
    open_page(browser, tmp_path / "r.html")
    table = browser.find_element(By.ID, "episode-table").text
    assert "0.69" in table and "0.6900000000000001" not in table
    box = browser.find_element(By.ID, "f-text")
    box.send_keys("needle-in-the-output")
    WebDriverWait(browser, 30).until(lambda d: visible_rows(d) == 1)
    browser.get(browser.current_url.split("#")[0] + "#t/0/0")
    text = browser.find_element(By.ID, "transcript").text
    assert "reward 0.69" in text and "0.6900000000000001" not in text
    assert console_errors(browser) == []
