"""Keyword search over the pages of a corpus: BM25 ranking and a one-line snippet per hit.

Text is split into tokens: runs of letters, and numbers (``4,100,000`` is read as ``4100000``,
``48.6`` stays one token). Tokens are lower-cased and lightly stemmed (a plural ``s`` is dropped
from words longer than three letters, so ``employees`` finds ``employee``). A query's common
English words (``what``, ``the``, ``of`` ...) are ignored unless it has nothing else. Pages are
ranked by BM25 (k1 = 1.2, b = 0.75); ties keep the corpus order (document name, then page).

Example:
    >>> index = PageIndex([("a.txt", 1, "Revenue was 48.6m."), ("b.txt", 1, "Staff: 412")])
    >>> [(hit.doc, hit.page, hit.snippet) for hit in index.search("what was the revenue")]
    [('a.txt', 1, 'Revenue was 48.6m.')]
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["STOPWORDS", "Hit", "PageIndex", "query_terms", "snippet", "tokenize"]

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
_K1 = 1.2
_B = 0.75
_SNIPPET_CHARS = 200

STOPWORDS = frozenset(
    """a about after all also an and any are as at be been before between by can did do does
    for from had has have how if in into is it its many much of on or over per than that the
    their them then there these this those to under was were what when where which who whom
    whose why will with would""".split()
)
"""Words a query ignores (unless it has no other words)."""


def _stem(word: str) -> str:
    if len(word) > 3 and word.isalpha() and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """The search tokens of ``text``, in order.

    Example:
        >>> tokenize("Employees: 4,100,000 at £48.6m (WS-400)")
        ['employee', '4100000', 'at', '48.6', 'm', 'ws', '400']
    """
    tokens = []
    for match in _TOKEN.finditer(text.casefold()):
        token = match.group()
        tokens.append(token.replace(",", "") if token[0].isdigit() else _stem(token))
    return tokens


def query_terms(query: str) -> list[str]:
    """The distinct tokens of ``query`` that count, in order: common words only when alone.

    Example:
        >>> query_terms("What was the revenue in 2023?"), query_terms("the")
        (['revenue', '2023'], ['the'])
    """
    tokens = list(dict.fromkeys(tokenize(query)))
    kept = [t for t in tokens if t not in STOPWORDS]
    return kept or tokens


class Hit(NamedTuple):
    """One page that matches a query.

    Attributes:
        doc: The document's name.
        page: The page number (from 1).
        score: The BM25 score (higher is better).
        snippet: The page's line with the most query terms, whitespace collapsed, shortened to
            about 200 characters around the first term.
    """

    doc: str
    page: int
    score: float
    snippet: str


class PageIndex:
    """A BM25 index over pages.

    Args:
        pages: ``(document name, page number, text)`` triples, in corpus order.
    """

    def __init__(self, pages: Iterable[tuple[str, int, str]]) -> None:
        self._pages: list[tuple[str, int]] = []
        self._lines: list[tuple[tuple[str, frozenset[str]], ...]] = []
        self._counts: list[Counter[str]] = []
        self._lengths: list[int] = []
        frequency: Counter[str] = Counter()
        for doc, page, text in pages:
            counts = Counter(tokenize(text))
            self._pages.append((doc, page))
            self._lines.append(_lines(text))
            self._counts.append(counts)
            self._lengths.append(sum(counts.values()))
            frequency.update(counts.keys())
        total = len(self._pages)
        self._average = (sum(self._lengths) / total) if total else 0.0
        self._idf = {
            term: math.log(1 + (total - n + 0.5) / (n + 0.5)) for term, n in frequency.items()
        }

    def __len__(self) -> int:
        return len(self._pages)

    def idf(self, term: str) -> float:
        """How rare ``term`` is across the pages (0.0 for a term no page has)."""
        return self._idf.get(term, 0.0)

    def search(self, query: str, limit: int | None = None) -> list[Hit]:
        """The pages matching ``query``, best first (at most ``limit`` when given).

        A page matches when it has at least one of the query's terms (see :func:`query_terms`).
        """
        terms = [t for t in query_terms(query) if t in self._idf]
        if not terms:  # also covers a corpus whose pages are all empty
            return []
        scored: list[tuple[float, int]] = []
        for position, counts in enumerate(self._counts):
            score = 0.0
            norm = _K1 * (1 - _B + _B * self._lengths[position] / self._average)
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (_K1 + 1) / (tf + norm)
            if score > 0:
                scored.append((score, position))
        scored.sort(key=lambda item: (-item[0], item[1]))
        if limit is not None:
            scored = scored[:limit]
        wanted = frozenset(terms)
        return [
            Hit(*self._pages[position], round(score, 4), _best(self._lines[position], wanted))
            for score, position in scored
        ]


def _lines(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The non-blank lines of ``text``, each with its set of tokens."""
    return tuple((line, frozenset(tokenize(line))) for line in text.splitlines() if line.strip())


def _best(lines: tuple[tuple[str, frozenset[str]], ...], wanted: frozenset[str]) -> str:
    """The first line with the most of ``wanted``, collapsed and shortened."""
    best, best_count = "", 0
    for line, tokens in lines:
        count = len(wanted & tokens)
        if count > best_count:
            best, best_count = line, count
    line = " ".join(best.split())
    if len(line) <= _SNIPPET_CHARS:
        return line
    starts = [
        m.start() for m in _TOKEN.finditer(line.casefold()) if tokenize(m.group())[0] in wanted
    ]
    start = max(0, (starts[0] if starts else 0) - _SNIPPET_CHARS // 4)
    piece = line[start : start + _SNIPPET_CHARS].strip()
    return ("..." if start else "") + piece + ("..." if start + _SNIPPET_CHARS < len(line) else "")


def snippet(text: str, terms: list[str]) -> str:
    r"""The line of ``text`` holding the most of ``terms``, collapsed and shortened.

    Example:
        >>> snippet("Contents\nNet profit  5.1  3.8\nCash 11.2", ["net", "profit"])
        'Net profit 5.1 3.8'
    """
    return _best(_lines(text), frozenset(terms))
