"""The band rule's operating characteristic: what one setting's validation does at a true rate.

The judge's band rule is Bayesian (accept when ``P(low <= p <= high) >= confidence`` under a
uniform prior), looked at after every batch. :func:`band_operating_characteristic` answers the
frequentist question a user of a confidence setting asks, exactly, by dynamic programming over
the binomial paths (no simulation): for a setting whose true success rate is ``rate``, how often
is it accepted, refined or left undecided within ``max_rollouts``, and after how many rollouts on
average. The decisions are the shipped :func:`~envharness.graph.judge.decisions.judge`'s own.

Example:
    >>> oc = band_operating_characteristic("sr:0.4-0.6", 0.5, max_rollouts=60)
    >>> round(oc.accept + oc.refine + oc.undecided, 9)
    1.0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from envharness.errors import RiggerError
from envharness.graph.judge.decisions import JudgeSettings, Outcomes, judge
from envharness.graph.objective import Objective

__all__ = ["OperatingCharacteristic", "band_operating_characteristic"]


@dataclass(frozen=True)
class OperatingCharacteristic:
    """How one setting's validation ends at a true success rate.

    Attributes:
        rate: The true success rate.
        accept: Probability the setting is accepted.
        refine: Probability it is refined (judged confidently outside the band).
        undecided: Probability the budget runs out first.
        expected_rollouts: Mean rollouts spent on the setting.
    """

    rate: float
    accept: float
    refine: float
    undecided: float
    expected_rollouts: float

    def to_dict(self) -> dict[str, Any]:
        """The figures as a plain dict."""
        return asdict(self)


def band_operating_characteristic(
    objective: Objective | str,
    rate: float,
    *,
    settings: JudgeSettings | None = None,
    max_rollouts: int | None = None,
) -> OperatingCharacteristic:
    """Exact accept/refine/undecided probabilities of one setting at a true ``rate``.

    Looks are after every ``settings.batch`` rollouts, as in the validator; the knob is not
    moved (this is one setting's test, the part that makes the decision).

    Args:
        objective: A success-band objective (``sr:LOW-HIGH``).
        rate: The setting's true success rate, in ``[0, 1]``.
        settings: The judge's settings (confidence, batch); the defaults when omitted.
        max_rollouts: The setting's budget; ``settings.max_rollouts`` when omitted.

    Raises:
        RiggerError: If the objective is not a success band or ``rate`` is not in ``[0, 1]``.
    """
    objective = Objective.parse(objective)
    if objective.kind != "success_band":
        raise RiggerError(f"expected a success-band objective (sr:LOW-HIGH), got {objective}")
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
        raise RiggerError(f"expected rate to be a number in [0, 1], got {rate!r}")
    settings = settings or JudgeSettings()
    budget = settings.max_rollouts if max_rollouts is None else max_rollouts
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise RiggerError(f"expected max_rollouts to be a positive int, got {budget!r}")
    paths = {0: 1.0}  # successes -> probability of reaching this look still undecided
    accept = refine = spent = 0.0
    for n in range(1, budget + 1):
        step: dict[int, float] = {}
        for s, p in paths.items():
            step[s + 1] = step.get(s + 1, 0.0) + p * rate
            step[s] = step.get(s, 0.0) + p * (1.0 - rate)
        paths = step
        if n % settings.batch and n != budget:
            continue
        still: dict[int, float] = {}
        for s, p in paths.items():
            decision = judge(objective, "none", Outcomes(n, s), Outcomes(), settings).decision
            if decision == "accept":
                accept += p
                spent += p * n
            elif decision == "refine":
                refine += p
                spent += p * n
            else:
                still[s] = p
        paths = still
    undecided = sum(paths.values())
    return OperatingCharacteristic(
        float(rate), accept, refine, undecided, spent + undecided * budget
    )
