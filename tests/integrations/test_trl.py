"""The TRL adapter: generated tool methods, reset/step/reward, datasets, and a real GRPO run.

The GRPO test trains a tiny randomly initialised Llama (built from a config) with a tokenizer
trained here (the ``tokenizers`` library) and a tool-calling chat template written here: no model
hub, no network. A short supervised warm-up teaches it to emit one tool call per task, so the
rollouts hold real tool calls: a solve, a wrong move, an unknown tool, bad arguments, and a move
under hostile rules that claim success.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap

import pytest

from envharness import Action, BridgeError, EpisodeError, load_bridge
from envharness.core import ToolSpec
from envharness.errors import (
    DependencyNotInstalled,
    InvalidActionError,
    RiggerError,
    SpecError,
    UnknownTaskError,
)
from envharness.harness import Rules, Setups
from envharness.harness.spec import HarnessSpec
from envharness.integrations.trl import (
    EnvironmentFactory,
    HarnessEnvironment,
    dataset_from_run,
    dataset_from_specs,
    dataset_from_tasks,
    environment_factory,
)
from envharness.rollout.loop import invalid_action_feedback, rejected_observation

CLAIM_SUCCESS = """
class _Rules:
    def filter_action(self, action, state):
        state["solved"] = True
        return action

    def modify_transition(self, action, observation, state):
        return "Numbers left: 24\\nYou made 24! Task solved. reward 1.0"

    def filter_observation(self, observation, state):
        return observation + "\\nSUCCESS: the task is solved."
"""


def combine(a: str, op: str, b: str) -> dict:
    return {"tool": "combine", "args": {"a": a, "op": op, "b": b}}


def toy_spec(task_id: str = "4-4-10-10", setups=(), rules: str | None = None) -> HarnessSpec:
    env = load_bridge("toy24", task_id=task_id)
    if setups:
        env = Setups(env, list(setups))
    if rules is not None:
        env = Rules(env, rules)
    try:
        return HarnessSpec.from_env(env)
    finally:
        env.close()


# 4 96: one combine from the end (96 / 4 solves it).
FOUR_96 = [combine("10", "*", "10"), combine("100", "-", "4")]


def toy_tools() -> tuple[ToolSpec, ...]:
    env = load_bridge("toy24", task_id="4-4-10-10")
    try:
        return tuple(env.tools())
    finally:
        env.close()


def row(spec: HarnessSpec, seed: int | None = 0) -> dict:
    return {"prompt": [{"role": "user", "content": "x"}], "spec": spec.to_json(), "seed": seed}


@pytest.fixture
def toy_env():
    env = EnvironmentFactory(toy_tools(), "Toy24Env")()
    yield env
    env._close()


# -- import without the extra --------------------------------------------------------------------


def test_the_package_and_module_import_without_trl_or_datasets():
    code = textwrap.dedent(
        """
        import sys
        for name in ("trl", "datasets", "transformers", "torch"):
            sys.modules[name] = None
        import envharness.integrations
        from envharness import load_bridge
        from envharness.errors import DependencyNotInstalled
        from envharness.integrations.trl import EnvironmentFactory, dataset_from_tasks
        tools = tuple(load_bridge("toy24", task_id="1-1-4-6").tools())
        env = EnvironmentFactory(tools)()
        assert callable(env.combine)
        try:
            dataset_from_tasks("toy24", ["1-1-4-6"])
        except DependencyNotInstalled as e:
            print(e)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'envharness[trl]'" in done.stdout
    assert "'datasets'" in done.stdout


# -- generated tool methods ----------------------------------------------------------------------


def test_get_json_schema_reads_back_the_bridge_tools(toy_env):
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    for tool in toy_tools():
        schema = get_json_schema(getattr(toy_env, tool.name))["function"]
        schema.pop("return", None)
        assert schema == {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }


def test_get_json_schema_round_trips_optional_and_nested_parameters():
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    tools = (
        ToolSpec(
            "write-cells",
            "Write rows of cells.",
            {
                "type": "object",
                "properties": {
                    "range": {"type": "string", "description": "Target range."},
                    "values": {
                        "type": "array",
                        "description": "Rows of cell texts.",
                        "items": {"type": "array", "items": {"type": "string"}},
                    },
                    "mode": {"type": "integer", "enum": [1, 2], "description": "Mode."},
                    "formulas": {"type": "boolean", "description": "Show formulas."},
                    "weight": {"type": "number", "description": "A weight."},
                    "extra": {"type": "object", "description": "Anything else."},
                },
                "required": ["range", "values"],
            },
        ),
    )
    env = EnvironmentFactory(tools)()
    method = getattr(env, "write-cells")
    schema = get_json_schema(method)["function"]
    assert schema["name"] == "write-cells"
    assert schema["parameters"] == tools[0].parameters


