"""``tfidf_cosine`` / ``answer_similarity`` against scikit-learn, computed as upstream does.

Upstream InterCode's Bash reward fits ``TfidfVectorizer()`` on ``[agent, gold]`` and
takes ``(X * X.T).toarray()[0][1]`` (``X * X.T`` is the matrix product for the scipy
sparse *matrix* scikit-learn returns; ``@`` is used here so the test keeps meaning the
product if that ever becomes a sparse *array*). When that raises (empty vocabulary),
the similarity is ``1 if agent == gold else 0``.

For every pair, in both orders, the tests check that our value is within 1e-12 of
scikit-learn's and that the rounded answer part agrees: with Python's ``round`` on
floats, and with upstream's own rounding, which is numpy's because the similarity is a
``numpy.float64``. A separate test checks the values are bit-identical; the rounding
boundary family below is where that matters (a cosine of exactly 5/6 can come out as
0.8333333333333333 or 0.8333333333333335 depending on the summation order, giving an
answer part of 0.27 or 0.28).
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from intercode.rewards.bash import round_like_numpy
from intercode.rewards.tfidf import answer_similarity, tfidf_cosine, tokens

# ---------------------------------------------------------------- the reference


@functools.cache
def sklearn_similarity(first: str, second: str) -> np.float64 | None:
    """Upstream's value, or ``None`` where scikit-learn raises ``ValueError``."""
    try:
        matrix = TfidfVectorizer().fit_transform([first, second])
    except ValueError:
        return None
    return (matrix @ matrix.T).toarray()[0][1]


def mismatch(first: str, second: str) -> str | None:
    """Why our functions disagree with scikit-learn on this pair (``None`` if they agree)."""
    expected = sklearn_similarity(first, second)
    ours = tfidf_cosine(first, second)
    answer = answer_similarity(first, second)
    if expected is None:
        fallback = 1.0 if first == second else 0.0
        if ours is not None:
            return f"scikit-learn raised ValueError but tfidf_cosine gave {ours!r}"
        if answer != fallback:
            return f"fallback: answer_similarity gave {answer!r}, expected {fallback!r}"
        return None
    if not isinstance(ours, float):
        return f"tfidf_cosine gave {ours!r}, scikit-learn {expected!r}"
    if not abs(ours - float(expected)) < 1e-12:
        return f"value: ours {ours!r}, scikit-learn {expected!r}"
    if round(0.33 * ours, 2) != round(0.33 * float(expected), 2):
        return f"Python rounding: ours {ours!r}, scikit-learn {expected!r}"
    # Upstream: ``round(0.33 * numpy.float64, 2)``, i.e. numpy's rounding.
    if round_like_numpy(0.33 * ours) != round(0.33 * expected, 2):
        return f"numpy rounding: ours {ours!r}, scikit-learn {expected!r}"
    if answer != ours:
        return f"answer_similarity gave {answer!r}, tfidf_cosine {ours!r}"
    return None


def check_all(pairs: list[tuple[str, str]]) -> None:
    """Assert agreement on every pair, in both orders, reporting the first few failures."""
    failures = []
    for first, second in pairs:
        for a, b in ((first, second), (second, first)):
            why = mismatch(a, b)
            if why is not None:
                failures.append(f"{a[:60]!r} / {b[:60]!r}: {why}")
    assert not failures, f"{len(failures)} mismatches, e.g.:\n" + "\n".join(failures[:10])


# ---------------------------------------------------------------- hand-picked pairs

