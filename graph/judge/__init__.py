"""Pure statistics for EnvRigger: decisions, knob calibration, audit (no LangGraph import).

- :mod:`~envharness.graph.judge.posterior` — Beta and Student-t posteriors, two-sample shifts.
- :func:`judge` — one decision (accept / refine / continue) on a candidate's fresh rollouts.
- :func:`validate_candidate` — the sequential validation loop: fresh seeds, a look per batch,
  the first knob calibrated by a pooled monotone model, whose posterior may accept a band.
- :func:`propose_value` — the knob value the pooled model predicts for the aim.
- :func:`band_probability_at` — the pooled model's posterior probability of a band at a value.
- :func:`band_operating_characteristic` — exact accept / refine / undecided probabilities of one
  setting's band test at a true success rate (the frequentist reading of ``confidence``).
- :func:`~envharness.graph.judge.audit.audit_run` — re-measures a run's accepted specs on fresh
  seeds (``envharness audit``).
"""

from envharness.graph.judge.calibration import (
    Knob,
    Point,
    band_probability_at,
    predict,
    propose_value,
)
from envharness.graph.judge.decisions import Judgement, JudgeSettings, Outcomes, judge
from envharness.graph.judge.operating import OperatingCharacteristic, band_operating_characteristic
from envharness.graph.judge.sequential import ValidationRun, knob_aim, validate_candidate

__all__ = [
    "JudgeSettings",
    "Judgement",
    "Knob",
    "OperatingCharacteristic",
    "Outcomes",
    "Point",
    "ValidationRun",
    "band_operating_characteristic",
    "band_probability_at",
    "judge",
    "knob_aim",
    "predict",
    "propose_value",
    "validate_candidate",
]
