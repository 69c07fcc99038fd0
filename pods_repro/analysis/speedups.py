"""Time-to-peak, the seed bootstrap, the speed-up table (Table 3) and its comparisons.

This module owns the speed-up statistics on tidy curves (pods_repro.analysis.tidy; mean curves:
pods_repro.analysis.curves; the baseline's plateau columns: pods_repro.analysis.plateau; the paper hardware's
seconds: pods_repro.analysis.paper_clock): time-to-peak and the four speed-ups with their intervals over
seeds, seconds per step, which arms a setting compares (`Comparison`: the run sheet's roles, or the
paper sheet for the released logs), the CSV / Markdown / LaTeX tables (`write_table`) and the
`time-to-peak` command.

Time-to-peak (arXiv 2504.13818 App. A.4; docs/paper.md#time-to-peak): on the mean-over-seeds curve at the
evaluation grid, t = 0 excluded, T = threshold x max(baseline curve); the speed-up is t_base / t_pods, the
first grid times at which each mean curve is >= T; "never" where PODS does not reach T. Beside it, to the
same target: (i) optimizer steps, (ii) training seconds on this machine, (iii) training seconds on the
paper's hardware for (i)'s steps. Intervals, censoring and the departures from the authors' scripts:
docs/design.md#intervals-over-seeds.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pods_repro import registry
from pods_repro.analysis import command
from pods_repro.analysis.curves import (
    ArmMatrices,
    arm_matrices,
    as_series,
    bootstrap_means,
    first_index,
    first_time,
    fmt_cell,
    mean_curve,
    primary_dataset,
    selector_label,
    value_at,
)
from pods_repro.analysis.intervals import MIN_SEEDS_SPEEDUP, conditional_ends, expanded_ends, expanded_mc_error
from pods_repro.analysis.paper_clock import PaperClock, paper_clock, paper_seconds_per_step
from pods_repro.analysis.plateau import (
    PLATEAU_SHARE,
    TREND_SHARE,
    baseline_late_gain,
    baseline_plateau,
    baseline_plateau_share,
    baseline_trend,
    points_text,
)
from pods_repro.analysis.tidy import (
    CONFIG_KEYS,
    DEFAULT_THRESHOLD,
    PAPER_SHEET,
    AnalysisInputError,
    arm_label,
    paper_defaults,
    read_curves,
    read_steps,
    select,
)

# The expanded interval reads tails of 0.1% at 5 seeds per arm: 4 resamples there. So its bounds carry a
# Monte-Carlo error (`ci_mc` columns: about 0.03-0.09 on the released logs' per-step speed-ups, a whole grid
# ratio where an eval-grid bound sits between two); 4x the resamples only halves it, so it is stated, not hidden.
DEFAULT_N_BOOT = 4000

# ----------------------------------------------------------------------------------------------
# time-to-peak and the bootstrap


def time_to_peak(baseline_curve, pods_curve, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """Time-to-peak (arXiv 2504.13818 App. A.4): speed-up of PODS in reaching `threshold` x the baseline's peak mean accuracy.

    Curves: a Series of mean values indexed by time_s, or a `mean_curve` frame (time_s, mean).
    Returns peak, t_peak_s, target, t_baseline_s, t_pods_s, speedup, pods_reached. If PODS never
    reaches the target, t_pods_s = inf and speedup = NaN (no number: the table says "never" and the
    bootstrap reports how often); an empty baseline curve is a ValueError.
    """
    base, pods = as_series(baseline_curve), as_series(pods_curve)
    if base.empty:
        raise ValueError(
            "baseline curve has no points after t = 0: nothing to take a peak of; "
            "check that the baseline runs evaluated at least once after training began"
        )
    peak = float(base.max())
    target = threshold * peak
    t_base = float(first_time(base.index.to_numpy(float), base.to_numpy()[None], np.array([target]))[0])
    if pods.empty:
        t_pods = math.inf
    else:
        t_pods = float(first_time(pods.index.to_numpy(float), pods.to_numpy()[None], np.array([target]))[0])
    return {
        "peak": peak,
        "t_peak_s": float(base.idxmax()),
        "target": target,
        "t_baseline_s": t_base,
        "t_pods_s": t_pods,
        "speedup": t_base / t_pods if math.isfinite(t_pods) else math.nan,
        "pods_reached": math.isfinite(t_pods),
    }


def _sps(run_time_B_S: np.ndarray, run_steps_B_S: np.ndarray) -> np.ndarray:
    """Seconds per step = mean(training seconds) / mean(steps) over runs (arXiv 2504.13818 §4 footnote)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # no steps.csv: NaN, not a warning per resample
        return np.nanmean(run_time_B_S, axis=-1) / np.nanmean(run_steps_B_S, axis=-1)


