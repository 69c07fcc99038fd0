"""The verdicts of the results page, computed from the numbers by stated rules.

Every verdict on docs/results.md and in the README's headline comes from one of these functions, and
:data:`RULES` states them on the page. A verdict reads an interval, never a point alone:

- a speed-up (baseline's time or steps to the target over PODS's) whose 95% interval lies above 1 is
  "faster", below 1 "slower", and one that contains 1 "not resolved";
- against the paper: an interval that excludes the paper's figure "differs from the paper" (below or
  above); one that contains it "agrees with the paper" only when it is informative (:func:`informative`),
  otherwise it is "consistent with the paper, not resolved". Where the paper's figure is computed from the
  same runs (the released logs' per-step reading), containing it "reproduces the printed figure", never
  "agrees";
- a difference of means (an arm minus the reference, in points) whose interval lies above 0 is "higher",
  below 0 "lower", containing 0 "not resolved";
- a measured ratio held to a bound (the TRL drop-in's generation time) is "within" or "outside" it.

No interval (too few seeds) gives "no interval", never a verdict.
"""

from __future__ import annotations

import math

__all__ = ["RULES", "against", "difference", "few_seeds", "informative", "speedup", "within"]

# An interval is informative about a speed-up when it could have excluded a rival figure: its lower end above
# 0 (PODS reaches the target in most resamples), its upper end at most WIDTH_FACTOR x its lower (it tells a
# speed-up from its double), and, for a claimed speed-up of at least CLAIM, its lower end above 1.
WIDTH_FACTOR = 2.0
CLAIM = 1.5

RULES = (
    "A speed-up is **faster** when its 95% interval lies above 1, **slower** when it lies below 1, and **not "
    "resolved** when it contains 1. Against the paper, an interval that excludes the paper's figure **differs "
    "from the paper** (below or above). One that contains it **agrees with the paper** only when it is "
    f"informative: its lower end above 0, its upper end at most {WIDTH_FACTOR:g}x its lower, and, where the paper "
    f"claims a speed-up of {CLAIM:g} or more, its lower end above 1; an interval that contains the figure but is "
    "not informative is **consistent with the paper, not resolved**. Why these bounds: an interval reaching 0 "
    "admits that PODS never reaches the target; one wider than a factor of 2 cannot tell a speed-up from its "
    "double, so it contains the paper's figure and most rival figures alike (the tiny (e)'s [0.00, 1.50] "
    "contains every figure from 0 to 1.5); and an interval that admits no speed-up at all cannot support a "
    f"claimed one of {CLAIM:g}x or more. Where the paper's figure is computed from the same runs (the released logs read per step), an "
    "interval that contains it **reproduces the printed figure**: the same data, not a second test. A difference of means "
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


def informative(lo: float, hi: float, paper: float) -> bool:
    """Whether a speed-up interval can bear on the paper's figure: lower end above 0, upper end at most
    WIDTH_FACTOR x the lower, and above 1 where the paper claims a speed-up of CLAIM or more."""
    if _missing(lo, hi, paper) or lo <= 0 or hi > WIDTH_FACTOR * lo:
        return False
    return lo > 1 or paper < CLAIM


def against(lo: float, hi: float, paper: float, same_data: bool = False) -> str:
    """The package's interval against the paper's figure: 'differs from the paper (below)' / '(above)' where it
    excludes it; containing it, 'agrees with the paper' when :func:`informative`, else 'consistent with the
    paper, not resolved'; 'no interval' without one. `same_data`: the paper's figure comes from the same runs
    ('reproduces the printed figure', 'consistent with the printed figure, not resolved', 'differs from the
    printed figure')."""
    if _missing(lo, hi, paper):
        return "no interval"
    what = "the printed figure" if same_data else "the paper"
    if hi < paper:
        return f"differs from {what} (below)"
    if lo > paper:
        return f"differs from {what} (above)"
    if not informative(lo, hi, paper):
        return f"consistent with {what}, not resolved"
    return "reproduces the printed figure" if same_data else "agrees with the paper"


def few_seeds(n: int) -> str:
    """The words for a cell whose seeds give no interval: 'not resolved at 1 seed', '... at 3 seeds'."""
    return f"not resolved at {n} seed{'' if n == 1 else 's'}"


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
