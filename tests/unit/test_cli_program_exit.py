"""The ``intercode`` program leaves its objects to the process's end; ``main`` does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """
import gc, sys
import intercode.cli as cli
sys.argv = ["intercode", "datasets"]
if {via!r} == "main":
    code = cli.main(["datasets"])
else:
    code = cli.run()
print(code, gc.get_freeze_count() > 0)
"""


def _frozen_after(via: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROGRAM.format(via=via)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[-2:]


def test_the_program_freezes_its_objects_before_it_ends() -> None:
    assert _frozen_after("run") == ["0", "True"]


def test_a_caller_of_main_in_the_same_process_keeps_its_collector() -> None:
    assert _frozen_after("main") == ["0", "False"]


def test_the_console_script_and_python_m_are_the_program() -> None:
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("intercode") == "intercode.cli:run"
    import intercode

    main_module = Path(intercode.__path__[0]) / "__main__.py"
    assert "sys.exit(run())" in main_module.read_text(encoding="utf-8")
