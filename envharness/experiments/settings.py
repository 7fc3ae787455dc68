"""The settings of a skill-learning experiment, checked once, and the run directory's layout.

A run directory holds one experiment. Its ``experiment.json`` records the settings; running again
with the same settings resumes, with other settings it is refused (a rerun must not mix arms that
were built under different budgets).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envharness.errors import ExperimentError
from envharness.rollout.policy import PolicyFactory, describe_policy

__all__ = [
    "ARMS",
    "DEFAULT_ARMS",
    "EVAL_SEED_OFFSET",
    "ExperimentLayout",
    "SkillLearningSettings",
    "parse_arms",
]

ARMS = ("none", "original", "harness", "chain")
"""Every arm: ``none`` (the frozen policy), ``original`` (skills from the original train envs),
``harness`` (skills from the specs EnvRigger accepted for the same tasks), ``chain`` (skills from
pairs of train tasks chained with ``Link``)."""

DEFAULT_ARMS = ("none", "original", "harness")

EVAL_SEED_OFFSET = 500_000
"""Evaluation seeds start here (plus the experiment's seed), far from every training seed."""

_ROUND_SEEDS = 1_000
_RIG_SEED_OFFSET = 100_000


def parse_arms(arms: str | Sequence[str]) -> tuple[str, ...]:
    """The arms of ``"none,original,harness"`` (or a list), in the canonical order.

    Raises:
        ExperimentError: If an arm is unknown, or no arm is given.

    Example:
        >>> parse_arms("harness, none")
        ('none', 'harness')
    """
    items = arms.split(",") if isinstance(arms, str) else list(arms)
    names = [str(a).strip() for a in items if str(a).strip()]
    unknown = [a for a in names if a not in ARMS]
    if unknown:
        raise ExperimentError(
            f"unknown arm(s) {', '.join(map(repr, unknown))}; the arms are {', '.join(ARMS)}"
        )
    if not names:
        raise ExperimentError(f"no arms given; choose from {', '.join(ARMS)}")
    return tuple(a for a in ARMS if a in names)


def _count(label: str, value: object, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ExperimentError(f"{label} must be an int >= {low}, got {value!r}")
    return value


@dataclass
class SkillLearningSettings:
    """What one skill-learning experiment runs (the paper's skill-learning study, any bridge).

    Every skill arm gets the same train tasks per round, the same number of environments and of
    rollouts per environment, the same extractor and the same policy; all arms are evaluated on
    the same original test tasks with the same seeds.

    Attributes:
        bridge: The bridge's registered name.
        policy: A policy string (``oracle:0.5``, ``PROVIDER:MODEL``) or a policy factory.
        train_tasks: The train tasks (round ``r`` uses the ``r``-th block of ``envs_per_round``).
        test_tasks: The held-out tasks every arm is evaluated on (disjoint from ``train_tasks``).
        out: The run directory.
        arms: The arms to run (:data:`ARMS`).
        runs: Evaluation runs: each plays every test task once, with its own seed.
        rounds: Rounds of rig → roll out → extract; round ``r`` uses the bank of rounds ``< r``.
        envs_per_round: Environments per round and arm (default: the train tasks // rounds).
        rollouts_per_env: Rollouts on each environment, for extraction.
        top_k: Skills shown to the policy per episode.
        designer: EnvRigger's designer for the ``harness`` arm (``heuristic`` or a model).
        extractor: ``offline`` or a chat model string; or an object with ``extract(trajectory)``.
        objective: EnvRigger's objective for the ``harness`` arm.
        k_observe: EnvRigger's observation rollouts.
        k_validate: EnvRigger's validation rollouts per batch.
        max_iterations: EnvRigger's write/validate iterations.
        seed: The first seed; training, rigging and evaluation seeds derive from it.
        bridge_options: ``load_bridge`` options for every task.
        max_steps: The agent's budget per episode (the env's own by default).
    """

    bridge: str
    policy: str | PolicyFactory
    train_tasks: Sequence[str]
    test_tasks: Sequence[str]
    out: str | os.PathLike[str]
    arms: Sequence[str] = DEFAULT_ARMS
    runs: int = 3
    rounds: int = 1
    envs_per_round: int | None = None
    rollouts_per_env: int = 3
    top_k: int = 3
    designer: str = "heuristic"
    extractor: Any = "offline"
    objective: str = "sr:0.4-0.6"
    k_observe: int = 5
    k_validate: int = 5
    max_iterations: int = 5
    seed: int = 0
    bridge_options: Mapping[str, Any] = field(default_factory=dict)
    max_steps: int | None = None

    def __post_init__(self) -> None:
        self.arms = parse_arms(self.arms)
        for label in ("runs", "rounds", "rollouts_per_env", "top_k", "k_observe", "k_validate"):
            _count(label, getattr(self, label))
        _count("max_iterations", self.max_iterations)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ExperimentError(f"seed must be an int >= 0, got {self.seed!r}")
        if self.max_steps is not None:
            _count("max_steps", self.max_steps)
        self.train_tasks = self._tasks("train_tasks", self.train_tasks)
        self.test_tasks = self._tasks("test_tasks", self.test_tasks)
        overlap = sorted(set(self.train_tasks) & set(self.test_tasks))
        if overlap:
            shown = ", ".join(overlap[:5]) + (" ..." if len(overlap) > 5 else "")
            raise ExperimentError(
                f"{len(overlap)} task(s) are both train and test tasks ({shown}); evaluation "
                "must be on tasks no arm learned from: choose disjoint task lists or splits"
            )
        if self.envs_per_round is None:
            self.envs_per_round = len(self.train_tasks) // self.rounds
            if self.envs_per_round < 1:
                raise ExperimentError(
                    f"{len(self.train_tasks)} train task(s) cannot fill {self.rounds} round(s): "
                    "give at least one train task per round"
                )
        _count("envs_per_round", self.envs_per_round)
        needed = self.envs_per_round * self.rounds
        if needed > len(self.train_tasks):
            raise ExperimentError(
                f"{self.rounds} round(s) of {self.envs_per_round} environment(s) need {needed} "
                f"train tasks, but {len(self.train_tasks)} are given: each round learns from "
                "tasks no earlier round used; give more train tasks or fewer rounds"
            )
        if "chain" in self.arms and len(self.train_tasks) < 2:
            raise ExperimentError("the chain arm pairs train tasks: give at least two")
        if not isinstance(self.bridge_options, Mapping):
            raise ExperimentError(
                f"bridge_options must be a mapping, got {type(self.bridge_options).__name__}"
            )
        self.bridge_options = dict(self.bridge_options)

    @staticmethod
    def _tasks(label: str, tasks: object) -> list[str]:
        if isinstance(tasks, str) or not isinstance(tasks, Sequence):
            raise ExperimentError(f"{label} must be a list of task ids, got {tasks!r}")
        ids = [str(t) for t in tasks]
        if not ids:
            raise ExperimentError(f"{label} is empty: give at least one task")
        duplicates = sorted({t for t in ids if ids.count(t) > 1})
        if duplicates:
            raise ExperimentError(f"{label} lists {', '.join(duplicates)} more than once")
        return ids

    @property
    def skill_arms(self) -> tuple[str, ...]:
        """The arms that learn skills (all but ``none``)."""
        return tuple(a for a in self.arms if a != "none")

    @property
    def policy_name(self) -> str:
        """The policy's description (a string policy is its own name)."""
        return self.policy if isinstance(self.policy, str) else describe_policy(self.policy)

    @property
    def extractor_name(self) -> str:
        """The extractor's description."""
        if isinstance(self.extractor, str):
            return self.extractor
        return str(getattr(self.extractor, "name", type(self.extractor).__name__))

    def round_tasks(self, round_index: int) -> list[str]:
        """The train tasks of round ``round_index`` (1-based)."""
        size = int(self.envs_per_round or 0)
        return list(self.train_tasks[(round_index - 1) * size : round_index * size])

    def train_seeds(self, round_index: int) -> list[int]:
        """The rollout seeds on every environment of round ``round_index`` (the same per arm)."""
        first = self.seed + _ROUND_SEEDS * round_index
        return list(range(first, first + self.rollouts_per_env))

    def rig_seed(self, round_index: int) -> int:
        """EnvRigger's first seed in round ``round_index``."""
        return self.seed + _RIG_SEED_OFFSET * round_index

    def eval_seed(self, run: int) -> int:
        """The seed of evaluation run ``run`` (0-based), the same for every arm and round."""
        return self.seed + EVAL_SEED_OFFSET + run

    def to_dict(self) -> dict[str, Any]:
        """The settings as recorded in ``experiment.json`` (what a resume must match)."""
        return {
            "bridge": self.bridge,
            "policy": self.policy_name,
            "train_tasks": list(self.train_tasks),
            "test_tasks": list(self.test_tasks),
            "arms": list(self.arms),
            "runs": self.runs,
            "rounds": self.rounds,
            "envs_per_round": self.envs_per_round,
            "rollouts_per_env": self.rollouts_per_env,
            "top_k": self.top_k,
            "designer": self.designer,
            "extractor": self.extractor_name,
            "objective": self.objective,
            "k_observe": self.k_observe,
            "k_validate": self.k_validate,
            "max_iterations": self.max_iterations,
            "seed": self.seed,
            "bridge_options": self.bridge_options,
            "max_steps": self.max_steps,
        }


class ExperimentLayout:
    """Where an experiment keeps its parts under its run directory.

    ``experiment.json`` (settings), ``arms/ARM/round-R/`` (``envs.json``: the train environments;
    ``train/``: their rollouts; ``skills.jsonl``: what was extracted; ``bank.jsonl``: the arm's
    bank after the round; ``rig/``: EnvRigger's run for the harness arm), ``eval/`` (the test
    rollouts of every arm and round), ``results.json``, ``report.md`` and ``plots/``.
    """

    SETTINGS = "experiment.json"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def round_dir(self, arm: str, round_index: int) -> Path:
        """The folder of one arm's round."""
        return self.root / "arms" / arm / f"round-{round_index}"

    def bank(self, arm: str, round_index: int) -> Path:
        """The arm's bank after ``round_index`` rounds."""
        return self.round_dir(arm, round_index) / "bank.jsonl"

    @property
    def eval_dir(self) -> Path:
        """The run store of every evaluation episode.

        One store for all arms and rounds: an episode is keyed by its spec, seed and policy, and
        a policy's name carries its bank's digest, so arms whose policies are the same (an
        offline policy ignores skills; an empty bank is no bank) share their episodes instead of
        replaying them.
        """
        return self.root / "eval"

    def prepare(self, settings: SkillLearningSettings) -> bool:
        """Creates the run directory, or checks it holds this experiment; ``True`` on a resume.

        Raises:
            ExperimentError: If the directory cannot be written, or holds another experiment.
        """
        path = self.root / self.SETTINGS
        wanted = settings.to_dict()
        if path.exists():
            try:
                found = json.loads(path.read_text())
            except (OSError, ValueError) as e:
                raise ExperimentError(f"{path} is not an experiment's settings file: {e}") from None
            if found != wanted:
                changed = sorted(
                    k for k in wanted.keys() | found.keys() if found.get(k) != wanted.get(k)
                )
                raise ExperimentError(
                    f"{self.root} holds an experiment with other settings ({', '.join(changed)} "
                    "differ); rerun with the same settings to resume, or choose a new --out"
                )
            return True
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(wanted, indent=2) + "\n")
        except OSError as e:
            raise ExperimentError(
                f"cannot write the run directory {str(self.root)!r}: {e.strerror or e}; choose "
                "a directory you can write (--out)"
            ) from None
        return False
