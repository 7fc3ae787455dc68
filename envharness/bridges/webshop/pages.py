"""The shop's pages: where a URL leads (:func:`locate`) and the HTML it shows (:func:`render`).

Pure functions of the catalogue and the URL: the server serves them, and the oracle renders them
to plan without a browser. Every bit of shop state lives in the URL (the search words, the results
page, the chosen options), so the site is stateless and an episode replays exactly.

- ``/`` — the search page: a search box and a button.
- ``/search?q=WORDS&page=N`` — 10 results a page, with ``< Prev`` / ``Next >`` links.
- ``/item/ID?q=..&page=..&OPTION=VALUE..`` — a product: price, option buttons (the chosen one is
  marked ``aria-pressed``), ``Buy Now``, features and description.
- ``/buy/ID?OPTION=VALUE..`` — the order confirmation: buying ends the episode.

Example:
    >>> from envharness.bridges.webshop.catalogue import load_catalogue
    >>> shop = load_catalogue()
    >>> locate(shop, "/item/p001?q=shoes&size=8&color=pink")
    Location(kind='item', query='shoes', page=1, product_id='p001', options={'size': '8'})
    >>> item_url("p001", query="trail shoes", options={"size": "8"})
    '/item/p001?q=trail+shoes&page=1&size=8'
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

from envharness.bridges.webshop.catalogue import Catalogue, Product

__all__ = [
    "PAGE_SIZE",
    "Location",
    "RenderedPage",
    "buy_url",
    "item_url",
    "locate",
    "render",
    "search_url",
]

PAGE_SIZE = 10
"""Results shown per results page."""

_STYLE = (
    "body{font-family:sans-serif;max-width:46em;margin:1em auto}"
    "a[aria-pressed=true]{font-weight:bold;border:2px solid #333}"
    ".opt{display:inline-block;margin:2px;padding:2px 6px;border:1px solid #999}"
    ".buy{display:inline-block;margin:8px 0;padding:4px 12px;background:#fc3}"
)


@dataclass(frozen=True)
class Location:
    """Where a URL of the shop leads.

    Attributes:
        kind: ``home``, ``results``, ``item``, ``done`` (an order was placed) or ``not_found``.
        query: The search words carried by the URL (``""`` if none).
        page: The results page (1-based; 1 when not on or from a results page).
        product_id: The product of an ``item`` or ``done`` page.
        options: The chosen options (valid ones only, in the product's option order).
    """

    kind: str
    query: str = ""
    page: int = 1
    product_id: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RenderedPage:
    """A page of the shop as the server sends it.

    Attributes:
        status: The HTTP status.
        location: Where the URL led.
        title: The page's ``<title>``.
        html: The whole document.
    """

    status: int
    location: Location
    title: str
    html: str


def search_url(query: str, page: int = 1) -> str:
    """The results page ``page`` of ``query``."""
    return "/search?" + urlencode({"q": query, "page": page})


def item_url(
    product_id: str, *, query: str = "", page: int = 1, options: Mapping[str, str] | None = None
) -> str:
    """A product page, remembering the search it came from and the chosen options."""
    params = [("q", query), ("page", str(page)), *(options or {}).items()]
    return f"/item/{product_id}?" + urlencode(params)


def buy_url(product_id: str, options: Mapping[str, str] | None = None) -> str:
    """The order of ``product_id`` with ``options``."""
    query = urlencode(list((options or {}).items()))
    return f"/buy/{product_id}" + (f"?{query}" if query else "")


def _page_number(raw: str | None) -> int:
    try:
        number = int(raw or "1")
    except ValueError:
        return 1
    return max(1, min(number, 10_000))


def _chosen(product: Product, params: Mapping[str, str]) -> dict[str, str]:
    chosen = {}
    for name in product.options:
        value = product.option_value(name, params.get(name, ""))
        if value is not None:
            chosen[name] = value
    return chosen


def locate(catalogue: Catalogue, url: str) -> Location:
    """Where ``url`` (a path with its query, or a full URL of the shop) leads."""
    parts = urlsplit(url)
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    query = " ".join(params.get("q", "").split())
    page = _page_number(params.get("page"))
    path = parts.path or "/"
    if path in ("/", "/index.html"):
        return Location("home")
    if path == "/search":
        return Location("results", query, page)
    for prefix, kind in (("/item/", "item"), ("/buy/", "done")):
        if path.startswith(prefix):
            product = catalogue.products.get(path[len(prefix) :])
            if product is None:
                break
            return Location(kind, query, page, product.id, _chosen(product, params))
    return Location("not_found", query, page)


def render(catalogue: Catalogue, url: str) -> RenderedPage:
    """The page ``url`` shows (``404`` for an unknown path or product)."""
    where = locate(catalogue, url)
    if where.kind == "home":
        title, body = "Search", _home()
    elif where.kind == "results":
        title, body = _results(catalogue, where)
    elif where.kind == "item":
        product = catalogue.products[str(where.product_id)]
        title, body = product.title, _item(product, where)
    elif where.kind == "done":
        title, body = "Order placed", _done(catalogue.products[str(where.product_id)], where)
    else:
        title, body = "Page not found", _not_found()
    status = 404 if where.kind == "not_found" else 200
    full_title = f"{catalogue.shop} - {title}"
    document = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(full_title)}</title><style>{_STYLE}</style></head>\n<body>\n"
        f"<header><p><b>{_e(catalogue.shop)}</b></p></header>\n<main>\n{body}\n</main>\n"
        "</body></html>\n"
    )
    return RenderedPage(status, where, full_title, document)


# -- the pages ------------------------------------------------------------------------------------


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _link(href: str, text: str, extra: str = "") -> str:
    return f"<a href='{_e(href)}'{extra}>{_e(text)}</a>"


def _back_to_search() -> str:
    return f"<nav>{_link('/', 'Back to Search')}</nav>"


def _home() -> str:
    return (
        "<h1>Search the shop</h1>\n"
        "<form action='/search' method='get' role='search'>"
        "<input type='text' name='q' aria-label='Search' placeholder='Search products'> "
        "<button type='submit'>Search</button></form>"
    )


def _results(catalogue: Catalogue, where: Location) -> tuple[str, str]:
    found = catalogue.search(where.query)
    pages = max(1, -(-len(found) // PAGE_SIZE))
    page = min(where.page, pages)
    shown = found[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    parts = [_back_to_search(), f"<h1>Results for &quot;{_e(where.query)}&quot;</h1>"]
    if not found:
        parts.append("<p>No products match your search. Try other words.</p>")
        return f'Results for "{where.query}"', "\n".join(parts)
    parts.append(f"<p>Page {page} of {pages} ({len(found)} products)</p>")
    paging = []
    if page > 1:
        paging.append(_link(search_url(where.query, page - 1), "< Prev"))
    if page < pages:
        paging.append(_link(search_url(where.query, page + 1), "Next >"))
    if paging:
        parts.append(f"<p>{' '.join(paging)}</p>")
    items = []
    for product in shown:
        href = item_url(product.id, query=where.query, page=page)
        items.append(
            f"<li>{_link(href, product.title)}<p>${product.price:.2f} - {_e(product.category)}</p>"
            "</li>"
        )
    parts.append("<ul>\n" + "\n".join(items) + "\n</ul>")
    return f'Results for "{where.query}" (page {page})', "\n".join(parts)


def _item(product: Product, where: Location) -> str:
    nav = [_link("/", "Back to Search")]
    if where.query:
        nav.append(_link(search_url(where.query, where.page), "< Back to results"))
    parts = [
        f"<nav>{' '.join(nav)}</nav>",
        f"<h1>{_e(product.title)}</h1>",
        f"<p>Price: ${product.price:.2f}</p>",
        f"<p>Category: {_e(product.category)}</p>",
    ]
    for name, values in product.options.items():
        buttons = []
        for value in values:
            chosen = {**where.options, name: value}
            href = item_url(product.id, query=where.query, page=where.page, options=chosen)
            pressed = "true" if where.options.get(name) == value else "false"
            extra = f" class='opt' role='button' aria-pressed='{pressed}'"
            buttons.append(_link(href, value, extra))
        parts.append(f"<div><p>{_e(name)}:</p>{' '.join(buttons)}</div>")
    parts.append(
        "<p>"
        + _link(buy_url(product.id, where.options), "Buy Now", " class='buy' role='button'")
        + "</p>"
    )
    features = "".join(f"<li>{_e(a)}</li>" for a in product.attributes)
    parts.append(f"<h2>Features</h2><ul>{features}</ul>")
    parts.append(f"<h2>Description</h2><p>{_e(product.description)}</p>")
    return "\n".join(parts)


def _done(product: Product, where: Location) -> str:
    chosen = ", ".join(f"{k}: {v}" for k, v in where.options.items()) or "none"
    return "\n".join(
        [
            "<h1>Thank you for your order!</h1>",
            f"<p>You bought: {_e(product.title)}</p>",
            f"<p>Options: {_e(chosen)}</p>",
            f"<p>Price: ${product.price:.2f}</p>",
        ]
    )


def _not_found() -> str:
    return _back_to_search() + "\n<h1>Page not found</h1><p>There is no such page in the shop.</p>"
