"""What the tiny job's seeds and evaluation grid do to its statistics, computed from the committed record.

Three readings beside the time-to-peak table, each from the tiny default job's curves:

- :func:`mean_differences`: for every setting's main comparison, PODS's mean accuracy over the budget minus
  the baseline's (the area under each run's accuracy-against-optimizer-step curve over [0, B], divided by B,
  B the last step both arms reach), in points, with a 95% Welch t-interval over seeds. It uses every
  evaluation, so it resolves a difference at seeds where steps-to-peak does not (the arena's statistic);
  fewer than 2 seeds on a side give no interval.
- :func:`subsample_speedups`: from one setting's recorded seeds (the tiny (a)'s 64 + 64), ``draws`` random
  experiments of k seeds per arm (drawn without replacement): the median of their per-step speed-up (i),
  the central 95% of it, and the share of experiments whose interval (the table's expanded percentile
  bootstrap) calls PODS faster. It shows how far the statistic moves, and how often a real effect is
  seen, at the seeds the other settings have.
- :func:`interpolated_crossing`: (i) with each arm's crossing of the target placed by linear interpolation
  between the two evaluations around it, not at the first evaluation at or above it: how much the coarse
  evaluation grid moves the statistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pods_repro.analysis import intervals
from pods_repro.analysis.curves import arm_matrices
from pods_repro.analysis.speedups import arm_runs, default_comparisons

CI = 0.95
SUBSAMPLE_SEEDS = (1, 3, 8, 16, 32)
SUBSAMPLE_DRAWS = 200
SUBSAMPLE_BOOT = 1000
_CHUNK = 4_000_000  # seed draws per ratio_interval call (experiments x n_boot x seeds): bounds its memory


def _per_seed_means(runs: pd.DataFrame, budget: float) -> np.ndarray:
    """Each seed's mean accuracy over optimizer steps [0, budget] (trapezoids between evaluations)."""
    out = []
    for _, g in runs.groupby("seed", sort=True):
        g = g.drop_duplicates("step").sort_values("step")
        x, y = g["step"].to_numpy(float), g["value"].to_numpy(float)
        keep = x <= budget
        out.append(float(np.trapezoid(y[keep], x[keep]) / budget))
    return np.array(out)


