"""The bridge's tool declarations and the JSON-Schema of its env state."""

from __future__ import annotations

from typing import Any

from envharness.core import ToolSpec

__all__ = ["MAX_READ_CELLS", "STATE_SCHEMA", "TOOLS"]

MAX_READ_CELLS = 400
"""How many cells one ``read_range`` shows at most."""

TOOLS = (
    ToolSpec(
        "list_sheets",
        "List the workbook's sheets with their used ranges and header rows.",
        {"type": "object", "properties": {}},
    ),
    ToolSpec(
        "read_range",
        "Read the values of a range, e.g. 'Sales!A1:F10' or 'Sales!A:C' (at most 400 cells "
        "per read). A range without a sheet reads the first sheet.",
        {
            "type": "object",
            "properties": {
                "range": {"type": "string", "description": "An A1 range, e.g. 'Sales!A1:F10'."},
                "formulas": {
                    "type": "boolean",
                    "description": "Show formula cells as their formulas instead of their values.",
                },
            },
            "required": ["range"],
        },
    ),
    ToolSpec(
        "write_cells",
        "Write values or formulas into cells. 'values' is a 2-D grid (rows of cells) of "
        "strings, typed as into a spreadsheet: '=SUM(B2:B9)' is a formula, '12.5' a number, "
        "'TRUE' a boolean, '' clears, a leading apostrophe keeps text as text. 'range' is the "
        "top-left cell or a range of the grid's shape; one value given for a larger range fills "
        "it, shifting relative references like fill-down.",
        {
            "type": "object",
            "properties": {
                "range": {
                    "type": "string",
                    "description": "Target cell or range, e.g. 'Sales!F2' or 'Sales!F2:F41'.",
                },
                "values": {
                    "type": "array",
                    "description": "Rows of cell texts, e.g. [['=D2*E2'], ['=D3*E3']].",
                    "items": {"type": "array", "items": {"type": "string"}},
                },
            },
            "required": ["range", "values"],
        },
    ),
    ToolSpec(
        "submit",
        "Finish the task: the answer range is checked and the episode ends.",
        {"type": "object", "properties": {}},
    ),
)

STATE_FIELDS: dict[str, Any] = {
    "sheets": {
        "type": "array",
        "description": "Each sheet: {'name': str, 'used_range': str like 'A1:E41' ('' if empty)}.",
        "items": {"type": "object"},
    },
    "answer_position": {"type": "string", "description": "The cells the verifier checks."},
    "answer_cells": {
        "type": "array",
        "description": (
            "Each answer cell now: {'cell': 'Sales!F2', 'shown': value as the agent sees it, "
            "'formula': its formula or ''}."
        ),
        "items": {"type": "object"},
    },
    "answer_cells_correct": {
        "type": "integer",
        "description": "How many answer cells match the answer workbook now.",
    },
    "changed_cells": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Cells whose content differs from the input workbook (first 200, sorted).",
    },
    "error_cells": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Answer cells whose formula evaluates to an error such as #DIV/0!.",
    },
    "steps": {"type": "integer", "description": "Agent steps this episode (not setup steps)."},
    "reads": {"type": "integer", "description": "list_sheets and read_range calls."},
    "writes": {"type": "integer", "description": "write_cells calls that wrote."},
    "invalid_actions": {"type": "integer", "description": "Actions refused with feedback."},
    "last_action": {"type": "string", "description": "The last tool called ('' before any)."},
    "submitted": {"type": "boolean", "description": "The agent submitted (the episode is over)."},
}
STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A spreadsheet task: the workbook's sheets, the answer cells and the activity.",
    "properties": STATE_FIELDS,
    "required": list(STATE_FIELDS),
}
