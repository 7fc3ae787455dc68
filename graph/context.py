"""Run settings of a rig, passed as the graph's context (``context_schema``), not in its state."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envharness.errors import RiggerError
from envharness.graph.designers import Designer, Diagnoser, registered_designers
from envharness.graph.designers.protocol import DEFAULT_FEEDBACK_BUDGET
from envharness.graph.judge.decisions import JudgeSettings
from envharness.graph.objective import Objective
from envharness.graph.settings import SETTING_NAMES, RiggerResources
from envharness.rollout.executors import Executor
from envharness.rollout.factory import policy_factory
from envharness.rollout.policy import PolicyFactory, describe_policy
from envharness.rollout.store import RunStore

__all__ = ["RiggerContext", "close_store", "open_store", "resolve_context"]

_STORES: dict[Path, RunStore] = {}
_STORES_LOCK = threading.Lock()


def open_store(run_dir: str | Path) -> RunStore:
    """The run's trajectory store (``RUN/trajectories``), opened once per process and shared."""
    path = (Path(run_dir) / "trajectories").resolve()
    with _STORES_LOCK:
        store = _STORES.get(path)
        if store is None:
            store = _STORES[path] = RunStore(path)
        return store


def close_store(run_dir: str | Path) -> None:
    """Closes the run's trajectory store if this process opened it (releasing its lock)."""
    path = (Path(run_dir) / "trajectories").resolve()
    with _STORES_LOCK:
        store = _STORES.pop(path, None)
    if store is not None:
        store.close()


@dataclass
class RiggerContext:
    """How a rig runs: models, policy, executor, budgets and objective.

    Attributes:
        run_dir: The run directory (trajectories, accepted and rejected specs, checkpoints).
        policy: The black-box policy: a policy string (``oracle:0.7``, ``random``, a model
            string) or a picklable factory ``factory(seed) -> Policy``.
        designer: Who writes candidates: ``"heuristic"`` (offline, rule-based), a name given to
            :func:`~envharness.graph.designers.register_designer`, a
            :class:`~envharness.graph.designers.Designer` object, a model string for
            ``init_chat_model`` (e.g. ``google_genai:gemini-2.5-flash``) or a chat model object.
        diagnoser: The diagnoser: ``"heuristic"``, a
            :class:`~envharness.graph.designers.Diagnoser` object, or a model (string or
            object); ``None`` uses the designer's model (the heuristic when the designer is not
            a model).
        objective: ``auto``, ``sr:LOW-HIGH``, ``steps:LOW-HIGH`` or a plain-language weakness.
        k_observe: Baseline rollouts per task.
        k_validate: Validation rollouts between two looks of the judge (a batch).
        max_iterations: Write→validate iterations before giving up.
        confidence: The posterior probability a decision needs (see
            :mod:`envharness.graph.judge`): a band is accepted when the policy's rate lies in
            it with at least this probability.
        max_rollouts: Validation rollouts one candidate may spend (knob calibration
            included) before it is left undecided.
        min_effect: The smallest change in success rate ``auto`` counts as hardening or
            scaffolding.
        executor: Where rollouts run (a ``LocalExecutor`` or ``RayExecutor``); ``None`` runs
            them in the calling thread.
        require_approval: Pause before accepting (a LangGraph ``interrupt``) for a human to
            approve with ``Command(resume=True)`` or refuse with ``Command(resume=False)``.
        siblings: Tasks of the same bridge the heuristic may link to lengthen the horizon.
        max_designer_turns: Model calls the designer agent may spend per candidate.
        feedback_budget: Tokens (about four characters each) a model designer's feedback on
            the earlier attempts may fill; the least useful parts (older attempts' episodes
            first) are cut to fit, and the feedback says what was cut.
        seed: The run's seed; each task's rollouts draw fresh seeds from a per-task offset, and
            no seed is used twice within a task's rig.
        metadata: Extra metadata for traces (LangSmith).
    """

    run_dir: str = "runs/rig"
    policy: str | PolicyFactory = "oracle:0.5"
    designer: Any = "heuristic"
    diagnoser: Any = None
    objective: str | Objective = "auto"
    k_observe: int = 5
    k_validate: int = 5
    max_iterations: int = 5
    confidence: float = 0.8
    max_rollouts: int = 200
    min_effect: float = 0.2
    executor: Executor | None = None
    require_approval: bool = False
    siblings: list[str] = field(default_factory=list)
    max_designer_turns: int = 12
    feedback_budget: int = DEFAULT_FEEDBACK_BUDGET
    seed: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = (
            "k_observe",
            "k_validate",
            "max_iterations",
            "max_designer_turns",
            "feedback_budget",
        )
        for name in names:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RiggerError(f"expected {name} to be a positive int, got {value!r}")
        self._judge = JudgeSettings(
            confidence=self.confidence,
            max_rollouts=self.max_rollouts,
            batch=self.k_validate,
            min_effect=self.min_effect,
        )
        self.objective = Objective.parse(self.objective)
        if self.objective.kind == "deficiency" and self._is_heuristic(self.writer_model):
            raise RiggerError(
                "the heuristic designer cannot target a plain-language deficiency "
                f"({self.objective.text!r}); configure a model with designer=MODEL, or use "
                "'auto' or a band objective such as 'sr:0.4-0.6'"
            )
        self._factory = policy_factory(self.policy)

    def settings(self) -> dict[str, Any]:
        """The settings as plain JSON values (:class:`~envharness.graph.settings.RiggerSettings`).

        Live objects are named: a policy factory by its description, a designer or model object
        by its name; the executor is not a setting.
        """
        diagnoser = None if self.diagnoser is None else self.model_name("diagnoser")
        return {
            "run_dir": str(self.run_dir),
            "policy": self.policy_name,
            "designer": self.model_name("writer"),
            "diagnoser": diagnoser,
            "objective": str(self.objective),
            "k_observe": self.k_observe,
            "k_validate": self.k_validate,
            "max_iterations": self.max_iterations,
            "confidence": self.confidence,
            "max_rollouts": self.max_rollouts,
            "min_effect": self.min_effect,
            "require_approval": self.require_approval,
            "siblings": list(self.siblings),
            "max_designer_turns": self.max_designer_turns,
            "feedback_budget": self.feedback_budget,
            "seed": self.seed,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, Any], resources: RiggerResources | None = None
    ) -> RiggerContext:
        """A context from plain settings, with ``resources``' live objects in place of names.

        Raises:
            RiggerError: If a setting is unknown or has a bad value.
        """
        unknown = sorted(set(settings) - set(SETTING_NAMES))
        if unknown:
            raise RiggerError(
                f"unknown rigger setting(s) {', '.join(unknown)}; the settings are "
                f"{', '.join(SETTING_NAMES)}"
            )
        values = {k: v for k, v in settings.items() if v is not None or k == "diagnoser"}
        resources = resources or RiggerResources()
        for name in ("policy", "designer", "diagnoser"):
            if getattr(resources, name) is not None:
                values[name] = getattr(resources, name)
        try:
            return cls(**values, executor=resources.executor)
        except TypeError as e:
            raise RiggerError(f"bad rigger settings: {e}") from None

    @staticmethod
    def _is_heuristic(model: Any) -> bool:
        return model is None or (isinstance(model, str) and model.strip().lower() == "heuristic")

    @property
    def writer_model(self) -> Any:
        """The writer's model (``"heuristic"`` for the offline designer)."""
        return self.designer

    @property
    def diagnoser_model(self) -> Any:
        """The diagnoser's model: the designer's when not set and the designer is a model."""
        if self.diagnoser is not None:
            return self.diagnoser
        return "heuristic" if self._is_designer(self.designer) else self.designer

    @staticmethod
    def _is_designer(value: Any) -> bool:
        """Whether ``value`` names a designer (a Designer object or a registered name)."""
        if isinstance(value, Designer):
            return True
        return isinstance(value, str) and value.strip() in registered_designers()

    def uses_heuristic(self, node: str) -> bool:
        """Whether ``node`` (``writer`` or ``diagnoser``) runs the heuristic."""
        model = self.writer_model if node == "writer" else self.diagnoser_model
        return self._is_heuristic(model)

    @property
    def judge_settings(self) -> JudgeSettings:
        """The judge's settings (confidence, budget, batch, minimum effect)."""
        return self._judge

    @property
    def policy_factory(self) -> PolicyFactory:
        """The policy as a factory."""
        return self._factory

    @property
    def policy_name(self) -> str:
        """The policy's description (as stored with trajectories)."""
        return describe_policy(self._factory)

    @property
    def store(self) -> RunStore:
        """The run's trajectory store."""
        return open_store(self.run_dir)

    def model_name(self, node: str) -> str:
        """A printable name of the model behind ``node``."""
        model = self.writer_model if node == "writer" else self.diagnoser_model
        if self._is_heuristic(model):
            return "heuristic"
        if isinstance(model, Designer | Diagnoser):
            return model.name
        if isinstance(model, str):
            return model
        return (
            getattr(model, "model_name", None)
            or getattr(model, "model", None)
            or type(model).__name__
        )


