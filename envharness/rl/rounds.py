"""A co-evolution run directory: per-round records, saved policies, and the seed plan.

Layout of ``OUT``::

    coevolve.json            the run's settings (a rerun with other settings is refused)
    round-000/round.json     the untrained policy, evaluated on the original envs
    round-000/q_table.json   its policy (or policy.pkl for a trainer without save_policy)
    round-001/rig/           EnvRigger's run directory for round 1 (checkpoints, trajectories,
                             accepted/ and rejected/ specs)
    round-001/round.json     what round 1 trained on, the steps it took, the evaluation
    ...

``round.json`` is written last (atomically), so a round folder without it did not finish; a
rerun redoes it (its rig resumes from its checkpoints) and skips every finished round.

Seeds: training, rigging and evaluation draw from disjoint ranges (:class:`SeedPlan`), so the
evaluation's episodes are never ones the learner trained on or the rigger played.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envharness._jsonfile import write_json
from envharness.errors import RiggerError

__all__ = ["MAX_SEED", "RoundResult", "SeedPlan", "read_round", "round_dir", "write_json"]

SETTINGS_FILE = "coevolve.json"
ROUND_FILE = "round.json"
MAX_SEED = 100_000
"""Run seeds are ints in ``[0, MAX_SEED)``."""

_TRAIN = 10**17
_EVAL = 3 * 10**17
_RIG = 5 * 10**17
_PER_ROUND_TRAIN = 10**7  # episodes one round may start
_PER_ROUND_RIG = 10**9  # the rigger spreads tasks over 10**8 seeds from its base
_ROUNDS = 10_000


@dataclass(frozen=True)
class SeedPlan:
    """The disjoint seed ranges of one run.

    Training episodes of round ``r`` use seeds from :meth:`train`, EnvRigger's rollouts of round
    ``r`` from :meth:`rig` (the rigger adds a per-task offset below ``10**8``), and every
    evaluation the same ``episodes`` seeds from :meth:`evaluation` (the same in every round and
    for every arm of a comparison with this seed, so rounds and arms are compared on the same
    episodes). The ranges cannot meet for rounds below 10,000.

    Example:
        >>> plan = SeedPlan(3)
        >>> plan.train(1) < plan.evaluation() < plan.rig(1)
        True
    """

    seed: int

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise RiggerError(f"seed: expected an int, got {self.seed!r}")
        if not 0 <= self.seed < MAX_SEED:
            raise RiggerError(f"seed: expected an int in [0, {MAX_SEED}), got {self.seed}")

    def train(self, round_: int) -> int:
        """The first training episode seed of ``round_``."""
        return _TRAIN + (self.seed * _ROUNDS + round_) * _PER_ROUND_TRAIN

    def rig(self, round_: int) -> int:
        """The rigger's base seed (``RiggerContext.seed``) in ``round_``."""
        return _RIG + (self.seed * _ROUNDS + round_) * _PER_ROUND_RIG

    def evaluation(self) -> int:
        """The first evaluation seed."""
        return _EVAL + self.seed * 10**6


@dataclass
class RoundResult:
    """One round: what the learner trained on, what it cost, and how it did on the original envs.

    Attributes:
        round: ``0`` for the untrained policy, then 1, 2, ...
        policy: The policy's name after the round (``describe_policy``).
        rigged: Whether EnvRigger rigged the round's training envs.
        trained_on: Per task: ``task_id``, ``source`` (``accepted``: the rig's accepted spec;
            ``original``: the original env, because the round was not rigged or the rig
            accepted nothing), ``spec_id``, and the rig's ``rig_status`` and ``rig_reason``.
        env_steps: Environment steps the learner took this round (its own actions).
        total_env_steps: The learner's steps over all rounds so far.
        steps_reported: Whether the trainer reported its steps (else the budget is counted).
        episodes: Training episodes this round.
        setup_steps: Steps ``Setups`` replayed at reset in those episodes (not the learner's).
        rig_rollouts: EnvRigger's rollouts of the policy this round (its own cost).
        rig_env_steps: The env steps of those rollouts.
        eval_env_steps: The env steps of the evaluation episodes (no learning happens there).
        evaluation: Per task: the evaluated (original) ``spec_id``, ``n``, ``successes``,
            ``success_rate``, ``mean_return``, ``steps_mean``, ``first_seed`` (seeds
            ``first_seed`` to ``first_seed + n - 1``) and up to 3 ``errors``.
        success_rate: The mean success rate over tasks on the original envs.
        train_first_seed: The first training episode seed (seeds run upward, one per episode).
        seconds: Wall time of ``rig``, ``train`` and ``evaluate``.
        train_details: What the trainer reported.
    """

    round: int
    policy: str
    rigged: bool = False
    trained_on: list[dict[str, Any]] = field(default_factory=list)
    env_steps: int = 0
    total_env_steps: int = 0
    steps_reported: bool = True
    episodes: int = 0
    setup_steps: int = 0
    rig_rollouts: int = 0
    rig_env_steps: int = 0
    eval_env_steps: int = 0
    evaluation: dict[str, dict[str, Any]] = field(default_factory=dict)
    success_rate: float = 0.0
    train_first_seed: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    train_details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The round as JSON data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoundResult:
        """The round :meth:`to_dict` wrote (unknown keys are ignored)."""
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


def round_dir(out_dir: str | Path, round_: int) -> Path:
    """``OUT/round-NNN``."""
    return Path(out_dir) / f"round-{round_:03d}"


def read_round(out_dir: str | Path, round_: int) -> RoundResult | None:
    """The finished round's record, or ``None`` when the round did not finish.

    Raises:
        RiggerError: If ``round.json`` exists but cannot be read (delete the round's folder).
    """
    path = round_dir(out_dir, round_) / ROUND_FILE
    if not path.exists():
        return None
    try:
        return RoundResult.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as e:
        raise RiggerError(
            f"{path} is unreadable ({e}); delete {path.parent} to run that round again"
        ) from None


def check_settings(out_dir: Path, settings: dict[str, Any]) -> None:
    """Records the run's settings, or refuses a directory that holds a run with others.

    Raises:
        RiggerError: If ``OUT/coevolve.json`` holds other settings or cannot be read.
    """
    path = out_dir / SETTINGS_FILE
    if not path.exists():
        write_json(path, settings)
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise RiggerError(
            f"{path} is unreadable ({e}); delete it to reuse {out_dir}, or use a new --out"
        ) from None
    old = stored if isinstance(stored, dict) else {}
    differ = sorted(k for k in settings if old.get(k) != settings[k])
    if differ:
        changes = ", ".join(f"{k}: {old.get(k)!r} → {settings[k]!r}" for k in differ)
        raise RiggerError(
            f"{out_dir} holds a co-evolution run with other settings ({changes}); resume it "
            "with the same settings (more --rounds is fine), or use a new --out directory"
        )
