from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import envharness
from envharness.bridges import registry
from envharness.cli import app
from envharness.harness import HarnessSpec, Setups
from envharness.testing import CHECKS, FakeEnv, check_bridge

WIDE = {"COLUMNS": "250"}  # keeps rich tables from wrapping the text the tests look for


class BlockingFake(FakeEnv):
    """Blocks every noop, as a Rules component would, and truncates after three steps."""

    def step(self, action):
        result = super().step(action)
        if action.tool == "noop":
            result = result._replace(observation="Blocked: no waiting.", info={"blocked": True})
        if self.state["steps"] >= 3 and not result.terminated:
            result = result._replace(truncated=True)
        self.observation = result.observation
        return result


class DriftingFake(FakeEnv):
    """Fails the evaluate check: evaluating changes the state."""

    def evaluate(self):
        self.state["steps"] += 1
        return super().evaluate()


class EmptyFake(FakeEnv):
    SPLITS = {"train": (), "test": ()}


# Clear the screen, set the window title, write the clipboard (OSC 52), ring the bell.
ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x9b"


class HostileFake(FakeEnv):
    """Answers every step with terminal control sequences; its instruction carries them too."""

    instruction = f"Say hello.{ESCAPES}"

    def step(self, action):
        result = super().step(action)
        return result._replace(observation=f"You said it.{ESCAPES}")


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture(autouse=True)
def fake_bridges():
    names = {"fake": FakeEnv, "fake-blocking": BlockingFake, "fake-drifting": DriftingFake}
    names["fake-empty"] = EmptyFake
    names["fake-hostile"] = HostileFake
    for name, cls in names.items():
        envharness.register(name, cls)
    yield
    for name in names:
        registry._REGISTERED.pop(name, None)


