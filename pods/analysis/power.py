"""How many seeds would a steps-to-peak interval of a given width take? A projection from measured runs.

Issue 10 asks for (a)'s and (e)'s steps-to-peak intervals (speed-up (i), pods.analysis.speedups) to be at most 1.0 wide.
Resampling the measured seeds cannot say what more seeds would give: a resample of N > S seeds drawn from S
keeps the S-seed mean curve's wiggles, so near-ties at the target never average out. This module fits a
model to each arm instead and simulates experiments of N seeds from it:

    mean curve over N seeds = trend + (one shared offset, sd sigma_seed / sqrt(N))
                                    + (independent noise at each evaluation, sd sigma_eval / sqrt(N))

- trend: a quadratic in log(step) fitted to the arm's measured mean curve (evaluations after step 0);
- sigma_seed: the spread of the seeds' mean residuals (a seed that is better throughout), and sigma_eval: the
  residual spread left at each evaluation (test-set sampling and the policy's step-to-step jitter);
- each simulated experiment then computes (i) exactly as pods.analysis.speedups does: the target is ``threshold`` x the
  baseline mean curve's peak, each arm's step is the first evaluation reaching it, (i) is their ratio.

The 2.5-97.5% range of (i) over the simulated experiments is the projected 95% interval for N seeds. It is
an optimistic projection: the smooth trend removes any real wiggle of the mean curves, so at the measured
number of seeds it comes out narrower than the measured bootstrap interval (both are in the table, side by
side, with ``misfit``: the RMS distance of the measured mean curve from its trend in units of the noise the
model expects there; about 1 when the trend fits). A width the model cannot reach is therefore out of reach.

Run:  python -m pods.analysis seeds --curves results/tables/curves.csv --out-dir results/tables --setting a e
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pods.analysis.curves import _arm, _first_reach
from pods.analysis.speedups import _arm_runs, bootstrap_speedup, default_comparisons
from pods.analysis.tidy import AnalysisInputError

DEFAULT_SEEDS = (8, 16, 32, 64, 128, 256)


def _same_grid(base, pods) -> bool:
    """Both arms evaluated at the same optimizer steps (the tiny profile's step grid)."""
    if base.values_S_T.shape[1] != pods.values_S_T.shape[1]:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.allclose(np.nanmean(base.steps_S_T, 0), np.nanmean(pods.steps_S_T, 0), equal_nan=True))


def _unprojectable(base, pods, steps_T) -> str | None:
    """Why a comparison cannot be projected (None: it can)."""
    if steps_T is None:
        return "the two arms were evaluated on different grids"
    if min(len(base.seeds), len(pods.seeds)) < 2:
        return "an arm has one seed: no spread between seeds to project from (train at least 2 per arm)"
    if base.values_S_T.shape[1] < 4:
        return "fewer than 4 evaluations after step 0: no trend to fit"
    if not np.all(np.isfinite(steps_T) & (steps_T > 0)):
        return "curves without optimizer steps; (i) needs them"
    return None


def _fit_arm(values_S_T: np.ndarray, x_T: np.ndarray) -> dict:
    """Trend (quadratic in x = log step), sigma_seed, sigma_eval and misfit of one arm's seed matrix."""
    mean_T = np.nanmean(values_S_T, axis=0)
    ok = np.isfinite(mean_T)
    if ok.sum() < 4:
        raise AnalysisInputError("an arm has fewer than 4 evaluations after step 0: no trend to fit")
    trend_T = np.polyval(np.polyfit(x_T[ok], mean_T[ok], 2), x_T)
    resid_S_T = values_S_T - trend_T[None]
    seeds, evals = values_S_T.shape
    offset_S = np.nanmean(resid_S_T, axis=1)
    sigma_eval = float(np.sqrt(np.nanmean((resid_S_T - offset_S[:, None]) ** 2) * evals / max(evals - 1, 1)))
    # the seeds' mean residuals spread by sigma_seed plus the evaluations' noise averaged over T points
    var_seed = float(np.var(offset_S, ddof=1)) - sigma_eval**2 / evals if seeds > 1 else 0.0
    sigma_seed = math.sqrt(max(var_seed, 0.0))
    expected = math.sqrt((sigma_seed**2 + sigma_eval**2) / seeds)
    misfit = float(np.sqrt(np.nanmean((mean_T - trend_T) ** 2)) / expected) if expected > 0 else math.nan
    return {"trend": trend_T, "sigma_seed": sigma_seed, "sigma_eval": sigma_eval, "misfit": misfit}


def _simulate(base: dict, pods: dict, steps_T: np.ndarray, n: int, threshold: float, sims: int, rng) -> np.ndarray:
    """(i) in each of ``sims`` simulated experiments of ``n`` seeds per arm; NaN where PODS never reached."""

    def curves(fit: dict) -> np.ndarray:
        shared = rng.normal(0.0, fit["sigma_seed"] / math.sqrt(n), (sims, 1))
        noise = rng.normal(0.0, fit["sigma_eval"] / math.sqrt(n), (sims, len(steps_T)))
        return fit["trend"][None] + shared + noise

    base_B_T, pods_B_T = curves(base), curves(pods)
    target_B = threshold * np.nanmax(base_B_T, axis=1)  # as pods.analysis.speedups._speedups, on the step grid
    steps_base_B, steps_pods_B = _first_reach(steps_T, base_B_T, target_B), _first_reach(steps_T, pods_B_T, target_B)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(steps_pods_B), steps_base_B / steps_pods_B, np.nan)


