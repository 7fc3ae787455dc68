"""Inventory, order and shipping tasks: flags, stock value, price lookups, rate tiers."""

from __future__ import annotations

import random

from envharness.bridges.spreadsheet.generators import Spec, excel_round, generator

ITEMS = {
    "Hardware": ["Hex Bolt M6", "Wing Nut M8", "Hinge 75mm", "Wood Screw 40mm", "Bracket L50"],
    "Paint": ["Primer 1L", "Gloss White 2L", "Matte Grey 1L", "Varnish 500ml"],
    "Garden": ["Trowel", "Hose 15m", "Seed Tray", "Pruning Shears", "Plant Food 1kg"],
    "Electrical": ["Fuse 13A", "Cable Tie Pack", "Switch Plate", "LED Bulb E27", "Extension 4-Way"],
}


def _stock(rng: random.Random) -> list[list]:
    """SKU, item, category, on hand, reorder level, unit cost for every item, shuffled."""
    rows = []
    for category, names in ITEMS.items():
        for name in names:
            rows.append([category, name])
    rng.shuffle(rows)
    out = []
    for index, (category, name) in enumerate(rows):
        level = rng.choice([10, 15, 20, 25, 30])
        on_hand = rng.choice([rng.randint(0, 80), level, level - rng.randint(1, 5)])
        cost = rng.randint(40, 2500) / 100
        out.append([f"SKU-{301 + index * 7}", name, category, max(on_hand, 0), level, cost])
    return out


@generator(seed=301)
def inventory_reorder_flag(rng: random.Random) -> Spec:
    """REORDER when stock is at or below the reorder level (a conditional column)."""
    rows = _stock(rng)
    n = len(rows) + 1
    header = ["SKU", "Item", "Category", "On Hand", "Reorder Level", "Unit Cost", "Status"]
    return Spec(
        task_id="inventory-reorder-flag",
        split="train",
        category="conditional",
        instruction=(
            "In the Inventory sheet, set each item's Status (column G) to REORDER when the "
            "quantity on hand is at or below its reorder level, and to OK otherwise."
        ),
        sheets={"Inventory": [header, *[[*r, None] for r in rows]]},
        answers={f"Inventory!G2:G{n}": [["REORDER" if r[3] <= r[4] else "OK"] for r in rows]},
        oracle=[{"range": f"Inventory!G2:G{n}", "values": [['=IF(D2<=E2,"REORDER","OK")']]}],
        max_steps=15,
    )


@generator(seed=302)
def inventory_stock_value(rng: random.Random) -> Spec:
    """One number: the value of all stock at cost (SUMPRODUCT)."""
    rows = _stock(rng)
    n = len(rows) + 1
    header = ["SKU", "Item", "Category", "On Hand", "Reorder Level", "Unit Cost"]
    total = excel_round(sum(r[3] * r[5] for r in rows), 2)
    return Spec(
        task_id="inventory-stock-value",
        split="train",
        category="value",
        instruction=(
            "What is the total value of the stock in the Inventory sheet at unit cost (quantity "
            "on hand times unit cost, summed over all items)? Put it in cell I2 of the Inventory "
            "sheet, rounded to 2 decimals."
        ),
        sheets={"Inventory": [header, *rows]},
        answers={"Inventory!I2": [[total]]},
        oracle=[
            {
                "range": "Inventory!I2",
                "values": [[f"=ROUND(SUMPRODUCT(D2:D{n},F2:F{n}),2)"]],
            }
        ],
        max_steps=10,
        shuffle_rows=f"Inventory!A2:F{n}",
    )


