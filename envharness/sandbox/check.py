"""``check_rules_code``: the static check of rules code, before any of it runs.

The check parses the code and nothing else: it finds ``class _Rules``, checks each hook's name and
signature, the imports, and flags code that reaches for interpreter internals (dunder attributes,
frames, modules hidden in other modules, removed builtins). It is a lint that gives the writer of
the code an early, precise error; the wall is the sandbox (:mod:`envharness.sandbox.kernel`).
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
import re
from dataclasses import dataclass
from typing import NamedTuple

from envharness._pyparse import parse
from envharness.errors import RulesError
from envharness.sandbox.policy import ALLOWED_IMPORTS, HOOK_PARAMS, HOOKS, REMOVED_BUILTINS

__all__ = [
    "MAX_AST_NODES",
    "MAX_RULES_CODE_BYTES",
    "RulesCodeInfo",
    "check_rules_code",
    "describe_rules_code",
    "rules_sha256",
]

MAX_RULES_CODE_BYTES = 64 * 1024
"""The largest rules code the check parses (UTF-8 bytes); checked before parsing, which costs
the host ~0.5 KB of memory per byte of code."""

MAX_AST_NODES = 50_000
"""The most syntax-tree nodes rules code may have."""

_SAFE_DUNDERS = frozenset(
    {"__init__", "__name__", "__qualname__", "__doc__", "__module__", "__post_init__"}
)
_INTERNAL_ATTRS = frozenset(
    {
        "ag_code", "ag_frame", "co_code", "cr_code", "cr_frame", "f_back", "f_builtins",
        "f_code", "f_globals", "f_locals", "func_globals", "gi_code", "gi_frame", "tb_frame",
        "tb_next",
    }
)  # fmt: skip
_MODULE_ATTRS = frozenset(
    {
        "_os", "_posixsubprocess", "_sys", "builtins", "ctypes", "gc", "importlib", "inspect",
        "os", "posix", "signal", "socket", "subprocess", "sys",
    }
)  # fmt: skip
_ATTR_FUNCTIONS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
_FORMAT_DUNDER = re.compile(r"\{[^{}]*(\.|\[)_")
_HOOK_PREFIXES = ("filter_", "modify_")
_ALLOWED_LISTING = ", ".join(sorted(ALLOWED_IMPORTS))


@dataclass(frozen=True)
class RulesCodeInfo:
    """What the static check learned about rules code.

    Attributes:
        hooks: The hooks ``_Rules`` defines (a subset of ``HOOKS``).
        sha256: The hex SHA-256 of the code text (UTF-8), stored with specs.
    """

    hooks: frozenset[str]
    sha256: str


class _Problem(NamedTuple):
    line: int
    hook: str | None
    message: str


def rules_sha256(code: str) -> str:
    """The hex SHA-256 that identifies rules code (stored with it in specs)."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def describe_rules_code(code: str) -> RulesCodeInfo:
    """Best-effort hooks and hash of code that was not checked (test seams; never raises)."""
    try:
        tree = parse(code)
    except (SyntaxError, ValueError):
        return RulesCodeInfo(frozenset(), rules_sha256(code))
    classes = _top_level_classes(tree)
    rules = classes.get("_Rules")
    hooks = _methods(rules, classes).keys() & set(HOOKS) if rules else set()
    return RulesCodeInfo(frozenset(hooks), rules_sha256(code))


def check_rules_code(code: str) -> RulesCodeInfo:
    r"""Checks rules code statically, without running any of it.

    The code must parse; define a top-level ``class _Rules`` that ``_Rules()`` can create; give
    each hook it defines the right signature (``filter_action(self, action, state)``,
    ``modify_transition(self, action, observation, state)``,
    ``filter_observation(self, observation, state)``; defaults and ``*args`` only if the hook
    still accepts exactly those); import only from :data:`ALLOWED_IMPORTS`; and stay away from
    interpreter internals (``__subclasses__``, ``__globals__``, frames, ``open``, ``eval`` ...).
    Methods named ``filter_*``/``modify_*`` that are not hooks are reported as likely typos.

    Args:
        code: The rules code.

    Returns:
        The hooks found and the code's hash.

    Raises:
        RulesError: Naming every problem with its line number and how to fix it; ``hook`` is set
            when all problems concern one hook.

    Example:
        >>> check_rules_code("class _Rules:\n    def filter_action(self, action, state):\n"
        ...                  "        return action\n").hooks
        frozenset({'filter_action'})
    """
    if not isinstance(code, str):
        raise RulesError(f"expected the rules code as a str, got {type(code).__name__}")
    _check_size(code)
    return _check_cached(code)


