"""Install and test specs per (repository, version): SWE-bench's own, with our adaptations on top.

The base spec comes from the official ``swebench`` package (``MAP_REPO_VERSION_TO_SPECS``; its
4.x releases carry the tables), the test directives from its ``get_test_directives`` and the log
parser from its ``MAP_REPO_TO_PARSER``. ``specs.json`` (beside the dataset, or ``specs=``) is
layered on top, per ``specs[repo][version]``:

- ``swebench_spec``: the whole base spec, used only for a repository SWE-bench does not know;
- ``install``, ``pre_install``, ``test_cmd``, ``pip_packages``: replace SWE-bench's value;
- ``requirements_txt``: the requirements text when the spec says ``packages: requirements.txt``
  (SWE-bench fetches it from GitHub at ``environment_setup_commit``; without it the bridge reads
  the same files from the clone);
- ``log_parser``: a parser name of ``swebench.harness.log_parsers`` (for unknown repositories);
- ``instances[id].env`` (environment variables) and ``instances[id].test_command``;
- ``adaptations``: what was changed and why (reported in ``evaluate().details``).

Environments run on the base image's Python 3.11; a spec asking for another Python is recorded as
an adaptation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from envharness.bridges.swebench.dataset import BRIDGE, Instance
from envharness.errors import BridgeError, DependencyNotInstalled

__all__ = [
    "PYTHON",
    "EnvSpec",
    "LogParser",
    "require_swebench",
    "requirements_from_clone",
    "resolve_spec",
    "safe_tag",
    "swebench_version",
]

PYTHON = "3.11"
"""The Python of every environment (the base image's)."""

LogParser = Callable[[str, Any], dict[str, str]]
_EXTRA = "swebench"
_NEEDED = "swebench>=4.1,<5"


def _swebench() -> tuple[Any, Any, Any, Any]:
    """SWE-bench's spec table, requirement paths, parser table and directive function."""
    try:
        import swebench.harness.log_parsers as parsers
        from swebench.harness import constants
    except ImportError as e:
        raise DependencyNotInstalled(_EXTRA, _EXTRA, purpose="SWE-bench's specs and parsers") from e
    specs = getattr(constants, "MAP_REPO_VERSION_TO_SPECS", None)
    if specs is None:
        raise BridgeError(
            f"the installed swebench {swebench_version()} has no install-spec tables (5.x moved "
            f"them into the datasets); install {_NEEDED!r}",
            bridge=BRIDGE,
        )
    from swebench.harness.test_spec.python import get_test_directives

    return specs, constants.MAP_REPO_TO_REQS_PATHS, parsers, get_test_directives


def require_swebench() -> None:
    """Checks that a usable ``swebench`` package is installed.

    Raises:
        DependencyNotInstalled: If it is missing (names the ``swebench`` extra).
        BridgeError: If the installed version has no install-spec tables (5.x).
    """
    _swebench()


def swebench_version() -> str:
    """The installed ``swebench`` package's version (``""`` when it is missing)."""
    try:
        from importlib.metadata import version

        return version("swebench")
    except Exception:
        return ""


@dataclass(frozen=True)
class EnvSpec:
    """What builds and tests one instance's environment.

    Attributes:
        repo: ``owner/name``.
        version: The repository version.
        python: The Python SWE-bench asks for (the environment has :data:`PYTHON`).
        packages: SWE-bench's ``packages`` field (``requirements.txt``, ``environment.yml``,
            package names, or ``""``).
        requirements_txt: The requirements text (``packages: requirements.txt``), or ``None``
            when it must come from the clone.
        requirements_paths: Where the clone holds the requirements (SWE-bench's table).
        extra_packages: Package names SWE-bench installs with conda, installed with pip here.
        pip_packages: Pins installed after the requirements.
        pre_install: Commands run in the tree before ``install``.
        install: The command installing the repository (an editable install).
        eval_commands: Commands the eval script runs first.
        test_cmd: The test command, without directives.
        test_command: The instance's full test command.
        test_files: Files the test patch changes (reset before and after the tests).
        env: Environment variables for install and tests.
        parser_name: The log parser's name.
        adaptations: What differs from SWE-bench's spec, and why.
        spec_source: Where the base spec came from.
    """

    repo: str
    version: str
    python: str
    packages: str
    requirements_txt: str | None
    requirements_paths: tuple[str, ...]
    extra_packages: tuple[str, ...]
    pip_packages: tuple[str, ...]
    pre_install: tuple[str, ...]
    install: str
    eval_commands: tuple[str, ...]
    test_cmd: str
    test_command: str
    test_files: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    parser_name: str = "parse_log_pytest"
    adaptations: tuple[str, ...] = ()
    spec_source: str = ""

    def parser(self) -> LogParser:
        """SWE-bench's log parser function named :attr:`parser_name`."""
        _, _, parsers, _ = _swebench()
        found = getattr(parsers, self.parser_name, None)
        if found is None:
            import swebench.harness.log_parsers.python as python_parsers

            found = getattr(python_parsers, self.parser_name, None)
        if not callable(found):
            raise BridgeError(f"swebench has no log parser {self.parser_name!r}", bridge=BRIDGE)
        return found

    def environment_record(self) -> dict[str, Any]:
        """The fields that decide the environment image (hashed into its tag)."""
        return {
            "repo": self.repo,
            "version": self.version,
            "python": PYTHON,
            "requirements_txt": self.requirements_txt,
            "extra_packages": list(self.extra_packages),
            "pip_packages": list(self.pip_packages),
        }


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise BridgeError(f"specs: {what} must be a string or a list of strings", bridge=BRIDGE)
    return tuple(value)


def _modified_files(test_patch: str) -> tuple[str, ...]:
    """Files a patch changes that exist before it (SWE-bench's ``get_modified_files``)."""
    try:
        from swebench.harness.utils import get_modified_files
    except ImportError as e:
        raise DependencyNotInstalled(_EXTRA, _EXTRA, purpose="SWE-bench's patch reading") from e
    return tuple(get_modified_files(test_patch))


def resolve_spec(instance: Instance, specs_json: Mapping[str, Any]) -> EnvSpec:
    """The spec of ``instance``: SWE-bench's entry with ``specs.json``'s adaptations on top.

    Raises:
        BridgeError: If neither SWE-bench nor ``specs.json`` has a spec for the repository and
            version, or ``specs.json``'s entry is malformed.
        DependencyNotInstalled: If the ``swebench`` package is missing.
    """
    table, reqs_paths, parsers, get_test_directives = _swebench()
    ours = specs_json.get(instance.repo, {}).get(instance.version, {})
    if not isinstance(ours, Mapping):
        raise BridgeError(
            f"specs: {instance.repo} {instance.version} must be an object", bridge=BRIDGE
        )
    official = table.get(instance.repo, {}).get(instance.version)
    if official is not None:
        base, source = dict(official), f"swebench {swebench_version()}"
    elif isinstance(ours.get("swebench_spec"), Mapping):
        base, source = dict(ours["swebench_spec"]), "specs.json (swebench_spec)"
    else:
        raise BridgeError(
            f"no install spec for {instance.repo} version {instance.version}: swebench "
            f"{swebench_version()} does not have one and specs.json gives no 'swebench_spec'",
            bridge=BRIDGE,
        )
    adaptations = [str(a) for a in _strings(ours.get("adaptations"), "adaptations")]
    python = str(base.get("python", PYTHON))
    if python != PYTHON:
        note = f"Python {PYTHON} instead of SWE-bench's {python} (the base image's Python)."
        if not any("Python" in a for a in adaptations):
            adaptations.append(note)
    packages = str(base.get("packages", "") or "")
    requirements = ours.get("requirements_txt")
    if packages == "environment.yml" and requirements is None:
        raise BridgeError(
            f"{instance.repo} {instance.version}: SWE-bench builds it from a conda "
            "environment.yml, which this bridge cannot; give the pip requirements as "
            "'requirements_txt' in specs.json",
            bridge=BRIDGE,
        )
    extra = () if packages in ("", "requirements.txt", "environment.yml") else packages.split()
    if extra:
        adaptations.append(f"conda packages {' '.join(extra)!r} installed with pip.")
    install = str(ours.get("install", base.get("install", "")))
    if not install:
        raise BridgeError(
            f"{instance.repo} {instance.version}: the spec has no install", bridge=BRIDGE
        )
    test_cmd = ours.get("test_cmd", base.get("test_cmd", ""))
    if isinstance(test_cmd, list):
        test_cmd = test_cmd[-1]
    directives = get_test_directives(instance.as_swebench())
    test_command = " ".join([str(test_cmd), *directives])
    entry = ours.get("instances", {}).get(instance.instance_id, {})
    given_command = entry.get("test_command")
    if isinstance(given_command, str) and given_command != test_command:
        adaptations.append(f"test command {given_command!r} instead of {test_command!r}.")
        test_command = given_command
    env = entry.get("env", {})
    if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
        raise BridgeError(
            f"specs: instances[{instance.instance_id!r}].env must map to strings", bridge=BRIDGE
        )
    parser_table = getattr(parsers, "MAP_REPO_TO_PARSER", {})
    official_parser = parser_table.get(instance.repo)
    parser_name = (
        official_parser.__name__
        if official_parser is not None
        else str(ours.get("log_parser", "parse_log_pytest"))
    )
    return EnvSpec(
        repo=instance.repo,
        version=instance.version,
        python=python,
        packages=packages,
        requirements_txt=requirements if isinstance(requirements, str) else None,
        requirements_paths=tuple(reqs_paths.get(instance.repo, ())),
        extra_packages=tuple(extra),
        pip_packages=_strings(ours.get("pip_packages", base.get("pip_packages")), "pip_packages"),
        pre_install=_strings(ours.get("pre_install", base.get("pre_install")), "pre_install"),
        install=install,
        eval_commands=_strings(base.get("eval_commands"), "eval_commands"),
        test_cmd=str(test_cmd),
        test_command=test_command,
        test_files=_modified_files(instance.test_patch),
        env=dict(env),
        parser_name=parser_name,
        adaptations=tuple(adaptations),
        spec_source=source + (" + specs.json" if ours else ""),
    )


_EXCLUDED = ("-e .", "#", ".[test")


def requirements_from_clone(read: Callable[[str], str | None], paths: tuple[str, ...]) -> str:
    """The requirements text as SWE-bench's ``get_requirements`` builds it, read from a clone.

    Args:
        read: Returns a file's text at ``environment_setup_commit`` (``None`` when missing).
        paths: The candidate requirement files (SWE-bench's ``MAP_REPO_TO_REQS_PATHS``).

    Raises:
        BridgeError: If none of the files exists.
    """
    from swebench.harness.test_spec.python import clean_requirements

    for path in paths:
        text = read(path)
        if text is not None:
            break
    else:
        raise BridgeError(
            f"none of the requirement files {list(paths)} is in the clone", bridge=BRIDGE
        )
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    original, included = [], []
    for line in text.split("\n"):
        if line.strip().startswith("-r"):
            name = line.strip()[2:].strip()
            nested = read(f"{folder}/{name}" if folder else name) or ""
            included.extend(x for x in nested.split("\n") if not x.strip().startswith(_EXCLUDED))
        elif not line.strip().startswith(_EXCLUDED):
            original.append(line)
    included.append("\n".join(original))
    return clean_requirements("\n".join(included))


def safe_tag(text: str) -> str:
    """``text`` as a Docker tag fragment (lowercase letters, digits, ``.``, ``_``, ``-``)."""
    return re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")[:80] or "x"
