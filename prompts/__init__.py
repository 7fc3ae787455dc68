"""EnvRigger's prompt templates, shipped as package data (``*.md`` files in this package).

- ``designer``: the designer agent's system prompt (``{objective}``, ``{allowed_imports}``,
  ``{hints}``, ``{acceptance_rules}`` — generated from the judge's live settings — and
  ``{budget_facts}``); ``designer_task``: its first message (the task, ``{iteration}`` of
  ``{max_iterations}``, the statistics and the ``{feedback}`` on earlier attempts);
  ``designer_nudge``: the reminder sent once when it stops without a submission.
- ``diagnoser``: the diagnoser's system prompt (``{objective}``, ``{hints}``);
  ``diagnoser_task``: its message with the baseline.
- ``skill_extractor``: the model skill extractor's system prompt; ``skill_extractor_task``: its
  message with one episode.

Bridge hints live beside each bridge, not here: a bridge class ships its notes (what its state
means, which perturbations are natural) as an optional classmethod ``designer_hints() -> str``,
which :func:`load_hints` reads. The built-in bridges return their package's ``hints.HINTS``
(e.g. :mod:`envharness.bridges.toy24.hints`); a third-party bridge does the same::

    class MyEnv(ActionableEnv):
        @classmethod
        def designer_hints(cls) -> str:
            return "# About this environment: My env ..."

Placeholders are ``{name}`` with a lowercase identifier inside; they are filled by plain
substitution, so other braces in a template (JSON, code) stay as they are and a value's own
braces are never expanded.

Example:
    >>> text = load_prompt(
    ...     "designer", objective="sr:0.4-0.6", allowed_imports="re", hints="",
    ...     acceptance_rules="(rules)", budget_facts="(facts)",
    ... )
    >>> "Objective: sr:0.4-0.6" in text
    True
    >>> sorted(placeholders("diagnoser"))
    ['hints', 'objective']
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

from envharness.errors import RiggerError

__all__ = ["load_hints", "load_prompt", "placeholders", "prompt_names"]

_SUFFIXES = (".md", ".txt")
_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


@cache
def _files() -> dict[str, str]:
    """Template name → file name, for every template in the package."""
    names: dict[str, str] = {}
    for entry in resources.files(__name__).iterdir():
        for suffix in _SUFFIXES:
            if entry.is_file() and entry.name.endswith(suffix):
                names.setdefault(entry.name[: -len(suffix)], entry.name)
    return names


def prompt_names() -> list[str]:
    """The names of the templates in this package."""
    return sorted(_files())


@cache
def _text(file_name: str) -> str:
    return resources.files(__name__).joinpath(file_name).read_text(encoding="utf-8")


def _read(name: str) -> str:
    if not isinstance(name, str):
        raise RiggerError(f"expected a prompt name as a str, got {type(name).__name__}")
    stem = name
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
    files = _files()
    if stem not in files:
        raise RiggerError(f"no prompt named {name!r}; available: {', '.join(sorted(files))}")
    return _text(files[stem])


def placeholders(name: str) -> set[str]:
    """The ``{placeholder}`` names in template ``name``."""
    return set(_PLACEHOLDER.findall(_read(name)))


def load_prompt(name: str, **values: Any) -> str:
    """Template ``name`` (``"designer"`` or ``"designer.md"``), filled with ``values``.

    Without values the raw template is returned. With values, every placeholder of the template
    must get one (values the template does not use are ignored); each value is inserted as
    ``str(value)`` and not scanned again.

    Raises:
        RiggerError: No template has that name, or a placeholder has no value.
    """
    text = _read(name)
    if not values:
        return text
    missing = sorted(set(_PLACEHOLDER.findall(text)) - set(values))
    if missing:
        raise RiggerError(f"prompt {name!r} needs values for: {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), text)


def _hook_hints(bridge_name: str) -> str | None:
    """The bridge class's ``designer_hints()``, or ``None`` when it has none (or won't load).

    Raises:
        RiggerError: The hook raised or returned something other than a str.
    """
    from envharness.bridges import get_bridge
    from envharness.errors import EnvHarnessError

    try:
        bridge = get_bridge(bridge_name)
    except (EnvHarnessError, ImportError):  # unknown, or its extra is not installed
        return None
    hook = getattr(bridge, "designer_hints", None)
    if hook is None:
        return None
    if not callable(hook):
        raise RiggerError(f"{bridge.__name__}.designer_hints must be a classmethod returning a str")
    try:
        text = hook()
    except Exception as e:
        raise RiggerError(
            f"{bridge.__name__}.designer_hints() failed: {type(e).__name__}: {e}"
        ) from e
    if not isinstance(text, str):
        raise RiggerError(
            f"{bridge.__name__}.designer_hints() returned {type(text).__name__}, expected a str"
        )
    return text.strip()


def load_hints(bridge_name: str) -> str:
    """The designer's and diagnoser's notes on a bridge (``""`` when there are none).

    What the bridge class's ``designer_hints()`` classmethod returns; ``""`` for a bridge without
    one, an unknown bridge, or one whose extra is not installed.

    Raises:
        RiggerError: The bridge's ``designer_hints()`` raised or did not return a str.

    Example:
        >>> load_hints("toy24").startswith("# About this environment")
        True
        >>> load_hints("no-such-bridge")
        ''
    """
    if not isinstance(bridge_name, str) or not _NAME.match(bridge_name):
        return ""
    return _hook_hints(bridge_name) or ""
