"""The texts the agent reads: the document list, search results and pages.

Example:
    >>> from envharness.bridges.docqa.search import Hit
    >>> print(search_results("net profit", [Hit("report.pdf", 3, 2.5, "Net profit 5.1 3.8")]))
    Search results for 'net profit' (1 matching page):
    1. report.pdf, page 3: Net profit 5.1 3.8
    Read a page with read_page(doc, page).
"""

from __future__ import annotations

from collections.abc import Sequence

from envharness.bridges.docqa.corpus import Corpus, Document
from envharness.bridges.docqa.schemas import SEARCH_HITS
from envharness.bridges.docqa.search import Hit

__all__ = ["PAGE_CHARS", "document_list", "document_names", "page_text", "plural", "search_results"]

PAGE_CHARS = 8000
"""A page longer than this is cut (with a note saying so)."""
_LISTED = 200
_NAMED = 20


def plural(count: int, word: str) -> str:
    """``"1 page"``, ``"2 pages"``.

    Example:
        >>> plural(1, "page"), plural(3, "document")
        ('1 page', '3 documents')
    """
    return f"{count} {word}{'' if count == 1 else 's'}"


def document_names(corpus: Corpus) -> str:
    """The first documents' names, comma-separated, for a short message."""
    names = corpus.names
    shown = ", ".join(names[:_NAMED])
    return shown + (
        f" ... ({len(names)} in all; see list_documents())" if len(names) > _NAMED else ""
    )


def document_list(corpus: Corpus) -> str:
    """One line per document: name, kind, pages and title (the first 200 documents)."""
    documents = corpus.documents
    lines = [f"{plural(len(documents), 'document')}:"]
    for d in documents[:_LISTED]:
        title = f": {d.title}" if d.title else ""
        lines.append(f"- {d.name} ({d.kind}, {plural(d.n_pages, 'page')}){title}")
    if len(documents) > _LISTED:
        lines.append(f"... and {len(documents) - _LISTED} more; search finds pages in them too.")
    return "\n".join(lines)


def search_results(query: str, hits: Sequence[Hit]) -> str:
    """The best :data:`~envharness.bridges.docqa.schemas.SEARCH_HITS` hits, one line each."""
    if not hits:
        return (
            f"No page matches {query!r}. Try other keywords, or read pages directly "
            "(list_documents() shows the documents and their page counts)."
        )
    shown = hits[:SEARCH_HITS]
    counted = (
        f"best {len(shown)} of {len(hits)} matching pages"
        if len(hits) > len(shown)
        else f"{plural(len(hits), 'matching page')}"
    )
    lines = [f"Search results for {query!r} ({counted}):"]
    lines.extend(
        f"{n}. {hit.doc}, page {hit.page}: {hit.snippet}" for n, hit in enumerate(shown, 1)
    )
    lines.append("Read a page with read_page(doc, page).")
    return "\n".join(lines)


def page_text(document: Document, page: int) -> str:
    """A page under a header naming it, cut at :data:`PAGE_CHARS` characters."""
    text = document.pages[page - 1]
    if len(text) > PAGE_CHARS:
        text = text[:PAGE_CHARS] + f"\n[... the page is cut at {PAGE_CHARS} characters]"
    body = text if text.strip() else "(This page has no text.)"
    return f"[{document.name}, page {page} of {document.n_pages}]\n{body}"
