"""How much a chat-model policy sends per step: prompt tokens per call and per episode.

Run: ``python benchmarks/policy_context.py [--label after] [--out PATH]``. Prints a table and
writes ``benchmarks/results/policy_context.json`` (or ``--out``). A scripted
``FakeToolCallingModel`` replays a fixed, winning move list through the shipped
``ChatModelPolicy`` and ``rollout`` loop, so every figure is what a real model would be sent:

- ``toy24`` (``4-4-10-10``): 13 ``combine``/``undo`` pairs, then the oracle's three moves
  (29 steps);
- ``alfworld`` (a sample trial; ``$ALFWORLD_DATA`` or ``$ENVHARNESS_ALFWORLD_DATA``): the
  bridge's oracle plan from the start state, as is;
- ``webshop`` (``ws01``): ``read_page``, the search, twelve visits to the result and back, then
  the oracle's remaining clicks (30 steps).

Each episode runs with the policy's defaults and, where the code has the setting, again with
``max_context_tokens=BUDGET`` (``--budget``, default 2000), which caps every call. Tokens are
characters ÷ 4 of the messages of each call (the model's usage figures), tool schemas not
counted (they are the same on every call). To compare with an older checkout, run the same
script with ``PYTHONPATH`` pointing at a copy of that checkout (a figure counts only when both
sides ran in one session); the script uses only interfaces both have.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path
from typing import Any

from envharness import Action, BridgeError, DependencyNotInstalled, load_bridge
from envharness.rollout import rollout
from envharness.rollout.chat import ChatModelPolicy
from envharness.testing import FakeToolCallingModel

RESULTS = Path(__file__).parent / "results" / "policy_context.json"
ALFWORLD_TRIAL = (
    "pick_heat_then_place_in_recep-Potato-None-DiningTable-16/trial_T20190908_015009_437240"
)


def _toy24_moves() -> tuple[Any, list[Action]]:
    env = load_bridge("toy24", task_id="4-4-10-10")
    wander = [Action("combine", {"a": "4", "op": "+", "b": "4"}), Action("undo")] * 13
    solve = [
        Action("combine", {"a": "10", "op": "*", "b": "10"}),
        Action("combine", {"a": "100", "op": "-", "b": "4"}),
        Action("combine", {"a": "96", "op": "/", "b": "4"}),
    ]
    return env, wander + solve


def _alfworld_moves() -> tuple[Any, list[Action]]:
    data = os.environ.get("ALFWORLD_DATA") or os.environ.get("ENVHARNESS_ALFWORLD_DATA")
    options = {"data_dir": data} if data else {}
    env = load_bridge("alfworld", task_id=ALFWORLD_TRIAL, **options)
    env.reset(seed=0)
    plan = list(env.oracle_actions())
    return env, plan


def _webshop_moves() -> tuple[Any, list[Action]]:
    env = load_bridge("webshop", task_id="ws01")
    env.reset(seed=0)
    search, *clicks = env.oracle_actions()
    compare = [clicks[0], Action("back")] * 12
    return env, [Action("read_page"), search, *compare, *clicks]


EPISODES = {"toy24": _toy24_moves, "alfworld": _alfworld_moves, "webshop": _webshop_moves}


def measure(name: str, **policy_options: Any) -> dict[str, Any]:
    """Plays one scripted episode through ``ChatModelPolicy``; the prompt sizes per call."""
    env, moves = EPISODES[name]()
    model = FakeToolCallingModel(responses=[{"tool": a.tool, "args": a.args} for a in moves])
    policy = ChatModelPolicy(model, **policy_options)
    trajectory = rollout(env, policy, max_steps=len(moves), seed=0)
    per_step = [
        sum(len(str(m.content)) for m in call) // 4 for call in model.calls
    ]  # what each call sent
    return {
        "task_id": trajectory.task_id,
        "steps": len(trajectory.steps),
        "success": trajectory.success,
        "prompt_tokens_per_step": per_step,
        "total_input_tokens": sum(per_step),
        "max_prompt_tokens": max(per_step),
    }


def _checkout() -> str:
    import envharness

    return str(Path(envharness.__file__).resolve().parent.parent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="current", help="a name for this run's code")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--only", nargs="*", choices=sorted(EPISODES), default=sorted(EPISODES))
    parser.add_argument("--budget", type=int, default=2000, help="max_context_tokens variant")
    args = parser.parse_args()
    rows: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name in args.only:
        try:
            rows[name] = measure(name)
        except (BridgeError, DependencyNotInstalled) as e:
            skipped[name] = str(e).splitlines()[0]
            continue
        try:
            rows[f"{name}+budget"] = measure(name, max_context_tokens=args.budget)
        except TypeError:  # an older ChatModelPolicy without the setting
            skipped[f"{name}+budget"] = "this checkout's ChatModelPolicy has no max_context_tokens"
    print(f"code: {args.label} ({_checkout()})")
    print(
        f"{'env':<16}{'steps':>6}{'won':>5}{'step 1':>8}{'step 6':>8}{'step 12':>8}"
        f"{'last':>8}{'max':>8}{'total in':>10}"
    )
    for name, row in rows.items():
        sizes = row["prompt_tokens_per_step"]
        at = [sizes[min(k, len(sizes)) - 1] for k in (1, 6, 12)]
        print(
            f"{name:<16}{row['steps']:>6}{'yes' if row['success'] else 'no':>5}"
            f"{at[0]:>8}{at[1]:>8}{at[2]:>8}{sizes[-1]:>8}{row['max_prompt_tokens']:>8}"
            f"{row['total_input_tokens']:>10}"
        )
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    report = {
        "benchmark": "policy_context",
        "label": args.label,
        "checkout": _checkout(),
        "python": platform.python_version(),
        "tokens": "characters of each call's messages // 4 (tool schemas not counted)",
        "budget_variant": args.budget,
        "episodes": rows,
        "skipped": skipped,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
