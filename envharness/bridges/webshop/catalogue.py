"""The shop's data: products and tasks, read from the package's JSON files, and the search engine.

The data is original and small: ``data/products.json`` holds 87 products in six categories, each
with a type, a price, attribute tags and purchase options (size, colour, scent ...);
``data/tasks.json`` holds 24 shopping instructions (16 ``train``, 8 ``test``), each written from one
target product and naming the attributes, options and budget a purchase must meet.

Example:
    >>> shop = load_catalogue()
    >>> shop.tasks["ws01"].options
    {'size': '8', 'color': 'teal'}
    >>> [p.id for p in shop.search("waterproof trail running shoes women")][:2]
    ['p001', 'p003']
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from envharness.errors import BridgeError

__all__ = ["Catalogue", "Product", "Task", "load_catalogue", "tokens"]

_BRIDGE = "webshop"
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_STOPWORDS = frozenset(
    "a an and are at be but by for from i i'd i'm in is it looking lower me my need of on or "
    "price than that the this to under want was which with would like find dollars".split()
)


def tokens(text: str) -> list[str]:
    """Lowercase search words of ``text``: no stopwords, a trailing plural ``s`` dropped.

    Example:
        >>> tokens("Women's Waterproof Trail Running Shoes, 15.6 inch")
        ['women', 'waterproof', 'trail', 'running', 'shoe', '15.6', 'inch']
    """
    words = []
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS or (len(word) == 1 and not word.isdigit()):
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(word)
    return words


@dataclass(frozen=True)
class Product:
    """One product of the shop.

    Attributes:
        id: The product id (``p001`` ...), part of its page's URL.
        title: The product name shown in results and on its page.
        category: The shop department (``footwear``, ``kitchen`` ...).
        type: What kind of product it is (``trail running shoes``); the reward's type match.
        price: The price in dollars.
        attributes: Attribute tags (``waterproof``, ``for women`` ...), shown as features.
        options: Purchase options: option name -> the values to choose from, in order.
        description: A sentence about the product.
    """

    id: str
    title: str
    category: str
    type: str
    price: float
    attributes: tuple[str, ...]
    options: Mapping[str, tuple[str, ...]]
    description: str

    def option_value(self, name: str, value: str) -> str | None:
        """The product's spelling of ``value`` for option ``name`` (case-insensitive), or None."""
        for candidate in self.options.get(name, ()):
            if candidate.lower() == value.strip().lower():
                return candidate
        return None


@dataclass(frozen=True)
class Task:
    """One shopping instruction.

    Attributes:
        id: The task id (``ws01`` ...).
        split: ``train`` or ``test``.
        target: The product the instruction was written from (it meets every requirement).
        instruction: The instruction, in words.
        attributes: The attribute tags the purchase must have.
        options: The options the purchase must be made with (name -> value).
        price_upper: The budget: the price must not exceed it.
    """

    id: str
    split: str
    target: str
    instruction: str
    attributes: tuple[str, ...]
    options: Mapping[str, str]
    price_upper: float


