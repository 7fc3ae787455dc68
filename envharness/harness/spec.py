"""``HarnessSpec``: the serializable form of a harness stack.

A spec is the bridge (name, task, options) plus the ordered component list, innermost first, and
optional lineage (where an accepted spec came from). It round-trips through JSON and rebuilds the
stack with :meth:`HarnessSpec.build`. Rules code is stored with its SHA-256; a spec whose code no
longer matches its hash is refused. The bridge part pins the task data: a spec recorded from an env
(:meth:`HarnessSpec.from_env`) holds the bridge's ``task_fingerprint()`` (the hash of what its
verifier reads), and :meth:`HarnessSpec.build` refuses a bridge whose fingerprint differs, so
options cannot point a spec's task id at another answer key. A spec without a fingerprint (an
older one, or a bridge that cannot say) builds as before.

Example:
    >>> from envharness import load_bridge
    >>> from envharness.harness import Setups
    >>> env = Setups(load_bridge("toy24", task_id="4-4-10-10"),
    ...              [{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}])
    >>> spec = HarnessSpec.from_json(HarnessSpec.from_env(env).to_json())
    >>> spec.build()
    <Setups<Toy24Env task='4-4-10-10'>>
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envharness.core import ActionableEnv
from envharness.errors import SpecError
from envharness.sandbox.check import rules_sha256

__all__ = [
    "MAX_COMPONENTS",
    "MAX_NESTING",
    "SPEC_VERSION",
    "BridgeSpec",
    "ComponentSpec",
    "HarnessSpec",
    "Lineage",
    "check_rules_hash",
    "component_types",
    "register_component",
]

SPEC_VERSION = 1

MAX_COMPONENTS = 64
"""The most components one spec may stack (each is a layer every step passes through)."""

MAX_NESTING = 32
"""The deepest nesting of lists and objects a spec's values may have."""

_SPEC_KEYS = frozenset({"envharness_spec", "spec_id", "bridge", "components", "lineage"})
_BRIDGE_KEYS = frozenset({"name", "task_id", "options", "fingerprint"})
_COMPONENT_KEYS = frozenset({"type", "config"})
_LINEAGE_KEYS = frozenset({"task", "policy", "parent", "validation", "notes"})

_COMPONENTS: dict[str, str | type] = {
    "setups": "envharness.harness.setups:Setups",
    "rules": "envharness.harness.rules:Rules",
    "link": "envharness.harness.link:Link",
}


def _is_component_class(cls: object) -> bool:
    """Whether ``cls`` is a component class: an ``ActionableEnv`` with the component hooks.

    :class:`~envharness.harness.EnvHarness` (a layer above this module) defines them all.
    """
    return (
        isinstance(cls, type)
        and issubclass(cls, ActionableEnv)
        and isinstance(getattr(cls, "component_type", None), str)
        and callable(getattr(cls, "component_config", None))
        and callable(getattr(cls, "from_config", None))
    )


def register_component(name: str, cls: type) -> None:
    """Registers a custom :class:`~envharness.harness.EnvHarness` subclass for specs.

    Raises:
        SpecError: If ``cls`` is not an ``EnvHarness`` subclass.
    """
    if not _is_component_class(cls):
        raise SpecError(f"expected an EnvHarness subclass, got {cls!r}")
    _COMPONENTS[name] = cls


def component_types() -> list[str]:
    """The component type names specs can hold."""
    return sorted(_COMPONENTS)


def _component_class(name: str) -> type:
    target = _COMPONENTS.get(name)
    if target is None:
        raise SpecError(f"unknown component type {name!r}; known: {', '.join(component_types())}")
    if isinstance(target, str):
        import importlib

        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
        _COMPONENTS[name] = target
    return target


def check_rules_hash(config: Mapping[str, Any]) -> None:
    """Checks that a rules component's stored hash matches its code.

    Raises:
        SpecError: If the code is missing, or the hash is missing or does not match.
    """
    code = config.get("rules_code")
    if not isinstance(code, str):
        raise SpecError("a rules component needs 'rules_code' (a str)")
    digest = rules_sha256(code)
    if config.get("sha256") != digest:
        raise SpecError(
            f"rules code does not match its sha256 (stored {config.get('sha256')!r}, computed "
            f"{digest!r}); the spec was edited by hand or corrupted. Rebuild it with "
            "HarnessSpec.from_env(Rules(env, code)) instead of editing the JSON."
        )


