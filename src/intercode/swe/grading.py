"""From per-test outcomes to SWE-bench's verdict, with the rules of its newest grader.

A task is *resolved* when every ``FAIL_TO_PASS`` and every ``PASS_TO_PASS`` test passed.
A test counts as passed when the log says ``PASSED`` or ``XFAIL``; missing from the log,
``FAILED``, ``ERROR`` and (for ``FAIL_TO_PASS``) ``SKIPPED`` count as failed: a patch that
makes the new tests skip has not fixed anything (``swebench`` 4.1 graded that as resolved;
5.0 does not). A skipped ``PASS_TO_PASS`` test counts as kept, as in 5.0.

The log is trusted only as far as the test command's exit status agrees with it (5.0's
rule): a command that failed while the log shows no failed or erroring test has not
shown its tests' outcomes (printed ``PASSED`` lines, a crashed runner), and scores 0.

A line the code under test prints can add a pass to the log, never take a failure out of
it, while the parsers read the last word on a test as its outcome (an ``ok`` printed in
the middle of unittest's ``name ... FAIL`` line made it ``name ... ok``; a ``PASSED x``
printed after pytest's summary overrode its ``FAILED x``). So a listed test that the log
shows failing anywhere (:func:`failures_shown`) has failed, whatever else it says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Grade", "failures_shown", "grade"]

PASSED = frozenset({"PASSED", "XFAIL"})
BAD = frozenset({"FAILED", "ERROR"})
SHOWN = 50  # names of failing tests kept in reward_info


@dataclass
class Grade:
    """The verdict on one test run."""

    resolved: bool
    f2p_passed: int
    f2p_total: int
    p2p_passed: int
    p2p_total: int
    failing: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def f2p_fraction(self) -> float:
        """Share of ``FAIL_TO_PASS`` tests that pass (1.0 when there are none)."""
        return self.f2p_passed / self.f2p_total if self.f2p_total else 1.0

    @property
    def p2p_fraction(self) -> float:
        """Share of ``PASS_TO_PASS`` tests that still pass (1.0 when there are none)."""
        return self.p2p_passed / self.p2p_total if self.p2p_total else 1.0

    def info(self) -> dict[str, Any]:
        """The grade as ``reward_info`` shows it."""
        out: dict[str, Any] = {
            "resolved": self.resolved,
            "status": ("RESOLVED_FULL" if self.resolved else
                       "RESOLVED_PARTIAL" if self.f2p_passed and self.p2p_fraction == 1.0
                       else "RESOLVED_NO"),
            "fail_to_pass": round(self.f2p_fraction, 6),
            "pass_to_pass": round(self.p2p_fraction, 6),
            "fail_to_pass_passed": f"{self.f2p_passed}/{self.f2p_total}",
            "pass_to_pass_passed": f"{self.p2p_passed}/{self.p2p_total}",
        }
        if self.failing:
            out["failing_tests"] = self.failing[:SHOWN]
        if self.reason:
            out["reason"] = self.reason
        return out


def grade(statuses: dict[str, str], fail_to_pass: tuple[str, ...],
          pass_to_pass: tuple[str, ...], exit_code: int | None) -> Grade:
    """The verdict on a test log's ``statuses`` (test name -> status)."""
    failing: list[str] = []
    f2p = 0
    for name in fail_to_pass:
        if statuses.get(name) in PASSED:
            f2p += 1
        else:
            failing.append(name)
    p2p = 0
    for name in pass_to_pass:
        status = statuses.get(name)
        if status in PASSED or status == "SKIPPED":
            p2p += 1
        else:
            failing.append(name)
    result = Grade(resolved=not failing, f2p_passed=f2p, f2p_total=len(fail_to_pass),
                   p2p_passed=p2p, p2p_total=len(pass_to_pass), failing=failing)
    if exit_code != 0 and not any(s in BAD for s in statuses.values()):
        result.resolved = False
        result.reason = (f"the test command exited with {exit_code} but its log shows no "
                         "failed test: the outcomes cannot be trusted")
    return result


def failures_shown(log: str, names: Iterable[str]) -> dict[str, str]:
    """The tests of ``names`` that ``log`` shows failing or erroring anywhere: unittest's
    and Django's ``FAIL: name`` (and the docstring line under it, which names a test
    that has one) and ``name ... FAIL`` (``ERROR`` alike, subtests included), pytest's
    ``FAILED name`` and ``ERROR name``, SymPy's ``name F``/``name E`` and
    ``____ path.py:name ____``."""
    wanted = set(names)
    found: dict[str, str] = {}

    def seen(candidate: str, status: str) -> None:
        if candidate in wanted and found.get(candidate) != "ERROR":
            found[candidate] = status

    header = ""  # the status of a unittest failure header just read: a docstring may follow
    for raw in log.split("\n"):
        line = raw.strip()
        if header and line and not line.startswith("-" * 20):
            seen(line, header)  # a test with a docstring is named by its first line
        header = ""
        for prefix, status in (("FAIL: ", "FAILED"), ("ERROR: ", "ERROR")):
            if line.startswith(prefix):
                rest = line[len(prefix):]
                seen(rest, status)
                if rest.endswith(")") and " (" in rest:  # a subtest: "name (i=1)"
                    seen(rest[:rest.rindex(" (")], status)
                header = status
        for prefix, status in (("FAILED ", "FAILED"), ("ERROR ", "ERROR")):
            if line.startswith(prefix):
                rest = line[len(prefix):]
                seen(rest.split(" - ", 1)[0], status)
                if rest.split():
                    seen(rest.split()[0], status)
        if line.startswith("_") and line.endswith("_") and ".py:" in line:
            inner = line.strip("_").strip()  # SymPy's "____ path.py:name ____" (a failure)
            seen(inner, "FAILED")
            seen(inner.rsplit(":", 1)[1], "FAILED")
        for suffix, status in ((" ... FAIL", "FAILED"), (" ... ERROR", "ERROR"),
                               (" F", "FAILED"), (" E", "ERROR")):
            if line.endswith(suffix):
                seen(line[:-len(suffix)].strip(), status)
    return found
