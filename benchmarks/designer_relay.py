"""A rule-following designer model that reads only what a real model reads, through ``rig()``.

Run: ``python benchmarks/designer_relay.py [--cases toy24-harden,toy24-scaffold,alfworld,
textworld,spreadsheet] [--iterations 5] [--k 5] [--max-rollouts 100] [--label TEXT] [--out PATH]
[--dump DIR]``.
Prints a table and writes ``benchmarks/results/designer_relay.json`` (``--out`` to change it).

:class:`RelayModel` is a LangChain chat model (``bind_tools`` supported) written in code. It sees
the rendered messages and tool results the designer agent loop sends it, never the graph's state,
and decides its tool calls from that text with simple rules:

- read the numbers in the text: the direction, the band, the baseline success rate, the step
  budget, the mean steps of successful episodes, and for the latest earlier attempt its side
  ("too easy" / "too hard"), its DROP_P and its success rate;
- scaffold (the policy fails too often): submit a stage candidate first, a HEAD START from
  ``get_stage_candidates`` (a longer one when the shorter was too hard); without that tool, the
  first action of a successful baseline episode (``read_baseline``);
- harden or "too easy": a rule blocking each action with probability ``DROP_P``, declared as a
  knob the validator may tune, its start solved from the baseline's numbers (the chance that at
  least the mean successful steps get through the step budget hits the middle of the band); on
  "too easy" after such a rule, DROP_P goes up (and, at the top, a Link to a sibling task); on
  "too hard", DROP_P goes down;
- ``check_rules`` before submitting rules; an ``ERROR`` answer is recorded and the candidate is
  submitted once more without knobs, then the model stops.

Every number a rule needs and cannot find in the text is recorded under ``missing`` (a defect of
the feedback, not of the rule); the rule then decides without it. The script runs each case
through the real :func:`envharness.graph.run.rig` (heuristic diagnoser, relay designer) in a
fresh temporary run directory and reports per case: the status, the iterations and model calls
it took, whether it was accepted within 3 and within 5 iterations; and over the accepted cases,
iterations and model calls per accepted harness.

ALFWorld data: ``--alfworld-data`` (default ``$ENVHARNESS_ALFWORLD_DATA``, ``$ALFWORLD_DATA`` or
``/work/shared/data/alfworld``); the case is skipped with a reason when the folder is absent.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from envharness.graph.context import RiggerContext
from envharness.graph.run import rig

RESULTS = Path(__file__).parent / "results" / "designer_relay.json"
ALFWORLD_TASK = "pick_and_place_simple-Box-None-Dresser-224/trial_T20190907_164104_229696"
KNOB_HIGH = 0.97


@dataclass(frozen=True)
class Case:
    """One rig: a task, a policy and a band objective."""

    name: str
    bridge: str
    task_id: str
    policy: str
    objective: str
    options: dict[str, Any] | None = None


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case("toy24-harden", "toy24", "4-4-10-10", "oracle:1.0", "sr:0.4-0.6"),
        Case("toy24-scaffold", "toy24", "4-4-10-10", "oracle:0.2", "sr:0.5-0.9"),
        Case("alfworld", "alfworld", ALFWORLD_TASK, "oracle:1.0", "sr:0.3-0.7"),
        Case("textworld", "textworld", "tw-s5-o10-q5-seed42", "oracle:1.0", "sr:0.3-0.7"),
        Case("spreadsheet", "spreadsheet", "sales-line-totals", "oracle:0.3", "sr:0.6-0.95"),
    )
}


# -- reading the text ----------------------------------------------------------------------------


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", part)) if isinstance(part, dict) else str(part)
                     for part in content)  # fmt: skip


def _number(pattern: str, text: str, group: int = 1) -> float | None:
    match = re.search(pattern, text, re.I | re.S)
    return float(match.group(group)) if match else None


def _rate(text: str) -> float | None:
    """The first ``success k/n`` (or ``k/n successes``) in ``text`` as a rate."""
    match = re.search(r"success(?:es)?[: ]+(\d+)\s*/\s*(\d+)", text, re.I) or re.search(
        r"(\d+)\s*/\s*(\d+) successes", text, re.I
    )
    if match and int(match.group(2)):
        return int(match.group(1)) / int(match.group(2))
    return None


_ATTEMPT = re.compile(r"(?im)(?:^#+ |previous candidate: |^)(?=attempt \d+\b)")


def _attempts(task: str) -> list[str]:
    """The task message's earlier attempts, oldest first (each its own text block)."""
    starts = [m.end() for m in _ATTEMPT.finditer(task)]
    if not starts:
        return []
    return [task[a:b] for a, b in zip(starts, [*starts[1:], len(task)], strict=True)]


