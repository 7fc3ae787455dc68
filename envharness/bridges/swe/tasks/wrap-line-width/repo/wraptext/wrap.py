"""Greedy word wrapping: lines as full as they can be, words never split."""


def _check_width(width):
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be a positive int, got {width!r}")


def wrap(text, width=70):
    """Splits ``text`` into lines of at most ``width`` characters.

    Runs of whitespace (newlines included) count as one space. Words are never split: a word
    longer than ``width`` gets a line of its own.
    """
    _check_width(width)
    lines = []
    line = ""
    for word in text.split():
        if not line:
            line = word
        elif len(line) + len(word) <= width:
            line = f"{line} {word}"
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def fill(text, width=70):
    """``wrap(text, width)`` joined with newlines."""
    return "\n".join(wrap(text, width))


def indent(text, prefix, width=70):
    """Wraps ``text`` so that each line, ``prefix`` included, fits in ``width``."""
    _check_width(width - len(prefix))
    return "\n".join(prefix + line for line in wrap(text, width - len(prefix)))