def seed_projection(
    curves: pd.DataFrame,
    settings: Sequence[str] | None = None,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    threshold: float = 0.99,
    sims: int = 2000,
    seed: int = 0,
    metric: str | None = None,
    n_boot: int = 2000,
) -> pd.DataFrame:
    """One row per setting and number of seeds N: the projected 95% range of (i), its width and the share of
    experiments in which PODS never reached the target; with the fitted noise, the misfit, and the measured
    bootstrap interval of the same setting (at its own number of seeds) beside them.

    ``settings`` None: every setting that can be projected (both arms with at least 2 seeds and 4 evaluations
    after step 0 on one grid, with optimizer steps); the others are skipped. Named settings that cannot be
    projected are an AnalysisInputError that says why."""
    rows = []
    for c in default_comparisons(curves, metric):
        if settings and c.setting not in settings:
            continue
        base_runs, pods_runs = _arm_runs(curves, c)
        base, pods = _arm(base_runs), _arm(pods_runs)
        steps_T = np.nanmean(np.vstack([base.steps_S_T, pods.steps_S_T]), axis=0) if _same_grid(base, pods) else None
        why = _unprojectable(base, pods, steps_T)
        if why:
            if settings:
                raise AnalysisInputError(f"setting {c.setting}: {why}")
            continue
        x_T = np.log(steps_T)
        fb, fp = _fit_arm(base.values_S_T, x_T), _fit_arm(pods.values_S_T, x_T)
        boot = bootstrap_speedup(base_runs, pods_runs, threshold, n_boot, seed)
        measured = (len(base.seeds), len(pods.seeds))
        rng = np.random.default_rng(seed)
        for n in seeds:
            ratio = _simulate(fb, fp, steps_T, int(n), threshold, sims, rng)
            done = ratio[np.isfinite(ratio)]
            lo, med, hi = np.quantile(done, [0.025, 0.5, 0.975]) if done.size else (math.nan,) * 3
            rows.append(
                {
                    "setting": c.setting,
                    "seeds_per_arm": int(n),
                    "median": float(med),
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                    "width": float(hi - lo),
                    "p_pods_never": float(np.mean(~np.isfinite(ratio))),
                    "measured_seeds": f"{measured[0]} + {measured[1]}",
                    "measured_ci_low": boot["speedup_steps_ci_low"],
                    "measured_ci_high": boot["speedup_steps_ci_high"],
                    "baseline_sigma_seed": fb["sigma_seed"],
                    "baseline_sigma_eval": fb["sigma_eval"],
                    "baseline_misfit": fb["misfit"],
                    "pods_sigma_seed": fp["sigma_seed"],
                    "pods_sigma_eval": fp["sigma_eval"],
                    "pods_misfit": fp["misfit"],
                }
            )
    return pd.DataFrame(rows)


def write_seed_projection(table: pd.DataFrame, stem: Path, width: float = 1.0) -> list[Path]:
    """``stem``.csv (every column) and ``stem``.md (a readable table and, per setting, the fewest simulated
    seeds whose projected interval is at most ``width`` wide)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv, md = stem.with_suffix(".csv"), stem.with_suffix(".md")
    table.to_csv(csv, index=False)
    if table.empty:  # the workflow's table at a scale with one seed per arm (the smoke run): say so
        md.write_text(
            "No setting could be projected: each needs a baseline and a PODS arm with at least 2 seeds and 4 "
            "evaluations after step 0 on one step grid (pods/analysis/power.py).\n"
        )
        return [csv, md]
    lines = [
        "| setting | seeds per arm | (i) median | projected 95% range | width | PODS never | measured: seeds, "
        "bootstrap interval | noise sd (seed / eval, points): baseline, PODS | misfit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for setting, rows in table.groupby("setting", sort=False):
        for r in rows.itertuples():
            lines.append(
                f"| {setting} | {r.seeds_per_arm} | {r.median:.2f} | [{r.ci_low:.2f}, {r.ci_high:.2f}] | "
                f"{r.width:.2f} | {r.p_pods_never:.1%} | {r.measured_seeds}: [{r.measured_ci_low:.2f}, "
                f"{r.measured_ci_high:.2f}] | {100 * r.baseline_sigma_seed:.1f} / {100 * r.baseline_sigma_eval:.1f}, "
                f"{100 * r.pods_sigma_seed:.1f} / {100 * r.pods_sigma_eval:.1f} | "
                f"{r.baseline_misfit:.2f}, {r.pods_misfit:.2f} |"
            )
        enough = rows[rows["width"] <= width]
        verdicts.append(
            f"({setting}): width <= {width:g} from {int(enough['seeds_per_arm'].min())} seeds per arm"
            if len(enough)
            else f"({setting}): width <= {width:g} not reached with up to {int(rows['seeds_per_arm'].max())} "
            "seeds per arm"
        )
    head = (
        "Projected 95% range of speed-up (i) (steps to 0.99 x the baseline's peak) with N seeds per arm, "
        "from a trend + noise model fitted to the measured runs (pods/analysis/power.py; optimistic: compare the "
        "measured bootstrap interval). " + "; ".join(verdicts) + "."
    )
    md.write_text(head + "\n\n" + "\n".join(lines) + "\n")
    return [csv, md]
