r"""SWE-bench instances in the official format: reading, checking, and the side files beside them.

A dataset is one file of SWE-bench task instances, as SWE-bench publishes them (a split is a
file): JSON Lines (one instance per line) or parquet. Each instance has SWE-bench's fields;
``FAIL_TO_PASS`` and ``PASS_TO_PASS`` may be lists or JSON strings (the parquet form).
``specs.json`` (install and test adaptations per repository and version) and ``sources.json``
(the PyPI sdist nearest to each instance) are read from the dataset's folder unless given.

Example:
    >>> import json, tempfile, os
    >>> row = {k: "x" for k in REQUIRED_FIELDS} | {"repo": "a/b", "PASS_TO_PASS": []}
    >>> row["FAIL_TO_PASS"] = '["t.py::test_a"]'  # the parquet form: a JSON string
    >>> path = os.path.join(tempfile.mkdtemp(), "dev.jsonl")
    >>> _ = open(path, "w").write(json.dumps(row | {"instance_id": "a__b-1"}) + "\n")
    >>> [(i.instance_id, i.fail_to_pass) for i in load_instances(path)]
    [('a__b-1', ('t.py::test_a',))]
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envharness.errors import BridgeError, UnknownTaskError

__all__ = [
    "OPTIONAL_FIELDS",
    "REQUIRED_FIELDS",
    "Instance",
    "load_instances",
    "load_json_side_file",
    "find_instance",
]

BRIDGE = "swebench"
REQUIRED_FIELDS = (
    "repo",
    "instance_id",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "version",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)
"""Fields every instance must have (the verifier or the bridge reads each)."""
OPTIONAL_FIELDS = ("hints_text", "created_at", "environment_setup_commit")
"""SWE-bench fields that are read when present."""


@dataclass(frozen=True)
class Instance:
    """One SWE-bench task instance (SWE-bench's own fields).

    Attributes:
        repo: ``owner/name`` on GitHub.
        instance_id: ``owner__name-NUMBER``.
        base_commit: The commit the agent starts from.
        patch: The gold patch (the oracle).
        test_patch: The tests the verifier adds to the agent's tree.
        problem_statement: The issue text the agent sees.
        version: The repository version (keys the install spec).
        fail_to_pass: Tests that must go from failing to passing.
        pass_to_pass: Tests that must keep passing.
        environment_setup_commit: The commit whose requirements files build the environment.
        hints_text: Comments on the issue before the fix (not shown to the agent).
        created_at: When the fix's pull request was created.
        extra: Other fields of the row (kept, not read).
    """

    repo: str
    instance_id: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    version: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    environment_setup_commit: str = ""
    hints_text: str = ""
    created_at: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def clone_name(self) -> str:
        """The folder name of this repository's clone in a ``repos_dir`` (``owner__name``)."""
        return self.repo.replace("/", "__")

    def as_swebench(self) -> dict[str, Any]:
        """The row as SWE-bench's harness functions take it (lists kept as lists)."""
        return {
            "repo": self.repo,
            "instance_id": self.instance_id,
            "base_commit": self.base_commit,
            "patch": self.patch,
            "test_patch": self.test_patch,
            "problem_statement": self.problem_statement,
            "hints_text": self.hints_text,
            "created_at": self.created_at,
            "version": self.version,
            "FAIL_TO_PASS": list(self.fail_to_pass),
            "PASS_TO_PASS": list(self.pass_to_pass),
            "environment_setup_commit": self.environment_setup_commit or self.base_commit,
        }


def _test_list(value: Any, name: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise BridgeError(
                f"{where}: {name} must be a list of test ids or a JSON string of one: {e}",
                bridge=BRIDGE,
            ) from e
    if not isinstance(value, list | tuple) or not all(isinstance(t, str) for t in value):
        raise BridgeError(f"{where}: {name} must be a list of test ids", bridge=BRIDGE)
    return tuple(value)


def _instance(row: Any, where: str) -> Instance:
    if not isinstance(row, Mapping):
        raise BridgeError(
            f"{where}: expected a JSON object, got {type(row).__name__}", bridge=BRIDGE
        )
    missing = [name for name in REQUIRED_FIELDS if row.get(name) is None]
    if missing:
        raise BridgeError(
            f"{where}: missing field(s) {missing}; a SWE-bench instance needs "
            f"{', '.join(REQUIRED_FIELDS)}",
            bridge=BRIDGE,
        )
    for name in REQUIRED_FIELDS[:7]:
        if not isinstance(row[name], str) or (name != "problem_statement" and not row[name]):
            raise BridgeError(f"{where}: field {name!r} must be a non-empty string", bridge=BRIDGE)
    if "/" not in row["repo"]:
        raise BridgeError(f"{where}: repo must be 'owner/name', got {row['repo']!r}", bridge=BRIDGE)
    known = set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)
    return Instance(
        repo=row["repo"],
        instance_id=row["instance_id"],
        base_commit=row["base_commit"],
        patch=row["patch"],
        test_patch=row["test_patch"],
        problem_statement=row["problem_statement"],
        version=str(row["version"]),
        fail_to_pass=_test_list(row["FAIL_TO_PASS"], "FAIL_TO_PASS", where),
        pass_to_pass=_test_list(row["PASS_TO_PASS"], "PASS_TO_PASS", where),
        environment_setup_commit=str(row.get("environment_setup_commit") or ""),
        hints_text=str(row.get("hints_text") or ""),
        created_at=str(row.get("created_at") or ""),
        extra={k: v for k, v in row.items() if k not in known},
    )


def _rows(path: Path) -> list[tuple[str, Any]]:
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as e:
            raise BridgeError(
                f"reading {path} needs pyarrow (pip install pyarrow), or convert it to JSONL",
                bridge=BRIDGE,
            ) from e
        table = pq.read_table(path).to_pylist()
        return [(f"{path} row {n}", row) for n, row in enumerate(table, 1)]
    rows = []
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                rows.append((f"{path} line {n}", json.loads(line)))
            except json.JSONDecodeError as e:
                raise BridgeError(f"{path} line {n}: not JSON: {e}", bridge=BRIDGE) from e
    return rows


@functools.lru_cache(maxsize=16)
def _load(path: str, mtime: float) -> tuple[Instance, ...]:
    instances: dict[str, Instance] = {}
    for where, row in _rows(Path(path)):
        instance = _instance(row, where)
        if instance.instance_id in instances:
            raise BridgeError(
                f"{where}: instance {instance.instance_id!r} appears twice", bridge=BRIDGE
            )
        instances[instance.instance_id] = instance
    return tuple(instances.values())


def _dataset_path(dataset: object) -> Path:
    if not isinstance(dataset, str | os.PathLike) or not str(dataset):
        raise BridgeError(
            f"dataset: expected the path of a SWE-bench JSONL or parquet file, got {dataset!r}",
            bridge=BRIDGE,
        )
    path = Path(dataset).expanduser()
    if not path.is_file():
        raise BridgeError(f"dataset: no such file {str(path)!r}", bridge=BRIDGE)
    if path.suffix not in (".jsonl", ".json", ".parquet"):
        raise BridgeError(
            f"dataset: expected a .jsonl or .parquet file (one split), got {path.name!r}", BRIDGE
        )
    return path


def load_instances(dataset: str | os.PathLike[str]) -> tuple[Instance, ...]:
    """Every instance of a dataset file, in file order (cached while the file is unchanged).

    Raises:
        BridgeError: If the file is missing, not JSONL/parquet, or an instance is malformed
            (naming the line and the field).
    """
    path = _dataset_path(dataset)
    return _load(str(path.resolve()), path.stat().st_mtime)


def find_instance(dataset: str | os.PathLike[str], instance_id: str) -> Instance:
    """The instance ``instance_id`` of ``dataset``.

    Raises:
        UnknownTaskError: If the dataset has no such instance.
    """
    instances = load_instances(dataset)
    for instance in instances:
        if instance.instance_id == instance_id:
            return instance
    some = ", ".join(i.instance_id for i in instances[:5])
    raise UnknownTaskError(
        f"no instance {instance_id!r} in {dataset}; it has {len(instances)} (e.g. {some})",
        bridge=BRIDGE,
        task_id=instance_id,
    )


def load_json_side_file(
    given: str | os.PathLike[str] | None, dataset: str | os.PathLike[str], name: str
) -> dict[str, Any]:
    """``specs.json`` or ``sources.json``: the given path, else the file beside the dataset.

    Returns ``{}`` when nothing was given and the dataset's folder has no such file.

    Raises:
        BridgeError: If a given file is missing, or a file is not a JSON object.
    """
    if given is None:
        path = Path(dataset).expanduser().parent / name
        if not path.is_file():
            return {}
    else:
        path = Path(given).expanduser()
        if not path.is_file():
            raise BridgeError(f"{name.split('.')[0]}: no such file {str(path)!r}", bridge=BRIDGE)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise BridgeError(f"{path}: cannot read it as JSON: {e}", bridge=BRIDGE) from e
    if not isinstance(data, dict):
        raise BridgeError(f"{path}: expected a JSON object", bridge=BRIDGE)
    return data
