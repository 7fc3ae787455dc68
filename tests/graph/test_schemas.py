"""Snapshots of the graphs' four schemas: input, output, state and context (issue 12).

The stored schemas live in ``tests/graph/snapshots/<graph>.<schema>.json``. After a deliberate
change to a schema (a field, a type, a description), regenerate them with::

    ENVHARNESS_UPDATE_SNAPSHOTS=1 python -m pytest tests/graph/test_schemas.py

and review the diff. The state schema is the state TypedDict's JSON schema (pydantic
``TypeAdapter``), the others are what LangGraph generates (``get_*_jsonschema()``): what Studio
and ``client.assistants.get_schemas()`` show.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from envharness.graph import build_rigger
from envharness.graph.rig_many import build_rig_many

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("ENVHARNESS_UPDATE_SNAPSHOTS") == "1"
REGENERATE = "ENVHARNESS_UPDATE_SNAPSHOTS=1 python -m pytest tests/graph/test_schemas.py"

GRAPHS: dict[str, Callable[[], Any]] = {"rigger": build_rigger, "rig_many": build_rig_many}
SCHEMAS = ("input", "output", "state", "context")


def schema_of(graph: Any, kind: str) -> dict[str, Any]:
    """One of a compiled graph's four schemas, as JSON."""
    if kind == "state":
        return TypeAdapter(graph.builder.state_schema).json_schema()
    return getattr(graph, f"get_{kind}_jsonschema")()


def snapshot_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("kind", SCHEMAS)
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_the_schema_matches_its_snapshot(name: str, kind: str) -> None:
    schema = schema_of(GRAPHS[name](), kind)
    path = SNAPSHOTS / f"{name}.{kind}.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(snapshot_text(schema), encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}; create it with: {REGENERATE}"
    stored = json.loads(path.read_text(encoding="utf-8"))
    hint = f"the {name} {kind} schema changed; if on purpose, regenerate with: {REGENERATE}"
    assert list(schema.get("properties", {})) == list(stored.get("properties", {})), hint
    assert schema == stored, hint


@pytest.mark.parametrize("kind", SCHEMAS)
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_the_schema_is_non_empty_and_describes_every_field(name: str, kind: str) -> None:
    schema = schema_of(GRAPHS[name](), kind)
    assert schema["type"] == "object" and schema["properties"]
    if kind == "state":  # internal keys are documented in the TypedDict's docstring
        assert schema.get("description")
        return
    for field, prop in schema["properties"].items():
        assert prop.get("description"), f"{name} {kind}.{field} has no description"


def test_every_snapshot_belongs_to_a_schema() -> None:
    expected = {f"{name}.{kind}.json" for name in GRAPHS for kind in SCHEMAS}
    assert {p.name for p in SNAPSHOTS.glob("*.json")} == expected


def test_the_state_schema_covers_the_inputs_and_outputs() -> None:
    for build in GRAPHS.values():
        graph = build()
        state = set(schema_of(graph, "state")["properties"])
        assert set(graph.get_input_jsonschema()["properties"]) <= state
        assert set(graph.get_output_jsonschema()["properties"]) <= state