def _censored(num_B: np.ndarray, den_B: np.ndarray, never_B: np.ndarray) -> np.ndarray:
    """num / den, and 0 where PODS never reached the target: such a resample counts, below every reached
    ratio (the speed-up is at most what the budget shows)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(never_B, 0.0, num_B / den_B)


def _speedups(
    base: ArmMatrices, pods: ArmMatrices, idx_base_B_S, idx_pods_B_S, threshold, clock: PaperClock | None = None
) -> dict:
    """The speed-ups of each resample of seeds (rows of the idx arrays): the eval-grid time ratio, (i) steps,
    (ii) training seconds here, (iii) training seconds on the paper's hardware, all to the same target."""
    base_B_T, pods_B_T = (
        bootstrap_means(base.values_S_T, idx_base_B_S),
        bootstrap_means(pods.values_S_T, idx_pods_B_S),
    )
    target_B = threshold * np.nanmax(base_B_T, axis=1)
    first_base_B, first_pods_B = first_index(base_B_T, target_B), first_index(pods_B_T, target_B)
    never_B = first_pods_B < 0
    t_base_B, t_pods_B = (
        value_at(base.times_T[None].repeat(len(target_B), 0), first_base_B),
        value_at(pods.times_T[None].repeat(len(target_B), 0), first_pods_B),
    )
    steps_base_B = value_at(bootstrap_means(base.steps_S_T, idx_base_B_S), first_base_B)
    steps_pods_B = value_at(bootstrap_means(pods.steps_S_T, idx_pods_B_S), first_pods_B)
    elapsed_base_B = value_at(bootstrap_means(base.elapsed_S_T, idx_base_B_S), first_base_B)
    elapsed_pods_B = value_at(bootstrap_means(pods.elapsed_S_T, idx_pods_B_S), first_pods_B)
    clock = clock or PaperClock((), (), (), (), "")
    paper_base_B, paper_pods_B = clock.seconds(steps_base_B, steps_pods_B)
    return {
        "speedup": _censored(t_base_B, t_pods_B, never_B),
        "speedup_steps": _censored(steps_base_B, steps_pods_B, never_B),
        "speedup_wall": _censored(elapsed_base_B, elapsed_pods_B, never_B),
        "speedup_paper_hw": _censored(paper_base_B, paper_pods_B, never_B),
        "never": never_B,
        "steps_baseline": steps_base_B,
        "steps_pods": steps_pods_B,
        "elapsed_baseline_s": elapsed_base_B,
        "elapsed_pods_s": elapsed_pods_B,
        "paper_elapsed_baseline_s": paper_base_B,
        "paper_elapsed_pods_s": paper_pods_B,
        "sps_baseline": _sps(base.run_time_S[idx_base_B_S], base.run_steps_S[idx_base_B_S]),
        "sps_pods": _sps(pods.run_time_S[idx_pods_B_S], pods.run_steps_S[idx_pods_B_S]),
    }


SPEEDUPS = ("speedup", "speedup_steps", "speedup_wall", "speedup_paper_hw")


def _speedup_interval(samples_B: np.ndarray, n_seeds: int, ci: float) -> tuple[float, float, float, float, float]:
    """(low, high, cond_low, cond_high, mc): the expanded percentile interval over every resample (a resample in
    which PODS never reached the target is a 0), and over the resamples in which it did (conditional), and the
    Monte-Carlo error of low and high (`expanded_mc_error`: how far another bootstrap seed may move them);
    NaN below MIN_SEEDS_SPEEDUP seeds per arm, where no interval held its coverage in simulation."""
    if n_seeds < MIN_SEEDS_SPEEDUP or samples_B.size == 0 or np.isnan(samples_B).all():
        return math.nan, math.nan, math.nan, math.nan, math.nan  # too few seeds, or no steps / clock
    low, high = expanded_ends(samples_B[None], ci, n_seeds)
    cond_low, cond_high = conditional_ends("expanded", samples_B[None], ci, n_seeds)
    mc = expanded_mc_error(samples_B[None], ci, n_seeds)
    return float(low[0]), float(high[0]), float(cond_low[0]), float(cond_high[0]), float(mc[0])


