"""The paper hardware's clock: training seconds on the authors' GPUs after a number of optimizer steps.

Speed-up (iii) of the time-to-peak table (pods_repro.analysis.speedups) reads each arm's seconds here: from the
authors' released logs where they have the setting (the training time at each step count), else the s/step
the package records for them, else the linear cost model's prediction (pods_repro/analysis/cost_model.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pods_repro import registry
from pods_repro.analysis.curves import selector_label
from pods_repro.analysis.tidy import PAPER_SHEET


@dataclass(frozen=True)
class PaperClock:
    """Training seconds on the paper's hardware after a number of optimizer steps, per arm of a setting.

    Each arm's clock is a polyline through (0, 0) and its (steps, seconds) points, read by linear
    interpolation and, past its last point, extended at that point's mean seconds per step. From the
    authors' released logs the points are the arm's mean optimizer step and training time at each
    evaluation (so a step costs what it cost at that point of their runs: PODS's first 1.5 h of (a)
    ran at 10.9 s per step, not its 10.1 s mean); without them a single point, the stated or predicted
    seconds per step (`paper_seconds_per_step`)."""

    steps_base: tuple[float, ...]
    seconds_base: tuple[float, ...]
    steps_pods: tuple[float, ...]
    seconds_pods: tuple[float, ...]
    source: str

    @staticmethod
    def _read(steps_P, seconds_P, steps_B) -> np.ndarray:
        xs, ys = np.array([0.0, *steps_P]), np.array([0.0, *seconds_P])
        with np.errstate(invalid="ignore"):
            inside = np.interp(steps_B, xs, ys)
            beyond = ys[-1] + (steps_B - xs[-1]) * ys[-1] / xs[-1]
        return np.where(steps_B > xs[-1], beyond, inside)

    def seconds(self, steps_base_B: np.ndarray, steps_pods_B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.steps_base:
            return np.full_like(steps_base_B, np.nan), np.full_like(steps_pods_B, np.nan)
        return (
            self._read(self.steps_base, self.seconds_base, steps_base_B),
            self._read(self.steps_pods, self.seconds_pods, steps_pods_B),
        )


def _linear_clock(sps: tuple[float, float, str]) -> PaperClock:
    if not (np.isfinite(sps[0]) and np.isfinite(sps[1])):
        return PaperClock((), (), (), (), sps[2])
    return PaperClock((1.0,), (float(sps[0]),), (1.0,), (float(sps[1]),), sps[2] + "; s/step x steps")


def _arm_clock(runs: pd.DataFrame) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """(mean steps, mean training seconds) at each evaluation after t = 0 of one released arm (one
    dataset and metric), rising in steps; None without steps."""
    runs = runs[(runs["time_s"] > 0) & runs["step"].notna()]
    if runs.empty:
        return None
    first = runs[["dataset", "metric"]].iloc[0]
    runs = runs[(runs["dataset"] == first["dataset"]) & (runs["metric"] == first["metric"])]
    pts = runs.groupby("grid")[["step", "time_s"]].mean().sort_values("time_s")
    pts = pts[pts["step"] > 0]
    if pts.empty or (np.diff(pts["step"].to_numpy()) <= 0).any():
        return None
    return tuple(pts["step"].astype(float)), tuple(pts["time_s"].astype(float))


def paper_clock(
    setting: str, paper_curves: pd.DataFrame | None = None, paper_steps: pd.DataFrame | None = None
) -> PaperClock:
    """The paper hardware's clock of a setting's two arms (`PaperClock`): from the authors' released curves
    (`paper_curves`: the curves.csv of `released`, whose `role` column marks the paper sheet's arms; the
    elapsed training time at each step count), else the constant seconds per step of
    `paper_seconds_per_step` (the released steps.csv, the values the paper's figures state, or the cost
    model's prediction)."""
    if paper_curves is not None and {"role", "step"} <= set(paper_curves.columns):
        sub = paper_curves[paper_curves["setting"].astype(str) == str(setting)]
        clocks = [_arm_clock(sub[sub["role"] == role]) for role in registry.ROLES]
        if all(clocks):
            (sb, tb), (sp, tp) = clocks
            n = [sub.loc[sub["role"] == role, "seed"].nunique() for role in registry.ROLES]
            return PaperClock(
                sb, tb, sp, tp,
                f"released logs ({setting}): training time at each step count, interpolated between the "
                f"evaluations of the mean over {n[0]}+{n[1]} runs",
            )  # fmt: skip
    return _linear_clock(paper_seconds_per_step(setting, paper_steps))


@functools.cache
def cost_model():
    """The fitted generation/update cost model (`pods_repro.analysis.cost_model`, also `pods bench cost_model`)."""
    from pods_repro.analysis import cost_model as mod  # lazy: only the paper-hardware prediction needs it

    return mod


def paper_seconds_per_step(setting: str, paper_steps: pd.DataFrame | None = None) -> tuple[float, float, str]:
    """(baseline s/step, PODS s/step, source) of a setting's arms on the paper's hardware.

    First the authors' released logs (`paper_steps`: the steps.csv of `released`, whose `role`
    column marks the arms of the paper sheet); else, for (a), (e) and (f), the same logs' s/step as
    the package records them (`_stated_seconds_per_step`: the workflow with `released_logs: none`); else a
    prediction of the linear cost model
    c + g1 n + u1 m fitted to (a)'s eight released s/step values on 1 L40S (pods_repro/analysis/cost_model.py,
    `invert_paper`), at the n, m of the setting's paper arms, for single-GPU settings without
    gradient accumulation; else NaN.
    """
    if paper_steps is not None and "role" in paper_steps.columns:
        sub = paper_steps[paper_steps["setting"].astype(str) == str(setting)]
        arms = [sub[sub["role"] == role] for role in registry.ROLES]
        if all(len(a) and a["steps"].notna().any() for a in arms):
            sps = [float(a["time_s"].mean() / a["steps"].mean()) for a in arms]
            labels = [selector_label({"arm": a["arm"].iloc[0], "n": a["n"].iloc[0], "m": a["m"].iloc[0]}) for a in arms]
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
        f"released s/step on 1xL40S, pods_repro/analysis/cost_model.py) at n/m {b.n}/{b.m} vs {q.n}/{q.m}"
    )
    return sps[0], sps[1], source


def _stated_seconds_per_step(setting: str, main: Mapping | None) -> tuple[float, float, str] | None:
    """The released logs' s/step as the package records them (pods_repro/analysis/cost_model.py constants), no logs read.

    (a): the n/m sweep on 1 L40S at the paper arms' n/m (16/16 vs 64/16); (e)/(f): GRPO-GA vs PODS per
    global step on 8 GPUs. None for the other settings (and for (a) arms outside the sweep).
    """
    cm = cost_model()
    if setting in cm.PAPER_GLOBAL:
        v = cm.PAPER_GLOBAL[setting]
        return (
            v["ga"],
            v["pods"],
            f"recorded: s/step of the released ({setting}) runs, {v['gpus']}, GRPO-GA vs PODS",
        )
    if setting == "a" and main is not None:
        sweep = {(n, m): t for n, m, t in cm.PAPER_A_SWEEP}
        b, q = main["baseline"], main["pods"]
        if (b.n, b.m) in sweep and (q.n, q.m) in sweep:
            return (
                sweep[b.n, b.m],
                sweep[q.n, q.m],
                f"recorded: s/step of the released (a) runs, 1xL40S, at n/m {b.n}/{b.m} vs {q.n}/{q.m}",
            )
    return None
