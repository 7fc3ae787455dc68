"""The docqa bridge's tool specs and the JSON-Schema of its env state."""

from __future__ import annotations

from typing import Any

from envharness.core import ToolSpec

__all__ = ["SEARCH_HITS", "STATE_SCHEMA", "TOOLS"]

SEARCH_HITS = 5
"""How many pages a search shows."""

TOOLS = (
    ToolSpec(
        "list_documents",
        "List the documents in the folder: name, kind, number of pages and title.",
        {"type": "object", "properties": {}},
    ),
    ToolSpec(
        "search",
        f"Keyword search over every page of every document. Shows up to {SEARCH_HITS} pages, "
        "best first, each with its document name, page number and best-matching line. Use "
        "distinctive words and numbers, e.g. 'net profit 2023'.",
        {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Keywords to look for."}},
            "required": ["query"],
        },
    ),
    ToolSpec(
        "read_page",
        "Read one page of a document. Pages count from 1.",
        {
            "type": "object",
            "properties": {
                "doc": {
                    "type": "string",
                    "description": "The document's name, as list_documents and search show it.",
                },
                "page": {"type": "integer", "minimum": 1, "description": "The page number."},
            },
            "required": ["doc", "page"],
        },
    ),
    ToolSpec(
        "answer",
        "Give your final answer; this ends the episode. Write only the answer itself (a number, "
        "date, name or short phrase), e.g. '48.6' or '18 September 2023'.",
        {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The answer."}},
            "required": ["text"],
        },
    ),
)

_PAGE_REF = {
    "type": "object",
    "properties": {"doc": {"type": "string"}, "page": {"type": "integer"}},
    "required": ["doc", "page"],
}
_FIELDS: dict[str, Any] = {
    "question": {"type": "string", "description": "The question to answer."},
    "steps": {
        "type": "integer",
        "description": "Agent actions since reset (not setup steps), invalid ones included.",
    },
    "searches": {
        "type": "array",
        "items": {"type": "string"},
        "description": "The queries searched so far, in order (repeats included).",
    },
    "pages_read": {
        "type": "array",
        "items": _PAGE_REF,
        "description": "The distinct pages read so far, in the order first read.",
    },
    "current_doc": {"type": "string", "description": "The document last read ('' before any)."},
    "current_page": {"type": "integer", "description": "The page last read (0 before any)."},
    "last_tool": {"type": "string", "description": "The tool of the last action ('' before any)."},
    "invalid_actions": {
        "type": "integer",
        "description": "Actions the environment could not carry out (unknown document, page "
        "out of range, empty query or answer).",
    },
    "answered": {"type": "boolean", "description": "An answer was given (the episode is over)."},
    "answer": {"type": "string", "description": "The answer given ('' before one)."},
}
STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A document question-answering episode: what was searched, read, answered.",
    "properties": _FIELDS,
    "required": list(_FIELDS),
}
