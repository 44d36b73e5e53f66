"""The Python gold's test outcomes, kept on disk across runs.

What the gold's tests give (each test's outcome with the gold's function) is a function
of the gold's request (the setup code, the gold, the tests and their time limit) and of
the sandbox that runs it. An evaluation that runs the same tasks again (another model,
another prompt) then scores each episode without running the gold's tests: the judge
runs in the gold's interpreter itself (see ``envs/python.py``), the interpreter is not
forked.

An entry is keyed by everything that decides it: the gold's request (by digest), the
dataset (a digest of its tasks: a dataset's golds share one gold's sandbox, one after the
other), the root file system's identity, the sandbox's limits and layout, the backend,
the kernel and the number of CPUs the sandbox may use, the action mode, the code that
runs the tests (the sandbox's and this environment's) and the version. As the in-memory
memo (``outcome_memo``) does, an entry is used only once two scorings of the gold gave
the same outcomes (the first is kept as a candidate, a later one, in this run or another,
confirms it); scorings that differ mark the entry unstable for good. Only a list in which
every test passed is kept: a gold's test that failed (out of time, out of memory, a setup
that ran out of its time and left the function undefined) says something of the machine
at that moment, which a later run must not inherit; the memo keeps such lists for one
environment's life only.

Trust: the entries live beside the Bash gold's (``INTERCODE_CACHE``/gold, see
:mod:`intercode.envs.gold_cache`, which checks and seals them), which no sandbox mounts.
The opt-out is the same: ``gold_cache=False`` (``--no-gold-cache``, or
``INTERCODE_GOLD_CACHE=0``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from intercode.envs.gold_cache import EntryStore, cache_root
from intercode.envs.outcome_memo import MAX_CHARS, decided_alone
from intercode.rewards.python import Outcome, passed

__all__ = ["OUTCOME_FIELDS", "OutcomeStore"]

# what an outcome holds (see ``sandbox/inbox/pyscore.py``): an entry with anything else is
# ignored
OUTCOME_FIELDS = ({"output", "error"}, {"error"})


class OutcomeStore:
    """Confirmed gold outcomes by key (see the module docstring)."""

    def __init__(self, root: Path | None = None) -> None:
        self._entries = EntryStore(root or cache_root(), _outcomes_of)

    def lookup(self, key: dict[str, Any]) -> tuple[list[Outcome] | None, bool]:
        """The confirmed outcomes of ``key`` (None: absent, a candidate, unstable,
        unreadable, corrupt or not ours), and whether scorings of its gold were seen to
        differ (unstable), from one read of its entry."""
        found = self._entries.read(key)
        if found is None or not found[1]:
            return None, False
        outcomes = found[0]["outcomes"]
        if outcomes is None:
            return None, True
        return [dict(item) for item in outcomes], False

    def saw(self, key: dict[str, Any], outcomes: list[Outcome]) -> None:
        """The gold's tests gave ``outcomes`` for ``key``: keep them as a candidate,
        confirm the candidate they equal, or mark the entry unstable if they differ."""
        if not _keepable(outcomes) or len(json.dumps(outcomes)) > MAX_CHARS:
            return
        with self._entries.locked(key):  # (another worker's mark of unstable stays)
            found = self._entries.read(key)
            if found is None:
                self._entries.write(key, {"outcomes": outcomes}, confirmed=False)
            elif not found[1]:
                same = found[0]["outcomes"] == outcomes
                self._entries.write(key, {"outcomes": outcomes if same else None},
                                    confirmed=True)
            elif found[0]["outcomes"] is not None and found[0]["outcomes"] != outcomes:
                self._entries.write(key, {"outcomes": None}, confirmed=True)


def _outcomes_of(payload: Any) -> dict[str, Any] | None:
    """A stored payload ``{"outcomes": [outcome, ...] | None}`` (``None``: unstable), if
    that is what it is: each outcome the text a test printed and raised
    (``{"output": ..., "error": ...}``, or only ``{"error": ...}``)."""
    if not isinstance(payload, dict) or set(payload) != {"outcomes"}:
        return None
    outcomes = payload["outcomes"]
    if outcomes is None:
        return payload
    if not isinstance(outcomes, list) or not all(
            isinstance(item, dict) and set(item) in OUTCOME_FIELDS
            and all(isinstance(v, str) for v in item.values()) for item in outcomes):
        return None
    return payload if _keepable(outcomes) else None


def _keepable(outcomes: list[Outcome]) -> bool:
    """Whether an outcome list may be kept: every test passed (see the module docstring)."""
    return bool(outcomes) and decided_alone(outcomes) and all(passed(o) for o in outcomes)
