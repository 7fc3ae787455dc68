"""Finance tasks: budget variance, expense totals, overtime pay, overdue days, loan payments."""

from __future__ import annotations

import random

from envharness.bridges.spreadsheet.generators import Spec, day, excel_round, generator

DEPARTMENTS = [
    "Facilities", "Finance", "Legal", "Logistics", "Marketing", "Operations", "Procurement",
    "Research", "Sales", "Support", "Training", "Web",
]  # fmt: skip


@generator(seed=401)
def budget_variance(rng: random.Random) -> Spec:
    """Actual minus planned, and the variance as a percentage of plan (two formula columns)."""
    rows = []
    for name in DEPARTMENTS:
        planned = rng.randint(40, 400) * 250
        actual = planned + rng.randint(-60, 60) * 125
        rows.append([name, planned, actual, None, None])
    answers = [[r[2] - r[1], excel_round((r[2] - r[1]) / r[1] * 100, 1)] for r in rows]
    header = ["Department", "Planned", "Actual", "Variance", "Variance %"]
    return Spec(
        task_id="budget-variance",
        split="train",
        category="formula",
        instruction=(
            "In the Budget sheet, fill in Variance (D) as actual minus planned, and Variance % "
            "(E) as the variance divided by the planned amount times 100, rounded to 1 decimal "
            "(e.g. 12.5 for 12.5%)."
        ),
        sheets={"Budget": [header, *rows]},
        answers={"Budget!D2:E13": answers},
        oracle=[
            {"range": "Budget!D2:D13", "values": [["=C2-B2"]]},
            {"range": "Budget!E2:E13", "values": [["=ROUND(D2/B2*100,1)"]]},
        ],
        max_steps=15,
    )


CATEGORIES = ["Travel", "Meals", "Software", "Office", "Training", "Postage"]


@generator(seed=402)
def expenses_category_totals(rng: random.Random) -> Spec:
    """Totals per category on another sheet, plus a grand total (SUMIF, SUM)."""
    rows = []
    for _ in range(45):
        rows.append(
            [
                day(2024, rng.randint(1, 6), rng.randint(1, 28)),
                rng.choice(CATEGORIES),
                rng.randint(300, 48000) / 100,
            ]
        )
    rows.sort(key=lambda r: r[0])
    totals = [[excel_round(sum(r[2] for r in rows if r[1] == c), 2)] for c in CATEGORIES]
    grand = excel_round(sum(r[2] for r in rows), 2)
    sheet = [["Category", "Total"], *[[c, None] for c in CATEGORIES], ["All categories", None]]
    return Spec(
        task_id="expenses-category-totals",
        split="train",
        category="cross-sheet",
        instruction=(
            "Using the Expenses sheet, fill in the Totals sheet: each category's total amount in "
            "column B, and the total of all expenses in B8. Round every total to 2 decimals."
        ),
        sheets={"Expenses": [["Date", "Category", "Amount"], *rows], "Totals": sheet},
        answers={"Totals!B2:B8": [*totals, [grand]]},
        oracle=[
            {
                "range": "Totals!B2:B7",
                "values": [["=ROUND(SUMIF(Expenses!$B$2:$B$46,A2,Expenses!$C$2:$C$46),2)"]],
            },
            {"range": "Totals!B8", "values": [["=ROUND(SUM(Expenses!C2:C46),2)"]]},
        ],
        max_steps=15,
        shuffle_rows="Expenses!A2:C46",
    )


@generator(seed=403)
def payroll_overtime(rng: random.Random) -> Spec:
    """Overtime hours over 40 and weekly pay with time-and-a-half (MAX, MIN, ROUND)."""
    from envharness.bridges.spreadsheet.generators.school import students

    rows = []
    for name in students(rng, 18):
        hours = rng.choice([rng.randint(300, 520) / 10, 40])
        rate = rng.randint(1500, 4200) / 100
        rows.append([name, hours, rate, None, None])
    answers = []
    for _, hours, rate, _, _ in rows:
        overtime = max(0, hours - 40)
        answers.append([overtime, excel_round(min(hours, 40) * rate + overtime * rate * 1.5, 2)])
    header = ["Employee", "Hours", "Hourly Rate", "Overtime Hours", "Weekly Pay"]
    return Spec(
        task_id="payroll-overtime",
        split="test",
        category="conditional",
        instruction=(
            "In the Timesheet sheet, fill in Overtime Hours (D): the hours above 40, or 0. Then "
            "Weekly Pay (E): up to 40 hours at the hourly rate plus overtime hours at 1.5 times "
            "the rate, rounded to 2 decimals."
        ),
        sheets={"Timesheet": [header, *rows]},
        answers={"Timesheet!D2:E19": answers},
        oracle=[
            {"range": "Timesheet!D2:D19", "values": [["=MAX(0,B2-40)"]]},
            {"range": "Timesheet!E2:E19", "values": [["=ROUND(MIN(B2,40)*C2+D2*C2*1.5,2)"]]},
        ],
        max_steps=15,
    )


@generator(seed=404)
def invoices_days_overdue(rng: random.Random) -> Spec:
    """Days paid after the due date, 0 when on time (date arithmetic)."""
    rows = []
    for index in range(20):
        due = day(2024, rng.randint(1, 10), rng.randint(1, 28))
        shift = rng.choices([-rng.randint(1, 10), 0, rng.randint(1, 45)], weights=[1, 1, 3])[0]
        paid = due.fromordinal(due.toordinal() + shift)
        rows.append([f"INV-{880 + index}", due, paid, None])
    answers = [[max(0, (r[2] - r[1]).days)] for r in rows]
    return Spec(
        task_id="invoices-days-overdue",
        split="test",
        category="formula",
        instruction=(
            "In the Invoices sheet, fill in Days Overdue (D): how many days after the due date "
            "each invoice was paid, or 0 if it was paid on or before the due date."
        ),
        sheets={"Invoices": [["Invoice", "Due Date", "Paid Date", "Days Overdue"], *rows]},
        answers={"Invoices!D2:D21": answers},
        oracle=[{"range": "Invoices!D2:D21", "values": [["=MAX(0,C2-B2)"]]}],
        max_steps=15,
    )


@generator(seed=405)
def loans_monthly_payment(rng: random.Random) -> Spec:
    """The monthly repayment of fixed-rate loans (PMT)."""
    rows = []
    for index in range(12):
        principal = rng.randint(20, 400) * 1000
        rate = rng.choice([3.5, 4.25, 4.9, 5.75, 6.2, 7.0])
        years = rng.choice([5, 10, 15, 20, 25, 30])
        rows.append([f"LN-{61 + index}", principal, rate, years, None])
    answers = []
    for _, principal, rate, years, _ in rows:
        r, n = rate / 100 / 12, years * 12
        answers.append([excel_round(principal * r / (1 - (1 + r) ** -n), 2)])
    header = ["Loan", "Principal", "Annual Rate %", "Years", "Monthly Payment"]
    return Spec(
        task_id="loans-monthly-payment",
        split="test",
        category="formula",
        instruction=(
            "In the Loans sheet, fill in each loan's Monthly Payment (E): the fixed monthly "
            "repayment that pays off the principal over the given years at the annual interest "
            "rate (compounded monthly), as a positive number rounded to 2 decimals."
        ),
        sheets={"Loans": [header, *rows]},
        answers={"Loans!E2:E13": answers},
        oracle=[{"range": "Loans!E2:E13", "values": [["=ROUND(PMT(C2/100/12,D2*12,-B2),2)"]]}],
        max_steps=15,
    )
