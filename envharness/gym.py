"""Any EnvHarness environment as a ``gymnasium.Env`` with text observations and text actions.

:class:`HarnessGymEnv` plays an :class:`~envharness.core.ActionableEnv`, a
:class:`~envharness.harness.HarnessSpec`, spec JSON, a spec dict or a spec file as a Gymnasium
env: observations and actions are ``gymnasium.spaces.Text``; an action is a tool call written as
text (``{"tool": ..., "args": {...}}``, ``{"name": ..., "arguments": ...}``,
``combine(a="10", op="*", b="10")`` or ``combine 10 * 10``); the reward comes only from the
bridges' verifiers. Importing this module registers ``"envharness/Harness-v0"`` (needs the
``gym`` extra)::

    import gymnasium
    import envharness.gym

    env = gymnasium.make("envharness/Harness-v0", spec="accepted/spec.json")
    envs = envharness.gym.async_vector_env(["a.json", "b.json"])  # AsyncVectorEnv, 2 workers

(``gymnasium.make("envharness.gym:envharness/Harness-v0", ...)`` imports this module itself,
e.g. in a fresh worker process.)

:class:`TextActionSession` is the step logic underneath (text → action → step → feedback, the
rollout loop's semantics) without Gymnasium, for trainer adapters; it and :func:`resolve_env`
import without the ``gym`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envharness._gym_session import (
    REWARD_MODES,
    RewardMode,
    TextActionSession,
    TextStep,
    resolve_env,
)
from envharness.errors import DependencyNotInstalled

if TYPE_CHECKING:
    from envharness._gym_env import (
        ACTION_CHARSET,
        MAX_ACTION_CHARS,
        OBSERVATION_CHARSET,
        HarnessGymEnv,
        async_vector_env,
        to_charset,
    )

__all__ = [
    "ACTION_CHARSET",
    "ENV_ID",
    "MAX_ACTION_CHARS",
    "OBSERVATION_CHARSET",
    "REWARD_MODES",
    "HarnessGymEnv",
    "RewardMode",
    "TextActionSession",
    "TextStep",
    "async_vector_env",
    "register_envs",
    "resolve_env",
    "to_charset",
]

ENV_ID = "envharness/Harness-v0"
"""The Gymnasium id :func:`register_envs` registers (kwargs go to :class:`HarnessGymEnv`)."""

_ENTRY_POINT = "envharness._gym_env:HarnessGymEnv"
_GYM_NAMES = frozenset(
    {
        "ACTION_CHARSET",
        "MAX_ACTION_CHARS",
        "OBSERVATION_CHARSET",
        "HarnessGymEnv",
        "async_vector_env",
        "to_charset",
    }
)


def _require_gymnasium(purpose: str) -> None:
    try:
        import gymnasium  # noqa: F401
    except ImportError as e:
        raise DependencyNotInstalled("gymnasium", "gym", purpose=purpose) from e


def register_envs() -> None:
    """Registers :data:`ENV_ID` with Gymnasium (idempotent; called when this module is imported).

    Also usable as a Gymnasium plugin entry point (group ``gymnasium.envs``, value
    ``envharness.gym:register_envs``).

    Raises:
        DependencyNotInstalled: If Gymnasium is not installed (the ``gym`` extra).

    Example:
        >>> import gymnasium
        >>> register_envs()
        >>> ENV_ID in gymnasium.registry
        True
    """
    _require_gymnasium("envharness.gym.register_envs")
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=_ENTRY_POINT)


def __getattr__(name: str) -> Any:
    if name not in _GYM_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _require_gymnasium(f"envharness.gym.{name}")
    from envharness import _gym_env

    value = getattr(_gym_env, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


try:
    register_envs()
except DependencyNotInstalled:  # the session and resolve_env work without Gymnasium
    pass