def _decision(attempt: str) -> str | None:
    match = re.search(r"(?i)\b(refine|undecided|reject(?:ed)?|accept(?:ed)?)\b", attempt)
    return match.group(1).lower() if match else None


def _side(attempt: str) -> str | None:
    """The side of the attempt's verdict, from its heading and its verdict lines."""
    lines = attempt.splitlines()
    head = "\n".join(lines[:1] + [x for x in lines if re.search(r"(?i)verdict", x)])
    if re.search(r"too[ _]easy", head, re.I):
        return "too_easy"
    if re.search(r"too[ _]hard|unsolvable|out of steps", head, re.I):
        return "too_hard"
    return None


def _drop_p(attempt: str) -> float | None:
    """DROP_P after the attempt: the validator's final value, else the last one named."""
    final = re.search(r'(?i)(?:final knob values|calibrated to)\W+"?DROP_P"?\s*[:=]\s*([0-9.]+)',
                      attempt)  # fmt: skip
    if final:
        return float(final.group(1).rstrip("."))
    tried = re.findall(r'"?DROP_P"?\s*[:=]\s*([0-9]*\.?[0-9]+)', attempt)
    return float(tried[-1]) if tried else None


def _solve_drop(needed: float, budget: float, target: float) -> float:
    """DROP_P at which P(at least ``needed`` of ``budget`` actions get through) is ``target``."""
    n, k = int(budget), max(1, math.ceil(needed))

    def chance(drop: float) -> float:
        p = 1.0 - drop
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))

    low, high = 0.0, KNOB_HIGH
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if chance(middle) > target else (low, middle)
    return round((low + high) / 2, 3)


DROP_CODE = """import random

DROP_P = {value}


class _Rules:
    def filter_action(self, action, state):
        if random.random() < DROP_P:
            return "That action did not go through this time; try it again."
        return action
"""


def _call(name: str, args: dict[str, Any], index: int) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"relay_{index}", "type": "tool_call"}


