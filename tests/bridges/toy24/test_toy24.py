from __future__ import annotations

import ast
import hashlib
import json
from collections import Counter
from fractions import Fraction

import pytest

import envharness
from envharness import (
    Action,
    BridgeError,
    EpisodeError,
    InvalidActionError,
    ToolSpec,
    UnknownTaskError,
)
from envharness.bridges import toy24
from envharness.bridges.toy24 import Toy24Env
from envharness.bridges.toy24 import env as toy24_env
from envharness.bridges.toy24 import solver as toy24_solver
from envharness.bridges.toy24.solver import is_solvable, puzzles, solutions, solve_steps
from envharness.schema import check_arguments

# -- helpers -----------------------------------------------------------------------------------

_BINOPS = {
    ast.Add: lambda x, y: x + y,
    ast.Sub: lambda x, y: x - y,
    ast.Mult: lambda x, y: x * y,
    ast.Div: lambda x, y: x / y,
}


def _evaluate(expression: str) -> tuple[Fraction, list[Fraction]]:
    """Exact value of an infix expression, and the numbers it uses (leaves)."""
    leaves: list[Fraction] = []

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.BinOp):
            return _BINOPS[type(node.op)](walk(node.left), walk(node.right))
        assert isinstance(node, ast.Constant), ast.dump(node)
        leaves.append(Fraction(node.value))
        return Fraction(node.value)

    return walk(ast.parse(expression, mode="eval").body), leaves


def combine(a: str, op: str, b: str) -> Action:
    return Action("combine", {"a": a, "op": op, "b": b})


UNDO = Action("undo", {})


def play(env: Toy24Env, *moves: tuple[str, str, str]):
    result = None
    for move in moves:
        result = env.step(combine(*move))
    return result


@pytest.fixture
def env() -> Toy24Env:
    env = Toy24Env("1-1-4-6")
    env.reset()
    return env


# -- the solver --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("numbers", "expected"),
    [
        ([4, 4, 10, 10], ["(10*10-4)/4"]),
        ([3, 3, 8, 8], ["8/(3-8/3)"]),
        ([1, 1, 1, 1], []),
        ([1, 5, 5, 5], ["5*(5-1/5)"]),
    ],
)
def test_solutions_known_puzzles(numbers, expected):
    assert solutions(numbers) == expected


@pytest.mark.parametrize(
    "numbers", [[1, 1, 4, 6], [1, 2, 3, 4], [3, 3, 8, 8], [1, 5, 1, 7], [13, 13, 13, 12]]
)
def test_every_solution_makes_24_with_each_number_once(numbers):
    found = solutions(numbers)
    assert found == sorted(set(found))
    for expression in found:
        value, leaves = _evaluate(expression)
        assert value == 24, expression
        assert Counter(leaves) == Counter(Fraction(n) for n in numbers), expression


def test_solutions_deduplicate_by_canonical_form():
    found = solutions([1, 1, 4, 6])
    assert "6*4*1*1" in found
    assert "6*4+1-1" in found
    assert not any(e in found for e in ("4*6*1*1", "1*1*4*6", "6*4-1+1"))


def test_solutions_accept_fractions_and_text():
    assert solutions([Fraction(8, 3), 3, 8]) == solutions(["8/3", "3", "8"])
    assert "8/(3-(8/3))" in solutions(["8/3", 3, 8])
    assert solutions([24]) == ["24"]
    assert solutions([]) == []


