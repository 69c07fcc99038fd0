"""Mean curves over seeds and the per-arm matrices under every statistic on tidy curves (pods_repro.analysis.tidy).

The mean curve over seeds with its SEM band (`mean_curve`), the first grid point at which a curve reaches
a target (`first_index`, `first_time`), one arm's runs as matrices over (seed, grid point) (`arm_matrices`) and
their bootstrap means over resampled seeds, the percentile interval, an arm's label and a setting's primary
test set. pods_repro.analysis.plateau and pods_repro.analysis.speedups build on them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pods_repro.analysis.tidy import CONFIG_KEYS

# ----------------------------------------------------------------------------------------------
# mean curves and first reach


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


def as_series(curve) -> pd.Series:
    if isinstance(curve, pd.DataFrame):
        curve = curve.set_index("time_s")["mean"]
    s = pd.Series(curve, dtype=float).dropna().sort_index()
    return s[s.index > 0]  # t = 0 is the base model: excluded (compute_pods_speedup_99)


def first_index(values_B_T: np.ndarray, target_B: np.ndarray) -> np.ndarray:
    """Index of the first grid point at which each row is >= its target; -1 where it never is."""
    hit_B_T = values_B_T >= target_B[:, None]  # NaN never counts
    return np.where(hit_B_T.any(axis=1), hit_B_T.argmax(axis=1), -1)


def first_time(times_T: np.ndarray, values_B_T: np.ndarray, target_B: np.ndarray) -> np.ndarray:
    """First time at which each row is >= its target; inf where it never is (NaN never counts)."""
    first_B = first_index(values_B_T, target_B)
    return np.where(first_B >= 0, times_T[np.maximum(first_B, 0)], np.inf)


# ----------------------------------------------------------------------------------------------
# one arm as matrices over (seed, grid point), its bootstrap means and intervals


@dataclass(frozen=True)
class ArmMatrices:
    """One arm's runs as matrices over (seed S, grid point T > 0): values, optimizer steps, each seed's
    training seconds and steps at the end of the run (for seconds per step) and its training seconds at
    each evaluation (`elapsed_S_T`, for the time to a target)."""

    seeds: np.ndarray
    times_T: np.ndarray
    values_S_T: np.ndarray
    steps_S_T: np.ndarray
    run_time_S: np.ndarray
    run_steps_S: np.ndarray
    elapsed_S_T: np.ndarray | None = None


def arm_matrices(runs: pd.DataFrame, run_steps: pd.DataFrame | None = None) -> ArmMatrices:
    runs = runs[runs["time_s"] > 0]
    wide = runs.pivot_table(index="seed", columns="grid", values="value", aggfunc="first")
    if "step" in runs.columns:
        steps = runs.pivot_table(index="seed", columns="grid", values="step", aggfunc="first")
        steps = steps.reindex(index=wide.index, columns=wide.columns)
    else:  # tidy rows without optimizer steps: no steps-based speed-ups
        steps = pd.DataFrame(np.nan, index=wide.index, columns=wide.columns)
    times = runs.groupby("grid")["time_s"].mean().reindex(wide.columns)
    # (ii)'s clock: CPU seconds where every evaluation has them (CPU runs, pods_repro.analysis.collect), else wall
    clock = "cpu_time_s" if "cpu_time_s" in runs and runs["cpu_time_s"].notna().all() else "time_s"
    elapsed = runs.pivot_table(index="seed", columns="grid", values=clock, aggfunc="first")
    elapsed = elapsed.reindex(index=wide.index, columns=wide.columns)
    run_time = run_steps_n = np.full(len(wide), np.nan)
    if run_steps is not None and len(run_steps):
        step_clock = "cpu_time_s" if clock == "cpu_time_s" and "cpu_time_s" in run_steps else "time_s"
        per_seed = run_steps.groupby("seed")[[step_clock, "steps"]].mean().reindex(wide.index)
        run_time, run_steps_n = per_seed[step_clock].to_numpy(float), per_seed["steps"].to_numpy(float)
    return ArmMatrices(
        wide.index.to_numpy(),
        times.to_numpy(float),
        wide.to_numpy(float),
        steps.to_numpy(float),
        run_time,
        run_steps_n,
        elapsed.to_numpy(float),
    )


def bootstrap_means(values_S_T: np.ndarray, idx_B_S: np.ndarray) -> np.ndarray:
    pick_B_S_T = values_S_T[idx_B_S]
    count_B_T = np.sum(~np.isnan(pick_B_S_T), axis=1)
    total_B_T = np.nansum(pick_B_S_T, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count_B_T > 0, total_B_T / count_B_T, np.nan)


def value_at(matrix_B_T: np.ndarray, first_B: np.ndarray) -> np.ndarray:
    """matrix[b, first[b]], NaN where first[b] = -1 (never reached)."""
    picked = matrix_B_T[np.arange(len(first_B)), np.maximum(first_B, 0)]
    return np.where(first_B >= 0, picked, np.nan)


# ----------------------------------------------------------------------------------------------
# arms, settings and table cells


def selector_label(sel: Mapping) -> str:
    parts = [str(sel.get("arm", "?"))]
    parts += [f"{k}={sel[k]}" for k in ("n", "m", "grad_accum") if k in sel]
    return " ".join(parts)


def primary_dataset(df: pd.DataFrame, setting: str) -> str:
    """The test set a setting is judged on (the first evaluation dataset of its config)."""
    sub = df[(df["setting"].astype(str) == str(setting)) & (df["dataset"] != "train")]
    prim = sub["primary_dataset"].dropna()
    return str(prim.mode().iloc[0]) if not prim.empty else str(sub["dataset"].mode().iloc[0])


def fmt_cell(x, digits=2) -> str:
    if isinstance(x, float | np.floating):
        if math.isnan(x):
            return "-"
        if math.isinf(x):
            return "never"
        return f"{x:.{digits}f}"
    return str(x)