def _unknown_keys(data: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    extra = sorted(str(key) for key in data if key not in allowed)
    if extra:
        raise SpecError(
            f"{where}: unknown field(s) {', '.join(map(repr, extra))}; the fields are "
            f"{', '.join(sorted(allowed))}"
        )


def _check_nesting(value: Any, where: str) -> None:
    """Refuses values nested deeper than :data:`MAX_NESTING` (walked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth >= MAX_NESTING:
                raise SpecError(f"{where} is nested more than {MAX_NESTING} levels deep")
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)


def _check_options(options: Mapping[str, Any]) -> None:
    for key in options:
        if not isinstance(key, str) or not key:
            raise SpecError(f"bridge.options: expected str keys, got {key!r}")
    if "task_id" in options:
        raise SpecError(
            "bridge.options: 'task_id' is not an option; the task is bridge.task_id (on the "
            "command line: --task/--tasks)"
        )


_FINGERPRINT = re.compile(r"[0-9a-f]{64}")


def _is_fingerprint(value: object) -> bool:
    return isinstance(value, str) and _FINGERPRINT.fullmatch(value) is not None


def _check_fingerprint(bridge: Mapping[str, Any]) -> str | None:
    if "fingerprint" not in bridge:
        return None
    value = bridge["fingerprint"]
    if not _is_fingerprint(value):
        raise SpecError(
            "bridge.fingerprint: expected 64 lowercase hex digits (the bridge's "
            f"task_fingerprint()), got {value!r}; leave the field out when there is none"
        )
    return value


def _bridge_fingerprint(layer: ActionableEnv) -> str | None:
    """The bridge's own ``task_fingerprint()``, checked to be None or 64 hex digits."""
    value = layer.task_fingerprint()
    if value is not None and not _is_fingerprint(value):
        raise SpecError(
            f"{type(layer).__name__}.task_fingerprint() returned {value!r}; expected None or "
            "64 lowercase hex digits (a SHA-256 hexdigest)"
        )
    return value


def _pinned_component(component: ComponentSpec) -> ComponentSpec:
    """A Link component with its second spec(s) pinned; any other component as it is."""
    second = component.config.get("second")
    if component.type != "link" or not isinstance(second, Mapping):
        return component
    if "bridge" in second:
        pinned: Any = HarnessSpec.from_dict(second).pinned().to_dict()
    else:  # a branch link: {"success": spec, "failure": spec}
        pinned = {k: HarnessSpec.from_dict(v).pinned().to_dict() for k, v in second.items()}
    return ComponentSpec(component.type, {**component.config, "second": pinned})


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise SpecError(f"the field {key!r} is given twice in one object")
        data[key] = value
    return data


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class BridgeSpec:
    """The bridge and task a stack is built on.

    Attributes:
        name: The registered bridge name.
        task_id: The task.
        options: Extra ``load_bridge`` options.
        fingerprint: The bridge's ``task_fingerprint()`` when the spec was recorded (the hash of
            what its verifier reads), or ``None`` (not pinned). :meth:`HarnessSpec.build`
            refuses a bridge whose fingerprint differs.
    """

    name: str
    task_id: str
    options: dict[str, Any] = field(default_factory=dict)
    fingerprint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The bridge spec as a plain dict (``fingerprint`` only when there is one)."""
        data: dict[str, Any] = {
            "name": self.name,
            "task_id": self.task_id,
            "options": copy.deepcopy(dict(self.options)),
        }
        if self.fingerprint is not None:
            data["fingerprint"] = self.fingerprint
        return data


@dataclass(frozen=True)
class ComponentSpec:
    """One component of a stack: its type name and its own settings."""

    type: str
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The component spec as a plain dict (a copy: editing it leaves the spec alone)."""
        return {"type": self.type, "config": copy.deepcopy(self.config)}


@dataclass(frozen=True)
class Lineage:
    """Where an accepted spec came from.

    Attributes:
        task: The task the harness targets.
        policy: A description of the policy it was rigged for.
        parent: The ``spec_id`` of the spec it was derived from, if any.
        validation: Statistics of the validation rollouts that accepted it.
        notes: Free text (the designer's rationale, for instance).
    """

    task: str | None = None
    policy: str | None = None
    parent: str | None = None
    validation: dict[str, Any] = field(default_factory=dict)
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The lineage as a plain dict."""
        return {
            "task": self.task,
            "policy": self.policy,
            "parent": self.parent,
            "validation": dict(self.validation),
            "notes": self.notes,
        }


@dataclass(frozen=True)
class HarnessSpec:
    """A bridge plus an ordered list of components (innermost first), and optional lineage."""

    bridge: BridgeSpec
    components: tuple[ComponentSpec, ...] = ()
    lineage: Lineage | None = None

    @property
    def spec_id(self) -> str:
        """A short stable id: the hash of the bridge and components (lineage excluded).

        The bridge's fingerprint is part of it when the spec has one.
        """
        body = {
            "bridge": self.bridge.to_dict(),
            "components": [c.to_dict() for c in self.components],
        }
        return hashlib.sha256(_canonical(body).encode()).hexdigest()[:16]

    @classmethod
    def from_env(cls, env: ActionableEnv, *, lineage: Lineage | None = None) -> HarnessSpec:
        """Describes an env (a bridge or a harness stack), pinning the bridge's task data.

        The bridge's :meth:`~envharness.core.ActionableEnv.task_fingerprint` is recorded in
        :attr:`BridgeSpec.fingerprint`.

        Raises:
            SpecError: If a component is not registered for specs, or the bridge's fingerprint
                is not None or 64 hex digits.
            BridgeError: If the bridge cannot read its task data to fingerprint it.
            TypeError: If ``env`` is not an :class:`~envharness.core.ActionableEnv`.

        Example:
            >>> from envharness import load_bridge
            >>> HarnessSpec.from_env(load_bridge("toy24", task_id="4-4-10-10")).bridge.task_id
            '4-4-10-10'
        """
        if not isinstance(env, ActionableEnv):
            raise TypeError(f"expected an ActionableEnv to describe, got {type(env).__name__}")
        components: list[ComponentSpec] = []
        layer: Any = env
        while layer is not layer.unwrapped:  # a component over the env below
            kind = getattr(layer, "component_type", None)
            if kind not in _COMPONENTS or _component_class(kind) is not type(layer):
                raise SpecError(
                    f"{type(layer).__name__} is not a registered component type; call "
                    "register_component(name, cls) to make it serializable"
                )
            components.append(ComponentSpec(kind, layer.component_config()))
            layer = layer.env
        if not layer.bridge_name:
            raise SpecError(f"{type(layer).__name__} has no bridge_name; it cannot be rebuilt")
        bridge = BridgeSpec(
            layer.bridge_name,
            layer.task_id,
            dict(layer.bridge_options()),
            _bridge_fingerprint(layer),
        )
        return cls(bridge, tuple(reversed(components)), lineage)

    def build(self) -> ActionableEnv:
        """Loads the bridge, checks its task data against the spec and stacks the components.

        Raises:
            SpecError: If a component cannot be rebuilt, or the spec has a fingerprint and the
                built bridge's ``task_fingerprint()`` differs (its options point it at other
                task data, or the data changed).
            BridgeError: If the bridge or task cannot be loaded.
        """
        if len(self.components) > MAX_COMPONENTS:
            raise SpecError(
                f"the spec stacks {len(self.components)} components; at most {MAX_COMPONENTS}"
            )
        env = self._load_bridge()
        try:
            self._check_fingerprint(env)
            for component in self.components:
                env = _component_class(component.type).from_config(env, component.config)
        except BaseException:
            env.close()
            raise
        return env

    def pinned(self) -> HarnessSpec:
        """A copy whose bridge, and each Link's second env, records its task fingerprint.

        For a spec written by hand (``HarnessSpec(BridgeSpec(name, task_id, options))``), so
        that what is derived from it (a rig's candidates and accepted specs) pins the task data
        as a spec recorded with :meth:`from_env` does. Loads the bridge to read it, then closes
        it. A fingerprint the spec already has is checked as :meth:`build` checks it.

        Raises:
            SpecError: If the spec's fingerprint does not match, or a Link's second spec is
                malformed.
            BridgeError: If the bridge or task cannot be loaded.
        """
        env = self._load_bridge()
        try:
            self._check_fingerprint(env)
            fingerprint = _bridge_fingerprint(env)
        finally:
            env.close()
        bridge = BridgeSpec(self.bridge.name, self.bridge.task_id, self.bridge.options, fingerprint)
        components = tuple(_pinned_component(c) for c in self.components)
        return HarnessSpec(bridge, components, self.lineage)

    def _load_bridge(self) -> ActionableEnv:
        from envharness.bridges.registry import load_bridge

        _check_options(self.bridge.options)
        try:
            return load_bridge(self.bridge.name, task_id=self.bridge.task_id, **self.bridge.options)
        except TypeError as e:  # an option the bridge's constructor does not take
            raise SpecError(
                f"bridge.options {sorted(self.bridge.options)} do not fit the "
                f"{self.bridge.name!r} bridge: {e}"
            ) from e

    def _check_fingerprint(self, env: ActionableEnv) -> None:
        """Refuses a built bridge whose task data is not what the spec recorded."""
        expected = self.bridge.fingerprint
        if expected is None:
            return
        actual = _bridge_fingerprint(env)
        if actual == expected:
            return
        where = f"bridge {self.bridge.name!r} task {self.bridge.task_id!r}"
        options = json.dumps(self.bridge.options, sort_keys=True, default=str)
        got = (
            "reports no fingerprint, so the spec's pin cannot be checked"
            if actual is None
            else f"has task-data fingerprint {actual}"
        )
        raise SpecError(
            f"{where} {got}, but the spec recorded {expected}: what the verifier reads is not "
            f"what the spec was made on. Likely the options {options} point the bridge at other "
            "task data (another tasks file, corpus or data folder reusing this task id), or the "
            "task's data changed since the spec was recorded. Do not trust its results; re-rig "
            "the task, or, if the new data is intended, rebuild the spec from the env "
            "(HarnessSpec.from_env(env))."
        )

    def with_lineage(self, lineage: Lineage) -> HarnessSpec:
        """A copy of this spec with ``lineage``."""
        return HarnessSpec(self.bridge, self.components, lineage)

    def to_dict(self) -> dict[str, Any]:
        """The spec as a plain dict (JSON-able)."""
        data: dict[str, Any] = {
            "envharness_spec": SPEC_VERSION,
            "spec_id": self.spec_id,
            "bridge": self.bridge.to_dict(),
            "components": [c.to_dict() for c in self.components],
        }
        if self.lineage is not None:
            data["lineage"] = self.lineage.to_dict()
        return data

    def to_json(self, *, indent: int | None = 2) -> str:
        """The spec as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Any) -> HarnessSpec:
        """Builds a spec from :meth:`to_dict` output, checking every field.

        Raises:
            SpecError: Naming the first malformed field.
        """
        if not isinstance(data, Mapping):
            raise SpecError(f"expected a spec object, got {type(data).__name__}")
        version = data.get("envharness_spec")
        if type(version) is not int or version != SPEC_VERSION:
            raise SpecError(f"expected envharness_spec={SPEC_VERSION}, got {version!r}")
        _unknown_keys(data, _SPEC_KEYS, "spec")
        _check_nesting(data, "the spec")
        bridge = data.get("bridge")
        if (
            not isinstance(bridge, Mapping)
            or not isinstance(bridge.get("name"), str)
            or not isinstance(bridge.get("task_id"), str)
            or not isinstance(bridge.get("options", {}), Mapping)
        ):
            raise SpecError(
                "expected 'bridge' to be {'name': str, 'task_id': str, 'options': {...}}, "
                f"got {bridge!r}"
            )
        _unknown_keys(bridge, _BRIDGE_KEYS, "bridge")
        _check_options(bridge.get("options", {}))
        fingerprint = _check_fingerprint(bridge)
        raw_components = data.get("components", [])
        if not isinstance(raw_components, list):
            raise SpecError("expected 'components' to be a list")
        if len(raw_components) > MAX_COMPONENTS:
            raise SpecError(
                f"the spec stacks {len(raw_components)} components; at most {MAX_COMPONENTS}"
            )
        components = []
        for i, raw in enumerate(raw_components):
            if (
                not isinstance(raw, Mapping)
                or not isinstance(raw.get("type"), str)
                or not isinstance(raw.get("config", {}), Mapping)
            ):
                raise SpecError(f"component #{i}: expected {{'type': str, 'config': {{...}}}}")
            _unknown_keys(raw, _COMPONENT_KEYS, f"component #{i}")
            fields = getattr(_component_class(raw["type"]), "config_fields", None)
            if fields is not None:
                _unknown_keys(raw.get("config", {}), frozenset(fields), f"component #{i} config")
            if raw["type"] == "rules":
                check_rules_hash(raw.get("config", {}))
            components.append(
                ComponentSpec(raw["type"], copy.deepcopy(dict(raw.get("config", {}))))
            )
        lineage = None
        if data.get("lineage") is not None:
            if not isinstance(data["lineage"], Mapping):
                raise SpecError(f"expected 'lineage' to be an object, got {data['lineage']!r}")
            _unknown_keys(data["lineage"], _LINEAGE_KEYS, "lineage")
            try:
                lineage = Lineage(**data["lineage"])
            except TypeError as e:
                raise SpecError(f"bad lineage: {e}") from e
        spec = cls(
            BridgeSpec(
                bridge["name"],
                bridge["task_id"],
                copy.deepcopy(dict(bridge.get("options", {}))),
                fingerprint,
            ),
            tuple(components),
            lineage,
        )
        stored_id = data.get("spec_id")
        if stored_id is not None and stored_id != spec.spec_id:
            raise SpecError(
                f"spec_id {stored_id!r} does not match the content ({spec.spec_id!r}); "
                "the spec was edited by hand: drop 'spec_id' to accept the edit"
            )
        return spec

    @classmethod
    def from_json(cls, text: str) -> HarnessSpec:
        """Parses a spec from JSON text.

        Raises:
            SpecError: If the text is not valid JSON or not a valid spec.
        """
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except (json.JSONDecodeError, TypeError) as e:
            raise SpecError(f"spec is not valid JSON: {e}") from e
        except RecursionError as e:
            raise SpecError(f"the spec is nested more than {MAX_NESTING} levels deep") from e
        return cls.from_dict(data)
