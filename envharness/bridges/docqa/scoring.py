"""The verifier: exact match and token F1 after SQuAD-style normalisation.

An answer and a reference are compared after :func:`normalize_answer`: lower-cased, thousands
separators dropped (``4,100,000`` -> ``4100000``), punctuation and symbols dropped (``£``, ``%``,
``&``, hyphens ...) except a decimal point between digits (``48.6`` stays ``48.6``), the articles
*a*, *an*, *the* dropped, and runs of whitespace collapsed. Exact match is equality of the
normalised texts; token F1 is the harmonic mean of the precision and recall of the normalised
tokens (as a multiset). Against several references, the best of each counts.

Example:
    >>> normalize_answer("The £4,100,000.")
    '4100000'
    >>> score_answer("Pembury and Lusk", ["Pembury & Lusk LLP"])
    (False, 0.6666666666666666)
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

__all__ = ["exact_match", "normalize_answer", "score_answer", "token_f1"]

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_KEEP = "\x00"  # stands in for a decimal point while punctuation is dropped


def _drop_symbols(text: str) -> str:
    """``text`` without Unicode punctuation (P*) and symbols (S*)."""
    return "".join(c for c in text if unicodedata.category(c)[0] not in "PS")


def normalize_answer(text: str) -> str:
    """Lower-cases ``text`` and drops separators, punctuation, symbols, articles, extra spaces.

    Example:
        >>> normalize_answer("  An AquaProbe-X2, 6.5p!  ")
        'aquaprobex2 6.5p'
    """
    text = text.casefold()
    text = _THOUSANDS.sub("", text)
    text = _DECIMAL.sub(_KEEP, text)
    text = _drop_symbols(text).replace(_KEEP, ".")
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, reference: str) -> bool:
    """Whether the normalised texts are equal.

    Example:
        >>> exact_match("18 September 2023.", "18 september 2023")
        True
    """
    return normalize_answer(prediction) == normalize_answer(reference)


def token_f1(prediction: str, reference: str) -> float:
    """The F1 of the normalised tokens; 1.0 when both are empty, 0.0 when only one is.

    Example:
        >>> token_f1("48.6 million", "48.6")
        0.6666666666666666
    """
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    if not predicted or not expected:
        return float(predicted == expected)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall)


def score_answer(prediction: str, references: Iterable[str]) -> tuple[bool, float]:
    """``(exact match, token F1)`` of ``prediction``, each the best over ``references``.

    Example:
        >>> score_answer("412 employees", ["412"])
        (False, 0.6666666666666666)
    """
    exact, f1 = False, 0.0
    for reference in references:
        exact = exact or exact_match(prediction, reference)
        f1 = max(f1, token_f1(prediction, reference))
    return exact, f1
