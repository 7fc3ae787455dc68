"""An exact solver for the game of 24 (the paper's toy domain).

All arithmetic is exact (:class:`fractions.Fraction`), so mid-game states such as ``3 8/3`` are
handled without rounding. Three entry points:

- :func:`solutions` lists every distinct expression that makes 24, deduplicated modulo the
  commutativity and associativity of ``+`` and ``*`` (``a-(b-c)`` and ``a+c-b`` count once);
- :func:`solve_steps` returns one sequence of pairwise combinations reaching 24 (what an agent
  would play); it is memoized on the sorted multiset, so an oracle asked every step stays fast;
- :func:`puzzles` enumerates every multiset of four numbers in a range that can make 24.

Example:
    >>> from fractions import Fraction
    >>> "8/(3-8/3)" in solutions([3, 3, 8, 8])
    True
    >>> solve_steps([Fraction(8, 3), 3, 8])
    [(Fraction(3, 1), '-', Fraction(8, 3)), (Fraction(8, 1), '/', Fraction(1, 3))]
    >>> solve_steps([1, 1, 1, 1]) is None
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fractions import Fraction
from functools import lru_cache
from itertools import combinations_with_replacement

__all__ = ["TARGET", "Step", "is_solvable", "puzzles", "solutions", "solve_steps"]

TARGET = Fraction(24)
"""The number to make."""

Step = tuple[Fraction, str, Fraction]
"""One pairwise combination ``(a, op, b)``; it replaces ``a`` and ``b`` by ``a op b``."""

_Values = tuple[Fraction, ...]


def _as_values(numbers: Iterable[int | Fraction | str]) -> _Values:
    """The numbers as a sorted tuple of fractions (the memo key)."""
    try:
        return tuple(sorted(n if isinstance(n, Fraction) else Fraction(n) for n in numbers))
    except (TypeError, ValueError, ZeroDivisionError) as e:
        raise ValueError(
            f"expected exact numbers (int, Fraction, or text like '8/3'), got {numbers!r}"
        ) from e


def _moves(x: Fraction, y: Fraction) -> Iterator[tuple[Fraction, str, Fraction, Fraction]]:
    """The distinct ways to combine ``x >= y``: ``(a, op, b, a op b)``, friendliest first."""
    yield x, "+", y, x + y
    yield x, "*", y, x * y
    yield x, "-", y, x - y
    if y:
        yield x, "/", y, x / y
    if x != y:
        yield y, "-", x, y - x
        if x:
            yield y, "/", x, y / x


def _friendliness(child: tuple[Fraction, Step, _Values]) -> tuple[bool, bool]:
    result = child[0]
    return result.denominator != 1, result < 0


@lru_cache(maxsize=1 << 16)
def _solve(values: _Values) -> tuple[Step, ...] | None:
    """One solution for the sorted multiset ``values`` (``()`` when it is already 24)."""
    n = len(values)
    if n == 1:
        return () if values[0] == TARGET else None
    if n == 2:
        for a, op, b, result in _moves(values[1], values[0]):
            if result == TARGET:
                return ((a, op, b),)
        return None
    children: list[tuple[Fraction, Step, _Values]] = []
    seen: set[_Values] = set()
    pairs: set[tuple[Fraction, Fraction]] = set()
    for i in range(n):
        for j in range(i + 1, n):
            x, y = values[j], values[i]  # sorted, so x >= y
            if (x, y) in pairs:
                continue
            pairs.add((x, y))
            rest = values[:i] + values[i + 1 : j] + values[j + 1 :]
            for a, op, b, result in _moves(x, y):
                child = tuple(sorted((*rest, result)))
                if child not in seen:
                    seen.add(child)
                    children.append((result, (a, op, b), child))
    children.sort(key=_friendliness)  # stable: integers, then non-negative results first
    for _, step, child in children:
        tail = _solve(child)
        if tail is not None:
            return (step, *tail)
    return None


def solve_steps(numbers: Iterable[int | Fraction | str]) -> list[Step] | None:
    """One way to reach 24 by combining two numbers at a time.

    Prefers integer, non-negative intermediate results. Memoized on the sorted multiset.

    Args:
        numbers: The numbers left (ints, Fractions, or exact text such as ``"8/3"``).

    Returns:
        The combinations to play in order (``[]`` when the only number is already 24), or
        ``None`` when 24 cannot be made.

    Raises:
        ValueError: If an item is not an exact number.

    Example:
        >>> [f"{a} {op} {b}" for a, op, b in solve_steps([4, 4, 10, 10])]
        ['10 * 10', '100 - 4', '96 / 4']
    """
    steps = _solve(_as_values(numbers))
    return None if steps is None else list(steps)


def is_solvable(numbers: Iterable[int | Fraction | str]) -> bool:
    """Whether 24 can be made from ``numbers`` (each used exactly once)."""
    return _solve(_as_values(numbers)) is not None


# -- every distinct expression -----------------------------------------------------------------

_LEAF, _SUM, _PRODUCT = 0, 1, 2


class _Expr:
    """An expression in canonical form: a leaf, or a flat sum or product of signed parts.

    A sum's parts are leaves or products, a product's parts are leaves or sums; parts are sorted
    by descending value (then text), so equal expressions modulo commutativity and associativity
    get equal texts.
    """

    __slots__ = ("kind", "neg", "pos", "text", "value")

    def __init__(
        self,
        kind: int,
        value: Fraction,
        pos: tuple[_Expr, ...] = (),
        neg: tuple[_Expr, ...] = (),
    ) -> None:
        self.kind = kind
        self.value = value
        if kind == _LEAF:
            self.pos = self.neg = ()
            exact = value.denominator == 1 and value >= 0
            self.text = str(value) if exact else f"({value})"
            return
        self.pos = tuple(sorted(pos, key=_order))
        self.neg = tuple(sorted(neg, key=_order))
        if kind == _SUM:
            self.text = "+".join(p.text for p in self.pos) + "".join("-" + p.text for p in self.neg)
        else:
            self.text = "*".join(map(_factor, self.pos)) + "".join(
                "/" + _factor(p) for p in self.neg
            )

    def parts(self, kind: int) -> tuple[tuple[_Expr, ...], tuple[_Expr, ...]]:
        """The positive and negative parts when seen as a ``kind`` node."""
        return (self.pos, self.neg) if self.kind == kind else ((self,), ())


def _order(expr: _Expr) -> tuple[Fraction, str]:
    return -expr.value, expr.text


def _factor(expr: _Expr) -> str:
    return f"({expr.text})" if expr.kind == _SUM else expr.text


def _combine(x: _Expr, op: str, y: _Expr) -> _Expr:
    kind = _SUM if op in "+-" else _PRODUCT
    (xp, xn), (yp, yn) = x.parts(kind), y.parts(kind)
    if op == "+":
        return _Expr(kind, x.value + y.value, xp + yp, xn + yn)
    if op == "-":
        return _Expr(kind, x.value - y.value, xp + yn, xn + yp)
    if op == "*":
        return _Expr(kind, x.value * y.value, xp + yp, xn + yn)
    return _Expr(kind, x.value / y.value, xp + yn, xn + yp)


def _collect(items: tuple[_Expr, ...], found: set[str], seen: set[tuple[str, ...]]) -> None:
    if len(items) == 1:
        if items[0].value == TARGET:
            found.add(items[0].text)
        return
    key = tuple(sorted(e.text for e in items))
    if key in seen:
        return
    seen.add(key)
    n = len(items)
    for i in range(n):
        for j in range(i + 1, n):
            x, y = items[i], items[j]
            rest = items[:i] + items[i + 1 : j] + items[j + 1 :]
            same = x.text == y.text
            for a, op, b in (
                (x, "+", y),
                (x, "*", y),
                (x, "-", y),
                (y, "-", x),
                (x, "/", y),
                (y, "/", x),
            ):
                if (same and a is y) or (op == "/" and not b.value):
                    continue
                _collect((*rest, _combine(a, op, b)), found, seen)


@lru_cache(maxsize=4096)
def _solutions(values: _Values) -> tuple[str, ...]:
    found: set[str] = set()
    if values:
        _collect(tuple(_Expr(_LEAF, v) for v in values), found, set())
    return tuple(sorted(found))


def solutions(numbers: Iterable[int | Fraction | str]) -> list[str]:
    """Every distinct infix expression that makes 24, using each number exactly once.

    Expressions are deduplicated by a canonical form: sums and products are flattened and their
    parts sorted (by descending value), so ``4*6*1*1`` is listed once however the numbers were
    paired, while ``4*6*1/1`` and ``4*6+1-1`` are further, distinct ways. Non-integer or negative
    numbers appear in parentheses, e.g. ``3*(8/3)*3``.

    Args:
        numbers: The numbers (ints, Fractions, or exact text such as ``"8/3"``).

    Returns:
        The expressions, sorted; empty when 24 cannot be made.

    Raises:
        ValueError: If an item is not an exact number.

    Example:
        >>> solutions([4, 4, 10, 10])
        ['(10*10-4)/4']
    """
    return list(_solutions(_as_values(numbers)))


# -- the puzzle set ----------------------------------------------------------------------------


def _targets(u: Fraction, memo: dict[Fraction, frozenset[Fraction]]) -> frozenset[Fraction]:
    """The values ``v`` for which one operation on ``u`` and ``v`` gives 24."""
    hit = memo.get(u)
    if hit is None:
        options = {TARGET - u, TARGET + u, u - TARGET}
        if u:
            options |= {TARGET / u, TARGET * u, u / TARGET}
        hit = memo[u] = frozenset(options)
    return hit


def _reachable(values: _Values, memo: dict[_Values, frozenset[Fraction]]) -> frozenset[Fraction]:
    """Every value an expression over the multiset ``values`` can take."""
    hit = memo.get(values)
    if hit is not None:
        return hit
    if len(values) == 1:
        memo[values] = frozenset(values)
        return memo[values]
    out: set[Fraction] = set()
    for left, right in _splits(values):
        for u in _reachable(left, memo):
            for v in _reachable(right, memo):
                out.update((u + v, u - v, v - u, u * v))
                if v:
                    out.add(u / v)
                if u:
                    out.add(v / u)
    memo[values] = frozenset(out)
    return memo[values]


def _splits(values: _Values) -> Iterator[tuple[_Values, _Values]]:
    """The distinct ways to split a multiset into two non-empty parts (unordered)."""
    n = len(values)
    seen: set[tuple[_Values, _Values]] = set()
    for mask in range(1, 1 << n, 2):  # the first item always goes left: no mirrored splits
        if mask == (1 << n) - 1:
            continue
        left = tuple(v for k, v in enumerate(values) if mask >> k & 1)
        right = tuple(v for k, v in enumerate(values) if not mask >> k & 1)
        if (left, right) not in seen:
            seen.add((left, right))
            yield left, right


def puzzles(low: int = 1, high: int = 13) -> list[tuple[int, int, int, int]]:
    """Every multiset of four numbers in ``low..high`` that can make 24, ascending.

    For 1–13 there are 1,362 of them.

    Args:
        low: The smallest number.
        high: The largest number.

    Returns:
        Sorted 4-tuples, in ascending lexicographic order.
    """
    reach: dict[_Values, frozenset[Fraction]] = {}
    wanted: dict[Fraction, frozenset[Fraction]] = {}
    found = []
    for quad in combinations_with_replacement(range(low, high + 1), 4):
        values = tuple(Fraction(n) for n in quad)
        for left, right in _splits(values):
            small, large = (left, right) if len(left) <= len(right) else (right, left)
            targets = _reachable(large, reach)
            if any(not _targets(u, wanted).isdisjoint(targets) for u in _reachable(small, reach)):
                found.append(quad)
                break
    return found
