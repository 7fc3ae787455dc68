from __future__ import annotations

import json

import pytest

from envharness import Action, Evaluation, TrajectoryError
from envharness.rollout.trajectory import END_REASONS, Step, Trajectory


def full() -> Trajectory:
    return Trajectory(
        task_id="4-4-10-10",
        bridge="toy24",
        spec_id="0123456789abcdef",
        spec={"bridge": {"name": "toy24", "task_id": "4-4-10-10", "options": {}}},
        seed=11,
        policy="oracle:0.5",
        instruction="Make 24.",
        first_observation="Numbers left: 4 4 10 10",
        steps=[
            Step(0, None, "feedback", invalid="invalid action: no tool call", policy_seconds=0.5),
            Step(1, {"tool": "undo", "args": {}}, "Blocked.", blocked=True, env_seconds=1e-6),
            Step(
                2,
                {"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}},
                "Numbers left: 4 4 100 — ünïcode",
                reward=0.25,
                terminated=True,
                policy_seconds=0.1,
                env_seconds=0.2,
            ),
            Step(3, {"tool": "undo", "args": {}}, "", error="RulesError: hook 'x' failed: y"),
        ],
        evaluation=Evaluation(False, 0.0, {"numbers": ["4", "4", "100"], "nested": {"k": [1]}}),
        end_reason="env_error",
        error="RulesError: hook 'x' failed: y",
        usage={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        started_at=1_700_000_000.123456,
        duration_seconds=0.987654321,
        max_steps=12,
    )


def test_json_round_trip_is_lossless():
    trajectory = full()
    text = trajectory.to_json()
    assert "\n" not in text
    again = Trajectory.from_json(text)
    assert again == trajectory
    assert again.to_json() == text
    assert Trajectory.from_dict(json.loads(text)) == trajectory


def test_the_compact_form_leaves_out_defaults_and_reads_back_the_same():
    trajectory = full()
    compact = json.loads(trajectory.to_json(compact=True))
    first, blocked = compact["steps"][:2]
    assert first == {
        "index": 0,
        "action": None,
        "observation": "feedback",
        "invalid": "invalid action: no tool call",
        "policy_seconds": 0.5,
    }
    assert blocked["blocked"] is True and "terminated" not in blocked
    assert len(trajectory.to_json(compact=True)) < len(trajectory.to_json())
    assert Trajectory.from_json(trajectory.to_json(compact=True)) == trajectory


def test_the_compact_form_keeps_a_value_of_another_type_than_its_default():
    step = Step(0, None, "x", reward=0, terminated=True)  # an int 0 is not the default 0.0
    data = Trajectory("t", "fake", "s", {}, 0, "p", steps=[step]).to_dict(compact=True)
    assert data["steps"][0]["reward"] == 0 and type(data["steps"][0]["reward"]) is int


def test_round_trip_without_evaluation():
    trajectory = Trajectory("t", "fake", "s", {}, 0, "p", end_reason="env_error", error="x")
    assert Trajectory.from_json(trajectory.to_json()) == trajectory


def test_counts_and_action_keys():
    trajectory = full()
    assert (trajectory.n_steps, trajectory.n_invalid, trajectory.n_blocked) == (4, 1, 1)
    keys = trajectory.action_keys()
    assert keys[0] is None
    assert keys[1] == keys[3] == Action("undo").key()
    assert keys[2] == Action("combine", {"b": "10", "op": "*", "a": "10"}).key()
    assert trajectory.steps[2].parsed_action == Action("combine", {"a": "10", "op": "*", "b": "10"})
    assert trajectory.steps[0].parsed_action is None
    assert not trajectory.success
    assert trajectory.to_dict()["steps"][0]["invalid"] == "invalid action: no tool call"


def test_success_comes_from_the_evaluation():
    trajectory = Trajectory("t", "fake", "s", {}, 0, "p", evaluation=Evaluation(True, 1.0))
    assert trajectory.success
    assert not Trajectory("t", "fake", "s", {}, 0, "p").success


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"task_id": "t"}', "malformed trajectory"),
    ],
)
def test_from_json_rejects_malformed_text(text, message):
    with pytest.raises(TrajectoryError, match=message):
        Trajectory.from_json(text)


def test_from_json_reads_what_only_the_standard_parser_accepts():
    """A line orjson refuses (NaN, an integer beyond 64 bits, a lone surrogate) reads as before."""
    data = full().to_dict()
    data["seed"] = 2**70
    data["first_observation"] = "\ud800"
    text = json.dumps(data).replace('"reward": 0.25', '"reward": NaN')
    again = Trajectory.from_json(text)
    assert again.seed == 2**70
    assert again.first_observation == "\ud800"
    assert again.steps[2].reward != again.steps[2].reward  # NaN
    assert again.steps[3] == full().steps[3]


def test_from_dict_rejects_bad_fields():
    data = full().to_dict()
    with pytest.raises(TrajectoryError, match="expected end_reason in"):
        Trajectory.from_dict({**data, "end_reason": "bored"})
    bad_step = {**data, "steps": [{**data["steps"][0], "colour": "red"}]}
    with pytest.raises(TrajectoryError, match="malformed trajectory.*colour"):
        Trajectory.from_dict(bad_step)
    with pytest.raises(TrajectoryError, match="malformed trajectory"):
        Trajectory.from_dict({**data, "evaluation": {"score": 1.0}})
    with pytest.raises(TrajectoryError, match="malformed trajectory"):
        Trajectory.from_dict({**data, "surprise": 1})


def test_to_json_refuses_nan():
    trajectory = full()
    trajectory.steps[2].reward = float("nan")
    with pytest.raises(ValueError, match="not JSON compliant"):
        trajectory.to_json()


def test_end_reasons_are_the_documented_set():
    assert END_REASONS == (
        "terminated",
        "truncated",
        "budget",
        "policy_error",
        "timeout",
        "env_error",
    )