def test_solve_steps_replays_to_24():
    for numbers in ([4, 4, 10, 10], [3, 3, 8, 8], [1, 5, 1, 7], [1, 2, 3, 4]):
        left = [Fraction(n) for n in numbers]
        for a, op, b in solve_steps(numbers):
            left.remove(a)
            left.remove(b)
            left.append({"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}[op])
        assert left == [24]


def test_solve_steps_edge_cases():
    assert solve_steps([1, 1, 1, 1]) is None
    assert solve_steps([24]) == []
    assert solve_steps([23]) is None
    assert solve_steps([]) is None
    assert solve_steps([Fraction(8), Fraction(1, 3)]) == [(Fraction(8), "/", Fraction(1, 3))]
    assert is_solvable(["3", "8/3", "8"]) and not is_solvable([1, 1, 1, 1])


def test_solve_steps_prefers_integer_steps():
    assert solve_steps([1, 1, 4, 6]) == [(1, "*", 1), (4, "*", 1), (6, "*", 4)]
    assert solve_steps([1, 5, 1, 7]) == [(1, "+", 1), (7, "+", 5), (12, "*", 2)]
    # 3 3 8 8 has no integer-only solution, so fractions are used
    assert solve_steps([3, 3, 8, 8])[0] == (8, "/", 3)


@pytest.mark.parametrize("bad", [["abc", 1], [None, 1], ["1/0", 2]])
def test_solver_rejects_non_numbers(bad):
    with pytest.raises(ValueError, match="expected exact numbers"):
        solve_steps(bad)
    with pytest.raises(ValueError, match="expected exact numbers"):
        solutions(bad)


# -- tasks -------------------------------------------------------------------------------------


def _numeric(task_id: str) -> tuple[int, ...]:
    return tuple(int(n) for n in task_id.split("-"))


def test_exactly_1362_tasks_sorted_and_well_formed():
    every = Toy24Env.list_tasks("all")
    assert len(every) == 1362 == len(set(every)) == len(puzzles())
    assert every == sorted(every, key=_numeric)
    for task_id in every:
        numbers = _numeric(task_id)
        assert list(numbers) == sorted(numbers) and all(1 <= n <= 13 for n in numbers)
    assert {"1-1-4-6", "3-3-8-8", "4-4-10-10"} <= set(every)
    assert "1-1-1-1" not in every


def test_splits_are_disjoint_covering_and_deterministic():
    train, test = Toy24Env.list_tasks("train"), Toy24Env.list_tasks("test")
    assert not set(train) & set(test)
    assert sorted(train + test, key=_numeric) == Toy24Env.list_tasks("all")
    assert 0.15 < len(test) / 1362 < 0.25
    for task_id in test:
        assert int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) % 5 == 0
    assert Toy24Env.list_tasks() == train
    assert train == sorted(train, key=_numeric) and test == sorted(test, key=_numeric)


def test_list_tasks_returns_a_fresh_list():
    tasks = Toy24Env.list_tasks("test")
    tasks.clear()
    assert Toy24Env.list_tasks("test")


def test_list_tasks_errors():
    with pytest.raises(UnknownTaskError, match="unknown split 'dev'; valid splits: train, test"):
        Toy24Env.list_tasks("dev")
    with pytest.raises(BridgeError, match=r"unknown option\(s\) \['level'\]"):
        Toy24Env.list_tasks("train", level=3)
    assert Toy24Env.list_tasks("test", max_steps=5) == Toy24Env.list_tasks("test")


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", ["1-1-4", "a-b-c-d", "0-1-2-3", "1-1-4-14", "1-1-4-6-", ""])
def test_malformed_task_ids(task_id):
    with pytest.raises(UnknownTaskError, match="malformed task id .*list_tasks") as info:
        Toy24Env(task_id)
    assert info.value.task_id == task_id


def test_task_id_errors():
    with pytest.raises(UnknownTaskError, match="expected a str task id, got int"):
        Toy24Env(1146)
    with pytest.raises(UnknownTaskError, match="did you mean '1-1-4-6'"):
        Toy24Env("6-4-1-1")
    with pytest.raises(UnknownTaskError, match="cannot make 24, so it is not a task"):
        Toy24Env("1-1-1-1")


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3", None])
def test_bad_max_steps(bad):
    with pytest.raises(BridgeError, match=r"max_steps: expected a positive int, got"):
        Toy24Env("1-1-4-6", max_steps=bad)


def test_attributes_options_and_repr():
    env = Toy24Env("3-3-8-8")
    assert env.bridge_name == "toy24" and env.task_id == "3-3-8-8" and env.max_steps == 12
    assert env.bridge_options() == {}
    assert repr(env) == "<Toy24Env task='3-3-8-8'>"
    assert "3 3 8 8" in env.instruction
    for words in ("exactly once", "combine(a, op, b)", "undo()", "24", "+, -, * or /"):
        assert words in env.instruction
    other = Toy24Env("3-3-8-8", max_steps=5)
    assert other.bridge_options() == {"max_steps": 5} and other.max_steps == 5
    assert repr(other) == "<Toy24Env task='3-3-8-8' max_steps=5>"


def test_tools_are_gemini_safe_schemas():
    tools = {t.name: t for t in Toy24Env("1-1-4-6").tools()}
    assert set(tools) == {"combine", "undo"}
    combine_spec = tools["combine"].parameters
    assert combine_spec["required"] == ["a", "op", "b"]
    assert combine_spec["properties"]["a"]["type"] == "string"
    assert combine_spec["properties"]["b"]["type"] == "string"
    assert combine_spec["properties"]["op"]["enum"] == ["+", "-", "*", "/"]
    assert tools["undo"].parameters == {"type": "object", "properties": {}}
    for tool in tools.values():
        assert ToolSpec.from_dict(tool.to_dict()) == tool
        assert tool.to_openai()["function"]["name"] == tool.name
        assert tool.description


# -- the episode -------------------------------------------------------------------------------


def test_step_and_observe_before_reset():
    env = Toy24Env("1-1-4-6")
    with pytest.raises(EpisodeError, match=r"call reset\(\) first"):
        env.step(combine("4", "*", "6"))
    with pytest.raises(EpisodeError, match=r"call reset\(\) first"):
        env.observe()


def test_reset_shows_the_start_numbers(env):
    observation, info = env.reset(seed=123)
    assert observation == "Numbers left: 1 1 4 6\nStart: make 24 from 1 1 4 6."
    assert info == {"numbers": ["1", "1", "4", "6"]}
    assert env.observe() == observation
    assert env.reset(seed=7) == (observation, info)


def test_combine_replaces_two_numbers_and_appends_the_result(env):
    result = env.step(combine("4", "*", "6"))
    assert result == ("Numbers left: 1 1 24\nLast: 4 * 6 = 24", 0.0, False, False, {})
    assert env.observe() == "Numbers left: 1 1 24"  # the state, not the step's answer
    assert env.get_env_state()["numbers"] == ["1", "1", "24"]
    env.step(combine("1", "+", "24"))
    assert env.get_env_state()["numbers"] == ["1", "25"]


def test_undo_restores_order_and_counts_as_a_step(env):
    play(env, ("1", "+", "4"), ("6", "-", "5"))
    result = env.step(UNDO)
    assert result == ("Numbers left: 1 6 5\nUndid: 6 - 5 = 1", 0.0, False, False, {})
    env.step(UNDO)
    state = env.get_env_state()
    assert state["numbers"] == ["1", "1", "4", "6"] and state["history"] == []
    assert state["steps"] == 4


def test_exact_fractions():
    env = Toy24Env("3-3-8-8")
    env.reset()
    assert (
        env.step(combine("8", "/", "3")).observation == "Numbers left: 3 8 8/3\nLast: 8 / 3 = 8/3"
    )
    last = play(env, ("3", "-", "8/3"))
    assert last.observation == "Numbers left: 8 1/3\nLast: 3 - (8/3) = 1/3"
    final = env.step(combine("8", "/", "1/3"))
    assert final == (
        "Numbers left: 24\nLast: 8 / (1/3) = 24\nSolved: you made 24.",
        1.0,
        True,
        False,
        {},
    )


def test_negative_numbers_are_allowed():
    env = Toy24Env("1-2-3-4")
    env.reset()
    assert play(env, ("1", "-", "4")).observation == "Numbers left: 2 3 -3\nLast: 1 - 4 = -3"
    assert play(env, ("2", "-", "-3")).observation.endswith("Last: 2 - (-3) = 5")


def test_equal_operands_need_two_copies():
    env = Toy24Env("3-3-8-8")
    env.reset()
    result = env.step(combine("3", "-", "3"))
    assert result.info == {} and env.get_env_state()["numbers"] == ["8", "8", "0"]


@pytest.mark.parametrize(
    ("moves", "action", "reason"),
    [
        ((), combine("5", "+", "6"), "5 is not one of the numbers left (1 1 4 6)"),
        ((), combine("4", "+", "7"), "7 is not one of the numbers left (1 1 4 6)"),
        ((), combine("6", "*", "6"), "6 is used twice, but only one 6 is left"),
        ((), combine("abc", "+", "6"), "'abc' is not a number; write one of the numbers left"),
        ((), combine("1e5", "+", "6"), "'1e5' is not a number"),
        ((), combine("4", "+", "1/0"), "'1/0' is not a number"),
        ((("1", "-", "1"),), combine("4", "/", "0"), "cannot divide 4 by zero"),
        ((), UNDO, "nothing to undo; no combine is in effect"),
        (
            (("4", "*", "6"), ("1", "+", "1"), ("24", "-", "2")),
            combine("22", "+", "22"),
            "only one number is left (22); call undo() to take back a combine",
        ),
    ],
)
def test_impossible_actions_give_feedback(env, moves, action, reason):
    play(env, *moves)
    before = env.get_env_state()
    result = env.step(action)
    assert reason in result.info["invalid_action"]
    assert result.observation.startswith("Invalid action: ")
    assert result.observation.endswith(f"Numbers left: {' '.join(before['numbers'])}")
    assert (result.reward, result.terminated, result.truncated) == (0.0, False, False)
    assert env.observe().startswith(result.observation.split("\n")[-1])  # nothing changed
    after = env.get_env_state()
    assert after["steps"] == before["steps"] + 1
    assert {**after, "steps": 0} == {**before, "steps": 0}


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (Action("combine", {"a": 4, "op": "*", "b": "6"}), r"args\.a: expected string"),
        (Action("combine", {"a": "4", "op": "^", "b": "6"}), r"expected one of"),
        (Action("combine", {"a": "4", "op": "*"}), "missing required argument 'b'"),
        (Action("undo", {"steps": 2}), "unexpected argument 'steps'"),
        (Action("power", {}), "unknown tool; available tools: combine, undo"),
    ],
)
def test_schema_mismatches_raise(env, action, match):
    with pytest.raises(InvalidActionError, match=match):
        env.step(action)
    assert env.get_env_state()["steps"] == 0


