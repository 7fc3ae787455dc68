"""``import envharness.tools`` loads neither LangGraph nor the rigger (it needs langchain-core)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("langchain_core")


def _loaded_after(statement: str) -> set[str]:
    code = f"{statement}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return set(result.stdout.split())


def test_importing_the_tools_loads_no_langgraph_and_no_rigger():
    loaded = _loaded_after("import envharness.tools")
    assert "envharness.tools.build" in loaded  # the probe sees what the import loads
    assert not {m for m in loaded if m == "langgraph" or m.startswith("langgraph.")}
    assert not {m for m in loaded if m.startswith("envharness.graph")}


def test_a_session_still_reads_the_rigger_records():
    from envharness.errors import RiggerError
    from envharness.graph.records import Diagnosis
    from envharness.harness.spec import BridgeSpec, HarnessSpec
    from envharness.tools import DesignSession

    diagnosis = Diagnosis(direction="harden", summary="too easy", weaknesses=[])
    session = DesignSession(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), [], diagnosis=diagnosis)
    assert session.diagnosis == diagnosis.to_dict()
    assert session.objective.kind == "auto"
    with pytest.raises(RiggerError, match="diagnosis: expected a Diagnosis or its dict"):
        DesignSession(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), [], diagnosis=3)
