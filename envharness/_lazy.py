"""Module attributes imported on first use (a package's names that need an optional extra)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from envharness.errors import DependencyNotInstalled

__all__ = ["lazy_exports"]

_LANGCHAIN_SIDE = ("langchain_core", "pydantic")


def lazy_exports(
    package: str, names: Mapping[str, str], namespace: dict[str, Any], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for names that live in modules needing LangChain.

    Args:
        package: The package's ``__name__``.
        names: Each lazy name and the module it lives in.
        namespace: The package's ``globals()`` (a loaded name is cached there).
        public: The package's ``__all__``, listed by ``dir()``.

    Returns:
        ``(__getattr__, __dir__)`` to assign in the package.

    Raises:
        DependencyNotInstalled: From ``__getattr__``, naming the ``rigger`` extra, when the
            name's module needs langchain-core and it is missing.
    """
    listed = sorted(set(public))

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            module = importlib.import_module(names[name])
        except ImportError as e:
            if e.name is not None and e.name.split(".")[0] in _LANGCHAIN_SIDE:
                raise DependencyNotInstalled(
                    "langchain-core", "rigger", purpose=f"{package}.{name}"
                ) from e
            raise
        value = getattr(module, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(listed))

    return __getattr__, __dir__