def test_numeric_text_is_matched_by_value():
    env = Toy24Env("1-2-3-4")
    env.reset()
    play(env, (" 1 ", "+", "4.0"), ("5", "/", "2"))
    assert env.get_env_state()["numbers"] == ["3", "5/2"]
    result = env.step(combine("2.5", "*", "+3"))
    assert result.observation == "Numbers left: 15/2\nLast: (5/2) * 3 = 15/2" + (
        "\nOne number is left and it is not 24; call undo() to go back."
    )
    assert env.get_env_state()["history"][-1] == {"a": "5/2", "op": "*", "b": "3", "result": "15/2"}
    env.step(UNDO)
    result = env.step(combine(" 5 / 2 ", "-", "3.000"))
    assert result.observation.startswith("Numbers left: -1/2\nLast: (5/2) - 3 = -1/2")


def test_a_single_number_other_than_24_is_not_terminal(env):
    result = play(env, ("4", "*", "6"), ("1", "+", "1"), ("24", "*", "2"))
    assert (result.reward, result.terminated) == (0.0, False)
    assert "not 24; call undo()" in result.observation
    assert env.evaluate().success is False
    env.step(UNDO)
    env.step(UNDO)
    final = play(env, ("1", "*", "1"), ("24", "*", "1"))
    assert (final.reward, final.terminated) == (1.0, True)