def _parse_call(text: str) -> dict[str, Any] | None:
    """``combine(a='10', op='*', b='10')`` as ``{"tool", "args"}``."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    try:
        args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    except ValueError:
        return None
    return {"tool": node.func.id, "args": args}


class RelayModel(BaseChatModel):
    """A designer chat model whose replies are rules over the text it is sent.

    Attributes:
        case: The case's name (for the records).
        tool_names: The tools of the last ``bind_tools`` call (what a real model sees).
        missing: Every number a rule needed and did not find, with where.
        found: The numbers it did find, per writer turn.
        errors: Tool answers that began with ``ERROR``.
        dump: A folder to write every conversation to, or ``None``.
    """

    case: str = ""
    tool_names: list[str] = Field(default_factory=list)
    missing: list[dict[str, Any]] = Field(default_factory=list)
    found: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    dump: str | None = None
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "designer-relay"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": "designer-relay"}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        """Records the tools' names (from their schemas) and returns the model itself."""
        self.tool_names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self

    def _need(self, name: str, where: str, value: Any) -> Any:
        if value is None:
            for entry in self.missing:
                if entry["needed"] == name:
                    entry["times"] += 1
                    break
            else:
                self.missing.append({"case": self.case, "needed": name, "where": where, "times": 1})
        return value

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls += 1
        if self.dump:
            path = Path(self.dump) / f"{self.case}-{self.calls:03d}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                "\n\n".join(f"=== {type(m).__name__}\n{_text(m)}" for m in messages)
                + f"\n\n=== tools: {self.tool_names}\n"
            )
        reply = self._decide(messages)
        if isinstance(reply, str):
            message = AIMessage(content=reply)
        else:
            message = AIMessage(content="", tool_calls=[_call(*reply, self.calls)])
        chars = sum(len(_text(m)) for m in messages)
        message.usage_metadata = {
            "input_tokens": chars // 4,
            "output_tokens": 20,
            "total_tokens": chars // 4 + 20,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])

    # -- the rules ---------------------------------------------------------------------------

    def _decide(self, messages: list[BaseMessage]) -> str | tuple[str, dict[str, Any]]:
        system = next((_text(m) for m in messages if isinstance(m, SystemMessage)), "")
        task = next((_text(m) for m in messages if isinstance(m, HumanMessage)), "")
        names: dict[str, str] = {}
        results: list[tuple[str, dict[str, Any], str]] = []
        for m in messages:
            if isinstance(m, AIMessage):
                for call in m.tool_calls:
                    names[call["id"]] = call["name"]
                    results.append((call["name"], call["args"], ""))
            elif isinstance(m, ToolMessage):
                name = m.name or names.get(m.tool_call_id, "")
                for i in range(len(results) - 1, -1, -1):
                    if results[i][0] == name and not results[i][2]:
                        results[i] = (name, results[i][1], _text(m))
                        break
        for name, _, answer in results:
            if answer.startswith("ERROR") and answer not in self.errors:
                self.errors.append(f"{name}: {answer[:300]}")
        if any(n == "submit_candidate" and a.startswith("accepted") for n, _, a in results):
            return "Submitted; the validator takes it from here."
        submits = [a for n, _, a in results if n == "submit_candidate"]
        if len(submits) >= 2:
            return "I have no further candidate."
        facts = self._facts(system, task)
        plan = self._plan(facts, task, results)
        if isinstance(plan, str | tuple):  # a final text, or a tool call to read something first
            return plan
        if submits:  # the first submission failed: once more without knobs
            plan = dict(plan)
            plan.pop("knobs", None)
        if plan.get("rules_code") and "check_rules" in self.tool_names:
            if not any(n == "check_rules" for n, _, _ in results):
                args = {"rules_code": plan["rules_code"]}
                if plan.get("in_env_actions"):
                    args["in_env_actions"] = plan["in_env_actions"]
                return "check_rules", args
        return "submit_candidate", plan

    def _facts(self, system: str, task: str) -> dict[str, Any]:
        where = f"turn {self.calls}"
        attempts = _attempts(task)
        latest = attempts[-1] if attempts else ""
        baseline_text = task.split("ttempt 1", 1)[0] if attempts else task
        facts = {
            "direction": (re.search(r"direction: (\w[\w-]*)", task) or [None, None])[1],
            "low": _number(r"sr:([0-9.]+)-([0-9.]+)", task + system),
            "high": _number(r"sr:([0-9.]+)-([0-9.]+)", task + system, 2),
            "baseline_rate": _rate(baseline_text),
            "budget": _number(r"(\d+) steps per episode", system + task)
            or _number(r"/(\d+) steps", task),
            "needed": _number(r"mean steps of successful episodes: ([0-9.]+)", baseline_text),
            "iteration": _number(r"iteration (\d+) of \d+", task),
            "attempts": len(attempts),
            "decision": _decision(latest) if latest else None,
            "side": _side(latest) if latest else None,
            "attempt_rate": _rate(latest) if latest else None,
            "attempt_drop": _drop_p(latest) if latest else None,
            "attempt_setups": bool(re.search(r"Setups", latest)) if latest else False,
            "setups_too_hard": sum(
                1 for a in attempts if re.search(r"Setups", a) and _side(a) == "too_hard"
            ),
        }
        self.found.append({"case": self.case, "turn": self.calls, **facts})
        self._need("direction", where, facts["direction"])
        self._need("band (sr:LOW-HIGH)", where, facts["low"])
        self._need("baseline success rate", where, facts["baseline_rate"])
        self._need("iteration i of N", where, facts["iteration"])
        if latest:
            self._need("the latest attempt's decision", where, facts["decision"])
            if facts["decision"] == "refine":
                self._need("the latest attempt's side (too easy / too hard)", where, facts["side"])
            self._need("the latest attempt's success rate", where, facts["attempt_rate"])
        return facts

    def _plan(
        self, facts: dict[str, Any], task: str, results: list[tuple[str, dict[str, Any], str]]
    ) -> str | tuple[str, dict[str, Any]] | dict[str, Any]:
        side, direction = facts["side"], facts["direction"]
        previous_drop = facts["attempt_drop"]
        if facts["decision"] == "undecided":  # not sure yet: the same design, from where it got
            if previous_drop is not None:
                return self._rules(previous_drop, "undecided: again from the validator's value")
            if facts["attempt_setups"]:
                return self._scaffold({**facts, "side": None}, results)
        if facts["decision"] == "refine" and side is None:
            side = "too_easy" if direction == "harden" else "too_hard"
        if side == "too_easy" or (side is None and direction == "harden"):
            return self._harden(facts, task, results)
        if side == "too_hard" and previous_drop is not None:
            return self._rules(max(0.0, round(previous_drop / 2, 3)), "too hard: lower DROP_P")
        return self._scaffold(facts, results)

    def _rules(self, value: float, why: str, links: list[str] | None = None) -> dict[str, Any]:
        plan: dict[str, Any] = {
            "rules_code": DROP_CODE.format(value=value),
            "knobs": [{"name": "DROP_P", "low": 0.0, "high": KNOB_HIGH, "harder": "high"}],
            "rationale": f"Each action fails with probability DROP_P={value} ({why}).",
        }
        if links:
            plan["link_task_ids"] = links
        return plan

    def _harden(
        self, facts: dict[str, Any], task: str, results: list[tuple[str, dict[str, Any], str]]
    ) -> Any:
        where = f"turn {self.calls}"
        previous = facts["attempt_drop"]
        if facts["side"] == "too_easy" and previous is not None:
            if previous >= 0.9:
                if "list_sibling_tasks" not in self.tool_names:
                    self._need("list_sibling_tasks tool (Link)", where, None)
                    return self._rules(KNOB_HIGH, "too easy even at the top")
                answer = next((a for n, _, a in results if n == "list_sibling_tasks"), None)
                if answer is None:
                    return "list_sibling_tasks", {}
                siblings = re.findall(r"(?m)^- (\S+?)(?: \[|:|$)", answer)
                self._need("a sibling task id", where, siblings[0] if siblings else None)
                return self._rules(0.5, "too easy at the top: add a Link", siblings[:1])
            value = round(previous + (KNOB_HIGH - previous) / 2, 3)
            return self._rules(value, "too easy: raise DROP_P")
        low, high = facts["low"], facts["high"]
        budget, needed, rate = facts["budget"], facts["needed"], facts["baseline_rate"]
        self._need("step budget", where, budget)
        self._need("mean steps of successful episodes", where, needed)
        if None in (low, high, budget, needed, rate) or not rate:
            return self._rules(0.5, "numbers missing: a middle value")
        target = min(0.99, ((low + high) / 2) / rate)
        return self._rules(_solve_drop(needed, budget, target), "solved from the baseline")

    def _scaffold(
        self, facts: dict[str, Any], results: list[tuple[str, dict[str, Any], str]]
    ) -> Any:
        where = f"turn {self.calls}"
        longer = facts["setups_too_hard"]  # one more head-start step per too-hard Setups try
        if "get_stage_candidates" in self.tool_names:
            answer = next((a for n, _, a in results if n == "get_stage_candidates"), None)
            if answer is None:
                return "get_stage_candidates", {}
            heads = re.findall(r"(?m)^#(\d+): HEAD START.*\n\s+in_env_actions: (\[.*\])$", answer)
            if heads:
                index, actions = heads[min(longer, len(heads) - 1)]
                return {
                    "in_env_actions": json.loads(actions),
                    "rationale": f"The bridge's head start #{index}: the first steps are done.",
                }
            self._need("a HEAD START stage candidate", where, None)
        else:
            self._need("get_stage_candidates tool", where, None)
        answer = next((a for n, _, a in results if n == "read_baseline"), None)
        if answer is None:
            return "read_baseline", {}
        episodes = re.split(r"(?m)^(?=episode \d+ )", answer)
        for block in episodes:
            if not re.match(r"episode \d+ \(seed \d+\): SUCCESS", block):
                continue
            steps = [  # invalid and blocked steps would fail as Setups: left out
                line.group(1)
                for line in re.finditer(r"(?m)^\s+\d+: (\w+\(.*?\)) ->(.*)$", block)
                if not re.search(r"\[(?:INVALID|BLOCKED)", line.group(2))
            ]
            actions = [a for a in (_parse_call(s) for s in steps) if a is not None]
            if actions:
                chosen = actions[: 1 + longer]
                items = [{"tool": a["tool"], "args": json.dumps(a["args"])} for a in chosen]
                return {
                    "in_env_actions": items,
                    "rationale": "Replay the first steps of a successful baseline episode.",
                }
        self._need("a successful baseline episode's actions", where, None)
        return self._rules(0.0, "no scaffold lever found")


# -- running -------------------------------------------------------------------------------------


def _alfworld(path: str) -> str | None:
    if not (Path(path) / "json_2.1.1").is_dir():
        return f"no ALFWorld data in {path}"
    os.environ.setdefault("ALFWORLD_DATA", path)
    return None


def run_case(case: Case, args: argparse.Namespace) -> dict[str, Any]:
    """Rigs ``case`` with a fresh relay model; its row for the table and the JSON."""
    model = RelayModel(case=case.name, dump=str(args.dump) if args.dump else None)
    row: dict[str, Any] = {"case": case.name, "bridge": case.bridge, "task_id": case.task_id,
                           "policy": case.policy, "objective": case.objective}  # fmt: skip
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="relay-") as run_dir:
        context = RiggerContext(
            run_dir=run_dir,
            policy=case.policy,
            designer=model,
            diagnoser="heuristic",
            objective=case.objective,
            k_observe=args.k,
            k_validate=args.k,
            max_iterations=args.iterations,
            max_rollouts=args.max_rollouts,
            max_designer_turns=args.turns,
        )
        try:
            (result,) = rig(case.bridge, [case.task_id], context, bridge_options=case.options)
        except Exception as e:
            row.update(status="crashed", reason=f"{type(e).__name__}: {e}")
            row["traceback"] = traceback.format_exc()[-3000:]
            result = None
    row["seconds"] = round(time.perf_counter() - started, 1)
    if result is not None:
        row.update(
            status=result.status,
            reason=result.reason[:300],
            iterations=result.iterations,
            model_calls=result.model_calls,
            rollouts=result.rollouts,
            baseline_success=result.baseline_success,
            final_success=result.final_success,
        )
    accepted = row.get("status") == "accepted"
    row["within_3"] = accepted and row.get("iterations", 99) <= 3
    row["within_5"] = accepted and row.get("iterations", 99) <= 5
    row["relay_calls"] = model.calls
    row["tools_seen"] = model.tool_names
    row["missing"] = model.missing
    row["found"] = model.found
    row["tool_errors"] = model.errors
    return row