def bootstrap_speedup(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    ci: float = 0.95,
    baseline_steps: pd.DataFrame | None = None,
    pods_steps: pd.DataFrame | None = None,
    clock: PaperClock | None = None,
) -> dict:
    """Bootstrap of the speed-ups over seeds, each arm's seeds resampled on their own.

    Inputs: tidy rows (seed, grid, time_s, step, value) of one metric and dataset per arm, optionally each
    arm's per-run rows of steps.csv (for the seconds per step shown beside the ratios) and the paper
    hardware's clock (`paper_clock`). Each resample recomputes both mean curves, the baseline's peak and
    target, and the eval-grid time ratio, (i) the steps ratio, (ii) the ratio of training seconds at the
    crossing here and (iii) on the paper's hardware. A resample in which PODS never reaches the target
    counts as a speed-up of 0 (`p_never` is their share). Intervals: the expanded percentile
    (pods_repro.analysis.intervals: simulated coverage >= 93% from 5 seeds per arm; none below). Deterministic for
    a given `seed`. Returns ci_low, ci_high (the eval-grid ratio), ci_mc (their Monte-Carlo error), samples,
    p_never, and for (i)-(iii) {name}_ci_low/high, {name}_ci_mc and {name}_cond_low/high (over the resamples in
    which PODS reached the target).
    """
    base, pods = arm_matrices(baseline_runs, baseline_steps), arm_matrices(pods_runs, pods_steps)
    names = SPEEDUPS[1:]
    nan_out = {"ci_low": math.nan, "ci_high": math.nan, "samples": np.array([]), "p_never": math.nan}
    nan_out |= {f"{n}_{k}_{e}": math.nan for n in names for k in ("ci", "cond") for e in ("low", "high")}
    nan_out |= {"ci_mc": math.nan} | {f"{n}_ci_mc": math.nan for n in names}
    if base.values_S_T.size == 0 or pods.values_S_T.size == 0:
        return nan_out
    rng = np.random.default_rng(seed)
    idx_base = rng.integers(0, len(base.seeds), (n_boot, len(base.seeds)))
    idx_pods = rng.integers(0, len(pods.seeds), (n_boot, len(pods.seeds)))
    res = _speedups(base, pods, idx_base, idx_pods, threshold, clock)
    n_seeds = min(len(base.seeds), len(pods.seeds))
    lo, hi, _, _, mc = _speedup_interval(res["speedup"], n_seeds, ci)
    out = {"ci_low": lo, "ci_high": hi, "ci_mc": mc, "samples": res["speedup"], "p_never": float(res["never"].mean())}
    for name in names:
        ends = _speedup_interval(res[name], n_seeds, ci)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"], out[f"{name}_cond_low"], out[f"{name}_cond_high"] = ends[:4]
        out[f"{name}_ci_mc"] = ends[4]
    return out


def point_speedups(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    threshold: float = DEFAULT_THRESHOLD,
    baseline_steps: pd.DataFrame | None = None,
    pods_steps: pd.DataFrame | None = None,
    clock: PaperClock | None = None,
) -> dict:
    """The point estimates of `bootstrap_speedup`'s ratios, from all seeds: steps to the target (mean
    optimizer step at the first grid point where each mean curve reaches it), training seconds there (here
    and on the paper's hardware), seconds per step per arm (mean training seconds / mean steps over runs),
    and the speed-ups (0 where PODS never reaches the target)."""
    base, pods = arm_matrices(baseline_runs, baseline_steps), arm_matrices(pods_runs, pods_steps)
    all_base = np.arange(len(base.seeds))[None]
    all_pods = np.arange(len(pods.seeds))[None]
    res = _speedups(base, pods, all_base, all_pods, threshold, clock)
    return {k: (bool(v[0]) if k == "never" else float(v[0])) for k, v in res.items()}


