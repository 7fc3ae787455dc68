from __future__ import annotations

import hashlib

import pytest

from envharness.errors import RulesError
from envharness.sandbox import ALLOWED_IMPORTS, HOOKS, RulesCodeInfo, check_rules_code

ALL_HOOKS = """
class _Rules:
    def filter_action(self, action, state):
        return action

    def modify_transition(self, action, observation, state):
        return observation

    def filter_observation(self, observation, state):
        return observation
"""


def test_reports_hooks_and_hash():
    info = check_rules_code(ALL_HOOKS)
    assert info == RulesCodeInfo(
        hooks=frozenset(HOOKS), sha256=hashlib.sha256(ALL_HOOKS.encode()).hexdigest()
    )


def test_empty_rules_class_has_no_hooks():
    assert check_rules_code("class _Rules:\n    pass\n").hooks == frozenset()


@pytest.mark.parametrize(
    "code",
    [
        # defaults and *args are fine when the hook still takes exactly its arguments
        "class _Rules:\n    def filter_action(self, action, state=None, extra=1):\n"
        "        return action\n",
        "class _Rules:\n    def modify_transition(self, *args):\n        return args[1]\n",
        "class _Rules:\n    def filter_observation(self, observation, *rest, **kw):\n"
        "        return observation\n",
        "class _Rules:\n    @staticmethod\n    def filter_action(action, state):\n"
        "        return action\n",
        "class _Rules:\n    filter_observation = lambda self, o, s: o\n",
        # allowed imports, dotted and from-imports included, and the __future__ directive
        "from __future__ import annotations\nimport collections.abc\nfrom json import dumps\n"
        "import random as rnd\nclass _Rules:\n    pass\n",
        # helpers, __init__ with defaults, hooks inherited from a class in the same code
        "class Base:\n    def filter_action(self, action, state):\n        return action\n"
        "class _Rules(Base):\n    def __init__(self, limit=3):\n        self.limit = limit\n"
        "    def helper(self):\n        return type(self).__name__\n",
    ],
    ids=["defaults", "varargs", "rest-and-kwargs", "staticmethod", "lambda", "imports", "inherit"],
)
def test_accepts_valid_code(code):
    check_rules_code(code)


def test_inherited_hooks_are_reported():
    code = (
        "class Base:\n    def filter_action(self, action, state):\n        return action\n"
        "class _Rules(Base):\n    def filter_observation(self, o, s):\n        return o\n"
    )
    assert check_rules_code(code).hooks == {"filter_action", "filter_observation"}


