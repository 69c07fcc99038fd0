"""Time-to-peak, the seed bootstrap, the speed-up table (Table 3) and its comparisons.

This module owns the statistics on tidy curves (pods.tidy): the mean curve over seeds with its SEM
band, time-to-peak and the four speed-ups with their bootstrap intervals, seconds per step, which
arms a setting compares (`Comparison`: the run sheet's roles, or the paper sheet for the released
logs), the paper hardware's seconds per step (released logs, else `cost_model()`), and the
CSV / Markdown / LaTeX tables (`write_table`).

Time-to-peak (PAPER.md §5, App. A.4 of the paper): on the mean-over-seeds curve at the evaluation
grid, with t = 0 excluded, T = threshold x max(baseline curve); the speed-up is t_base / t_pods,
the first grid times at which each mean curve is >= T. Hence it is quantized by the grid.
If PODS never reaches T within its budget, t_pods = inf and the speed-up has no value (NaN, "never"
in the tables, `note` says so); the bootstrap reports the share of resamples in which PODS never
reached T (`p_pods_never`) and takes its intervals over the others. The baseline always reaches its
own target unless its curve is empty, which is an error. Beside this eval-grid speed-up the table
has three more to the same target (issue 10): (i) optimizer steps (curves' `step`), (ii) (i) x this
machine's seconds per step of each arm (steps.csv), (iii) (i) x the paper hardware's seconds per
step (the released logs of the same setting's arms, else their s/step as PAPER.md states them, else a
cost-model prediction; its source is a column). An arm with one seed has no interval ("n/a (1 seed)").
A comparison whose baseline or PODS arm has no runs is refused, naming the setting and the arm.

Departures from the authors' scripts: none in the numbers. The printed speed-up is the exact ratio
truncated to one decimal, which is how the paper prints 28/16 = 1.75 as "1.7x" (`speedup`); the
exact ratio is `speedup_exact`.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pods import registry
from pods.tidy import (
    CONFIG_KEYS,
    DEFAULT_THRESHOLD,
    PAPER_SHEET,
    AnalysisInputError,
    _paper_defaults,
    arm_label,
    select,
)

# ----------------------------------------------------------------------------------------------
# time-to-peak and the bootstrap


def mean_curve(df: pd.DataFrame, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean over seeds at each grid point, with SEM and the 1.96 x SEM band used in the paper.

    `keys`: columns that identify one curve (default: CONFIG_KEYS + dataset + metric present in df).
    Returns keys + grid, time_s, step (mean over seeds, where df has it), mean, sem, lo, hi, n_seeds. SEM uses ddof = 1 over the seeds that
    have that grid point; with a single seed SEM is 0 (the authors' plot.py convention).
    """
    if keys is None:
        keys = [k for k in (*CONFIG_KEYS, "dataset", "metric") if k in df.columns]
    keys = list(keys)
    g = df.groupby([*keys, "grid"], dropna=False, sort=True)
    extra = {"step": ("step", "mean")} if "step" in df.columns else {}
    out = g.agg(
        time_s=("time_s", "mean"),
        **extra,
        mean=("value", "mean"),
        std=("value", "std"),
        n_seeds=("value", "count"),
    ).reset_index()
    out["sem"] = (out["std"] / np.sqrt(out["n_seeds"])).where(out["n_seeds"] > 1, 0.0)
    out["lo"] = out["mean"] - 1.96 * out["sem"]
    out["hi"] = out["mean"] + 1.96 * out["sem"]
    return out.drop(columns="std")


def _as_series(curve) -> pd.Series:
    if isinstance(curve, pd.DataFrame):
        curve = curve.set_index("time_s")["mean"]
    s = pd.Series(curve, dtype=float).dropna().sort_index()
    return s[s.index > 0]  # t = 0 is the base model: excluded (compute_pods_speedup_99)


def _first_index(values_B_T: np.ndarray, target_B: np.ndarray) -> np.ndarray:
    """Index of the first grid point at which each row is >= its target; -1 where it never is."""
    hit_B_T = values_B_T >= target_B[:, None]  # NaN never counts
    return np.where(hit_B_T.any(axis=1), hit_B_T.argmax(axis=1), -1)


def _first_reach(times_T: np.ndarray, values_B_T: np.ndarray, target_B: np.ndarray) -> np.ndarray:
    """First time at which each row is >= its target; inf where it never is (NaN never counts)."""
    first_B = _first_index(values_B_T, target_B)
    return np.where(first_B >= 0, times_T[np.maximum(first_B, 0)], np.inf)


