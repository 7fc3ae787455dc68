"""``envharness skills show BANK``: skills grouped by kind with provenance; clean errors."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from envharness.cli import app
from envharness.skills import Provenance, Skill, SkillBank

WIDE = {"COLUMNS": "250"}


@pytest.fixture
def bank(tmp_path) -> SkillBank:
    made = SkillBank(tmp_path / "run")
    made.add(
        Skill(
            "Multiply first",
            "two large numbers are left",
            "Make 24 from a product.",
            ("combine(a=<number>, op='*', b=<number>)",),
            "strategy",
            Provenance("toy24", "4-4-10-10", "spec1", False, True, '["spec1","oracle:1",0]'),
            ("offline", "procedure", "original"),
        )
    )
    made.add(
        Skill(
            "Evil \x1b]0;pwned\x07 title",
            "an action is rejected",
            "Read the feedback.",
            ("act: look",),
            "pitfall",
            Provenance("alfworld", "t", "spec2", True, False, target="teach \x1b[2J looking"),
        )
    )
    return made


def test_show_groups_by_kind_with_provenance(bank):
    result = CliRunner().invoke(app, ["skills", "show", str(bank.path.parent)], env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "2 of 2 skill(s) shown" in out
    assert out.index("strategies (1)") < out.index("Multiply first") < out.index("pitfalls (1)")
    assert "1. combine(a=<number>, op='*', b=<number>)" in out
    assert "toy24 task 4-4-10-10 · spec spec1 (original) · success · by offline" in out
    assert 'trajectory ["spec1","oracle:1",0]' in out
    assert "spec spec2 (harnessed) · failure" in out
    assert "\x1b" not in out and "\\x1b]0;pwned\\x07" in out and "\\x1b[2J" in out


def test_show_filters(bank):
    result = CliRunner().invoke(
        app, ["skills", "show", str(bank.path), "--kind", "pitfall", "--harnessed"], env=WIDE
    )
    assert result.exit_code == 0, result.output
    assert "1 of 2 skill(s) shown" in result.output and "Multiply first" not in result.output
    result = CliRunner().invoke(app, ["skills", "show", str(bank.path), "--original"], env=WIDE)
    assert "Multiply first" in result.output and "pitfalls" not in result.output


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"task_id": "t"}\n', ":1: not a skill bank line"),
        (None, "no skill bank at"),
    ],
)
def test_bad_banks_are_one_error_line(tmp_path, content, problem):
    path = tmp_path / "bank.jsonl"
    if content is not None:
        path.write_text(content)
    result = CliRunner().invoke(app, ["skills", "show", str(path)], env=WIDE)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and problem in lines[0]


def test_bad_kind_is_an_error(bank):
    result = CliRunner().invoke(app, ["skills", "show", str(bank.path), "--kind", "x"], env=WIDE)
    assert result.exit_code == 2 and "kind: expected one of" in result.output
