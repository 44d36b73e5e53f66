"""A process's first sandbox boots from the modules an earlier process's sandbox
compiled (kept in the user cache), and renews them when they no longer fit its Python."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from intercode.sandbox import bootcache

START = """
import json
from intercode.sandbox import bootcache, create_sandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.limits import Limits
box = create_sandbox("bwrap", Limits())
found = bootcache.load(box._code_key()) or ("",)
box.start()
box.load(FileTree.of([]))
out = box.run("echo $((6 * 7))").output
asked = box._code_asked
box.close()
print(json.dumps({"had": found[0], "asked": asked, "out": out}))
"""


def start_one(cache: Path) -> dict[str, object]:
    env = {**__import__("os").environ, "INTERCODE_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_second_process_boots_from_the_first_ones_modules(tmp_path: Path) -> None:
    first = start_one(tmp_path)
    assert first == {"had": "", "asked": True, "out": "42\n"}
    kept = list((tmp_path / "boot").iterdir())
    assert len(kept) == 1
    second = start_one(tmp_path)
    assert second["out"] == "42\n" and second["had"] == first_version(kept[0])
    assert second["asked"] is True  # (kept by an earlier process: it may not fit)
    assert [p.read_bytes() for p in (tmp_path / "boot").iterdir()] == [kept[0].read_bytes()]


def test_modules_of_another_python_are_compiled_again_and_renewed(tmp_path: Path) -> None:
    start_one(tmp_path)
    path = next((tmp_path / "boot").iterdir())
    real = first_version(path)
    key = ("stale",)
    bootcache.store(key, "2.7.18 (elsewhere)", b"not marshal data")  # (written under this key)
    path.write_bytes(bootcache.path_for(key).read_bytes())  # now under the real key
    stale = start_one(tmp_path)
    assert stale["had"] == "2.7.18 (elsewhere)" and stale["out"] == "42\n"
    assert first_version(path) == real  # the sandbox compiled, and its modules were kept


def first_version(path: Path) -> str:
    head = path.read_bytes()[len(bootcache.MAGIC):].split(b"\n", 1)[0]
    return str(json.loads(head)["version"])