def assert_clean_error(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1  # one line
    assert "Traceback" not in result.output


# -- version / bridges / tasks ---------------------------------------------------------------------


def test_version(runner):
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"envharness {envharness.__version__}\n"


def test_bridges_lists_each_bridge_and_its_status(runner, tmp_path, monkeypatch):
    (tmp_path / "eh_needs_extra.py").write_text(
        "from envharness.errors import DependencyNotInstalled\n"
        "raise DependencyNotInstalled('textworld', 'textworld')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    envharness.register("needs-extra", "eh_needs_extra:Env")
    envharness.register("broken", "eh_no_such_module_anywhere:Env")
    try:
        result = runner.invoke(app, ["bridges"], env=WIDE)
    finally:
        registry._REGISTERED.pop("needs-extra", None)
        registry._REGISTERED.pop("broken", None)
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "ok — The game of 24" in lines["toy24"]
    assert "envharness.bridges.toy24.env:Toy24Env" in lines["toy24"]
    assert "ok — A small, deterministic bridge for tests" in lines["fake"]
    assert "test_cli:BlockingFake" in lines["fake-blocking"]
    assert "missing extra:" in lines["needs-extra"]
    assert "pip install 'envharness[textworld]'" in lines["needs-extra"]
    assert "import failed: ModuleNotFoundError" in lines["broken"]


def test_tasks_prints_one_id_per_line(runner):
    result = runner.invoke(app, ["tasks", "fake"])
    assert result.exit_code == 0
    assert result.stdout == "fake\n"
    assert result.stderr == "1 of 1 tasks in split 'train' of 'fake'\n"


def test_tasks_split_and_limit(runner):
    result = runner.invoke(app, ["tasks", "toy24", "--split", "test", "--limit", "3"])
    assert result.exit_code == 0
    ids = result.stdout.splitlines()
    assert ids == envharness.list_tasks("toy24", split="test")[:3]
    assert result.stderr.startswith("3 of ")
    assert "in split 'test' of 'toy24'" in result.stderr


def test_tasks_limit_zero_prints_nothing(runner):
    result = runner.invoke(app, ["tasks", "fake", "-n", "0"])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "0 of 1 tasks in split 'train' of 'fake'\n"


def test_tasks_errors(runner):
    assert_clean_error(runner.invoke(app, ["tasks", "toy24", "--split", "dev"]), "unknown split")
    assert_clean_error(runner.invoke(app, ["tasks", "nope"]), "no bridge named 'nope'")
    result = runner.invoke(app, ["tasks", "fake", "--limit", "-1"])
    assert result.exit_code == 2
    assert "Invalid value" in result.output


# -- play ----------------------------------------------------------------------------------------


def test_play_toy24_to_success(runner):
    moves = "combine 10 * 10\ncombine 100 - 4\ncombine 96 / 4\n"
    result = runner.invoke(app, ["play", "toy24", "--task", "4-4-10-10"], input=moves)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "toy24 · task 4-4-10-10" in out
    assert "Make 24 from the numbers 4 4 10 10" in out
    assert "combine <a> <op> <b>" in out
    assert "<op>: one of + - * /" in out
    assert "[1/12] combine(a='10', op='*', b='10')" in out
    assert "[3/12] combine(a='96', op='/', b='4')" in out
    assert "reward 1.0 · terminated" in out
    assert "success: yes · score 1.0 · 3 step(s) · ended: terminated" in out


def test_play_fake_session_commands(runner):
    lines = [
        "help",
        "tools",
        "state",
        "",
        "shout loud",  # not a tool: goes to say, the only text tool
        "noop 1",  # a bad action does not use a step
        'say ""',  # the env rejects it (info["invalid_action"])
        "hello",
    ]
    result = runner.invoke(app, ["play", "fake"], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "fake · task fake" in out  # the first train task by default
    assert "Instruction: Say the word 'hello'." in out
    assert "Commands: help, tools, state" in out
    assert out.count("say <text>") == 2  # at the start and for "tools"
    assert '"said": []' in out
    assert "[1/10] say(text='shout loud')" in out
    assert "invalid action: tool 'noop': too many arguments: 1 given, 0 expected" in out
    assert "invalid: nothing to say" in out
    assert "[3/10] say(text='hello')" in out
    assert "success: yes · score 1.0 · 3 step(s) · ended: terminated" in out
    assert 'details: {"said": 2, "target": "hello"}' in out


def test_play_ends_at_end_of_input(runner):
    result = runner.invoke(app, ["play", "fake", "--task", "mine"], input="noop\n")
    assert result.exit_code == 0
    assert "fake · task mine" in result.stdout
    assert "success: no · score 0.0 · 1 step(s) · ended: end of input" in result.stdout


def test_play_quit(runner):
    result = runner.invoke(app, ["play", "fake"], input="quit\nhello\n")
    assert result.exit_code == 0
    assert "success: no · score 0.0 · 0 step(s) · ended: quit" in result.stdout


def test_play_stops_when_the_budget_is_used(runner):
    result = runner.invoke(app, ["play", "fake", "--max-steps", "2"], input="noop\nnoop\nhello\n")
    assert result.exit_code == 0
    assert "[2/2] noop()" in result.stdout
    assert "say(text='hello')" not in result.stdout
    assert "ended: step budget used" in result.stdout


def test_play_escapes_terminal_control_sequences_from_the_env(runner):
    result = runner.invoke(app, ["play", "fake-hostile"], input="noop\nhello\n")
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout
    assert "You said it.\\x1b[2J\\x1b]0;pwned" in result.stdout  # shown, harmless


def test_play_shows_blocked_and_truncated(runner):
    result = runner.invoke(app, ["play", "fake-blocking"], input="noop\nhi\nho\nhello\n")
    assert result.exit_code == 0
    assert "Blocked: no waiting.\nreward 0.0 · blocked by a rule\n" in result.stdout
    assert "reward 0.0 · truncated" in result.stdout
    assert "success: no · score 0.0 · 3 step(s) · ended: truncated" in result.stdout


def test_play_errors(runner):
    assert_clean_error(
        runner.invoke(app, ["play", "toy24", "--task", "1-2-3"]), "malformed task id '1-2-3'"
    )
    assert_clean_error(runner.invoke(app, ["play", "nope", "--task", "x"]), "no bridge named")
    assert_clean_error(
        runner.invoke(app, ["play", "fake-empty"]), "[fake-empty] the train split is empty"
    )
    result = runner.invoke(app, ["play"])
    assert result.exit_code == 2
    assert "give a bridge NAME or --harness" in result.output
    result = runner.invoke(app, ["play", "fake", "--max-steps", "0"])
    assert result.exit_code == 2


# -- play --harness ------------------------------------------------------------------------------


@pytest.fixture
def spec_file(tmp_path):
    setup = [{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}]
    env = Setups(envharness.load_bridge("toy24", task_id="4-4-10-10"), setup)
    path = tmp_path / "spec.json"
    path.write_text(HarnessSpec.from_env(env).to_json())
    env.close()
    return path


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["toy24"],
        ["toy24", "--task", "4-4-10-10"],
    ],
)
def test_play_with_a_harness(runner, spec_file, args):
    moves = "combine 100 - 4\ncombine 96 / 4\n"
    result = runner.invoke(app, ["play", *args, "--harness", str(spec_file)], input=moves)
    assert result.exit_code == 0, result.output
    assert "Numbers left: 4 4 100" in result.stdout  # the Setups start state
    assert "success: yes · score 1.0 · 2 step(s) · ended: terminated" in result.stdout


def test_play_harness_must_match_name_and_task(runner, spec_file):
    assert_clean_error(
        runner.invoke(app, ["play", "fake", "--harness", str(spec_file)]),
        "is a harness over bridge 'toy24', not 'fake'; omit NAME or make it match",
    )
    assert_clean_error(
        runner.invoke(app, ["play", "--task", "1-1-4-6", "--harness", str(spec_file)]),
        "is a harness on task '4-4-10-10', not '1-1-4-6'; omit --task or make it match",
    )


def test_play_harness_file_errors(runner, spec_file, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert_clean_error(
        runner.invoke(app, ["play", "--harness", str(bad)]), "spec is not valid JSON"
    )
    result = runner.invoke(app, ["play", "--harness", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


# -- check-bridge --------------------------------------------------------------------------------


def test_check_bridge_passes(runner):
    result = runner.invoke(app, ["check-bridge", "fake"])
    assert result.exit_code == 0, result.output
    assert "✓ save_state" in result.stdout
    assert "played: say(text='hello')" in result.stdout
    assert "fake task 'fake' passed all 13 checks" in result.stdout


def test_check_bridge_toy24_defaults_to_the_first_train_task(runner):
    result = runner.invoke(app, ["check-bridge", "toy24"])
    assert result.exit_code == 0, result.output
    first = envharness.list_tasks("toy24")[0]
    assert f"toy24 task {first!r} passed all 13 checks" in result.stdout


def test_check_bridge_reports_failures_with_exit_code_1(runner):
    result = runner.invoke(app, ["check-bridge", "fake-drifting", "--task", "t1", "--seed", "3"])
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "✓ attributes" in out
    assert "✓ evaluate" not in out
    assert "✗ evaluate: after reset: expected evaluate() to leave the state unchanged" in out
    assert "fake-drifting task 't1':" in out
    assert "failure(s) in evaluate" in out


def test_check_bridge_errors(runner):
    assert_clean_error(runner.invoke(app, ["check-bridge", "toy24", "--task", "0-0-0-0"]), "toy24")
    assert_clean_error(runner.invoke(app, ["check-bridge", "nope"]), "no bridge named 'nope'")


def test_state_command_prints_json(runner):
    result = runner.invoke(app, ["play", "fake"], input="say hi\nstate\n")
    start = result.stdout.index("{")
    end = result.stdout.index("}", start) + 1
    assert json.loads(result.stdout[start:end]) == {"said": ["hi"], "steps": 1, "done": False}


def test_blocking_fake_is_a_conforming_bridge():
    # the CLI tests rely on it behaving like a bridge
    assert check_bridge(BlockingFake, actions=[{"tool": "noop", "args": {}}]).passed == CHECKS


# -- bridge options (--option KEY=VALUE) -----------------------------------------------------------


def test_parse_options_reads_json_values_and_falls_back_to_text():
    from envharness.cli._app import parse_options

    parsed = parse_options(["max_steps=3", "target=bye", "flag=true", 'kw={"a": [1]}', "path=a=b"])
    assert parsed == {
        "max_steps": 3,
        "target": "bye",
        "flag": True,
        "kw": {"a": [1]},
        "path": "a=b",
    }
    assert parse_options(None) == {} == parse_options([])


@pytest.mark.parametrize(
    ("pairs", "match"),
    [
        (["nokey"], "expected KEY=VALUE"),
        (["=1"], "expected KEY=VALUE"),
        (["a=1", "a=2"], "given twice"),
    ],
)
def test_parse_options_rejects_malformed_pairs(pairs, match):
    import typer

    from envharness.cli._app import parse_options

    with pytest.raises(typer.BadParameter, match=match):
        parse_options(pairs)


def test_play_passes_bridge_options(runner):
    # the fake bridge's target word is an option: with target=bye, saying bye wins
    result = runner.invoke(app, ["play", "fake", "-O", "target=bye"], input="say bye\n", env=WIDE)
    assert result.exit_code == 0, result.output
    assert "success: yes" in result.output and '"target": "bye"' in result.output
    without = runner.invoke(app, ["play", "fake"], input="say bye\n", env=WIDE)
    assert "success: no" in without.output


def test_check_bridge_passes_bridge_options(runner):
    result = runner.invoke(app, ["check-bridge", "fake", "-O", "max_steps=4"], env=WIDE)
    assert result.exit_code == 0, result.output


def test_rollout_records_bridge_options_in_each_spec(runner, tmp_path):
    out = tmp_path / "run"
    args = ["rollout", "fake", "-p", "random", "-k", "2", "-w", "1", "-o", str(out)]
    result = runner.invoke(app, [*args, "-O", "max_steps=2", "-O", "target=bye"], env=WIDE)
    assert result.exit_code == 0, result.output
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 2
    for line in lines:
        bridge = json.loads(line)["spec"]["bridge"]
        assert bridge["options"]["target"] == "bye" and bridge["options"]["max_steps"] == 2


def test_options_and_a_harness_file_exclude_each_other(runner, spec_file):
    for command in (["play"], ["rollout", "-w", "1"]):
        result = runner.invoke(app, [*command, "--harness", str(spec_file), "-O", "max_steps=2"])
        assert result.exit_code == 2
        assert "holds its bridge options" in result.output.replace("\n", " ")


def test_rig_passes_bridge_options_to_every_task(tmp_path):
    pytest.importorskip("langgraph", reason="the rigger needs the 'rigger' extra")
    out = tmp_path / "rig"
    args = ["rig", "toy24", "-n", "1", "--k-observe", "2", "--k-validate", "2"]
    result = CliRunner().invoke(
        app, [*args, "--max-iterations", "1", "-O", "max_steps=6", "-o", str(out)], env=WIDE
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "rig.json").read_text())["bridge_options"] == {"max_steps": 6}
    stored = (out / "trajectories" / "trajectories.jsonl").read_text().splitlines()
    assert stored and all(
        json.loads(line)["spec"]["bridge"]["options"] == {"max_steps": 6} for line in stored
    )


def test_every_cli_console_escapes_control_characters_in_tables_and_strings():
    import io

    from rich.table import Table

    from envharness.cli._app import SafeConsole, printable

    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, highlight=False)
    table = Table("error")
    table.add_row(f"RulesError: boom{ESCAPES}")
    console.print(table)
    console.print(f"rules code: {ESCAPES}", markup=False)
    written = buffer.getvalue()
    assert "\x1b[2J" not in written and "\x1b]" not in written and "\x9b" not in written
    assert "\\x1b[2J" in written
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"
