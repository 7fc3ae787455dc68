from __future__ import annotations

import json

import pytest
from conftest import combine

from envharness import SpecError, UnknownBridgeError
from envharness.harness import HarnessSpec, Lineage, Rules, Setups
from envharness.harness.spec import BridgeSpec

CODE = """
class _Rules:
    def filter_observation(self, observation, state):
        return observation.upper()
"""


@pytest.fixture
def stack(toy):
    env = Rules(Setups(toy, [combine("10", "*", "10")]), CODE)
    yield env
    env.close()


def test_from_env_lists_components_innermost_first(stack):
    spec = HarnessSpec.from_env(stack)
    assert spec.bridge.name == "toy24" and spec.bridge.task_id == "4-4-10-10"
    assert [c.type for c in spec.components] == ["setups", "rules"]


def test_json_round_trip_and_build(stack):
    spec = HarnessSpec.from_env(stack).with_lineage(Lineage(task="4-4-10-10", policy="oracle:0.5"))
    text = spec.to_json()
    parsed = HarnessSpec.from_json(text)
    assert parsed == spec
    assert parsed.spec_id == spec.spec_id
    rebuilt = parsed.build()
    try:
        assert repr(rebuilt) == repr(stack)
        assert rebuilt.reset(seed=0) == stack.reset(seed=0)
    finally:
        rebuilt.close()


def test_spec_id_ignores_lineage_but_not_content(stack, toy):
    spec = HarnessSpec.from_env(stack)
    assert spec.with_lineage(Lineage(notes="x")).spec_id == spec.spec_id
    assert HarnessSpec.from_env(Setups(toy, [])).spec_id != spec.spec_id


def _data(stack):
    return json.loads(HarnessSpec.from_env(stack).to_json())


def test_edited_rules_code_is_refused(stack):
    data = _data(stack)
    data["components"][1]["config"]["rules_code"] += "\n# edited"
    del data["spec_id"]
    with pytest.raises(SpecError, match="does not match its sha256"):
        HarnessSpec.from_dict(data)


def test_edited_content_with_stale_id_is_refused(stack):
    data = _data(stack)
    data["bridge"]["task_id"] = "3-3-8-8"
    with pytest.raises(SpecError, match="spec_id .* does not match"):
        HarnessSpec.from_dict(data)
    del data["spec_id"]
    assert HarnessSpec.from_dict(data).bridge.task_id == "3-3-8-8"


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d.update(envharness_spec=99), "envharness_spec=1"),
        (lambda d: d.update(bridge="toy24"), "expected 'bridge'"),
        (lambda d: d.update(components={}), "'components' to be a list"),
        (lambda d: d["components"].append({"type": "teleporter"}), "unknown component type"),
        (lambda d: d["components"].append(["setups"]), "component #2"),
        (lambda d: d.update(lineage={"colour": "red"}), "lineage: unknown field.*'colour'"),
        (lambda d: d.update(envharness_spec=True), "envharness_spec=1, got True"),
        (lambda d: d.update(limits={"cpu": 0}), "spec: unknown field.*'limits'"),
        (lambda d: d["bridge"].update(colour="red"), "bridge: unknown field"),
        (lambda d: d["bridge"]["options"].update(task_id="1-1-1-1"), "--task/--tasks"),
        (lambda d: d["components"][1].update(_unchecked=True), "component #1: unknown field"),
        (
            lambda d: d["components"][1]["config"].update(limits={"timeout": 999}),
            "component #1 config: unknown field.*'limits'",
        ),
        (lambda d: d["bridge"]["options"].update(deep=_nested(40)), "nested more than 32"),
        (
            lambda d: d.update(components=[d["components"][0]] * 65),
            "65 components; at most 64",
        ),
    ],
)
def test_malformed_specs(stack, mutate, match):
    data = _data(stack)
    data.pop("spec_id")
    mutate(data)
    with pytest.raises(SpecError, match=match):
        HarnessSpec.from_dict(data)


def test_bad_json_and_bad_config(stack):
    with pytest.raises(SpecError, match="not valid JSON"):
        HarnessSpec.from_json("{")
    data = _data(stack)
    data.pop("spec_id")
    data["components"][0]["config"] = {"actions": []}
    with pytest.raises(SpecError, match="component #0 config: unknown field.*'actions'"):
        HarnessSpec.from_dict(data)
    data["components"][0]["config"] = {}
    with pytest.raises(SpecError, match="setups component needs 'in_env_actions'"):
        HarnessSpec.from_dict(data).build()


