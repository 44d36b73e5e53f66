"""A worker forked from a fork server imports later modules from the files of the server's
start, or refuses with a clear error: it never mixes two versions of the package."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{cwd}{os.pathsep}{SRC}", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def make_package(root: Path) -> None:
    pkg = root / "fakepkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "early.py").write_text("VERSION = 1\n")
    (pkg / "late.py").write_text("VERSION = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "deep.py").write_text("VERSION = 1\n")
    (pkg / "other.py").write_text("VERSION = 1\n")


def test_a_module_changed_after_the_start_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    make_package(tmp_path)
    result = run("""
        import os, time
        import fakepkg, fakepkg.early
        from intercode.runner.codecheck import CodeChanged, freeze
        freeze("fakepkg")
        freeze("fakepkg")  # (idempotent)
        import fakepkg.other  # unchanged: imported as usual
        time.sleep(0.01)
        with open("fakepkg/late.py", "w") as fh:
            fh.write("VERSION = 2\\n")  # an upgrade in the middle of the run
        os.replace("fakepkg/early.py", "fakepkg/moved.py")
        with open("fakepkg/sub/new.py", "w") as fh:
            fh.write("VERSION = 2\\n")  # a file the start did not have
        for name in ("fakepkg.late", "fakepkg.sub.new"):
            try:
                __import__(name)
            except CodeChanged as exc:
                print("refused", name, "|", exc)
            else:
                print("imported", name)
        import fakepkg.sub.deep  # unchanged, in a subpackage
        import json  # other packages are not concerned
        print("ok", fakepkg.other.VERSION, fakepkg.sub.deep.VERSION, fakepkg.early.VERSION)
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("refused fakepkg.late | fakepkg.late: the files of fakepkg "
                               "changed after this run started")
    assert "start the run again" in lines[0]
    assert lines[1].startswith("refused fakepkg.sub.new")
    assert lines[2] == "ok 1 1 1"


def test_the_fork_server_preload_guards_intercode(tmp_path: Path) -> None:
    result = run("""
        import sys
        import intercode.runner.preload
        from intercode.runner.codecheck import _Guard
        print([f.prefix for f in sys.meta_path if isinstance(f, _Guard)])
        import intercode.rewards.bash  # an unchanged module imports as usual
        print("ok")
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["['intercode']", "ok"]
