"""The SWE-bench bridge: real SWE-bench instances, in SWE-bench's format, with its verdict.

Registered as ``swebench``. ``load_bridge("swebench", task_id=INSTANCE_ID, dataset=PATH)``
where PATH is a SWE-bench file (JSONL or parquet; a split is a file); ``specs.json`` and
``sources.json`` beside it are read by default. The tree comes from a clone in ``repos_dir``
(``owner__name`` folders; default ``$ENVHARNESS_SWEBENCH_REPOS``) or from the PyPI sdist that
``sources.json`` says reproduces the instance. Environments are built once per machine from
SWE-bench's specs (the ``swebench`` package) with our adaptations, offline in the container.

- :mod:`~envharness.bridges.swebench.env`: :class:`SwebenchEnv`, the bridge.
- :mod:`~envharness.bridges.swebench.dataset`: reading and checking the dataset file.
- :mod:`~envharness.bridges.swebench.specs`: SWE-bench's spec with ``specs.json`` on top.
- :mod:`~envharness.bridges.swebench.sources`: the tree from a clone or an sdist.
- :mod:`~envharness.bridges.swebench.wheelhouse`: the wheels, prepared on the host.
- :mod:`~envharness.bridges.swebench.images`: the Docker images (tools, environment, instance).
- :mod:`~envharness.bridges.swebench.local`: the local runtime's venvs.
- :mod:`~envharness.bridges.swebench.verify`: SWE-bench's evaluation.

Example:
    >>> from envharness import load_bridge  # doctest: +SKIP
    >>> env = load_bridge(
    ...     "swebench",
    ...     task_id="marshmallow-code__marshmallow-1359",
    ...     dataset="../shared/data/swebench/instances.jsonl",
    ... )  # doctest: +SKIP
    >>> env.reset()[1]["source"]  # doctest: +SKIP
    'sdist'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envharness.bridges.swebench.dataset import Instance, find_instance, load_instances
    from envharness.bridges.swebench.env import DEFAULT_RUNTIME, RUNTIMES, SwebenchEnv
    from envharness.bridges.swebench.sources import REPOS_ENV
    from envharness.bridges.swebench.specs import EnvSpec, resolve_spec

_LAZY = {
    "DEFAULT_RUNTIME": "env",
    "RUNTIMES": "env",
    "SwebenchEnv": "env",
    "Instance": "dataset",
    "find_instance": "dataset",
    "load_instances": "dataset",
    "REPOS_ENV": "sources",
    "EnvSpec": "specs",
    "resolve_spec": "specs",
}

__all__ = [
    # the bridge
    "DEFAULT_RUNTIME",
    "RUNTIMES",
    "SwebenchEnv",
    # data
    "Instance",
    "find_instance",
    "load_instances",
    "REPOS_ENV",
    # specs
    "EnvSpec",
    "resolve_spec",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
