"""Reference cases for the formula engine: formulas over a small data sheet, with expected values.

``build_tasks.py --libreoffice`` evaluates :data:`CASES` with LibreOffice and stores the results in
``data/engine_cases.json``; the tests evaluate the same formulas with the bridge's engine and
compare. LibreOffice 7.4 lacks a few newer functions (``XLOOKUP``, ``TEXTBEFORE``,
``TEXTAFTER``); their expected values are given here, from Excel's documented behaviour
(:data:`DOCUMENTED`). Every function in ``SUPPORTED_FUNCTIONS`` appears in some case.
"""

from __future__ import annotations

from typing import Any

from envharness.bridges.spreadsheet.generators import day

__all__ = ["CASES", "DATA", "DOCUMENTED", "OTHER", "TABLE", "XLFN"]

DATA: list[list[Any]] = [
    ["Name", "Dept", "Score", "Joined", "Code"],
    ["  alice   smith ", "Sales", 88, day(2021, 3, 1), " ab-01 "],
    ["BOB JONES", "sales", 72, day(2020, 11, 15), "AB-02"],
    ["carol white", "Ops", 95, day(2022, 1, 9), "cd-03"],
    ["dan brown", "Ops", None, day(2019, 7, 30), "cd-04"],
    ["Eve Black", "HR", 60, day(2023, 5, 5), "ef-05"],
    ["frank o'neil", "HR", 60.5, day(2024, 2, 29), "EF-06"],
    ["Gina Lee", "Sales", -3, day(2020, 1, 1), None],
]
"""The ``Data`` sheet, from A1."""
TABLE: list[list[Any]] = [[0, "F"], [60, "D"], [70, "C"], [90, "A"]]
"""A sorted lookup table at ``Data!H2:I5``."""
OTHER: list[list[Any]] = [[5], [7], ["txt"]]
"""The ``Other`` sheet, from A1."""

XLFN = frozenset(
    "IFS XLOOKUP TEXTJOIN CONCAT MAXIFS MINIFS SWITCH XOR IFNA DAYS STDEV.S STDEV.P RANK.EQ "
    "VAR.S VAR.P TEXTBEFORE TEXTAFTER".split()
)
"""Functions an ``.xlsx`` file spells with the ``_xlfn.`` prefix (LibreOffice needs it)."""

DOCUMENTED: dict[str, Any] = {
    '=XLOOKUP("carol white",A2:A8,C2:C8)': 95,
    '=XLOOKUP("zz",A2:A8,C2:C8,"missing")': "missing",
    '=XLOOKUP("EVE BLACK",A2:A8,B2:B8)': "HR",
    '=TEXTBEFORE("north@example.test","@")': "north",
    '=TEXTAFTER("north@example.test","@")': "example.test",
    '=TEXTAFTER(E3,"-")': "02",
    "=MODE(C2:C8)": "#N/A",
}
"""Cases LibreOffice 7.4 cannot evaluate (or answers differently), with Excel's documented results.

``MODE`` of data without a repeated value is ``#N/A`` in Excel, ``#VALUE!`` in LibreOffice.
"""