def _check_size(code: str) -> None:
    # len(code) bounds the UTF-8 size from below: a huge str is refused before it is encoded.
    size = len(code) if len(code) > MAX_RULES_CODE_BYTES else len(code.encode("utf-8", "replace"))
    if size > MAX_RULES_CODE_BYTES:
        raise RulesError(
            f"the code is {size} bytes, over the limit of {MAX_RULES_CODE_BYTES} "
            f"({MAX_RULES_CODE_BYTES >> 10} KiB); rules code should be a few hooks, not data"
        )


@functools.lru_cache(maxsize=64)
def _check_cached(code: str) -> RulesCodeInfo:
    """The check itself, memoized: a rig builds the same rules for every rollout it plays.

    Only passing code is cached (a failing check raises, and exceptions are not memoized); the
    result is a frozen dataclass, safe to share.
    """
    try:
        tree = parse(code, filename="<rules>")
    except SyntaxError as e:
        if e.lineno is None:  # e.g. null bytes
            raise RulesError(f"the code cannot be parsed: {e.msg}") from None
        text = (e.text or "").strip()
        where = f" in `{text}`" if text else ""
        fence = (
            "; the code contains a markdown fence (```): send the bare Python source, "
            "without the ``` lines"
            if "```" in code
            else "; fix the code so that it parses"
        )
        raise RulesError(f"line {e.lineno}: syntax error{where}: {e.msg}{fence}") from None
    except ValueError as e:  # null bytes, on older Pythons
        raise RulesError(f"the code cannot be parsed: {e}") from None
    except (RecursionError, MemoryError):
        raise RulesError(
            "the code nests too deeply to parse (an expression or block nested thousands of "
            "levels); write it flat"
        ) from None
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_AST_NODES:
        raise RulesError(
            f"the code has {nodes} syntax nodes, over the limit of {MAX_AST_NODES}; rules code "
            "should be a few hooks, not data"
        )

    problems: list[_Problem] = []
    classes = _top_level_classes(tree)
    rules = _find_rules_class(tree, problems)
    spans = _hook_spans(rules, classes) if rules else []
    _lint(tree, spans, problems)
    hooks: set[str] = set()
    if rules is not None:
        hooks = _check_methods(rules, classes, problems)
    if problems:
        raise _error(problems)
    return RulesCodeInfo(frozenset(hooks), rules_sha256(code))


def _error(problems: list[_Problem]) -> RulesError:
    problems = sorted(set(problems), key=lambda p: (p.line, p.message))
    hook_names = {p.hook for p in problems}
    hook = hook_names.pop() if len(hook_names) == 1 else None
    if len(problems) == 1:
        return RulesError(problems[0].message, hook=hook)
    listing = "\n".join(f"  - {p.message}" for p in problems)
    return RulesError(f"found {len(problems)} problems:\n{listing}", hook=hook)


# -- class _Rules and its hooks --------------------------------------------------------------------


def _top_level_classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def _find_rules_class(tree: ast.Module, problems: list[_Problem]) -> ast.ClassDef | None:
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_Rules"]
    if not found:
        problems.append(
            _Problem(
                1,
                None,
                "defines no top-level `class _Rules`; define one with the hooks you need, e.g. "
                "`class _Rules:` containing `def filter_action(self, action, state): "
                "return action`",
            )
        )
        return None
    for again in found[1:]:
        problems.append(
            _Problem(
                again.lineno,
                None,
                f"line {again.lineno}: `class _Rules` is defined again (first at line "
                f"{found[0].lineno}); keep a single definition",
            )
        )
    return found[-1]


_MethodNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Assign


