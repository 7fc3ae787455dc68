"""One provider-independent estimate of text size in tokens.

Tokenizers differ between providers, and the library needs one figure it can compute without any
of them: for the context budgets of chat-model policies and of the designer's feedback, and for the
usage its scripted test models report. It uses the common rule of thumb of
:data:`CHARS_PER_TOKEN` characters per token.
"""

from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "budget_chars", "estimate_tokens"]

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str | int) -> int:
    """The estimated tokens of ``text`` (or of a text of that many characters), rounded down.

    Example:
        >>> estimate_tokens("x" * 41), estimate_tokens(8)
        (10, 2)
    """
    chars = text if isinstance(text, int) else len(text)
    return chars // CHARS_PER_TOKEN


def budget_chars(tokens: int) -> int:
    """How many characters a budget of ``tokens`` tokens allows.

    Example:
        >>> budget_chars(100)
        400
    """
    return tokens * CHARS_PER_TOKEN