LS_LONG = """total 24
drwxr-xr-x 2 root root 4096 Jun  3 10:21 backup
-rw-r--r-- 1 root root  220 Jun  3 10:21 .bashrc
-rwxr-xr-x 1 root root 1024 Jun  3 10:21 deploy.sh
-rw-r--r-- 1 root root   12 Jun  3 10:21 file1.txt
lrwxrwxrwx 1 root root    9 Jun  3 10:21 link -> file1.txt
"""
LS_LONG_CHANGED = LS_LONG.replace("12 Jun", "48 Jun").replace("backup", "backups")
MD5 = "d41d8cd98f00b204e9800998ecf8427e  /testbed/empty.txt\n"
MD5_TWO = MD5 + "5d41402abc4b2a76b9719d911017c592  /testbed/hello.txt\n"
FIND = "/testbed\n/testbed/dir1\n/testbed/dir1/a.py\n/testbed/dir2/b_test.py\n"
ERRORS = {
    "ls": "ls: cannot access 'nope': No such file or directory\n",
    "cmd": "bash: foo: command not found\n",
    "find": "find: ‘/root’: Permission denied\n",
    "sh": "/bin/sh: 1: Syntax error: \"(\" unexpected\n",
    "py": 'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n'
          "ZeroDivisionError: division by zero\n",
}
WC = "  3  12  80 file.txt\n 10  40 200 other.txt\n 13  52 280 total\n"
DU = "4.0K\t./a\n8.0K\t./b\n12K\t.\n"
PS = "  PID TTY          TIME CMD\n    1 ?        00:00:00 bash\n   42 ?        00:00:00 ps\n"
JSON = '{"name": "intercode", "version": "0.1.0", "files": ["a.txt", "b.txt"]}'


def _ls_listing(count: int, size_of) -> str:
    return "".join(f"-rw-r--r-- 1 user group {size_of(i):>6} Jan 1 00:00 file_{i:05d}.log\n"
                   for i in range(count))


def _long_words(seed: int, count: int) -> str:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
    return " ".join(rng.choice(words) + str(rng.randrange(50)) for _ in range(count))


