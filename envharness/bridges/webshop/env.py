"""``WebShopEnv``: the browser bridge pointed at the shop, one task per shopping instruction.

Example:
    >>> WebShopEnv.list_tasks("test")[:3]
    ['ws17', 'ws18', 'ws19']
    >>> env = WebShopEnv("ws01")  # doctest: +SKIP
    >>> observation, info = env.reset()  # doctest: +SKIP
    >>> for action in env.oracle_actions():  # doctest: +SKIP
    ...     result = env.step(action)
    >>> result.terminated, result.reward, env.evaluate().success  # doctest: +SKIP
    (True, 1.0, True)
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from envharness.bridgekit.checks import check_options, check_split
from envharness.bridgekit.fingerprint import cached_fingerprint, task_fingerprint
from envharness.bridges.webshop import oracle
from envharness.bridges.webshop.browser import BrowserEnv, _check_saved
from envharness.bridges.webshop.catalogue import load_catalogue
from envharness.bridges.webshop.hints import HINTS
from envharness.bridges.webshop.page_text import PageSnapshot
from envharness.bridges.webshop.pages import Location, locate
from envharness.bridges.webshop.reward import ShopVerifier
from envharness.bridges.webshop.server import shared_server
from envharness.core import Action
from envharness.errors import UnknownTaskError

__all__ = ["WebShopEnv"]

_BRIDGE = "webshop"
_SPLITS = ("train", "test", "all")
_OPTIONS = ("max_steps", "chromium", "timeout_ms")
_SHOP_HOSTS = ("127.0.0.1",)
_GUIDE = (
    "Shop on the website to buy a product that fits the instruction: search, open products, "
    "choose the options the instruction asks for, and click Buy Now. Pages show their links, "
    "buttons and text boxes with numbers like [3]: use them as the ref of click(ref) and "
    "type(ref, text, submit). Buying ends the episode."
)
_SHOP_FIELDS: dict[str, Any] = {
    "page": {
        "type": "string",
        "enum": ["home", "results", "item", "done", "not_found"],
        "description": "The kind of shop page: search, results, product, order placed, 404.",
    },
    "query": {"type": "string", "description": "The search words the URL carries ('' if none)."},
    "results_page": {"type": "integer", "description": "The results page number (1-based)."},
    "product_id": {
        "type": "string",
        "nullable": True,
        "description": "The product shown (product and order pages), else null.",
    },
    "selected_options": {
        "type": "object",
        "description": "Options chosen on the product page, option name -> value.",
    },
    "purchased": {
        "type": "object",
        "nullable": True,
        "properties": {
            "product_id": {"type": "string"},
            "options": {"type": "object"},
        },
        "description": "What was bought ({product_id, options}), null before buying.",
    },
}


class WebShopEnv(BrowserEnv):
    """A shopping task in the shop, played in headless Chromium through the browser tools.

    The shop (:mod:`~envharness.bridges.webshop.server`) runs on ``127.0.0.1`` in this process;
    the browser may reach nothing else. Buying ends the episode; the reward and ``evaluate()``
    are WebShop's (:mod:`~envharness.bridges.webshop.reward`), success when it is 1. The state
    adds the shop's view of the URL to the browser's: page kind, query, results page, product,
    chosen options and the purchase.

    Args:
        task_id: A task id, e.g. ``"ws01"`` (see :meth:`list_tasks`).
        max_steps: The agent's step budget (default 30).
        chromium: The Chromium executable (default: ``$ENVHARNESS_CHROMIUM``, else
            ``/usr/bin/chromium``).
        timeout_ms: The timeout of each browser action and page load.

    Raises:
        UnknownTaskError: If there is no such task (naming the valid ids).
        DependencyNotInstalled: If playwright is missing (extra ``webshop``).
        BridgeError: If Chromium is missing (``apt-get install -y chromium``) or an option is bad.
    """

    bridge_name: ClassVar[str] = _BRIDGE

    def __init__(
        self,
        task_id: str,
        *,
        max_steps: int = 30,
        chromium: str | os.PathLike[str] | None = None,
        timeout_ms: int = 10_000,
    ) -> None:
        catalogue = load_catalogue()
        if not isinstance(task_id, str) or task_id not in catalogue.tasks:
            raise UnknownTaskError(
                f"no task {task_id!r}; tasks are {', '.join(catalogue.tasks)} "
                "(WebShopEnv.list_tasks('train' | 'test' | 'all') lists them)",
                bridge=_BRIDGE,
                task_id=task_id if isinstance(task_id, str) else None,
            )
        self._catalogue = catalogue
        self._task = catalogue.tasks[task_id]
        self._shop_verifier = ShopVerifier(self._task, catalogue)
        self._where = Location("home")
        self._stages: list[list[Action]] | None = None
        super().__init__(
            shared_server().url + "/",
            f"Instruction: {self._task.instruction}\n\n{_GUIDE}",
            self._shop_verifier,
            task_id=task_id,
            done=self._shop_verifier.is_done,
            max_steps=max_steps,
            allowed_hosts=_SHOP_HOSTS,
            chromium=chromium,
            timeout_ms=timeout_ms,
        )

    # -- tasks ----------------------------------------------------------------------------------

    @classmethod
    def designer_hints(cls) -> str:
        """This bridge's notes for the designer's and diagnoser's prompts (its ``hints`` module)."""
        return HINTS

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """Task ids of ``split``: ``"train"`` (16), ``"test"`` (8) or ``"all"``.

        Args:
            split: The split.
            **options: Bridge options, accepted for symmetry with ``load_bridge``; they do not
                change the list.

        Raises:
            UnknownTaskError: If ``split`` is not one of the splits.
            BridgeError: If an option is unknown.
        """
        check_options(options, _OPTIONS, bridge=_BRIDGE, where="list_tasks")
        check_split(split, _SPLITS, bridge=_BRIDGE)
        return load_catalogue().task_ids(split)

    def task_fingerprint(self) -> str:
        """The hash of the task and of the products the verifier compares a purchase with.

        The record is the task (instruction, target, attributes, options, budget) and every
        product of the shop (type, category, price, attributes, options ...): the reward of a
        purchase reads the bought product, whichever it is, and the target's type. The search
        ranking is code, not data. ``max_steps``, ``chromium`` and ``timeout_ms`` do not change
        it.
        """
        return cached_fingerprint(self, self._fingerprint)

    def _fingerprint(self) -> str:
        shop = self._catalogue
        record = {
            "bridge": _BRIDGE,
            "task": dataclasses.asdict(self._task),
            "shop": shop.shop,
            "products": [dataclasses.asdict(p) for p in shop.products.values()],
        }
        return task_fingerprint(json.loads(json.dumps(record)))

    # -- the shop's view of the page ------------------------------------------------------------

    def _set_page(self, snapshot: PageSnapshot) -> None:
        super()._set_page(snapshot)
        self._where = locate(self._catalogue, snapshot.url)

    def get_env_state(self) -> dict[str, Any]:
        """The browser's state plus the shop's: page kind, query, product, options, purchase."""
        state = super().get_env_state()
        where = self._where
        purchased = None
        if where.kind == "done" and where.product_id is not None:
            purchased = {"product_id": where.product_id, "options": dict(where.options)}
        state.update(
            page=where.kind,
            query=where.query,
            results_page=where.page,
            product_id=where.product_id,
            selected_options=dict(where.options) if where.kind == "item" else {},
            purchased=purchased,
        )
        return state

    def env_state_schema(self) -> dict[str, Any]:
        """The browser's state schema plus the shop's fields."""
        schema = super().env_state_schema()
        schema["description"] = "A page of the web shop in a browser, and what was bought."
        schema["properties"].update(json.loads(json.dumps(_SHOP_FIELDS)))
        schema["required"] = list(schema["properties"])
        return schema

    # -- save and restore -----------------------------------------------------------------------

    def save_state(self) -> dict[str, Any]:
        """The task, its options and the actions since reset (replayed by :meth:`from_state`)."""
        return {"bridge": _BRIDGE, "options": self.bridge_options(), **self._saved()}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> WebShopEnv:
        """Rebuilds the env :meth:`save_state` recorded, by reset and replay.

        Raises:
            BridgeError: If ``state`` is malformed or the replay ends elsewhere.
            UnknownTaskError: If its task does not exist.
        """
        state = _check_saved(state, _BRIDGE, options=_OPTIONS)
        env = cls(state["task_id"], **state["options"])
        env._replay(state)
        return env

    # -- solving --------------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """From the current page: search for the target, open it, choose the options, buy.

        ``[]`` once the episode is over.
        """
        if self._terminated:
            return []
        url = self._snapshot.url if self._snapshot is not None else "/"
        return oracle.plan(self._catalogue, self._task, url)

    def stage_candidates(self) -> list[list[Action]]:
        """Misleading start pages that keep the task solvable, as actions from the search page.

        A search for a look-alike product that does not fit; that look-alike's page; the
        target's page with a wrong option chosen; the second results page of a broad search.
        Each is checked (on the shop's pages, without a browser) to be plain navigation that
        buys nothing, from where the oracle still scores 1.
        """
        if self._stages is None:
            self._stages = oracle.stage_candidates(self._catalogue, self._task)
        return [list(stage) for stage in self._stages]

    def __repr__(self) -> str:
        return f"<WebShopEnv task={self.task_id!r}>"