def seconds_per_step(steps: pd.DataFrame, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Seconds per (global) step per configuration: mean(time) / mean(steps) over runs.

    The formula of the paper's seconds per step (6 h / mean steps at 6 h, arXiv 2504.13818 §4; 1800 s /
    mean optimizer steps at 30 min for (e)/(f)). Also averages the generation/update split per step where logged.
    """
    if keys is None:
        keys = [k for k in CONFIG_KEYS if k in steps.columns]
    g = steps.groupby(list(keys), dropna=False, sort=True)
    out = g.agg(
        time_s=("time_s", "mean"),
        steps=("steps", "mean"),
        n_runs=("steps", "count"),
        gen_s_per_step=("gen_s_per_step", "mean"),
        update_s_per_step=("update_s_per_step", "mean"),
    ).reset_index()
    out["seconds_per_step"] = out["time_s"] / out["steps"]
    return out


# ----------------------------------------------------------------------------------------------
# comparisons and the table


@dataclass(frozen=True)
class Comparison:
    """One Table 3 entry: baseline vs PODS rows of `setting` on `dataset` / `metric`."""

    setting: str
    dataset: str
    metric: str
    baseline: dict = field(default_factory=dict)  # column -> value selecting the baseline runs
    pods: dict = field(default_factory=dict)
    paper: float | None = None


def main_comparison(df: pd.DataFrame, setting: str) -> tuple[dict, dict] | None:
    """Selectors for the baseline and PODS arms of a setting's Fig. 3 / Table 3 comparison: the
    runs whose sheet row has `role` baseline / pods (the `role` column). None if either is absent."""
    if "role" not in df.columns:
        return None
    sub = df[df["setting"].astype(str) == str(setting)]
    out = []
    for role in registry.ROLES:
        runs = sub[sub["role"] == role]
        if runs.empty:
            return None
        configs = runs[["arm", "n", "m", "grad_accum"]].drop_duplicates()
        if len(configs) > 1:
            raise AnalysisInputError(
                f"setting {setting}: runs of {len(configs)} configurations carry role {role!r}; "
                "the run sheet marks one row per role and setting"
            )
        arm, n, m, ga = configs.iloc[0]
        out.append({"arm": str(arm), "n": int(n), "m": int(m), "grad_accum": int(ga)})
    return out[0], out[1]


def default_comparisons(df: pd.DataFrame, metric: str | None = None) -> list[Comparison]:
    """One comparison per setting whose runs carry the roles baseline and pods (letters first).

    A setting with runs of one role but none of the other is refused (AnalysisInputError naming the
    setting and the missing arm), never dropped in silence.
    """
    out = []
    settings = sorted(df["setting"].astype(str).unique(), key=lambda s: (len(s) != 1, s))
    for s in settings:
        roles = set(df.loc[df["setting"].astype(str) == s, "role"]) if "role" in df.columns else set()
        present = [r for r in registry.ROLES if r in roles]
        if len(present) == 1:
            missing = next(r for r in registry.ROLES if r not in roles)
            raise AnalysisInputError(
                f"setting {s}: runs of the {present[0]} arm but none of the {missing} arm (run-sheet role "
                f"{missing!r}): train it, or remove the setting's `role` rows from the run sheet"
            )
        sel = main_comparison(df, s)
        if sel is None:
            continue
        out.append(
            Comparison(
                setting=s,
                dataset=primary_dataset(df, s),
                metric=metric or registry.setting_metric(s),
                baseline=sel[0],
                pods=sel[1],
                paper=registry.SETTINGS[s].paper_speedup if s in registry.SETTINGS else None,
            )
        )
    return out


def printed_speedup(x: float) -> float:
    """The ratio as the paper prints it: truncated to one decimal (28/16 = 1.75 is "1.7x")."""
    return math.floor(x * 10 + 1e-9) / 10 if math.isfinite(x) else x


def _select_steps(steps: pd.DataFrame | None, setting: str, sel: Mapping) -> pd.DataFrame | None:
    if steps is None:
        return None
    keys = {k: v for k, v in sel.items() if k in steps.columns}
    return select(steps[steps["setting"].astype(str) == str(setting)], **keys)


def speedup_table(
    df: pd.DataFrame,
    comparisons: Iterable[Comparison] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = DEFAULT_N_BOOT,
    boot_seed: int = 0,
    steps: pd.DataFrame | None = None,
    paper_steps: pd.DataFrame | None = None,
    paper_curves: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Table 3: one row per comparison. Four speed-ups to the same target, each a point estimate from the
    mean curves with its interval over seeds (`bootstrap_speedup`):

    - `speedup`: eval-grid training time to the target (the paper's definition, arXiv 2504.13818 App. A.4);
    - `speedup_steps` (i): optimizer steps to the target;
    - `speedup_wall` (ii): training seconds to the target on this machine (each arm's mean training time
      at the evaluation where its mean curve crosses): as grid-bound as (i), and load-dependent;
    - `speedup_paper_hw` (iii): the seconds the paper's hardware took for (i)'s steps (`paper_clock`: the
      released logs' training time at that step count, else their stated s/step, else the cost model's
      prediction; `paper_sps_source` says which).

    `p_pods_never`: share of resamples in which PODS never reached the target; they count (as 0) in every
    interval, and `*_cond_low/high` is the interval over the others. A comparison of a setting present in
    `df` whose baseline or PODS runs are missing is refused (AnalysisInputError); a setting absent from
    `df` altogether is skipped. Below MIN_SEEDS_SPEEDUP seeds per arm there is no interval (NaN; the
    `note` says why).
    """
    if comparisons is None:
        comparisons = default_comparisons(df)
    rows = []
    for c in comparisons:
        if not (df["setting"].astype(str) == str(c.setting)).any():
            continue
        rows.append(_table_row(df, c, threshold, n_boot, boot_seed, steps, paper_steps, paper_curves))
    return pd.DataFrame(rows)