def _methods(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> dict[str, _MethodNode]:
    """Methods of ``cls``, including those inherited from classes in the same code."""
    found: dict[str, _MethodNode] = {}
    seen: set[str] = set()

    def collect(node: ast.ClassDef) -> None:
        if node.name in seen:
            return
        seen.add(node.name)
        for base in reversed(node.bases):
            if isinstance(base, ast.Name) and base.id in classes:
                collect(classes[base.id])
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                found[item.name] = item
            elif isinstance(item, ast.Assign):
                for target in item.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = item

    collect(cls)
    return found


def _hook_spans(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[tuple[int, int, str]]:
    spans = []
    for name, node in _methods(cls, classes).items():
        if name in HOOKS:
            spans.append((node.lineno, node.end_lineno or node.lineno, name))
    return spans


def _accepts(args: ast.arguments, count: int) -> bool:
    """Whether a signature can be called with exactly ``count`` positional arguments."""
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    if any(default is None for default in args.kw_defaults):
        return False  # a keyword-only parameter without a default
    return required <= count and (count <= positional or args.vararg is not None)


def _check_methods(
    cls: ast.ClassDef, classes: dict[str, ast.ClassDef], problems: list[_Problem]
) -> set[str]:
    hooks: set[str] = set()
    for name, node in _methods(cls, classes).items():
        line = node.lineno
        if name in HOOKS:
            hooks.add(name)
            params = ", ".join(("self", *HOOK_PARAMS[name]))
            fix = f"define it as `def {name}({params}):`"
            problem = _hook_signature_problem(node, name, params, fix)
            if problem:
                problems.append(_Problem(line, name, f"line {line}: {problem}"))
        elif name == "__init__" and isinstance(node, ast.FunctionDef):
            if not _accepts(node.args, 1):
                problems.append(
                    _Problem(
                        line,
                        None,
                        f"line {line}: `_Rules.__init__` must accept no arguments besides self "
                        "(the sandbox creates `_Rules()` once per episode); give extra "
                        "parameters defaults or drop them",
                    )
                )
        elif not name.startswith("_") and _is_function(node):
            close = difflib.get_close_matches(name, HOOKS, n=1, cutoff=0.8)
            if name.startswith(_HOOK_PREFIXES) or close:
                guess = f"did you mean `{close[0]}`? " if close else ""
                problems.append(
                    _Problem(
                        line,
                        None,
                        f"line {line}: method `{name}` looks like a misspelled hook and would "
                        f"never be called ({guess}the hooks are {', '.join(HOOKS)}); rename it, "
                        "or name a helper without the filter_/modify_ prefix",
                    )
                )
    return hooks


def _is_function(node: _MethodNode) -> bool:
    return not isinstance(node, ast.Assign) or isinstance(node.value, ast.Lambda)


def _hook_signature_problem(node: _MethodNode, name: str, params: str, fix: str) -> str | None:
    if isinstance(node, ast.AsyncFunctionDef):
        return f"hook `{name}` is `async def`; hooks must be plain methods: {fix}"
    if isinstance(node, ast.Assign):
        if not isinstance(node.value, ast.Lambda):
            return f"hook `{name}` must be defined as a method: {fix}"
        args = node.value.args
        count = 1 + len(HOOK_PARAMS[name])
    else:
        count = 1 + len(HOOK_PARAMS[name])
        for decorator in node.decorator_list:
            label = ast.unparse(decorator)
            if label == "staticmethod":
                count -= 1
            elif label != "classmethod":
                return f"hook `{name}` is decorated with `@{label}`; hooks must be plain methods"
        args = node.args
    if _accepts(args, count):
        return None
    given = ast.unparse(args)
    return f"hook `{name}({given})` must accept exactly ({params}); {fix}"


# -- imports and reaching for internals ------------------------------------------------------------


def _bound_names(tree: ast.Module) -> set[str]:
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return bound


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _lint(tree: ast.Module, spans: list[tuple[int, int, str]], problems: list[_Problem]) -> None:
    bound = _bound_names(tree)

    def report(node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 1)
        hook = next((h for start, end, h in spans if start <= line <= end), None)
        problems.append(_Problem(line, hook, f"line {line}: {message}"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in ALLOWED_IMPORTS:
                    report(
                        node,
                        f"`import {alias.name}` is not allowed; rules code may import only "
                        f"{_ALLOWED_LISTING} (hooks get the action and state as arguments)",
                    )
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                report(
                    node,
                    f"relative import `from {'.' * node.level}{module} import ...` is not "
                    "allowed; rules code is a single file, import from the allowed modules only",
                )
            elif module.split(".")[0] not in ALLOWED_IMPORTS:
                report(
                    node,
                    f"`from {module} import ...` is not allowed; rules code may import only "
                    f"{_ALLOWED_LISTING}",
                )
        elif isinstance(node, ast.Attribute):
            attr = node.attr
            if (_is_dunder(attr) and attr not in _SAFE_DUNDERS) or attr in _INTERNAL_ATTRS:
                report(
                    node,
                    f"attribute `.{attr}` reaches interpreter internals and is not allowed in "
                    "rules code; use ordinary attributes and methods",
                )
            elif attr in _MODULE_ATTRS:
                report(
                    node,
                    f"attribute `.{attr}` reaches the module `{attr}` through another object; "
                    "rules code may use only the public functions of the allowed modules",
                )
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if _is_dunder(node.id) and node.id not in _SAFE_DUNDERS:
                report(node, f"name `{node.id}` is not available in rules code")
            elif node.id in REMOVED_BUILTINS and node.id not in bound:
                report(
                    node,
                    f"builtin `{node.id}` is not available in rules code (no files, no dynamic "
                    "code, no interpreter internals); remove it",
                )
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Name)
                and func.id in _ATTR_FUNCTIONS
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and node.args[1].value.startswith("_")
            ):
                report(
                    node,
                    f"`{func.id}(..., {node.args[1].value!r})` reaches a private attribute; "
                    "rules code may use only public attributes",
                )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _FORMAT_DUNDER.search(node.value):
                report(
                    node,
                    "a format string reads a private attribute (like `{0.__class__}`); "
                    "format only plain values",
                )
