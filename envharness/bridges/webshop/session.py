"""One env's browser tab: a fresh browser context and page per episode, and the tool actions.

Every method of :class:`PageSession` touches Playwright objects, so it runs on the browser thread
(:class:`~envharness.bridges.webshop.driver.BrowserThread`); :class:`BrowserEnv` ships the calls
there. Requests to any host outside ``allowed_hosts`` are aborted inside the browser (a route
matched in Playwright's driver, so allowed requests pay nothing), and links or scripts that would
open a new tab open in the same one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from envharness.bridges.webshop.driver import playwright_api
from envharness.bridges.webshop.page_text import (
    REF_ATTRIBUTE,
    SNAPSHOT_JS,
    PageElement,
    PageSnapshot,
    display_url,
)

__all__ = ["ActionOutcome", "PageSession", "blocked_url_pattern", "check_url"]

_SNAPSHOT_TRIES = 3
_TYPABLE = frozenset({"textbox", "searchbox", "combobox"})

# Links with target=_blank and window.open() stay in the tab, so the agent never loses the page.
_SAME_TAB_JS = """
window.open = (url) => { if (url) { window.location.href = url; } return window; };
document.addEventListener("click", (event) => {
  const link = event.target && event.target.closest ? event.target.closest("a[target]") : null;
  if (link) link.removeAttribute("target");
}, true);
"""


def blocked_url_pattern(allowed_hosts: Sequence[str]) -> re.Pattern[str]:
    """A regex matching every URL that is *not* http(s)/ws(s) on one of ``allowed_hosts``.

    ``data:``, ``blob:`` and ``about:`` URLs are allowed (they fetch nothing).

    Example:
        >>> pattern = blocked_url_pattern(["127.0.0.1"])
        >>> bool(pattern.search("http://127.0.0.1:8000/a")), bool(pattern.search("https://x.org/"))
        (False, True)
    """
    hosts = "|".join(re.escape(h) for h in allowed_hosts)
    return re.compile(rf"^(?!(?:https?|wss?)://(?:{hosts})(?::\d+)?(?:[/?#]|$)|data:|blob:|about:)")


def check_url(url: str, allowed_hosts: Sequence[str]) -> str | None:
    """Why the browser may not go to the absolute ``url`` (``None`` when it may)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"only http and https URLs can be opened, not {parts.scheme or 'relative'!r} ones"
    if parts.hostname not in allowed_hosts:
        return (
            f"the host {parts.hostname!r} is not reachable from this environment (allowed: "
            f"{', '.join(allowed_hosts)})"
        )
    return None


@dataclass(frozen=True)
class ActionOutcome:
    """What one tool action did.

    Attributes:
        snapshot: The page afterwards.
        feedback: One line saying what happened (``""`` for ``read_page``).
        invalid: Why the action could not be carried out, or ``None``.
    """

    snapshot: PageSnapshot
    feedback: str
    invalid: str | None = None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    return line.removeprefix("Error: ")


