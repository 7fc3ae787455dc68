"""The coverage a rigger can expect at a budget: the ideal knob locator, audited like a rig.

Run: ``python benchmarks/coverage_ceiling.py [--budgets 30,45,60,80,100,150,200] [--band 0.4-0.6]
[--audit 100] [--baseline 5] [--trials 4000]``. Prints a table and writes
``benchmarks/results/coverage_ceiling.json``.

``rig_calibration.py`` scores a rig by *coverage*: the share of tasks whose accepted spec, re-played
on ``--audit`` fresh seeds, lands inside the band. An audit fails for two reasons: the chosen
setting's true success rate lies outside the band, or it lies inside and the audit's own
rollouts land outside (100 rollouts at a true 0.45 do so 14% of the time). How often the first
happens depends on how precisely the rigger placed a continuous knob, which it learns only from
its own rollouts. This script measures the best case of that:

- the **ideal locator** knows the knob's whole response curve except where it sits (a logistic
  of known slope, centred at an unknown knob value drawn uniformly from the middle of the
  range);
- it spends every rollout the budget leaves after the baseline at its current maximum-likelihood
  estimate of the value that hits the band's centre, and ends at the final estimate (it makes
  no claim and never stops early);
- its chosen value is then audited exactly as ``envharness audit`` does (the audited rate inside
  the band, by the shipped objective's own ``contains``; the audit's pass probability is
  computed exactly from the binomial, not sampled).

Asymptotically the chosen setting's true rate then has standard deviation ``sqrt(c (1 - c) / m)``
around the centre ``c`` after ``m`` locating rollouts, which is the Cramér–Rao bound for any
estimator that learns the location from those rollouts, whatever the slope (the table shows
several). So a rigger with no prior knowledge of the curve cannot expect a higher coverage at the
same budget; one with knowledge (a curve shared across tasks) or a discrete knob whose rungs
happen to sit near the centre can. The normal approximation of the bound is printed beside the
measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binom, norm

from envharness.graph.objective import Objective

RESULTS = Path(__file__).parent / "results" / "coverage_ceiling.json"
GRID = 2001
"""Candidate centre positions on the knob's ``[0, 1]`` scale."""


def locate(
    slope: float, centre: float, checkpoints: Sequence[int], trials: int, rng: np.random.Generator
) -> dict[int, np.ndarray]:
    """The ideal locator's true success rate at its chosen value after each checkpoint.

    Args:
        slope: The curve's logit slope per unit of the knob's ``[0, 1]`` scale (negative).
        centre: The success rate aimed at (the band's centre).
        checkpoints: Locating-rollout counts to report, ascending.
        trials: Independent tasks simulated.
        rng: Random numbers.

    Returns:
        ``{m: true rates}``, one per trial, after ``m`` locating rollouts.
    """
    offset = math.log(centre / (1 - centre))
    truth = rng.uniform(0.25, 0.75, trials)  # where the curve hits the centre
    grid = np.linspace(0.0, 1.0, GRID)
    log_likelihood = np.zeros((trials, GRID))
    chosen = np.full(trials, 0.5)
    out: dict[int, np.ndarray] = {}
    for m in range(1, max(checkpoints) + 1):
        p = 1.0 / (1.0 + np.exp(-(offset + slope * (chosen - truth))))
        won = rng.random(trials) < p
        z = offset + slope * (chosen[:, None] - grid[None, :])
        log_likelihood += np.where(won[:, None], -np.logaddexp(0.0, -z), -np.logaddexp(0.0, z))
        chosen = grid[np.argmax(log_likelihood, axis=1)]
        if m in checkpoints:
            out[m] = 1.0 / (1.0 + np.exp(-(offset + slope * (chosen - truth))))
    return out


def audit_pass(rates: np.ndarray, objective: Objective, audit: int) -> np.ndarray:
    """Each rate's exact probability that ``audit`` rollouts land inside the band."""
    counts = np.arange(audit + 1)
    inside = np.array([objective.contains(k / audit) for k in counts])
    probabilities = binom.pmf(counts[None, :], audit, rates[:, None])
    return probabilities[:, inside].sum(axis=1)


def normal_bound(objective: Objective, centre: float, m: int, audit: int) -> float:
    """The bound's normal approximation: chosen rate ``N(c, c(1-c)/m)``, audit noise added."""
    sd = math.sqrt(centre * (1 - centre) * (1 / m + 1 / audit))
    low, high = float(objective.low), float(objective.high)  # type: ignore[arg-type]
    return float(norm.cdf((high - centre) / sd) - norm.cdf((low - centre) / sd))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The table's rows: per slope and budget, the share truly in band and the coverage."""
    objective = Objective.parse(args.band)
    if objective.kind != "success_band":
        raise SystemExit(f"expected a success band such as sr:0.4-0.6, got {args.band!r}")
    centre = (float(objective.low) + float(objective.high)) / 2  # type: ignore[arg-type]
    budgets = sorted(int(b) for b in args.budgets.split(","))
    locating = {b: b - args.baseline for b in budgets}
    if min(locating.values()) < 1:
        raise SystemExit(f"every budget must exceed the baseline's {args.baseline} rollouts")
    rng = np.random.default_rng(args.seed)
    rows = []
    for slope in (float(s) for s in args.slopes.split(",")):
        rates = locate(slope, centre, sorted(set(locating.values())), args.trials, rng)
        for budget in budgets:
            m = locating[budget]
            true_rates = rates[m]
            inside = np.array([objective.contains(float(r)) for r in true_rates])
            passed = audit_pass(true_rates, objective, args.audit)
            rows.append(
                {
                    "slope": slope,
                    "budget": budget,
                    "locating_rollouts": m,
                    "truly_in_band": float(inside.mean()),
                    "coverage": float(passed.mean()),
                    "coverage_se": float(passed.std(ddof=1) / math.sqrt(args.trials)),
                    "normal_bound": normal_bound(objective, centre, m, args.audit),
                }
            )
    return {"objective": str(args.band), "centre": centre, "rows": rows}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="30,45,60,80,100,150,200")
    parser.add_argument("--band", default="sr:0.4-0.6")
    parser.add_argument("--audit", type=int, default=100, help="audit rollouts per task")
    parser.add_argument("--baseline", type=int, default=5, help="baseline rollouts per task")
    parser.add_argument("--slopes", default="-4,-8,-16", help="logit per unit of the knob scale")
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = measure(args)
    print(
        f"ideal knob locator, {result['objective']}, audit {args.audit} rollouts, "
        f"{args.trials} tasks per row (budget = baseline {args.baseline} + locating rollouts)"
    )
    print(f"{'slope':>6}{'budget':>8}{'truly in band':>15}{'coverage':>10}{'normal approx':>15}")
    for row in result["rows"]:
        print(
            f"{row['slope']:>6g}{row['budget']:>8}{row['truly_in_band']:>15.3f}"
            f"{row['coverage']:>10.3f}{row['normal_bound']:>15.3f}"
        )
    result.update(
        benchmark="coverage_ceiling",
        settings={k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        wall_s=time.perf_counter() - started,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
