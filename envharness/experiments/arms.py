"""The train environments of each arm in one round, and the policy equipped with a bank.

``original`` plays the round's tasks as they are; ``harness`` plays the specs EnvRigger accepted
for the same tasks against the same policy (a task whose rig accepted nothing is played as it is,
and recorded as a fallback, so every arm has the same number of environments); ``chain`` links
each of the round's tasks with a randomly drawn other train task (``Link``, sequential).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from envharness.errors import ExperimentError
from envharness.experiments.settings import ExperimentLayout, SkillLearningSettings
from envharness.harness.spec import BridgeSpec, ComponentSpec, HarnessSpec
from envharness.rollout.executors import Executor
from envharness.rollout.factory import policy_factory
from envharness.rollout.policy import PolicyFactory

__all__ = ["SOURCES", "TrainEnv", "equipped_policy", "train_envs"]

SOURCES = ("original", "harness", "fallback", "chain")
"""Where a train environment came from (``fallback``: a harness-arm task its rig did not accept,
played as the original)."""

_SIBLINGS = 8


@dataclass(frozen=True)
class TrainEnv:
    """One environment an arm learns from in one round.

    Attributes:
        task_id: The round's train task it was made for.
        spec: The harness spec (dict form) the rollouts play.
        source: One of :data:`SOURCES`.
        partner: The second task of a chain.
        rig_status: How the task's rig ended (harness arm only).
    """

    task_id: str
    spec: dict[str, Any]
    source: str
    partner: str | None = None
    rig_status: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainEnv:
        """Reads one entry of ``envs.json``."""
        return cls(**data)


def equipped_policy(policy: str | PolicyFactory, bank: Path | None, top_k: int) -> PolicyFactory:
    """The policy showing the skills of ``bank`` (a JSONL bank file), or bare without one.

    Offline policies (oracle, random, scripted) ignore skills and are returned as they are.

    Raises:
        PolicyError: If the policy string is bad.
        SkillError: If ``bank`` is not a skill bank.
    """
    from envharness.rollout.chat import ChatModelPolicyFactory

    has_bank = bank is not None and bank.is_file() and bank.stat().st_size > 0
    if isinstance(policy, str):
        if not has_bank:
            return policy_factory(policy)
        return policy_factory(policy, skills=bank, top_k=top_k)
    if isinstance(policy, ChatModelPolicyFactory):
        return policy.with_skills(bank if has_bank else None, top_k)
    return policy_factory(policy)


def _original(settings: SkillLearningSettings, task_id: str) -> HarnessSpec:
    return HarnessSpec(BridgeSpec(settings.bridge, task_id, dict(settings.bridge_options)))


def _chain_envs(settings: SkillLearningSettings, round_index: int) -> list[TrainEnv]:
    rng = random.Random(f"chain:{settings.seed}:{round_index}")
    envs = []
    for task_id in settings.round_tasks(round_index):
        partner = rng.choice([t for t in settings.train_tasks if t != task_id])
        second = _original(settings, partner).to_dict()
        link = ComponentSpec("link", {"second": second, "mode": "sequential"})
        spec = HarnessSpec(_original(settings, task_id).bridge, [link])
        envs.append(TrainEnv(task_id, spec.to_dict(), "chain", partner=partner))
    return envs


def _harness_envs(
    settings: SkillLearningSettings,
    round_index: int,
    layout: ExperimentLayout,
    policy: PolicyFactory,
    executor: Executor,
) -> list[TrainEnv]:
    from envharness.graph.context import RiggerContext
    from envharness.graph.run import rig

    tasks = settings.round_tasks(round_index)
    siblings = [t for t in settings.train_tasks if t not in tasks][:_SIBLINGS]
    context = RiggerContext(
        run_dir=str(layout.round_dir("harness", round_index) / "rig"),
        policy=policy,
        designer=settings.designer,
        objective=settings.objective,
        k_observe=settings.k_observe,
        k_validate=settings.k_validate,
        max_iterations=settings.max_iterations,
        executor=executor,
        siblings=siblings,
        seed=settings.rig_seed(round_index),
    )
    results = rig(settings.bridge, tasks, context, bridge_options=dict(settings.bridge_options))
    envs = []
    for task_id, result in zip(tasks, results, strict=True):
        if result.status == "accepted" and result.accepted:
            spec = HarnessSpec.from_json(Path(result.accepted).read_text()).to_dict()
            envs.append(TrainEnv(task_id, spec, "harness", rig_status=result.status))
        else:
            spec = _original(settings, task_id).to_dict()
            envs.append(TrainEnv(task_id, spec, "fallback", rig_status=result.status))
    return envs


def train_envs(
    arm: str,
    round_index: int,
    settings: SkillLearningSettings,
    layout: ExperimentLayout,
    *,
    policy: PolicyFactory,
    executor: Executor,
    log: Callable[[str], None] | None = None,
) -> list[TrainEnv]:
    """The environments ``arm`` learns from in ``round_index``; read back from ``envs.json``.

    The list is written once it is complete, so a resumed experiment does not rig again (an
    interrupted rig resumes from its own checkpoints).

    Raises:
        ExperimentError: If ``arm`` learns no skills, or ``envs.json`` is corrupt.
    """
    path = layout.round_dir(arm, round_index) / "envs.json"
    if path.exists():
        try:
            return [TrainEnv.from_dict(item) for item in json.loads(path.read_text())]
        except (OSError, ValueError, TypeError) as e:
            raise ExperimentError(
                f"{path} is corrupt ({e}); delete it to rebuild the round's environments"
            ) from None
    if arm == "original":
        envs = [
            TrainEnv(t, _original(settings, t).to_dict(), "original")
            for t in settings.round_tasks(round_index)
        ]
    elif arm == "chain":
        envs = _chain_envs(settings, round_index)
    elif arm == "harness":
        if log is not None:
            log(f"round {round_index}: rigging {len(settings.round_tasks(round_index))} task(s)")
        envs = _harness_envs(settings, round_index, layout, policy, executor)
    else:
        raise ExperimentError(f"the {arm!r} arm learns no skills and has no train environments")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(e) for e in envs], indent=2) + "\n")
    return envs