HAND_PICKED: list[tuple[str, str, str]] = [
    # empty, whitespace, tokens scikit-learn drops (ValueError -> equality fallback)
    ("both empty", "", ""),
    ("empty vs space", "", " "),
    ("same spaces", "   ", "   "),
    ("newline vs newline", "\n", "\n"),
    ("whitespace mix", "\t\n ", "  \r\n"),
    ("single char same", "a", "a"),
    ("single chars differ", "a", "b"),
    ("single chars same text", "a b c", "a b c"),
    ("single chars reordered", "a b c", "c b a"),
    ("punctuation only same", "!!! ??? ...", "!!! ??? ..."),
    ("punctuation only differ", "!!!", "???"),
    ("dash", "-", "-"),
    ("empty vs single char", "", "x"),
    ("single CJK chars", "中 文", "中 文"),
    ("emoji only", "😀 😀", "😀 😀"),
    ("combining mark only", "\u0301\u0301", "\u0301\u0301"),
    # one side without tokens, the other with some (no error, cosine 0)
    ("empty vs word", "", "ok"),
    ("single char vs word", "x", "ok"),
    ("punct vs word", "...", "hello"),
    ("whitespace vs words", " \n\t", "hello world"),
    # plain overlaps
    ("identical two words", "hello world", "hello world"),
    ("disjoint", "foo bar", "baz qux"),
    ("half overlap", "aa bb", "aa cc"),
    ("subset", "aa", "aa bb cc"),
    ("superset", "aa bb", "aa bb cc"),
    ("repeated tokens", "aa aa aa aa bb", "aa bb bb"),
    ("repeated vs once", "yes yes yes yes", "yes"),
    ("case only", "Hello WORLD", "hello world"),
    ("mixed case tokens", "FiLe.TXT ReadMe", "file.txt README"),
    ("order differs", "one two three", "three two one"),
    # punctuation and separators
    ("punct separated", "foo,bar;baz", "foo bar baz"),
    ("apostrophes", "can't won't don't", "can not will not"),
    ("hyphen and dots", "e-mail v1.2.3 C++ c# .NET", "email v1 c"),
    ("paths", "/usr/local/bin/python3", "/usr/bin/python3"),
    ("quotes", "'single' \"double\" `back`", "single double back"),
    ("crlf", "line one\r\nline two\r\n", "line one\nline two\n"),
    ("no separator merges", "foobar", "foo bar"),
    # underscores and numbers
    ("underscores", "__init__ _ __ a_b _x_", "init a_b __init__"),
    ("lone underscores", "__ ___", "__"),
    ("numbers", "3.14 2.71 1e10 -42 0x1F 007", "3 14 2 71 1e10 42"),
    ("digits only", "123 456 123", "123"),
    ("version strings", "Python 3.11.7", "python 3.12.0"),
    # unicode letters and digits
    ("accents and case", "café naïve résumé", "CAFÉ NAÏVE resume"),
    ("nfd vs nfc", "cafe\u0301", "café"),
    ("sharp s", "Straße", "STRASSE"),
    ("final sigma", "ΟΔΟΣ οδος", "οδοσ ΟΔΟΣ"),
    ("dotted capital I", "İstanbul", "istanbul"),
    ("kelvin sign", "\u212a\u212a test", "kk test"),
    ("titlecase digraph", "ǅemal", "džemal"),
    ("ligature", "ﬁle ﬁnd", "file find"),
    ("fullwidth", "ＡＢＣ ｄｅｆ", "abc def"),
    ("cjk runs", "日本語 テキスト", "日本語のテキスト"),
    ("cjk vs cjk", "中文 中文 测试", "中文 测试 测试"),
    ("arabic-indic digits", "١٢٣ ٤٥", "١٢٣ 45"),
    ("superscripts", "x² y³ m²", "x2 m²"),
    ("cyrillic", "Привет мир", "привет Мир мир"),
    ("hebrew", "שלום עולם", "שלום"),
    ("emoji between words", "ok😀ok done", "ok ok done"),
    ("zero width joiner", "ab\u200dcd", "ab cd"),
    ("nul and controls", "ab\x00cd\x07ef", "ab cd ef"),
    # realistic shell output
    ("ls -l same", LS_LONG, LS_LONG),
    ("ls -l changed", LS_LONG, LS_LONG_CHANGED),
    ("ls -l vs ls", LS_LONG, "backup\ndeploy.sh\nfile1.txt\nlink\n"),
    ("md5sum same", MD5, MD5),
    ("md5sum one vs two", MD5, MD5_TWO),
    ("md5sum path differs", MD5, MD5.replace("/testbed/", "./")),
    ("find", FIND, FIND.replace("dir2", "dir3")),
    ("wc", WC, "13 52 280 total\n"),
    ("du", DU, "12K\t.\n"),
    ("ps", PS, PS.replace("42", "43")),
    ("json", JSON, JSON.replace("0.1.0", "0.2.0")),
    ("error vs output", ERRORS["ls"], "file1.txt\n"),
    ("error vs error", ERRORS["ls"], ERRORS["cmd"]),
    ("unicode error quotes", ERRORS["find"], "find: '/root': Permission denied\n"),
    ("sh syntax error", ERRORS["sh"], ERRORS["sh"]),
    ("traceback", ERRORS["py"], "ZeroDivisionError: division by zero\n"),
    ("error vs empty", ERRORS["cmd"], ""),
    # very long outputs
    ("long ls listing", _ls_listing(3000, lambda i: i * 7 % 9973),
     _ls_listing(3000, lambda i: i * 7 % 9973 if i % 10 else 0)),
    ("long listing vs short", _ls_listing(2000, lambda i: i), "file_00001.log\n"),
    ("yes repeated", "y\nyes\n" * 20000, "yes\n" * 10),
    ("one huge token", "x" * 200_000, "x" * 200_000 + " tail"),
    ("long word soup", _long_words(1, 30000), _long_words(2, 30000)),
    ("long vs its prefix", _long_words(3, 20000), _long_words(3, 20000)[:5000]),
    # on a rounding boundary: the exact cosine makes 0.33 x it a half-cent
    ("boundary 5/6", "dd cc bb aa", "dd cc bb bb bb aa aa aa aa aa"),
    ("boundary 5/6 other order", "dd cc bb aa", "dd dd dd dd dd cc bb aa aa aa"),
    ("boundary 1/2", "aa bb cc dd dd dd dd",
     "aa aa aa aa aa bb bb bb bb bb cc cc cc cc cc dd"),
    ("boundary 1/2 small", "aa bb cc cc cc cc", "aa bb bb bb bb cc"),
    ("boundary 15/22", "aa bb cc cc dd dd dd dd", "aa bb bb cc cc cc cc dd"),
]


