"""Scoring an APPS program (the Python environment's ``apps`` dataset).

The agent writes its program to a file in its sandbox (``solution.py`` in the
interpreter's working directory unless ``submit <path>`` names another) and submits it.
The file is read out of the agent's sandbox (its text is the agent's claim, like
anything there) and run in a third sandbox, the scorer's, which is reset before each
scoring and never holds an expected output: each test is a fresh fork of the scorer's
interpreter (``inbox/pyprogram.py``) with that test's input and time limit. What the
program printed (or, for a call-based problem, returned, as typed JSON) comes back as
data, and is compared with the expected output here, on the host, by APPS's rules
(``rewards.apps``). A test the program fails in any way (an exception, a time-out, a
killed scorer, a garbled reply) is a failed test, never an infrastructure error.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
from collections.abc import Callable
from typing import Any

from intercode.datasets.apps import DEFAULT_PROGRAM, AppsTask
from intercode.envs.core.base import Evaluation
from intercode.errors import SandboxError, SandboxSpentError
from intercode.rewards.apps import apps_reward, call_passes, parse_value, stdin_passes
from intercode.sandbox.base import Sandbox

__all__ = ["program_path", "score_program"]

READ_TIMEOUT = 10.0
GRACE = 5.0  # seconds past a test's limit before the host stops waiting for its reply


def program_path(argument: str | None, cwd: str) -> str:
    """The file a ``submit`` hands in: ``argument`` or ``solution.py``, relative to the
    interpreter's working directory."""
    path = argument or DEFAULT_PROGRAM
    return posixpath.normpath(posixpath.join(cwd or "/", path))


def read_program(box: Sandbox, path: str, limit: int) -> tuple[str | None, str]:
    """The program's text in the agent's sandbox, or ``None`` and why not."""
    try:
        result = box.exec(["/bin/cat", "--", path], timeout=READ_TIMEOUT, cwd="/")
    except SandboxError as exc:
        return None, f"the program {path} could not be read: {exc}"
    if result.timed_out or result.exit_code != 0:
        said = result.output.strip().splitlines()[-1:] if result.output else []
        why = said[0][:200] if said else "it is not a readable file"
        return None, f"the program {path} could not be read ({why})"
    if result.output_truncated or result.output_bytes > limit:
        return None, f"the program {path} is larger than {limit} bytes"
    if not result.output.strip():
        return None, f"the program {path} is empty"
    return result.output, ""


def score_program(task: AppsTask, agent: Sandbox, scorer: Callable[[], Sandbox], path: str,
                  timeout: float, limit: int) -> Evaluation:
    """Run the tests of ``task`` on the program at ``path`` of the agent's sandbox."""
    source, why = read_program(agent, path, limit)
    base = {"submitted_program": path, "tests_total": len(task.inputs)}
    if source is None:
        info = {**base, "note": why, "tests_correct": 0, "all_pass": False,
                "reward_parts": {"tests": 0.0}}
        return Evaluation(0.0, False, info)
    box = scorer()
    passed = [_test(task, k, source, box, timeout, limit) for k in range(len(task.inputs))]
    reward = apps_reward(passed)
    info = {**base, "tests_correct": reward.correct, "all_pass": reward.all_pass,
            "reward_parts": {"tests": reward.reward}}
    return Evaluation(reward.reward, reward.success, info)


def _test(task: AppsTask, k: int, source: str, box: Sandbox, timeout: float,
          limit: int) -> bool:
    """Whether the program passes test ``k``."""
    request = {"source": source, "mode": "call" if task.fn_name else "stdin",
               "fn_name": task.fn_name, "input": task.test_input(k), "timeout": timeout,
               "cap": limit * 3 // 4 - 4096}
    try:
        result = box.run(json.dumps(request), timeout=timeout + GRACE, kind="program")
    except (SandboxSpentError, SandboxError):
        return False  # the program broke the scorer's interpreter: its own failure
    reply = _reply(result.reply)
    if reply is None or reply.get("status") != "ok":
        return False
    try:
        out = base64.b64decode(str(reply.get("out", "")), validate=True)
    except (binascii.Error, ValueError):
        return False
    text = out.decode("utf-8", "replace")
    expected = task.test_output(k)
    if task.fn_name:
        return call_passes(parse_value(text), expected)
    return stdin_passes(text, expected)


def _reply(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
