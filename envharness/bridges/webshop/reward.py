"""The shop's verifier: WebShop's reward for a purchase (Yao et al., 2022).

For a task asking for attributes ``U_att``, options ``U_opt`` and a budget ``u_price``, buying
product ``y`` with options ``Y_opt`` scores::

    r = r_type * (|U_att ∩ Y_att| + |U_opt ∩ Y_opt| + 1[y_price <= u_price])
               / (|U_att| + |U_opt| + 1)

``Y_att`` are the product's attribute tags; an option counts when the chosen value is one the
product offers and equals the asked one (case-insensitive). ``r_type`` scales the whole by how
well the product type matches: 1 for the asked type, 0.5 for another type of the same category,
0.1 for another category whose type shares a word with the asked one, 0 otherwise (WebShop
grades the type by text matching; the shop's data names types exactly). The task succeeds when
``r == 1``. The purchase is read from the order page's URL (``/buy/ID?OPTION=VALUE``), so the
verdict depends only on what was bought.

Example:
    >>> from envharness.bridges.webshop.catalogue import load_catalogue
    >>> shop = load_catalogue()
    >>> task = shop.tasks["ws01"]  # waterproof women's trail shoes, teal, size 8, <= $100
    >>> purchase_reward(task, shop, "p001", {"size": "8", "color": "teal"}).score
    1.0
    >>> purchase_reward(task, shop, "p001", {"size": "8"}).score  # colour not chosen: 4/5
    0.8
    >>> purchase_reward(task, shop, "p004", {"size": "8", "color": "teal"}).score  # unisex, $109
    0.6
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envharness.bridges.webshop.catalogue import Catalogue, Task, tokens
from envharness.bridges.webshop.page_text import PageSnapshot
from envharness.bridges.webshop.pages import locate
from envharness.core import Evaluation

__all__ = ["ShopVerifier", "purchase_reward", "type_match"]


def type_match(task: Task, catalogue: Catalogue, product_id: str) -> float:
    """``r_type``: 1 same type, 0.5 same category, 0.1 a shared type word, else 0."""
    wanted = catalogue.products[task.target]
    bought = catalogue.products[product_id]
    if bought.type == wanted.type:
        return 1.0
    if bought.category == wanted.category:
        return 0.5
    return 0.1 if set(tokens(bought.type)) & set(tokens(wanted.type)) else 0.0


def purchase_reward(
    task: Task, catalogue: Catalogue, product_id: str, options: Mapping[str, str]
) -> Evaluation:
    """The reward of buying ``product_id`` with ``options`` for ``task``.

    Returns:
        Success when the reward is 1; the score is the reward; the details list what matched.
    """
    product = catalogue.products[product_id]
    have = set(product.attributes)
    attributes = {a: a in have for a in task.attributes}
    names = {name.lower(): name for name in product.options}
    chosen = {}  # only values the product offers count
    for key, value in options.items():
        name = names.get(key.strip().lower())
        offered = product.option_value(name, value) if name is not None else None
        if offered is not None:
            chosen[name] = offered.lower()
    wanted = {k: chosen.get(k) == v.strip().lower() for k, v in task.options.items()}
    in_budget = product.price <= task.price_upper
    r_type = type_match(task, catalogue, product_id)
    matched = sum(attributes.values()) + sum(wanted.values()) + int(in_budget)
    total = len(attributes) + len(wanted) + 1
    score = round(r_type * matched / total, 6)
    details: dict[str, Any] = {
        "purchased": {"product_id": product_id, "title": product.title, "options": dict(options)},
        "price": product.price,
        "price_upper": task.price_upper,
        "r_type": r_type,
        "attributes": attributes,
        "options": wanted,
        "price_ok": in_budget,
    }
    return Evaluation(score == 1.0, score, details)


class ShopVerifier:
    """A :data:`~envharness.bridges.webshop.browser.Verifier` for one task of the shop.

    Reads the page's URL: on an order page, the purchase's reward; anywhere else, no purchase
    yet (score 0).

    Args:
        task: The task.
        catalogue: The shop's products.
    """

    def __init__(self, task: Task, catalogue: Catalogue) -> None:
        self.task = task
        self.catalogue = catalogue

    def purchase(self, page: PageSnapshot) -> tuple[str, dict[str, str]] | None:
        """``(product_id, options)`` when ``page`` is an order page, else None."""
        where = locate(self.catalogue, page.url)
        if where.kind != "done" or where.product_id is None:
            return None
        return where.product_id, dict(where.options)

    def is_done(self, page: PageSnapshot) -> bool:
        """Whether ``page`` is an order page (buying ends the episode)."""
        return self.purchase(page) is not None

    def __call__(self, page: PageSnapshot) -> Evaluation:
        """The reward of the purchase ``page`` confirms; no purchase yet scores 0."""
        bought = self.purchase(page)
        if bought is None:
            return Evaluation(False, 0.0, {"purchased": None})
        return purchase_reward(self.task, self.catalogue, *bought)
