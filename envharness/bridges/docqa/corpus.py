r"""A corpus: the documents of a folder, split into numbered pages, with a search index.

Every file under the folder (sub-folders included, hidden ones skipped) whose name ends in
``.pdf``, ``.md``, ``.markdown`` or ``.txt`` (any case) is a document, named by its path relative
to the folder with ``/`` separators (``reports/2023.pdf``). Other files are ignored.

Pages are numbered from 1:

- a PDF's pages are its own pages (text extracted with ``pypdf``, the ``docqa`` extra);
- a text or Markdown file is split on form feed characters (``\f``) when it has any, else into
  pages of ``lines_per_page`` lines (40 by default). Empty pages at the end are dropped; a file
  always has at least one page.

A document's title is the PDF's declared title, a Markdown file's first heading, or else the first
non-empty line. Loaded corpora are cached per folder, page length and file fingerprint (names,
sizes, modification times), so many environments over one folder share one copy.

Example:
    >>> split_pages("one\ntwo\nthree", lines_per_page=2)
    ('one\ntwo', 'three')
    >>> split_pages("first page\f\nsecond page\n\f\n")
    ('first page', 'second page')
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envharness.bridges.docqa.pdf import read_pdf
from envharness.bridges.docqa.search import PageIndex
from envharness.errors import BridgeError

__all__ = [
    "DEFAULT_LINES_PER_PAGE",
    "KINDS",
    "Corpus",
    "Document",
    "load_corpus",
    "split_pages",
]

_BRIDGE = "docqa"
DEFAULT_LINES_PER_PAGE = 40
"""Lines per page of a text or Markdown file without form feeds."""
KINDS = {".pdf": "pdf", ".md": "markdown", ".markdown": "markdown", ".txt": "text"}
"""File suffixes (lower-cased) that are documents, and the kind each one is."""
_TITLE_CHARS = 100
_CACHE_SIZE = 8
_cache: dict[tuple[object, ...], Corpus] = {}
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class Document:
    """One document of a corpus.

    Attributes:
        name: The path relative to the corpus folder, with ``/`` separators.
        kind: ``"pdf"``, ``"markdown"`` or ``"text"``.
        title: A one-line title (see the module docstring).
        pages: The text of each page; page ``n`` is ``pages[n - 1]``.
    """

    name: str
    kind: str
    title: str
    pages: tuple[str, ...]

    @property
    def n_pages(self) -> int:
        """The number of pages."""
        return len(self.pages)


@dataclass(frozen=True)
class Corpus:
    """The documents of one folder, in name order, and a search index over their pages.

    Attributes:
        root: The folder (absolute).
        documents: The documents, sorted by name.
        index: The BM25 index over every page.
    """

    root: str
    documents: tuple[Document, ...]
    index: PageIndex = field(init=False, repr=False, compare=False)
    _by_name: dict[str, Document] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pages = ((d.name, n, text) for d in self.documents for n, text in enumerate(d.pages, 1))
        object.__setattr__(self, "index", PageIndex(pages))
        object.__setattr__(self, "_by_name", {d.name: d for d in self.documents})

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    @property
    def names(self) -> list[str]:
        """The document names, sorted."""
        return [d.name for d in self.documents]

    def get(self, name: str) -> Document | None:
        """The document named exactly ``name``, or ``None``."""
        return self._by_name.get(name)

    def resolve(self, name: str) -> Document | None:
        """The document ``name`` refers to, leniently; ``None`` when none or several do.

        Tried in order: the exact name; the name ignoring case and surrounding spaces; the name
        without its suffix (``annual_report_2023``); the file name without its folder. Each
        looser form must pick exactly one document.
        """
        found = self.get(name)
        if found is not None:
            return found
        wanted = name.strip().casefold()
        for key in (
            lambda d: d.name.casefold(),
            lambda d: d.name.rsplit(".", 1)[0].casefold(),
            lambda d: d.name.rsplit("/", 1)[-1].casefold(),
            lambda d: d.name.rsplit("/", 1)[-1].rsplit(".", 1)[0].casefold(),
        ):
            matches = [d for d in self.documents if key(d) == wanted]
            if len(matches) == 1:
                return matches[0]
        return None


def split_pages(text: str, lines_per_page: int = DEFAULT_LINES_PER_PAGE) -> tuple[str, ...]:
    """The pages of a text file: split on form feeds when it has any, else every N lines.

    Each page loses its surrounding blank lines and trailing spaces; empty pages at the end are
    dropped, but there is always at least one page.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\f" in text:
        parts = text.split("\f")
    else:
        lines = text.split("\n")
        parts = [
            "\n".join(lines[i : i + lines_per_page]) for i in range(0, len(lines), lines_per_page)
        ]
    pages = ["\n".join(line.rstrip() for line in part.split("\n")).strip("\n") for part in parts]
    while len(pages) > 1 and not pages[-1].strip():
        pages.pop()
    return tuple(pages) or ("",)


def _title(kind: str, pages: Sequence[str], declared: str = "") -> str:
    if declared:
        return declared[:_TITLE_CHARS]
    lines = [line.strip() for page in pages[:1] for line in page.splitlines() if line.strip()]
    if kind == "markdown":
        headings = [line.lstrip("#").strip() for line in lines if line.startswith("#")]
        lines = headings + lines
    return " ".join(lines[0].split())[:_TITLE_CHARS] if lines else ""


def _files(root: Path) -> list[tuple[str, Path]]:
    """``(name, path)`` of every document file under ``root``, sorted by name."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [s for s in subfolders if not s.startswith(".")]
        for file in files:
            path = Path(folder) / file
            if file.startswith(".") or path.suffix.lower() not in KINDS or not path.is_file():
                continue
            found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def _read(name: str, path: Path, lines_per_page: int) -> Document:
    kind = KINDS[path.suffix.lower()]
    if kind == "pdf":
        pdf = read_pdf(path)
        pages = pdf.pages or ("",)
        return Document(name, kind, _title(kind, pages, pdf.title), pages)
    try:
        text = path.read_bytes().decode("utf-8-sig", errors="replace")
    except OSError as e:
        raise BridgeError(f"cannot read the document {path}: {e.strerror}", bridge=_BRIDGE) from e
    pages = split_pages(text, lines_per_page)
    return Document(name, kind, _title(kind, pages), pages)


def load_corpus(
    folder: str | os.PathLike[str], lines_per_page: int = DEFAULT_LINES_PER_PAGE
) -> Corpus:
    """The corpus of ``folder`` (cached while its files are unchanged).

    Args:
        folder: The folder holding the documents.
        lines_per_page: Lines per page of text and Markdown files without form feeds.

    Returns:
        The :class:`Corpus`.

    Raises:
        BridgeError: If the folder does not exist, holds no document, or a document cannot be
            read.
        DependencyNotInstalled: If the folder holds a PDF and ``pypdf`` is missing.
    """
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise BridgeError(f"corpus_dir: {root} is not a folder", bridge=_BRIDGE)
    files = _files(root)
    if not files:
        suffixes = ", ".join(KINDS)
        raise BridgeError(
            f"corpus_dir: {root} holds no documents (files ending in {suffixes})", bridge=_BRIDGE
        )
    fingerprint = []
    for name, path in files:
        stat = path.stat()
        fingerprint.append((name, stat.st_size, stat.st_mtime_ns))
    key = (str(root), lines_per_page, tuple(fingerprint))
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    corpus = Corpus(str(root), tuple(_read(name, path, lines_per_page) for name, path in files))
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = corpus
    return corpus