def test_unknown_bridge_is_reported(stack):
    data = _data(stack)
    data.pop("spec_id")
    data["bridge"]["name"] = "nope"
    with pytest.raises(UnknownBridgeError, match="registered bridges: .*toy24"):
        HarnessSpec.from_dict(data).build()


def test_unregistered_components_cannot_be_serialized(toy):
    from envharness.harness import EnvHarness, register_component

    class Shout(Setups):
        """Inherits component_type 'setups' but changes behaviour: must not pass as Setups."""

    with pytest.raises(SpecError, match="Shout is not a registered component type"):
        HarnessSpec.from_env(Shout(toy, []))
    with pytest.raises(SpecError, match="EnvHarness is not a registered component type"):
        EnvHarness(toy).save_state()
    with pytest.raises(SpecError, match="expected an EnvHarness subclass"):
        register_component("shout", object)


def test_from_env_is_the_one_way_to_describe_an_env(toy):
    from envharness.core import ActionableEnv

    assert not hasattr(ActionableEnv, "spec")  # the base contract knows nothing of specs
    assert HarnessSpec.from_env(toy).components == ()
    with pytest.raises(TypeError, match="expected an ActionableEnv to describe, got str"):
        HarnessSpec.from_env("toy24")


def test_a_wrapper_that_is_no_component_is_refused_not_described_as_the_bridge(toy):
    from envharness.harness import register_component

    class Passthrough(type(toy)):
        """A bridge subclass that wraps another env without being a registered component."""

        def __init__(self, env):
            self.env = env

        @property
        def unwrapped(self):
            return self.env

    with pytest.raises(SpecError, match="Passthrough is not a registered component type"):
        HarnessSpec.from_env(Passthrough(toy))
    with pytest.raises(SpecError, match="expected an EnvHarness subclass"):
        register_component("passthrough", Passthrough)  # an env, but without the hooks


def test_registered_custom_component_round_trips(toy, monkeypatch):
    from envharness.harness import EnvHarness, register_component
    from envharness.harness import spec as spec_module

    class Shout(EnvHarness):
        component_type = "shout"

        def _reset(self, seed):
            observation, info = self.env.reset(seed=seed)
            return observation.upper(), info

    monkeypatch.setattr(spec_module, "_COMPONENTS", dict(spec_module._COMPONENTS))
    register_component("shout", Shout)
    rebuilt = HarnessSpec.from_json(HarnessSpec.from_env(Shout(toy)).to_json()).build()
    assert isinstance(rebuilt, Shout)
    assert rebuilt.reset(seed=0)[0].isupper()


def test_spec_text_errors_are_spec_errors():
    with pytest.raises(SpecError, match="'bridge' is given twice"):
        HarnessSpec.from_json('{"envharness_spec": 1, "bridge": {}, "bridge": {}}')
    with pytest.raises(SpecError, match="nested more than"):
        HarnessSpec.from_json("[" * 100_000 + "]" * 100_000)


def test_an_option_the_bridge_does_not_take_is_a_spec_error():
    spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10", {"bogus": 1}))
    with pytest.raises(SpecError, match="bridge.options \\['bogus'\\] do not fit"):
        spec.build()
    with pytest.raises(SpecError, match="'task_id' is not an option"):
        HarnessSpec(BridgeSpec("toy24", "4-4-10-10", {"task_id": "1-1-1-1"})).build()


# -- task fingerprints: a spec pins what its verifier reads ------------------------------------

OTHER = "ab" * 32  # a well-formed fingerprint of no task


def test_from_env_records_the_bridges_fingerprint(stack, toy):
    fingerprint = toy.task_fingerprint()
    assert isinstance(fingerprint, str) and len(fingerprint) == 64
    assert stack.task_fingerprint() == fingerprint  # a stack reports its bridge's
    spec = HarnessSpec.from_env(stack)
    assert spec.bridge.fingerprint == fingerprint
    assert spec.to_dict()["bridge"]["fingerprint"] == fingerprint
    assert HarnessSpec.from_json(spec.to_json()) == spec


