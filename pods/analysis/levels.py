"""Speed-up at fixed accuracy levels: the steps each arm's mean curve needs to first reach a level.

Time-to-peak (pods.analysis.speedups) asks when each arm first reaches 0.99 x the baseline's peak, so its
answer moves with the budget whenever the baseline is still rising at the end of its run: the tiny
(a) steps speed-up is 1.41 at 600 steps and 1.92 at 2000, because GRPO's peak, and with it the
target, rises with the budget (issue 10). This table asks the budget-free question instead: how many
optimizer steps does each arm's mean curve over seeds need to first reach accuracy L, for fixed L,
and what is their ratio (how many baseline steps one PODS step is worth on the way to L)?

A level that both arms reach within a budget gets the same answer from every longer budget: the
tiny scale's step budget makes the runs deterministic, so the first 600 steps of a 2000-step run are
the 600-step run, evaluation for evaluation. Rows of fixed `levels` from a short and a long run agree
wherever both reach them; the long run only adds the higher levels.

Definitions (mean curves over seeds at the evaluation grid, t = 0 excluded, as in time-to-peak):
- the position of an evaluation is its mean optimizer step over the arm's seeds where the rows have
  steps (`unit` "steps"), else its grid time in seconds (`unit` "s");
- t(L) = the position of the first evaluation at which the mean curve is >= L (inf: never);
- speed-up(L) = t_baseline(L) / t_pods(L);
- default levels: `fractions` of the baseline's rise from its start (its mean at t = 0; without
  t = 0 rows, its first evaluation) to its peak (1.0 = the peak itself). Those move with the budget
  as the peak does; pass `levels` to compare budgets;
- "pooled": sum of t_baseline over the levels both mean curves reach / the same sum for PODS (one
  number for the whole climb, weighted towards the high levels, which take the most steps).
Intervals: 95% percentile bootstrap over seeds, resampling each arm's seeds (the resamples of the
time-to-peak table: the same generator, drawn in the same order), over the resamples in which both
arms reach the level; `p_baseline_never` / `p_pods_never` are the shares in which an arm does not
(for "pooled": misses at least one of its levels). An arm with one seed has no interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from pods.analysis.curves import _arm, _at, _bootstrap_means, _first_index, _fmt, _interval, _label
from pods.analysis.speedups import _arm_runs, default_comparisons
from pods.analysis.tidy import AnalysisInputError

DEFAULT_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0)


def _unit(*arms) -> str:
    """'steps' where every evaluation of every arm carries its optimizer step, else 's'."""
    ok = all(np.isfinite(a.steps_S_T[np.isfinite(a.values_S_T)]).all() for a in arms)
    return "steps" if ok else "s"


def _reach(arm, idx_B_S: np.ndarray, levels_L: np.ndarray, unit: str) -> np.ndarray:
    """(B, L): position of the first evaluation at which each resampled mean curve is >= each level; inf: never."""
    means_B_T = _bootstrap_means(arm.values_S_T, idx_B_S)
    if unit == "steps":
        pos_B_T = _bootstrap_means(arm.steps_S_T, idx_B_S)
    else:
        pos_B_T = np.broadcast_to(arm.times_T, means_B_T.shape)
    out = np.empty((len(idx_B_S), len(levels_L)))
    for j, level in enumerate(levels_L):
        first_B = _first_index(means_B_T, np.full(len(idx_B_S), level))
        out[:, j] = np.where(first_B >= 0, _at(pos_B_T, first_B), np.inf)
    return out


def _ratio(num, den):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(num) & np.isfinite(den), num / den, np.nan)


def level_speedups(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    levels: Sequence[float],
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """One row per level (in the order given), then a "pooled" row: unit, level, t_baseline, t_pods, speedup,
    ci_low, ci_high, p_baseline_never, p_pods_never (module docstring). Inputs: tidy rows (seed, grid,
    time_s, step, value) of one metric and dataset per arm."""
    base, pods = _arm(baseline_runs), _arm(pods_runs)
    if base.values_S_T.size == 0:
        raise AnalysisInputError("the baseline has no evaluation after t = 0: no level can be reached")
    levels_L = np.array([float(x) for x in levels])
    if levels_L.size == 0 or not np.isfinite(levels_L).all():
        raise AnalysisInputError(f"levels must be finite numbers, at least one (got {list(levels)})")
    if pods.values_S_T.size == 0:  # PODS never evaluated after t = 0: it reaches no level (as in time-to-peak)
        pods = replace(pods, seeds=np.array([0]), times_T=base.times_T[:1], values_S_T=np.full((1, 1), np.nan),
                       steps_S_T=np.full((1, 1), np.nan))  # fmt: skip
    unit = _unit(base, pods)  # an all-NaN PODS arm has no evaluation to lack a step
    t_base_L = _reach(base, np.arange(len(base.seeds))[None], levels_L, unit)[0]
    t_pods_L = _reach(pods, np.arange(len(pods.seeds))[None], levels_L, unit)[0]
    one_seed = min(len(base.seeds), len(pods.seeds)) < 2
    rng = np.random.default_rng(seed)  # drawn as bootstrap_speedup draws: its resamples
    idx_base = rng.integers(0, len(base.seeds), (n_boot, len(base.seeds)))
    idx_pods = rng.integers(0, len(pods.seeds), (n_boot, len(pods.seeds)))
    rb_B_L, rp_B_L = _reach(base, idx_base, levels_L, unit), _reach(pods, idx_pods, levels_L, unit)

    rows = []
    for j, level in enumerate(levels_L):
        lo, hi = _interval(_ratio(rb_B_L[:, j], rp_B_L[:, j]), ci)
        rows.append(
            {
                "level": float(level),
                "t_baseline": float(t_base_L[j]),
                "t_pods": float(t_pods_L[j]),
                "speedup": float(_ratio(t_base_L[j], t_pods_L[j])),
                "ci_low": lo,
                "ci_high": hi,
                "p_baseline_never": float(np.isinf(rb_B_L[:, j]).mean()),
                "p_pods_never": float(np.isinf(rp_B_L[:, j]).mean()),
            }
        )
    both_L = np.isfinite(t_base_L) & np.isfinite(t_pods_L)
    pooled = {"level": math.nan, "t_baseline": math.nan, "t_pods": math.nan, "speedup": math.nan,
              "ci_low": math.nan, "ci_high": math.nan, "p_baseline_never": math.nan, "p_pods_never": math.nan}  # fmt: skip
    if both_L.any():
        sum_b_B, sum_p_B = rb_B_L[:, both_L].sum(axis=1), rp_B_L[:, both_L].sum(axis=1)  # inf where a level is missed
        lo, hi = _interval(_ratio(sum_b_B, sum_p_B), ci)
        pooled |= {
            "t_baseline": float(t_base_L[both_L].sum()),
            "t_pods": float(t_pods_L[both_L].sum()),
            "speedup": float(t_base_L[both_L].sum() / t_pods_L[both_L].sum()),
            "ci_low": lo,
            "ci_high": hi,
            "p_baseline_never": float(np.isinf(sum_b_B).mean()),
            "p_pods_never": float(np.isinf(sum_p_B).mean()),
        }
    out = pd.DataFrame([*rows, pooled])
    out.insert(0, "kind", ["level"] * len(rows) + ["pooled"])
    out.insert(1, "unit", unit)
    out["n_levels"] = [1] * len(rows) + [int(both_L.sum())]
    if one_seed:  # a resample of one seed is that seed: no interval, no shares
        out[["ci_low", "ci_high", "p_baseline_never", "p_pods_never"]] = math.nan
    return out


def _start_and_peak(runs: pd.DataFrame) -> tuple[float, float]:
    """The baseline's start (mean at t = 0, else its first evaluation) and its peak (t = 0 excluded),
    the peak computed as `level_speedups` computes the curve, so that it reaches its own peak exactly."""
    arm = _arm(runs)
    if arm.values_S_T.size == 0:
        raise AnalysisInputError("the baseline has no evaluation after t = 0: nothing to take a peak of")
    curve_T = _bootstrap_means(arm.values_S_T, np.arange(len(arm.seeds))[None])[0]
    at0 = runs.loc[runs["time_s"] <= 0, "value"]
    start = float(at0.mean()) if len(at0) else float(curve_T[np.isfinite(curve_T)][0])
    return start, float(np.nanmax(curve_T))


def level_table(
    df: pd.DataFrame,
    levels: Sequence[float] | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    metric: str | None = None,
    settings: Sequence[str] | None = None,
    n_boot: int = 2000,
    boot_seed: int = 0,
) -> pd.DataFrame:
    """`level_speedups` for each setting's main comparison (pods.analysis.speedups.default_comparisons: the
    sheet's baseline and PODS roles) on its primary test set: at `levels` (absolute, in the metric's
    units) or else at `fractions` of the baseline's rise from its start to its peak."""
    frames = []
    for c in default_comparisons(df, metric):
        if settings and c.setting not in settings:
            continue
        base_runs, pods_runs = _arm_runs(df, c)
        start, peak = _start_and_peak(base_runs)
        if levels is not None:
            lv, fr = sorted(float(x) for x in levels), None
        else:
            fr = sorted(float(f) for f in fractions)
            lv = [peak - (1 - f) * (peak - start) for f in fr]  # exactly the peak at 1.0 (float rounding)
        t = level_speedups(base_runs, pods_runs, lv, n_boot, boot_seed)
        t.insert(0, "fraction", [*(fr or [math.nan] * len(lv)), math.nan])
        head = {"setting": c.setting, "baseline": _label(c.baseline), "pods": _label(c.pods), "dataset": c.dataset,
                "metric": c.metric, "n_seeds_baseline": int(base_runs["seed"].nunique()),
                "n_seeds_pods": int(pods_runs["seed"].nunique()), "start_baseline": start, "peak_baseline": peak}  # fmt: skip
        for i, (k, v) in enumerate(head.items()):
            t.insert(i, k, v)
        frames.append(t)
    if not frames:
        which = f" among settings {', '.join(settings)}" if settings else ""
        raise AnalysisInputError(
            f"no setting{which} has both a baseline and a PODS arm (the run sheet's `role` column, passed to "
            "`collect --sheet`): train both arms first"
        )
    return pd.concat(frames, ignore_index=True)


