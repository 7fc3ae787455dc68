"""The skill-learning experiment's Markdown report and plots (``report.md``, ``plots/*.png``).

Plots need matplotlib (the ``report`` extra); without it the report is written without them and
says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envharness.errors import DependencyNotInstalled
from envharness.experiments.metrics import ArmScore
from envharness.skills.records import Skill

if TYPE_CHECKING:
    from envharness.experiments.runner import ExperimentResult
    from envharness.experiments.settings import SkillLearningSettings

__all__ = ["OFFLINE_NOTE", "write_report"]

OFFLINE_NOTE = (
    "The policy does not read skills (oracle, random and scripted policies ignore them), so "
    "these numbers check the machinery — equal budgets, disjoint tasks, resumable stages — not "
    "the method. The method's numbers come from a chat-model policy."
)

_ARM_COLORS = {"none": "#90a4ae", "original": "#1565c0", "harness": "#2e7d32", "chain": "#6a1b9a"}
_SKILLS_SHOWN = 12


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _final(scores: Sequence[ArmScore], rounds: int) -> list[ArmScore]:
    return [s for s in scores if s.round == (0 if s.arm == "none" else rounds)]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _results_table(scores: Sequence[ArmScore]) -> list[str]:
    lines = [
        "| arm | rounds | train envs | skills | success (mean ± std over runs) | steps | "
        "steps of successes | tokens / episode |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(
            f"| {s.arm} | {s.round} | {s.envs} | {s.skills} | {_pct(s.success_mean)} ± "
            f"{s.success_std * 100:.1f} | {_num(s.steps_mean)} | {_num(s.success_steps_mean)} | "
            f"{_num(s.tokens_per_episode)} |"
        )
    return lines


def _paired_table(result: ExperimentResult) -> list[str]:
    lines = [
        "| comparison | round | tasks | mean difference | 95% bootstrap CI | better / worse |",
        "|---|---|---|---|---|---|",
    ]
    for p in result.paired:
        lines.append(
            f"| {p.arm} − {p.baseline} | {p.round} | {p.tasks} | {p.mean * 100:+.1f} pts | "
            f"[{p.low * 100:+.1f}, {p.high * 100:+.1f}] | {p.better} / {p.worse} |"
        )
    return lines


def _budget_table(result: ExperimentResult) -> list[str]:
    lines = [
        "| arm | round | train tasks | envs | rollouts | successes | sources | skills | "
        "EnvRigger's own rollouts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, rows in result.budget.items():
        for b in rows:
            sources = ", ".join(f"{k} {v}" for k, v in sorted(b["sources"].items()))
            lines.append(
                f"| {arm} | {b['round']} | {len(b['train_tasks'])} | {b['envs']} | "
                f"{b['rollouts']} | {b['train_successes']} | {sources} | "
                f"{b['skills_extracted']} | {b.get('rig_rollouts', '–')} |"
            )
    return lines


def _skills_section(banks: Mapping[str, Sequence[Skill]]) -> list[str]:
    lines: list[str] = []
    for arm, skills in banks.items():
        lines += ["", f"### {arm} ({len(skills)} skills)", ""]
        if not skills:
            lines.append("(none)")
        for skill in skills[:_SKILLS_SHOWN]:
            origin = "harnessed" if skill.provenance.harnessed else "original"
            lines.append(
                f"- **{_cell(skill.title)}** ({skill.kind}, from {origin} "
                f"{_cell(skill.provenance.task_id)}) — when {_cell(skill.when)}: "
                f"{_cell(skill.principle)}"
            )
        if len(skills) > _SKILLS_SHOWN:
            lines.append(f"- … and {len(skills) - _SKILLS_SHOWN} more (`envharness skills show`)")
    return lines


def _figure() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise DependencyNotInstalled("matplotlib", "report", purpose="the report's plots") from e
    return Figure, FigureCanvasAgg


def _bars(path: Path, scores: Sequence[ArmScore], value: str, label: str) -> Path:
    Figure, Canvas = _figure()
    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.add_subplot()
    names = [s.arm for s in scores]
    if value == "success":
        heights = [s.success_mean * 100 for s in scores]
        errors = [s.success_std * 100 for s in scores]
    else:
        heights = [s.steps_mean for s in scores]
        errors = [0.0 for _ in scores]
    colors = [_ARM_COLORS.get(n, "#757575") for n in names]
    ax.bar(names, heights, yerr=errors, capsize=4, color=colors, edgecolor="white")
    ax.set_ylabel(label)
    if value == "success":
        ax.set_ylim(0, 100)
    fig.tight_layout()
    Canvas(fig).print_png(str(path))
    return path


def _scaling(path: Path, scores: Sequence[ArmScore], rounds: int) -> Path:
    Figure, Canvas = _figure()
    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.add_subplot()
    base = next((s for s in scores if s.arm == "none"), None)
    arms = sorted({s.arm for s in scores if s.arm != "none"})
    for arm in arms:
        rows = sorted((s for s in scores if s.arm == arm), key=lambda s: s.round)
        if base is not None:
            rows = [base, *rows]
        x = [s.envs for s in rows]
        y = [s.success_mean * 100 for s in rows]
        err = [s.success_std * 100 for s in rows]
        ax.errorbar(
            x, y, yerr=err, marker="o", capsize=3, label=arm, color=_ARM_COLORS.get(arm, "#757575")
        )
    if base is not None:
        ax.axhline(base.success_mean * 100, color=_ARM_COLORS["none"], ls="--", label="none")
    ax.set_xlabel("train environments learned from")
    ax.set_ylabel("test success (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Canvas(fig).print_png(str(path))
    return path


def _plots(root: Path, scores: Sequence[ArmScore], rounds: int) -> list[Path]:
    folder = root / "plots"
    folder.mkdir(exist_ok=True)
    final = _final(scores, rounds)
    return [
        _bars(folder / "success.png", final, "success", "test success (%)"),
        _bars(folder / "steps.png", final, "steps", "mean steps per episode"),
        _scaling(folder / "scaling.png", scores, rounds),
    ]


def write_report(
    result: ExperimentResult,
    settings: SkillLearningSettings,
    banks: Mapping[str, Sequence[Skill]],
) -> tuple[Path, list[Path]]:
    """Writes ``report.md`` (and the plots, when matplotlib is installed) into the run directory.

    Returns:
        The report's path and the plots written.
    """
    root = Path(result.run_dir)
    try:
        plots = _plots(root, result.scores, settings.rounds)
        plot_lines = [f"![{p.stem}](plots/{p.name})" for p in plots]
    except DependencyNotInstalled as e:
        plots, plot_lines = [], [f"(no plots: {e})"]
    s = settings
    lines = [
        f"# Skill learning on {s.bridge}",
        "",
        f"Policy `{s.policy_name}`, extractor `{s.extractor_name}`, designer `{s.designer}` "
        f"(objective `{s.objective}`); {len(s.train_tasks)} train tasks, "
        f"{len(s.test_tasks)} test tasks of the original benchmark (disjoint), {s.runs} run(s) "
        f"per arm with seeds {s.eval_seed(0)}…{s.eval_seed(s.runs - 1)}, {s.rounds} round(s) of "
        f"{s.envs_per_round} environment(s) × {s.rollouts_per_env} rollout(s), top-{s.top_k} "
        f"skills per episode. Wall time {result.seconds:.1f} s"
        + (" (resumed)." if result.resumed else "."),
        "",
    ]
    if not result.skills_use:
        lines += [f"> **Offline policy.** {OFFLINE_NOTE}", ""]
    lines += [
        "## Results on the original test tasks",
        "",
        *_results_table(_final(result.scores, s.rounds)),
    ]
    lines += ["", "## Paired per-task differences", "", *_paired_table(result)]
    if s.rounds > 1:
        lines += ["", "## Every round", "", *_results_table(result.scores)]
    lines += ["", "## Budgets (equal for every skill arm)", "", *_budget_table(result)]
    lines += [
        "",
        "EnvRigger's own rollouts (observe and validate) are the price of rigging; they are not "
        "used for extraction. A `fallback` environment is a task whose rig accepted no harness, "
        "played as the original.",
        "",
        "## Plots",
        "",
        *plot_lines,
        "",
        "## Skills learned",
        *_skills_section(banks),
        "",
    ]
    path = root / "report.md"
    path.write_text("\n".join(lines))
    return path, plots