def test_termination_and_reset(env):
    play(env, ("4", "*", "6"), ("1", "*", "1"))
    final = env.step(combine("24", "/", "1"))
    assert (final.reward, final.terminated, final.truncated) == (1.0, True, False)
    assert "Solved" in env.observe()
    with pytest.raises(EpisodeError, match=r"episode is over; call reset\(\)"):
        env.step(UNDO)
    env.reset()
    assert env.get_env_state()["numbers"] == ["1", "1", "4", "6"]
    assert env.step(combine("4", "*", "6")).terminated is False


def test_never_truncates_on_step_count():
    env = Toy24Env("1-1-4-6", max_steps=2)
    env.reset()
    for _ in range(30):
        assert env.step(UNDO).truncated is False
    assert env.get_env_state()["steps"] == 30


# -- evaluation and state ----------------------------------------------------------------------


def test_evaluate_is_pure_and_reads_the_state(env):
    first = env.evaluate()
    assert (first.success, first.score) == (False, 0.0)
    assert first.details == {"numbers": ["1", "1", "4", "6"], "steps": 0}
    assert env.evaluate() == first and env.get_env_state()["steps"] == 0
    play(env, ("4", "*", "6"), ("1", "*", "1"), ("24", "*", "1"))
    done = env.evaluate()
    assert (done.success, done.score, done.details) == (True, 1.0, {"numbers": ["24"], "steps": 3})