def time_to_peak(baseline_curve, pods_curve, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """PAPER.md §5: speed-up of PODS in reaching `threshold` x the baseline's peak mean accuracy.

    Curves: a Series of mean values indexed by time_s, or a `mean_curve` frame (time_s, mean).
    Returns peak, t_peak_s, target, t_baseline_s, t_pods_s, speedup, pods_reached. If PODS never
    reaches the target, t_pods_s = inf and speedup = NaN (no number: the table says "never" and the
    bootstrap reports how often); an empty baseline curve is a ValueError.
    """
    base, pods = _as_series(baseline_curve), _as_series(pods_curve)
    if base.empty:
        raise ValueError(
            "baseline curve has no points after t = 0: nothing to take a peak of; "
            "check that the baseline runs evaluated at least once after training began"
        )
    peak = float(base.max())
    target = threshold * peak
    t_base = float(_first_reach(base.index.to_numpy(float), base.to_numpy()[None], np.array([target]))[0])
    if pods.empty:
        t_pods = math.inf
    else:
        t_pods = float(_first_reach(pods.index.to_numpy(float), pods.to_numpy()[None], np.array([target]))[0])
    return {
        "peak": peak,
        "t_peak_s": float(base.idxmax()),
        "target": target,
        "t_baseline_s": t_base,
        "t_pods_s": t_pods,
        "speedup": t_base / t_pods if math.isfinite(t_pods) else math.nan,
        "pods_reached": math.isfinite(t_pods),
    }


@dataclass(frozen=True)
class _Arm:
    """One arm's runs as matrices over (seed S, grid point T > 0): values, optimizer steps and each
    seed's training seconds and steps at the end of the run (for seconds per step)."""

    seeds: np.ndarray
    times_T: np.ndarray
    values_S_T: np.ndarray
    steps_S_T: np.ndarray
    run_time_S: np.ndarray
    run_steps_S: np.ndarray


def _arm(runs: pd.DataFrame, run_steps: pd.DataFrame | None = None) -> _Arm:
    runs = runs[runs["time_s"] > 0]
    wide = runs.pivot_table(index="seed", columns="grid", values="value", aggfunc="first")
    if "step" in runs.columns:
        steps = runs.pivot_table(index="seed", columns="grid", values="step", aggfunc="first")
        steps = steps.reindex(index=wide.index, columns=wide.columns)
    else:  # tidy rows without optimizer steps: no steps-based speed-ups
        steps = pd.DataFrame(np.nan, index=wide.index, columns=wide.columns)
    times = runs.groupby("grid")["time_s"].mean().reindex(wide.columns)
    run_time = run_steps_n = np.full(len(wide), np.nan)
    if run_steps is not None and len(run_steps):
        per_seed = run_steps.groupby("seed")[["time_s", "steps"]].mean().reindex(wide.index)
        run_time, run_steps_n = per_seed["time_s"].to_numpy(float), per_seed["steps"].to_numpy(float)
    return _Arm(
        wide.index.to_numpy(), times.to_numpy(float), wide.to_numpy(float), steps.to_numpy(float), run_time, run_steps_n
    )


def _seed_matrix(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(times_T, values_S_T) for one arm's tidy rows of a single metric/dataset; NaN = missing."""
    arm = _arm(runs)
    return arm.times_T, arm.values_S_T


def _bootstrap_means(values_S_T: np.ndarray, idx_B_S: np.ndarray) -> np.ndarray:
    pick_B_S_T = values_S_T[idx_B_S]
    count_B_T = np.sum(~np.isnan(pick_B_S_T), axis=1)
    total_B_T = np.nansum(pick_B_S_T, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count_B_T > 0, total_B_T / count_B_T, np.nan)


def _at(matrix_B_T: np.ndarray, first_B: np.ndarray) -> np.ndarray:
    """matrix[b, first[b]], NaN where first[b] = -1 (never reached)."""
    picked = matrix_B_T[np.arange(len(first_B)), np.maximum(first_B, 0)]
    return np.where(first_B >= 0, picked, np.nan)


def _sps(run_time_B_S: np.ndarray, run_steps_B_S: np.ndarray) -> np.ndarray:
    """Seconds per step = mean(training seconds) / mean(steps) over runs (PAPER.md §4 footnote)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # no steps.csv: NaN, not a warning per resample
        return np.nanmean(run_time_B_S, axis=-1) / np.nanmean(run_steps_B_S, axis=-1)


def _speedups(base: _Arm, pods: _Arm, idx_base_B_S, idx_pods_B_S, threshold, paper_sps=(math.nan, math.nan)) -> dict:
    """The three speed-ups (and the eval-grid one) of each resample of seeds (rows of the idx arrays)."""
    base_B_T, pods_B_T = (
        _bootstrap_means(base.values_S_T, idx_base_B_S),
        _bootstrap_means(pods.values_S_T, idx_pods_B_S),
    )
    target_B = threshold * np.nanmax(base_B_T, axis=1)
    first_base_B, first_pods_B = _first_index(base_B_T, target_B), _first_index(pods_B_T, target_B)
    never_B = first_pods_B < 0
    t_base_B, t_pods_B = (
        _at(base.times_T[None].repeat(len(target_B), 0), first_base_B),
        _at(pods.times_T[None].repeat(len(target_B), 0), first_pods_B),
    )
    steps_base_B = _at(_bootstrap_means(base.steps_S_T, idx_base_B_S), first_base_B)
    steps_pods_B = _at(_bootstrap_means(pods.steps_S_T, idx_pods_B_S), first_pods_B)
    sps_base_B = _sps(base.run_time_S[idx_base_B_S], base.run_steps_S[idx_base_B_S])
    sps_pods_B = _sps(pods.run_time_S[idx_pods_B_S], pods.run_steps_S[idx_pods_B_S])
    with np.errstate(invalid="ignore", divide="ignore"):
        steps_ratio_B = steps_base_B / steps_pods_B
        return {
            "speedup": t_base_B / t_pods_B,
            "speedup_steps": steps_ratio_B,
            "speedup_wall": steps_ratio_B * sps_base_B / sps_pods_B,
            "speedup_paper_hw": steps_ratio_B * paper_sps[0] / paper_sps[1],
            "never": never_B,
            "steps_baseline": steps_base_B,
            "steps_pods": steps_pods_B,
            "sps_baseline": sps_base_B,
            "sps_pods": sps_pods_B,
        }


def _interval(samples_B: np.ndarray, ci: float) -> tuple[float, float]:
    """Percentile interval over the resamples with a number (PODS reached the target)."""
    finite = samples_B[np.isfinite(samples_B)]
    if finite.size == 0:
        return math.nan, math.nan
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return float(lo), float(hi)


def bootstrap_speedup(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    baseline_steps: pd.DataFrame | None = None,
    pods_steps: pd.DataFrame | None = None,
    paper_sps: tuple[float, float] = (math.nan, math.nan),
) -> dict:
    """Percentile bootstrap of the speed-ups, resampling seeds within each arm.

    Inputs: tidy rows (seed, grid, time_s, step, value) of one metric and dataset per arm, and
    optionally each arm's per-run rows of steps.csv (time_s, steps: seconds per step) and the
    paper-hardware seconds per step (baseline, PODS). Each resample recomputes both mean curves, the
    baseline peak and target, and (i) the eval-grid time ratio `samples`, (ii) the steps-to-target
    ratio, (iii) the wall-clock ratio (steps x this machine's s/step), (iv) the paper-hardware ratio.
    A resample in which PODS never reaches the target has no ratio (NaN); `p_never` is their share
    and the intervals are over the others. Deterministic for a given `seed`.
    Returns ci_low, ci_high, samples, p_never and {name}_ci_low/high for speedup_steps,
    speedup_wall, speedup_paper_hw.
    """
    base, pods = _arm(baseline_runs, baseline_steps), _arm(pods_runs, pods_steps)
    names = ("speedup_steps", "speedup_wall", "speedup_paper_hw")
    if base.values_S_T.size == 0 or pods.values_S_T.size == 0:
        out = {"ci_low": math.nan, "ci_high": math.nan, "samples": np.array([]), "p_never": math.nan}
        return out | {f"{n}_ci_{e}": math.nan for n in names for e in ("low", "high")}
    rng = np.random.default_rng(seed)
    idx_base = rng.integers(0, len(base.seeds), (n_boot, len(base.seeds)))
    idx_pods = rng.integers(0, len(pods.seeds), (n_boot, len(pods.seeds)))
    res = _speedups(base, pods, idx_base, idx_pods, threshold, paper_sps)
    lo, hi = _interval(res["speedup"], ci)
    out = {"ci_low": lo, "ci_high": hi, "samples": res["speedup"], "p_never": float(res["never"].mean())}
    for name in names:
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = _interval(res[name], ci)
    return out


def point_speedups(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    threshold: float = DEFAULT_THRESHOLD,
    baseline_steps: pd.DataFrame | None = None,
    pods_steps: pd.DataFrame | None = None,
    paper_sps: tuple[float, float] = (math.nan, math.nan),
) -> dict:
    """The point estimates of `bootstrap_speedup`'s ratios, from all seeds: steps to the target
    (mean optimizer step at the first grid point where each mean curve reaches it), seconds per step
    per arm (mean training seconds / mean steps over runs), and the three speed-ups."""
    base, pods = _arm(baseline_runs, baseline_steps), _arm(pods_runs, pods_steps)
    all_base = np.arange(len(base.seeds))[None]
    all_pods = np.arange(len(pods.seeds))[None]
    res = _speedups(base, pods, all_base, all_pods, threshold, paper_sps)
    return {k: (bool(v[0]) if k == "never" else float(v[0])) for k, v in res.items()}


def seconds_per_step(steps: pd.DataFrame, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Seconds per (global) step per configuration: mean(time) / mean(steps) over runs.

    This is the formula behind PAPER.md §4 (6 h / mean steps) and §5 (1800 s / mean global
    steps). Also averages the generation/update split per step where logged.
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


def _label(sel: Mapping) -> str:
    parts = [str(sel.get("arm", "?"))]
    parts += [f"{k}={sel[k]}" for k in ("n", "m", "grad_accum") if k in sel]
    return " ".join(parts)


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


def primary_dataset(df: pd.DataFrame, setting: str) -> str:
    """The test set a setting is judged on (the first evaluation dataset of its config)."""
    sub = df[(df["setting"].astype(str) == str(setting)) & (df["dataset"] != "train")]
    prim = sub["primary_dataset"].dropna()
    return str(prim.mode().iloc[0]) if not prim.empty else str(sub["dataset"].mode().iloc[0])


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


@functools.cache
def cost_model():
    """The fitted generation/update cost model (`pods.bench.cost_model`, also `pods bench cost_model`)."""
    from pods.bench import cost_model as mod  # lazy: only the paper-hardware prediction needs it

    return mod


def paper_seconds_per_step(setting: str, paper_steps: pd.DataFrame | None = None) -> tuple[float, float, str]:
    """(baseline s/step, PODS s/step, source) of a setting's arms on the paper's hardware.

    First the authors' released logs (`paper_steps`: the steps.csv of `released`, whose `role`
    column marks the arms of the paper sheet); else, for (a), (e) and (f), the same logs' s/step as
    PAPER.md states them (`_stated_seconds_per_step`: the workflow with `released_logs: none`); else a
    prediction of the linear cost model
    c + g1 n + u1 m fitted to (a)'s eight released s/step values on 1 L40S (pods/bench/cost_model.py,
    `invert_paper`), at the n, m of the setting's paper arms, for single-GPU settings without
    gradient accumulation; else NaN.
    """
    if paper_steps is not None and "role" in paper_steps.columns:
        sub = paper_steps[paper_steps["setting"].astype(str) == str(setting)]
        arms = [sub[sub["role"] == role] for role in registry.ROLES]
        if all(len(a) and a["steps"].notna().any() for a in arms):
            sps = [float(a["time_s"].mean() / a["steps"].mean()) for a in arms]
            labels = [_label({"arm": a["arm"].iloc[0], "n": a["n"].iloc[0], "m": a["m"].iloc[0]}) for a in arms]
            return (
                sps[0],
                sps[1],
                f"released logs ({setting}): {labels[0]} vs {labels[1]}, {len(arms[0])}+{len(arms[1])} runs",
            )
    try:
        main = registry.main_arms(registry.read_sheet(PAPER_SHEET)).get(setting)
    except registry.SheetError:
        main = None
    stated = _stated_seconds_per_step(setting, main)
    if stated is not None:
        return stated
    if main is None or any(a.extra_value("optim.grad_accum") for a in main.values()):
        return math.nan, math.nan, "none: no released s/step and no single-GPU paper arms to predict"
    fit = next(r for r in cost_model().invert_paper() if r["setting"] == "a")
    c, g1, u1 = fit["fixed_s"], fit["g1_s"], fit["u1_s"]
    b, q = main["baseline"], main["pods"]
    sps = [c + g1 * a.n + u1 * a.m for a in (b, q)]
    source = (
        f"prediction: cost model c + g1 n + u1 m (c={c:.3g} s, g1={g1:.3g} s, u1={u1:.3g} s; fitted to (a)'s "
        f"released s/step on 1xL40S, pods/bench/cost_model.py) at n/m {b.n}/{b.m} vs {q.n}/{q.m}"
    )
    return sps[0], sps[1], source


def _stated_seconds_per_step(setting: str, main: Mapping | None) -> tuple[float, float, str] | None:
    """The released logs' s/step as PAPER.md states them (pods/bench/cost_model.py constants), no logs read.

    (a): the n/m sweep on 1 L40S at the paper arms' n/m (16/16 vs 64/16); (e)/(f): GRPO-GA vs PODS per
    global step on 8 GPUs. None for the other settings (and for (a) arms outside the sweep).
    """
    cm = cost_model()
    if setting in cm.PAPER_GLOBAL:
        v = cm.PAPER_GLOBAL[setting]
        return (
            v["ga"],
            v["pods"],
            f"stated: PAPER.md s/step of the released ({setting}) runs, {v['gpus']}, GRPO-GA vs PODS",
        )
    if setting == "a" and main is not None:
        sweep = {(n, m): t for n, m, t in cm.PAPER_A_SWEEP}
        b, q = main["baseline"], main["pods"]
        if (b.n, b.m) in sweep and (q.n, q.m) in sweep:
            return (
                sweep[b.n, b.m],
                sweep[q.n, q.m],
                f"stated: PAPER.md s/step of the released (a) runs, 1xL40S, at n/m {b.n}/{b.m} vs {q.n}/{q.m}",
            )
    return None


def _select_steps(steps: pd.DataFrame | None, setting: str, sel: Mapping) -> pd.DataFrame | None:
    if steps is None:
        return None
    keys = {k: v for k, v in sel.items() if k in steps.columns}
    return select(steps[steps["setting"].astype(str) == str(setting)], **keys)


def speedup_table(
    df: pd.DataFrame,
    comparisons: Iterable[Comparison] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = 2000,
    boot_seed: int = 0,
    steps: pd.DataFrame | None = None,
    paper_steps: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Table 3: one row per comparison. Four speed-ups, each a point estimate from the mean curves
    with a 95% percentile bootstrap interval over seeds (`bootstrap_speedup`):

    - `speedup`: eval-grid training time to the target (the paper's definition, PAPER.md §5);
    - `speedup_steps` (i): optimizer steps to the target;
    - `speedup_wall` (ii): (i) x this machine's seconds per step of each arm (`steps`: steps.csv);
    - `speedup_paper_hw` (iii): (i) x the paper hardware's seconds per step (`paper_seconds_per_step`:
      the released logs, else the cost model's prediction; `paper_sps_source` says which).

    `p_pods_never`: share of resamples in which PODS never reached the target (those have no ratio).
    A comparison of a setting present in `df` whose baseline or PODS runs are missing is refused
    (AnalysisInputError); a setting absent from `df` altogether is skipped. With one seed in an arm
    there is no interval: the CI columns are NaN and the tables print "n/a (1 seed)".
    """
    if comparisons is None:
        comparisons = default_comparisons(df)
    rows = []
    for c in comparisons:
        if not (df["setting"].astype(str) == str(c.setting)).any():
            continue
        rows.append(_table_row(df, c, threshold, n_boot, boot_seed, steps, paper_steps))
    return pd.DataFrame(rows)


def _arm_runs(df: pd.DataFrame, c: Comparison) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The baseline and PODS runs of comparison `c`; AnalysisInputError if an arm has none."""
    sub = select(df, setting=c.setting, dataset=c.dataset, metric=c.metric)
    base_runs, pods_runs = select(sub, **c.baseline), select(sub, **c.pods)
    for which, runs, sel in (("baseline", base_runs, c.baseline), ("PODS", pods_runs, c.pods)):
        if runs.empty:
            raise AnalysisInputError(
                f"setting {c.setting}: no runs of the {which} arm ({_label(sel)}) on {c.dataset} / "
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
) -> dict:
    """One row of `speedup_table`: comparison `c` of the runs in `df`."""
    base_runs, pods_runs = _arm_runs(df, c)
    base_steps, pods_steps = _select_steps(steps, c.setting, c.baseline), _select_steps(steps, c.setting, c.pods)
    paper_sps = paper_seconds_per_step(c.setting, paper_steps)
    base_curve, pods_curve = mean_curve(base_runs), mean_curve(pods_runs)
    res = time_to_peak(base_curve, pods_curve, threshold)
    point = point_speedups(base_runs, pods_runs, threshold, base_steps, pods_steps, paper_sps[:2])
    n_base, n_pods = int(base_runs["seed"].nunique()), int(pods_runs["seed"].nunique())
    boot = bootstrap_speedup(
        base_runs, pods_runs, threshold, n_boot, boot_seed,
        baseline_steps=base_steps, pods_steps=pods_steps, paper_sps=paper_sps[:2],
    )  # fmt: skip
    one_seed = min(n_base, n_pods) < 2
    if one_seed:  # a resample of one seed is that seed: no interval
        boot = {k: (math.nan if k.endswith(("_low", "_high")) else v) for k, v in boot.items()}
    grid = np.diff(np.sort(base_curve["time_s"].unique()))
    plateau = (
        baseline_plateau(base_curve, res["t_peak_s"])
        | baseline_plateau_share(base_runs, n_boot, boot_seed)
        | baseline_late_gain(base_runs, n_boot, boot_seed)
        | baseline_trend(base_runs, n_boot, boot_seed)
    )
    note = []
    if not res["pods_reached"]:
        note.append("PODS never reached the target")
    if one_seed:
        note.append("n/a (1 seed): no interval")
    return {
        "setting": c.setting,
        "setting_name": base_runs["setting_name"].iloc[0],
        "baseline": _label(c.baseline),
        "pods": _label(c.pods),
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
        "steps_baseline": point["steps_baseline"],
        "steps_pods": point["steps_pods"],
        "speedup_steps": point["speedup_steps"],
        "speedup_steps_ci_low": boot["speedup_steps_ci_low"],
        "speedup_steps_ci_high": boot["speedup_steps_ci_high"],
        "sps_baseline": point["sps_baseline"],
        "sps_pods": point["sps_pods"],
        "speedup_wall": point["speedup_wall"],
        "speedup_wall_ci_low": boot["speedup_wall_ci_low"],
        "speedup_wall_ci_high": boot["speedup_wall_ci_high"],
        "paper_sps_baseline": paper_sps[0],
        "paper_sps_pods": paper_sps[1],
        "paper_sps_source": paper_sps[2],
        "speedup_paper_hw": point["speedup_paper_hw"],
        "speedup_paper_hw_ci_low": boot["speedup_paper_hw_ci_low"],
        "speedup_paper_hw_ci_high": boot["speedup_paper_hw_ci_high"],
        "p_pods_never": boot["p_never"],
        "paper_speedup": c.paper if c.paper is not None else math.nan,
        "n_seeds_baseline": n_base,
        "n_seeds_pods": n_pods,
        "n_boot": n_boot,
        "note": "; ".join(note),
    }


PLATEAU_SHARE = 0.8  # issue 10: a baseline has plateaued if its peak lies before the last 20% of its run


def baseline_plateau(base_curve: pd.DataFrame, t_peak_s: float) -> dict:
    """Where the baseline's mean curve peaks within its run (issue 10's plateau criterion).

    `base_curve`: the baseline's `mean_curve` frame; `t_peak_s`: the grid time of its peak
    (`time_to_peak`). Positions are in optimizer steps (the mean over seeds at that evaluation)
    where the curve has them, else in seconds. Returns peak_at_baseline and last_at_baseline (step
    or seconds of the peak and of the last evaluation), peak_share_baseline (their ratio) and
    plateau_baseline (share <= PLATEAU_SHARE: the peak lies before the last 20% of the run; a
    peak at the last evaluations means the curve may still be rising).
    """
    curve = base_curve.sort_values("time_s")
    pos = "step" if "step" in curve.columns and curve["step"].notna().all() else "time_s"
    at_peak = curve.loc[np.isclose(curve["time_s"], t_peak_s), pos]
    peak_at = float(at_peak.iloc[0]) if len(at_peak) else math.nan
    last_at = float(curve[pos].iloc[-1]) if len(curve) else math.nan
    share = peak_at / last_at if last_at > 0 else math.nan
    return {
        "peak_at_baseline": peak_at,
        "last_at_baseline": last_at,
        "peak_share_baseline": share,
        "plateau_baseline": bool(share <= PLATEAU_SHARE),
    }


def baseline_plateau_share(runs: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict:
    """How sure the plateau verdict is: the share of bootstrap resamples of the baseline's seeds whose
    mean curve peaks before the last 20% of its run (`baseline_plateau`'s criterion, applied to each
    resample; positions in optimizer steps where the rows have them, else seconds; t = 0 excluded;
    the first evaluation of a tie). `seed` fixes the resamples, the same ones as the late gain and the
    trend. Near 1 or 0 the verdict stands; between, it is what noise placed: (a)'s tiny GRPO peaks at
    1825 of 2000 steps, and only 13% of its resamples peak before step 1600 (issue 10). NaN with one
    seed (a resample of one seed is that seed) or no evaluations.
    """
    arm = _arm(runs)
    if arm.values_S_T.size == 0 or len(arm.seeds) < 2:
        return {"p_plateau_baseline": math.nan}
    pos_T = _positions(arm)
    means_B_T = _resampled_means(arm, n_boot, seed)
    peak_B = np.argmax(np.where(np.isnan(means_B_T), -np.inf, means_B_T), axis=1)
    return {"p_plateau_baseline": float(np.mean(pos_T[peak_B] <= PLATEAU_SHARE * np.nanmax(pos_T)))}


def _positions(arm: _Arm) -> np.ndarray:
    """Where each evaluation of an arm lies: its mean optimizer step over seeds where the rows have
    steps, else its grid time in seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no steps, use seconds
        pos_T = np.nanmean(arm.steps_S_T, axis=0)
    return pos_T if np.isfinite(pos_T).all() else arm.times_T