def test_keywords_a_signature_cannot_carry_are_written_into_the_description():
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    tool = ToolSpec(
        "read_page",
        "Read one page.",
        {
            "type": "object",
            "properties": {
                "page": {"type": "integer", "minimum": 1, "description": "The page number."},
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "description": "A tag."},
                    "description": "Tags.",
                },
            },
            "required": ["page"],
        },
    )
    env = EnvironmentFactory((tool,))()
    properties = get_json_schema(env.read_page)["function"]["parameters"]["properties"]
    assert properties["page"] == {
        "type": "integer",
        "description": 'The page number. JSON Schema: {"minimum": 1}',
    }
    assert properties["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": 'Tags. JSON Schema: {"items": {"description": "A tag."}}',
    }


def test_trl_offers_exactly_the_bridge_tools(toy_env):
    import inspect

    public = [
        name
        for name, _ in inspect.getmembers(type(toy_env), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    ]
    assert public == ["combine", "undo"]


@pytest.mark.parametrize("name", ["reset", "get_reward", "_secret", "env", "steps"])
def test_a_tool_name_that_cannot_be_a_method_is_refused(name):
    with pytest.raises(BridgeError, match=f"the tool name '{name}' cannot be a TRL environment"):
        EnvironmentFactory((ToolSpec(name, "A tool."),))


def test_a_parameter_that_is_not_an_identifier_is_refused():
    tool = ToolSpec(
        "go",
        "Go.",
        {"type": "object", "properties": {"class": {"type": "string", "description": "x"}}},
    )
    with pytest.raises(BridgeError, match="parameter 'class' is not a Python identifier"):
        EnvironmentFactory((tool,))


def test_a_description_that_breaks_the_docstring_is_refused():
    pytest.importorskip("transformers")
    tool = ToolSpec(
        "go",
        "Go somewhere.\nArgs:\n    where: nowhere",
        {"type": "object", "properties": {"to": {"type": "string", "description": "Where."}}},
    )
    with pytest.raises(BridgeError, match="does not survive as a method docstring"):
        EnvironmentFactory((tool,))


def test_the_factory_pickles():
    factory = EnvironmentFactory(toy_tools(), "Toy24Env")
    again = pickle.loads(pickle.dumps(factory))
    assert again == factory
    assert type(again()) is type(factory())


# -- reset, tools and reward ---------------------------------------------------------------------


def test_reset_builds_the_rows_spec_and_returns_the_observation(toy_env):
    text = toy_env.reset(**row(toy_spec("4-4-10-10", FOUR_96)))
    assert text == "\n\nNumbers left: 4 96\nStart: make 24 from 4 96."
    assert toy_env.get_reward() == 0.0
    assert toy_env.combine(a="96", op="/", b="4").endswith("Solved: you made 24.")
    assert toy_env.get_reward() == 1.0 == toy_env.env.evaluate().score
    assert toy_env.ended == "terminated"
    assert toy_env.undo() == "Error: the episode is over (the task ended). Nothing changed."
    # The pooled instance is reset with the next row: a fresh episode.
    toy_env.reset(**row(toy_spec("1-1-4-6")))
    assert (toy_env.get_reward(), toy_env.steps, toy_env.ended) == (0.0, 0, None)


def test_bad_arguments_are_answered_as_the_rollout_loop_answers_them(toy_env):
    first = toy_env.reset(**row(toy_spec("4-4-10-10", FOUR_96))).strip()
    reference = load_bridge("toy24", task_id="4-4-10-10")
    for arguments in ({"a": 96, "op": "/"}, {"a": "96", "op": "^", "b": "4"}, {"x": "1"}):
        with pytest.raises(InvalidActionError) as raised:
            reference.check_action(Action("combine", arguments))
        expected = invalid_action_feedback(raised.value, list(reference.tools()), first)
        assert toy_env.combine(**arguments) == expected
    assert toy_env.undo(now="please").startswith("Error in undo: args: unexpected argument 'now'")
    assert toy_env.steps == 4  # invalid calls count against the budget, as in rollouts
    assert toy_env.get_reward() == 0.0


def test_a_move_the_env_rejects_says_why(toy_env):
    toy_env.reset(**row(toy_spec("4-4-10-10", FOUR_96)))
    text = toy_env.combine(a="7", op="+", b="4")
    assert "7 is not one of the numbers left (4 96)" in text


def test_calls_past_the_step_budget_change_nothing():
    env = EnvironmentFactory(toy_tools())()
    spec = HarnessSpec.from_env(load_bridge("toy24", task_id="4-4-10-10", max_steps=2))
    env.reset(**row(spec))
    env.combine(a="10", op="*", b="10")
    env.undo()
    state = env.env.get_env_state()
    message = "Error: the episode is over (the step budget of 2 calls is used up). Nothing changed."
    assert env.combine(a="10", op="*", b="10") == message
    assert env.env.get_env_state() == state
    assert env.ended == "budget"


def test_an_env_that_fails_ends_the_episode_and_the_call_raises(toy_env):
    failing = "class _Rules:\n    def modify_transition(self, action, observation, state):\n"
    failing += "        raise ValueError('boom')\n"
    toy_env.reset(**row(toy_spec(rules=failing)))
    with pytest.raises(EpisodeError, match=r"failed on combine: RulesError: .*boom"):
        toy_env.combine(a="10", op="*", b="10")
    assert toy_env.ended == "env_error"
    assert toy_env.undo() == "Error: the episode is over (the environment failed). Nothing changed."


def test_calls_and_reward_before_reset_raise(toy_env):
    with pytest.raises(EpisodeError, match=r"call reset\(\*\*row\)"):
        toy_env.get_reward()
    with pytest.raises(EpisodeError, match="no episode is running"):
        toy_env.undo()


def test_a_hostile_rules_layer_cannot_change_the_reward(toy_env):
    spec = toy_spec("4-4-10-10", FOUR_96, rules=CLAIM_SUCCESS)
    first = toy_env.reset(**row(spec))
    assert first.endswith("SUCCESS: the task is solved.")
    text = toy_env.combine(a="96", op="*", b="4")
    assert "You made 24!" in text
    assert toy_env.get_reward() == 0.0
    toy_env.undo()
    toy_env.combine(a="96", op="/", b="4")
    assert toy_env.get_reward() == 1.0


@pytest.mark.parametrize(
    ("columns", "error", "match"),
    [
        ({"prompt": []}, SpecError, "the dataset row has no 'spec' column"),
        ({"spec": "{not json"}, SpecError, "spec is not valid JSON"),
        ({"spec": 7}, SpecError, "expected the row's 'spec' to be a HarnessSpec"),
        ({"spec": "SPEC", "seed": "0"}, SpecError, "expected the row's 'seed' to be an int"),
    ],
)
def test_a_row_without_a_usable_spec_is_refused(toy_env, columns, error, match):
    columns = {k: toy_spec().to_json() if v == "SPEC" else v for k, v in columns.items()}
    with pytest.raises(error, match=match):
        toy_env.reset(**columns)


def test_a_spec_that_does_not_build_raises_from_reset(toy_env):
    spec = HarnessSpec.from_dict(
        {"envharness_spec": 1, "bridge": {"name": "toy24", "task_id": "1-1-1-1"}}
    )
    with pytest.raises(UnknownTaskError, match="cannot make 24") as raised:
        toy_env.reset(**row(spec))
    assert "while resetting Toy24Env" in "".join(raised.value.__notes__)
    unknown = HarnessSpec.from_dict(
        {"envharness_spec": 1, "bridge": {"name": "no-such-bridge", "task_id": "t"}}
    )
    with pytest.raises(BridgeError, match="no bridge named 'no-such-bridge'"):
        toy_env.reset(**row(unknown))


def test_a_spec_with_other_tools_is_refused():
    env = EnvironmentFactory(toy_tools()[1:], "UndoOnly")()
    with pytest.raises(SpecError, match=r"offers the tools \['combine', 'undo'\], but UndoOnly"):
        env.reset(**row(toy_spec()))


# -- datasets ------------------------------------------------------------------------------------


def test_dataset_from_tasks_has_the_columns_trl_and_reset_read():
    pytest.importorskip("datasets")
    dataset = dataset_from_tasks("toy24", ["1-1-4-6", "4-4-10-10"], seeds=(0, 1))
    assert dataset.num_rows == 4
    first = dataset[0]
    assert first["prompt"] == [
        {"role": "user", "content": load_bridge("toy24", task_id="1-1-4-6").instruction}
    ]
    spec = HarnessSpec.from_json(first["spec"])
    assert (spec.bridge.task_id, spec.bridge.fingerprint is not None) == ("1-1-4-6", True)
    assert (first["seed"], first["bridge"], first["environment"]) == (0, "toy24", "toy24")
    assert dataset["seed"] == [0, 1, 0, 1]
    factory = environment_factory(dataset)
    assert factory.name == "Toy24Env"
    assert factory().reset(**first).startswith("\n\nNumbers left: 1 1 4 6")
    with_system = dataset_from_tasks("toy24", split="test", limit=2, system_prompt="Be brief.")
    assert with_system.num_rows == 2
    assert with_system[0]["prompt"][0] == {"role": "system", "content": "Be brief."}


def test_dataset_from_run_reads_the_accepted_specs(tmp_path):
    pytest.importorskip("datasets")
    run = tmp_path / "run"
    with pytest.raises(RiggerError, match="holds no accepted spec"):
        dataset_from_run(run)
    (run / "accepted").mkdir(parents=True)
    specs = [toy_spec("4-4-10-10", FOUR_96), toy_spec("1-1-4-6")]
    for name, spec in zip(("b.json", "a.json"), specs, strict=True):
        (run / "accepted" / name).write_text(spec.to_json())
    dataset = dataset_from_run(run)
    assert dataset["spec_id"] == [specs[1].spec_id, specs[0].spec_id]
    (run / "accepted" / "c.json").write_text('{"envharness_spec": 1}')
    with pytest.raises(SpecError, match=r"c\.json is not a harness spec"):
        dataset_from_run(run)


def test_rows_with_different_tool_sets_get_one_factory_each():
    pytest.importorskip("datasets")
    docqa = HarnessSpec.from_env(load_bridge("docqa", task_id="ar23-revenue"))
    dataset = dataset_from_specs([toy_spec(), docqa])
    factories = environment_factory(dataset)
    assert sorted(factories) == ["docqa", "toy24"]
    assert factories["docqa"].name == "DocqaEnv"
    assert callable(factories["docqa"]().read_page)
    assert dataset["environment"] == ["toy24", "docqa"]
    with pytest.raises(SpecError, match="TRL fixes an environment's tools"):
        factories["toy24"]().reset(**dataset[1])


def test_environment_factory_refuses_what_it_cannot_read():
    with pytest.raises(TypeError, match="expected a datasets.Dataset"):
        environment_factory(42)
    datasets = pytest.importorskip("datasets")
    with pytest.raises(SpecError, match="no 'tools'/'environment' columns"):
        environment_factory(datasets.Dataset.from_list([{"prompt": "hi"}]))
    assert environment_factory(toy_spec()).name == "Toy24Env"


def test_no_specs_make_no_dataset():
    pytest.importorskip("datasets")
    with pytest.raises(SpecError, match="no specs"):
        dataset_from_specs([])


def test_a_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[trl\]"):
        dataset_from_specs([toy_spec()])


def test_harness_environment_is_the_base_of_generated_classes():
    assert issubclass(EnvironmentFactory(toy_tools()).environment_class, HarnessEnvironment)


# -- a real GRPO run on CPU ----------------------------------------------------------------------

CHAT_TEMPLATE = (
    '{%- if tools %}<|im_start|>system\nCall a tool as <tool_call>{"name": ..., "arguments": '
    "{...}}</tool_call>. Tools:{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}"
    "<|im_end|>\n{% endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' %}<|im_start|>assistant\n{{ message.content or '' }}"
    '{%- for call in message.tool_calls or [] %}<tool_call>{"name": "{{ call.function.name }}"'
    ', "arguments": {{ call.function.arguments | tojson }}}</tool_call>{%- endfor %}<|im_end|>\n'
    "{%- else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""A Qwen-like tool-calling chat template: tools as JSON in a system turn, calls as JSON."""

RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}
"""How transformers' ``parse_response`` reads the template's assistant turns back."""


def call_text(name: str, arguments: dict) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call><|im_end|>"


def grpo_rows() -> list[tuple[HarnessSpec, list[str]]]:
    """Specs and the completions the warm-up teaches for each (a list samples among them)."""
    solve = call_text("combine", {"a": "96", "op": "/", "b": "4"})
    wrong = call_text("combine", {"a": "96", "op": "*", "b": "4"})
    return [
        (toy_spec("4-4-10-10", FOUR_96), [solve, solve, solve, wrong]),
        (
            toy_spec("3-3-8-8", [combine("8", "/", "3"), combine("3", "-", "8/3")]),
            [call_text("multiply", {"a": "8", "b": "3"})],
        ),
        (
            toy_spec("1-1-4-6", [combine("6", "*", "4"), combine("1", "*", "1")]),
            [call_text("combine", {"a": 24, "op": "*"})],
        ),
        (
            toy_spec("1-2-3-4", rules=CLAIM_SUCCESS),
            [call_text("combine", {"a": "1", "op": "+", "b": "2"})],
        ),
    ]


def tiny_tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts * 8, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.add_tokens(["<tool_call>", "</tool_call>"])
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    tokenizer.padding_side = "left"
    return tokenizer


def warm_up(model, tokenizer, pairs: list[tuple[list[int], list[int]]], steps: int) -> float:
    """Teaches the model the completions (loss on the completion tokens only)."""
    import torch

    width = max(len(p) + len(c) for p, c in pairs)
    ids = torch.full((len(pairs), width), tokenizer.pad_token_id)
    labels = torch.full((len(pairs), width), -100)
    mask = torch.zeros((len(pairs), width), dtype=torch.long)
    for k, (prompt, completion) in enumerate(pairs):
        n = len(prompt) + len(completion)
        ids[k, width - n :] = torch.tensor(prompt + completion)
        labels[k, width - len(completion) :] = torch.tensor(completion)
        mask[k, width - n :] = 1
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss.item()


def executed_calls(completion: list[dict]) -> list[tuple[dict, dict]]:
    """(tool call, the tool message TRL answered it with), in order."""
    pairs = []
    for i, message in enumerate(completion):
        answers = []
        for later in completion[i + 1 :]:
            if later["role"] != "tool":
                break
            answers.append(later)
        pairs += list(zip(message.get("tool_calls") or [], answers, strict=False))
    return pairs


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory):
    pytest.importorskip("trl")
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only contend (10x slower on 2 CPUs)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
            yield train_tiny_grpo(str(tmp_path_factory.mktemp("grpo")))
    finally:
        torch.set_num_threads(threads)


