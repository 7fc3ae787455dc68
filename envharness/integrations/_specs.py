"""Dataset sources for the trainer adapters: task lists, rig runs and specs, as specs.

Private to :mod:`envharness.integrations` (the verifiers and SkyRL adapters share it); it
imports no trainer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envharness.errors import EnvHarnessError, SpecError
from envharness.harness.spec import BridgeSpec, HarnessSpec

__all__ = ["check_seeds", "read_spec", "specs_from"]


def read_spec(value: Any, where: str) -> HarnessSpec:
    """A spec from a ``HarnessSpec``, a dict, JSON text or a ``.json`` path.

    Raises:
        SpecError: If ``value`` is none of these, cannot be read, or is malformed.
    """
    if isinstance(value, HarnessSpec):
        return value
    try:
        if isinstance(value, Path) or (isinstance(value, str) and value.endswith(".json")):
            return HarnessSpec.from_json(Path(value).read_text())
        if isinstance(value, str):
            return HarnessSpec.from_json(value)
        if isinstance(value, Mapping):
            return HarnessSpec.from_dict(dict(value))
    except OSError as e:
        raise SpecError(f"{where}: cannot read {value}: {e.strerror}") from None
    except SpecError as e:
        raise SpecError(f"{where} is not a harness spec: {e}") from e
    raise SpecError(
        f"{where}: expected a harness spec (HarnessSpec, dict, JSON text or .json path), got "
        f"{type(value).__name__}"
    )


def _bridge_spec(bridge: str, task: str, options: Mapping[str, Any]) -> HarnessSpec:
    """The bare spec of one task, pinned to the bridge's task data."""
    try:
        return HarnessSpec(BridgeSpec(bridge, task, dict(options))).pinned()
    except EnvHarnessError as e:
        raise SpecError(f"bridge {bridge!r} task {task!r} cannot be a dataset row: {e}") from e


def _accepted(run: str | Path) -> list[HarnessSpec]:
    folder = Path(run) / "accepted"
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise SpecError(
            f"{folder} holds no accepted spec (*.json); pass a rig run directory "
            "(envharness rig ... --out RUN) whose rig accepted at least one harness"
        )
    return [read_spec(path, str(path)) for path in paths]


def specs_from(
    *,
    bridge: str | None = None,
    tasks: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    run: str | Path | None = None,
    specs: Sequence[Any] | None = None,
) -> list[HarnessSpec]:
    """The specs of exactly one source: ``bridge`` + ``tasks``, ``run`` or ``specs``.

    ``bridge`` + ``tasks`` gives bare specs pinned to the bridge's task data; ``run`` the rig
    run's ``RUN/accepted/*.json``; ``specs`` anything :func:`read_spec` reads.

    Raises:
        SpecError: If no source or several are given, or a spec is malformed.
    """
    given = [name for name, value in (("bridge", bridge), ("run", run), ("specs", specs)) if value]
    if len(given) != 1:
        raise SpecError(
            f"expected exactly one dataset source (bridge= with tasks=, run= or specs=), got "
            f"{', '.join(given) or 'none'}"
        )
    if bridge:
        if not tasks or isinstance(tasks, str):
            raise SpecError(f"bridge={bridge!r} needs tasks=[task ids], got {tasks!r}")
        return [_bridge_spec(bridge, task, options or {}) for task in tasks]
    if run:
        return _accepted(run)
    return [read_spec(value, f"specs[{k}]") for k, value in enumerate(specs or ())]


def check_seeds(seeds: Any) -> list[int]:
    """``seeds`` as a list of ints.

    Raises:
        SpecError: If ``seeds`` is not a non-empty sequence of ints.
    """
    if (
        isinstance(seeds, int | str)
        or not isinstance(seeds, Sequence)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
    ):
        raise SpecError(f"expected seeds to be a non-empty list of ints, got {seeds!r}")
    return list(seeds)
