"""A third-party bridge installed as a distribution goes through the built-ins' path."""

from __future__ import annotations

import sys
import textwrap

import pytest

import envharness
from envharness.bridges import registry
from envharness.prompts import load_hints

HINT_LINE = "- Plugin hint: the target word is in the task."


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """Installs ``eh-plugin-bridge`` (one module and its dist-info) on sys.path."""
    (tmp_path / "eh_plugin_bridge.py").write_text(
        textwrap.dedent(f'''
        from envharness.testing import FakeEnv


        class PluginEnv(FakeEnv):
            """A bridge from another distribution."""

            @classmethod
            def designer_hints(cls):
                return "# About this environment: Plugin\\n{HINT_LINE}\\n"
        ''')
    )
    info = tmp_path / "eh_plugin_bridge-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: eh-plugin-bridge\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[envharness.bridges]\nplugin = eh_plugin_bridge:PluginEnv\n"
    )
    monkeypatch.setattr(registry, "_scanned", None)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "eh_plugin_bridge", raising=False)
    yield "plugin"
    sys.modules.pop("eh_plugin_bridge", None)


def test_a_built_in_and_a_plugin_are_both_entry_points(plugin):
    assert {"plugin", "toy24"} <= set(envharness.list_bridges())
    assert registry._REGISTERED == {} or "toy24" not in registry._REGISTERED
    sources = registry._entry_point_bridges()
    assert sources["toy24"] == (
        registry._Source("envharness.bridges.toy24:Toy24Env", "envharness"),
    )
    assert sources["plugin"] == (
        registry._Source("eh_plugin_bridge:PluginEnv", "eh-plugin-bridge"),
    )
    env = envharness.load_bridge(plugin, task_id="fake")
    assert type(env).__name__ == "PluginEnv" and type(env).__module__ == "eh_plugin_bridge"
    assert envharness.list_tasks(plugin) == ["fake"]


def test_every_builtin_bridge_is_declared_by_envharness():
    sources = registry._entry_point_bridges(refresh=True)
    built_in = {name for name, found in sources.items() if found[0].distribution == "envharness"}
    assert built_in == {
        "alfworld", "docqa", "gymnasium", "spreadsheet", "swe", "swebench", "textworld", "toy24",
        "webshop",
    }  # fmt: skip
    for name in built_in:
        module, _, cls = sources[name][0].target.partition(":")
        assert module == f"envharness.bridges.{name}", name  # the bridge's own package


def test_a_plugin_ships_its_hints_into_the_designer_prompt(plugin):
    pytest.importorskip("langgraph", reason="the designer needs the 'rigger' extra")
    from envharness.graph.designer import run_designer
    from envharness.harness.spec import BridgeSpec, HarnessSpec
    from envharness.testing import FakeToolCallingModel
    from envharness.tools import DesignSession

    assert load_hints(plugin) == f"# About this environment: Plugin\n{HINT_LINE}"
    session = DesignSession(HarnessSpec(BridgeSpec(plugin, "fake")), [])
    model = FakeToolCallingModel(responses=["thinking", "still thinking"])
    run_designer(model, session)
    system = model.calls[0][0].content
    assert system.endswith(HINT_LINE)
    assert "# About this environment: Plugin" in system
