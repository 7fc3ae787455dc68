"""Reading the text of a PDF, page by page, with ``pypdf`` (the ``docqa`` extra).

``pypdf`` is imported only when a PDF is read; without it, :func:`read_pdf` raises
:class:`~envharness.errors.DependencyNotInstalled` naming the extra.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from envharness.errors import BridgeError, DependencyNotInstalled

__all__ = ["PdfText", "read_pdf"]

_BRIDGE = "docqa"


class PdfText(NamedTuple):
    """The text of a PDF: one string per page, and the title from its metadata.

    Attributes:
        pages: The text of each page, trailing spaces removed from each line.
        title: The document title the PDF declares, ``""`` when it declares none.
    """

    pages: tuple[str, ...]
    title: str


def _pypdf() -> ModuleType:
    try:
        import pypdf
    except ImportError as e:
        raise DependencyNotInstalled(
            "pypdf", "docqa", purpose="reading PDF documents in the docqa bridge"
        ) from e
    return pypdf


def read_pdf(path: str | Path) -> PdfText:
    """Extracts the text of every page of the PDF at ``path``.

    Args:
        path: The PDF file.

    Returns:
        The pages' text and the declared title.

    Raises:
        DependencyNotInstalled: If ``pypdf`` is missing (extra ``docqa``).
        BridgeError: If the file cannot be read as a PDF (damaged, or encrypted with a
            password), naming the file.
    """
    pypdf = _pypdf()
    quiet = logging.getLogger("pypdf")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # pypdf logs warnings for harmless quirks of real-world PDFs
    try:
        reader = pypdf.PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise BridgeError(f"{path}: the PDF is encrypted with a password", bridge=_BRIDGE)
        pages = tuple(_tidy(page.extract_text() or "") for page in reader.pages)
        metadata = reader.metadata
        title = str(metadata.title or "") if metadata is not None else ""
    except BridgeError:
        raise
    except Exception as e:  # pypdf raises many kinds of errors for damaged files
        raise BridgeError(
            f"cannot read the PDF {path}: {type(e).__name__}: {e}", bridge=_BRIDGE
        ) from e
    finally:
        quiet.setLevel(level)
    return PdfText(pages, " ".join(title.split()))


def _tidy(text: str) -> str:
    """Page text with trailing spaces and surrounding blank lines removed."""
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")