@pytest.mark.parametrize(("first", "second"), [pytest.param(a, b, id=name)
                                               for name, a, b in HAND_PICKED])
def test_hand_picked_pair(first: str, second: str) -> None:
    check_all([(first, second)])


def test_hand_picked_fallback_cases_really_use_the_fallback() -> None:
    """The pairs scikit-learn rejects, and what the fallback gives for them."""
    rejected = {name: answer_similarity(a, b) for name, a, b in HAND_PICKED
                if sklearn_similarity(a, b) is None}
    assert rejected == {
        "both empty": 1.0, "empty vs space": 0.0, "same spaces": 1.0,
        "newline vs newline": 1.0, "whitespace mix": 0.0, "single char same": 1.0,
        "single chars differ": 0.0, "single chars same text": 1.0,
        "single chars reordered": 0.0, "punctuation only same": 1.0,
        "punctuation only differ": 0.0, "dash": 1.0, "empty vs single char": 0.0,
        "single CJK chars": 1.0, "emoji only": 1.0, "combining mark only": 1.0,
    }


def test_one_side_without_tokens_is_zero_not_fallback() -> None:
    for name in ("empty vs word", "single char vs word", "punct vs word",
                 "whitespace vs words", "error vs empty"):
        _, first, second = next(p for p in HAND_PICKED if p[0] == name)
        assert sklearn_similarity(first, second) == 0.0
        assert tfidf_cosine(first, second) == 0.0
        assert tfidf_cosine(second, first) == 0.0


def test_none_outputs_use_equality() -> None:
    assert answer_similarity(None, None) == 1.0
    assert answer_similarity(None, "") == 0.0
    assert answer_similarity("hello world", None) == 0.0


# ---------------------------------------------------------------- generated pairs

VOCABULARY = [
    "ls", "file", "txt", "dir", "root", "error", "denied", "md5", "log", "a", "b", "x",
    "é", "café", "naïve", "ß", "日本", "中", "x1", "42", "3.14", "007", "foo_bar", "_",
    "__init__", "-rw-r--r--", "/home/user", "can't", "e-mail", "ok!", "(none)", "İ",
]
SEPARATORS = [" ", " ", " ", "\n", "\t", "  ", "\r\n", ",", ".", "/", ":", "-", ""]


def _recase(rng: random.Random, token: str) -> str:
    style = rng.randrange(5)
    if style == 0:
        return token.upper()
    if style == 1:
        return token.title()
    if style == 2:
        return "".join(c.upper() if rng.random() < 0.5 else c for c in token)
    return token


def _text(rng: random.Random, words: list[str]) -> str:
    parts = []
    for word in words:
        parts.append(_recase(rng, word))
        parts.append(rng.choice(SEPARATORS))
    if rng.random() < 0.3:
        parts.insert(0, rng.choice([" ", "\n", "> ", "$ "]))
    return "".join(parts)


def _random_pair(rng: random.Random) -> tuple[str, str]:
    first = [rng.choice(VOCABULARY) for _ in range(rng.randrange(0, 16))]
    if rng.random() < 0.6:  # derive the second text from the first: many overlaps
        second = list(first)
        for _ in range(rng.randrange(0, 5)):
            op = rng.randrange(4)
            if op == 0 and second:
                second.pop(rng.randrange(len(second)))
            elif op == 1:
                second.insert(rng.randrange(len(second) + 1), rng.choice(VOCABULARY))
            elif op == 2 and second:
                second.append(rng.choice(second))
            else:
                rng.shuffle(second)
    else:
        second = [rng.choice(VOCABULARY) for _ in range(rng.randrange(0, 16))]
    return _text(rng, first), _text(rng, second)


RANDOM_PAIRS = [_random_pair(random.Random(f"tfidf-{i}")) for i in range(2000)]


def test_random_pairs() -> None:
    check_all(RANDOM_PAIRS)