def test_the_fingerprint_is_part_of_the_spec_id(toy):
    pinned = HarnessSpec.from_env(toy)
    unpinned = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
    assert pinned.spec_id != unpinned.spec_id
    assert "fingerprint" not in unpinned.to_dict()["bridge"]


def test_a_spec_without_a_fingerprint_loads_keeps_its_id_and_builds():
    import hashlib

    legacy = {
        "envharness_spec": 1,
        "bridge": {"name": "toy24", "task_id": "4-4-10-10", "options": {}},
        "components": [],
    }
    body = {"bridge": legacy["bridge"], "components": []}
    old_id = hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()[:16]
    spec = HarnessSpec.from_dict({**legacy, "spec_id": old_id})
    assert spec.spec_id == old_id and spec.bridge.fingerprint is None
    assert spec.to_dict()["bridge"] == legacy["bridge"]
    env = spec.build()
    try:
        assert env.task_id == "4-4-10-10"
    finally:
        env.close()


@pytest.mark.parametrize("value", [None, 7, "", "abc", "AB" * 32, "g" * 64, "ab" * 33, ["ab" * 32]])
def test_a_malformed_fingerprint_is_refused(stack, value):
    data = _data(stack)
    data.pop("spec_id")
    data["bridge"]["fingerprint"] = value
    with pytest.raises(SpecError, match="bridge.fingerprint: expected 64 lowercase hex"):
        HarnessSpec.from_dict(data)


def test_an_edited_fingerprint_breaks_the_stored_spec_id(stack):
    data = _data(stack)
    data["bridge"]["fingerprint"] = OTHER
    with pytest.raises(SpecError, match="spec_id .* does not match"):
        HarnessSpec.from_dict(data)


def test_build_refuses_a_bridge_whose_task_data_differ(stack):
    data = _data(stack)
    data.pop("spec_id")
    data["bridge"]["fingerprint"] = OTHER
    spec = HarnessSpec.from_dict(data)
    with pytest.raises(SpecError) as raised:
        spec.build()
    message = str(raised.value)
    assert "bridge 'toy24' task '4-4-10-10'" in message
    assert stack.task_fingerprint() in message and OTHER in message
    assert "point the bridge at other task data" in message and "data changed" in message
    assert "re-rig" in message and "HarnessSpec.from_env(env)" in message


def test_a_moved_task_id_keeps_its_old_fingerprint_and_is_refused(stack):
    data = _data(stack)
    data.pop("spec_id")
    data["bridge"]["task_id"] = "3-3-8-8"
    with pytest.raises(SpecError, match="bridge 'toy24' task '3-3-8-8' has task-data fingerprint"):
        HarnessSpec.from_dict(data).build()


class _Tracked:
    """Registers a toy24 subclass under a test name whose fingerprint and close are controlled."""

    def __init__(self, monkeypatch, fingerprint):
        from envharness.bridges import registry
        from envharness.bridges.toy24 import Toy24Env

        closed = self.closed = []

        class Tracked(Toy24Env):
            bridge_name = "tracked"

            def task_fingerprint(self):
                return fingerprint

            def close(self):
                closed.append(self)

        monkeypatch.setitem(registry._REGISTERED, "tracked", Tracked)
        self.cls = Tracked


def test_a_refused_bridge_is_closed(monkeypatch):
    tracked = _Tracked(monkeypatch, OTHER)
    spec = HarnessSpec(BridgeSpec("tracked", "4-4-10-10", {}, "cd" * 32))
    with pytest.raises(SpecError, match=f"has task-data fingerprint {OTHER}"):
        spec.build()
    assert len(tracked.closed) == 1
    built = HarnessSpec(BridgeSpec("tracked", "4-4-10-10", {}, OTHER)).build()
    assert isinstance(built, tracked.cls) and not tracked.closed[1:]


def test_a_bridge_that_cannot_say_records_none_and_cannot_check_a_pin(monkeypatch):
    tracked = _Tracked(monkeypatch, None)
    spec = HarnessSpec.from_env(tracked.cls("4-4-10-10"))
    assert spec.bridge.fingerprint is None and "fingerprint" not in spec.to_dict()["bridge"]
    spec.build()  # nothing to check
    pinned = HarnessSpec(BridgeSpec("tracked", "4-4-10-10", {}, OTHER))
    with pytest.raises(SpecError, match="reports no fingerprint, so the spec's pin cannot"):
        pinned.build()