def _git(where: Path, *argv: str) -> str:
    try:
        return subprocess.run(["git", *argv], capture_output=True, text=True, check=False,
                              cwd=where).stdout.strip()  # fmt: skip
    except OSError:
        return ""


def _print(rows: list[dict[str, Any]]) -> None:
    head = f"{'case':16} {'status':10} {'iter':>4} {'calls':>5} {'roll':>5} {'<=3':>4} {'<=5':>4} "
    print(head + f"{'missing':>7}  {'base':>5} {'final':>5}  s")
    for r in rows:
        base = r.get("baseline_success")
        final = r.get("final_success")
        print(
            f"{r['case']:16} {r.get('status', '?'):10} {r.get('iterations', '-'):>4} "
            f"{r.get('model_calls', '-'):>5} {r.get('rollouts', '-'):>5} "
            f"{'yes' if r['within_3'] else 'no':>4} {'yes' if r['within_5'] else 'no':>4} "
            f"{len(r.get('missing', [])):>7}  {'-' if base is None else f'{base:.2f}':>5} "
            f"{'-' if final is None else f'{final:.2f}':>5}  {r['seconds']}"
        )


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Acceptance within 3 and 5 iterations; iterations and model calls per accepted harness."""
    ran = [r for r in rows if r.get("status") != "skipped"]
    accepted = [r for r in ran if r.get("status") == "accepted"]
    return {
        "cases": len(ran),
        "accepted": len(accepted),
        "accepted_within_3": sum(r["within_3"] for r in ran),
        "accepted_within_5": sum(r["within_5"] for r in ran),
        "iterations_per_accepted": (
            round(sum(r["iterations"] for r in accepted) / len(accepted), 2) if accepted else None
        ),
        "model_calls_per_accepted": (
            round(sum(r["model_calls"] for r in accepted) / len(accepted), 2) if accepted else None
        ),
        "missing_numbers": sorted({m["needed"] for r in ran for m in r.get("missing", [])}),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--iterations", type=int, default=5, help="max_iterations (default 5)")
    parser.add_argument("--k", type=int, default=5, help="k_observe and k_validate (default 5)")
    parser.add_argument("--max-rollouts", type=int, default=100, help="per candidate (100)")
    parser.add_argument("--turns", type=int, default=12, help="max_designer_turns (12)")
    parser.add_argument("--label", default="", help="a label stored with the run (before/after)")
    parser.add_argument(
        "--alfworld-data",
        default=os.environ.get("ENVHARNESS_ALFWORLD_DATA")
        or os.environ.get("ALFWORLD_DATA")
        or "/work/shared/data/alfworld",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"default {RESULTS}")
    parser.add_argument("--dump", type=Path, default=None, help="write every conversation here")
    args = parser.parse_args(argv)
    rows = []
    for name in [n.strip() for n in args.cases.split(",") if n.strip()]:
        case = CASES[name]
        skip = _alfworld(args.alfworld_data) if case.bridge == "alfworld" else None
        if skip:
            rows.append({"case": name, "status": "skipped", "reason": skip, "seconds": 0,
                         "within_3": False, "within_5": False})  # fmt: skip
            continue
        rows.append(run_case(case, args))
        print(f"  {name}: {rows[-1].get('status')} in {rows[-1]['seconds']}s", flush=True)
    _print(rows)
    summary = summarize(rows)
    print(json.dumps(summary, indent=1))
    import envharness.graph

    graph = Path(envharness.graph.__file__).resolve().parent  # the checkout actually imported
    report = {
        "benchmark": "designer_relay",
        "label": args.label,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git(graph, "rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(_git(graph, "status", "--porcelain")),
        "graph_package": str(Path(envharness.graph.__file__).parent),
        "machine": {"python": platform.python_version(), "kernel": platform.release()},
        "settings": {k: str(v) for k, v in vars(args).items()},
        "summary": summary,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.exit(main())