@pytest.mark.parametrize(
    ("code", "hook", "match"),
    [
        (
            "class _Rules:\n    def filter_action(self action, state):\n        return action\n",
            None,
            r"line 2: syntax error in `def filter_action\(self action, state\):`",
        ),
        ("x = 1\x00\n", None, "cannot be parsed"),
        ("class Rules:\n    pass\n", None, r"defines no top-level `class _Rules`"),
        ("_Rules = dict\n", None, r"defines no top-level `class _Rules`"),
        (
            "def make():\n    class _Rules:\n        pass\n    return _Rules\n",
            None,
            r"defines no top-level `class _Rules`",
        ),
        (
            "class _Rules:\n    pass\nclass _Rules:\n    pass\n",
            None,
            r"line 3: `class _Rules` is defined again \(first at line 1\)",
        ),
        (
            "class _Rules:\n    def filter_action(self, action):\n        return action\n",
            "filter_action",
            r"line 2: hook `filter_action\(self, action\)` must accept exactly \(self, action, "
            r"state\); define it as `def filter_action\(self, action, state\):`",
        ),
        (
            "class _Rules:\n    def modify_transition(self, action, observation):\n        pass\n",
            "modify_transition",
            r"must accept exactly \(self, action, observation, state\)",
        ),
        (
            "class _Rules:\n    def filter_observation(self, a, b, c):\n        pass\n",
            "filter_observation",
            r"must accept exactly \(self, observation, state\)",
        ),
        (
            "class _Rules:\n    def filter_action(self, action, state, *, strict):\n        pass\n",
            "filter_action",
            r"must accept exactly",
        ),
        (
            "class _Rules:\n    @staticmethod\n    def filter_action(self, action, state):\n"
            "        pass\n",
            "filter_action",
            r"must accept exactly",
        ),
        (
            "class _Rules:\n    async def filter_observation(self, observation, state):\n"
            "        return observation\n",
            "filter_observation",
            r"is `async def`",
        ),
        (
            "import functools\nclass _Rules:\n    @functools.cache\n"
            "    def filter_observation(self, observation, state):\n        return observation\n",
            "filter_observation",
            r"decorated with `@functools.cache`",
        ),
        (
            "class _Rules:\n    filter_action = print\n",
            "filter_action",
            r"must be defined as a method",
        ),
        (
            "class _Rules:\n    def __init__(self, env):\n        self.env = env\n",
            None,
            r"line 2: `_Rules.__init__` must accept no arguments besides self",
        ),
    ],
    ids=[
        "syntax",
        "null-byte",
        "no-rules",
        "rules-not-a-class",
        "rules-not-top-level",
        "rules-twice",
        "too-few-args",
        "modify-transition-arity",
        "filter-observation-arity",
        "required-keyword-only",
        "staticmethod-with-self",
        "async",
        "decorated",
        "assigned-non-function",
        "init-with-args",
    ],
)
def test_rejects_bad_structure(code, hook, match):
    with pytest.raises(RulesError, match=match) as caught:
        check_rules_code(code)
    assert caught.value.hook == hook


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("filter_actions", "did you mean `filter_action`"),
        ("filter_observations", "did you mean `filter_observation`"),
        ("modify_transitions", "did you mean `modify_transition`"),
        ("filteraction", "did you mean `filter_action`"),
        ("modify_observation", "the hooks are filter_action, modify_transition"),
        ("filter_state", "the hooks are filter_action"),
    ],
)
def test_flags_misspelled_hooks(name, suggestion):
    code = f"class _Rules:\n    def {name}(self, a, b):\n        return a\n"
    with pytest.raises(RulesError, match=rf"line 2: method `{name}` looks like a misspelled hook"):
        check_rules_code(code)
    with pytest.raises(RulesError, match=suggestion):
        check_rules_code(code)


def test_unknown_public_and_private_methods_and_attributes_are_fine():
    code = (
        "class _Rules:\n    filter_words = ['spoiler']\n"
        "    def count_steps(self, state):\n        return 1\n"
        "    def _filter_helper(self):\n        return 2\n"
    )
    assert check_rules_code(code).hooks == frozenset()


@pytest.mark.parametrize(
    ("code", "match"),
    [
        ("import os\n", r"line 1: `import os` is not allowed; rules code may import only"),
        ("import os.path\n", r"`import os.path` is not allowed"),
        ("import json, subprocess\n", r"`import subprocess` is not allowed"),
        ("from os import system\n", r"`from os import \.\.\.` is not allowed"),
        ("from os.path import join\n", r"`from os.path import \.\.\.` is not allowed"),
        ("from . import helpers\n", r"relative import `from \. import \.\.\.` is not allowed"),
        ("from ..json import x\n", r"relative import `from \.\.json import \.\.\.`"),
        ("import importlib\n", r"`import importlib` is not allowed"),
        ("import ctypes\n", r"`import ctypes` is not allowed"),
    ],
    ids=[
        "os",
        "dotted",
        "second-of-two",
        "from",
        "from-dotted",
        "relative",
        "relative-up",
        "importlib",
        "ctypes",
    ],
)
def test_rejects_disallowed_imports(code, match):
    with pytest.raises(RulesError, match=match):
        check_rules_code(code + "class _Rules:\n    pass\n")


def test_import_inside_a_hook_names_the_hook():
    code = (
        "class _Rules:\n    def filter_observation(self, o, s):\n        import os\n"
        "        return o\n"
    )
    with pytest.raises(RulesError, match=r"line 3: `import os`") as caught:
        check_rules_code(code)
    assert caught.value.hook == "filter_observation"


def test_allowed_imports_are_the_documented_set():
    assert {"re", "json", "math", "random", "collections", "itertools", "typing"} <= ALLOWED_IMPORTS
    assert not {"os", "sys", "subprocess", "socket", "ctypes", "gc", "importlib"} & ALLOWED_IMPORTS


