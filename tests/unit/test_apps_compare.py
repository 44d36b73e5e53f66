"""APPS's comparison rules (hendrycks/apps ``eval/testing_util.py``) on hand-made cases.

Each case states what APPS's harness decides for the printed output (or return value)
and the expected output, worked out from its code: the checks it makes in order
(stripped text, stripped lines, non-empty lines, ``numpy.allclose`` on numbers, sets of
lines' word sets, the same rounded to 3 decimals).
"""

from __future__ import annotations

import pytest

from intercode.rewards.apps import OPAQUE, apps_reward, call_passes, decode_value, stdin_passes

STDIN_CASES = [
    # (printed, expected, APPS passes)
    ("3\n", "3\n", True),
    ("3", "3\n\n", True),  # outer whitespace
    ("  3  \n", "3", True),
    ("1\n2\n", ["1", "2"], True),  # a list of lines is joined
    (" 1 \n 2 \n", "1\n2", True),  # each line stripped
    ("1\n\n2\n", "1\n2\n", True),  # empty lines dropped
    ("1\n \n2\n", "1\n2\n", True),  # a blank printed line has no words: the sets drop it
    ("1\n2\n", "1\n\n \n2\n", False),  # an expected blank line is an empty set: never met
    ("0.3333333\n", "0.333333333\n", True),  # allclose: rtol 1e-5
    ("0.3334\n", "0.3333\n", True),  # too far for allclose, equal to 3 decimals
    ("0.3344\n", "0.3333\n", False),  # neither
    ("1.0000001 2\n", "1 2\n", True),  # words rounded to 3 decimals, as sets
    ("2 1\n", "1 2\n", True),  # word order within a line is ignored
    ("b\na\n", "a\nb\n", True),  # so is line order
    ("a a b\n", "a b\n", True),  # and repeats
    ("1e400\n", "inf\n", True),  # float("1e400") is inf
    ("nan\n", "nan\n", True),  # the text itself is equal
    ("nan 1\n", "nan 2\n", False),
    ("YES\n", "yes\n", False),  # case matters
    ("3\n4\n", "3\n", False),
    ("", "0\n", False),
    ("", "\n", True),  # nothing printed, nothing expected
    ("12\n", "1 2\n", False),
]


@pytest.mark.parametrize(("printed", "expected", "passes"), STDIN_CASES)
def test_standard_input_comparison_is_apps(printed: str, expected: object,
                                           passes: bool) -> None:
    assert stdin_passes(printed, expected) is passes


CALL_CASES = [
    # (returned value, expected as stored, APPS passes)
    (3, [3], True),  # expected values are mostly wrapped in a list
    (3, 3, True),
    (3.0, [3], True),  # Python's equality
    (True, [1], True),
    ((1, 2), [[1, 2]], True),  # a tuple is read as a list
    ([(1, 2), (3, 4)], [[[1, 2], [3, 4]]], True),  # tuples inside, compared as lists
    ([1, 2], [1, 2], True),
    ([1, 2], [[2, 1]], False),
    ("abc", ["abc"], True),
    ({1: "a"}, {"1": "a"}, True),  # JSON's string keys read as ints
    ({1: "a"}, [{"1": "a"}], True),
    ({"x": 1}, {"x": 1}, True),  # keys that are not ints stay
    (None, [None], True),
    (None, [], False),
    (4, [3], False),
    (0.1 + 0.2, [0.3], False),  # no float tolerance for returned values
]


@pytest.mark.parametrize(("value", "expected", "passes"), CALL_CASES)
def test_call_based_comparison_is_apps(value: object, expected: object, passes: bool) -> None:
    assert call_passes(value, expected) is passes


def test_typed_values_decode_to_builtins_only() -> None:
    typed = {"t": "tuple", "v": [1, {"t": "dict", "v": [["a", {"t": "set", "v": [2]}]]}]}
    assert decode_value(typed) == (1, {"a": {2}})
    assert decode_value({"t": "int", "v": hex(10 ** 40)}) == 10 ** 40
    for forged in ({"t": "module", "v": "os"}, {"t": "opaque", "type": "X"},
                   {"t": "int", "v": "f" * 100000}, {"t": "nope"}, {"t": "dict", "v": [[1]]}):
        assert decode_value(forged) is OPAQUE
        assert not call_passes(decode_value(forged), [OPAQUE])
    deep: object = 1
    for _ in range(500):
        deep = [deep]
    inner = decode_value(deep)  # too deep: cut, with no recursion error
    while isinstance(inner, list):
        inner = inner[0]
    assert inner is OPAQUE


def test_the_reward_is_the_test_case_average_and_success_is_strict() -> None:
    partial = apps_reward([True, False, True, True])
    assert (partial.reward, partial.correct, partial.total, partial.success) == (0.75, 3, 4, False)
    assert apps_reward([True, True]).success
    with pytest.raises(ValueError):
        apps_reward([])
