"""Grade-book tasks: averages, letter grades, passes per section."""

from __future__ import annotations

import random

from envharness.bridges.spreadsheet.generators import Spec, excel_round, generator

FIRST = [
    "Ada", "Bram", "Cleo", "Dov", "Esme", "Fitz", "Gale", "Hugo", "Ines", "Jory", "Kaia", "Lior",
    "Mara", "Nico", "Odile", "Pim", "Quin", "Rhea", "Soren", "Tova", "Ugo", "Vesna", "Wren",
    "Xavi", "Yara", "Zeno",
]  # fmt: skip
LAST = [
    "Abernathy", "Birchall", "Coldwell", "Dunmore", "Elkin", "Farrow", "Gilchrist", "Hollis",
    "Ingram", "Jessup", "Kettering", "Lowther", "Marwick", "Nettles", "Ormsby", "Pardoe",
]  # fmt: skip


def students(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct invented student names."""
    names: list[str] = []
    while len(names) < count:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name not in names:
            names.append(name)
    return names


@generator(seed=201)
def grades_average(rng: random.Random) -> Spec:
    """The mean of four marks, rounded to one decimal."""
    names = students(rng, 30)
    rows = [[name, *(rng.randint(45, 100) for _ in range(4)), None] for name in names]
    header = ["Student", "Homework 1", "Homework 2", "Midterm", "Final", "Average"]
    return Spec(
        task_id="grades-average",
        split="train",
        category="formula",
        instruction=(
            "In the Grades sheet, fill the Average column (F) with each student's average of "
            "the four marks in B to E, rounded to 1 decimal place."
        ),
        sheets={"Grades": [header, *rows]},
        answers={"Grades!F2:F31": [[excel_round(sum(r[1:5]) / 4, 1)] for r in rows]},
        oracle=[{"range": "Grades!F2:F31", "values": [["=ROUND(AVERAGE(B2:E2),1)"]]}],
        max_steps=15,
    )


def _letter(score: float) -> str:
    for bound, letter in ((90, "A"), (80, "B"), (70, "C"), (60, "D")):
        if score >= bound:
            return letter
    return "F"


@generator(seed=202)
def grades_letter(rng: random.Random) -> Spec:
    """Letter grades from a score with thresholds (nested IF)."""
    names = students(rng, 28)
    scores = [rng.choice([rng.randint(40, 100), rng.choice([60, 70, 80, 90])]) for _ in names]
    scores = [s + rng.choice([0, 0, 0.5]) if s < 100 else s for s in scores]
    rows = [[name, score, None] for name, score in zip(names, scores, strict=True)]
    return Spec(
        task_id="grades-letter",
        split="train",
        category="conditional",
        instruction=(
            "Give every student in the Scores sheet a letter grade in column C: A for a score of "
            "90 or more, B for 80 or more, C for 70 or more, D for 60 or more, and F below 60."
        ),
        sheets={"Scores": [["Student", "Score", "Grade"], *rows]},
        answers={"Scores!C2:C29": [[_letter(score)] for score in scores]},
        oracle=[
            {
                "range": "Scores!C2:C29",
                "values": [['=IF(B2>=90,"A",IF(B2>=80,"B",IF(B2>=70,"C",IF(B2>=60,"D","F"))))']],
            }
        ],
        max_steps=15,
    )


@generator(seed=203)
def grades_pass_count(rng: random.Random) -> Spec:
    """Passing students per section (COUNTIFS) on a report sheet."""
    names = students(rng, 36)
    sections = ["Section A", "Section B", "Section C"]
    rows = [[name, rng.choice(sections), rng.randint(30, 98)] for name in names]
    report = [["Section", "Passed"], *[[s, None] for s in sections]]
    passed = [[sum(1 for r in rows if r[1] == s and r[2] >= 60)] for s in sections]
    return Spec(
        task_id="grades-pass-count",
        split="train",
        category="value",
        instruction=(
            "A student passes with a score of 60 or more. On the Report sheet, write how many "
            "students passed in each section, using the Roster sheet."
        ),
        sheets={"Roster": [["Student", "Section", "Score"], *rows], "Report": report},
        answers={"Report!B2:B4": passed},
        oracle=[
            {
                "range": "Report!B2:B4",
                "values": [['=COUNTIFS(Roster!$B$2:$B$37,A2,Roster!$C$2:$C$37,">=60")']],
            }
        ],
        max_steps=15,
        shuffle_rows="Roster!A2:C37",
    )
