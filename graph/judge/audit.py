"""Auditing a rig: re-measure every accepted harness on fresh seeds and check its claim.

A rig accepts a harness on the rollouts of its own validation. :func:`audit_run` plays each
accepted spec again, ``rollouts`` times, with the run's policy, on seeds no step of that task's rig
used, and compares what it measures with what the rig claimed:

- a band objective (``sr:LOW-HIGH``, ``steps:LOW-HIGH``): is the audited value inside the band?
  (``in_band``; for a steps band the value is the mean steps of the audited successful episodes,
  and ``in_band`` is ``None`` when no audited episode succeeded);
- the direction: for ``auto`` objectives, and for any task whose lineage holds a ``base_spec``
  and a ``harden`` or ``scaffold`` direction, the base (parent) spec is audited too, on its own
  fresh seeds; where the direction is ``harden`` or ``scaffold`` a one-sided Fisher exact test at
  :data:`ALPHA` says whether the harness lowers (``harden``) or raises (``scaffold``) the success
  rate (``confirmed``, ``p_value``). Runs whose lineage has no ``base_spec`` (older rigs) get
  the base spec back from the accepted spec's components, as the prefix whose id is the
  lineage's ``parent``.

Seeds: each task's audit starts at ``seed`` (default ``1_000_000_000`` plus the rig's seed) and
takes the first contiguous block of ``rollouts`` seeds that misses every seed the task's rig used
(the lineage's ``seeds`` and the seeds of the task's trajectories in ``RUN/trajectories``); the
base spec's block is the next one that misses those and the candidate's block. Audit rollouts are
not added to the rig's trajectory store. The result is written to ``RUN/audit.json`` (atomically)
and returned as an :class:`AuditResult`.

A run without accepted specs has nothing to audit: :func:`audit_run` raises
:class:`~envharness.errors.RiggerError` and writes nothing.

Example:
    >>> result = audit_run("runs/rig-toy24", rollouts=100)  # doctest: +SKIP
    >>> result.summary()  # doctest: +SKIP
    {'audited': 3, 'in_band': 2, 'band_measured': 3, 'confirmed': 0, 'tested': 0}
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envharness.errors import EnvHarnessError, RiggerError
from envharness.graph.judge.posterior import fisher_p_value
from envharness.graph.objective import Objective
from envharness.graph.outputs import write_json
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.batch import run_rollouts
from envharness.rollout.executors import Executor, LocalExecutor
from envharness.rollout.policy import PolicyFactory, describe_policy
from envharness.rollout.stats import RolloutStats, wilson_interval
from envharness.rollout.trajectory import Trajectory

__all__ = [
    "ALPHA",
    "AUDIT_FILE",
    "AUDIT_VERSION",
    "DEFAULT_SEED_OFFSET",
    "AuditResult",
    "AuditRow",
    "audit_run",
    "direction_test",
    "fresh_block",
    "load_audit",
]

AUDIT_FILE = "audit.json"
"""The file :func:`audit_run` writes in the run directory."""

AUDIT_VERSION = 1
"""The ``envharness_audit`` version of that file."""

ALPHA = 0.05
"""The level of the one-sided Fisher exact test of a harness's direction."""

DEFAULT_SEED_OFFSET = 1_000_000_000
"""Audit seeds start here plus the rig's seed unless ``seed`` is given."""

_SETTINGS_FILE = "rig.json"  # graph.run.SETTINGS_FILE (not imported: that module needs LangGraph)
_TESTED_DIRECTIONS = ("harden", "scaffold")

PolicyArg = str | PolicyFactory | Callable[[int], Any]