_UNCHECKED = frozenset({"metadata"})
"""Settings a resume may change (trace metadata)."""


def resolve_context(
    given: Any, recorded: Mapping[str, Any] | None, resources: RiggerResources | None = None
) -> RiggerContext:
    """The context a node runs with, from what the run was given and what its state recorded.

    Args:
        given: The run's context: a :class:`RiggerContext`, a settings dict, or ``None``.
        recorded: The settings the rig recorded at its first step (``None`` before it).
        resources: Live objects for settings given as plain values.

    Returns:
        ``given`` itself when it is a ``RiggerContext``; otherwise one built from the settings
        (``None`` or ``{}`` on a resume takes the recorded ones).

    Raises:
        RiggerError: If there is no context on a fresh rig, the context is neither a
            ``RiggerContext`` nor a mapping (e.g. a parent graph's own context), or a resume
            is given settings that differ from the recorded ones (naming them).
    """
    if isinstance(given, RiggerContext):
        context = given
    elif given is None or (isinstance(given, Mapping) and not given and recorded):
        if not recorded:
            raise RiggerError(
                "the rigger was run without a context: pass context=RiggerContext(...) from "
                "Python, or a settings dict (the RiggerSettings schema; {} runs the defaults) "
                "from the SDK or a parent graph"
            )
        return RiggerContext.from_settings(recorded, resources)
    elif isinstance(given, Mapping):
        context = RiggerContext.from_settings(given, resources)
    else:
        raise RiggerError(
            f"the rigger's context must be a RiggerContext or a settings dict, got "
            f"{type(given).__name__}; a parent graph with its own context schema calls the "
            "rigger from a node with context=RiggerContext(...) (or its settings dict) "
            "instead of adding it as a subgraph node directly"
        )
    if recorded:
        current = context.settings()
        changed = sorted(
            k
            for k in current.keys() | recorded.keys()
            if k not in _UNCHECKED and current.get(k) != recorded.get(k)
        )
        if changed:
            shown = ", ".join(f"{k} ({recorded.get(k)!r} → {current.get(k)!r})" for k in changed)
            raise RiggerError(
                f"this rig was started with other settings: {shown}; resume with the recorded "
                "settings (or none, to take them), or start a new thread"
            )
    return context