def test_env_state_is_a_fresh_json_able_copy(env):
    env.step(combine("4", "*", "6"))
    state = env.get_env_state()
    assert state == {
        "start": ["1", "1", "4", "6"],
        "numbers": ["1", "1", "24"],
        "history": [{"a": "4", "op": "*", "b": "6", "result": "24"}],
        "steps": 1,
        "solved": False,
    }
    assert json.loads(json.dumps(state)) == state
    state["numbers"].append("99")
    state["history"][0]["a"] = "x"
    state["start"].clear()
    assert env.get_env_state()["numbers"] == ["1", "1", "24"]
    assert env.get_env_state()["history"][0]["a"] == "4"
    assert env.get_env_state()["start"] == ["1", "1", "4", "6"]


def test_env_state_schema_describes_the_state(env):
    schema = env.env_state_schema()
    assert set(schema["properties"]) == set(env.get_env_state()) == set(schema["required"])
    for name, field in schema["properties"].items():
        assert field.get("description"), name
    play(env, ("4", "*", "6"), ("1", "*", "1"), ("24", "*", "1"))
    assert check_arguments(env.get_env_state(), schema) == []
    schema["properties"].clear()
    assert env.env_state_schema()["properties"]


def test_state_before_reset_shows_the_start():
    env = Toy24Env("3-3-8-8")
    assert env.get_env_state() == {
        "start": ["3", "3", "8", "8"],
        "numbers": ["3", "3", "8", "8"],
        "history": [],
        "steps": 0,
        "solved": False,
    }


def _round_trip(env: Toy24Env) -> Toy24Env:
    return Toy24Env.from_state(json.loads(json.dumps(env.save_state())))


def test_save_and_from_state_round_trip():
    env = Toy24Env("3-3-8-8", max_steps=20)
    fresh = _round_trip(env)
    assert fresh.get_env_state() == env.get_env_state() and fresh.max_steps == 20
    with pytest.raises(EpisodeError):
        fresh.observe()
    env.reset()
    moves = [combine("8", "/", "3"), combine("4", "+", "4"), combine("3", "-", "8/3")]
    for action in moves:
        env.step(action)
        copy = _round_trip(env)
        assert copy.get_env_state() == env.get_env_state()
        assert copy.observe() == env.observe()
        assert copy.evaluate() == env.evaluate()
        assert copy.save_state() == env.save_state()
    # the copy plays on exactly like the original, undo included
    for action in (UNDO, UNDO, combine("8", "/", "3"), combine("3", "-", "8/3")):
        assert copy.step(action) == env.step(action)
    final = env.step(combine("8", "/", "1/3"))
    assert final.terminated
    done = _round_trip(env)
    assert done.evaluate().success and done.save_state()["terminated"] is True
    with pytest.raises(EpisodeError, match="episode is over"):
        done.step(UNDO)