@dataclass(frozen=True)
class Catalogue:
    """The products and tasks of the shop, with a keyword search.

    Attributes:
        shop: The shop's name, shown on every page.
        products: Products by id, in id order.
        tasks: Tasks by id, in id order.
    """

    shop: str
    products: Mapping[str, Product]
    tasks: Mapping[str, Task]
    _index: Mapping[str, tuple[frozenset[str], ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not self._index:
            object.__setattr__(self, "_index", {p.id: _fields(p) for p in self.products.values()})

    def search(self, query: str) -> list[Product]:
        """Products matching ``query``, best first (ties by id); none for an empty query.

        A query word scores 3 in the title, 2 in the type, 1 in the category, attributes,
        options or description (each word counts once, at its best place).
        """
        wanted = list(dict.fromkeys(tokens(query)))
        scored = []
        for product in self.products.values():
            fields = self._index[product.id]
            score = sum(_word_score(fields, word) for word in wanted)
            if score > 0:
                scored.append((-score, product.id, product))
        return [product for _, _, product in sorted(scored, key=lambda entry: entry[:2])]

    def task_ids(self, split: str) -> list[str]:
        """Task ids of ``split`` (``"all"`` for every task), in id order."""
        return [t.id for t in self.tasks.values() if split == "all" or t.split == split]


def _fields(product: Product) -> tuple[frozenset[str], ...]:
    extra = [*product.attributes, product.category, product.description]
    extra += [value for values in product.options.values() for value in values]
    return (
        frozenset(tokens(product.title)),
        frozenset(tokens(product.type)),
        frozenset(tokens(" ".join(extra))),
    )


def _word_score(fields: tuple[frozenset[str], ...], word: str) -> int:
    title, kind, rest = fields
    if word in title:
        return 3
    if word in kind:
        return 2
    return 1 if word in rest else 0


def _bad_data(problem: str) -> BridgeError:
    return BridgeError(f"the shop's data is malformed: {problem}", bridge=_BRIDGE)


def _product(raw: Mapping[str, Any]) -> Product:
    try:
        options = {str(k): tuple(str(v) for v in values) for k, values in raw["options"].items()}
        return Product(
            id=str(raw["id"]),
            title=str(raw["title"]),
            category=str(raw["category"]),
            type=str(raw["type"]),
            price=float(raw["price"]),
            attributes=tuple(str(a) for a in raw["attributes"]),
            options=options,
            description=str(raw.get("description", "")),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise _bad_data(f"product {raw!r}: {type(e).__name__}: {e}") from e


def _task(raw: Mapping[str, Any], products: Mapping[str, Product]) -> Task:
    try:
        task = Task(
            id=str(raw["id"]),
            split=str(raw["split"]),
            target=str(raw["target"]),
            instruction=str(raw["instruction"]),
            attributes=tuple(str(a) for a in raw["attributes"]),
            options={str(k): str(v) for k, v in raw["options"].items()},
            price_upper=float(raw["price_upper"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise _bad_data(f"task {raw!r}: {type(e).__name__}: {e}") from e
    target = products.get(task.target)
    if target is None:
        raise _bad_data(f"task {task.id}: unknown target product {task.target!r}")
    if task.split not in ("train", "test"):
        raise _bad_data(f"task {task.id}: split {task.split!r} is not 'train' or 'test'")
    return task


def parse_catalogue(products: Any, tasks: Any) -> Catalogue:
    """Builds a catalogue from the two JSON documents (as loaded by ``json``).

    Raises:
        BridgeError: If a document is malformed, naming the product or task.
    """
    if not isinstance(products, Mapping) or not isinstance(products.get("products"), list):
        raise _bad_data("products.json must be an object with a 'products' list")
    if not isinstance(tasks, Mapping) or not isinstance(tasks.get("tasks"), list):
        raise _bad_data("tasks.json must be an object with a 'tasks' list")
    items = [_product(raw) for raw in products["products"]]
    by_id = {p.id: p for p in sorted(items, key=lambda p: p.id)}
    if len(by_id) != len(items):
        raise _bad_data("product ids are not unique")
    jobs = [_task(raw, by_id) for raw in tasks["tasks"]]
    by_task = {t.id: t for t in sorted(jobs, key=lambda t: t.id)}
    if len(by_task) != len(jobs):
        raise _bad_data("task ids are not unique")
    return Catalogue(str(products.get("shop", "Shop")), by_id, by_task)


def _read(name: str) -> Any:
    try:
        path = resources.files(__package__).joinpath("data").joinpath(name)
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise BridgeError(
            f"cannot read the shop's data file data/{name} ({e}); reinstall envharness, the "
            "file ships inside the envharness.bridges.webshop package",
            bridge=_BRIDGE,
        ) from e
    try:
        return json.loads(text)
    except ValueError as e:
        raise _bad_data(f"data/{name} is not JSON: {e}") from e


@cache
def load_catalogue() -> Catalogue:
    """The shop's catalogue, read once from the package data.

    Raises:
        BridgeError: If a data file is missing or malformed.
    """
    return parse_catalogue(_read("products.json"), _read("tasks.json"))
