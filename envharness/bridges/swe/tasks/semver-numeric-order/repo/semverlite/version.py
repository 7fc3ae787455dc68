"""``Version``: a ``MAJOR.MINOR.PATCH`` version number, ordered like semantic versions."""

import functools
import re

_FORM = re.compile(r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


@functools.total_ordering
class Version:
    """A version number such as ``"1.4.2"`` (a leading ``v`` is allowed)."""

    def __init__(self, text):
        match = _FORM.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"not a MAJOR.MINOR.PATCH version: {text!r}")
        self.parts = match.groups()

    @property
    def major(self):
        """The major number."""
        return int(self.parts[0])

    def _key(self):
        return tuple(self.parts)

    def bump(self, part):
        """The next version after bumping ``part`` (``"major"``, ``"minor"`` or ``"patch"``)."""
        major, minor, patch = (int(p) for p in self.parts)
        if part == "major":
            return Version(f"{major + 1}.0.0")
        if part == "minor":
            return Version(f"{major}.{minor + 1}.0")
        if part == "patch":
            return Version(f"{major}.{minor}.{patch + 1}")
        raise ValueError(f"unknown part {part!r}")

    def __eq__(self, other):
        return isinstance(other, Version) and self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        return ".".join(self.parts)

    def __repr__(self):
        return f"Version({str(self)!r})"


def latest(versions):
    """The highest of ``versions`` (strings or :class:`Version`), as a :class:`Version`."""
    parsed = [v if isinstance(v, Version) else Version(v) for v in versions]
    if not parsed:
        raise ValueError("no versions given")
    return max(parsed)