@dataclass(frozen=True)
class AuditRow:
    """One accepted harness's audit.

    Attributes:
        task_id: The task.
        spec_id: The accepted spec's id.
        objective: The objective the task was rigged for (as text).
        direction: ``scaffold``, ``harden``, ``fix-behaviour``, ``none``, or ``None`` if unknown.
        claimed: What the rig measured when it accepted: ``rate``, ``interval``, ``n``,
            ``successes``, ``probability``, ``steps_mean`` (``None`` where the lineage does not
            say), plus ``method`` and ``confidence`` of the rig's judgement.
        audited: The audit of the accepted spec: ``n``, ``successes``, ``rate``, ``interval``
            (Wilson 95%), ``steps_mean`` (mean steps of the successful episodes, ``None``
            without any) and ``errors`` (episodes that ended in a policy or env error).
        in_band: For a band objective, whether the audited value lies in the band (``None``
            for other objectives, and for a steps band when no audited episode succeeded).
        baseline_audited: The base spec's audit (same keys as ``audited``), or ``None`` when the
            base spec was not audited.
        confirmed: Whether the one-sided Fisher test confirms the direction at :data:`ALPHA`
            (``None`` when not tested).
        p_value: That test's p-value (``None`` when not tested).
        seeds: The first and last seed of the accepted spec's audit.
        baseline_seeds: The first and last seed of the base spec's audit (``None`` without one).
    """

    task_id: str
    spec_id: str
    objective: str
    direction: str | None
    claimed: dict[str, Any]
    audited: dict[str, Any]
    in_band: bool | None = None
    baseline_audited: dict[str, Any] | None = None
    confirmed: bool | None = None
    p_value: float | None = None
    seeds: tuple[int, int] = (0, 0)
    baseline_seeds: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row as a JSON-able dict (one entry of ``audit.json``'s ``tasks``)."""
        return {
            "task_id": self.task_id,
            "spec_id": self.spec_id,
            "objective": self.objective,
            "direction": self.direction,
            "claimed": dict(self.claimed),
            "audited": dict(self.audited),
            "in_band": self.in_band,
            "baseline_audited": (
                dict(self.baseline_audited) if self.baseline_audited is not None else None
            ),
            "confirmed": self.confirmed,
            "p_value": self.p_value,
            "seeds": list(self.seeds),
            "baseline_seeds": list(self.baseline_seeds) if self.baseline_seeds else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditRow:
        """Rebuilds a row from :meth:`to_dict` output.

        Raises:
            ValueError: If a required field is missing or malformed.
        """
        try:
            first, last = data["seeds"]
            base = data.get("baseline_seeds")
            return cls(
                task_id=str(data["task_id"]),
                spec_id=str(data["spec_id"]),
                objective=str(data.get("objective", "")),
                direction=data.get("direction"),
                claimed=dict(data.get("claimed") or {}),
                audited=dict(data["audited"]),
                in_band=data.get("in_band"),
                baseline_audited=(
                    dict(data["baseline_audited"]) if data.get("baseline_audited") else None
                ),
                confirmed=data.get("confirmed"),
                p_value=data.get("p_value"),
                seeds=(int(first), int(last)),
                baseline_seeds=(int(base[0]), int(base[1])) if base else None,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"malformed audit row: {e!r}") from e


@dataclass(frozen=True)
class AuditResult:
    """What :func:`audit_run` measured (and wrote to ``RUN/audit.json``).

    Attributes:
        run_dir: The audited run directory.
        settings: ``rollouts``, ``seed``, ``policy``, ``objective``, ``bridge``, ``alpha`` and
            ``interval`` (how audited intervals are computed).
        rows: One :class:`AuditRow` per accepted spec, in task order.
        path: Where the result was written.
    """

    run_dir: Path
    settings: dict[str, Any]
    rows: tuple[AuditRow, ...] = ()
    path: Path | None = None

    def summary(self) -> dict[str, int]:
        """The audit's counts.

        Returns:
            ``audited`` (tasks), ``in_band`` (of ``band_measured``, the tasks with a band value)
            and ``confirmed`` (of ``tested``, the tasks whose direction was tested).
        """
        return {
            "audited": len(self.rows),
            "in_band": sum(row.in_band is True for row in self.rows),
            "band_measured": sum(row.in_band is not None for row in self.rows),
            "confirmed": sum(row.confirmed is True for row in self.rows),
            "tested": sum(row.confirmed is not None for row in self.rows),
        }

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-able dict (the content of ``audit.json``)."""
        return {
            "envharness_audit": AUDIT_VERSION,
            "settings": dict(self.settings),
            "tasks": [row.to_dict() for row in self.rows],
            "summary": self.summary(),
        }

    @classmethod
    def from_dict(cls, data: Any, run_dir: str | Path, path: Path | None = None) -> AuditResult:
        """Rebuilds a result from :meth:`to_dict` output.

        Raises:
            ValueError: If the data is not an audit.
        """
        if not isinstance(data, Mapping) or data.get("envharness_audit") != AUDIT_VERSION:
            raise ValueError(f"expected an object with envharness_audit={AUDIT_VERSION}")
        tasks = data.get("tasks")
        if not isinstance(tasks, list):
            raise ValueError("expected 'tasks' to be a list")
        rows = []
        for row in tasks:
            if not isinstance(row, Mapping):
                raise ValueError(f"expected each task to be an object, got {row!r}")
            rows.append(AuditRow.from_dict(row))
        return cls(Path(run_dir), dict(data.get("settings") or {}), tuple(rows), path)


def load_audit(run_dir: str | Path) -> AuditResult | None:
    """Reads ``RUN/audit.json``; ``None`` when the run has not been audited.

    Raises:
        RiggerError: If the file cannot be read or is not an audit.
    """
    path = Path(run_dir) / AUDIT_FILE
    if not path.is_file():
        return None
    try:
        return AuditResult.from_dict(json.loads(path.read_text()), run_dir, path)
    except OSError as e:
        raise RiggerError(f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:  # JSONDecodeError included
        raise RiggerError(f"{path} is not an audit written by `envharness audit`: {e}") from None


# -- seeds -----------------------------------------------------------------------------------


def fresh_block(start: int, n: int, used: Iterable[int]) -> range:
    """The first block of ``n`` consecutive seeds at or after ``start`` that misses ``used``.

    Example:
        >>> fresh_block(10, 3, {11, 15})
        range(12, 15)
        >>> fresh_block(0, 2, [])
        range(0, 2)
    """
    first = start
    for seed in sorted(s for s in set(used) if s >= start):
        if seed >= first + n:
            break
        if seed >= first:
            first = seed + 1
    block = range(first, first + n)
    if not set(block).isdisjoint(used):  # the loop above guarantees it; keep it checked
        raise AssertionError(f"seed block {block} overlaps the seeds already used")
    return block


def _stored_seeds(run: Path) -> dict[str, set[int]]:
    """The seeds of the rig's stored trajectories, per task (read-only)."""
    from envharness.errors import TrajectoryError
    from envharness.rollout.store import RunStore

    store_dir = run / "trajectories"
    if not store_dir.is_dir():
        return {}
    seeds: dict[str, set[int]] = {}
    try:
        with RunStore(store_dir, readonly=True) as store:
            for trajectory in store:
                seeds.setdefault(trajectory.task_id, set()).add(int(trajectory.seed))
    except TrajectoryError as e:
        raise RiggerError(
            f"cannot read {store_dir} to keep the audit's seeds apart from the rig's: {e}"
        ) from e
    return seeds


# -- statistics ------------------------------------------------------------------------------


def direction_test(direction: str, candidate: tuple[int, int], baseline: tuple[int, int]) -> float:
    """The one-sided Fisher exact p-value that the harness moved success the claimed way.

    Args:
        direction: ``harden`` (the candidate's rate is below the baseline's) or ``scaffold``
            (above).
        candidate: ``(successes, n)`` of the audited candidate.
        baseline: ``(successes, n)`` of the audited baseline.

    Raises:
        ValueError: If ``direction`` is neither ``harden`` nor ``scaffold``.

    Example:
        >>> direction_test("harden", (8, 20), (20, 20)) < 0.001
        True
        >>> direction_test("scaffold", (8, 20), (20, 20)) > 0.99
        True
    """
    if direction not in _TESTED_DIRECTIONS:
        raise ValueError(f"expected direction 'harden' or 'scaffold', got {direction!r}")
    alternative = "less" if direction == "harden" else "greater"
    return fisher_p_value(*candidate, *baseline, alternative)


def _audited(trajectories: list[Trajectory]) -> dict[str, Any]:
    stats = RolloutStats.from_trajectories(trajectories)
    lo, hi = wilson_interval(stats.successes, stats.n)
    return {
        "n": stats.n,
        "successes": stats.successes,
        "rate": stats.success_rate,
        "interval": [lo, hi],
        "steps_mean": stats.success_steps_mean,
        "errors": stats.errors,
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _claimed(validation: Mapping[str, Any]) -> dict[str, Any]:
    """The rig's claim: its judgement, else the confirmation rollouts' statistics."""
    judgement = validation.get("judgement") if isinstance(validation, Mapping) else None
    stats = validation.get("candidate") if isinstance(validation, Mapping) else None
    judgement = judgement if isinstance(judgement, Mapping) else {}
    stats = stats if isinstance(stats, Mapping) else {}
    n = _count(judgement.get("n", stats.get("n")))
    successes = _count(judgement.get("successes", stats.get("successes")))
    rate = _number(judgement.get("rate", stats.get("success_rate")))
    if rate is None and n and successes is not None:
        rate = successes / n
    interval = judgement.get("interval")
    if not (isinstance(interval, list | tuple) and len(interval) == 2):
        lo, hi = _number(stats.get("ci_low")), _number(stats.get("ci_high"))
        if lo is not None and hi is not None:
            interval = [lo, hi]
        elif n is not None and successes is not None and 0 <= successes <= n:
            interval = list(wilson_interval(successes, n))
        else:
            interval = None
    else:
        interval = [float(interval[0]), float(interval[1])]
    steps = judgement.get("steps_mean", stats.get("success_steps_mean"))
    return {
        "rate": rate,
        "interval": interval,
        "n": n,
        "successes": successes,
        "probability": _number(judgement.get("probability")),
        "steps_mean": _number(steps),
        "method": judgement.get("method") if judgement else ("stats" if stats else None),
        "confidence": _number(judgement.get("confidence")),
    }


def _base_spec(spec: HarnessSpec, validation: Mapping[str, Any], path: Path) -> HarnessSpec | None:
    """The rigged (parent) spec: lineage's ``base_spec``, else the prefix matching ``parent``."""
    raw = validation.get("base_spec")
    if isinstance(raw, Mapping):
        if "envharness_spec" not in raw and isinstance(raw.get("name"), str):  # just a bridge
            options = raw.get("options") or {}
            return HarnessSpec(BridgeSpec(raw["name"], str(raw.get("task_id")), dict(options)))
        try:
            return HarnessSpec.from_dict(raw)
        except EnvHarnessError as e:
            raise RiggerError(f"{path}: lineage.validation.base_spec is not a spec: {e}") from e
    parent = spec.lineage.parent if spec.lineage is not None else None
    if parent is None:
        return None
    # Older runs: find the parent's id among the prefixes (with the bridge's task fingerprint,
    # or without it, as parents were recorded before specs pinned their task data).
    unpinned = dataclasses.replace(spec.bridge, fingerprint=None)
    for cut in range(len(spec.components) - 1, -1, -1):
        for bridge in (spec.bridge, unpinned):
            prefix = HarnessSpec(bridge, spec.components[:cut])
            if prefix.spec_id == parent:
                return HarnessSpec(spec.bridge, spec.components[:cut])
    return None


# -- the audit -------------------------------------------------------------------------------


def _read_settings(run: Path) -> dict[str, Any]:
    if not run.is_dir():
        raise RiggerError(
            f"no run directory at {run}; `envharness rig NAME ... --out DIR` makes one"
        )
    path = run / _SETTINGS_FILE
    if not path.is_file():
        raise RiggerError(
            f"{run} is not a rig run directory: it has no {_SETTINGS_FILE} (the settings "
            "`envharness rig NAME ... --out DIR` writes); audit the directory a rig wrote"
        )
    try:
        settings = json.loads(path.read_text())
    except OSError as e:
        raise RiggerError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise RiggerError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(settings, dict) or "bridge" not in settings:
        raise RiggerError(f"{path} holds no rig settings (expected a 'bridge' key)")
    return settings


def _factory(policy: PolicyArg | None, settings: Mapping[str, Any], run: Path) -> PolicyFactory:
    from envharness.errors import PolicyError
    from envharness.rollout.factory import policy_factory

    if policy is not None:
        return policy_factory(policy)  # type: ignore[arg-type]
    stored = settings.get("policy")
    if not isinstance(stored, str) or not stored.strip():
        raise RiggerError(
            f"{run / _SETTINGS_FILE} records the policy as {stored!r}, not a policy string; "
            "pass the rig's policy: audit_run(..., policy=FACTORY_OR_STRING) or "
            "`envharness audit RUN --policy P`"
        )
    try:
        return policy_factory(stored)
    except PolicyError as e:
        raise RiggerError(
            f"the rig's policy {stored!r} ({run / _SETTINGS_FILE}) cannot be rebuilt from its "
            f"name ({e}); pass it: audit_run(..., policy=FACTORY_OR_STRING) or "
            "`envharness audit RUN --policy P`"
        ) from e


def _accepted_specs(run: Path) -> list[tuple[Path, HarnessSpec]]:
    specs = []
    for path in sorted((run / "accepted").glob("*.json")):
        try:
            specs.append((path, HarnessSpec.from_json(path.read_text())))
        except OSError as e:
            raise RiggerError(f"cannot read {path}: {e.strerror}") from None
        except EnvHarnessError as e:
            raise RiggerError(f"{path} is not an accepted harness spec: {e}") from e
    if not specs:
        others = ", ".join(
            f"{len(list((run / kind).glob('*.json')))} {kind}" for kind in ("rejected", "undecided")
        )
        raise RiggerError(
            f"nothing to audit: {run / 'accepted'} holds no accepted spec ({others}); the audit "
            "re-measures accepted harnesses only"
        )
    return specs


def _check_int(name: str, value: Any, minimum: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RiggerError(f"expected --{name} to be {what}, got {value!r}")
    return value


def audit_run(
    run_dir: str | Path,
    *,
    rollouts: int = 100,
    seed: int | None = None,
    policy: PolicyArg | None = None,
    executor: Executor | None = None,
) -> AuditResult:
    """Re-measures every accepted harness of a rig on fresh seeds; writes ``RUN/audit.json``.

    Args:
        run_dir: The directory ``envharness rig ... --out DIR`` wrote.
        rollouts: Fresh episodes per accepted spec (and per base spec where the direction is
            tested).
        seed: Where each task's search for a fresh seed block starts; default
            ``1_000_000_000 + `` the rig's seed.
        policy: The policy to audit with: a policy string or a factory ``factory(seed) ->
            Policy``; default the rig's (``rig.json``'s ``policy`` string). Needed when the rig
            used a Python factory.
        executor: Where the rollouts run (an :class:`~envharness.rollout.executors.Executor`);
            default a ``LocalExecutor()`` over the CPUs, closed at the end.

    Returns:
        The audit, one row per accepted spec; also written to ``RUN/audit.json``.

    Raises:
        RiggerError: If ``rollouts`` is not a positive int or ``seed`` not an int >= 0;
            ``run_dir`` is not a rig's run directory (no ``rig.json``); it holds no accepted
            spec; a file in it is malformed; or ``rig.json``'s policy is not a policy string
            that rebuilds and ``policy`` is not given.
        PolicyError: If ``policy`` is an unknown policy string.
    """
    rollouts = _check_int("rollouts", rollouts, 1, "a positive int")
    run = Path(run_dir)
    settings = _read_settings(run)
    if seed is None:
        rig_seed = settings.get("seed", 0)
        seed = DEFAULT_SEED_OFFSET + (rig_seed if isinstance(rig_seed, int) else 0)
    seed = _check_int("seed", seed, 0, "an int >= 0")
    specs = _accepted_specs(run)
    factory = _factory(policy, settings, run)
    stored = _stored_seeds(run)
    run_objective = str(settings.get("objective", "auto"))

    own_executor = None
    if executor is None:
        executor = own_executor = LocalExecutor()
    try:
        rows = [
            _audit_one(path, spec, run_objective, stored, rollouts, seed, factory, executor)
            for path, spec in specs
        ]
    finally:
        if own_executor is not None:
            own_executor.close()
    rows.sort(key=lambda row: _natural(row.task_id))
    result = AuditResult(
        run_dir=run,
        settings={
            "rollouts": rollouts,
            "seed": seed,
            "policy": describe_policy(factory),
            "objective": run_objective,
            "bridge": settings["bridge"],
            "alpha": ALPHA,
            "interval": "wilson 95%",
        },
        rows=tuple(rows),
        path=run / AUDIT_FILE,
    )
    write_json(run / AUDIT_FILE, result.to_dict())
    return result


def _natural(task_id: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", task_id)]


def _play(
    spec: HarnessSpec, factory: PolicyFactory, block: range, executor: Executor
) -> list[Trajectory]:
    trajectories = run_rollouts(spec, factory, len(block), seed=block.start, executor=executor)
    played = sorted(t.seed for t in trajectories)
    if played != list(block):  # the seeds are the audit's record: they must be the ones asked
        raise RiggerError(f"the audit asked for seeds {block} but got {played[:3]}...")
    return trajectories


def _audit_one(
    path: Path,
    spec: HarnessSpec,
    run_objective: str,
    stored: Mapping[str, set[int]],
    rollouts: int,
    seed: int,
    factory: PolicyFactory,
    executor: Executor,
) -> AuditRow:
    lineage = spec.lineage
    validation: dict[str, Any] = dict(lineage.validation) if lineage is not None else {}
    task_id = lineage.task if lineage is not None and lineage.task else spec.bridge.task_id
    objective_text = str(validation.get("objective") or run_objective)
    try:
        objective = Objective.parse(objective_text)
    except RiggerError as e:
        raise RiggerError(f"{path}: {e}") from e
    direction = validation.get("direction")
    direction = direction if isinstance(direction, str) else None

    used = set(stored.get(task_id, set()))
    lineage_seeds = validation.get("seeds")
    if isinstance(lineage_seeds, list):
        used.update(s for s in lineage_seeds if isinstance(s, int) and not isinstance(s, bool))
    block = fresh_block(seed, rollouts, used)
    audited = _audited(_play(spec, factory, block, executor))

    in_band: bool | None = None
    if objective.kind == "success_band":
        in_band = objective.contains(audited["rate"])
    elif objective.kind == "steps_band" and audited["steps_mean"] is not None:
        in_band = objective.contains(audited["steps_mean"])

    baseline_audited = confirmed = p_value = baseline_block = None
    base = _base_spec(spec, validation, path)
    tested = direction in _TESTED_DIRECTIONS
    if base is not None and (objective.kind == "auto" or (tested and "base_spec" in validation)):
        baseline_block = fresh_block(block.stop, rollouts, used | set(block))
        baseline_audited = _audited(_play(base, factory, baseline_block, executor))
        if tested:
            p_value = direction_test(
                direction,  # type: ignore[arg-type]
                (audited["successes"], audited["n"]),
                (baseline_audited["successes"], baseline_audited["n"]),
            )
            confirmed = p_value < ALPHA
    return AuditRow(
        task_id=task_id,
        spec_id=spec.spec_id,
        objective=str(objective),
        direction=direction,
        claimed=_claimed(validation),
        audited=audited,
        in_band=in_band,
        baseline_audited=baseline_audited,
        confirmed=confirmed,
        p_value=p_value,
        seeds=(block.start, block.stop - 1),
        baseline_seeds=(
            (baseline_block.start, baseline_block.stop - 1) if baseline_block is not None else None
        ),
    )