def mean_differences(curves: pd.DataFrame | None) -> pd.DataFrame:
    """One row per setting: budget (steps), diff (PODS minus baseline mean accuracy over the budget, points),
    diff_low / diff_high (95% Welch; NaN below 2 seeds a side), n_seeds_baseline, n_seeds_pods."""
    rows = []
    if curves is None or curves.empty:
        return pd.DataFrame(rows)
    for c in default_comparisons(curves):
        base_runs, pods_runs = arm_runs(curves, c)
        budget = float(
            min(base_runs.groupby("seed")["step"].max().min(), pods_runs.groupby("seed")["step"].max().min())
        )
        base, pods = _per_seed_means(base_runs, budget), _per_seed_means(pods_runs, budget)
        lo = hi = math.nan
        if min(len(base), len(pods)) >= 2:
            lo, hi = (100 * float(x) for x in intervals.mean_diff_interval(pods, base, CI))
        rows.append({
            "setting": str(c.setting), "budget": budget, "diff": 100 * float(pods.mean() - base.mean()),
            "diff_low": lo, "diff_high": hi, "n_seeds_baseline": len(base), "n_seeds_pods": len(pods),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _arms(curves: pd.DataFrame, setting: str):
    comp = [c for c in default_comparisons(curves) if str(c.setting) == setting]
    if not comp:
        return None
    base_runs, pods_runs = arm_runs(curves, comp[0])
    return arm_matrices(base_runs), arm_matrices(pods_runs)


def subsample_speedups(
    curves: pd.DataFrame | None,
    setting: str = "a",
    seeds: Sequence[int] = SUBSAMPLE_SEEDS,
    draws: int = SUBSAMPLE_DRAWS,
    n_boot: int = SUBSAMPLE_BOOT,
    rng_seed: int = 0,
) -> pd.DataFrame:
    """One row per k in `seeds` (those the record holds for both arms) and one for all recorded seeds: k,
    draws, median (of the per-step speed-up over the experiments), low / high (their central 95%),
    p_faster (share whose interval lies above 1), p_interval (share with an interval at all)."""
    arms = None if curves is None else _arms(curves, setting)
    if arms is None:
        return pd.DataFrame()
    base, pods = arms
    steps_T = np.nanmean(base.steps_S_T, axis=0)
    n_all = min(len(base.seeds), len(pods.seeds))
    rng = np.random.default_rng(rng_seed)
    rows = []
    for k in [k for k in seeds if k < n_all] + [n_all]:
        e_all = 1 if k == n_all else draws
        points, lows = [], []
        per_call = max(1, _CHUNK // (n_boot * k))
        for done in range(0, e_all, per_call):
            e = min(per_call, e_all - done)
            if k == n_all:
                ib, ip = np.arange(len(base.seeds))[None], np.arange(len(pods.seeds))[None]
            else:
                ib = np.argsort(rng.random((e, len(base.seeds))), axis=1)[:, :k]
                ip = np.argsort(rng.random((e, len(pods.seeds))), axis=1)[:, :k]
            b_E_S_T, p_E_S_T = base.values_S_T[ib], pods.values_S_T[ip]
            if k < 2:  # one seed a side: its point, and no interval (the table gives none below 5 either)
                point = intervals.speedup_from_curves(b_E_S_T.mean(1), p_E_S_T.mean(1), steps_T, steps_T)
                points.append(point)
                lows.append(np.full_like(point, np.nan))
                continue
            res = intervals.ratio_interval(b_E_S_T, p_E_S_T, steps_T, rng=rng, n_boot=n_boot, ci=CI)
            points.append(np.atleast_1d(res["point"]))
            lows.append(np.atleast_1d(res["low"]))
        point, low = np.concatenate(points), np.concatenate(lows)
        rows.append({
            "setting": setting, "k": k, "draws": e_all, "median": float(np.median(point)),
            "low": float(np.quantile(point, 0.025)), "high": float(np.quantile(point, 0.975)),
            "p_faster": float(np.mean(low > 1)), "p_interval": float(np.mean(~np.isnan(low))),
            "all_seeds": k == n_all,
        })  # fmt: skip
    return pd.DataFrame(rows)


def _interp_crossing(mean_B_T: np.ndarray, steps_T: np.ndarray, target_B: np.ndarray) -> np.ndarray:
    """The step at which each row first reaches its target, linear between the evaluations around it (NaN:
    never)."""
    hit = mean_B_T >= target_B[:, None]
    first = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    prev = np.maximum(first - 1, 0)
    rows = np.arange(len(first))
    y0, y1 = mean_B_T[rows, prev], mean_B_T[rows, np.maximum(first, 0)]
    s0, s1 = steps_T[prev], steps_T[np.maximum(first, 0)]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(first > 0, (target_B - y0) / (y1 - y0), 0.0)
    return np.where(first >= 0, s0 + np.clip(frac, 0.0, 1.0) * (s1 - s0), np.nan)


def _interp_ratios(base_B_T, pods_B_T, steps_T, threshold: float) -> np.ndarray:
    target = threshold * np.nanmax(base_B_T, axis=1)
    s_base, s_pods = _interp_crossing(base_B_T, steps_T, target), _interp_crossing(pods_B_T, steps_T, target)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isnan(s_pods), 0.0, s_base / s_pods)  # never reached: 0, as in the table


def interpolated_crossing(
    curves: pd.DataFrame | None, setting: str = "a", threshold: float = 0.99, n_boot: int = 4000, rng_seed: int = 0
) -> dict | None:
    """The per-step speed-up with each crossing interpolated between evaluations: point (all seeds), low /
    high (the table's expanded percentile bootstrap over seeds, each arm resampled on its own), n_seeds;
    None where the record lacks the setting or its seeds are too few for an interval."""
    arms = None if curves is None else _arms(curves, setting)
    if arms is None:
        return None
    base, pods = arms
    n = min(len(base.seeds), len(pods.seeds))
    if n < intervals.MIN_SEEDS_SPEEDUP:
        return None
    steps_T = np.nanmean(base.steps_S_T, axis=0)
    point = _interp_ratios(np.nanmean(base.values_S_T, 0)[None], np.nanmean(pods.values_S_T, 0)[None], steps_T,
                           threshold)  # fmt: skip
    rng = np.random.default_rng(rng_seed)
    ib = rng.integers(0, len(base.seeds), (n_boot, len(base.seeds)))
    ip = rng.integers(0, len(pods.seeds), (n_boot, len(pods.seeds)))
    boot = _interp_ratios(np.nanmean(base.values_S_T[ib], 1), np.nanmean(pods.values_S_T[ip], 1), steps_T, threshold)
    lo, hi = intervals.expanded_ends(boot[None], CI, n)
    return {"point": float(point[0]), "low": float(lo[0]), "high": float(hi[0]), "n_seeds": n}
