"""TF-IDF cosine similarity of two texts, as scikit-learn's default ``TfidfVectorizer``.

Upstream InterCode fits ``TfidfVectorizer()`` on ``[agent_output, gold_output]`` and
takes the off-diagonal of ``X @ X.T``. The defaults are: lower-casing, tokens
``(?u)\\b\\w\\w+\\b``, raw counts, smoothed idf ``ln((1 + n) / (1 + df)) + 1`` and L2
row normalisation. This module computes the same numbers without scikit-learn,
summing in the same (alphabetical feature) order; a test checks it against
scikit-learn on many pairs.
"""

from __future__ import annotations

import math
import re
from collections import Counter

TOKEN = re.compile(r"(?u)\b\w\w+\b")


def tokens(text: str) -> list[str]:
    """The tokens scikit-learn's default analyzer extracts."""
    return TOKEN.findall(text.lower())


def tfidf_cosine(first: str, second: str) -> float | None:
    """Cosine similarity of the TF-IDF vectors; ``None`` if neither text has a token.

    scikit-learn raises ``ValueError`` (empty vocabulary) in the ``None`` case.
    """
    counts = (Counter(tokens(first)), Counter(tokens(second)))
    vocabulary = sorted(set(counts[0]) | set(counts[1]))
    if not vocabulary:
        return None
    n_docs = 2
    idf = {}
    for term in vocabulary:
        df = (term in counts[0]) + (term in counts[1])
        idf[term] = math.log((1 + n_docs) / (1 + df)) + 1.0
    rows = []
    for count in counts:
        row = [(term, count[term] * idf[term]) for term in vocabulary if term in count]
        norm = math.sqrt(sum(value * value for _, value in row))
        rows.append({term: value / norm for term, value in row} if norm > 0 else {})
    similarity = 0.0
    for term, value in sorted(rows[0].items()):
        other = rows[1].get(term)
        if other is not None:
            similarity += value * other
    return similarity


def answer_similarity(agent_output: str | None, gold_output: str | None) -> float:
    """Upstream's part-3 similarity: TF-IDF cosine, or exact equality when it fails."""
    if agent_output is None or gold_output is None:
        return 1.0 if agent_output == gold_output else 0.0
    similarity = tfidf_cosine(agent_output, gold_output)
    if similarity is None:
        return 1.0 if agent_output == gold_output else 0.0
    return similarity