def _resampled_means(arm: _Arm, n_boot: int, seed: int) -> np.ndarray:
    """The arm's mean curves (B x T) over `n_boot` resamples of its seeds, drawn from `seed`: one draw for
    every baseline statistic (share, late gain, trend), so they read the same resamples."""
    idx = np.random.default_rng(seed).integers(0, len(arm.seeds), (n_boot, len(arm.seeds)))
    return _bootstrap_means(arm.values_S_T, idx)


def _seed_bootstrap(arm: _Arm, stat, n_boot: int, seed: int, ci: float, name: str) -> dict:
    """`stat` (mean curves B x T -> B values) of the arm's mean curve, and its percentile bootstrap
    interval over the arm's seeds (NaN with one seed), as {name, name_ci_low, name_ci_high}."""
    out = {name: float(stat(_bootstrap_means(arm.values_S_T, np.arange(len(arm.seeds))[None]))[0])}
    out[f"{name}_ci_low"] = out[f"{name}_ci_high"] = math.nan
    if len(arm.seeds) > 1:
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = _interval(stat(_resampled_means(arm, n_boot, seed)), ci)
    return out


def _nan_stat(name: str) -> dict:
    return {name: math.nan, f"{name}_ci_low": math.nan, f"{name}_ci_high": math.nan}


