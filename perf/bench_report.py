"""How fast ``intercode report`` is on a whole Spider run, and how big its file is.

Makes a real run first (Try Again against the scripted Chat Completions server, the
gold after nine commands that look around, so 1034 episodes x 10 turns), unless
``--run`` names one, then times the report and, with ``--browser``, the first paint of
the page in headless Chromium (needs chromium and chromedriver, and selenium).

    python perf/bench_report.py [--run FOLDER] [--keep FOLDER] [--browser]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path


def make_run(folder: Path, turns: int) -> None:
    from intercode.datasets import load_dataset
    from intercode.llm.client import ModelConfig
    from intercode.llm.gold_responder import GoldResponder
    from intercode.llm.scripted_server import ScriptedChatServer
    from intercode.runner.run import RunConfig, execute

    responder = GoldResponder(load_dataset("spider-dev"), detour=0, wander=turns - 1,
                              spread=False)
    with ScriptedChatServer(responder) as server:
        started = time.perf_counter()
        execute(RunConfig(env="sql", dataset="spider-dev", agent="try-again", output=folder,
                          workers=2, max_turns=turns,
                          model=ModelConfig("scripted", base_url=server.url, retries=1,
                                            backoff=0.0)), progress=False)
    print(f"run: {time.perf_counter() - started:.1f} s -> {folder}")


def first_paint(page: Path) -> float:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(page.resolve().as_uri())
        WebDriverWait(driver, 60).until(
            lambda d: d.execute_script("return document.body.dataset.ready") is not None)
        timing = driver.execute_script(
            "const p = performance.getEntriesByType('paint').find(e => "
            "e.name === 'first-contentful-paint'); const n = performance.getEntriesByType"
            "('navigation')[0]; return [p ? p.startTime : null, performance.now(), "
            "n ? n.domContentLoadedEventEnd : null]")
        ready_ms = driver.execute_script("return performance.now()")
        print(f"first contentful paint {timing[0]:.0f} ms, DOMContentLoaded {timing[2]:.0f} ms,"
              f" table drawn by {ready_ms:.0f} ms")
        return float(timing[0])
    finally:
        driver.quit()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", type=Path, help="an existing run folder to report")
    parser.add_argument("--keep", type=Path, help="make the run here (kept)")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--browser", action="store_true")
    args = parser.parse_args()
    from intercode.report.build import write_report

    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = args.keep or Path(tmp) / "run"
            make_run(run, args.turns)
        out = Path(tmp) / "report.html"
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            write_report([str(run)], out)
            times.append(time.perf_counter() - started)
        size = out.stat().st_size
        print(f"report: {min(times):.2f} s best of {args.repeat} (all: "
              f"{', '.join(f'{t:.2f}' for t in times)}); file {size / 1e6:.2f} MB")
        if args.browser:
            first_paint(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
