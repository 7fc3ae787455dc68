"""``GymnasiumEnv``: one registered Gymnasium env with a Discrete action space, as a bridge."""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
from collections.abc import Mapping
from typing import Any, ClassVar

from envharness.bridgekit.checks import check_options, check_positive_int
from envharness.bridgekit.fingerprint import cached_fingerprint, task_fingerprint
from envharness.bridges.gymnasium import _loader
from envharness.bridges.gymnasium._loader import BRIDGE, DEFAULT_MAX_STEPS
from envharness.bridges.gymnasium._state import OPTIONS, bad_state, parse_saved, state_schema
from envharness.bridges.gymnasium.domains import Domain, Moment, domain_class
from envharness.bridges.gymnasium.hints import HINTS
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import BridgeError, EpisodeError, InvalidActionError, UnknownTaskError

__all__ = ["GymnasiumEnv"]

_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


class GymnasiumEnv(ActionableEnv):
    """One Gymnasium env (the task id is its registered id) driven by one tool per action.

    Known envs have named tools (FrozenLake ``move_left/down/right/up``, CliffWalking
    ``move_up/right/down/left``, Taxi ``move_south/north/east/west``, ``pickup``, ``dropoff``,
    Blackjack ``stick``/``hit``, CartPole ``push_left/right`` ...); any other env gets
    ``act(action)`` with the action's integer. Observations are text: a header with the last
    action, its reward and whether the episode ended, the env's ANSI rendering without colours
    (when it has one), and a description in words. ``observe()`` describes the current state as
    a start would (no last action), except once the episode has ended, when it is the last
    observation (which says how it ended). ``steps`` (in ``evaluate()`` and the state) counts
    the agent's steps, not those before ``mark_episode_start`` (a ``Setups`` replay); the
    return and gymnasium's own time limit count every step.

    ``reset(seed=None)`` resets gymnasium with seed 0, so every reset is deterministic; the same
    seed gives the same episode (slippery ice and card draws included). Gymnasium's registered
    time limit stays in place and truncates honestly; ``max_steps`` is the agent's budget, which
    the rollout loop enforces (default: the registered ``max_episode_steps``, else 100).
    ``evaluate()`` reads the env's own signals: FrozenLake and CliffWalking succeed on reaching
    the goal, Taxi on the +20 dropoff, Blackjack on a won hand, CartPole on lasting until the
    time limit, MountainCar and Acrobot on terminating, any other env on terminating with a
    positive return; the score is the total reward.

    Args:
        task_id: A registered id (``"FrozenLake-v1"``), or ``"module:Env-v0"`` to import the
            module that registers it.
        env_kwargs: Keyword arguments for ``gymnasium.make`` (JSON values), e.g.
            ``{"is_slippery": False}``.
        max_steps: The agent's step budget.

    Raises:
        DependencyNotInstalled: If gymnasium is not installed (the ``gym`` extra).
        UnknownTaskError: If the id is not registered, or the env's action space is not
            Discrete, or its observations cannot be shown as text.
        BridgeError: If ``env_kwargs`` or ``max_steps`` is bad, or gymnasium cannot make the env.

    Example:
        >>> env = GymnasiumEnv("FrozenLake-v1", env_kwargs={"is_slippery": False})
        >>> [tool.name for tool in env.tools()]
        ['move_left', 'move_down', 'move_right', 'move_up']
        >>> observation, info = env.reset(seed=0)
        >>> for action in env.oracle_actions():
        ...     result = env.step(action)
        >>> result.terminated, env.evaluate().success
        (True, True)
        >>> env.close()
    """

    bridge_name: ClassVar[str] = BRIDGE

    def __init__(
        self,
        task_id: str,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        max_steps: int | None = None,
    ) -> None:
        gym = _loader.require_gymnasium()
        spec = _loader.resolve_spec(task_id)
        self._env_kwargs = _loader.check_env_kwargs(env_kwargs)
        self._default_steps = spec.max_episode_steps or DEFAULT_MAX_STEPS
        self.max_steps = self._default_steps
        if max_steps is not None:
            self.max_steps = check_positive_int("max_steps", max_steps, bridge=BRIDGE)
        self.task_id = task_id
        self._env = _loader.make(spec, self._env_kwargs)
        try:
            unwrapped = self._env.unwrapped
            space = unwrapped.action_space
            if not isinstance(space, gym.spaces.Discrete):
                raise UnknownTaskError(
                    f"{task_id!r} has a {space} action space; the gymnasium bridge plays envs "
                    "with a Discrete action space (one tool per action)",
                    bridge=BRIDGE,
                    task_id=task_id,
                )
            problem = _loader.space_problem(gym, unwrapped.observation_space)
            if problem:
                raise UnknownTaskError(
                    f"{task_id!r} cannot be played as text: {problem}",
                    bridge=BRIDGE,
                    task_id=task_id,
                )
            kind = domain_class(unwrapped)
            kind.check_kwargs(self._env_kwargs)
            self._domain: Domain = kind(spec.id, unwrapped)
        except BaseException:
            self._env.close()
            raise
        self._start = int(space.start)
        self._obs_schema = _loader.space_schema(gym, unwrapped.observation_space)
        self._ansi = self._env.render_mode == "ansi"
        self._tools, self._names = self._build_tools()
        self.instruction = f"{self._domain.instruction()} {self._usage()}"
        self._seed: int | None = None
        self._actions: list[int] = []
        self._moment: Moment | None = None
        self._observation: str | None = None
        self._setup_steps = 0  # env steps before mark_episode_start (a Setups replay)
        self._closed = False

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def designer_hints(cls) -> str:
        """This bridge's notes for the designer's and diagnoser's prompts (its ``hints`` module)."""
        return HINTS

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """Task ids of ``split``, from the installed gymnasium's registry.

        ``train`` is the plain env of each toy-text family (``FrozenLake-v1``,
        ``CliffWalking-v1``, ``Taxi-v4``, ``Blackjack-v1`` in gymnasium 1.4), ``test`` their
        registered variants (``FrozenLake8x8-v1``, ``CliffWalkingSlippery-v1``): held-out maps
        and dynamics of the same games. ``all`` adds gymnasium's classic-control and Box2D envs
        with a Discrete action space whose dependencies are installed. Any other registered
        discrete env can still be loaded by its id. With ``env_kwargs``, only the envs whose
        constructor takes those arguments are listed.

        Args:
            split: ``"train"``, ``"test"`` or ``"all"``.
            **options: Bridge options (``env_kwargs``, ``max_steps``).

        Raises:
            UnknownTaskError: If ``split`` is not one of the splits.
            BridgeError: If an option is unknown or bad.
            DependencyNotInstalled: If gymnasium is not installed.

        Example:
            >>> GymnasiumEnv.list_tasks("train")[0]
            'FrozenLake-v1'
        """
        check_options(options, OPTIONS, bridge=BRIDGE, where="list_tasks")
        env_kwargs = _loader.check_env_kwargs(options.get("env_kwargs"))
        if options.get("max_steps") is not None:
            check_positive_int("max_steps", options["max_steps"], bridge=BRIDGE)
        return _loader.list_task_ids(split, env_kwargs)

    def bridge_options(self) -> dict[str, Any]:
        """``env_kwargs`` when given and ``max_steps`` when not the default."""
        options: dict[str, Any] = {}
        if self._env_kwargs:
            options["env_kwargs"] = json.loads(json.dumps(self._env_kwargs))
        if self.max_steps != self._default_steps:
            options["max_steps"] = self.max_steps
        return options

    def task_fingerprint(self) -> str:
        """The hash of what decides the verdict: the made env's id, entry point and kwargs.

        The record is the env id, its entry point, the keyword arguments gymnasium made it with
        (the constructor's JSON defaults, the registered ones and ``env_kwargs``, which change
        dynamics or success, so an explicit default changes nothing; not the bridge's
        ``render_mode``), gymnasium's time limit (CartPole succeeds by reaching it),
        the domain that reads success and, for grid worlds, the map. ``max_steps`` (the agent's
        budget) does not change it. Gymnasium's own code is not hashed.
        """
        return cached_fingerprint(self, self._fingerprint)

    def _fingerprint(self) -> str:
        spec = self._env.spec
        entry = spec.entry_point
        if not isinstance(entry, str):
            entry = f"{getattr(entry, '__module__', '?')}:{getattr(entry, '__qualname__', entry)}"
        kwargs = {**_constructor_defaults(spec), **(spec.kwargs or {})}
        kwargs.pop("render_mode", None)
        record = {
            "bridge": BRIDGE,
            "task_id": self.task_id,
            "env_id": spec.id,
            "entry_point": entry,
            "kwargs": json.loads(json.dumps(kwargs, default=repr)),
            "time_limit": spec.max_episode_steps,
            "domain": self._domain.family,
            "map": list(getattr(self._domain, "rows", None) or []),
        }
        return task_fingerprint(record)

    # -- tools ------------------------------------------------------------------------------

    def _build_tools(self) -> tuple[list[ToolSpec], list[str]]:
        named = self._domain.actions()
        n = self._domain.n
        if named is not None:
            tools = [ToolSpec(name, text, dict(_NO_ARGS)) for name, text in named]
            return tools, [name for name, _ in named]
        first, last = self._start, self._start + n - 1
        act = ToolSpec(
            "act",
            f"Take action number `action` in {self.task_id}: an integer from {first} to {last}.",
            {
                "type": "object",
                "properties": {
                    "action": {
                        "type": "integer",
                        "minimum": first,
                        "maximum": last,
                        "description": f"The action, an integer from {first} to {last}.",
                    }
                },
                "required": ["action"],
            },
        )
        return [act], [f"act({first + i})" for i in range(n)]

    def _usage(self) -> str:
        if self._tools[0].name == "act":
            last = self._start + self._domain.n - 1
            return f"Each turn, call act(action) with an integer from {self._start} to {last}."
        return f"Each turn, call one of: {', '.join(self._names)} (no arguments)."

    def tools(self) -> list[ToolSpec]:
        """One tool per action, or ``act(action)`` for envs without named actions."""
        return list(self._tools)

    def _index(self, action: Action) -> int:
        """The action's index in the action space (0-based)."""
        if action.tool != "act":
            return self._names.index(action.tool)
        value = action.args["action"]
        index = int(value) - self._start
        if not 0 <= index < self._domain.n:
            raise InvalidActionError(
                f"expected an integer from {self._start} to {self._start + self._domain.n - 1}, "
                f"got {value!r}",
                tool="act",
            )
        return index

    # -- the episode ------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Resets gymnasium with ``seed`` (``None`` means 0, so resets are deterministic).

        Raises:
            BridgeError: If ``seed`` is not a non-negative int, or the env is closed.
        """
        if seed is None:
            seed = 0
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise BridgeError(f"seed: expected a non-negative int, got {seed!r}", bridge=BRIDGE)
        self._check_open()
        raw, _ = self._env.reset(seed=seed)
        self._seed, self._actions = seed, []
        self._setup_steps = 0
        self._moment = Moment(_loader.to_json(raw))
        self._observation = self._render()
        return self._observation, {"seed": seed, "raw_observation": self._moment.raw}

    def step(self, action: Action) -> StepResult:
        """Steps gymnasium with the action the tool names.

        Raises:
            InvalidActionError: If the action does not match the tools (or ``act`` is out of range).
            EpisodeError: Before :meth:`reset`, or after the episode ended.
        """
        action = self.check_action(action)
        index = self._index(action)
        moment = self._moment
        if moment is None:
            raise EpisodeError("no episode is running; call reset() first")
        if moment.ended:
            raise EpisodeError("episode is over; call reset()")
        self._check_open()
        raw, reward, terminated, truncated, _ = self._env.step(self._start + index)
        reward = float(reward)
        self._actions.append(index)
        self._moment = Moment(
            _loader.to_json(raw),
            previous=moment.raw,
            action=index,
            reward=reward,
            total_reward=moment.total_reward + reward,
            steps=moment.steps + 1,
            terminated=bool(terminated),
            truncated=bool(truncated),
        )
        self._observation = self._render()
        info = {"action": self._names[index], "raw_observation": self._moment.raw}
        return StepResult(
            self._observation, reward, self._moment.terminated, self._moment.truncated, info
        )

    def _render(self) -> str:
        moment = self._moment
        assert moment is not None
        if moment.action is None:
            header = f"New episode of {self.task_id}."
        else:
            status = (
                f"The episode is over: {self._domain.ending(moment)}."
                if moment.ended
                else "The episode continues."
            )
            header = (
                f"Step {moment.steps - self._setup_steps}: {self._names[moment.action]} -> reward "
                f"{_number(moment.reward)} (total {_number(moment.total_reward)}). {status}"
            )
        picture = self._domain.picture(self._env.render()) if self._ansi else ""
        return "\n".join(p for p in (header, picture, self._domain.describe(moment)) if p)

    def observe(self) -> str:
        """The current state as a start shows it: no last action, the picture, the description.

        Once the episode has ended, the last observation (it says how the episode ended).

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        moment = self._moment
        if self._observation is None or moment is None:
            raise EpisodeError("no episode is running; call reset() first")
        if moment.ended or moment.action is None:
            return self._observation
        steps = moment.steps - self._setup_steps
        if steps:
            header = (
                f"{self.task_id} after {steps} step(s), total reward "
                f"{_number(moment.total_reward)}. The episode continues."
            )
        else:
            header = f"New episode of {self.task_id}."
        still = dataclasses.replace(moment, previous=None, action=None, reward=0.0)
        picture = self._domain.picture(self._env.render()) if self._ansi else ""
        return "\n".join(p for p in (header, picture, self._domain.describe(still)) if p)

    def mark_episode_start(self) -> None:
        """Stops counting the env steps so far as the agent's (they were a ``Setups`` replay)."""
        if self._moment is not None:
            self._setup_steps = self._moment.steps

    def evaluate(self) -> Evaluation:
        """The env's own verdict (per domain, see the class docs); score is the total reward."""
        moment = self._moment or Moment(None)
        started = self._moment is not None
        success = started and self._domain.success(moment)
        return Evaluation(
            success,
            moment.total_reward,
            {
                "env_id": self.task_id,
                "outcome": self._domain.outcome(moment) if started else None,
                "steps": moment.steps - self._setup_steps,
                "terminated": moment.terminated,
                "truncated": moment.truncated,
            },
        )

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON view: the raw observation, decoded fields, counters and flags."""
        moment = self._moment or Moment(None)
        started = self._moment is not None
        fields = self._domain.fields(moment) if started else {}
        return {
            "env_id": self.task_id,
            "observation": json.loads(json.dumps(moment.raw)),
            "steps": moment.steps - self._setup_steps,
            "last_action": None if moment.action is None else self._names[moment.action],
            "last_action_index": None if moment.action is None else moment.action + self._start,
            "last_reward": moment.reward,
            "total_reward": moment.total_reward,
            "terminated": moment.terminated,
            "truncated": moment.truncated,
            "success": started and self._domain.success(moment),
            **json.loads(json.dumps(fields)),
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state` (common fields plus the domain's)."""
        return state_schema(
            self.task_id, self._domain.family, self._obs_schema, self._domain.field_schemas()
        )

    def save_state(self) -> dict[str, Any]:
        """Reset parameters plus the actions to replay (gymnasium has no snapshot API)."""
        moment = self._moment
        return {
            "bridge": BRIDGE,
            "task_id": self.task_id,
            "options": self.bridge_options(),
            "seed": self._seed,
            "actions": list(self._actions),
            "setup_steps": self._setup_steps,
            "observation": None if moment is None else json.loads(json.dumps(moment.raw)),
            "total_reward": None if moment is None else moment.total_reward,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> GymnasiumEnv:
        """Rebuilds the env by resetting with the saved seed and replaying the saved actions.

        Raises:
            BridgeError: If ``state`` is malformed, or the replay does not reproduce it (the env
                is not deterministic under ``reset(seed)``).
        """
        task_id, options, seed, actions = parse_saved(state)
        setup = state.get("setup_steps", 0)
        if isinstance(setup, bool) or not isinstance(setup, int) or not 0 <= setup <= len(actions):
            raise bad_state(f"'setup_steps' must be an int from 0 to {len(actions)}")
        env = cls(task_id, **options)
        try:
            if seed is None:
                return env
            env.reset(seed=seed)
            for k, index in enumerate(actions):
                if k == setup and setup:
                    env.mark_episode_start()
                if not 0 <= index < env._domain.n:
                    raise bad_state(f"actions[{k}] = {index} is not an action index")
                if env._moment is not None and env._moment.ended:
                    raise bad_state(f"actions[{k}] comes after the episode ended")
                env.step(env._action_of(index))
            if setup and setup == len(actions):
                env.mark_episode_start()
            moment = env._moment
            assert moment is not None
            if moment.raw != state["observation"] or not _same(
                moment.total_reward, state["total_reward"]
            ):
                raise bad_state(
                    f"replaying seed {seed} and {len(actions)} action(s) gives observation "
                    f"{moment.raw!r} and return {moment.total_reward!r}, not the saved "
                    f"{state['observation']!r} and {state['total_reward']!r}; the env is not "
                    "deterministic under reset(seed)"
                )
        except BaseException:
            env.close()
            raise
        return env

    def _action_of(self, index: int) -> Action:
        if self._tools[0].name == "act":
            return Action("act", {"action": self._start + index})
        return Action(self._names[index], {})

    # -- solving ----------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """A plan from the current state (``[]`` when ended or unreachable).

        FrozenLake and CliffWalking: the shortest path; on slippery ground, the moves of the
        policy that best secures the goal (value iteration on gymnasium's transition table),
        along the intended path. Taxi: the shortest plan under the intended dynamics. Slippery
        or rainy dynamics may deviate from a plan; an ``OraclePolicy`` re-plans every step.
        Blackjack: the next move of "hit below 17, stick otherwise" (not guaranteed to win).

        Raises:
            BridgeError: For envs without an oracle.
            EpisodeError: Before :meth:`reset`.
        """
        if self._moment is None:
            raise EpisodeError("no episode is running; call reset() before asking the oracle")
        return [self._action_of(i) for i in self._domain.oracle(self._moment)]

    def stage_candidates(self) -> list[list[Action]]:
        """Start-state perturbations as action lists (for ``Setups``), from the current state.

        Grid worlds and Taxi: a one- and a two-action head start along the oracle's plan, then
        up to three short detours off its path, farthest from the goal first; each is safe under
        all of the env's possible outcomes (it never ends the episode or walks off the cliff).
        Blackjack and other envs: none. Before :meth:`reset`, the env is reset with seed 0.
        """
        if self._moment is None:
            self.reset(seed=0)
        assert self._moment is not None
        return [[self._action_of(i) for i in stage] for stage in self._domain.stages(self._moment)]

    def close(self) -> None:
        """Closes the gymnasium env. Idempotent."""
        if not self._closed:
            self._closed = True
            self._env.close()

    def _check_open(self) -> None:
        if self._closed:
            raise BridgeError("the env is closed; build a new one", bridge=BRIDGE)

    def __repr__(self) -> str:
        extra = "".join(f" {k}={v!r}" for k, v in self.bridge_options().items())
        return f"<GymnasiumEnv task={self.task_id!r}{extra}>"


def _json_safe(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    return isinstance(value, list | tuple) and all(_json_safe(v) for v in value)


def _constructor_defaults(spec: Any) -> dict[str, Any]:
    """The JSON-able keyword defaults of the env's constructor (``{}`` when unreadable)."""
    try:
        parameters = inspect.signature(_loader._creator(spec)).parameters.values()
    except Exception:  # a foreign entry point gymnasium could still make
        return {}
    return {
        p.name: p.default
        for p in parameters
        if p.default is not inspect.Parameter.empty and _json_safe(p.default)
    }


def _number(value: float) -> str:
    return f"{value:g}"


def _same(a: float, b: object) -> bool:
    return isinstance(b, int | float) and math.isclose(a, float(b), rel_tol=0, abs_tol=1e-9)