@pytest.mark.parametrize(
    ("expression", "match"),
    [
        ("().__class__.__base__.__subclasses__()", r"attribute `\.__subclasses__` reaches"),
        ("self.filter_observation.__globals__", r"attribute `\.__globals__`"),
        ("type(self).__mro__", r"attribute `\.__mro__`"),
        ("(lambda: 0).__code__", r"attribute `\.__code__`"),
        ("__builtins__", r"name `__builtins__` is not available"),
        ("__import__('os')", r"name `__import__` is not available"),
        (
            "getattr(o, '__class__')",
            r"`getattr\(\.\.\., '__class__'\)` reaches a private attribute",
        ),
        ("'{0.__class__}'.format(o)", r"a format string reads a private attribute"),
        ("(x for x in ()).gi_frame.f_back", r"attribute `\.f_back` reaches"),
        ("typing.sys.modules", r"attribute `\.sys` reaches the module `sys`"),
        ("random._os.system('id')", r"attribute `\._os` reaches the module `_os`"),
        ("open('/etc/passwd').read()", r"builtin `open` is not available"),
        ("eval('1 + 1')", r"builtin `eval` is not available"),
        ("exec('x = 1')", r"builtin `exec` is not available"),
        ("compile('1', 'f', 'eval')", r"builtin `compile` is not available"),
        ("globals()", r"builtin `globals` is not available"),
        ("breakpoint()", r"builtin `breakpoint` is not available"),
    ],
    ids=[
        "subclasses-walk",
        "globals",
        "mro",
        "code",
        "builtins-name",
        "dunder-import",
        "getattr-string",
        "format-string",
        "frame-walk",
        "module-through-module",
        "private-module-attr",
        "open",
        "eval",
        "exec",
        "compile",
        "globals-builtin",
        "breakpoint",
    ],
)
def test_rejects_reaching_for_internals(expression, match):
    code = (
        "import typing, random\nclass _Rules:\n    def filter_observation(self, o, s):\n"
        f"        return str({expression})\n"
    )
    with pytest.raises(RulesError, match=match) as caught:
        check_rules_code(code)
    assert caught.value.hook == "filter_observation"


def test_safe_dunders_and_own_bindings_are_allowed():
    code = (
        "def open(door):\n    return f'opened {door}'\n"
        "class _Rules:\n    def __init__(self):\n        super().__init__()\n"
        "    def filter_observation(self, o, s):\n"
        "        if __name__ == '_rules':\n            pass\n"
        "        return open(type(self).__name__) + self.__doc__.__class__.__name__[:0]\n"
    )
    with pytest.raises(RulesError, match=r"`\.__class__`"):
        check_rules_code(code)
    check_rules_code(code.replace(".__class__", ""))


def test_several_problems_are_listed_together():
    code = (
        "import os\nimport sys\nclass _Rules:\n    def filter_actions(self, a, s):\n        pass\n"
    )
    with pytest.raises(
        RulesError, match=r"found 3 problems:\n  - line 1: .*\n  - line 2: .*\n  - line 4"
    ) as caught:
        check_rules_code(code)
    assert caught.value.hook is None


def test_rejects_non_str_code():
    with pytest.raises(RulesError, match="expected the rules code as a str, got bytes"):
        check_rules_code(b"class _Rules: pass")  # type: ignore[arg-type]


def test_oversize_code_is_refused_before_it_is_parsed():
    import time

    from envharness.sandbox.check import MAX_RULES_CODE_BYTES, _check_cached

    code = "class _Rules:\n    pass\n" + "x = [" + "1," * (2 << 20) + "]\n"  # 4 MiB
    started = time.perf_counter()
    with pytest.raises(RulesError, match=f"over the limit of {MAX_RULES_CODE_BYTES}"):
        check_rules_code(code)
    assert time.perf_counter() - started < 0.2  # parsing it would take seconds and ~2 GB
    assert _check_cached.cache_info().maxsize == 64  # a small cache, of passing code only


def test_a_parse_bomb_is_a_rules_error():
    deep = "class _Rules:\n    pass\nx = " + "1+" * 30_000 + "1\n"
    with pytest.raises(RulesError, match="nests too deeply"):
        check_rules_code(deep)
    wide = "class _Rules:\n    pass\ny = [" + "x," * 30_000 + "]\n"  # 60 KB, 60,000 nodes
    with pytest.raises(RulesError, match="syntax nodes, over the limit"):
        check_rules_code(wide)
