"""Text-cleaning and survey tasks: names, product codes, e-mail domains, response rates."""

from __future__ import annotations

import random

from envharness.bridges.spreadsheet.generators import Spec, excel_round, generator
from envharness.bridges.spreadsheet.generators.school import FIRST, LAST, students


def _messy_case(rng: random.Random, text: str) -> str:
    style = rng.choice(["lower", "upper", "swap", "keep"])
    if style == "lower":
        return text.lower()
    if style == "upper":
        return text.upper()
    if style == "swap":
        return text.swapcase()
    return text


def _messy_spaces(rng: random.Random, words: list[str]) -> str:
    joined = words[0]
    for word in words[1:]:
        joined += " " * rng.choice([1, 1, 2, 3]) + word
    return " " * rng.choice([0, 0, 1, 2]) + joined + " " * rng.choice([0, 0, 1, 3])


@generator(seed=501)
def contacts_clean_names(rng: random.Random) -> Spec:
    """Messy spacing and case to Proper Case with single spaces (TRIM, PROPER)."""
    names = students(rng, 25)
    raw = [_messy_spaces(rng, _messy_case(rng, n).split(" ")) for n in names]
    return Spec(
        task_id="contacts-clean-names",
        split="train",
        category="text-cleaning",
        instruction=(
            "The names in column A of the Contacts sheet were typed carelessly: stray spaces and "
            "random capitals. In column B, write each name cleaned up: first letter of each word "
            "capitalised, the rest lower case, single spaces between words and none at the ends."
        ),
        sheets={"Contacts": [["Raw Name", "Clean Name"], *[[r, None] for r in raw]]},
        answers={"Contacts!B2:B26": [[n] for n in names]},
        oracle=[{"range": "Contacts!B2:B26", "values": [["=PROPER(TRIM(A2))"]]}],
        max_steps=15,
    )


@generator(seed=502)
def products_clean_codes(rng: random.Random) -> Spec:
    """Product codes to one format: upper case, a hyphen, no spaces (TRIM, SUBSTITUTE, UPPER)."""
    raw, clean = [], []
    for _ in range(24):
        letters = "".join(rng.choice("ABCDEFGHKMNPRSTW") for _ in range(2))
        number = f"{rng.randint(1, 9999):04d}"
        separator = rng.choice(["-", "-", " ", "_"])
        code = _messy_case(rng, letters) + separator + number
        raw.append(" " * rng.choice([0, 0, 1]) + code + " " * rng.choice([0, 0, 2]))
        clean.append(f"{letters}-{number}")
    return Spec(
        task_id="products-clean-codes",
        split="train",
        category="text-cleaning",
        instruction=(
            "Product codes in the Codes sheet (column A) were entered in mixed formats, such as "
            "'ab 0042', 'Ab_0042' or ' AB-0042 '. In column B, write each in the standard form: "
            "two upper-case letters, a hyphen, then the four digits (e.g. AB-0042)."
        ),
        sheets={"Codes": [["Entered", "Standard"], *[[r, None] for r in raw]]},
        answers={"Codes!B2:B25": [[c] for c in clean]},
        oracle=[
            {
                "range": "Codes!B2:B25",
                "values": [['=UPPER(SUBSTITUTE(SUBSTITUTE(TRIM(A2)," ","-"),"_","-"))']],
            }
        ],
        max_steps=15,
    )


DOMAINS = ["northwind.test", "Bluefield.example", "ACME-Tools.test", "harbor.example", "kite.test"]


@generator(seed=503)
def contacts_email_domain(rng: random.Random) -> Spec:
    """The domain of each e-mail address, lower case (FIND, MID, LOWER)."""
    rows, domains = [], []
    for _ in range(22):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        domain = rng.choice(DOMAINS)
        user = rng.choice([f"{first}.{last}", f"{first[0]}{last}", f"{first}{rng.randint(1, 99)}"])
        rows.append([f"{first} {last}", f"{_messy_case(rng, user)}@{domain}", None])
        domains.append(domain.lower())
    return Spec(
        task_id="contacts-email-domain",
        split="test",
        category="text-cleaning",
        instruction=(
            "For each contact in the Contacts sheet, write the domain of their e-mail address "
            "(everything after the @) in column C, in lower case."
        ),
        sheets={"Contacts": [["Name", "Email", "Domain"], *rows]},
        answers={"Contacts!C2:C23": [[d] for d in domains]},
        oracle=[{"range": "Contacts!C2:C23", "values": [['=LOWER(MID(B2,FIND("@",B2)+1,100))']]}],
        max_steps=15,
    )


TEAMS = ["Atlas", "Beacon", "Comet", "Delta", "Ember", "Fjord", "Gamma", "Harbor"]


@generator(seed=504)
def survey_response_rate(rng: random.Random) -> Spec:
    """Responses counted per team from another sheet, and the response rate (COUNTIF, ROUND)."""
    invited = {team: rng.randint(8, 30) for team in TEAMS}
    responses = []
    for team, count in invited.items():
        for _ in range(rng.randint(2, count)):
            responses.append([team, rng.randint(1, 5)])
    rng.shuffle(responses)
    counts = {team: sum(1 for r in responses if r[0] == team) for team in TEAMS}
    teams = [[team, invited[team], None, None] for team in TEAMS]
    answers = [[counts[t], excel_round(counts[t] / invited[t] * 100, 1)] for t in TEAMS]
    n = len(responses) + 1
    return Spec(
        task_id="survey-response-rate",
        split="test",
        category="cross-sheet",
        instruction=(
            "The Responses sheet has one row per survey response, with the respondent's team. "
            "In the Teams sheet, fill in Responses (C) with each team's number of responses and "
            "Response Rate % (D) with responses divided by invited times 100, rounded to 1 "
            "decimal."
        ),
        sheets={
            "Teams": [["Team", "Invited", "Responses", "Response Rate %"], *teams],
            "Responses": [["Team", "Rating"], *responses],
        },
        answers={"Teams!C2:D9": answers},
        oracle=[
            {"range": "Teams!C2:C9", "values": [[f"=COUNTIF(Responses!$A$2:$A${n},A2)"]]},
            {"range": "Teams!D2:D9", "values": [["=ROUND(C2/B2*100,1)"]]},
        ],
        max_steps=15,
        shuffle_rows=f"Responses!A2:B{n}",
    )
