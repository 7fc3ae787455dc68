"""Builds the built-in corpus's PDFs from their text sources, with a tiny PDF writer.

The built-in corpus (``data/corpus/``) holds Markdown and text files written by hand, and PDFs
made by this script from ``sources/*.txt``: one source file per PDF, pages separated by form feeds,
a line starting with ``# `` set as a bold heading. The writer is text-only: standard Helvetica
fonts (no embedding), WinAnsi (cp1252) text, US Letter pages, no compression, no timestamps, so
the same sources always give byte-identical PDFs. After writing, every PDF is read back with
``pypdf`` and its text compared with the source.

Run from the repository (it needs the ``docqa`` extra for the read-back check)::

    python -m envharness.bridges.docqa.build_corpus          # rebuild and check
    python -m envharness.bridges.docqa.build_corpus --check  # only check the committed PDFs

Example:
    >>> pdf = write_pdf([["# Title", "Revenue (2023): £48.6m"], ["Second page"]], title="Demo")
    >>> pdf[:8], pdf.rstrip().endswith(b"%%EOF")
    (b'%PDF-1.4', True)
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

__all__ = ["check", "expected_text", "main", "source_pages", "source_title", "write_pdf"]

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"
CORPUS = HERE / "data" / "corpus"

_PAGE_WIDTH, _PAGE_HEIGHT = 612, 792  # US Letter, in points
_MARGIN = 72
_LEADING = 14
_BODY = ("F1", 10)  # Helvetica 10 pt
_HEADING = ("F2", 13)  # Helvetica-Bold 13 pt
_MAX_CHARS = 92  # what fits in a line of 10 pt Helvetica between the margins
_MAX_LINES = (_PAGE_HEIGHT - 2 * _MARGIN) // _LEADING + 1


def _escape(line: str) -> bytes:
    try:
        raw = line.encode("cp1252")
    except UnicodeEncodeError as e:
        raise ValueError(f"{line!r}: only WinAnsi (cp1252) characters can be written") from e
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _wrap(lines: Sequence[str]) -> list[str]:
    """Lines longer than a text line are wrapped, keeping their indentation."""
    out: list[str] = []
    for line in lines:
        if len(line) <= _MAX_CHARS:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.extend(
            textwrap.wrap(line, _MAX_CHARS, initial_indent="", subsequent_indent=indent) or [""]
        )
    return out


def _content(lines: Sequence[str]) -> bytes:
    """The content stream of one page: one text object, one ``Tj`` per line."""
    ops = [b"BT", b"%d TL" % _LEADING, b"%d %d Td" % (_MARGIN, _PAGE_HEIGHT - _MARGIN)]
    for number, line in enumerate(lines):
        font, size = _HEADING if line.startswith("# ") else _BODY
        text = line[2:] if line.startswith("# ") else line
        if number:
            ops.append(b"T*")
        ops.append(b"/%s %d Tf" % (font.encode(), size))
        ops.append(b"(" + _escape(text) + b") Tj")
    ops.append(b"ET")
    return b"\n".join(ops)


def _text_string(text: str) -> bytes:
    """A PDF text string in UTF-16BE with a byte-order mark (any Unicode title)."""
    return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode() + b">"


def write_pdf(pages: Sequence[Sequence[str]], *, title: str = "") -> bytes:
    """A text-only PDF with one page per item of ``pages``, each a list of lines.

    A line starting with ``# `` is a bold heading; a line longer than about 92 characters is
    wrapped. The output depends only on the arguments.

    Args:
        pages: The lines of each page.
        title: The document title stored in the PDF's metadata (``""`` for none).

    Returns:
        The PDF file's bytes.

    Raises:
        ValueError: If there are no pages, a page has more lines than fit (about 47), or a line
            has a character outside WinAnsi (cp1252).
    """
    if not pages:
        raise ValueError("expected at least one page")
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold "
        b"/Encoding /WinAnsiEncoding >>",
        5: b"<< /Title " + _text_string(title) + b" /Producer (envharness docqa build_corpus) >>",
    }
    kids = []
    for number, page in enumerate(pages, start=1):
        lines = _wrap(page)
        if len(lines) > _MAX_LINES:
            raise ValueError(f"page {number} has {len(lines)} lines; at most {_MAX_LINES} fit")
        page_id, content_id = 4 + 2 * number, 5 + 2 * number
        kids.append(b"%d 0 R" % page_id)
        stream = _content(lines)
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] "
            b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>"
            % (_PAGE_WIDTH, _PAGE_HEIGHT, content_id)
        )
        objects[content_id] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(pages))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    start = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets[number]
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 5 0 R >>\n" % size
    out += b"startxref\n%d\n%%%%EOF\n" % start
    return bytes(out)


def source_pages(path: Path) -> list[list[str]]:
    """The pages of a source file (split on form feeds), each a list of lines."""
    text = path.read_text(encoding="utf-8")
    return [part.strip("\n").split("\n") for part in text.split("\f")]


def source_title(pages: Sequence[Sequence[str]]) -> str:
    """The title of a source: its first page's headings, joined with a dash."""
    return " - ".join(line[2:].strip() for line in pages[0] if line.startswith("# "))


def expected_text(page: Sequence[str]) -> str:
    """The text ``pypdf`` should extract from a page written from ``page``'s lines."""
    lines = [line[2:] if line.startswith("# ") else line for line in _wrap(page)]
    return "\n".join(line.rstrip() for line in lines if line.strip())


def _read_back(pdf: Path) -> tuple[list[str], str]:
    from envharness.bridges.docqa.pdf import read_pdf

    text = read_pdf(pdf)
    return [_drop_blank(page) for page in text.pages], text.title


def _drop_blank(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if line.strip())


def check(source: Path, pdf: Path) -> list[str]:
    """How the PDF made from ``source`` differs from it (empty when it matches)."""
    pages = source_pages(source)
    if not pdf.is_file():
        return [f"{pdf.name}: missing"]
    problems = []
    if pdf.read_bytes() != write_pdf(pages, title=source_title(pages)):
        problems.append(f"{pdf.name}: not what {source.name} builds (run this script)")
    extracted, title = _read_back(pdf)
    if title != source_title(pages):
        problems.append(f"{pdf.name}: title {title!r}, expected {source_title(pages)!r}")
    if len(extracted) != len(pages):
        problems.append(f"{pdf.name}: {len(extracted)} pages, expected {len(pages)}")
    for number, (got, lines) in enumerate(zip(extracted, pages, strict=False), start=1):
        if got != expected_text(lines):
            problems.append(f"{pdf.name}: page {number} does not read back as written")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """Builds (or with ``--check`` only checks) every PDF of the built-in corpus."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check without writing")
    args = parser.parse_args(argv)
    sources = sorted(SOURCES.glob("*.txt"))
    if not sources:
        print(f"no sources in {SOURCES} (they are in the repository, not in the wheel)")
        return 1
    problems = []
    for source in sources:
        pdf = CORPUS / f"{source.stem}.pdf"
        if not args.check:
            pages = source_pages(source)
            pdf.write_bytes(write_pdf(pages, title=source_title(pages)))
        found = check(source, pdf)
        problems.extend(found)
        print(f"{pdf.relative_to(HERE)}: {'ok' if not found else 'MISMATCH'}")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
