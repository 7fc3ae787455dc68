"""Planning in the shop without a browser: the oracle and the stage candidates.

The shop's pages are pure functions of their URL
(:func:`~envharness.bridges.webshop.pages.render`), so the planner renders them in Python and
numbers their elements the way the in-page snapshot does (:func:`page_refs`: links, buttons and
inputs in document order). It then walks the site: search
for the target's name, open the target, choose each asked option, buy. From any page it first goes
back to the search page when the target is not in sight.

Example:
    >>> from envharness.bridges.webshop.catalogue import load_catalogue
    >>> shop = load_catalogue()
    >>> for action in plan(shop, shop.tasks["ws12"], "/"):  # vegan lip balm, berry flavor
    ...     print(action)
    type(ref=1, text='honeycomb vegan lip balm 4 pack', submit=True)
    click(ref=3)
    click(ref=4)
    click(ref=6)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urlencode, urljoin, urlsplit

from envharness.bridges.webshop.catalogue import Catalogue, Product, Task
from envharness.bridges.webshop.pages import buy_url, locate, render
from envharness.bridges.webshop.reward import purchase_reward
from envharness.core import Action

__all__ = ["PlannedRef", "page_refs", "plan", "search_query", "simulate", "stage_candidates"]

_PLAN_LIMIT = 16
_INTERACTIVE_ROLES = frozenset({"button", "link", "checkbox", "tab", "menuitem"})
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


@dataclass(frozen=True)
class PlannedRef:
    """An element of a rendered page, numbered as the browser's snapshot numbers it.

    Attributes:
        ref: Its reference number.
        tag: The HTML tag.
        href: A link's target (``None`` otherwise).
        text: Its text.
        input_name: An input's ``name`` (``None`` otherwise).
        form_action: The action of the form an input belongs to (``None`` outside a form).
    """

    ref: int
    tag: str
    href: str | None = None
    text: str = ""
    input_name: str | None = None
    form_action: str | None = None


class _RefParser(HTMLParser):
    """Collects interactive elements in document order, like the snapshot's DOM walk."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[PlannedRef] = []
        self._open: dict[str, str | None] | None = None  # the interactive element being read
        self._text: list[str] = []
        self._depth = 0
        self._form: str | None = None
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("script", "style", "head", "template"):
            self._skip += 1
            return
        if tag == "form":
            self._form = found.get("action") or ""
        if self._open is not None:
            self._depth += tag not in ("input", "br", "img")
            return
        if self._skip or not _interactive(tag, found):
            return
        if tag in ("input",):
            self._add(tag, found, "")
            return
        self._open, self._text, self._depth = {"tag": tag, **found}, [], 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head", "template"):
            self._skip = max(0, self._skip - 1)
            return
        if tag == "form":
            self._form = None
        if self._open is None:
            return
        self._depth -= 1
        if self._depth == 0:
            opened, self._open = self._open, None
            self._add(str(opened["tag"]), opened, " ".join("".join(self._text).split()))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def _add(self, tag: str, attrs: dict[str, str | None], text: str) -> None:
        self.refs.append(
            PlannedRef(
                ref=len(self.refs) + 1,
                tag=tag,
                href=attrs.get("href") if tag == "a" else None,
                text=text,
                input_name=attrs.get("name") if tag == "input" else None,
                form_action=self._form if tag == "input" else None,
            )
        )


def _interactive(tag: str, attrs: dict[str, str | None]) -> bool:
    if tag == "input":
        return (attrs.get("type") or "text").lower() != "hidden"
    if tag == "a" and attrs.get("href") is not None:
        return True
    return tag in ("button", "select", "textarea") or attrs.get("role") in _INTERACTIVE_ROLES


def page_refs(document: str) -> list[PlannedRef]:
    """The interactive elements of an HTML document, numbered in document order."""
    parser = _RefParser()
    parser.feed(document)
    parser.close()
    return parser.refs


def search_query(product: Product) -> str:
    """The words the oracle searches for: the product's name, lowercase, without punctuation."""
    words = _WORD.findall(product.title.lower())
    return " ".join(w for w in words if len(w) > 1 or w.isdigit())


