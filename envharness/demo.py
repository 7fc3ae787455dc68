"""The offline demonstration: build a harnessed Toy24 env from a spec and play it.

Until EnvRigger lands this is the README's main job. It needs no model and no network: it stacks a
head start (``Setups``) and a sandboxed rule (``Rules``) over a Toy24 task, writes the spec as
JSON, rebuilds the env from that file, and plays it with a scripted policy that makes a mistake,
undoes it, runs into the rule, and then solves the task. Every step is recorded.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

from envharness.bridges.registry import load_bridge
from envharness.bridges.toy24.solver import is_solvable
from envharness.core import Action, Evaluation
from envharness.harness import HarnessSpec, Lineage, Rules, Setups

__all__ = ["DEMO_RULES", "DemoResult", "build_demo_spec", "demo_script", "run_demo"]

DEMO_RULES = '''
class _Rules:
    """One undo per episode, and a reminder of how many numbers are left."""

    def __init__(self):
        self.undos = 0

    def filter_action(self, action, state):
        if action["tool"] == "undo":
            if self.undos >= 1:
                return "Only one undo per episode in this variant. Keep going from here."
            self.undos += 1
        return action

    def filter_observation(self, observation, state):
        left = len(state["numbers"])
        return observation + "\\n(" + str(left) + " number" + ("s" if left != 1 else "") + " left)"
'''


@dataclass
class DemoResult:
    """What the demonstration did.

    Attributes:
        spec_path: Where the spec was written.
        steps: One record per agent step (action, observation, reward, flags).
        evaluation: The bridge's verdict at the end.
        first_observation: What the agent saw after reset (after the Setups head start).
    """

    spec_path: Path
    first_observation: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    evaluation: Evaluation | None = None


def build_demo_spec(task_id: str = "4-4-10-10") -> HarnessSpec:
    """The demo stack for a Toy24 task: ``Rules(Setups(toy24))``, as a spec.

    The head start is the bridge's first stage candidate (the first step of a solution).
    """
    bridge = load_bridge("toy24", task_id=task_id)
    stack = Rules(Setups(bridge, bridge.stage_candidates()[:1][0]), DEMO_RULES)
    try:
        return HarnessSpec.from_env(stack).with_lineage(
            Lineage(task=task_id, policy="scripted demo", notes="head start + one-undo rule")
        )
    finally:
        stack.close()


def _dead_end(numbers: list[str]) -> Action | None:
    """A legal combine after which 24 can no longer be made, if there is one."""
    values = [Fraction(n) for n in numbers]
    for i, j in combinations(range(len(values)), 2):
        rest = [v for k, v in enumerate(values) if k not in (i, j)]
        for op, apply in (("+", operator.add), ("-", operator.sub), ("*", operator.mul)):
            if not is_solvable([*rest, apply(values[i], values[j])]):
                return Action("combine", {"a": numbers[i], "op": op, "b": numbers[j]})
    return None


def demo_script(spec: HarnessSpec) -> list[Action]:
    """A scripted policy's actions: a dead-end move, two undos (the second blocked), the solution.

    The script is computed on a scratch copy of the env (the oracle is used only here).
    """
    scratch = spec.build()
    try:
        scratch.reset(seed=0)
        wrong = _dead_end(scratch.get_env_state()["numbers"])
        solution = scratch.oracle_actions()
    finally:
        scratch.close()
    mistake = [wrong, Action("undo", {}), Action("undo", {})] if wrong is not None else []
    return [*mistake, *solution]


def run_demo(out_dir: Path | str = "runs/demo", task_id: str = "4-4-10-10") -> DemoResult:
    """Builds the demo spec, writes it, rebuilds the env from the file and plays the script."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec_path = out / "demo_spec.json"
    spec = build_demo_spec(task_id)
    spec_path.write_text(spec.to_json() + "\n")

    rebuilt = HarnessSpec.from_json(spec_path.read_text())
    script = demo_script(rebuilt)
    env = rebuilt.build()
    try:
        observation, _ = env.reset(seed=0)
        result = DemoResult(spec_path=spec_path, first_observation=observation)
        for number, action in enumerate(script[: env.max_steps], start=1):
            step = env.step(action)
            result.steps.append(
                {
                    "step": number,
                    "action": action.to_dict(),
                    "observation": step.observation,
                    "reward": step.reward,
                    "terminated": step.terminated,
                    "blocked": bool(step.info.get("blocked")),
                    "invalid": step.info.get("invalid_action"),
                }
            )
            if step.terminated or step.truncated:
                break
        result.evaluation = env.evaluate()
    finally:
        env.close()
    trajectory = {
        "spec_id": rebuilt.spec_id,
        "first_observation": result.first_observation,
        "steps": result.steps,
        "evaluation": result.evaluation.to_dict(),
    }
    (out / "demo_trajectory.json").write_text(json.dumps(trajectory, indent=2) + "\n")
    return result
