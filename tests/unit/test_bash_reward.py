"""``bash_reward`` and ``common_added`` against hand-computed values.

Upstream (``get_reward`` in InterCode's ``bash_env.py``) computes, as floats summed in
this order::

    reward = 0.01
    reward += p1 = round(0.33 * (1 - erf(#missing + #extra)), 2)
    reward += p2 = 0.33, or round(0.33 * equal_hashes / common_added, 2)
    reward += p3 = round(0.33 * similarity, 2)

where ``similarity`` is a ``numpy.float64`` from TF-IDF (so ``round`` there is numpy's:
``rint(x * 100) / 100``) or, when scikit-learn raises, ``1 if agent == gold else 0``.
Every expected value below is a literal worked out in the comments, not a call to
the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from intercode.rewards.bash import (
    BashReward,
    BashSnapshot,
    bash_reward,
    common_added,
    round_like_numpy,
)
from intercode.sandbox.base import Change


def snap(*changes: tuple[str, str], output: str | None = "") -> BashSnapshot:
    return BashSnapshot(changes=tuple(Change(path, code) for path, code in changes),
                        output=output)


def changes(*pairs: tuple[str, str]) -> list[Change]:
    return [Change(path, code) for path, code in pairs]


# ---------------------------------------------------------------- everything right


def test_identical_snapshots_score_exactly_one() -> None:
    side = snap(("new.txt", "A"), ("out", "??"), ("copy.txt", "C"), ("conf.ini", "M"),
                ("old.txt", "D"), output="hello world\n")
    hashes = {"new.txt": "h1", "out": "h2", "copy.txt": "h3"}
    result = bash_reward(side, side, hashes, dict(hashes))
    # p1: nothing missing or extra: 0.33 * (1 - erf(0)) = 0.33.
    # p2: three common added paths (A, ??, C), all equal: 0.33 * 3/3 = 0.33.
    # p3: idf of both terms is ln(3/3) + 1 = 1, both rows are (1, 1) / sqrt(2), so the
    #     cosine is 2 * (1/sqrt(2))^2, which in floats is 0.9999999999999998 (scikit-learn
    #     gives the same; test_tfidf checks it bit for bit); 0.33 * that rounds to 0.33.
    # 0.01 + 0.33 = 0.34; 0.34 + 0.33 = 0.67; 0.67 + 0.33 = 1.0 exactly in floats.
    assert result.similarity == 0.9999999999999998
    assert result.file_diff == 0.33
    assert result.file_changes == 0.33
    assert result.answer_similarity == 0.33
    assert result.reward == 1.0
    assert result.success is True
    assert result.diff_miss == () and result.diff_extra == ()
    assert result.diff_same == (Change("copy.txt", "C"), Change("new.txt", "A"),
                                Change("out", "??"))
    assert result.same_correct == 3


def test_no_changes_and_same_output_is_success() -> None:
    # p1 = 0.33 (no differences), p2 = 0.33 (nothing added in common), p3: both outputs
    # empty -> scikit-learn raises (empty vocabulary) -> equal -> 1 -> 0.33.
    result = bash_reward(snap(), snap(), {}, {})
    assert (result.file_diff, result.file_changes, result.answer_similarity) == (0.33, 0.33, 0.33)
    assert result.similarity == 1.0
    assert result.reward == 1.0 and result.success


def test_duplicate_changes_count_once() -> None:
    """Upstream compares sets of (path, status) pairs."""
    agent = snap(("a.txt", "A"), ("a.txt", "A"), output="done ok")
    gold = snap(("a.txt", "A"), output="done ok")
    result = bash_reward(agent, gold, {"a.txt": "x"}, {"a.txt": "x"})
    assert result.file_diff == 0.33 and result.file_changes == 0.33
    assert result.reward == 1.0


# ---------------------------------------------------------------- part 1: the file diff


def test_one_missing_change() -> None:
    # erf(1) = 0.8427007929497149, 1 - erf(1) = 0.1572992070502851,
    # 0.33 * 0.1572992070502851 = 0.05190873832659409 -> round(., 2) = 0.05.
    gold = snap(("out.txt", "A"), output="")
    result = bash_reward(snap(output=""), gold, {}, {})
    assert result.file_diff == 0.05
    assert result.diff_miss == (Change("out.txt", "A"),)
    assert result.diff_extra == ()
    # p2: nothing added by both -> 0.33; p3: both empty -> 0.33.
    # 0.01 + 0.05 = 0.060000000000000005; + 0.33 = 0.39; + 0.33 = 0.72 (as floats).
    assert result.file_changes == 0.33 and result.answer_similarity == 0.33
    assert result.reward == 0.72
    assert not result.success


def test_one_extra_change() -> None:
    agent = snap(("junk.txt", "??"), output="")
    result = bash_reward(agent, snap(output=""), {}, {})
    assert result.file_diff == 0.05  # same arithmetic as one missing change
    assert result.diff_extra == (Change("junk.txt", "??"),)
    assert result.diff_miss == ()
    assert result.reward == 0.72


@pytest.mark.parametrize(("agent", "gold"), [
    # 2 differences: 0.33 * (1 - erf(2)) = 0.33 * 0.004677734981047266
    #                = 0.0015436525437456051 -> 0.0
    pytest.param((), (("a", "A"), ("b", "A")), id="two missing"),
    pytest.param((("a", "A"),), (("b", "A"),), id="one missing one extra"),
    # a status change is a different pair: one missing plus one extra
    pytest.param((("f.txt", "M"),), (("f.txt", "D"),), id="status differs"),
    # 3 differences: 0.33 * (1 - erf(3)) = 7.29e-06 -> 0.0
    pytest.param((("x", "A"), ("y", "M"), ("z", "D")), (), id="three extra"),
])
def test_two_or_more_differences_score_zero(agent: tuple, gold: tuple) -> None:
    result = bash_reward(snap(*agent), snap(*gold), {}, {})
    assert result.file_diff == 0.0
    # 0.01 + 0.0 = 0.01; + 0.33 = 0.34; + 0.33 = 0.67.
    assert result.reward == 0.67


# ---------------------------------------------------------------- part 2: added files


@pytest.mark.parametrize(("equal", "total", "expected"), [
    (2, 2, 0.33),   # 0.33 * 1.0 = 0.33
    # 0.33 * 0.5: the float 0.33 is 0.330000000000000015543..., halving it is exact,
    # 0.165000000000000007771..., which lies above the tie 0.165, so Python's
    # correctly rounded round(., 2) gives 0.17 (upstream's p2 is a Python float,
    # so this is upstream's value too; numpy's rounding would give 0.16 here).
    (1, 2, 0.17),
    (0, 2, 0.0),    # 0.33 * 0.0
    (1, 3, 0.11),   # 0.33 * 0.3333333333333333 = 0.11 (float 0.11) -> 0.11
    (2, 3, 0.22),   # 0.33 * 0.6666666666666666 = 0.22 (float 0.22) -> 0.22
    (3, 4, 0.25),   # 0.33 * 0.75 = 0.2475 -> nearest of 0.24 / 0.25 is 0.25
    (1, 4, 0.08),   # 0.33 * 0.25 = 0.0825 -> nearest of 0.08 / 0.09 is 0.08
    (0, 1, 0.0),
])
def test_common_added_files_compare_hashes(equal: int, total: int, expected: float) -> None:
    codes = ["A", "??", "C"]
    paths = [(f"p{i}.txt", codes[i % 3]) for i in range(total)]
    agent_hashes = {path: f"hash-{path}" for path, _ in paths}
    gold_hashes = {path: (f"hash-{path}" if i < equal else "other")
                   for i, (path, _) in enumerate(paths)}
    result = bash_reward(snap(*paths), snap(*paths), agent_hashes, gold_hashes)
    assert result.file_changes == expected
    assert result.same_correct == equal
    assert len(result.diff_same) == total
    assert result.file_diff == 0.33


def test_one_of_two_hashes_equal_full_reward() -> None:
    paths = (("a.txt", "A"), ("b.txt", "??"))
    result = bash_reward(snap(*paths, output="ok ok"), snap(*paths, output="ok ok"),
                         {"a.txt": "1", "b.txt": "2"}, {"a.txt": "1", "b.txt": "3"})
    # 0.01 + 0.33 = 0.34; + 0.17 = 0.51; + 0.33 = 0.8400000000000001 (float sum).
    assert result.file_changes == 0.17
    assert result.reward == 0.8400000000000001


def test_modified_common_changes_are_not_hashed() -> None:
    """Only A, ?? and C are compared; M and D are not looked up at all (empty maps)."""
    both = (("conf.ini", "M"), ("old.txt", "D"), ("dir/x", "R"))
    result = bash_reward(snap(*both), snap(*both), {}, {})
    assert result.file_changes == 0.33
    assert result.diff_same == ()
    assert result.same_correct == 0
    assert result.reward == 1.0


def test_mixed_common_changes_only_added_ones_count() -> None:
    both = (("new.txt", "A"), ("conf.ini", "M"))
    result = bash_reward(snap(*both), snap(*both), {"new.txt": "a", "conf.ini": "x"},
                         {"new.txt": "b", "conf.ini": "x"})
    # One common added file, hashes differ: 0.33 * 0/1 = 0.0; the equal M is ignored.
    assert result.file_changes == 0.0
    assert result.diff_same == (Change("new.txt", "A"),)
    # 0.01 + 0.33 = 0.34; + 0.0 = 0.34; + 0.33 (both outputs empty) = 0.67.
    assert result.reward == 0.67


def test_one_sided_added_files_are_not_hashed() -> None:
    agent = snap(("mine.txt", "A"))
    gold = snap(("theirs.txt", "A"))
    result = bash_reward(agent, gold, {}, {})  # a lookup would raise KeyError
    assert result.file_changes == 0.33
    assert result.file_diff == 0.0


def test_common_added() -> None:
    agent = changes(("b.txt", "A"), ("a", "??"), ("c.txt", "C"), ("m.txt", "M"),
                    ("d.txt", "D"), ("x.txt", "A"), ("s.txt", "A"))
    gold = changes(("c.txt", "C"), ("a", "??"), ("b.txt", "A"), ("m.txt", "M"),
                   ("d.txt", "D"), ("y.txt", "A"), ("s.txt", "??"))
    # Common pairs: b.txt A, a ??, c.txt C, m.txt M, d.txt D; s.txt differs in status.
    assert common_added(agent, gold) == ["a", "b.txt", "c.txt"]
    assert common_added(agent, []) == []
    assert common_added([], gold) == []


# ---------------------------------------------------------------- part 3: the answer


def test_partial_similarity_two_terms() -> None:
    # "aa bb" vs "aa cc": df(aa) = 2, df(bb) = df(cc) = 1;
    # idf(aa) = ln(3/3) + 1 = 1, idf(bb) = idf(cc) = w = ln(3/2) + 1 = 1.4054651081081644.
    # Rows (1, w, 0) and (1, 0, w), each of norm sqrt(1 + w^2); w^2 = 1.9753321701094941.
    # Cosine = 1 / (1 + w^2) = 1 / 2.975332170109494 = 0.33609692727625745
    # (the float sum gives 0.3360969272762574, one ulp lower).
    # p3 = round(0.33 * 0.33609692727625745, 2) = round(0.1109119860..., 2) = 0.11.
    result = bash_reward(snap(output="aa bb"), snap(output="aa cc"), {}, {})
    assert result.similarity == pytest.approx(0.33609692727625745, abs=1e-15)
    assert result.answer_similarity == 0.11
    # 0.01 + 0.33 = 0.34; + 0.33 = 0.67; + 0.11 = 0.78.
    assert result.reward == 0.78


def test_partial_similarity_and_float_summation_order() -> None:
    # "aa" vs "aa bb cc": rows (1, 0, 0) and (1, w, w) with w as above, so the cosine is
    # 1 / sqrt(1 + 2 w^2) = 1 / sqrt(4.950664340218989) = 1 / 2.22500884... = 0.44943641652...
    # p3 = round(0.33 * 0.4494364165239821, 2) = round(0.14831401745..., 2) = 0.15.
    result = bash_reward(snap(output="aa"), snap(output="aa bb cc"), {}, {})
    assert result.similarity == pytest.approx(0.4494364165239821, abs=1e-15)
    assert result.answer_similarity == 0.15
    # Summed left to right as upstream does: 0.01 + 0.33 = 0.34, + 0.33 = 0.67,
    # 0.67 + 0.15 = 0.8200000000000001 -- the value upstream recorded, not 0.82.
    assert result.reward == 0.8200000000000001
    assert result.reward != 0.82


def test_answer_part_uses_numpy_rounding_like_upstream() -> None:
    # Counts (1, 1, 1, 4) and (5, 5, 5, 1) over aa..dd, all terms shared so every idf is 1:
    # dot = 5 + 5 + 5 + 4 = 19, |c|^2 = 19, |d|^2 = 76, cosine = 19 / sqrt(1444) = 0.5,
    # and the float computation (scikit-learn's and ours) lands exactly on 0.5.
    # 0.33 * 0.5 = 0.165000000000000007771... Upstream's similarity is a numpy.float64,
    # so round(., 2) is numpy's: 0.165... * 100 = 16.5 (rounded), rint -> 16 (ties to
    # even), / 100 -> 0.16. Python's round on a float would say 0.17.
    agent = snap(output="aa bb cc dd dd dd dd")
    gold = snap(output="aa aa aa aa aa bb bb bb bb bb cc cc cc cc cc dd")
    result = bash_reward(agent, gold, {}, {})
    assert result.similarity == 0.5
    assert result.answer_similarity == 0.16
    # 0.01 + 0.33 = 0.34; + 0.33 = 0.67; + 0.16 = 0.8300000000000001.
    assert result.reward == 0.8300000000000001


def test_round_like_numpy() -> None:
    # Half-cent floats where Python's and numpy's rounding part ways, and plain ones.
    for value, python, numpy_ in [(0.165, 0.17, 0.16), (0.175, 0.17, 0.18),
                                  (0.005, 0.01, 0.0), (0.325, 0.33, 0.32),
                                  (0.33, 0.33, 0.33), (0.11, 0.11, 0.11), (0.0, 0.0, 0.0)]:
        assert round(value, 2) == python
        assert round(np.float64(value), 2) == numpy_
        assert round_like_numpy(value) == numpy_
        assert type(round_like_numpy(value)) is float


@pytest.mark.parametrize(("agent", "gold", "similarity", "answer"), [
    # No tokens at all -> scikit-learn raises -> 1 if equal else 0.
    pytest.param("", "", 1.0, 0.33, id="both empty"),
    pytest.param(" \n", " \n", 1.0, 0.33, id="same whitespace"),
    pytest.param(" ", "\n", 0.0, 0.0, id="different whitespace"),
    pytest.param("a b", "a b", 1.0, 0.33, id="same single-char tokens"),
    pytest.param("a", "b", 0.0, 0.0, id="different single-char tokens"),
    pytest.param("a b", "b a", 0.0, 0.0, id="single-char tokens reordered"),
    # One side has tokens -> no error, the empty row makes the cosine 0.
    pytest.param("", "hello world", 0.0, 0.0, id="agent empty"),
    pytest.param("hello world", "", 0.0, 0.0, id="gold empty"),
    # None (upstream: TfidfVectorizer fails on None -> bare except -> equality).
    pytest.param(None, None, 1.0, 0.33, id="both None"),
    pytest.param(None, "", 0.0, 0.0, id="agent None"),
    pytest.param("hello", None, 0.0, 0.0, id="gold None"),
])
def test_answer_fallbacks(agent: str | None, gold: str | None, similarity: float,
                          answer: float) -> None:
    result = bash_reward(snap(output=agent), snap(output=gold), {}, {})
    assert result.similarity == similarity
    assert result.answer_similarity == answer
    # 0.01 + 0.33 + 0.33 = 0.67, then + 0.33 = 1.0 or + 0.0 = 0.67.
    assert result.reward == (1.0 if answer == 0.33 else 0.67)


# ---------------------------------------------------------------- the result object


def _result(reward: float) -> BashReward:
    return BashReward(reward=reward, file_diff=0.33, file_changes=0.33,
                      answer_similarity=0.32, similarity=0.97, diff_miss=(),
                      diff_extra=(), diff_same=(), same_correct=0)


def test_success_threshold() -> None:
    assert _result(0.99).success is False
    assert _result(0.67).success is False
    assert _result(1.0).success is True


def test_parts_have_upstream_keys() -> None:
    parts = _result(0.99).parts()
    assert list(parts) == ["file_diff", "file_changes", "answer_similarity"]
    assert parts == {"file_diff": 0.33, "file_changes": 0.33, "answer_similarity": 0.32}
    result = bash_reward(snap(output="aa"), snap(("x", "A"), output="aa bb cc"), {}, {})
    assert result.parts() == {"file_diff": 0.05, "file_changes": 0.33,
                              "answer_similarity": 0.15}