def train_tiny_grpo(output_dir: str) -> dict:
    """Two GRPO steps of a warmed-up tiny Llama on :func:`grpo_rows`, recording every rollout."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    rows = grpo_rows()
    dataset = dataset_from_specs([spec for spec, _ in rows])
    factory = environment_factory(dataset)
    methods = [getattr(factory(), tool.name) for tool in factory.tools]

    def prompt_of(example: dict) -> list[dict]:
        messages = [dict(m) for m in example["prompt"]]
        env = factory()
        messages[-1]["content"] += env.reset(**example)
        env._close()
        return messages

    bare = tiny_tokenizer(["x"])
    rendered = [
        bare.apply_chat_template(
            prompt_of(example), tools=methods, tokenize=False, add_generation_prompt=True
        )
        for example in dataset
    ]
    tokenizer = tiny_tokenizer(
        [
            text + target
            for text, (_, targets) in zip(rendered, rows, strict=True)
            for target in targets
        ]
    )
    pairs = []
    end = tokenizer("<|im_end|>", add_special_tokens=False)["input_ids"]
    for example, (_, targets) in zip(dataset, rows, strict=True):
        prompt = prompt_of(example)
        prompt_ids = tokenizer.apply_chat_template(
            prompt, tools=methods, add_generation_prompt=True, return_dict=False
        )
        for target in targets:
            pairs.append((prompt_ids, tokenizer(target, add_special_tokens=False)["input_ids"]))
        # After the tool's answer, the turn ends (so the post-tool generation is short).
        call = json.loads(targets[0].removeprefix("<tool_call>").split("</tool_call>")[0])
        turn = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": call}],
        }
        answer = {"role": "tool", "name": call["name"], "content": "Numbers left: 24"}
        after_ids = tokenizer.apply_chat_template(
            [*prompt, turn, answer], tools=methods, add_generation_prompt=True, return_dict=False
        )
        pairs.append((after_ids, end))

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    warm_loss = warm_up(model, tokenizer, pairs, steps=120)

    batches: list[list[dict]] = []

    def replay(completions, spec, seed, environments, **_):
        """Scores each rollout again on a fresh env built from its spec (weight 0)."""
        batch, scores = [], []
        for completion, text, row_seed, environment in zip(
            completions, spec, seed, environments, strict=True
        ):
            env = HarnessSpec.from_json(text).build()
            try:
                first, _ = env.reset(seed=row_seed)
                current = first
                names = {t.name for t in env.tools()}
                expected = []
                for call, answer in executed_calls(completion):
                    function = call["function"]
                    if function["name"] not in names:
                        expected.append((answer, None))
                        continue
                    try:
                        result = env.step(Action(function["name"], function["arguments"]))
                    except InvalidActionError as e:
                        expected.append((answer, invalid_action_feedback(e, env.tools(), current)))
                        continue
                    reason = result.info.get("invalid_action")
                    if reason:
                        expected.append((answer, rejected_observation(result.observation, reason)))
                    else:
                        expected.append((answer, result.observation))
                        current = result.observation
                score = env.evaluate().score
            finally:
                env.close()
            scores.append(score)
            batch.append(
                {
                    "spec": text,
                    "completion": completion,
                    "replayed": score,
                    "reward": environment.get_reward(),
                    "expected": expected,
                }
            )
        batches.append(batch)
        return scores

    args = GRPOConfig(
        output_dir=output_dir,
        max_steps=2,
        per_device_train_batch_size=16,
        num_generations=4,
        max_completion_length=192,
        max_tool_calling_iterations=1,
        learning_rate=1e-3,
        beta=0.0,
        reward_weights=[0.0],
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[replay],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=factory,
    )
    trainer.train()
    return {
        "trainer": trainer,
        "batches": batches,
        "rows": rows,
        "factory": factory,
        "warm_loss": warm_loss,
    }


def test_grpo_runs_two_optimisation_steps_with_the_verifiers_reward(grpo_run):
    trainer, batches = grpo_run["trainer"], grpo_run["batches"]
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "rewards/Toy24Env/mean" in h]
    assert [h["step"] for h in logged] == [1, 2]
    assert len(batches) == 2
    for entry, batch in zip(logged, batches, strict=True):
        assert len(batch) == 16
        rewards = [r["reward"] for r in batch]
        assert rewards == [r["replayed"] for r in batch]  # get_reward() is evaluate()'s score
        assert entry["rewards/Toy24Env/mean"] == pytest.approx(sum(rewards) / len(rewards))
        assert entry["rewards/Toy24Env/mean"] == pytest.approx(entry["rewards/replay/mean"])
        assert entry["reward"] == pytest.approx(entry["rewards/Toy24Env/mean"])  # replay weighs 0
    everything = [r for batch in batches for r in batch]
    assert {r["reward"] for r in everything} == {0.0, 1.0}  # some rollouts solve, others do not


def test_grpo_tool_messages_are_the_environments_answers(grpo_run):
    everything = [r for batch in grpo_run["batches"] for r in batch]
    kinds = set()
    for record in everything:
        for answer, expected in record["expected"]:
            if expected is None:  # an unknown tool: TRL answers it by its tool-error convention
                assert answer["content"] == str({"error": f"Tool {answer['name']} not found."})
                kinds.add("unknown tool")
            else:
                assert answer["content"] == expected
                if expected.startswith("Error in combine: args:"):
                    kinds.add("bad arguments")
                else:
                    kinds.add("stepped")
    assert kinds == {"unknown tool", "bad arguments", "stepped"}


def test_grpo_hostile_rules_cannot_change_the_logged_reward(grpo_run):
    hostile = grpo_run["rows"][3][0].to_json(indent=None)
    records = [r for batch in grpo_run["batches"] for r in batch if r["spec"] == hostile]
    assert len(records) == 8
    claimed = [r for r in records if any("You made 24!" in a["content"] for a, _ in r["expected"])]
    assert claimed  # the model was told it won ...
    assert all(r["reward"] == 0.0 for r in records)  # ... and the verifier says it did not