def baseline_late_gain(runs: pd.DataFrame, n_boot: int = 2000, seed: int = 0, ci: float = 0.95) -> dict:
    """How much the baseline's best mean evaluation in the last 20% of its run beats its best before.

    `baseline_plateau`'s argmax says *where* the peak lies; on a curve that is flat at the end it lands on
    whichever late evaluation noise lifted. This says whether the late part is *higher* beyond noise:
    late_gain_baseline = max(mean curve over the last 20% of the evaluations' positions, steps where
    the rows have them) - max(mean curve before), with a 95% percentile bootstrap over the baseline's
    seeds (`seed` fixes the resamples). An interval above 0 means the late peak beats everything
    before it; one that includes 0 does not show a plateau by itself: a slowly rising curve whose
    earlier best was a lucky evaluation gives one too (issue 10: (a)'s GRPO at 600 tiny steps,
    +1.0 [-1.0, +2.9] points, still rising at 2000; `baseline_trend` tells the two apart). The start
    (t = 0) is excluded, as in `time_to_peak`. NaN where the run has no evaluation on one side of the
    80% mark; no interval with one seed.
    """
    arm = _arm(runs)
    if arm.values_S_T.size == 0:
        return _nan_stat("late_gain_baseline")
    pos_T = _positions(arm)
    late_T = pos_T > PLATEAU_SHARE * np.nanmax(pos_T)
    if late_T.all() or not late_T.any():
        return _nan_stat("late_gain_baseline")

    def gain(means_B_T: np.ndarray) -> np.ndarray:
        return np.nanmax(means_B_T[:, late_T], axis=1) - np.nanmax(means_B_T[:, ~late_T], axis=1)

    return _seed_bootstrap(arm, gain, n_boot, seed, ci, "late_gain_baseline")