def arm_runs(df: pd.DataFrame, c: Comparison) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The baseline and PODS runs of comparison `c`; AnalysisInputError if an arm has none."""
    sub = select(df, setting=c.setting, dataset=c.dataset, metric=c.metric)
    base_runs, pods_runs = select(sub, **c.baseline), select(sub, **c.pods)
    for which, runs, sel in (("baseline", base_runs, c.baseline), ("PODS", pods_runs, c.pods)):
        if runs.empty:
            raise AnalysisInputError(
                f"setting {c.setting}: no runs of the {which} arm ({selector_label(sel)}) on {c.dataset} / "
                f"{c.metric}: train that arm (or fix its row of the run sheet); a comparison with a "
                "missing arm has no speed-up"
            )
    return base_runs, pods_runs


def _table_row(
    df: pd.DataFrame,
    c: Comparison,
    threshold: float,
    n_boot: int,
    boot_seed: int,
    steps: pd.DataFrame | None,
    paper_steps: pd.DataFrame | None,
    paper_curves: pd.DataFrame | None = None,
) -> dict:
    """One row of `speedup_table`: comparison `c` of the runs in `df`."""
    base_runs, pods_runs = arm_runs(df, c)
    base_steps, pods_steps = _select_steps(steps, c.setting, c.baseline), _select_steps(steps, c.setting, c.pods)
    paper_sps = paper_seconds_per_step(c.setting, paper_steps)
    clock = paper_clock(c.setting, paper_curves, paper_steps)
    base_curve, pods_curve = mean_curve(base_runs), mean_curve(pods_runs)
    res = time_to_peak(base_curve, pods_curve, threshold)
    point = point_speedups(base_runs, pods_runs, threshold, base_steps, pods_steps, clock)
    n_base, n_pods = int(base_runs["seed"].nunique()), int(pods_runs["seed"].nunique())
    boot = bootstrap_speedup(
        base_runs, pods_runs, threshold, n_boot, boot_seed,
        baseline_steps=base_steps, pods_steps=pods_steps, clock=clock,
    )  # fmt: skip
    if min(n_base, n_pods) < 2:  # a resample of one seed is that seed: no share either
        boot["p_never"] = math.nan
    grid = np.diff(np.sort(base_curve["time_s"].unique()))
    plateau = (
        baseline_plateau(base_curve, res["t_peak_s"])
        | baseline_plateau_share(base_runs, n_boot, boot_seed)
        | baseline_late_gain(base_runs, n_boot, boot_seed)
        | baseline_trend(base_runs, n_boot, boot_seed)
    )
    row = {
        "setting": c.setting,
        "setting_name": base_runs["setting_name"].iloc[0],
        "baseline": selector_label(c.baseline),
        "pods": selector_label(c.pods),
        "dataset": c.dataset,
        "metric": c.metric,
        "grid_s": float(np.median(grid)) if grid.size else math.nan,
        "threshold": threshold,
        "peak_baseline": res["peak"],
        "t_peak_baseline_s": res["t_peak_s"],
        **plateau,
        "target": res["target"],
        "t_baseline_s": res["t_baseline_s"],
        "t_pods_s": res["t_pods_s"],
        "speedup": printed_speedup(res["speedup"]),
        "speedup_exact": res["speedup"],
        "ci_low": boot["ci_low"],
        "ci_high": boot["ci_high"],
        "ci_mc": boot["ci_mc"],
        "steps_baseline": point["steps_baseline"],
        "steps_pods": point["steps_pods"],
        "sps_baseline": point["sps_baseline"],
        "sps_pods": point["sps_pods"],
        "elapsed_baseline_s": point["elapsed_baseline_s"],
        "elapsed_pods_s": point["elapsed_pods_s"],
        "paper_sps_baseline": paper_sps[0],
        "paper_sps_pods": paper_sps[1],
        "paper_elapsed_baseline_s": point["paper_elapsed_baseline_s"],
        "paper_elapsed_pods_s": point["paper_elapsed_pods_s"],
        "paper_sps_source": clock.source,
    }
    return (
        row
        | _speedup_columns(point, boot)
        | {
            "p_pods_never": boot["p_never"],
            "paper_speedup": c.paper if c.paper is not None else math.nan,
            "n_seeds_baseline": n_base,
            "n_seeds_pods": n_pods,
            "n_boot": n_boot,
            "interval": "expanded percentile bootstrap over seeds, never-reached resamples counted as 0",
            "note": _note(res["pods_reached"], min(n_base, n_pods)),
        }
    )


def _speedup_columns(point: dict, boot: dict) -> dict:
    """Speed-ups (i)-(iii) of a table row: the point, its interval, the conditional one and their MC error."""
    row = {}
    for name in SPEEDUPS[1:]:
        row[name] = point[name]
        for kind in ("ci", "cond"):
            for end in ("low", "high"):
                row[f"{name}_{kind}_{end}"] = boot[f"{name}_{kind}_{end}"]
        row[f"{name}_ci_mc"] = boot[f"{name}_ci_mc"]
    return row


def _few_seeds(n: int) -> str:
    return f"no interval: {n} seed(s) per arm, below the {MIN_SEEDS_SPEEDUP} at which its 95% coverage holds"


def _note(pods_reached: bool, n_seeds: int) -> str:
    note = [] if pods_reached else ["PODS never reached the target"]
    return "; ".join(note + ([_few_seeds(n_seeds)] if n_seeds < MIN_SEEDS_SPEEDUP else []))


# fmt: off
_SHOWN = [  # (column, header, decimals) of the Markdown / LaTeX tables
    ("setting", "setting", 0), ("baseline", "baseline", 0), ("pods", "PODS", 0), ("metric", "metric", 0),
    ("grid_s", "grid (s)", 0), ("peak_baseline", "baseline peak", 4), ("t_baseline_s", "t baseline (s)", 0),
    ("t_pods_s", "t PODS (s)", 0), ("speedup", "speed-up", 1), ("speedup_exact", "exact", 2),
    ("ci_low", "95% CI low", 2), ("ci_high", "95% CI high", 2), ("paper_speedup", "paper", 1),
]


# The three speed-ups: (header, point column, CI prefix or None, decimals).
_THREE = [
    ("steps to target (base / PODS)", ("steps_baseline", "steps_pods"), None, 0),
    ("(i) steps speed-up [95% CI]", "speedup_steps", "speedup_steps", 2),
    ("s/step here (base / PODS)", ("sps_baseline", "sps_pods"), None, 2),
    ("(ii) training time here [95% CI]", "speedup_wall", "speedup_wall", 2),
    ("s/step paper hw (base / PODS)", ("paper_sps_baseline", "paper_sps_pods"), None, 2),
    ("(iii) paper-hw prediction [95% CI]", "speedup_paper_hw", "speedup_paper_hw", 2),
]
# fmt: on


def _n_seeds(row) -> int:
    return int(min(row.get("n_seeds_baseline", MIN_SEEDS_SPEEDUP), row.get("n_seeds_pods", MIN_SEEDS_SPEEDUP)))


def _no_interval(row) -> str | None:
    """'n/a (3 seeds)' where an arm has fewer seeds than an interval needs; else None."""
    n = _n_seeds(row)
    return f"n/a ({n} seed{'s' if n != 1 else ''})" if n < MIN_SEEDS_SPEEDUP else None


def _ci_cell(row, col: str, digits: int) -> str:
    """A CI bound; "n/a (3 seeds)" where an arm has too few seeds for an interval."""
    value = row.get(col, math.nan)
    if isinstance(value, float) and math.isnan(value) and _no_interval(row):
        return _no_interval(row)
    return fmt_cell(value, digits)


def _three_cells(row) -> list[str]:
    cells = [str(row["setting"])]
    for _, point, ci, digits in _THREE:
        if isinstance(point, tuple):
            cells.append(" / ".join(fmt_cell(float(row.get(c, math.nan)), digits) for c in point))
            continue
        text = "never" if not row.get("t_pods_s", 0) < math.inf else fmt_cell(float(row.get(point, math.nan)), digits)
        if _no_interval(row):
            text += f" [{_no_interval(row)}]"
        else:
            lo, hi = (fmt_cell(float(row.get(f"{ci}_ci_{e}", math.nan)), digits) for e in ("low", "high"))
            text += f" [{lo}, {hi}]"
        cells.append(text)
    never = float(row.get("p_pods_never", math.nan))
    cells.append("-" if math.isnan(never) else f"{never:.0%}")
    cells.append(_plateau_cell(row))
    cells.append(fmt_cell(float(row.get("paper_speedup", math.nan)), 1))
    return cells


def _plateau_cell(row) -> str:
    """'425 of 600 (0.71; 2nd-half trend +0.3 [-1.1, +1.6] pts)': where the baseline's mean curve peaks,
    of its last evaluation, and the rise of its second half (`baseline_trend`); where the peak is in
    the last 20%, also how much it beats the best evaluation before (`baseline_late_gain`)."""
    share = float(row.get("peak_share_baseline", math.nan))
    if math.isnan(share):
        return "-"
    at, last = (fmt_cell(float(row[c]), 0) for c in ("peak_at_baseline", "last_at_baseline"))
    parts = [f"{share:.2f}" if row.get("plateau_baseline") else f"{share:.2f}, no plateau"]
    p_plateau = float(row.get("p_plateau_baseline", math.nan))
    if not math.isnan(p_plateau):
        parts[0] += f", {p_plateau:.0%} of resamples peak before {PLATEAU_SHARE:.0%}"
    if not row.get("plateau_baseline") and not math.isnan(float(row.get("late_gain_baseline", math.nan))):
        parts.append(f"late gain {points_text(row, 'late_gain_baseline')}")
    if not math.isnan(float(row.get("trend_baseline", math.nan))):
        parts.append(f"2nd-half trend {points_text(row, 'trend_baseline')}")
    return f"{at} of {last} ({'; '.join(parts)})"


def write_table(df: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Write `stem`.csv (all columns), `stem`.md and `stem`.tex (the main columns; the Markdown also
    the three speed-ups with their inputs)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".csv"), stem.with_suffix(".md"), stem.with_suffix(".tex")]
    df.to_csv(paths[0], index=False)
    cols = [(c, h, d) for c, h, d in _SHOWN if c in df.columns]
    cells = [
        [_ci_cell(r, c, d) if c in ("ci_low", "ci_high") else fmt_cell(r[c], d) for c, _, d in cols]
        for _, r in df.iterrows()
    ]
    head = [h for _, h, _ in cols]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(row) + " |" for row in cells]
    thr = df["threshold"].iloc[0] if len(df) else DEFAULT_THRESHOLD
    md += ["", f"Speed-up: time for the baseline / time for PODS to first reach {thr:g} x the baseline's "
           "peak mean curve on the evaluation grid (t = 0 excluded), truncated to one decimal as the "
           "paper prints it; CI: 95% expanded percentile bootstrap over seeds within each arm, a resample "
           "in which PODS never reaches the target counting as 0 (no interval below "
           f"{MIN_SEEDS_SPEEDUP} seeds per arm)."]  # fmt: skip
    if len(df) and "speedup_steps" in df.columns:
        head3 = ["setting"] + [h for h, *_ in _THREE] + ["PODS never (share of resamples)", "baseline peak at", "paper"]
        md += ["", "### Three speed-ups", "", "| " + " | ".join(head3) + " |", "|" + "---|" * len(head3)]
        md += ["| " + " | ".join(_three_cells(r)) + " |" for _, r in df.iterrows()]
        md += ["", "(i) optimizer steps for the baseline / for PODS to first reach the same target (steps: the mean "
               "over seeds of the step at that evaluation); (ii) the training seconds each arm's runs had taken "
               "here at that evaluation (mean over seeds; as grid-bound as (i), and it follows the machine's "
               "load); (iii) the training seconds the paper's hardware took for (i)'s steps (the released "
               "logs' elapsed time at that step count where they have it; sources below), a prediction. "
               "s/step: mean training seconds / mean steps over runs. Intervals: 95% expanded percentile "
               "bootstrap over seeds, each arm resampled on its own; a resample in which PODS never reaches "
               "the target counts as 0, and 'PODS never' is their share; below "
               f"{MIN_SEEDS_SPEEDUP} seeds per arm no interval held 95% coverage in simulation, so none is "
               "printed (n/a). 'baseline peak at': the step (seconds without steps) of the baseline mean "
               "curve's peak, of its last evaluation; 'no plateau' "
               f"where the peak lies in the last {1 - PLATEAU_SHARE:.0%} of the run (the curve may still rise); "
               f"'% of resamples peak before {PLATEAU_SHARE:.0%}': the share of bootstrap resamples of the "
               "baseline's seeds whose mean curve peaks before that mark (how sure the plateau verdict is); "
               "'late gain': then, how far the best mean evaluation of that part is above the best before it, "
               "in points with its 95% jackknife t-interval over the baseline's seeds; '2nd-half trend': the "
               f"rise of a least-squares line through the baseline's mean curve after {TREND_SHARE:.0%} of the "
               "run, over that part, in points with its 95% t-interval over seeds (above 0: still "
               "rising; including 0: level within the noise).",
               ""]  # fmt: skip
        md += [f"- ({r['setting']}) paper s/step: {r['paper_sps_source']}" for _, r in df.iterrows()]
    paths[1].write_text("\n".join(md) + "\n")

    def tex(s: str) -> str:
        return re.sub(r"([_%&#$])", r"\\\1", s)

    lines = [
        r"\begin{tabular}{" + "l" * 4 + "r" * (len(cols) - 4) + "}",
        r"\toprule",
        " & ".join(tex(h) for h in head) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(tex(c) for c in row) + r" \\" for row in cells]
    lines += [r"\bottomrule", r"\end{tabular}"]
    paths[2].write_text("\n".join(lines) + "\n")
    return paths


def _arm_selector(rec: registry.Setting, arm: registry.Arm) -> dict:
    """{"arm", "n", "m", "grad_accum"} of a sheet row at paper scale (YAML values where the row
    does not override them)."""
    base = paper_defaults(rec)
    ga = int(arm.extra_value("optim.grad_accum") or base["ga"])
    normalize = arm.extra_value("rollout.normalize") or base["norm"]
    return {"arm": arm_label(arm.n, arm.m, arm.rule, normalize, ga), "n": arm.n, "m": arm.m, "grad_accum": ga}


def released_comparisons(sheet: str | Path = PAPER_SHEET) -> list[Comparison]:
    """Table 3 for every setting with released logs: the `role` rows of the paper sheet, the
    dataset, metric and paper speed-up of the setting's record (Table 3)."""
    try:
        main = registry.main_arms(registry.read_sheet(sheet))
    except registry.SheetError as err:
        raise AnalysisInputError(str(err)) from None
    out = []
    for letter, rec in registry.SETTINGS.items():
        if rec.released is None or letter not in main:
            continue
        base, pods = (_arm_selector(rec, main[letter][role]) for role in registry.ROLES)
        out.append(Comparison(letter, rec.dataset, rec.metric, base, pods, rec.paper_speedup))
    return out


