"""ALFWorld's and TextWorld's parts the bridge uses, imported lazily and tidily, and made fast.

Importing ``alfworld`` creates ``~/.cache/alfworld`` and sets ``$ALFWORLD_DATA`` for good; the
import here points it at a scratch folder and restores the environment after.

TextWorld spends most of a PDDL game's time redoing pure work: fast-downward's PDDL->SAS
translation (twice per reset), parsing the game's grammar (per load), and parsing the same
grammar symbols and logic queries again for every admissible command of every state. Inside
:func:`memoized`, those are memoized by their input text (bounded, process-wide), which makes a
reset about ten times and a step about ten times cheaper without changing a word of the output.
Every TextWorld call goes through :data:`LOCK`, since TextWorld's parsers are module-level
objects.
"""

from __future__ import annotations

import copy
import hashlib
import os
import random
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from types import ModuleType
from typing import Any

from envharness.errors import DependencyNotInstalled

__all__ = ["LOCK", "Kit", "kit", "memoized", "release_lib", "seeded_random"]

LOCK = threading.RLock()
"""Held around every call into TextWorld, fast-downward or ALFWorld's expert."""

_MEMO_SIZE = 8
_MAX_FREE_LIBS = 8
_FREE_LIBS: list[Any] = []
_PARSE_MEMO_SIZE = 4096


@dataclass(frozen=True)
class Kit:
    """The imported pieces.

    Attributes:
        textworld: The ``textworld`` package.
        fast_downward: The ``fast_downward`` package (TextWorld's PDDL planner).
        pddl_logic: ``textworld.envs.pddl.logic`` (where ``GameLogic`` lives).
        textgen: ``textworld.envs.pddl.textgen`` (the grammar that writes the game's text).
        logic: ``textworld.logic`` (facts, rules and their parser).
        pddl_env: TextWorld's ``PddlEnv`` class.
        demangler: ALFWorld's ``AlfredDemangler`` wrapper (``"box 3"`` names).
        expert: ALFWorld's ``HandCodedTWAgent`` class.
        templated_goal: ALFWorld's ``get_templated_task_desc(traj_data)``.
        domain: The text of the wheel's ``alfworld/data/alfred.pddl``.
        grammar: The text of the wheel's ``alfworld/data/alfred.twl2``.
        version: ALFWorld's version.
    """

    textworld: ModuleType
    fast_downward: ModuleType
    pddl_logic: ModuleType
    textgen: ModuleType
    logic: ModuleType
    pddl_env: type
    demangler: type
    expert: type
    templated_goal: Callable[[Mapping[str, Any]], str]
    domain: str
    grammar: str
    version: str


_KIT: Kit | None = None


@contextmanager
def _scratch_alfworld_data() -> Iterator[None]:
    """Points ``$ALFWORLD_DATA`` at a scratch folder while ``alfworld`` is imported."""
    saved = os.environ.get("ALFWORLD_DATA")
    with tempfile.TemporaryDirectory(prefix="envharness-alfworld-") as scratch:
        os.environ["ALFWORLD_DATA"] = scratch
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("ALFWORLD_DATA", None)
            else:
                os.environ["ALFWORLD_DATA"] = saved


def _import() -> Kit:
    try:
        with _scratch_alfworld_data():
            import alfworld
            import fast_downward
            import textworld
            import textworld.envs.pddl.logic as pddl_logic
            import textworld.envs.pddl.textgen as textgen
            import textworld.logic as logic
            from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
            from alfworld.agents.expert import HandCodedTWAgent
            from alfworld.agents.utils.misc import get_templated_task_desc
            from textworld.envs import PddlEnv
    except ImportError as e:
        raise DependencyNotInstalled(
            e.name or "alfworld", "alfworld", purpose="the ALFWorld bridge"
        ) from e
    files = resources.files("alfworld") / "data"
    return Kit(
        textworld=textworld,
        fast_downward=fast_downward,
        pddl_logic=pddl_logic,
        textgen=textgen,
        logic=logic,
        pddl_env=PddlEnv,
        demangler=AlfredDemangler,
        expert=HandCodedTWAgent,
        templated_goal=get_templated_task_desc,
        domain=(files / "alfred.pddl").read_text(),
        grammar=(files / "alfred.twl2").read_text(),
        version=str(getattr(alfworld, "__version__", "?")),
    )


def kit() -> Kit:
    """The imported pieces (imported on first use).

    Raises:
        DependencyNotInstalled: If ``alfworld`` (or TextWorld's PDDL support) is missing.
    """
    global _KIT
    with LOCK:
        if _KIT is None:
            _KIT = _import()
        return _KIT


# -- memoized translation, grammar and parses ----------------------------------------------


