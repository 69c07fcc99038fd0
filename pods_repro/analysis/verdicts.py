"""The verdicts of the results page, computed from the numbers by stated rules.

Every verdict on docs/results.md and in the README's headline comes from one of these functions, and
:data:`RULES` states them on the page. A verdict reads an interval, never a point alone:

- a speed-up (baseline's time or steps to the target over PODS's) whose 95% interval lies above 1 is
  "faster", below 1 "slower", and one that contains 1 "not resolved";
- against the paper: the package's interval containing the paper's figure "agrees with the paper",
  otherwise it "differs from the paper" (below or above);
- a difference of means (an arm minus the reference, in points) whose interval lies above 0 is "higher",
  below 0 "lower", containing 0 "not resolved";
- a measured ratio held to a bound (the TRL drop-in's generation time) is "within" or "outside" it.

No interval (too few seeds) gives "no interval", never a verdict.
"""

from __future__ import annotations

import math

__all__ = ["RULES", "against", "difference", "speedup", "within"]

RULES = (
    "A speed-up is **faster** when its 95% interval lies above 1, **slower** when it lies below 1, and **not "
    "resolved** when it contains 1. The package **agrees with the paper** where its interval contains the "
    "paper's figure and **differs from the paper** (below or above) where it does not. A difference of means "
    "is **higher** or **lower** when its interval excludes 0, else **not resolved**. A ratio held to a bound "
    "is **within** or **outside** it. Too few seeds for an interval give **no interval**, not a verdict. "
    "(`pods_repro/analysis/verdicts.py`; a test changes a number and sees the verdict change.)"
)


def _missing(*xs: float) -> bool:
    return any(x is None or (isinstance(x, float) and math.isnan(x)) for x in xs)


def speedup(lo: float, hi: float) -> str:
    """'faster' (interval above 1), 'slower' (below 1), 'not resolved' (contains 1) or 'no interval'."""
    if _missing(lo, hi):
        return "no interval"
    if lo > 1:
        return "faster"
    if hi < 1:
        return "slower"
    return "not resolved"


def against(lo: float, hi: float, paper: float) -> str:
    """The package's interval against the paper's figure: 'agrees with the paper', 'differs from the paper
    (below)', 'differs from the paper (above)' or 'no interval'."""
    if _missing(lo, hi, paper):
        return "no interval"
    if hi < paper:
        return "differs from the paper (below)"
    if lo > paper:
        return "differs from the paper (above)"
    return "agrees with the paper"


def difference(lo: float, hi: float) -> str:
    """A difference of means: 'higher' (interval above 0), 'lower' (below 0), 'not resolved' or 'no interval'."""
    if _missing(lo, hi):
        return "no interval"
    if lo > 0:
        return "higher"
    if hi < 0:
        return "lower"
    return "not resolved"


def within(ratio: float, bound: float) -> str:
    """'within' when ``ratio`` <= ``bound``, else 'outside'."""
    return "within" if ratio <= bound else "outside"