# ----------------------------------------------------------------------------------------------
# the command: pods analysis time-to-peak


def add_arguments(p) -> None:
    p.add_argument("--curves", required=True, help=command.CURVES_HELP)
    p.add_argument("--out-dir", required=True, help="where time_to_peak.* is written")
    p.add_argument("--metric", help=command.METRIC_HELP)
    p.add_argument("--steps", help="steps.csv of the same runs: this machine's seconds per step, speed-up (ii)")
    p.add_argument(
        "--paper-steps",
        help="steps.csv of `released` (the authors' logs): paper-hardware seconds per step, speed-up (iii); "
        "settings without released logs use the cost model (pods_repro/analysis/cost_model.py)",
    )
    p.add_argument(
        "--paper-curves",
        help="curves.csv of `released`: the paper hardware's training time at each step count, for speed-up "
        "(iii) (else --paper-steps' mean seconds per step)",
    )


def run(args) -> int:
    out = command.check_out_dir(args.out_dir)
    curves = command.read_until(args)
    steps = read_steps(args.steps)
    if args.steps and steps is None:
        raise AnalysisInputError(f"steps table {args.steps} is missing or empty: `collect` writes it")
    paper_steps = read_steps(args.paper_steps)
    if args.paper_steps and paper_steps is None:
        raise AnalysisInputError(
            f"{args.paper_steps} is missing or empty: `python -m pods_repro.analysis released` writes it"
        )
    paper_curves = read_curves(args.paper_curves) if args.paper_curves else None
    table = speedup_table(
        curves, default_comparisons(curves, args.metric), args.threshold, args.n_boot, args.boot_seed,
        steps, paper_steps, paper_curves,
    )  # fmt: skip
    if table.empty:
        raise AnalysisInputError(
            f"{args.curves} has no setting with both a baseline and a PODS run (the run sheet's "
            "`role` column, passed to `collect --sheet`): train both arms first"
        )
    written = write_table(table, out / "time_to_peak")
    print_table(table)
    return command.wrote(written)


def print_table(table: pd.DataFrame) -> None:
    """The main columns of a time-to-peak table, on stdout."""
    cols = ["setting", "metric", "t_baseline_s", "t_pods_s", "speedup", "speedup_exact", "ci_low", "ci_high"]
    cols += ["speedup_steps", "speedup_wall", "speedup_paper_hw", "p_pods_never", "paper_speedup"]
    print(table[cols].to_string(index=False))
