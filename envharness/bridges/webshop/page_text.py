"""The compact text view of a web page, with numbered references to what can be acted on.

:data:`SNAPSHOT_JS` runs in the page: it walks the visible DOM in document order, turns text into
lines and every link, button, input, select and text area into an element with a reference number
``[1]``, ``[2]`` ... (stored on the element as ``data-eh-ref``, so ``click(3)`` finds it). Python
reads the result into a :class:`PageSnapshot` and prints it with :meth:`PageSnapshot.view`::

    URL: /search?q=french+press&page=1
    Title: Pinecrest Market - Results for "french press" (page 1)

    Pinecrest Market
    [1] link "Back to Search"
    Results for "french press"
    ...

Example:
    >>> snap = PageSnapshot.from_js({
    ...     "url": "http://127.0.0.1:8000/", "title": "Shop",
    ...     "items": [{"kind": "text", "text": "Welcome"},
    ...               {"kind": "element", "ref": 1, "role": "textbox", "name": "Search",
    ...                "value": "tea"}]})
    >>> print(snap.view("http://127.0.0.1:8000"))
    URL: /
    Title: Shop
    <BLANKLINE>
    Welcome
    [1] textbox "Search" value="tea"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["REF_ATTRIBUTE", "SNAPSHOT_JS", "PageElement", "PageSnapshot", "display_url"]

REF_ATTRIBUTE = "data-eh-ref"
"""The DOM attribute holding an element's reference number."""

_MAX_LINE = 300
_MAX_NAME = 120
_MAX_LINES = 400

SNAPSHOT_JS = r"""
async () => {
  if (document.readyState !== "complete") {
    await new Promise((resolve) => window.addEventListener("load", resolve, {once: true}));
  }
  const REF = "data-eh-ref";
  const INTERACTIVE = 'a[href], button, input, select, textarea, [role="button"], '
    + '[role="link"], [role="checkbox"], [role="tab"], [role="menuitem"]';
  const BLOCK = new Set(["ADDRESS", "ARTICLE", "ASIDE", "BLOCKQUOTE", "BR", "DD", "DETAILS",
    "DIV", "DL", "DT", "FIELDSET", "FIGCAPTION", "FIGURE", "FOOTER", "FORM", "H1", "H2", "H3",
    "H4", "H5", "H6", "HEADER", "HR", "LEGEND", "LI", "MAIN", "NAV", "OL", "P", "PRE", "SECTION",
    "SUMMARY", "TABLE", "TBODY", "TD", "TH", "THEAD", "TR", "UL"]);
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "SVG", "IFRAME"]);
  const clean = (s) => (s || "").replace(/\s+/g, " ").trim();
  for (const old of document.querySelectorAll("[" + REF + "]")) old.removeAttribute(REF);
  const hidden = (el) => {
    if (el.hidden || el.getAttribute("aria-hidden") === "true") return true;
    const style = getComputedStyle(el);
    return style.display === "none" || style.visibility === "hidden";
  };
  const roleOf = (el) => {
    const role = el.getAttribute("role");
    if (role) return role;
    const tag = el.tagName;
    if (tag === "A") return "link";
    if (tag === "BUTTON") return "button";
    if (tag === "SELECT") return "select";
    if (tag === "TEXTAREA") return "textbox";
    const type = (el.getAttribute("type") || "text").toLowerCase();
    if (["button", "submit", "reset", "image"].includes(type)) return "button";
    if (["checkbox", "radio"].includes(type)) return type;
    return "textbox";
  };
  const nameOf = (el) => {
    const label = el.getAttribute("aria-label");
    if (label) return clean(label);
    if (el.labels && el.labels.length) return clean(el.labels[0].innerText);
    if (!["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName)) {
      const text = clean(el.innerText);
      if (text) return text;
    }
    if (el.tagName === "INPUT" && ["button", "submit", "reset"].includes(el.type)) {
      return clean(el.value) || (el.type === "submit" ? "Submit" : "");
    }
    return clean(el.getAttribute("placeholder") || el.getAttribute("title")
      || el.getAttribute("alt") || el.getAttribute("name") || "");
  };
  const items = [];
  let line = "";
  let ref = 0;
  const flush = () => {
    const text = clean(line);
    if (text) items.push({kind: "text", text});
    line = "";
  };
  const walk = (node) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) { line += child.nodeValue; continue; }
      if (child.nodeType !== Node.ELEMENT_NODE) continue;
      const tag = child.tagName;
      if (SKIP.has(tag) || hidden(child)) continue;
      const type = (child.getAttribute("type") || "").toLowerCase();
      if (tag === "INPUT" && type === "hidden") continue;
      if (child.matches(INTERACTIVE)) {
        flush();
        ref += 1;
        child.setAttribute(REF, String(ref));
        const role = roleOf(child);
        const item = {kind: "element", ref, role, name: nameOf(child)};
        const pressed = ["aria-pressed", "aria-selected", "aria-checked"]
          .some((a) => child.getAttribute(a) === "true");
        const current = child.getAttribute("aria-current");
        if (pressed || child.checked || (current && current !== "false")) item.selected = true;
        if (child.disabled || child.getAttribute("aria-disabled") === "true") item.disabled = true;
        if (role === "textbox") item.value = child.value || "";
        if (tag === "SELECT") {
          item.options = Array.from(child.options).map((o) => clean(o.text));
          const index = child.selectedIndex;
          item.value = index >= 0 ? clean(child.options[index].text) : "";
        }
        if (tag === "A") item.href = child.getAttribute("href");
        items.push(item);
        continue;
      }
      const block = BLOCK.has(tag);
      if (block) flush();
      walk(child);
      if (block) flush();
    }
  };
  if (document.body) walk(document.body);
  flush();
  return {url: location.href, title: document.title, items};
}
"""
"""The in-page function that numbers the elements and returns the page's items."""