def test_a_malformed_bridge_fingerprint_is_a_spec_error(monkeypatch):
    tracked = _Tracked(monkeypatch, "not-a-hash")
    with pytest.raises(SpecError, match=r"Tracked.task_fingerprint\(\) returned 'not-a-hash'"):
        HarnessSpec.from_env(tracked.cls("4-4-10-10"))


def test_a_links_second_spec_is_pinned_too(toy, make_toy):
    from envharness.harness import Link

    second = make_toy("3-3-8-8")
    link = Link(toy, second)
    data = json.loads(HarnessSpec.from_env(link).to_json())
    nested = data["components"][0]["config"]["second"]
    assert nested["bridge"]["fingerprint"] == second.task_fingerprint()
    assert data["bridge"]["fingerprint"] == toy.task_fingerprint()
    HarnessSpec.from_dict(data).build().close()
    nested.pop("spec_id")
    nested["bridge"]["fingerprint"] = OTHER
    data.pop("spec_id")
    with pytest.raises(SpecError, match="bridge 'toy24' task '3-3-8-8' has task-data"):
        HarnessSpec.from_dict(data).build()


def test_accepted_specs_and_trajectories_carry_the_fingerprint(stack, toy):
    from envharness.rollout.loop import rollout
    from envharness.rollout.trajectory import Trajectory

    class Script:
        def __init__(self, actions):
            self.actions = list(actions)

        def start(self, instruction, tools):
            self.queue = list(self.actions)

        def act(self, observation):
            return self.queue.pop(0)

    fingerprint = toy.task_fingerprint()
    accepted = HarnessSpec.from_env(stack).with_lineage(Lineage(task="4-4-10-10", notes="accepted"))
    assert json.loads(accepted.to_json())["bridge"]["fingerprint"] == fingerprint
    trajectory = rollout(stack, Script([combine("100", "-", "4"), combine("96", "/", "4")]))
    assert trajectory.success
    assert trajectory.spec["bridge"]["fingerprint"] == fingerprint
    assert trajectory.spec_id == HarnessSpec.from_env(stack).spec_id
    restored = Trajectory.from_json(trajectory.to_json())
    assert HarnessSpec.from_dict(restored.spec).bridge.fingerprint == fingerprint


def test_pinned_records_the_fingerprint_of_a_hand_written_spec(toy, make_toy):
    from envharness.harness import Link

    by_hand = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
    pinned = by_hand.pinned()
    assert pinned.bridge.fingerprint == toy.task_fingerprint()
    assert pinned == HarnessSpec.from_env(toy) and pinned.pinned() == pinned
    # what is derived from a pinned base (a rig's candidates) carries it
    derived = HarnessSpec(
        pinned.bridge, HarnessSpec.from_env(Setups(toy, [combine("10", "*", "10")])).components
    )
    assert derived.to_dict()["bridge"]["fingerprint"] == toy.task_fingerprint()
    # a Link's second spec, written by hand, is pinned too
    link = HarnessSpec.from_env(Link(toy, make_toy("3-3-8-8")))
    data = link.to_dict()
    data.pop("spec_id")
    data["bridge"].pop("fingerprint")
    second = data["components"][0]["config"]["second"]
    second.pop("spec_id")
    second["bridge"].pop("fingerprint")
    unpinned = HarnessSpec.from_dict(data)
    assert unpinned != link and unpinned.pinned() == link
    forged = HarnessSpec(BridgeSpec("toy24", "4-4-10-10", {}, OTHER))
    with pytest.raises(SpecError, match="has task-data fingerprint"):
        forged.pinned()


def test_editing_a_specs_dict_leaves_the_spec_alone(stack):
    spec = HarnessSpec.from_env(stack)
    before = spec.spec_id
    data = spec.to_dict()
    data["bridge"]["options"]["x"] = 1
    data["components"][0]["config"]["in_env_actions"].clear()
    assert spec.spec_id == before and spec.components[0].config["in_env_actions"]
    parsed = HarnessSpec.from_dict(spec.to_dict())
    source = spec.to_dict()
    parsed_again = HarnessSpec.from_dict(source)
    source["components"][0]["config"]["in_env_actions"].clear()
    assert parsed_again == parsed
