"""TF-IDF cosine similarity of two texts, as scikit-learn's default ``TfidfVectorizer``.

Upstream InterCode fits ``TfidfVectorizer()`` on ``[agent_output, gold_output]`` and
takes the off-diagonal of ``X @ X.T``. The defaults are: lower-casing, tokens
``(?u)\\b\\w\\w+\\b``, raw counts, smoothed idf ``ln((1 + n) / (1 + df)) + 1`` and L2
row normalisation. This module computes the same numbers without scikit-learn.

Floating-point sums depend on their order, and the reward rounds ``0.33 x`` the
similarity to two decimals, so a last-bit difference can change the reward (e.g. a
cosine of exactly 5/6 gives 0.27 or 0.28). The sums are therefore done in the order
scikit-learn's sparse rows store their entries, which is *not* the alphabetical
feature order: ``CountVectorizer`` numbers terms by first appearance in the corpus,
sorts each row by that number, and then renumbers the terms alphabetically without
reordering the rows. So the agent's row is in order of first appearance in the agent
text; the gold row lists the terms it shares with the agent text (in the agent's
order) and then its own terms (in order of first appearance). The row norms are
plain running sums in that order, and ``X @ X.T`` (scipy's CSR product) accumulates
the off-diagonal entry over the agent's row in that order. A test checks the result
against scikit-learn on many pairs.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["answer_similarity"]

TOKEN = re.compile(r"(?u)\b\w\w+\b")


def tokens(text: str) -> list[str]:
    """The tokens scikit-learn's default analyzer extracts."""
    return TOKEN.findall(text.lower())


def tfidf_cosine(first: str, second: str) -> float | None:
    """Cosine similarity of the TF-IDF vectors; ``None`` if neither text has a token.

    scikit-learn raises ``ValueError`` (empty vocabulary) in the ``None`` case.
    """
    if first == second:  # (the common case of a solved task, done in half the work)
        return _self_cosine(Counter(tokens(first)))
    return _cosine(first, second)


def _cosine(first: str, second: str) -> float | None:
    """:func:`tfidf_cosine` of any two texts."""
    counts = (Counter(tokens(first)), Counter(tokens(second)))
    if not counts[0] and not counts[1]:
        return None
    # Counter keeps first-appearance order, which is the corpus-wide term numbering
    # for the first text; the second text's row lists shared terms first.
    orders = (list(counts[0]),
              [t for t in counts[0] if t in counts[1]]
              + [t for t in counts[1] if t not in counts[0]])
    n_docs = 2
    rows: list[dict[str, float]] = []
    for count, order in zip(counts, orders, strict=True):
        values = {}
        for term in order:
            df = (term in counts[0]) + (term in counts[1])
            idf = math.log((1 + n_docs) / (1 + df)) + 1.0
            values[term] = float(count[term]) * idf
        norm = 0.0
        for term in order:  # a plain running sum (not sum(), which compensates in 3.12+)
            norm += values[term] * values[term]
        if norm != 0.0:
            norm = math.sqrt(norm)
            values = {term: value / norm for term, value in values.items()}
        rows.append(values)
    similarity = 0.0
    for term in orders[0]:
        other = rows[1].get(term)
        if other is not None:
            similarity += rows[0][term] * other
    return similarity


def answer_similarity(agent_output: str | None, gold_output: str | None) -> float:
    """Upstream's part-3 similarity: TF-IDF cosine, or exact equality when it fails."""
    if agent_output is None or gold_output is None:
        return 1.0 if agent_output == gold_output else 0.0
    similarity = tfidf_cosine(agent_output, gold_output)
    if similarity is None:
        return 1.0 if agent_output == gold_output else 0.0
    return similarity


def _self_cosine(count: Counter[str]) -> float | None:
    """:func:`tfidf_cosine` of a text with itself, with the same sums in the same order
    (so the same float): both rows are the same, every idf is 1, and the product sums
    the squares of the normalised row over the terms in order of first appearance."""
    if not count:
        return None
    values = {term: float(n) for term, n in count.items()}  # (times an idf of 1.0)
    norm = 0.0
    for value in values.values():
        norm += value * value
    norm = math.sqrt(norm)
    row = [value / norm for value in values.values()]
    similarity = 0.0
    for value in row:
        similarity += value * value
    return similarity
