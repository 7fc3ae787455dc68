"""``DesignSession``: what the designer agent's tools work on, and what they collect.

One session serves one writer turn for one task: it holds the spec being rigged, the baseline
rollouts with their statistics, the diagnosis and the objective; the tools record every call in
:attr:`DesignSession.log` and an accepted submission in :attr:`DesignSession.submitted`. The agent
loop (:func:`envharness.graph.designer.run_designer`) adds its model accounting to
:attr:`DesignSession.usage`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envharness.errors import RiggerError
from envharness.harness.spec import HarnessSpec
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Trajectory

if TYPE_CHECKING:
    from envharness.graph.objective import Objective
    from envharness.graph.records import Candidate, Diagnosis

__all__ = [
    "DEFAULT_EPISODE_CHARS",
    "DEFAULT_OUTPUT_CHARS",
    "DEFAULT_REPLAY_SECONDS",
    "DesignSession",
    "ModelUsage",
    "ToolCallRecord",
]

DEFAULT_OUTPUT_CHARS = 6000
"""The most characters one tool result sends back to the designer model."""

DEFAULT_EPISODE_CHARS = 16000
"""The most characters of a tool result that shows one episode in full (``read_baseline(episode)``,
``check_rules``, ``get_stage_candidates``)."""

DEFAULT_REPLAY_SECONDS = 20.0
"""How long ``check_rules`` and ``submit_candidate`` may keep starting baseline episode replays."""

_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")


@dataclass
class ModelUsage:
    """Model calls and tokens spent, summed over replies.

    Attributes:
        calls: Model calls (one per reply).
        input_tokens: Prompt tokens, from the replies' ``usage_metadata``.
        output_tokens: Completion tokens.
        total_tokens: Both (the sum when a provider reports no total).

    Example:
        >>> usage = ModelUsage()
        >>> usage.add({"input_tokens": 10, "output_tokens": 2})
        >>> usage.to_dict()
        {'calls': 1, 'input_tokens': 10, 'output_tokens': 2, 'total_tokens': 12}
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def add(self, metadata: Mapping[str, Any] | None) -> None:
        """Counts one model call with its ``usage_metadata`` (``None`` when not reported)."""
        data = metadata or {}
        inputs = int(data.get("input_tokens", 0) or 0)
        outputs = int(data.get("output_tokens", 0) or 0)
        self.calls += 1
        self.input_tokens += inputs
        self.output_tokens += outputs
        self.total_tokens += int(data.get("total_tokens", 0) or 0) or inputs + outputs

    def to_dict(self) -> dict[str, int]:
        """The counts as a plain dict."""
        return {"calls": self.calls, **{key: getattr(self, key) for key in _USAGE_KEYS}}


@dataclass(frozen=True)
class ToolCallRecord:
    """One designer tool call, as logged by the session.

    Attributes:
        tool: The tool's name.
        args: The arguments the model sent (long strings clipped).
        ok: ``False`` when the tool answered with an ``ERROR:`` text.
        output: The start of the answer.
        seconds: Wall time the tool took.
    """

    tool: str
    args: dict[str, Any]
    ok: bool
    output: str
    seconds: float