CASES: list[str] = """
=SUM(C2:C8)
=SUM(C2:C8,10,TRUE)
=SUMPRODUCT(C2:C4,C5:C7)
=SUMIF(B2:B8,"sales",C2:C8)
=SUMIF(C2:C8,">60")
=SUMIF(C2:C8,"<>60")
=SUMIFS(C2:C8,B2:B8,"Ops",C2:C8,">90")
=SUMIF(A2:A8,"*e*",C2:C8)
=SUMIF(A2:A8,"*e",C2:C8)
=SUMIF(B2:B8,"s?les",C2:C8)
=COUNTIF(A2:A8,"<>*o*")
=PRODUCT(C2:C3)
=ROUND(82.25,1)
=ROUND(2.675,2)
=ROUND(1.005,2)
=ROUND(-2.5,0)
=ROUND(1234.5678,-2)
=ROUNDUP(2.341,1)
=ROUNDUP(-2.341,1)
=ROUNDDOWN(-2.349,2)
=ROUNDDOWN(1.239,2)
=INT(-2.5)
=TRUNC(-2.7)
=MOD(-7,3)
=MOD(7.5,2)
=ABS(-4)
=SQRT(16)
=POWER(2,10)
=2^0.5
=CEILING(4.2,0.5)
=FLOOR(4.7,0.5)
=MROUND(7.3,0.5)
=SIGN(-3)
=EXP(1)
=LN(10)
=LOG(8,2)
=LOG(100)
=LOG10(1000)
=PI()*2
=AVERAGE(C2:C8)
=AVERAGEIF(B2:B8,"HR",C2:C8)
=AVERAGEIFS(C2:C8,B2:B8,"Sales",C2:C8,">0")
=COUNT(C2:C8)
=COUNTA(A2:E8)
=COUNTBLANK(C2:C8)
=COUNTBLANK(E2:E8)
=COUNTIF(B2:B8,"sales")
=COUNTIF(C2:C8,">=60")
=COUNTIF(A2:A8,"*o*")
=COUNTIF(B2:B8,"<>Ops")
=COUNTIFS(B2:B8,"HR",C2:C8,">60")
=MAX(C2:C8)
=MIN(C2:C8)
=MAXIFS(C2:C8,B2:B8,"HR")
=MINIFS(C2:C8,B2:B8,"Sales")
=MEDIAN(C2:C8)
=MODE(C2:C8)
=MODE(C2:C8,60)
=LARGE(C2:C8,2)
=SMALL(C2:C8,2)
=RANK(C3,C2:C8)
=RANK(C3,C2:C8,1)
=RANK.EQ(C6,C2:C8)
=STDEV(C2:C8)
=STDEV.S(C2:C8)
=STDEV.P(C2:C8)
=VAR(C2:C8)
=VAR.S(C2:C8)
=VAR.P(C2:C8)
=PERCENTILE(C2:C8,0.25)
=QUARTILE(C2:C8,3)
=IF(C2>80,"Pass","Fail")
=IF(C5="","blank","value")
=IFS(C2>90,"A",C2>80,"B",TRUE,"C")
=AND(C2>50,C3>50)
=OR(C2>90,C3>90)
=NOT(C2>90)
=XOR(TRUE,FALSE)
=TRUE()
=FALSE()
=IFERROR(1/0,"div")
=IFNA(MATCH("zz",A2:A8,0),"none")
=ISNA(NA())
=SWITCH(B4,"Ops",1,"HR",2,0)
=CHOOSE(2,"a","b","c")
=VLOOKUP("Eve Black",A2:C8,3,FALSE)
=VLOOKUP("eve black",A2:C8,2,FALSE)
=VLOOKUP(75,H2:I5,2,TRUE)
=VLOOKUP(5,H2:I5,2,TRUE)
=VLOOKUP(60,H2:I5,2,TRUE)
=VLOOKUP("zz",A2:C8,3,FALSE)
=HLOOKUP("Score",A1:E8,3,FALSE)
=XLOOKUP("carol white",A2:A8,C2:C8)
=XLOOKUP("zz",A2:A8,C2:C8,"missing")
=XLOOKUP("EVE BLACK",A2:A8,B2:B8)
=INDEX(A2:A8,MATCH(MAX(C2:C8),C2:C8,0))
=INDEX(A1:E8,3,2)
=MATCH(72,C2:C8,0)
=MATCH(70,H2:H5,1)
=LOOKUP(75,H2:H5,I2:I5)
=TRIM(A2)
=TRIM("  a   b  ")
=PROPER(A4)
=PROPER(A7)
=PROPER(TRIM(A2))
=UPPER(TRIM(E2))
=LOWER(A3)
=LEFT(A3,3)
=RIGHT(E3,2)
=MID(A4,3,4)
=LEN(A2)
=LEN(E8)
=FIND("o",A5)
=FIND("O",A5)
=SEARCH("O",A5)
=SEARCH("z",A5)
=SUBSTITUTE(E3,"-","")
=SUBSTITUTE("a-b-c","-","+",2)
=REPLACE("abcdef",2,3,"X")
=CONCATENATE(B2," ",C2)
=CONCAT(B2:B4)
=TEXTJOIN(", ",TRUE,B2:B8)
=TEXTBEFORE("north@example.test","@")
=TEXTAFTER("north@example.test","@")
=TEXTAFTER(E3,"-")
=A3&"/"&C3
="x"&C7
=TEXT(C2,"0.00")
=TEXT(0.4567,"0.0%")
=TEXT(1234.5,"#,##0.00")
=TEXT(D2,"yyyy-mm-dd")
=VALUE("12.5")+1
=VALUE("abc")
=EXACT("a","A")
=REPT("-",3)
=CLEAN("a"&CHAR(9)&"b")
=CHAR(65)
=CODE("A")
=T(A2)
=N(C2)
=ISBLANK(C5)
=ISBLANK(E8)
=ISNUMBER(C2)
=ISNUMBER(A2)
=ISTEXT(A2)
=ISERROR(1/0)
=ISEVEN(4)
=ISODD(3)
=ISLOGICAL(TRUE)
=YEAR(D2)
=MONTH(D3)
=DAY(D7)
=WEEKDAY(D2)
=WEEKDAY(D2,2)
=DATE(2024,2,29)-DATE(2024,1,1)
=D3-D2
=DAYS(D4,D2)
=DATEDIF(D5,D6,"y")
=DATEDIF(D5,D6,"m")
=EDATE(D2,1)
=EOMONTH(D2,0)
=YEAR(EOMONTH(D7,1))
=ROUND(PMT(0.05/12,360,-200000),2)
=PMT(0.04,10,1000)
=FV(0.05,10,-100)
=PV(0.05,10,-100)
=C5*2
=C5=0
="a"="A"
=1/0
=C2+A2
=SUM(Data!C2:C3)
=Other!A1*2
=SUM(Other!A1:A3)
=COUNTIF(Other!A1:A3,">5")
=-C2^2
=10%
=3>2
=TRUE+1
="5"+1
=C3&""
=MAX(C2:C8)-MIN(C2:C8)
=SUM(C:C)
=MAX(Data!C:C)
=VLOOKUP("Gina Lee",A:C,3,FALSE)
=COUNTA(B:B)
""".strip().splitlines()
"""The formulas, each evaluated in ``Data!K<n>`` (n = its position, from 1)."""