class _Memo:
    """A small LRU map from the hash of a call's text arguments to its result."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str, make: Callable[[], Any]) -> Any:
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        value = self.items[key] = make()
        while len(self.items) > self.size:
            self.items.popitem(last=False)
        return value


_TRANSLATIONS = _Memo(_MEMO_SIZE)
_LOGICS = _Memo(_MEMO_SIZE)
_PARSES = _Memo(_PARSE_MEMO_SIZE)


def _key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _memoized_parser(module: ModuleType, parse: Callable[..., Any]) -> Callable[..., Any]:
    """``parse`` (a TatSu parse into TextWorld objects), memoized; callers get a deep copy."""
    name = module.__name__

    def cached(text: Any, **kwargs: Any) -> Any:
        if not isinstance(text, str):
            return parse(text, **kwargs)
        key = _key(name, text, repr(sorted(kwargs.items())))
        return copy.deepcopy(_PARSES.get(key, lambda: parse(text, **kwargs)))

    return cached


def release_lib(lib: Any) -> None:
    """Keeps a closed game's copy of fast-downward's library for the next game.

    Each game needs its own copy (the planner's state is global in the library), and TextWorld
    loads a fresh 30 MB copy per game without ever unloading it; unloading one (``dlclose``) can
    crash the process at exit. So copies are reused: a new game takes a released one first.
    """
    with LOCK:
        if len(_FREE_LIBS) < _MAX_FREE_LIBS:
            _FREE_LIBS.append(lib)


def _copy_context(context: Mapping[str, Any]) -> dict[str, Any]:
    """TextWorld's ``copy_context`` with shallow copies of ``variables`` and ``mapping``.

    The grammar only adds keys to those dicts; their values (entity infos, variables) are never
    changed while text is written, so deep copies, the bulk of a step's cost, are not needed.
    """
    return {
        "state": context["state"],
        "facts": context["facts"],
        "variables": dict(context["variables"]),
        "mapping": dict(context["mapping"]),
        "entity_infos": context["entity_infos"],
    }


@contextmanager
def memoized(parts: Kit) -> Iterator[None]:
    """Memoizes TextWorld's pure, slow steps within the block, which holds :data:`LOCK`.

    Each is a function of its text arguments: fast-downward's ``pddl2sas`` (its result, a task
    and its SAS text, is only read afterwards; it also rewrites ``sys.argv``, which is restored),
    ``GameLogic`` (an instance only gains the same types again), and the TatSu parses of grammar
    symbols and logic queries that writing each state's text repeats (their results are copied).
    Also, contexts are copied shallowly (see :func:`_copy_context`), and a new game reuses a
    released copy of fast-downward's library (see :func:`release_lib`). Outputs are unchanged:
    the tests compare feedback and admissible commands with TextWorld's own, step by step.
    """
    with LOCK:
        originals = [
            (module, name, original, make)
            for module, name, make in _patches(parts)
            if (original := getattr(module, name, None)) is not None
        ]
        for module, name, original, make in originals:
            setattr(module, name, make(original))
        try:
            yield
        finally:
            for module, name, original, _ in reversed(originals):
                setattr(module, name, original)


def _patches(parts: Kit) -> list[tuple[ModuleType, str, Callable[[Any], Any]]]:
    """What :func:`memoized` replaces: ``(module, attribute, original -> replacement)``.

    An attribute a TextWorld version lacks is left alone (that part is then not sped up).
    """

    def translation(translate: Callable[..., Any]) -> Callable[..., Any]:
        def cached(domain: str, problem: str, verbose: bool = False, optimize: bool = False):
            def run() -> Any:
                argv = sys.argv
                try:
                    return translate(domain, problem, verbose=verbose, optimize=optimize)
                finally:
                    sys.argv = argv

            return _TRANSLATIONS.get(_key(domain, problem, str(bool(optimize))), run)

        return cached

    def game_logic(make: Callable[..., Any]) -> Callable[..., Any]:
        def cached(domain: str, grammar: str) -> Any:
            return _LOGICS.get(_key(domain, grammar), lambda: make(domain, grammar))

        return cached

    def load_lib(load: Callable[[], Any]) -> Callable[[], Any]:
        return lambda: _FREE_LIBS.pop() if _FREE_LIBS else load()

    return [
        (parts.fast_downward, "pddl2sas", translation),
        (parts.fast_downward, "load_lib", load_lib),
        (parts.pddl_logic, "GameLogic", game_logic),
        (parts.textgen, "_parse_and_convert", lambda f: _memoized_parser(parts.textgen, f)),
        (parts.logic, "_parse_and_convert", lambda f: _memoized_parser(parts.logic, f)),
        (parts.textgen, "copy_context", lambda _: _copy_context),
    ]


@contextmanager
def seeded_random(seed: int) -> Iterator[None]:
    """Seeds the global ``random`` (which ALFWorld's expert draws from), restoring it after."""
    with LOCK:
        saved = random.getstate()
        random.seed(seed)
        try:
            yield
        finally:
            random.setstate(saved)
