"""Parse and order MAJOR.MINOR.PATCH version numbers."""

from semverlite.version import Version, latest

__all__ = ["Version", "latest"]
