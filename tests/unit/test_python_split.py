"""Splitting MBPP tests, and the typed values that cross from the agent's process."""

from __future__ import annotations

import collections
import json
from fractions import Fraction

import pytest

from intercode.rewards.python_split import defined_names, pure_template, split_test
from intercode.sandbox.inbox import pyscore, pyvalue


@pytest.mark.parametrize(("test", "template", "units"), [
    ("assert min_cost([[1, 2], [3, 4]], 1, 1) == 8", "assert __ic_unit__(0) == 8",
     ("min_cost([[1, 2], [3, 4]], 1, 1)",)),
    ("assert tuple_size((1, 2)) == sys.getsizeof((1, 2))",
     "assert __ic_unit__(0) == __ic_unit__(1).getsizeof((1, 2))", ("tuple_size((1, 2))", "sys")),
    ("assert pos_nos([-1, 2]) == 1,2", "assert __ic_unit__(0) == 1, 2", ("pos_nos([-1, 2])",)),
    ("assert set(f(x)) == set([1, 2])", "assert set(__ic_unit__(0)) == set([1, 2])", ("f(x)",)),
    ("assert f(1) == f(2)", "assert __ic_unit__(0) == __ic_unit__(1)", ("f(1)", "f(2)")),
    ("assert (", "assert (", ()),
])
def test_only_the_agents_sub_expressions_are_units(test, template, units):
    split = split_test(test)
    assert split.template == template and split.units == units


def test_a_builtin_the_gold_redefines_is_the_agents():
    assert split_test("assert sum(10, 15) == 6").units == ()
    assert split_test("assert sum(10, 15) == 6", frozenset({"sum"})).units == ("sum(10, 15)",)
    assert defined_names("import sys as s\ndef sum(a, b):\n    pass\nR = 3") == {"s", "sum", "R"}


def test_comprehension_variables_stay_in_the_template():
    split = split_test("assert all(f(i) == i for i in range(3))")
    assert split.units == ("f",) and "for i in range(3)" in split.template


def roundtrip(value):
    return pyvalue.decode(json.loads(json.dumps(pyvalue.encode(value, pyvalue.Budget(1 << 20)))))


Point = collections.namedtuple("Point", "x y")


def repr_id(value):
    return type(value).__name__


@pytest.mark.parametrize("value", [
    None, True, 0, -7, -(2**20000), 1.5, float("inf"), "text\udc80", b"\x00\xff", bytearray(b"a"),
    [1, [2, (3, 4)]], (1,), {1: "a", (2, 3): [4]}, {1, 2}, frozenset({"a"}), 3 - 4j,
    Fraction(1, 3)], ids=repr_id)
def test_plain_data_round_trips_exactly(value):
    back = roundtrip(value)
    assert back == value and type(back) is type(value)


def test_subclasses_that_keep_comparisons_travel_as_their_base():
    assert roundtrip(Point(1, 2)) == (1, 2) and type(roundtrip(Point(1, 2))) is tuple
    counts = collections.Counter("aab")
    assert roundtrip(counts) == {"a": 2, "b": 1} and type(roundtrip(counts)) is dict


class AlwaysEqual(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize("value", [AlwaysEqual(8), iter([8]), type("E", (), {})()])
def test_anything_else_is_opaque_and_equals_nothing(value):
    back = roundtrip(value)
    assert isinstance(back, pyvalue.Opaque) and back != 8 and back != back.__class__()


def test_bounds():
    loop: list = [8]
    loop.append(loop)
    deep: list = []
    for _ in range(pyvalue.MAX_DEPTH + 5):
        deep = [deep]
    for value in (loop, deep, list(range(pyvalue.MAX_ITEMS + 1))):
        assert pyvalue.encode(value, pyvalue.Budget(1 << 20))["t"] == "opaque"
    assert pyvalue.encode("x" * 1000, pyvalue.Budget(100))["t"] == "opaque"


@pytest.mark.parametrize("data", [{"t": "set", "v": [[1]]}, {"t": "nope"}, {"t": "dict", "v": [1]},
                                  {"t": "int", "v": "zz"}, {"t": "complex", "v": ["a", 1]}])
def test_malformed_values_are_refused(data):
    with pytest.raises((ValueError, TypeError)):
        pyvalue.decode(data)


@pytest.mark.parametrize("template", [
    "assert __ic_unit__(0) == 8",
    "assert set(__ic_unit__(0)) == {1, 2} and len(__ic_unit__(1)) > 0",
    "assert sorted(__ic_unit__(0), key=len, reverse=True) == [[1], [1, 2]]",
    "assert str(__ic_unit__(0)) == '1' and int(__ic_unit__(1), 16) == 1",
    "assert __ic_unit__(0) == 1, 'a message'",
    "assert int(__ic_unit__(0)) == -1 + 2 * 3 and isinstance(__ic_unit__(1), int)",
    "__ic_unit__(0)[1:2]",
])
def test_templates_that_only_compute_are_pure(template):
    assert pure_template(template)


@pytest.mark.parametrize("template", [
    "assert math.isclose(__ic_unit__(0), 1)",  # a name that is not a pure builtin
    "assert __ic_unit__(0).count(2) == 1",  # any attribute
    "assert (x for x in ()).gi_frame.f_builtins['exec']('import random')",
    "assert [0 for __import__ in ()] or __import__('random').seed(5)",  # a bound name
    "assert (lambda exec: 0) and exec('import builtins')",
    "assert 'x'.encode('idna')", "assert f'{__ic_unit__(0)}' == '1'",
    "assert str(b'x', 'hz') == 'x'", "assert str(b'x', encoding='hz')",  # a codec lookup
    "assert sorted(__ic_unit__(0), cmp=1)",
    "assert [x for x in __ic_unit__(0)]", "assert sorted(**{})",
    "assert getattr(__ic_unit__(0), 'x')", "assert __import__('os')", "assert exec('x=1')",
    "assert globals()", "assert print(1) is None", "assert open('f')",
    "assert (y := __ic_unit__(0))", "x = __ic_unit__(0)", "del x", "import os",
    "assert 1; assert 2", "assert (", "",
])
def test_templates_that_could_change_anything_are_not(template):
    assert not pure_template(template)


def test_every_split_says_whether_its_template_is_pure():
    assert split_test("assert f(1) == [1]").pure
    assert not split_test("assert f(1) == [1] or __import__('random').seed(5)").pure


@pytest.mark.parametrize(("units", "here"), [
    ([{"v": [1, {"t": "set", "v": [2]}, {"t": "dict", "v": [[1, {"t": "bytes", "v": "00"}]]}]},
      {"raise": ["ValueError", "no"]}, "garbled"], True),
    ([{"v": {"t": "module", "v": "random"}}], False),
    ([{"v": [{"t": "opaque", "type": "X"}]}], False),
    ([{"v": {"t": "dict", "v": [[{"t": "decimal", "v": "1"}, 2]]}}], False),
    ([{"v": {"t": "fraction", "v": ["1", "2"]}}], False),
    ([{"v": {"t": [], "v": 1}}], False), ([{"v": [{"t": {"a": 1}, "v": 1}]}], False),
])
def test_the_judge_runs_in_place_only_on_plain_values(units, here):
    request = {"tests": [{"template": "assert __ic_unit__(0)", "units": units}], "here": True}
    assert pyscore._here(request) is here
    assert not pyscore._here(dict(request, here=False))
    assert not pyscore._here(dict(request, gold={"tests": []}))