def display_url(url: str, base: str | None) -> str:
    """``url`` as shown to the agent: path and query when it is on ``base``'s origin.

    Example:
        >>> display_url("http://127.0.0.1:8000/search?q=tea", "http://127.0.0.1:8000/")
        '/search?q=tea'
        >>> display_url("http://example.com/a", "http://127.0.0.1:8000/")
        'http://example.com/a'
    """
    if base:
        here, home = urlsplit(url), urlsplit(base)
        if (here.scheme, here.netloc) == (home.scheme, home.netloc):
            shown = here.path or "/"
            if here.query:
                shown += "?" + here.query
            if here.fragment:
                shown += "#" + here.fragment
            return shown
    return url


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class PageElement:
    """Something on the page the agent can act on.

    Attributes:
        ref: The reference number (``click(ref)``), 1-based in document order.
        role: ``link``, ``button``, ``textbox``, ``select``, ``checkbox``, ``radio`` or an ARIA
            role given by the page.
        name: Its accessible name (label, text, placeholder ...).
        value: A text box's text or a select's chosen option (``None`` for others).
        selected: Pressed, checked, selected or current.
        disabled: Disabled.
        options: A select's option labels.
        href: A link's ``href`` attribute, as written in the page.
    """

    ref: int
    role: str
    name: str
    value: str | None = None
    selected: bool = False
    disabled: bool = False
    options: tuple[str, ...] = ()
    href: str | None = None

    def line(self) -> str:
        """The element as one line of the view, e.g. ``[3] link "Next >"``."""
        text = f'[{self.ref}] {self.role} "{_short(self.name, _MAX_NAME)}"'
        if self.value is not None and self.role != "select":
            text += f' value="{_short(self.value, _MAX_NAME)}"'
        if self.options:
            text += f" options: {' | '.join(self.options)}"
            if self.value:
                text += f' (chosen: "{self.value}")'
        if self.selected:
            text += " (selected)"
        if self.disabled:
            text += " (disabled)"
        return text

    def to_dict(self) -> dict[str, Any]:
        """The element as a JSON-able dict (every field, for the env state)."""
        return {
            "ref": self.ref,
            "role": self.role,
            "name": self.name,
            "value": self.value,
            "selected": self.selected,
            "disabled": self.disabled,
            "options": list(self.options),
            "href": self.href,
        }


@dataclass(frozen=True)
class PageSnapshot:
    """What a page showed when it was last read.

    Attributes:
        url: The page's full URL.
        title: The document title.
        items: Text lines (``str``) and elements, in document order.
    """

    url: str
    title: str
    items: tuple[str | PageElement, ...]

    @classmethod
    def from_js(cls, data: Mapping[str, Any]) -> PageSnapshot:
        """Reads what :data:`SNAPSHOT_JS` returned."""
        items: list[str | PageElement] = []
        for raw in data.get("items") or ():
            if raw.get("kind") == "element":
                items.append(
                    PageElement(
                        ref=int(raw["ref"]),
                        role=str(raw.get("role") or ""),
                        name=str(raw.get("name") or ""),
                        value=None if raw.get("value") is None else str(raw["value"]),
                        selected=bool(raw.get("selected")),
                        disabled=bool(raw.get("disabled")),
                        options=tuple(str(o) for o in raw.get("options") or ()),
                        href=None if raw.get("href") is None else str(raw["href"]),
                    )
                )
            else:
                items.append(str(raw.get("text", "")))
        return cls(str(data.get("url", "")), str(data.get("title", "")), tuple(items))

    @property
    def elements(self) -> list[PageElement]:
        """The page's elements, by reference number."""
        return [item for item in self.items if isinstance(item, PageElement)]

    def element(self, ref: int) -> PageElement | None:
        """The element ``[ref]``, or None."""
        for item in self.elements:
            if item.ref == ref:
                return item
        return None

    @property
    def text(self) -> str:
        """The page's text lines alone, joined by newlines (no elements)."""
        return "\n".join(item for item in self.items if isinstance(item, str))

    def body(self) -> str:
        """The page's lines: text and elements, at most 400 lines, long lines shortened."""
        lines = [
            item.line() if isinstance(item, PageElement) else _short(item, _MAX_LINE)
            for item in self.items
        ]
        if len(lines) > _MAX_LINES:
            more = len(lines) - _MAX_LINES
            lines = [*lines[:_MAX_LINES], f"... ({more} more lines not shown)"]
        return "\n".join(lines) if lines else "(the page is empty)"

    def view(self, base: str | None = None) -> str:
        """The compact view: URL (relative to ``base``'s origin), title, then :meth:`body`."""
        return f"URL: {display_url(self.url, base)}\nTitle: {self.title}\n\n{self.body()}"