class PageSession:
    """A browser context and page for one env; every method runs on the browser thread.

    Args:
        allowed_hosts: Hosts the page may reach.
        timeout_ms: The timeout of each Playwright action and navigation.
    """

    def __init__(self, allowed_hosts: Sequence[str], timeout_ms: int) -> None:
        self.allowed_hosts = tuple(allowed_hosts)
        self.timeout_ms = timeout_ms
        self._blocked = blocked_url_pattern(self.allowed_hosts)
        self._context: Any = None
        self._page: Any = None
        self._snapshot: PageSnapshot | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def open(self, browser: Any, url: str) -> PageSnapshot:
        """Closes the old context, opens a fresh one on ``url`` and reads the page."""
        self.close()
        context = browser.new_context(service_workers="block", accept_downloads=False)
        self._context = context
        context.set_default_timeout(self.timeout_ms)
        context.set_default_navigation_timeout(self.timeout_ms)
        context.route(self._blocked, lambda route: route.abort("blockedbyclient"))
        context.add_init_script(_SAME_TAB_JS)
        self._page = context.new_page()
        self._page.goto(url, wait_until="load")
        self._forget_blank_page(context)
        return self.snapshot()

    def _forget_blank_page(self, context: Any) -> None:
        """Drops the tab's first history entry (``about:blank``), so ``back()`` cannot reach it."""
        try:
            cdp = context.new_cdp_session(self._page)
            cdp.send("Page.resetNavigationHistory")
            cdp.detach()
        except playwright_api().Error:  # not Chromium: back() reports the blank page instead
            pass

    def close(self) -> None:
        """Closes the context (and its page). Idempotent."""
        context, self._context, self._page = self._context, None, None
        if context is not None:
            try:
                context.close()
            except Exception:  # noqa: S110 - the browser may already be gone
                pass

    @property
    def is_open(self) -> bool:
        """Whether a page is open."""
        return self._page is not None

    # -- reading --------------------------------------------------------------------------------

    def snapshot(self) -> PageSnapshot:
        """Reads the page (numbering its elements), waiting out a navigation in progress."""
        api = playwright_api()
        for attempt in range(_SNAPSHOT_TRIES):
            try:
                if attempt:  # the document went away mid-read: a navigation was under way
                    self._page.wait_for_load_state("load")
                data = self._page.evaluate(SNAPSHOT_JS)
            except api.Error:
                if attempt + 1 == _SNAPSHOT_TRIES:
                    raise
                continue
            self._snapshot = PageSnapshot.from_js(data)
            return self._snapshot
        raise AssertionError("unreachable")  # pragma: no cover

    # -- acting ---------------------------------------------------------------------------------

    def perform(self, tool: str, args: Mapping[str, Any], base: str) -> ActionOutcome:
        """Carries out one tool action and reads the page afterwards.

        Args:
            tool: ``goto``, ``click``, ``type``, ``select``, ``back`` or ``read_page``.
            args: The tool's arguments (already checked against its schema).
            base: The start URL: relative ``goto`` URLs resolve against the page, else this.
        """
        api = playwright_api()
        try:
            feedback, invalid = getattr(self, f"_do_{tool}")(args, base)
        except api.Error as e:  # a timeout, a failed navigation, a detached element ...
            feedback, invalid = "", f"{tool} failed: {_first_line(e)}"
        return ActionOutcome(self.snapshot(), feedback, invalid)

    def _element(self, ref: int, tool: str) -> tuple[PageElement | None, str | None]:
        element = self._snapshot.element(ref) if self._snapshot is not None else None
        if element is None:
            return None, (
                f"there is no element [{ref}] on this page; use a reference number from the "
                "latest page view (read_page() shows it again)"
            )
        if element.disabled and tool != "read_page":
            return None, f"[{ref}] {element.role} {element.name!r} is disabled"
        return element, None

    def _locator(self, ref: int) -> Any:
        return self._page.locator(f'[{REF_ATTRIBUTE}="{ref}"]').first

    def _do_read_page(self, args: Mapping[str, Any], base: str) -> tuple[str, str | None]:
        return "", None

    def _do_goto(self, args: Mapping[str, Any], base: str) -> tuple[str, str | None]:
        here = self._page.url if self._page.url.startswith("http") else base
        target = urljoin(here, str(args["url"]).strip())
        problem = check_url(target, self.allowed_hosts)
        if problem is not None:
            return "", f"cannot go to {args['url']!r}: {problem}"
        self._page.goto(target, wait_until="load")
        return f"Went to {display_url(target, base)}.", None

    def _do_click(self, args: Mapping[str, Any], base: str) -> tuple[str, str | None]:
        element, problem = self._element(int(args["ref"]), "click")
        if element is None:
            return "", problem
        self._locator(element.ref).click()
        return f"Clicked {element.line()}.", None

    def _do_type(self, args: Mapping[str, Any], base: str) -> tuple[str, str | None]:
        element, problem = self._element(int(args["ref"]), "type")
        if element is None:
            return "", problem
        if element.role not in _TYPABLE:
            return "", f"[{element.ref}] is a {element.role}, not a text box; type into a textbox"
        text = str(args["text"])
        locator = self._locator(element.ref)
        locator.fill(text)
        if args.get("submit"):
            locator.press("Enter")
            return f'Typed "{text}" into [{element.ref}] and pressed Enter.', None
        return f'Typed "{text}" into [{element.ref}].', None

    def _do_select(self, args: Mapping[str, Any], base: str) -> tuple[str, str | None]:
        element, problem = self._element(int(args["ref"]), "select")
        if element is None:
            return "", problem
        if element.role != "select":
            return "", f"[{element.ref}] is a {element.role}, not a select; click it instead"
        wanted = str(args["option"]).strip()
        match = next((o for o in element.options if o.lower() == wanted.lower()), None)
        if match is None:
            listed = " | ".join(element.options) or "none"
            return "", f"[{element.ref}] has no option {wanted!r}; its options: {listed}"
        self._locator(element.ref).select_option(label=match)
        return f'Selected "{match}" in [{element.ref}].', None

    def _do_back(self, args: Mapping[str, Any], base: str) -> tuple[str, str | None]:
        before = self._page.url
        if self._page.go_back(wait_until="load") is None and self._page.url == before:
            return "", "there is no previous page to go back to"
        return f"Went back to {display_url(self._page.url, base)}.", None