def _clip_value(value: Any, limit: int = 400) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"... [{len(value) - limit} more chars]"
    if isinstance(value, Mapping):
        return {str(k): _clip_value(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clip_value(v, limit) for v in value[:50]]
    return value


@dataclass
class DesignSession:
    """The designer's working set for one task, and what its tools collect.

    Args:
        base_spec: The spec being rigged (a bare bridge or an existing harness).
        trajectories: The baseline rollouts on ``base_spec``.
        stats: Their statistics, as a :class:`~envharness.rollout.RolloutStats` or its dict;
            computed from ``trajectories`` when ``None``.
        diagnosis: The diagnosis, as a :class:`~envharness.graph.records.Diagnosis` or its dict.
        objective: The rig's objective (an :class:`~envharness.graph.objective.Objective` or
            its text form, e.g. ``"sr:0.4-0.6"``).
        seed: The seed dry runs reset with; the first baseline episode's seed when ``None``.
        max_output_chars: The most characters one tool result may hold.
        max_episode_chars: The most characters of a result that shows an episode or the
            harness's observations in full.
        siblings: The tasks a candidate may link to (``link_task_ids``); ``None`` lets the
            tools find other tasks of the bridge themselves.
        replay_seconds: The time limit for replaying baseline episodes through rules hooks.

    Attributes:
        submitted: The candidate ``submit_candidate`` accepted, or ``None``.
        log: Every tool call, in order.
        usage: Model calls and tokens the agent loop spent.
        end_reason: How the last agent run ended: ``submitted``, ``max_turns`` or
            ``no_submission`` (``None`` before a run).
        end_detail: The same in a sentence.
        transcript: The messages of the last agent run (LangChain messages).

    Raises:
        RiggerError: If an argument has the wrong type.

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> session = DesignSession(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), [])
        >>> session.stats["n"], session.objective.kind, session.submitted is None
        (0, 'auto', True)
    """

    base_spec: HarnessSpec
    trajectories: list[Trajectory] = field(default_factory=list, repr=False)
    stats: dict[str, Any] | RolloutStats | None = field(default=None, repr=False)
    diagnosis: dict[str, Any] | Diagnosis | None = field(default=None, repr=False)
    objective: Objective | str = "auto"
    seed: int | None = None
    max_output_chars: int = DEFAULT_OUTPUT_CHARS
    max_episode_chars: int = DEFAULT_EPISODE_CHARS
    siblings: list[str] | None = None
    replay_seconds: float = DEFAULT_REPLAY_SECONDS
    submitted: Candidate | None = field(default=None, init=False)
    log: list[ToolCallRecord] = field(default_factory=list, init=False, repr=False)
    usage: ModelUsage = field(default_factory=ModelUsage, init=False)
    end_reason: str | None = field(default=None, init=False)
    end_detail: str = field(default="", init=False)
    transcript: list[Any] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        # The rigger's records, imported here so that `import envharness.tools` loads no rigger.
        from envharness.graph.objective import Objective
        from envharness.graph.records import Diagnosis

        if not isinstance(self.base_spec, HarnessSpec):
            raise RiggerError(
                f"base_spec: expected a HarnessSpec, got {type(self.base_spec).__name__}"
            )
        trajectories = self.trajectories
        if isinstance(trajectories, Trajectory) or not isinstance(trajectories, Iterable):
            raise RiggerError("trajectories: expected a list of Trajectory objects")
        self.trajectories = list(trajectories)
        for i, item in enumerate(self.trajectories):
            if not isinstance(item, Trajectory):
                raise RiggerError(
                    f"trajectories[{i}]: expected a Trajectory, got {type(item).__name__}"
                )
        if self.stats is None:
            self.stats = RolloutStats.from_trajectories(self.trajectories).to_dict()
        elif isinstance(self.stats, RolloutStats):
            self.stats = self.stats.to_dict()
        elif isinstance(self.stats, Mapping):
            self.stats = RolloutStats.from_dict(self.stats).to_dict()
        else:
            raise RiggerError(
                f"stats: expected RolloutStats or its dict, got {type(self.stats).__name__}"
            )
        if isinstance(self.diagnosis, Diagnosis):
            self.diagnosis = self.diagnosis.to_dict()
        elif self.diagnosis is not None and not isinstance(self.diagnosis, Mapping):
            raise RiggerError(
                f"diagnosis: expected a Diagnosis or its dict, got {type(self.diagnosis).__name__}"
            )
        self.objective = Objective.parse(self.objective)
        if self.seed is None:
            self.seed = self.trajectories[0].seed if self.trajectories else 0
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise RiggerError(f"seed: expected an int, got {self.seed!r}")
        for name in ("max_output_chars", "max_episode_chars"):
            limit = getattr(self, name)
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 500:
                raise RiggerError(f"{name}: expected an int >= 500, got {limit!r}")
        seconds = self.replay_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise RiggerError(f"replay_seconds: expected a number >= 0, got {seconds!r}")
        if self.siblings is not None:
            if isinstance(self.siblings, str) or not isinstance(self.siblings, Iterable):
                raise RiggerError("siblings: expected a list of task ids")
            self.siblings = [str(t) for t in self.siblings]
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}

    @property
    def task_id(self) -> str:
        """The task being rigged."""
        return self.base_spec.bridge.task_id

    @property
    def bridge(self) -> str:
        """The bridge's registered name."""
        return self.base_spec.bridge.name

    @property
    def rollout_stats(self) -> RolloutStats:
        """The baseline statistics as a :class:`~envharness.rollout.RolloutStats`."""
        return RolloutStats.from_dict(self.stats)  # type: ignore[arg-type]

    @property
    def model_calls(self) -> int:
        """Model calls the agent loop spent (``usage.calls``)."""
        return self.usage.calls

    def begin_run(self) -> None:
        """Clears the previous run's submission, end reason and transcript (usage accumulates)."""
        with self._lock:
            self.submitted = None
        self.end_reason = None
        self.end_detail = ""
        self.transcript = []

    def end(self, reason: str, detail: str) -> None:
        """Records how an agent run ended."""
        self.end_reason = reason
        self.end_detail = detail

    def record(self, tool: str, args: Mapping[str, Any], output: str, seconds: float) -> None:
        """Logs one tool call (thread-safe: a reply's tool calls may run in parallel)."""
        entry = ToolCallRecord(
            tool=tool,
            args=_clip_value(dict(args)),
            ok=not output.startswith("ERROR"),
            output=output[:500],
            seconds=round(seconds, 4),
        )
        with self._lock:
            self.log.append(entry)

    def submit(self, candidate: Candidate) -> bool:
        """Stores ``candidate`` unless one was already accepted; returns whether it was stored."""
        with self._lock:
            if self.submitted is not None:
                return False
            self.submitted = candidate
            return True

    def cached(self, key: str, compute: Callable[[], str]) -> str:
        """The text under ``key``, computed once by ``compute()`` (for static tool answers)."""
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        text = compute()
        with self._lock:
            self._cache.setdefault(key, text)
        return text

    def calls_of(self, tool: str) -> list[ToolCallRecord]:
        """The logged calls of one tool."""
        return [entry for entry in self.log if entry.tool == tool]