def test_observe_describes_the_numbers_left(env):
    assert env.observe() == "Numbers left: 1 1 4 6\nStart: make 24 from 1 1 4 6."
    env.step(combine("1", "+", "1"))
    env.mark_episode_start()  # as Setups does: the state is the start now
    assert env.get_env_state()["steps"] == 0 == env.evaluate().details["steps"]
    assert env.observe() == "Numbers left: 4 6 2\nStart: make 24 from 4 6 2."
    assert env.get_env_state()["history"] == [{"a": "1", "op": "+", "b": "1", "result": "2"}]
    env.step(combine("4", "*", "6"))
    assert env.observe() == "Numbers left: 2 24"
    env.step(combine("2", "+", "24"))
    assert env.observe() == (
        "Numbers left: 26\nOne number is left and it is not 24; call undo() to go back."
    )
    copy = _round_trip(env)
    assert copy.get_env_state() == env.get_env_state() and copy.observe() == env.observe()
    assert copy.get_env_state()["steps"] == 2


def test_save_state_contents(env):
    env.step(combine("9", "+", "1"))
    saved = env.save_state()
    assert saved["bridge"] == "toy24" and saved["task_id"] == "1-1-4-6"
    assert saved["options"] == {} and saved["steps"] == 1 and saved["started"] is True
    assert saved["observation"].startswith("Invalid action: 9 is not one of the numbers left")
    saved["history"].append({"a": "1", "op": "+", "b": "1", "result": "2"})
    assert env.save_state()["history"] == []


def _saved(**changes):
    env = Toy24Env("1-1-4-6")
    env.reset()
    env.step(combine("4", "*", "6"))
    state = env.save_state()
    state.update(changes)
    return state


@pytest.mark.parametrize(
    ("state", "match"),
    [
        ([1, 2], "expected a dict, got list"),
        ({"bridge": "toy24"}, r"missing key\(s\) \['task_id'"),
        (_saved(bridge="alfworld"), "'bridge' is 'alfworld'"),
        (_saved(options={"level": 2}), "'options' must be a dict with at most 'max_steps'"),
        (_saved(options={"max_steps": 0}), "expected a positive int"),
        (_saved(start=["1", "2", "3", "4"]), "'start' .* does not match task '1-1-4-6'"),
        (_saved(history="4*6"), "'history' must be a list"),
        (_saved(history=[{"a": "4", "op": "*"}]), r"history\[0\] must have keys a, op, b, result"),
        (
            _saved(history=[{"a": "4", "op": "%", "b": "6", "result": "4"}]),
            r"history\[0\] is not a valid combine",
        ),
        (
            _saved(history=[{"a": "9", "op": "*", "b": "6", "result": "54"}]),
            r"history\[0\] cannot be replayed: 9 is not one of the numbers left",
        ),
        (
            _saved(history=[{"a": "4", "op": "*", "b": "6", "result": "25"}]),
            r"history\[0\] says result '25', replay gives '24'",
        ),
        (_saved(numbers=["24", "1", "1"]), "'numbers' .* does not match the history"),
        (_saved(steps=-1), "'steps' must be a non-negative int"),
        (_saved(started="yes"), "'started' and 'terminated' must be booleans"),
        (_saved(observation=None), "'observation' must be a str once started"),
        (_saved(terminated=True), "'terminated' is True but the numbers say otherwise"),
        (_saved(started=False, observation=None), "has not started"),
    ],
)
def test_from_state_rejects_malformed_states(state, match):
    with pytest.raises(BridgeError, match=match):
        Toy24Env.from_state(state)


def test_from_state_rejects_unknown_tasks():
    with pytest.raises(UnknownTaskError, match="cannot make 24"):
        Toy24Env.from_state(_saved(task_id="1-1-1-1"))


# -- oracle and stage candidates ---------------------------------------------------------------


def test_oracle_solves_every_task_from_reset():
    env = None
    for task_id in Toy24Env.list_tasks("all"):
        env = Toy24Env(task_id)
        env.reset()
        for _ in range(3):
            action = env.oracle_actions()[0]
            shown = env.get_env_state()["numbers"]
            assert action.args["a"] in shown and action.args["b"] in shown
            result = env.step(action)
            assert "invalid_action" not in result.info
            if result.terminated:
                break
        assert env.evaluate().success, task_id
        assert env.oracle_actions() == []


