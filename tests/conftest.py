"""Shared fixtures: the data mirror, a private cache, sandboxes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MIRROR = ROOT.parent / "shared" / "datasets" / "intercode"


def pytest_configure(config: pytest.Config) -> None:
    """Use the shared data mirror unless the environment names another one.

    ``INTERCODE_TEST_SANDBOX=docker`` runs every sandbox the tests make on the docker
    backend instead of bubblewrap (CI runs the adversarial suite a second time so)."""
    if "INTERCODE_DATA_MIRROR" not in os.environ and DEFAULT_MIRROR.is_dir():
        os.environ["INTERCODE_DATA_MIRROR"] = str(DEFAULT_MIRROR)
    if os.environ.get("INTERCODE_TEST_SANDBOX", "bwrap") != "bwrap":
        import intercode.sandbox as sandboxes

        chosen = os.environ["INTERCODE_TEST_SANDBOX"]
        real = sandboxes._backend_class
        sandboxes._backend_class = lambda name: real(chosen if name == "bwrap" else name)


MYPY_TEST = "tests/unit/test_lint.py::test_mypy_is_clean"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With other tests to run, start the mypy check (the slowest test: about 50 s of one
    core, from a clean checkout) in the background now, so that it runs alongside them;
    ``test_mypy_is_clean`` then waits for its result."""
    if len(items) > 1 and any(item.nodeid == MYPY_TEST for item in items):
        import subprocess
        import sys
        import tempfile

        out = tempfile.TemporaryFile()  # noqa: SIM115 (read by test_mypy_is_clean)
        proc = subprocess.Popen([sys.executable, "-m", "mypy"], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)
        config._intercode_mypy = (proc, out)  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    started = getattr(config, "_intercode_mypy", None)
    if started is not None and started[0].poll() is None:
        started[0].kill()
        started[0].wait()


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The data mirror the tests read (tests that need data fail clearly without it)."""
    path = os.environ.get("INTERCODE_DATA_MIRROR")
    if not path or not Path(path).is_dir():
        pytest.fail("INTERCODE_DATA_MIRROR must point at a copy of the InterCode data")
    return Path(path)


@pytest.fixture(scope="session")
def sandbox_factory():
    """Builds started sandboxes of the default backend; closes them at the end."""
    from intercode.sandbox import create_sandbox

    made = []

    def make(**kwargs):
        box = create_sandbox("bwrap", **kwargs)
        box.start()
        made.append(box)
        return box

    yield make
    for box in made:
        box.close()


@pytest.fixture()
def sandbox(sandbox_factory) -> Iterator:
    """A fresh started sandbox with an empty task tree."""
    from intercode.sandbox.filetree import FileTree

    box = sandbox_factory()
    box.load(FileTree.of([]))
    yield box
    box.close()


@pytest.fixture(scope="session")
def mysql_url() -> str:
    """A MySQL-compatible server for the server backend's tests.

    ``scripts/test`` starts a local MariaDB and sets INTERCODE_MYSQL_URL; CI sets
    INTERCODE_REQUIRE_MYSQL=1, so there these tests fail rather than skip.
    """
    url = os.environ.get("INTERCODE_MYSQL_URL")
    if not url:
        if os.environ.get("INTERCODE_REQUIRE_MYSQL"):
            pytest.fail("INTERCODE_MYSQL_URL is not set but INTERCODE_REQUIRE_MYSQL is")
        pytest.skip("no MySQL-compatible server (set INTERCODE_MYSQL_URL; "
                    "scripts/mariadb-start prints one)")
    return url


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium driven by selenium through Debian's chromedriver. Without them
    the tests skip, except where INTERCODE_REQUIRE_BROWSER is set (CI), where they fail."""
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None
    if webdriver is None or not chromium or not driver_path:
        missing = "selenium" if webdriver is None else "chromium and chromedriver"
        if os.environ.get("INTERCODE_REQUIRE_BROWSER"):
            pytest.fail(f"{missing} missing but INTERCODE_REQUIRE_BROWSER is set")
        pytest.skip(f"{missing} not installed (apt-get install chromium chromium-driver)")
    import tempfile

    profile = tempfile.mkdtemp(prefix="intercode-chromium-")
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1400,1000",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.binary_location = chromium
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