@generator(seed=303)
def orders_price_lookup(rng: random.Random) -> Spec:
    """Unit prices looked up from a price list on another sheet (VLOOKUP exact match)."""
    catalogue = [[f"P{410 + i * 3}", name] for i, name in enumerate(sum(ITEMS.values(), []))]
    catalogue = [[sku, name, rng.randint(150, 9000) / 100] for sku, name in catalogue[:16]]
    listing = list(catalogue)
    rng.shuffle(listing)
    orders = []
    for index in range(30):
        sku, _, _ = rng.choice(catalogue)
        orders.append([f"ORD-{7001 + index}", sku, rng.randint(1, 12), None])
    prices = {sku: price for sku, _, price in catalogue}
    return Spec(
        task_id="orders-price-lookup",
        split="train",
        category="lookup",
        instruction=(
            "Fill in the Unit Price column (D) of the Orders sheet by looking up each order's "
            "product code in the Prices sheet."
        ),
        sheets={
            "Orders": [["Order", "Product Code", "Qty", "Unit Price"], *orders],
            "Prices": [["Product Code", "Description", "Price"], *listing],
        },
        answers={"Orders!D2:D31": [[prices[o[1]]] for o in orders]},
        oracle=[{"range": "Orders!D2:D31", "values": [["=VLOOKUP(B2,Prices!$A$2:$C$17,3,FALSE)"]]}],
        max_steps=15,
    )


RATES = [[0, 4.5], [1, 3.8], [5, 3.1], [20, 2.4], [50, 1.95]]


def _rate(weight: float) -> float:
    rate = RATES[0][1]
    for low, value in RATES:
        if weight >= low:
            rate = value
    return rate


@generator(seed=304)
def shipping_cost_tiers(rng: random.Random) -> Spec:
    """Per-kg rate from a tier table (approximate VLOOKUP), cost rounded to cents."""
    weights = [
        rng.choice([rng.randint(1, 900) / 10, rng.choice([1, 5, 20, 50])]) for _ in range(25)
    ]
    rows = [[f"SHP-{5100 + i}", w, None] for i, w in enumerate(weights)]
    rates = [["From kg", "Rate per kg"], *RATES]
    return Spec(
        task_id="shipping-cost-tiers",
        split="train",
        category="lookup",
        instruction=(
            "Each shipment is charged its weight times a rate per kg. The rate depends on the "
            "weight band in the Rates sheet (a band applies from its 'From kg' weight up to the "
            "next band). Fill in the Cost column (C) of the Shipments sheet, rounded to 2 decimals."
        ),
        sheets={"Shipments": [["Shipment", "Weight kg", "Cost"], *rows], "Rates": rates},
        answers={"Shipments!C2:C26": [[excel_round(w * _rate(w), 2)] for w in weights]},
        oracle=[
            {
                "range": "Shipments!C2:C26",
                "values": [["=ROUND(B2*VLOOKUP(B2,Rates!$A$2:$B$6,2,TRUE),2)"]],
            }
        ],
        max_steps=15,
    )


@generator(seed=305)
def inventory_category_max(rng: random.Random) -> Spec:
    """The highest unit cost per category on a summary sheet (MAXIFS)."""
    rows = _stock(rng)
    n = len(rows) + 1
    header = ["SKU", "Item", "Category", "On Hand", "Reorder Level", "Unit Cost"]
    categories = list(ITEMS)
    summary = [["Category", "Highest Unit Cost"], *[[c, None] for c in categories]]
    return Spec(
        task_id="inventory-category-max",
        split="test",
        category="value",
        instruction=(
            "On the Summary sheet, write the highest unit cost among the items of each category "
            "listed, using the Inventory sheet."
        ),
        sheets={"Inventory": [header, *rows], "Summary": summary},
        answers={"Summary!B2:B5": [[max(r[5] for r in rows if r[2] == c)] for c in categories]},
        oracle=[
            {
                "range": "Summary!B2:B5",
                "values": [[f"=MAXIFS(Inventory!$F$2:$F${n},Inventory!$C$2:$C${n},A2)"]],
            }
        ],
        max_steps=15,
        shuffle_rows=f"Inventory!A2:F{n}",
    )