def test_oracle_is_empty_when_unsolvable(env):
    play(env, ("1", "+", "1"), ("4", "+", "6"))
    assert env.get_env_state()["numbers"] == ["2", "10"]
    assert env.oracle_actions() == []
    env.step(UNDO)
    assert env.oracle_actions() == []  # 2 4 6 cannot make 24 either
    env.step(UNDO)
    plan = env.oracle_actions()
    assert plan and all(a.tool == "combine" for a in plan)
    for action in plan:
        env.step(action)
    assert env.evaluate().success


@pytest.mark.parametrize("task_id", Toy24Env.list_tasks("all")[::97] + ["3-3-8-8", "4-4-10-10"])
def test_stage_candidates_are_valid_and_keep_the_task_solvable(task_id):
    env = Toy24Env(task_id)
    candidates = env.stage_candidates()
    assert candidates == env.stage_candidates()
    assert 1 <= len(candidates) <= 7
    env.reset()
    assert candidates[0] == env.oracle_actions()[:1]
    finals = set()
    for actions in candidates:
        env.reset()
        for action in actions:
            result = env.step(action)
            assert "invalid_action" not in result.info and not result.terminated
        assert env.oracle_actions(), (task_id, actions)
        finals.add(tuple(sorted(env.get_env_state()["numbers"])))
    assert len(finals) == len(candidates)


def test_stage_candidates_single_solution_task():
    candidates = Toy24Env("3-3-8-8").stage_candidates()
    assert candidates == [
        [combine("8", "/", "3")],
        [combine("8", "/", "3"), combine("3", "-", "8/3")],
    ]


def test_stage_candidates_prefer_harder_starts():
    env = Toy24Env("1-2-3-4")
    others = [c[0] for c in env.stage_candidates()[2:]]
    assert len(others) == 5
    counts = []
    for action in others:
        env.reset()
        env.step(action)
        counts.append(len(solutions(env.get_env_state()["numbers"])))
    assert counts == sorted(counts)


# -- registry and module -----------------------------------------------------------------------


def test_load_through_the_registry():
    env = envharness.load_bridge("toy24", task_id="4-4-10-10", max_steps=8)
    assert isinstance(env, Toy24Env) and env.max_steps == 8
    assert envharness.list_tasks("toy24", split="test") == Toy24Env.list_tasks("test")
    with pytest.raises(UnknownTaskError, match="list_tasks"):
        envharness.load_bridge("toy24", task_id="nope")


def test_close_is_idempotent_and_context_manager_works():
    with Toy24Env("1-1-4-6") as env:
        env.reset()
    env.close()
    env.close()


@pytest.mark.parametrize("module", [toy24, toy24_env, toy24_solver])
def test_public_names_import(module):
    for name in module.__all__:
        assert getattr(module, name) is not None


@pytest.mark.parametrize("task_id", ["1-1-4-6", "3-3-8-8", "4-4-10-10"])
def test_passes_the_conformance_suite(task_id):
    from envharness.testing import check_bridge

    report = check_bridge(lambda: Toy24Env(task_id))
    assert "save_state" in report.passed and "determinism" in report.passed
    moves = [combine("9", "+", "1"), UNDO, combine(task_id[0], "+", task_id[2]), UNDO]
    assert check_bridge(Toy24Env(task_id), actions=moves).passed


# -- task fingerprint ---------------------------------------------------------------------------


def test_task_fingerprint_is_the_start_numbers_only():
    env = Toy24Env("4-4-10-10")
    fingerprint = env.task_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    env.reset()
    env.step(Action("combine", {"a": "10", "op": "*", "b": "10"}))
    assert env.task_fingerprint() == fingerprint
    env.reset()
    assert env.task_fingerprint() == fingerprint
    assert Toy24Env("4-4-10-10", max_steps=3).task_fingerprint() == fingerprint
    assert Toy24Env.from_state(env.save_state()).task_fingerprint() == fingerprint
    assert Toy24Env("3-3-8-8").task_fingerprint() != fingerprint
