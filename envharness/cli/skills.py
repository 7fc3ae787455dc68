"""``envharness skills show BANK``: a skill bank's skills, grouped by kind, with provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from envharness.cli._app import _clean_errors, _stdout, app
from envharness.skills.bank import SkillBank
from envharness.skills.records import SKILL_KINDS, Skill

skills_app = typer.Typer(
    name="skills",
    help="Inspect skill banks (skills distilled from episodes).",
    no_args_is_help=True,
)
app.add_typer(skills_app, name="skills")

_HEADINGS = {"strategy": "strategies", "pitfall": "pitfalls"}


def _origin(skill: Skill) -> str:
    origin = skill.provenance
    env = "harnessed" if origin.harnessed else "original"
    outcome = "success" if origin.success else "failure"
    parts = [
        f"{origin.bridge} task {origin.task_id}",
        f"spec {origin.spec_id} ({env})",
        outcome,
        f"by {origin.extractor}",
    ]
    if origin.trajectory_key:
        parts.append(f"trajectory {origin.trajectory_key}")
    text = " · ".join(parts)
    return f"{text}\n     target: {origin.target}" if origin.target else text


def _print_skill(out: Console, number: int, skill: Skill) -> None:
    out.print(f"[bold]{number}. {escape(skill.title)}[/]")
    out.print(f"   when {escape(skill.when)}")
    out.print(f"   {escape(skill.principle)}")
    for step_number, step in enumerate(skill.steps, 1):
        out.print(f"     {step_number}. {escape(step)}")
    out.print(f"   [dim]from {escape(_origin(skill))}[/]")
    if skill.tags:
        out.print(f"   [dim]tags: {escape(', '.join(skill.tags))}[/]")


@skills_app.command("show")
@_clean_errors
def show(
    bank: Annotated[Path, typer.Argument(help="A bank file (JSONL) or a run directory.")],
    kind: Annotated[
        str | None, typer.Option(help=f"Only this kind: {', '.join(SKILL_KINDS)}.")
    ] = None,
    bridge: Annotated[str | None, typer.Option(help="Only skills from this bridge.")] = None,
    harnessed: Annotated[
        bool | None,
        typer.Option(
            "--harnessed/--original",
            help="Only skills from harnessed (or original) environments.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Prints a bank's skills grouped by kind, each with where it came from."""
    loaded = SkillBank.load(bank)
    picked = loaded.filter(kind=kind, bridge=bridge, harnessed=harnessed)
    out = _stdout()
    out.print(f"[bold]{escape(str(loaded.path))}[/]: {len(picked)} of {len(loaded)} skill(s) shown")
    for group in SKILL_KINDS:
        members = [skill for skill in picked if skill.kind == group]
        if not members:
            continue
        out.print()
        out.print(f"[bold underline]{_HEADINGS.get(group, group)}[/] ({len(members)})")
        for number, skill in enumerate(members, 1):
            _print_skill(out, number, skill)