TREND_SHARE = 0.5  # baseline_trend fits the evaluations after this share of the run


def baseline_trend(runs: pd.DataFrame, n_boot: int = 2000, seed: int = 0, ci: float = 0.95) -> dict:
    """Is the baseline still rising in the second half of its run? The rise of a least-squares line
    through its mean curve at the evaluations after TREND_SHARE of the run (positions in optimizer
    steps where the rows have them, else seconds), over the span of those evaluations: trend_baseline,
    in the metric's units, with a 95% percentile bootstrap interval over the baseline's seeds.

    The argmax (`baseline_plateau`) and the late gain (`baseline_late_gain`) each read one or two
    evaluations of a noisy curve; the trend pools every evaluation of the second half. An interval
    above 0: still rising, whatever the argmax says (issue 10: (a)'s GRPO at 600 tiny steps gives
    +4.2 [+0.9, +7.1] points, and run on to 2000 steps it rose another ~2.3 points per 1000); one that
    includes 0: level within the noise (the paper's (a) GRPO, whose released curve peaks at 66% of
    its run: -0.5 [-1.5, +0.4]). NaN with fewer than three evaluations in the second half; no
    interval with one seed.
    """
    arm = _arm(runs)
    if arm.values_S_T.size == 0:
        return _nan_stat("trend_baseline")
    pos_T = _positions(arm)
    half_T = pos_T > TREND_SHARE * np.nanmax(pos_T)
    if half_T.sum() < 3:
        return _nan_stat("trend_baseline")
    x_H = pos_T[half_T] - pos_T[half_T].mean()
    span = float(np.ptp(pos_T[half_T]))

    def rise(means_B_T: np.ndarray) -> np.ndarray:
        y_B_H = means_B_T[:, half_T]
        return (y_B_H - y_B_H.mean(axis=1, keepdims=True)) @ x_H / (x_H @ x_H) * span

    return _seed_bootstrap(arm, rise, n_boot, seed, ci, "trend_baseline")


