"""APPS's comparison of a program's result with a test's expected output.

The rules are those of APPS's own harness (``eval/testing_util.py`` of hendrycks/apps),
written anew as pure functions of data; nothing here runs the agent's code.

Standard-input problems: the expected output (a string, or a list of strings joined by
newlines) and the printed output, split in lines. A test passes when any of these holds:

1. the printed text equals the expected one once both are stripped, also with each of its
   lines stripped;
2. the non-empty printed lines equal the expected text's non-empty lines, each stripped;
3. both, read as lists of numbers line by line, have the same length and are close
   (``numpy.allclose``: ``|a - b| <= 1e-8 + 1e-5 * |b|``);
4. as sets of lines, each line a set of its whitespace-separated words, they are equal
   (line order, word order and repeats are ignored, as APPS's last check ignores them);
5. the same, with every word read as a number rounded to 3 decimals.

Call-based problems: the return value (a tuple read as a list) equals the expected value,
or its first element when the expected value is a non-empty list (APPS stores most
expected values wrapped in a list), or, for a sequence of tuples, that element compared
with lists; a dict expected value (or one wrapped in a list) has its keys read as ints,
as APPS reads them (a dict argument too). Equality is Python's (``1 == 1.0 == True``, as in APPS).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from intercode.rewards.python import PythonReward

__all__ = ["OPAQUE", "apps_reward", "call_passes", "decode_value", "expected_value",
           "parse_value", "stdin_passes"]

RTOL, ATOL = 1e-05, 1e-08  # numpy.allclose's defaults, which APPS uses
MAX_DEPTH = 101
MAX_HEX = 4096  # hex digits of a big int the host builds (16384 bits)


class _Opaque:
    """A value that was not plain data: equal to nothing, itself included."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<opaque value>"


OPAQUE = _Opaque()


def apps_reward(passed: Sequence[bool]) -> PythonReward:
    """The fraction of tests passed (APPS's test case average); all of them: strict
    accuracy."""
    if not passed:
        raise ValueError("a task needs at least one test")
    correct = sum(1 for p in passed if p)
    return PythonReward(reward=correct / len(passed), correct=correct, total=len(passed),
                        all_pass=correct == len(passed))


# -- standard input ------------------------------------------------------------------------

def _expected_text(expected: Any) -> str:
    if isinstance(expected, list):
        return "\n".join(str(x) for x in expected)
    return str(expected)


def _floats(words: Sequence[str]) -> list[float] | None:
    try:
        return [float(w) for w in words]
    except (ValueError, OverflowError):
        return None


def _close(a: Sequence[float], b: Sequence[float]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if math.isinf(x) or math.isinf(y):
            if x != y:
                return False
        elif not abs(x - y) <= ATOL + RTOL * abs(y):  # nan fails
            return False
    return True


def _rounded(line: frozenset[str]) -> frozenset[float] | None:
    numbers = _floats(sorted(line))
    return None if numbers is None else frozenset(round(x, 3) for x in numbers)


def stdin_passes(printed: str, expected: Any) -> bool:
    """Whether a standard-input program's output passes a test (see the module's rules)."""
    want = _expected_text(expected)
    got_lines = printed.splitlines()
    if "\n".join(got_lines).strip() == want.strip() \
            or "\n".join(line.strip() for line in got_lines).strip() == want.strip():
        return True
    want_lines = [x.strip() for x in want.split("\n") if x]
    got_kept = [x for x in got_lines if x]
    if got_lines == want_lines or got_kept == want_lines:
        return True
    got_numbers, want_numbers = _floats(got_kept), _floats(want_lines)
    if got_numbers is not None and want_numbers is not None \
            and _close(got_numbers, want_numbers):
        return True
    got_sets = {frozenset(line.split()) for line in got_kept if line.split()}
    want_sets = {frozenset(line.split()) for line in want_lines}
    if got_sets == want_sets:
        return True
    got_round = {_rounded(s) for s in got_sets}
    want_round = {_rounded(s) for s in want_sets}
    return None not in got_round and None not in want_round and got_round == want_round


# -- call-based ----------------------------------------------------------------------------

def _int_keys(value: dict[Any, Any]) -> dict[Any, Any] | None:
    try:
        return {int(k): v for k, v in value.items()}
    except (ValueError, TypeError):
        return None


def expected_value(expected: Any) -> Any:
    """The expected value as APPS reads it: a dict's string keys become ints (the dict
    then wrapped in a list, as APPS does); so do those of a dict wrapped in a list."""
    if isinstance(expected, dict):
        converted = _int_keys(expected)
        return expected if converted is None else [converted]
    if isinstance(expected, list) and expected and isinstance(expected[0], dict):
        converted = _int_keys(expected[0])
        return expected if converted is None else [converted]
    return expected


def call_passes(value: Any, expected: Any) -> bool:
    """Whether a call-based function's return value (decoded, see :func:`decode_value`)
    passes a test whose expected output is ``expected`` (as the task file stores it)."""
    want = expected_value(expected)
    got = list(value) if isinstance(value, tuple) else value
    try:
        if got == want:
            return True
        if isinstance(want, list) and want and got == want[0]:
            return True
        if isinstance(got, list) and got and isinstance(got[0], tuple) \
                and isinstance(want, list) and want:
            return bool([list(x) for x in got] == want[0])
    except (RecursionError, TypeError, ValueError):
        return False
    return False


def decode_value(data: Any, depth: int = 0) -> Any:
    """The value the program's typed JSON (``inbox/pyvalue.py``) describes, built from
    plain builtin types only; anything else (a module, an opaque object, a malformed or
    unknown form) is :data:`OPAQUE`."""
    if depth > MAX_DEPTH:
        return OPAQUE
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode_value(x, depth + 1) for x in data]
    if type(data) is not dict:
        return OPAQUE
    tag, v = data.get("t"), data.get("v")
    try:
        if tag in ("tuple", "set", "frozenset") and type(v) is list:
            items = [decode_value(x, depth + 1) for x in v]
            return tuple(items) if tag == "tuple" else \
                (set(items) if tag == "set" else frozenset(items))
        if tag == "dict" and type(v) is list \
                and all(type(p) is list and len(p) == 2 for p in v):
            return {decode_value(k, depth + 1): decode_value(x, depth + 1) for k, x in v}
        return _scalar(tag, v)
    except (TypeError, ValueError, InvalidOperation, ZeroDivisionError):
        return OPAQUE


def _scalar(tag: Any, v: Any) -> Any:
    if tag in ("bytes", "bytearray") and type(v) is str:
        return (bytes if tag == "bytes" else bytearray).fromhex(v)
    if tag == "int" and type(v) is str and len(v) <= MAX_HEX:
        return int(v, 16)
    if tag == "complex" and type(v) is list and len(v) == 2 \
            and all(type(x) in (int, float) for x in v):
        return complex(v[0], v[1])
    if tag == "fraction" and type(v) is list and len(v) == 2 \
            and all(type(x) is str and len(x) <= MAX_HEX for x in v):
        return Fraction(int(v[0], 16), int(v[1], 16))
    if tag == "decimal" and type(v) is str and len(v) <= 1000:
        return Decimal(v)
    return OPAQUE


def parse_value(text: str) -> Any:
    """The decoded value of a program's JSON reply (:data:`OPAQUE` if it is not JSON)."""
    try:
        return decode_value(json.loads(text))
    except (ValueError, RecursionError):
        return OPAQUE
