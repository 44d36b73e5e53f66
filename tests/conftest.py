"""Shared fixtures: the data mirror, a private cache, sandboxes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import parallel
import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
CHOSEN_BACKEND_ENV = "INTERCODE_TEST_SANDBOX"  # the fallback of --sandbox-backend
DEFAULT_MIRROR = ROOT.parent / "shared" / "datasets" / "intercode"


SANDBOX_BACKENDS = ("bwrap", "docker")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--sandbox-backend", choices=SANDBOX_BACKENDS, default=None,
        help="the backend of every sandbox the tests make (default bwrap; the environment "
             "variable INTERCODE_TEST_SANDBOX is the fallback when this is not given)")


def pytest_configure(config: pytest.Config) -> None:
    """Use the shared data mirror unless the environment names another one; put every
    sandbox the tests make on the backend ``--sandbox-backend`` names (CI runs the
    sandbox-level adversarial suite a second time on docker so)."""
    if "INTERCODE_DATA_MIRROR" not in os.environ and DEFAULT_MIRROR.is_dir():
        os.environ["INTERCODE_DATA_MIRROR"] = str(DEFAULT_MIRROR)
    chosen = config.getoption("sandbox_backend") or os.environ.get(CHOSEN_BACKEND_ENV)
    if chosen is None:
        return
    if chosen not in SANDBOX_BACKENDS:
        raise pytest.UsageError(f"{CHOSEN_BACKEND_ENV}={chosen!r}: expected one of "
                                f"{', '.join(SANDBOX_BACKENDS)}")
    # the helpers that parametrise suites by backend (tests/backends.py) read it from here
    os.environ[CHOSEN_BACKEND_ENV] = chosen
    if chosen != "bwrap":
        import intercode.sandbox as sandboxes

        real = sandboxes._backend_class
        sandboxes._backend_class = lambda name: real(chosen if name == "bwrap" else name)


# -- markers, from what a test uses (`-m "not docker"`, scripts/test --quick) ------------
# sandbox: it may start a sandbox (bubblewrap, or the --sandbox-backend): every test
#   outside tests/unit (most do, often deep inside: SQLite runs in one too), and in
#   tests/unit those using a sandbox fixture or in UNIT_SANDBOX_MODULES (found by running
#   tests/unit with INTERCODE_BWRAP=/nonexistent: add a module there when it starts one)
# docker: a parameter is "docker", or outside tests/unit its module or name says docker
# mysql: it uses the mysql_url fixture, or a parameter is "mysql"
# browser: it uses the browser fixture; ray: it is in tests/ray; network: it reaches the
#   package index (NETWORK_MODULES); lint: tests/unit/test_lint.py; slow: marked by hand
MARKERS = ("sandbox", "docker", "mysql", "browser", "ray", "network", "lint")
SANDBOX_FIXTURES = frozenset({"sandbox", "sandbox_factory"})
UNIT_SANDBOX_MODULES = frozenset({
    "unit/test_lazy_imports.py", "unit/test_serve_sessions.py", "unit/test_testing.py",
})
NETWORK_MODULES = frozenset({"integration/test_clean_install.py",
                             "integration/test_extras_resolve.py"})


def _params(item: pytest.Item) -> set[object]:
    callspec = getattr(item, "callspec", None)
    values: set[object] = set()
    for value in callspec.params.values() if callspec is not None else ():
        parts = value if isinstance(value, tuple | list) else (value,)
        values |= {part for part in parts if isinstance(part, str)}
    return values


def markers_for(item: pytest.Item) -> set[str]:
    """The markers (of :data:`MARKERS`) a test gets from what it uses."""
    path = Path(item.path).resolve()
    module = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.name
    folder = module.split("/", 1)[0]
    fixtures = set(getattr(item, "fixturenames", ()))
    params = _params(item)
    name = getattr(item, "originalname", item.name)
    found = set()
    if folder != "unit" or fixtures & SANDBOX_FIXTURES or module in UNIT_SANDBOX_MODULES:
        found.add("sandbox")
    if "docker" in params or (folder != "unit" and ("docker" in Path(module).stem
                                                    or "docker" in name)):
        found.add("docker")
    if "mysql_url" in fixtures or "mysql" in params:
        found.add("mysql")
    if "browser" in fixtures:
        found.add("browser")
    if folder == "ray":
        found.add("ray")
    if module in NETWORK_MODULES:
        found.add("network")
    if module == "unit/test_lint.py":
        found.add("lint")
    return found


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test by what it uses (before ``-m`` deselects by markers) and by its
    group in a parallel run (tests/parallel.py)."""
    for item in items:
        found = markers_for(item) | {m.name for m in item.iter_markers() if m.name in MARKERS}
        for marker in sorted(found - {m.name for m in item.iter_markers()}):
            item.add_marker(marker)
        item.add_marker(getattr(pytest.mark, parallel.MARK)(parallel.group_for(item, found,
                                                                               ROOT)))
    if parallel.in_worker(config):
        items.sort(key=parallel.run_order)
        parallel.write_groups(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    parallel.configure_node(node.config, node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole groups of tests to each worker (tests/parallel.py), whatever ``--dist``."""
    return parallel.make_scheduler(config, log)


MYPY_TEST = "tests/unit/test_lint.py::test_mypy_is_clean"


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """With other tests to run, start the mypy check (the slowest test: about 50 s of one
    core, from a clean checkout) in the background now, so that it runs alongside them;
    ``test_mypy_is_clean`` then waits for its result."""
    items = session.items
    if parallel.in_worker(session.config):
        return  # a parallel run's worker that gets it runs it first (tests/parallel.py)
    if (len(items) > 1 and not session.config.option.collectonly
            and any(item.nodeid == MYPY_TEST for item in items)):
        import subprocess
        import tempfile

        from checks import check_command

        out = tempfile.TemporaryFile()  # noqa: SIM115 (read by test_mypy_is_clean)
        proc = subprocess.Popen(check_command("mypy"), cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)
        session.config._intercode_mypy = (proc, out)  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    parallel.remove_groups(config)
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
def gold_cache_dir(tmp_path, monkeypatch) -> Path:
    """A user cache of this test's own, the gold cache on: its ``gold`` folder (the Bash
    gold's results and the Python gold's outcomes)."""
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path))
    monkeypatch.delenv("INTERCODE_GOLD_CACHE", raising=False)
    return tmp_path / "gold"


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
