"""The web shop bridge: WebShop-style shopping tasks in a real headless browser.

Registered as ``webshop``; a task id names one shopping instruction (``ws01`` ... ``ws24``; see
:meth:`WebShopEnv.list_tasks`). A small shop web app (original data: 87 products in six
categories) is served on ``127.0.0.1``; the agent browses it in Debian's Chromium through
Playwright with ``goto``, ``click``, ``type``, ``select``, ``back`` and ``read_page``, and the
purchase is scored with WebShop's reward. Needs the ``webshop`` extra (``pip install
'envharness[web]'``) and ``apt-get install -y chromium``; playwright is imported only when an
env is built.

- :mod:`~envharness.bridges.webshop.browser`: :class:`BrowserEnv`, the generic browser bridge (a
  URL, an instruction and a verifier function).
- :mod:`~envharness.bridges.webshop.env`: :class:`WebShopEnv`, the browser pointed at the shop.
- :mod:`~envharness.bridges.webshop.page_text`: the compact page view with ``[n]`` references.
- :mod:`~envharness.bridges.webshop.driver`: the one browser per process, on its own thread.
- :mod:`~envharness.bridges.webshop.session`: one env's browser context and the tool actions.
- :mod:`~envharness.bridges.webshop.catalogue`, :mod:`~envharness.bridges.webshop.pages`,
  :mod:`~envharness.bridges.webshop.server`: the shop's data, pages and web server.
- :mod:`~envharness.bridges.webshop.reward`: the verifier (WebShop's reward).
- :mod:`~envharness.bridges.webshop.oracle`: the oracle and the stage candidates.

Example:
    >>> from envharness.bridges.webshop import WebShopEnv
    >>> len(WebShopEnv.list_tasks("train")), len(WebShopEnv.list_tasks("test"))
    (16, 8)
"""

from __future__ import annotations

from envharness.bridges.webshop.browser import BROWSER_TOOLS, BrowserEnv, Verifier
from envharness.bridges.webshop.catalogue import Catalogue, Product, Task, load_catalogue
from envharness.bridges.webshop.driver import CHROMIUM_ENV, browser_thread, chromium_path
from envharness.bridges.webshop.env import WebShopEnv
from envharness.bridges.webshop.page_text import PageElement, PageSnapshot
from envharness.bridges.webshop.reward import ShopVerifier, purchase_reward
from envharness.bridges.webshop.server import ShopServer, shared_server

__all__ = [
    # the bridges
    "BrowserEnv",
    "WebShopEnv",
    # the browser
    "BROWSER_TOOLS",
    "CHROMIUM_ENV",
    "PageElement",
    "PageSnapshot",
    "Verifier",
    "browser_thread",
    "chromium_path",
    # the shop
    "Catalogue",
    "Product",
    "ShopServer",
    "ShopVerifier",
    "Task",
    "load_catalogue",
    "purchase_reward",
    "shared_server",
]
