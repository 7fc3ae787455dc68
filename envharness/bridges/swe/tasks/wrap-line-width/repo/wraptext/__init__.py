"""Greedy word wrapping for plain text."""

from wraptext.wrap import fill, indent, wrap

__all__ = ["fill", "indent", "wrap"]
