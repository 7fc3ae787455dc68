"""``BrowserEnv``: any web task as an env, played in a real (headless) Chromium.

A task is a start URL, an instruction and a verifier: a function that reads the current page and
returns an :class:`~envharness.core.Evaluation`. The agent browses with six tools: ``goto(url)``,
``click(ref)``, ``type(ref, text, submit)``, ``select(ref, option)``, ``back()`` and
``read_page()``. Every observation is the compact text view of the page
(:mod:`~envharness.bridges.webshop.page_text`), whose ``[n]`` numbers are the ``ref`` arguments.

The episode terminates when the ``done`` predicate holds for the page (by default: when the
verifier says success); the reward is then the verifier's score, else 0. Each episode gets a
fresh browser context (no cookies, storage or history from the last one), so ``reset`` replays
exactly and ``save_state`` is the reset parameters plus the actions, replayed by ``from_state``.

Only the hosts in ``allowed_hosts`` (default ``127.0.0.1`` and ``localhost``) can be reached:
``goto`` refuses other URLs and the browser aborts any other request, so nothing is downloaded.

Threads: Playwright's sync API is bound to one thread, so one browser per process lives on a
thread of its own (:mod:`~envharness.bridges.webshop.driver`) and every call goes through it. An
env can be used from any thread, envs in several threads share the browser and take turns.

Example:
    >>> from envharness.bridges.webshop.server import shared_server
    >>> from envharness.core import Action, Evaluation
    >>> def on_results(page):
    ...     found = "/search" in page.url
    ...     return Evaluation(found, float(found), {"url": page.url})
    >>> env = BrowserEnv(shared_server().url, "Search for tea.", on_results)  # doctest: +SKIP
    >>> observation, info = env.reset()  # doctest: +SKIP
    >>> env.step(Action("type", {"ref": 1, "text": "tea", "submit": True})).reward  # doctest: +SKIP
    1.0
"""

from __future__ import annotations

import importlib
import json
import os
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_path,
    check_positive_int,
    check_saved_state,
    state_error,
)
from envharness.bridges.webshop.driver import (
    BrowserThread,
    browser_thread,
    chromium_path,
    playwright_api,
)
from envharness.bridges.webshop.page_text import PageSnapshot, display_url
from envharness.bridges.webshop.session import PageSession, check_url
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import BridgeError, EpisodeError

__all__ = ["BROWSER_TOOLS", "BrowserEnv", "Verifier"]

Verifier = Callable[[PageSnapshot], Evaluation]
"""Reads the current page and judges the episode."""

_DEFAULT_MAX_STEPS = 30
_DEFAULT_TIMEOUT_MS = 10_000
_DEFAULT_HOSTS = ("127.0.0.1", "localhost")
_REF = {
    "type": "integer",
    "minimum": 1,
    "description": "The element's number, as shown in brackets in the page view: [3] -> 3.",
}
BROWSER_TOOLS = (
    ToolSpec(
        "goto",
        "Open a URL: a path on the site such as '/search?q=tea', or a full http(s) URL.",
        {
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The URL or path to open."}},
            "required": ["url"],
        },
    ),
    ToolSpec(
        "click",
        "Click a link or button of the page by its reference number.",
        {"type": "object", "properties": {"ref": _REF}, "required": ["ref"]},
    ),
    ToolSpec(
        "type",
        "Replace the text of a text box with `text`; with submit=true, press Enter afterwards.",
        {
            "type": "object",
            "properties": {
                "ref": _REF,
                "text": {"type": "string", "description": "The text to type."},
                "submit": {
                    "type": "boolean",
                    "description": "Press Enter after typing (e.g. to run a search).",
                },
            },
            "required": ["ref", "text"],
        },
    ),
    ToolSpec(
        "select",
        "Choose an option of a drop-down (select) element by its label.",
        {
            "type": "object",
            "properties": {
                "ref": _REF,
                "option": {"type": "string", "description": "The option's label."},
            },
            "required": ["ref", "option"],
        },
    ),
    ToolSpec("back", "Go back to the previous page.", {"type": "object", "properties": {}}),
    ToolSpec(
        "read_page",
        "Show the current page again (its text and numbered elements).",
        {"type": "object", "properties": {}},
    ),
)
"""The browser's tools."""

_ELEMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ref": {"type": "integer"},
        "role": {"type": "string"},
        "name": {"type": "string"},
        "value": {"type": "string", "nullable": True},
        "selected": {"type": "boolean"},
        "disabled": {"type": "boolean"},
        "options": {"type": "array", "items": {"type": "string"}},
        "href": {"type": "string", "nullable": True},
    },
}
_STATE_FIELDS: dict[str, Any] = {
    "url": {
        "type": "string",
        "description": "The page's URL; on the start URL's site, only its path and query.",
    },
    "title": {"type": "string", "description": "The page's title."},
    "elements": {
        "type": "array",
        "items": _ELEMENT_SCHEMA,
        "description": "What can be acted on, by reference number: role, name, value, ...",
    },
    "text": {"type": "string", "description": "The page's text lines (elements left out)."},
    "steps": {
        "type": "integer",
        "description": "Agent actions this episode (not setup steps), invalid ones too.",
    },
    "last_action": {"type": "string", "description": "The last action, e.g. 'click(ref=3)'."},
    "done": {"type": "boolean", "description": "The episode has ended."},
}
_SAVED_KEYS = ("bridge", "task_id", "options", "started", "actions", "observation")


def _callable_path(fn: Callable[..., Any]) -> str | None:
    """``"module:qualname"`` when that path imports back to ``fn``, else None."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not name or "<" in name:
        return None
    try:
        return f"{module}:{name}" if _import_path(f"{module}:{name}") is fn else None
    except (ImportError, AttributeError, BridgeError):
        return None


def _import_path(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise BridgeError(f"expected a 'module:function' path, got {path!r}")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def _resolve(what: str, given: Verifier | str) -> tuple[Verifier, str | None]:
    """The function ``given`` names (a callable, or a ``module:function`` path) and its path."""
    if isinstance(given, str):
        try:
            fn = _import_path(given)
        except (ImportError, AttributeError) as e:
            raise BridgeError(f"{what}: cannot import {given!r}: {e}", bridge="browser") from e
        path: str | None = given
    else:
        fn, path = given, None
    if not callable(fn):
        raise BridgeError(f"{what}: expected a callable or a 'module:function' path, got {fn!r}")
    return fn, path if path is not None else _callable_path(fn)


class BrowserEnv(ActionableEnv):
    """A web task: a start URL, an instruction and a verifier, played in headless Chromium.

    Args:
        url: The start URL (its host must be in ``allowed_hosts``).
        instruction: The task, in words, for the agent.
        verifier: ``verifier(page) -> Evaluation`` reading a
            :class:`~envharness.bridges.webshop.page_text.PageSnapshot`, or its
            ``"module:function"`` path (needed for ``save_state`` when it is not a module-level
            function).
        task_id: A name for the task.
        done: ``done(page) -> bool``, ends the episode (default: when the verifier says success);
            a callable or a ``"module:function"`` path.
        max_steps: The agent's step budget (the rollout loop enforces it).
        allowed_hosts: The hosts the browser may reach.
        chromium: The Chromium executable (default: ``$ENVHARNESS_CHROMIUM``, else
            ``/usr/bin/chromium``).
        timeout_ms: The timeout of each browser action and page load.

    Raises:
        DependencyNotInstalled: If playwright is missing (extra ``webshop``).
        BridgeError: If Chromium is missing (install it with ``apt-get install -y chromium``),
            or an argument is bad.
    """

    bridge_name: ClassVar[str] = "browser"

    def __init__(
        self,
        url: str,
        instruction: str,
        verifier: Verifier | str,
        *,
        task_id: str = "browser",
        done: Callable[[PageSnapshot], bool] | str | None = None,
        max_steps: int = _DEFAULT_MAX_STEPS,
        allowed_hosts: Sequence[str] = _DEFAULT_HOSTS,
        chromium: str | os.PathLike[str] | None = None,
        timeout_ms: int = _DEFAULT_TIMEOUT_MS,
    ) -> None:
        name = self.bridge_name
        if isinstance(allowed_hosts, str) or not all(
            isinstance(h, str) and h for h in allowed_hosts
        ):
            raise BridgeError(
                f"allowed_hosts: expected a list of host names, got {allowed_hosts!r}", bridge=name
            )
        if not isinstance(url, str) or check_url(url, tuple(allowed_hosts)) is not None:
            problem = check_url(url, tuple(allowed_hosts)) if isinstance(url, str) else "not a str"
            raise BridgeError(f"url: cannot start at {url!r}: {problem}", bridge=name)
        if not isinstance(instruction, str) or not instruction.strip():
            raise BridgeError("instruction: expected a non-empty str", bridge=name)
        self._chromium_option = check_path("chromium", chromium, bridge=name)
        self.max_steps = check_positive_int("max_steps", max_steps, bridge=name)
        self._timeout_ms = check_positive_int("timeout_ms", timeout_ms, bridge=name)
        self._verifier, self._verifier_path = _resolve("verifier", verifier)
        self._done, self._done_path = (None, None) if done is None else _resolve("done", done)
        playwright_api()  # DependencyNotInstalled now, not at the first reset
        self._chromium = chromium_path(self._chromium_option)
        self.task_id = task_id
        self.instruction = instruction
        self.start_url = url
        self.allowed_hosts = tuple(allowed_hosts)
        self._session = PageSession(self.allowed_hosts, self._timeout_ms)
        self._thread: BrowserThread | None = None
        self._snapshot: PageSnapshot | None = None
        self._observation: str | None = None
        self._actions: list[Action] = []
        self._setup_actions = 0  # actions before mark_episode_start (a Setups replay)
        self._started = False
        self._terminated = False

    # -- the episode ----------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``goto``, ``click``, ``type``, ``select``, ``back``, ``read_page``."""
        return list(BROWSER_TOOLS)

    def _browser_call(self, fn: Callable[..., Any], *args: Any) -> Any:
        thread = self._thread
        if thread is None or thread is not browser_thread():
            raise EpisodeError("no episode is running in this process; call reset() first")
        return thread.call(fn, *args)

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Opens the start URL in a fresh browser context; the site decides, ``seed`` is unused.

        Raises:
            BridgeError: If Chromium cannot be launched or the start page cannot be loaded.
        """
        thread = browser_thread()
        if thread is not self._thread:
            if self._thread is not None:  # forked: the old tab belongs to the parent's browser
                self._session = PageSession(self.allowed_hosts, self._timeout_ms)
            # An env dropped without close() gives its browser context back when collected.
            self._thread = thread
            finalizer = weakref.finalize(self, thread.post, self._session.close)
            finalizer.atexit = False  # at exit the browser thread closes everything itself
        api = playwright_api()
        try:
            snapshot = thread.call(_open_session, self._session, self._chromium, self.start_url)
        except api.Error as e:
            raise BridgeError(
                f"cannot open {self.start_url}: {str(e).strip().splitlines()[0]}",
                bridge=self.bridge_name,
            ) from e
        self._actions = []
        self._setup_actions = 0
        self._started = True
        self._terminated = False
        self._set_page(snapshot)
        self._observation = self._view()
        return self._observation, {"url": self._display(snapshot.url)}

    def step(self, action: Action) -> StepResult:
        """Carries out one browser action; the observation is the page view afterwards.

        Raises:
            InvalidActionError: If the action does not match the tool schemas.
            EpisodeError: Before :meth:`reset`, after :meth:`close`, or after the episode ended.
        """
        action = self.check_action(action)
        if not self._started:
            raise EpisodeError("no episode is running; call reset() first")
        if not self._session.is_open:
            raise EpisodeError("the env was closed; call reset() to play again")
        if self._terminated:
            raise EpisodeError("the episode is over; call reset()")
        return self._apply(action)

    def _apply(self, action: Action) -> StepResult:
        api = playwright_api()
        try:
            outcome = self._browser_call(
                self._session.perform, action.tool, action.args, self.start_url
            )
        except api.Error as e:  # the page cannot be read any more (e.g. its renderer crashed)
            raise BridgeError(
                f"the browser failed during {action}: {str(e).strip().splitlines()[0]}; call "
                "reset() to start over",
                bridge=self.bridge_name,
            ) from e
        self._actions.append(action)
        self._set_page(outcome.snapshot)
        info: dict[str, Any] = {"url": self._display(outcome.snapshot.url)}
        if outcome.invalid is not None:
            info["invalid_action"] = outcome.invalid
            head = f"Cannot do {action}: {outcome.invalid}."
        else:
            head = outcome.feedback
        self._observation = f"{head}\n\n{self._view()}" if head else self._view()
        reward = 0.0
        if self._is_done(outcome.snapshot):
            self._terminated = True
            reward = float(self.evaluate().score)
        return StepResult(self._observation, reward, self._terminated, False, info)

    def _set_page(self, snapshot: PageSnapshot) -> None:
        """Records the page the episode is on (subclasses read more from it)."""
        self._snapshot = snapshot

    def _is_done(self, snapshot: PageSnapshot) -> bool:
        if self._done is not None:
            done = self._done(snapshot)
            return done.success if isinstance(done, Evaluation) else bool(done)
        return bool(self._verifier(snapshot).success)

    def _display(self, url: str) -> str:
        return display_url(url, self.start_url)

    def _view(self) -> str:
        assert self._snapshot is not None
        return self._snapshot.view(self.start_url)

    def observe(self) -> str:
        """The page the browser is on, as a start shows it (the view, without the last feedback).

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        if self._observation is None:
            raise EpisodeError("no episode is running; call reset() first")
        return self._view()

    def mark_episode_start(self) -> None:
        """Stops counting the actions so far as the agent's (they were a ``Setups`` replay)."""
        self._setup_actions = len(self._actions)

    def evaluate(self) -> Evaluation:
        """The verifier's verdict on the current page (a failure before :meth:`reset`)."""
        if self._snapshot is None:
            return Evaluation(False, 0.0, {"started": False})
        return self._verifier(self._snapshot)

    # -- state ----------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view: URL, title, elements, page text, steps, last action, done."""
        page = self._snapshot
        last = str(self._actions[-1]) if len(self._actions) > self._setup_actions else ""
        return {
            "url": self._display(page.url) if page else "",
            "title": page.title if page else "",
            "elements": [e.to_dict() for e in page.elements] if page else [],
            "text": page.text if page else "",
            "steps": len(self._actions) - self._setup_actions,
            "last_action": last,
            "done": self._terminated,
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state`, with a description per field."""
        return {
            "type": "object",
            "description": "A web page in a browser: where it is, what it shows, what was done.",
            "properties": json.loads(json.dumps(_STATE_FIELDS)),
            "required": list(_STATE_FIELDS),
        }

    def bridge_options(self) -> dict[str, Any]:
        """The options that rebuild this env (JSON-able)."""
        options: dict[str, Any] = {}
        if self.max_steps != _DEFAULT_MAX_STEPS:
            options["max_steps"] = self.max_steps
        if self._chromium_option is not None:
            options["chromium"] = self._chromium_option
        if self._timeout_ms != _DEFAULT_TIMEOUT_MS:
            options["timeout_ms"] = self._timeout_ms
        return options

    def _saved(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "started": self._started,
            "actions": [a.to_dict() for a in self._actions],
            "setup_actions": self._setup_actions,
            "observation": self._observation,
        }

    def save_state(self) -> dict[str, Any]:
        """The task (URL, instruction, verifier path), options and actions since reset.

        Raises:
            BridgeError: If the verifier or ``done`` was given as a callable that cannot be
                imported back by its ``module:function`` path (a lambda, a closure).
        """
        if self._verifier_path is None or (self._done is not None and self._done_path is None):
            raise BridgeError(
                "save_state needs the verifier (and done) as importable functions: pass a "
                "module-level function or its 'module:function' path",
                bridge=self.bridge_name,
            )
        return {
            "bridge": self.bridge_name,
            "url": self.start_url,
            "instruction": self.instruction,
            "verifier": self._verifier_path,
            "done": self._done_path,
            "allowed_hosts": list(self.allowed_hosts),
            "options": self.bridge_options(),
            **self._saved(),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> BrowserEnv:
        """Rebuilds the env :meth:`save_state` recorded, by reset and replay.

        Raises:
            BridgeError: If ``state`` is malformed or the replay ends elsewhere.
        """
        _check_saved(state, cls.bridge_name, ("url", "instruction", "verifier", "allowed_hosts"))
        env = cls(
            state["url"],
            state["instruction"],
            state["verifier"],
            task_id=state["task_id"],
            done=state.get("done"),
            allowed_hosts=state["allowed_hosts"],
            **state["options"],
        )
        env._replay(state)
        return env

    def _replay(self, state: Mapping[str, Any]) -> None:
        """Resets and plays the saved actions; checks that it ends on the saved observation."""
        actions = state["actions"]
        setup = state.get("setup_actions", 0)
        if isinstance(setup, bool) or not isinstance(setup, int) or not 0 <= setup <= len(actions):
            raise _bad_state(
                self.bridge_name, f"'setup_actions' must be an int from 0 to {len(actions)}"
            )
        if not state["started"]:
            check_nothing_recorded(state, ("actions",), bridge=self.bridge_name)
            return
        self.reset()
        for index, raw in enumerate(actions):
            if index == setup and setup:
                self.mark_episode_start()
            if self._terminated:
                raise _bad_state(self.bridge_name, f"the episode ended before actions[{index}]")
            self._apply(self.check_action(raw))
        if setup and setup == len(actions):
            self.mark_episode_start()
        if state["observation"] is not None and self._observation != state["observation"]:
            raise _bad_state(
                self.bridge_name,
                "replaying the actions does not reproduce the recorded observation (did the "
                "site change?)",
            )

    def close(self) -> None:
        """Closes the browser context; the last page stays readable. Idempotent."""
        thread = self._thread
        if thread is not None and thread is browser_thread() and self._session.is_open:
            thread.call(self._session.close)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} task={self.task_id!r} url={self.start_url!r}>"


def _open_session(session: PageSession, executable: str, url: str) -> PageSnapshot:
    """Opens ``session`` on ``url`` (on the browser thread; holds no reference to the env)."""
    return session.open(browser_thread().browser(executable), url)


def _bad_state(bridge: str, problem: str) -> BridgeError:
    return state_error(problem, bridge=bridge)


def _check_saved(
    state: Any, bridge: str, extra: Sequence[str] = (), options: Sequence[str] | None = None
) -> Mapping[str, Any]:
    """Checks the shape of a saved state (keys, ``bridge``, ``options``, ``actions``).

    ``options`` are the option names the state may record (any when ``None``).
    """
    state = check_saved_state(state, bridge=bridge, keys=(*_SAVED_KEYS, *extra), options=options)
    actions = state["actions"]
    if not isinstance(actions, list) or not all(
        isinstance(a, Mapping) and isinstance(a.get("tool"), str) for a in actions
    ):
        raise _bad_state(bridge, "'actions' must be a list of {'tool', 'args'} dicts")
    return state
