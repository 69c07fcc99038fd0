"""Speed-up at fixed accuracy levels: the steps each arm's mean curve needs to first reach a level.

Time-to-peak (pods_repro.analysis.speedups) asks when each arm first reaches 0.99 x the baseline's peak, so its
answer moves with the budget while the baseline still rises. This table asks at levels below the peak:
how many optimizer steps does each arm's mean curve over seeds need to first reach accuracy L, and what
is their ratio? A level both arms reach within a budget gets the same answer from every longer budget.

Definitions (mean curves over seeds at the evaluation grid, t = 0 excluded, as in time-to-peak):
- the position of an evaluation: its mean optimizer step over the arm's seeds (`unit` "steps"), else
  its grid time in seconds (`unit` "s"); t(L): the position of the first evaluation >= L (inf: never);
  speed-up(L) = t_baseline(L) / t_pods(L);
- default levels: `fractions` of the baseline's rise from its start (its mean at t = 0, else its first
  evaluation) to its peak (1.0 = the peak); pass `levels` to compare budgets;
- "pooled": the baseline's steps summed over the levels below the peak / the same sum for PODS; with
  absolute `levels`, over those the baseline reaches in every resample (`n_levels`).
Intervals: pods_repro.analysis.intervals.levels_interval (docs/design.md#intervals-over-seeds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from pods_repro.analysis import command
from pods_repro.analysis.curves import arm_matrices, bootstrap_means, first_index, fmt_cell, selector_label, value_at
from pods_repro.analysis.intervals import DEFAULT_FRACTIONS, MIN_SEEDS_SPEEDUP, levels_interval
from pods_repro.analysis.speedups import arm_runs, default_comparisons
from pods_repro.analysis.tidy import FRACTION_METRICS, AnalysisInputError


def _unit(*arms) -> str:
    """'steps' where every evaluation of every arm carries its optimizer step, else 's'."""
    ok = all(np.isfinite(a.steps_S_T[np.isfinite(a.values_S_T)]).all() for a in arms)
    return "steps" if ok else "s"


def _reach(arm, idx_B_S: np.ndarray, levels_L: np.ndarray, unit: str) -> np.ndarray:
    """(B, L): position of the first evaluation at which each resampled mean curve is >= each level; inf: never."""
    means_B_T = bootstrap_means(arm.values_S_T, idx_B_S)
    if unit == "steps":
        pos_B_T = bootstrap_means(arm.steps_S_T, idx_B_S)
    else:
        pos_B_T = np.broadcast_to(arm.times_T, means_B_T.shape)
    out = np.empty((len(idx_B_S), len(levels_L)))
    for j, level in enumerate(levels_L):
        first_B = first_index(means_B_T, np.full(len(idx_B_S), level))
        out[:, j] = np.where(first_B >= 0, value_at(pos_B_T, first_B), np.inf)
    return out


def _ratio(num, den):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(num) & np.isfinite(den), num / den, np.nan)


def _few_seeds(n: int) -> str:
    return f"no interval: {n} seed(s) per arm, below the {MIN_SEEDS_SPEEDUP} at which its 95% coverage holds"


def level_speedups(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    levels: Sequence[float] | None = None,
    n_boot: int = 4000,
    seed: int = 0,
    ci: float = 0.95,
    fractions: Sequence[float] | None = None,
) -> pd.DataFrame:
    """One row per level (absolute `levels` in the order given, or `fractions` of the baseline's rise), then a
    "pooled" row: unit, level, t_baseline, t_pods, speedup, ci_low, ci_high, cond_low, cond_high,
    p_baseline_never, p_pods_never, n_levels, note (module docstring). Inputs: tidy rows (seed, grid, time_s,
    step, value) of one metric and dataset per arm."""
    if (levels is None) == (fractions is None):
        raise AnalysisInputError("pass accuracy levels or fractions of the baseline's rise, not both or neither")
    base, pods = arm_matrices(baseline_runs), arm_matrices(pods_runs)
    if base.values_S_T.size == 0:
        raise AnalysisInputError("the baseline has no evaluation after t = 0: no level can be reached")
    if levels is not None:
        levels_L = np.array([float(x) for x in levels])
        if levels_L.size == 0 or not np.isfinite(levels_L).all():
            raise AnalysisInputError(f"levels must be finite numbers, at least one (got {list(levels)})")
        fractions_L = None
    else:
        fractions_L = np.array([float(f) for f in fractions])
        start, peak = _start_and_peak(baseline_runs)
        levels_L = peak - (1.0 - fractions_L) * (peak - start)  # exactly the peak at 1.0 (float rounding)
    if pods.values_S_T.size == 0:  # PODS never evaluated after t = 0: it reaches no level (as in time-to-peak)
        pods = replace(pods, seeds=np.array([0]), times_T=base.times_T[:1], values_S_T=np.full((1, 1), np.nan),
                       steps_S_T=np.full((1, 1), np.nan))  # fmt: skip
    unit = _unit(base, pods)  # an all-NaN PODS arm has no evaluation to lack a step
    t_base_L = _reach(base, np.arange(len(base.seeds))[None], levels_L, unit)[0]
    t_pods_L = _reach(pods, np.arange(len(pods.seeds))[None], levels_L, unit)[0]
    pooled_L = np.ones(len(levels_L), bool) if levels is not None else fractions_L < 1.0
    n_seeds = min(len(base.seeds), len(pods.seeds))

    ends, pooled_L, note = _level_ends(
        baseline_runs, base, pods, unit, levels_L, None if levels is None else levels_L, fractions_L, pooled_L,
        n_seeds, n_boot, seed, ci,
    )  # fmt: skip
    rows = [
        {
            "level": float(level),
            "t_baseline": float(t_base_L[j]),
            "t_pods": float(t_pods_L[j]),
            "speedup": float(_ratio(t_base_L[j], t_pods_L[j])),
            "ci_low": float(ends["low"][j]),
            "ci_high": float(ends["high"][j]),
            "cond_low": float(ends["cond_low"][j]),
            "cond_high": float(ends["cond_high"][j]),
            "p_baseline_never": float(ends["base_never_share"][j]),
            "p_pods_never": float(ends["never_share"][j]),
        }
        for j, level in enumerate(levels_L)
    ]
    if levels is not None and n_seeds < 2:  # no resamples: pool the fixed levels the baseline reaches
        pooled_L = np.isfinite(t_base_L)
    out = pd.DataFrame([*rows, _pooled_row(t_base_L, t_pods_L, pooled_L, ends)])
    out.insert(0, "kind", ["level"] * len(rows) + ["pooled"])
    out.insert(1, "unit", unit)
    out["n_levels"] = [1] * len(rows) + [int(pooled_L.sum())]
    out["note"] = note
    return out


def _level_ends(baseline_runs, base, pods, unit, levels_L, fixed_L, fractions_L, pooled_L, n_seeds, n_boot, seed, ci):
    """(interval columns, pooled levels, note) of `level_speedups`: `levels_interval` at the fixed levels
    `fixed_L`, else at `fractions_L` of the baseline's rise; NaN and a note below the seeds it needs."""
    nan_L = np.full(len(levels_L), math.nan)
    ends = {k: nan_L for k in ("low", "high", "cond_low", "cond_high", "never_share", "base_never_share")}
    ends |= {f"pooled_{k}": math.nan for k in list(ends)}
    note = _few_seeds(n_seeds) if n_seeds < MIN_SEEDS_SPEEDUP else ""
    if n_seeds < 2:
        return ends, pooled_L, "no interval: 1 seed in an arm"
    if not np.isfinite(pods.values_S_T).any():
        return ends, pooled_L, note
    pos = (base.steps_S_T, pods.steps_S_T) if unit == "steps" else (base.times_T, pods.times_T)
    at0 = baseline_runs[baseline_runs["time_s"] <= 0].groupby("seed")["value"].mean()
    start_S = at0.reindex(base.seeds).to_numpy(float) if len(at0) and at0.reindex(base.seeds).notna().all() else None

    def interval(lv):
        try:
            return levels_interval(
                base.values_S_T, pods.values_S_T, pos[0], pods_steps_T=pos[1],
                fractions=fractions_L if fixed_L is None else DEFAULT_FRACTIONS,
                base_start_S=start_S if fixed_L is None else None, levels=lv,
                rng=np.random.default_rng(seed), n_boot=n_boot, ci=ci,
            )  # fmt: skip
        except ValueError as err:  # e.g. too few resamples for the expanded interval's tails
            raise AnalysisInputError(f"levels: {err}") from None

    res = interval(fixed_L)
    ends = {k: res[k] for k in ends}
    note = _few_seeds(n_seeds) if res["note"] else ""
    if fixed_L is not None:  # a fixed level the baseline misses in some resample leaves the pool
        pooled_L = np.asarray(res["base_never_share"]) == 0
        if pooled_L.any() and not pooled_L.all():
            again = interval(fixed_L[pooled_L])  # the same resamples: the same seed
            ends |= {k: again[k] for k in ends if k.startswith("pooled_")}
        elif not pooled_L.any():
            ends |= {k: math.nan for k in ends if k.startswith("pooled_")}
    return ends, pooled_L, note


def _pooled_row(t_base_L: np.ndarray, t_pods_L: np.ndarray, pooled_L: np.ndarray, ends: dict) -> dict:
    """The "pooled" row of `level_speedups`: the steps summed over the pooled levels the baseline reaches."""
    both_L = pooled_L & np.isfinite(t_base_L) & np.isfinite(t_pods_L)
    full = pooled_L & np.isfinite(t_base_L)
    return {
        "level": math.nan,
        "t_baseline": float(t_base_L[full].sum()) if full.any() else math.nan,
        "t_pods": float(t_pods_L[full].sum()) if full.any() else math.nan,
        "speedup": float(t_base_L[full].sum() / t_pods_L[full].sum())
        if full.any() and both_L[full].all()
        else math.nan,
        "ci_low": float(ends["pooled_low"]),
        "ci_high": float(ends["pooled_high"]),
        "cond_low": float(ends["pooled_cond_low"]),
        "cond_high": float(ends["pooled_cond_high"]),
        "p_baseline_never": float(ends["pooled_base_never_share"]),
        "p_pods_never": float(ends["pooled_never_share"]),
    }


def _start_and_peak(runs: pd.DataFrame) -> tuple[float, float]:
    """The baseline's start (mean at t = 0, else its first evaluation) and its peak (t = 0 excluded),
    the peak computed as `level_speedups` computes the curve, so that it reaches its own peak exactly."""
    arm = arm_matrices(runs)
    if arm.values_S_T.size == 0:
        raise AnalysisInputError("the baseline has no evaluation after t = 0: nothing to take a peak of")
    curve_T = bootstrap_means(arm.values_S_T, np.arange(len(arm.seeds))[None])[0]
    at0 = runs.loc[runs["time_s"] <= 0, "value"]
    start = float(at0.mean()) if len(at0) else float(curve_T[np.isfinite(curve_T)][0])
    return start, float(np.nanmax(curve_T))


def level_table(
    df: pd.DataFrame,
    levels: Sequence[float] | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    metric: str | None = None,
    settings: Sequence[str] | None = None,
    n_boot: int = 4000,
    boot_seed: int = 0,
) -> pd.DataFrame:
    """`level_speedups` for each setting's main comparison (pods_repro.analysis.speedups.default_comparisons: the
    sheet's baseline and PODS roles) on its primary test set: at `levels` (absolute, in the metric's
    units) or else at `fractions` of the baseline's rise from its start to its peak."""
    frames = []
    for c in default_comparisons(df, metric):
        if settings and c.setting not in settings:
            continue
        base_runs, pods_runs = arm_runs(df, c)
        start, peak = _start_and_peak(base_runs)
        if levels is not None:
            lv, fr = sorted(float(x) for x in levels), None
            t = level_speedups(base_runs, pods_runs, lv, n_boot, boot_seed)
        else:
            fr = sorted(float(f) for f in fractions)
            t = level_speedups(base_runs, pods_runs, None, n_boot, boot_seed, fractions=fr)
        t.insert(0, "fraction", [*(fr or [math.nan] * len(t[t["kind"] == "level"])), math.nan])
        head = {"setting": c.setting, "baseline": selector_label(c.baseline), "pods": selector_label(c.pods), "dataset": c.dataset,
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
            ratio += f" [{fmt_cell(float(r['ci_low']))}, {fmt_cell(float(r['ci_high']))}]"
        elif min(int(r["n_seeds_baseline"]), int(r["n_seeds_pods"])) < MIN_SEEDS_SPEEDUP and ratio != "-":
            ratio += f" [n/a ({min(int(r['n_seeds_baseline']), int(r['n_seeds_pods']))} seeds)]"
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
           "baseline's rise from its start to its peak (1.00: the peak). 'pooled': summed steps over the levels "
           "below the peak (all fixed levels). Intervals: 95% expanded percentile bootstrap over seeds, the levels "
           "recomputed from each resample's baseline; a resample in which PODS misses a level counts as 0 (the "
           "baseline missing a fixed level: as unbounded), 'never' gives those shares; no interval below "
           f"{MIN_SEEDS_SPEEDUP} seeds per arm. A fixed level both arms reach gets the same row from any longer "
           "run of the same seeds (pods_repro/analysis/levels.py)."]  # fmt: skip
    paths[1].write_text("\n".join(md) + "\n")
    return paths


# ----------------------------------------------------------------------------------------------
# the command: pods analysis levels

levels_type = command.option_type(
    command.numbers, lambda xs: min(xs) >= 0, "{text!r}: levels are numbers >= 0 in the metric's units, e.g. 0.8,0.84"
)
fractions_type = command.option_type(
    command.numbers,
    lambda xs: all(0 < x <= 1 for x in xs),
    "{text!r}: fractions of the baseline's rise lie in (0, 1] (1 = its peak), e.g. 0.5,0.9,1",
)


def add_arguments(p) -> None:
    p.add_argument("--curves", required=True, help=command.CURVES_HELP)
    p.add_argument("--out-dir", required=True, help="where levels.csv and levels.md are written")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--levels",
        type=levels_type,
        help="comma-separated levels in the metric's units, e.g. 0.8,0.84 (compare budgets); accuracies in [0, 1]",
    )
    which.add_argument(
        "--fractions",
        type=fractions_type,
        default=DEFAULT_FRACTIONS,
        help="comma-separated fractions in (0, 1] of the baseline's rise from start to peak "
        f"(default {','.join(map(str, DEFAULT_FRACTIONS))})",
    )
    p.add_argument("--setting", nargs="+", help="only these settings (letters)")
    p.add_argument("--metric", help=command.METRIC_HELP)


def run(args) -> int:
    if args.levels and (args.metric is None or args.metric in FRACTION_METRICS):
        above = [x for x in args.levels if x > 1]
        if above:
            raise command.UsageError(
                f"--levels {above[0]:g}: accuracy levels are fractions in [0, 1], e.g. 0.8,0.84 "
                "(a level in tokens needs --metric completion_len_mean)"
            )
    out = command.check_out_dir(args.out_dir)
    curves = command.read_until(args)
    command.check_settings(args.setting, curves, source=args.curves)
    levels = level_table(curves, args.levels, args.fractions, args.metric, args.setting, args.n_boot, args.boot_seed)
    return command.report(out, "levels", write_level_table(levels, out / "levels"))