def _pos(x: float, unit: str) -> str:
    if math.isinf(x):
        return "never"
    return f"{x:.0f}" if unit == "steps" else f"{x:.0f} s"


def write_level_table(df: pd.DataFrame, stem: str | Path) -> list[Path]:
    """`stem`.csv (all columns) and `stem`.md (one line per level, then the pooled line, per setting)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".csv"), stem.with_suffix(".md")]
    df.to_csv(paths[0], index=False)
    head = ["setting", "baseline vs PODS", "seeds", "level", "baseline reaches it at", "PODS at",
            "speed-up [95% CI]", "never (baseline / PODS)"]  # fmt: skip
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in df.iterrows():
        unit, pooled = str(r["unit"]), r["kind"] == "pooled"
        if pooled:
            level = f"pooled ({int(r['n_levels'])} levels)"
        else:
            frac = "" if math.isnan(float(r["fraction"])) else f" ({float(r['fraction']):.2f} of rise)"
            level = f"{100 * float(r['level']):.1f}%{frac}"
        if math.isnan(float(r["speedup"])):
            ratio = "-" if pooled else "n/a (an arm never reaches it)"
        else:
            ratio = f"{float(r['speedup']):.2f}"
            if not math.isnan(float(r["ci_low"])):
                ratio += f" [{_fmt(float(r['ci_low']))}, {_fmt(float(r['ci_high']))}]"
        never = (
            "-"
            if math.isnan(float(r["p_baseline_never"]))
            else f"{float(r['p_baseline_never']):.0%} / {float(r['p_pods_never']):.0%}"
        )
        cells = [str(r["setting"]), f"{r['baseline']} vs {r['pods']}", f"{r['n_seeds_baseline']} + {r['n_seeds_pods']}",
                 level, _pos(float(r["t_baseline"]), unit), _pos(float(r["t_pods"]), unit), ratio, never]  # fmt: skip
        md.append("| " + " | ".join(cells) + " |")
    md += ["", "Steps (or seconds, where the curves have no steps) at which each arm's mean curve over seeds first "
           "reaches each level (t = 0 excluded); speed-up = baseline / PODS. Levels: fixed, or a fraction of the "
           "baseline's rise from its start to its peak (1.00: the peak). 'pooled': summed steps over the levels both "
           "reach. Intervals: 95% percentile bootstrap over seeds, over the resamples in which both arms reach the "
           "level; 'never': the share of resamples in which an arm does not. A level both arms reach gets the same "
           "row from any longer run of the same seeds (pods/analysis/levels.py)."]  # fmt: skip
    paths[1].write_text("\n".join(md) + "\n")
    return paths