def _relative(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def simulate(catalogue: Catalogue, url: str, action: Action) -> str | None:
    """The URL ``action`` leads to from ``url``; None if it is not a navigation the site has.

    Covers what the planner uses: clicking a link and typing into a search box with submit.
    """
    refs = {r.ref: r for r in page_refs(render(catalogue, url).html)}
    ref = refs.get(int(action.args.get("ref", 0))) if action.tool in ("click", "type") else None
    if ref is None:
        return None
    if action.tool == "click" and ref.href is not None:
        return _relative(urljoin(_relative(url), ref.href))
    if action.tool == "type" and action.args.get("submit") and ref.input_name is not None:
        action_url = urljoin(_relative(url), ref.form_action or "")
        return _relative(action_url) + "?" + urlencode({ref.input_name: action.args["text"]})
    return None


def _click_to(refs: list[PlannedRef], href: str) -> Action | None:
    for ref in refs:
        if ref.href == href:
            return Action("click", {"ref": ref.ref})
    return None


def _next_action(catalogue: Catalogue, task: Task, url: str) -> Action | None:
    """The planner's move from ``url`` (None on an order page or when lost)."""
    target = catalogue.products[task.target]
    page = render(catalogue, url)
    where, refs = page.location, page_refs(page.html)
    if where.kind == "done":
        return None
    if where.kind == "item" and where.product_id == target.id:
        for name in target.options:
            asked = task.options.get(name)
            value = target.option_value(name, asked) if asked is not None else None
            if value is not None and where.options.get(name) != value:
                chosen = {**where.options, name: value}
                for ref in refs:
                    if (
                        ref.href
                        and locate(catalogue, ref.href).options == chosen
                        and (ref.href.startswith(f"/item/{target.id}?"))
                    ):
                        return Action("click", {"ref": ref.ref})
        return _click_to(refs, buy_url(target.id, where.options))
    if where.kind == "results":
        for ref in refs:
            if ref.href and ref.href.startswith(f"/item/{target.id}?"):
                return Action("click", {"ref": ref.ref})
    if where.kind == "home":
        for ref in refs:
            if ref.tag == "input" and ref.input_name == "q":
                text = search_query(target)
                return Action("type", {"ref": ref.ref, "text": text, "submit": True})
    return _click_to(refs, "/")


def plan(catalogue: Catalogue, task: Task, url: str) -> list[Action]:
    """The oracle's actions from the page ``url`` to buying the target with the asked options.

    Returns ``[]`` on an order page (the episode is over) or when no plan is found.
    """
    actions: list[Action] = []
    here = _relative(url)
    for _ in range(_PLAN_LIMIT):
        action = _next_action(catalogue, task, here)
        if action is None:
            return actions if locate(catalogue, here).kind == "done" else []
        following = simulate(catalogue, here, action)
        if following is None:
            return []
        actions.append(action)
        here = following
    return []


def _solved_from(catalogue: Catalogue, task: Task, url: str) -> bool:
    """Whether the oracle's plan from ``url`` buys something that scores 1."""
    here = url
    steps = plan(catalogue, task, url)
    if not steps:
        return False
    for action in steps:
        following = simulate(catalogue, here, action)
        if following is None:
            return False
        here = following
    where = locate(catalogue, here)
    if where.kind != "done" or where.product_id is None:
        return False
    return purchase_reward(task, catalogue, where.product_id, where.options).success


def _play(catalogue: Catalogue, actions: list[Action]) -> str | None:
    """The URL after ``actions`` from the search page; None if one is not a site navigation."""
    here: str | None = "/"
    for action in actions:
        here = simulate(catalogue, here, action) if here is not None else None
        if here is None or locate(catalogue, here).kind == "done":
            return None
    return here


def _distractor(catalogue: Catalogue, task: Task) -> Product | None:
    """A product of the target's type (else category) that cannot satisfy the task."""
    target = catalogue.products[task.target]
    for same in (lambda p: p.type == target.type, lambda p: p.category == target.category):
        for product in catalogue.products.values():
            if product.id == target.id or not same(product):
                continue
            if not purchase_reward(task, catalogue, product.id, dict(task.options)).success:
                return product
    return None


def _search(product: Product) -> Action:
    return Action("type", {"ref": 1, "text": search_query(product), "submit": True})


def _open_product(catalogue: Catalogue, product: Product) -> list[Action] | None:
    """Search for ``product`` and click it in the results."""
    search = _search(product)
    results = _play(catalogue, [search])
    if results is None:
        return None
    for ref in page_refs(render(catalogue, results).html):
        if ref.href and ref.href.startswith(f"/item/{product.id}?"):
            return [search, Action("click", {"ref": ref.ref})]
    return None


def stage_candidates(catalogue: Catalogue, task: Task) -> list[list[Action]]:
    """Start states that mislead but keep the task solvable, as actions from the search page.

    In order, when they apply: the results of a search for a look-alike product that does not
    fit (a misleading query); that look-alike's page (a distractor product); the target's page
    with a wrong value chosen for the first asked option; the second results page of a search
    for the target's category. Each is kept only if every action is a plain navigation of the
    site, it does not buy anything, and the oracle's plan from where it ends still scores 1.
    """
    target = catalogue.products[task.target]
    candidates: list[list[Action]] = []
    decoy = _distractor(catalogue, task)
    if decoy is not None:
        candidates.append([_search(decoy)])
        opened = _open_product(catalogue, decoy)
        if opened is not None:
            candidates.append(opened)
    opened = _open_product(catalogue, target)
    if opened is not None and task.options:
        name = next(n for n in target.options if n in task.options)
        asked = task.options[name].lower()
        wrong = next((v for v in target.options[name] if v.lower() != asked), None)
        page = _play(catalogue, opened)
        if wrong is not None and page is not None:
            chosen = {name: wrong}
            for ref in page_refs(render(catalogue, page).html):
                if ref.href and locate(catalogue, ref.href).options == chosen:
                    candidates.append([*opened, Action("click", {"ref": ref.ref})])
                    break
    broad = Action("type", {"ref": 1, "text": target.category, "submit": True})
    results = _play(catalogue, [broad])
    if results is not None:
        for ref in page_refs(render(catalogue, results).html):
            if ref.text == "Next >" and ref.href:
                candidates.append([broad, Action("click", {"ref": ref.ref})])
                break
    kept = []
    for stage in candidates:
        end = _play(catalogue, stage)
        if end is not None and stage not in kept and _solved_from(catalogue, task, end):
            kept.append(stage)
    return kept