def test_random_pairs_cover_all_kinds() -> None:
    """The generator really yields fallbacks, zeros, partial overlaps and identities."""
    values = [sklearn_similarity(a, b) for a, b in RANDOM_PAIRS]
    assert sum(v is None for v in values) >= 20
    assert sum(v == 0.0 for v in values if v is not None) >= 50
    assert sum(0.0 < v < 0.999 for v in values if v is not None) >= 1000
    assert sum(v > 0.999 for v in values if v is not None) >= 50


def _boundary_pairs() -> list[tuple[str, str]]:
    """Pairs whose exact cosine is (2k + 1) / 66, so 0.33 x it is a half-cent.

    All terms are in both texts, so every idf is 1 and the cosine of the count
    vectors ``c`` and ``d`` is ``c.d / (|c| |d|)``: it is (2k + 1) / 66 exactly when
    ``(66 c.d)^2 / (|c|^2 |d|^2)`` is the square of an odd integer below 66.
    """
    names = ["aa", "bb", "cc", "dd"]
    pairs = []
    for size in (1, 2, 3, 4):
        vectors = [(c, sum(x * x for x in c)) for c in itertools.product(range(1, 6), repeat=size)]
        for (c, c2), (d, d2) in itertools.product(vectors, repeat=2):
            dot = sum(x * y for x, y in zip(c, d, strict=True))
            quotient, remainder = divmod(66 * 66 * dot * dot, c2 * d2)
            root = math.isqrt(quotient)
            if remainder or root * root != quotient or root % 2 == 0:
                continue
            assert Fraction(dot * dot, c2 * d2) == Fraction(root, 66) ** 2 and root < 66
            for order in (names[:size], names[:size][::-1]):
                pairs.append((
                    " ".join(" ".join([t] * n) for t, n in zip(order, c, strict=True)),
                    " ".join(" ".join([t] * n) for t, n in zip(order, d, strict=True)),
                ))
    return pairs


BOUNDARY_PAIRS = _boundary_pairs()


def test_rounding_boundary_pairs() -> None:
    assert len(BOUNDARY_PAIRS) > 1000
    check_all(BOUNDARY_PAIRS)


def test_bit_identical_to_scikit_learn() -> None:
    """Same summation order as scikit-learn's sparse rows, so the very same floats."""
    pairs = [(a, b) for _, a, b in HAND_PICKED] + RANDOM_PAIRS + BOUNDARY_PAIRS
    differ = []
    for first, second in pairs:
        for a, b in ((first, second), (second, first)):
            expected = sklearn_similarity(a, b)
            ours = tfidf_cosine(a, b)
            if (None if expected is None else float(expected)) != ours:
                differ.append((a[:40], b[:40], expected, ours))
    assert not differ, f"{len(differ)} pairs differ in the last bits, e.g. {differ[:5]}"


def test_a_text_with_itself_is_bit_identical_to_scikit_learn_and_to_the_general_sum() -> None:
    """Identical texts take a shorter path (one row): the very same float as the general
    computation and as scikit-learn, on texts with repeated, re-cased and single words."""
    from intercode.rewards.tfidf import _cosine

    texts = [a for a, _ in RANDOM_PAIRS] + [b for _, b in BOUNDARY_PAIRS[:500]]
    texts += ["", "a", "x y", "Hello hello HELLO world", "aa " * 7 + "bb " * 3 + "aa"]
    differ = []
    for text in texts:
        expected = sklearn_similarity(text, text)
        ours = tfidf_cosine(text, text)
        if ours != _cosine(text, text) or (None if expected is None else float(expected)) != ours:
            differ.append((text[:40], expected, ours, _cosine(text, text)))
    assert not differ, f"{len(differ)} texts differ, e.g. {differ[:5]}"
    assert sum(tfidf_cosine(t, t) not in (None, 1.0) for t in texts) > 0  # not all exact ones


def test_tokens_match_scikit_learn_analyzer() -> None:
    analyze = TfidfVectorizer().build_analyzer()
    texts = {t for _, a, b in HAND_PICKED for t in (a, b)} | {
        t for pair in RANDOM_PAIRS for t in pair}
    for text in texts:
        assert tokens(text) == analyze(text), text[:80]
