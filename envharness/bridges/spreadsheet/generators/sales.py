"""Sales tasks: line totals, a regional summary, the top sales rep."""

from __future__ import annotations

import random

from envharness.bridges.spreadsheet.generators import Spec, excel_round, generator

REGIONS = ["North", "South", "East", "West"]
PRODUCTS = {
    "Desk Lamp": 24.5,
    "Office Chair": 139.0,
    "Notebook Pack": 6.75,
    "Stapler": 11.2,
    "Monitor Arm": 58.9,
    "Whiteboard": 44.0,
    "Cable Kit": 17.35,
}
REPS = ["Avery Lund", "Bo Castellan", "Cyra Maddox", "Dario Venn", "Elsa Brightwater", "Fenn Ozaki"]


def _orders(rng: random.Random, count: int) -> list[list]:
    rows = []
    for index in range(count):
        product = rng.choice(sorted(PRODUCTS))
        rows.append(
            [
                f"SO-{1001 + index}",
                rng.choice(REGIONS),
                product,
                rng.randint(1, 40),
                PRODUCTS[product],
            ]
        )
    return rows


@generator(seed=101)
def sales_line_totals(rng: random.Random) -> Spec:
    """Units x unit price per order line."""
    rows = _orders(rng, 40)
    header = ["Order ID", "Region", "Product", "Units", "Unit Price", "Total"]
    return Spec(
        task_id="sales-line-totals",
        split="train",
        category="formula",
        instruction=(
            "The Sales sheet lists 40 order lines. Fill in the Total column (F) with each line's "
            "total: units times unit price."
        ),
        sheets={"Sales": [header, *[[*r, None] for r in rows]]},
        answers={"Sales!F2:F41": [[r[3] * r[4]] for r in rows]},
        oracle=[{"range": "Sales!F2:F41", "values": [["=D2*E2"]]}],
        max_steps=15,
    )


@generator(seed=102)
def sales_region_summary(rng: random.Random) -> Spec:
    """Units and revenue per region on a separate sheet (SUMIF across sheets)."""
    rows = [[*r, excel_round(r[3] * r[4], 2)] for r in _orders(rng, 48)]
    header = ["Order ID", "Region", "Product", "Units", "Unit Price", "Revenue"]
    summary = [["Region", "Units", "Revenue"], *[[region, None, None] for region in REGIONS]]
    answers = [
        [
            sum(r[3] for r in rows if r[1] == region),
            excel_round(sum(r[5] for r in rows if r[1] == region), 2),
        ]
        for region in REGIONS
    ]
    return Spec(
        task_id="sales-region-summary",
        split="train",
        category="cross-sheet",
        instruction=(
            "On the Summary sheet, fill in each region's total units sold and total revenue "
            "(rounded to 2 decimals), from the order lines on the Sales sheet."
        ),
        sheets={"Sales": [header, *rows], "Summary": summary},
        answers={"Summary!B2:C5": answers},
        oracle=[
            {
                "range": "Summary!B2:B5",
                "values": [["=SUMIF(Sales!$B$2:$B$49,A2,Sales!$D$2:$D$49)"]],
            },
            {
                "range": "Summary!C2:C5",
                "values": [["=ROUND(SUMIF(Sales!$B$2:$B$49,A2,Sales!$F$2:$F$49),2)"]],
            },
        ],
        max_steps=20,
        shuffle_rows="Sales!A2:F49",
    )


@generator(seed=103)
def sales_top_rep(rng: random.Random) -> Spec:
    """The rep with the highest quarterly total, and that total (MAX, INDEX/MATCH)."""
    reps = list(REPS)
    rng.shuffle(reps)
    rows = []
    for rep in reps:
        months = [rng.randint(40, 160) * 25 for _ in range(3)]
        rows.append([rep, *months])
    totals = [sum(r[1:]) for r in rows]
    while totals.count(max(totals)) > 1:  # one clear winner
        rows[totals.index(max(totals))][1] += 25
        totals = [sum(r[1:]) for r in rows]
    best = rows[totals.index(max(totals))][0]
    header = ["Rep", "Jan", "Feb", "Mar"]
    report = [["Top rep", None], ["Quarter total", None]]
    return Spec(
        task_id="sales-top-rep",
        split="train",
        category="value",
        instruction=(
            "The Reps sheet has each sales rep's monthly sales for the first quarter. On the "
            "Report sheet, put the name of the rep with the highest quarter total (Jan+Feb+Mar) "
            "in B1 and that total in B2."
        ),
        sheets={"Reps": [header, *rows], "Report": report},
        answers={"Report!B1:B2": [[best], [max(totals)]]},
        oracle=[
            {"range": "Reps!F1", "values": [["Quarter"]]},
            {"range": "Reps!F2:F7", "values": [["=SUM(B2:D2)"]]},
            {
                "range": "Report!B1:B2",
                "values": [
                    ["=INDEX(Reps!A2:A7,MATCH(MAX(Reps!F2:F7),Reps!F2:F7,0))"],
                    ["=MAX(Reps!F2:F7)"],
                ],
            },
        ],
        max_steps=20,
        shuffle_rows="Reps!A2:D7",
    )