def plateau_table(df: pd.DataFrame, metric: str | None = None, n_boot: int = 2000, boot_seed: int = 0) -> pd.DataFrame:
    """Has each arm's mean curve stopped rising? One row per curve of `df` (a tidy curves frame; every
    arm, with or without a sheet role) on its setting's primary test set and metric (`metric`
    overrides it): seeds, last evaluation, peak and where it lies (`baseline_plateau`), the share of
    seed resamples that peak before the last 20% (`baseline_plateau_share`), the late gain and the
    second-half trend, each with its 95% bootstrap interval over seeds. The statistics are the
    time-to-peak table's baseline columns (suffix dropped), computed for any arm, so a run of the
    baseline alone (notebook/overlays/tiny_a4000.yaml) can be judged without a PODS arm."""
    keys = [k for k in CONFIG_KEYS if k in df.columns]
    rows = []
    settings = sorted(df["setting"].astype(str).unique(), key=lambda s: (len(s) != 1, s))
    for setting in settings:
        met = metric or registry.setting_metric(setting)
        sub = select(df, setting=setting, dataset=primary_dataset(df, setting), metric=met)
        if sub.empty:
            raise AnalysisInputError(
                f"setting {setting}: no rows of metric {met!r} on its primary test set: name one the curves "
                f"have with --metric ({', '.join(sorted(map(str, df['metric'].unique())))})"
            )
        for sel, runs in sub.groupby(keys, dropna=False, sort=True):
            curve = mean_curve(runs)
            after = _as_series(curve)  # t = 0 excluded, as in time_to_peak
            if after.empty:
                continue
            stats = (
                baseline_plateau(curve, float(after.idxmax()))
                | baseline_plateau_share(runs, n_boot, boot_seed)
                | baseline_late_gain(runs, n_boot, boot_seed)
                | baseline_trend(runs, n_boot, boot_seed)
            )
            role = runs["role"].dropna().iloc[0] if "role" in runs.columns and runs["role"].notna().any() else ""
            label = dict(zip(keys, sel, strict=True))
            rows.append(
                {
                    "setting": setting,
                    "arm": _label(label),
                    "rule": label.get("rule", ""),
                    "normalize": label.get("normalize", ""),
                    "role": role,
                    "dataset": runs["dataset"].iloc[0],
                    "metric": met,
                    "n_seeds": int(runs["seed"].nunique()),
                    "peak": float(after.max()),
                    **{k.replace("_baseline", ""): v for k, v in stats.items()},
                }
            )
    return pd.DataFrame(rows)


