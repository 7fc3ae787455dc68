"""Parsing INI text into nested dicts: ``{section: {key: value}}``."""


class ParseError(ValueError):
    """Raised for a line the parser cannot read; ``line`` is its number (from 1)."""

    def __init__(self, line, reason):
        self.line = line
        self.reason = reason
        super().__init__(f"line {line}: {reason}")


def _is_comment(line):
    return not line or line.startswith(("#", ";"))


def parse(text):
    """Parses INI ``text``.

    Section names keep their case; keys are lowercased. A key given twice in a section keeps
    its last value; a section given twice is one section.

    Raises:
        ParseError: For a line that is neither a comment, a section header nor ``key = value``,
            an empty section name or key, or a key before the first section.
    """
    sections = {}
    current = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if _is_comment(line):
            continue
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1].strip()
            if not name:
                raise ParseError(number, "empty section name")
            current = sections.setdefault(name, {})
            continue
        if "=" not in line:
            raise ParseError(number, f"expected 'key = value', got {line!r}")
        if current is None:
            raise ParseError(number, "a key before the first section")
        key, value = line.split("=")
        key = key.strip().lower()
        if not key:
            raise ParseError(number, "empty key")
        current[key] = value.strip()
    return sections


def get(sections, section, key, default=None):
    """The value of ``key`` in ``section`` (key case-insensitive), else ``default``."""
    return sections.get(section, {}).get(key.lower(), default)
