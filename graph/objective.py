"""What a rig aims for: ``auto``, a band on success rate or steps, or a user's plain words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from envharness.errors import RiggerError

__all__ = ["Objective", "ObjectiveKind"]

ObjectiveKind = Literal["auto", "success_band", "steps_band", "deficiency"]

_BAND = re.compile(r"^(sr|steps):\s*([0-9]*\.?[0-9]+)\s*-\s*([0-9]*\.?[0-9]+)$")


@dataclass(frozen=True)
class Objective:
    """The rig's objective.

    Attributes:
        kind: ``auto`` (scaffold what fails, harden what always succeeds, fix the diagnosed
            behaviour otherwise), ``success_band`` (success rate in ``[low, high]``),
            ``steps_band`` (mean steps of successful episodes in ``[low, high]``), or
            ``deficiency`` (a plain-language weakness to target; needs a model designer).
        low: The band's lower end.
        high: The band's upper end.
        text: The deficiency, in the user's words.

    Example:
        >>> Objective.parse("sr:0.4-0.6")
        Objective(kind='success_band', low=0.4, high=0.6, text=None)
        >>> Objective.parse("sr:0.4-0.6").contains(0.5)
        True
    """

    kind: ObjectiveKind = "auto"
    low: float | None = None
    high: float | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        if self.kind in ("success_band", "steps_band"):
            if self.low is None or self.high is None or not 0 <= self.low <= self.high:
                raise RiggerError(
                    f"expected a band with 0 <= low <= high, got {self.low!r}-{self.high!r}"
                )
            if self.kind == "success_band" and self.high > 1:
                raise RiggerError(f"a success-rate band lies in [0, 1], got high={self.high}")
        elif self.kind == "deficiency":
            if not self.text or not self.text.strip():
                raise RiggerError("a deficiency objective needs the weakness in words")
        elif self.kind != "auto":
            raise RiggerError(f"unknown objective kind {self.kind!r}")
        if not self.is_band and (self.low is not None or self.high is not None):
            raise RiggerError(f"a {self.kind} objective has no band, got {self.low}-{self.high}")

    @classmethod
    def parse(cls, text: str | Objective) -> Objective:
        """Parses ``auto``, ``sr:LOW-HIGH``, ``steps:LOW-HIGH``; any other text is a deficiency.

        Raises:
            RiggerError: A malformed band (e.g. ``sr:0.7-0.2`` or ``sr:0.5``).
        """
        if isinstance(text, Objective):
            return text
        if not isinstance(text, str) or not text.strip():
            raise RiggerError(
                f"expected an objective such as 'auto', 'sr:0.4-0.6', 'steps:25-35' or a "
                f"plain-language weakness, got {text!r}"
            )
        stripped = text.strip()
        if stripped.lower() == "auto":
            return cls()
        match = _BAND.match(stripped.lower())
        if match:
            kind: ObjectiveKind = "success_band" if match.group(1) == "sr" else "steps_band"
            return cls(kind, float(match.group(2)), float(match.group(3)))
        if re.match(r"^(sr|steps):", stripped.lower()):
            raise RiggerError(
                f"malformed band {stripped!r}: expected 'sr:LOW-HIGH' (e.g. sr:0.4-0.6) or "
                "'steps:LOW-HIGH' (e.g. steps:25-35)"
            )
        return cls("deficiency", text=stripped)

    @property
    def is_band(self) -> bool:
        """Whether this is a success-rate or steps band."""
        return self.kind in ("success_band", "steps_band")

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the band (``False`` for objectives without one)."""
        return self.is_band and self.low <= value <= self.high  # type: ignore[operator]

    def describe(self) -> str:
        """The objective in words, for prompts and reports."""
        if self.kind == "success_band":
            return f"bring the policy's success rate into {self.low:g}-{self.high:g}"
        if self.kind == "steps_band":
            return f"bring the mean steps of successful episodes into {self.low:g}-{self.high:g}"
        if self.kind == "deficiency":
            return f"target this weakness: {self.text}"
        return "auto: scaffold a task the policy fails, harden one it always solves"

    def __str__(self) -> str:
        if self.kind == "success_band":
            return f"sr:{self.low:g}-{self.high:g}"
        if self.kind == "steps_band":
            return f"steps:{self.low:g}-{self.high:g}"
        return self.text if self.kind == "deficiency" else "auto"  # type: ignore[return-value]

    def to_dict(self) -> dict[str, Any]:
        """The objective as a plain dict."""
        return {"kind": self.kind, "low": self.low, "high": self.high, "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Objective:
        """Rebuilds an objective from :meth:`to_dict` output."""
        return cls(data["kind"], data.get("low"), data.get("high"), data.get("text"))