def write_plateau_table(df: pd.DataFrame, stem: str | Path) -> list[Path]:
    """`stem`.csv (all columns) and `stem`.md (one line per arm, in points)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".csv"), stem.with_suffix(".md")]
    df.to_csv(paths[0], index=False)
    head = ["setting", "arm", "rule / norm", "role", "seeds", "peak", "peak at (of last)",
            f"plateau (peak before {PLATEAU_SHARE:.0%})", "share of resamples", "late gain", "2nd-half trend"]  # fmt: skip
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in df.iterrows():
        late = _points(r, "late_gain") if not math.isnan(float(r["late_gain"])) else "-"
        trend = _points(r, "trend") if not math.isnan(float(r["trend"])) else "-"
        cells = [
            str(r["setting"]), str(r["arm"]), f"{r['rule']} / {r['normalize']}", str(r["role"] or "-"),
            str(r["n_seeds"]), f"{100 * r['peak']:.1f}%",
            f"{_fmt(float(r['peak_at']), 0)} of {_fmt(float(r['last_at']), 0)} ({float(r['peak_share']):.2f})",
            "yes" if r["plateau"] else "no", _fmt(float(r["p_plateau"]), 2), late, trend,
        ]  # fmt: skip
        md.append("| " + " | ".join(cells) + " |")
    md += ["", f"Each arm's mean curve over seeds on its setting's primary test set (t = 0 excluded). 'plateau': "
           f"its peak lies before the last {1 - PLATEAU_SHARE:.0%} of the run (issue 10's criterion); 'share of "
           "resamples': the same verdict over bootstrap resamples of the arm's seeds (- with one seed); 'late "
           f"gain': the best mean evaluation of the last {1 - PLATEAU_SHARE:.0%} minus the best before; "
           f"'2nd-half trend': the rise of a least-squares line through the mean curve after {TREND_SHARE:.0%} "
           "of the run, over that part (above 0: still rising). Intervals: 95% percentile bootstrap over seeds."]  # fmt: skip
    paths[1].write_text("\n".join(md) + "\n")
    return paths


def _fmt(x, digits=2) -> str:
    if isinstance(x, float | np.floating):
        if math.isnan(x):
            return "-"
        if math.isinf(x):
            return "never"
        return f"{x:.{digits}f}"
    return str(x)


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
    ("(ii) wall-clock here [95% CI]", "speedup_wall", "speedup_wall", 2),
    ("s/step paper hw (base / PODS)", ("paper_sps_baseline", "paper_sps_pods"), None, 2),
    ("(iii) paper-hw prediction [95% CI]", "speedup_paper_hw", "speedup_paper_hw", 2),
]
# fmt: on


def _one_seed(row) -> bool:
    return min(row.get("n_seeds_baseline", 2), row.get("n_seeds_pods", 2)) < 2


def _ci_cell(row, col: str, digits: int) -> str:
    """A CI bound; "n/a (1 seed)" where an arm has one seed (no interval can be computed)."""
    value = row.get(col, math.nan)
    if isinstance(value, float) and math.isnan(value) and _one_seed(row):
        return "n/a (1 seed)"
    return _fmt(value, digits)


def _three_cells(row) -> list[str]:
    cells = [str(row["setting"])]
    for _, point, ci, digits in _THREE:
        if isinstance(point, tuple):
            cells.append(" / ".join(_fmt(float(row.get(c, math.nan)), digits) for c in point))
            continue
        text = "never" if not row.get("t_pods_s", 0) < math.inf else _fmt(float(row.get(point, math.nan)), digits)
        if _one_seed(row):
            text += " [n/a (1 seed)]"
        else:
            lo, hi = (_fmt(float(row.get(f"{ci}_ci_{e}", math.nan)), digits) for e in ("low", "high"))
            text += f" [{lo}, {hi}]"
        cells.append(text)
    cells.append(_fmt(float(row.get("p_pods_never", math.nan)), 2))
    cells.append(_plateau_cell(row))
    cells.append(_fmt(float(row.get("paper_speedup", math.nan)), 1))
    return cells


def _points(row, name: str) -> str:
    """'+1.0 [-1.0, +2.9] pts': a fraction-valued statistic of the row in points, with its interval if any."""
    lo, hi = (float(row.get(f"{name}_ci_{e}", math.nan)) for e in ("low", "high"))
    ci = "" if math.isnan(lo) else f" [{100 * lo:+.1f}, {100 * hi:+.1f}]"
    return f"{100 * float(row[name]):+.1f}{ci} pts"


def _plateau_cell(row) -> str:
    """'425 of 600 (0.71; 2nd-half trend +0.3 [-1.1, +1.6] pts)': where the baseline's mean curve peaks,
    of its last evaluation, and the rise of its second half (`baseline_trend`); where the peak is in
    the last 20%, also how much it beats the best evaluation before (`baseline_late_gain`)."""
    share = float(row.get("peak_share_baseline", math.nan))
    if math.isnan(share):
        return "-"
    at, last = (_fmt(float(row[c]), 0) for c in ("peak_at_baseline", "last_at_baseline"))
    parts = [f"{share:.2f}" if row.get("plateau_baseline") else f"{share:.2f}, no plateau"]
    p_plateau = float(row.get("p_plateau_baseline", math.nan))
    if not math.isnan(p_plateau):
        parts[0] += f", {p_plateau:.0%} of resamples peak before {PLATEAU_SHARE:.0%}"
    if not row.get("plateau_baseline") and not math.isnan(float(row.get("late_gain_baseline", math.nan))):
        parts.append(f"late gain {_points(row, 'late_gain_baseline')}")
    if not math.isnan(float(row.get("trend_baseline", math.nan))):
        parts.append(f"2nd-half trend {_points(row, 'trend_baseline')}")
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
        [_ci_cell(r, c, d) if c in ("ci_low", "ci_high") else _fmt(r[c], d) for c, _, d in cols]
        for _, r in df.iterrows()
    ]
    head = [h for _, h, _ in cols]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(row) + " |" for row in cells]
    thr = df["threshold"].iloc[0] if len(df) else DEFAULT_THRESHOLD
    md += ["", f"Speed-up: time for the baseline / time for PODS to first reach {thr:g} x the baseline's "
           "peak mean curve on the evaluation grid (t = 0 excluded), truncated to one decimal as the "
           "paper prints it; CI: 95% percentile bootstrap over seeds within each arm."]  # fmt: skip
    if len(df) and "speedup_steps" in df.columns:
        head3 = ["setting"] + [h for h, *_ in _THREE] + ["PODS never (share of resamples)", "baseline peak at", "paper"]
        md += ["", "### Three speed-ups", "", "| " + " | ".join(head3) + " |", "|" + "---|" * len(head3)]
        md += ["| " + " | ".join(_three_cells(r)) + " |" for _, r in df.iterrows()]
        md += ["", "(i) optimizer steps for the baseline / for PODS to first reach the same target (steps: the mean "
               "over seeds of the step at that evaluation); (ii) (i) x the seconds per training step measured "
               "for each arm here (mean training seconds / mean steps over runs); (iii) (i) x the seconds per "
               "step of the setting's arms on the paper's hardware, a prediction: sources below. Intervals: "
               "95% percentile bootstrap over seeds, over the resamples in which PODS reached the target; "
               "'PODS never' is the share of resamples in which it did not. 'baseline peak at': the step "
               "(seconds without steps) of the baseline mean curve's peak, of its last evaluation; 'no plateau' "
               f"where the peak lies in the last {1 - PLATEAU_SHARE:.0%} of the run (the curve may still rise); "
               f"'% of resamples peak before {PLATEAU_SHARE:.0%}': the share of bootstrap resamples of the "
               "baseline's seeds whose mean curve peaks before that mark (how sure the plateau verdict is); "
               "'late gain': then, how far the best mean evaluation of that part is above the best before it, "
               "in points with its 95% bootstrap interval over the baseline's seeds; '2nd-half trend': the "
               f"rise of a least-squares line through the baseline's mean curve after {TREND_SHARE:.0%} of the "
               "run, over that part, in points with its 95% bootstrap interval over seeds (above 0: still "
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
    base = _paper_defaults(rec)
    ga = int(arm.extra_value("optim.grad_accum") or base["ga"])
    normalize = arm.extra_value("rollout.normalize") or base["norm"]
    return {"arm": arm_label(arm.n, arm.m, arm.rule, normalize, ga), "n": arm.n, "m": arm.m, "grad_accum": ga}


def released_comparisons(sheet: str | Path = PAPER_SHEET) -> list[Comparison]:
    """Table 3 for every setting with released logs: the `role` rows of the paper sheet, the
    dataset, metric and paper speed-up of the setting's record (PAPER.md §5)."""
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
