"""The arena's tests and compute weights: paired or Welch differences with p-values, Holm's correction per
family, which filter arms were exercised, and the cost of a step as the hardware weighs it (docs/arena.md).

- :func:`difference`: an arm minus a reference over seeds. Where both ran the same seeds (the arena's grid
  shares them) the interval is the paired t-interval of the per-seed differences ("paired"); otherwise the
  Welch interval of the two means ("unpaired"). Both give a two-sided p-value of "no difference".
- :func:`holm`: Holm's step-down adjustment of a family's p-values (family-wise error at ``ALPHA``); a
  verdict "better" / "worse" needs the adjusted p-value below ``ALPHA``. The family of a test is its
  reference and its measure over every recorded condition (:data:`FAMILY`): the claims that "Choosing a rule"
  counts in one column. :func:`bh` gives the Benjamini-Hochberg q-values beside it (a stated false-discovery
  rate, not used for verdicts).
- :func:`firing`: per condition and arm with a filter or skip (:data:`FIRES`), the share of steps in which
  it fired; an arm whose curves equal PODS's on every seed, or that never fired, changed no update and reads
  "not exercised" (no test, outside every family).
- :func:`computed_rows`: the rows and completion tokens the update computed (a filtered group's rows are
  masked but still go through the forward and backward pass, so they count); the filtered rows' tokens are
  estimated as the step's mean generated length.
- :func:`cpu_weights`: least squares of the step CPU seconds on tokens generated and computed in the update
  (with an intercept), over the record's steps: the trained/generated cost ratio of the machine that ran it.
- :func:`gpu_model`: a step's GPU seconds by the linear cost model fitted on a GPU (``g0 + g1 n + u0 + u1 m``
  per generate call and update, :mod:`pods_repro.analysis.cost_model`), read from a committed cost-model CSV.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from pods_repro.analysis.intervals import mean_diff_interval, t_cdf, t_quantile, welch_df

__all__ = [
    "ALPHA",
    "FAMILY",
    "FIRES",
    "GPU_COST_MODEL",
    "bh",
    "computed_rows",
    "cpu_weights",
    "difference",
    "firing",
    "gpu_model",
    "holm",
    "not_exercised",
]

ALPHA = 0.05
FAMILY = ("reference", "statistic")
"""A test's family: its reference and measure, over every recorded condition and arm (one column of "Choosing
a rule"); Holm's correction holds the chance of any false "better" or "worse" in it at ``ALPHA``."""
FIRES = {
    "rollout.filter=zero_std": ("frac_zero_std", "groups filtered"),
    "rollout.filter=refill": ("refill_rounds", "refill rounds"),
    "rollout.skip_after": ("skipped_prompts", "prompts skipped"),
}
"""An arm's filter or skip (an override of its sheet row, by prefix) -> the step column that counts its firing."""
GPU_COST_MODEL = "benchmarks/results/gpu_h200_cost_model_tiny_warm.csv"
"""The GPU cost model the per-GPU-second reading uses: fitted on one H200 to the tiny warm-started Llama
(``pods bench asymmetry`` + ``pods_repro.bench.cost_model``); seconds per generate call, per rollout generated, per
update and per row updated."""


def _t_p(t: float, df: float) -> float:
    if not math.isfinite(t):
        return 0.0 if not math.isnan(t) else 1.0
    return 2.0 * (1.0 - t_cdf(abs(t), df))


def difference(a: dict[int, float], b: dict[int, float], ci: float = 0.95) -> dict:
    """``a`` minus ``b`` (seed -> value): paired over their shared seeds when both hold the same seeds, else
    Welch over each one's seeds. Returns difference, low, high, p (two-sided) and analysis (paired /
    unpaired); fewer than 2 seeds on a side: NaN interval and p."""
    shared = sorted(set(a) & set(b))
    nan = {"difference": math.nan, "low": math.nan, "high": math.nan, "p": math.nan}
    if set(a) == set(b) and len(shared) >= 2:
        d = np.array([a[s] - b[s] for s in shared], dtype=float)
        mean, k = float(d.mean()), len(d)
        se = float(d.std(ddof=1)) / math.sqrt(k)
        q = t_quantile(1.0 - (1.0 - ci) / 2.0, k - 1.0)
        t = mean / se if se > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean))
        return {"difference": mean, "low": mean - q * se, "high": mean + q * se, "p": _t_p(t, k - 1.0),
                "analysis": "paired"}  # fmt: skip
    xa, xb = np.array(list(a.values()), dtype=float), np.array(list(b.values()), dtype=float)
    if len(xa) < 2 or len(xb) < 2:
        return {**nan, "difference": float(xa.mean() - xb.mean()) if len(xa) and len(xb) else math.nan,
                "analysis": "unpaired"}  # fmt: skip
    mean = float(xa.mean() - xb.mean())
    lo, hi = mean_diff_interval(xa, xb, ci)
    se = math.sqrt(xa.var(ddof=1) / len(xa) + xb.var(ddof=1) / len(xb))
    t = mean / se if se > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean))
    return {"difference": mean, "low": float(lo), "high": float(hi), "p": _t_p(t, float(welch_df(xa, xb))),
            "analysis": "unpaired"}  # fmt: skip


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values (step-down, monotone, capped at 1); NaN entries stay NaN and do not count."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(np.isfinite(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    k, running = len(order), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p[i]))
        out[i] = running
    return out


def bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values (step-up, monotone, capped at 1); NaN entries stay NaN and do not count."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(np.isfinite(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    k, running = len(order), 1.0
    for rank in range(k - 1, -1, -1):
        i = order[rank]
        running = min(running, k * p[i] / (rank + 1))
        out[i] = running
    return out


def firing(steps: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Per condition and arm with a filter or skip (:data:`FIRES`): the share of its steps (over seeds) in which
    it fired, the mean count per step, and the column counted."""
    rows = []
    for arm, spec in meta["arms"].items():
        fires = [FIRES[k] for k in FIRES for x in spec.get("extra", []) if x.startswith(k)]
        if not fires:
            continue
        column, what = fires[0]
        for cond in meta["conditions"]:
            sub = steps[(steps.condition == cond) & (steps.arm == arm)]
            if sub.empty:
                continue
            vals = sub[column].fillna(0).to_numpy(float)
            rows.append({"condition": cond, "arm": arm, "column": column, "what": what,
                         "fired_share": float(np.mean(vals > 0)), "per_step": float(vals.mean())})  # fmt: skip
    return pd.DataFrame(rows, columns=["condition", "arm", "column", "what", "fired_share", "per_step"])


def not_exercised(fire: pd.DataFrame, same: dict[str, list[str]]) -> dict[tuple[str, str], float]:
    """(condition, arm) -> fired share, for the filter arms that changed no update there: their curves equal
    PODS's on every seed (``same``: :func:`pods_repro.analysis.arena.same_as_pods`), or they never fired."""
    out = {}
    for r in fire.itertuples():
        if r.fired_share == 0 or r.arm in same.get(r.condition, []):
            out[(r.condition, r.arm)] = float(r.fired_share)
    return out


def computed_rows(steps: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """The step table with ``computed_rollouts`` and ``computed_tokens``: the rows the update computed (m per
    prompt, filtered or not) and their completion tokens, a filtered row's tokens estimated as the step's mean
    generated completion length. Prompts per step: the arm's generated rollouts / n at steps without refill."""
    out = steps.copy()
    m = out.arm.map({a: s["m"] for a, s in meta["arms"].items()}).astype(float)
    n = out.arm.map({a: s["n"] for a, s in meta["arms"].items()}).astype(float)
    plain = out.refill_rounds.fillna(0) == 0
    prompts = (out.gen_rollouts / n).where(plain).groupby(out.arm).transform("median").fillna(1.0).round()
    rows = m * prompts
    missing = (rows - out.trained_rollouts.fillna(0)).clip(lower=0)
    mean_len = out.gen_tokens / out.gen_rollouts.where(out.gen_rollouts > 0)
    out["computed_rollouts"] = out.trained_rollouts.fillna(0) + missing
    out["computed_tokens"] = out.trained_tokens.fillna(0) + missing * mean_len.fillna(0)
    return out


def cpu_weights(steps: pd.DataFrame) -> dict:
    """Least squares of ``step_cpu_s`` on (1, gen_tokens, computed_tokens) over the given steps (with
    :func:`computed_rows`): CPU seconds per step, per generated token and per token computed in the update, and
    their ratio (a trained token in generated ones; NaN when the steps cannot separate the two)."""
    s = steps.dropna(subset=["step_cpu_s", "gen_tokens", "computed_tokens"])
    x = np.column_stack([np.ones(len(s)), s.gen_tokens.to_numpy(float), s.computed_tokens.to_numpy(float)])
    coef, _, rank, _ = np.linalg.lstsq(x, s.step_cpu_s.to_numpy(float), rcond=None)
    resid = s.step_cpu_s.to_numpy(float) - x @ coef
    ss = float(((s.step_cpu_s - s.step_cpu_s.mean()) ** 2).sum())
    fitted = rank == 3 and coef[1] > 0  # the steps vary in both counts, and a generated token costs something
    return {"intercept_s": float(coef[0]), "gen_s": float(coef[1]), "trained_s": float(coef[2]),
            "ratio": float(coef[2] / coef[1]) if fitted else math.nan,
            "r2": 1.0 - float((resid**2).sum()) / ss if ss > 0 else math.nan, "steps": len(s)}  # fmt: skip


def gpu_model(path: Path) -> dict:
    """The cost model's coefficients (g0, g1, u0, u1: seconds) and its source (the model) from a cost-model CSV
    (``source,quantity,value,unit``): the first source's rows, the paper's inversion left out."""
    df = pd.read_csv(path)
    df = df[df.source != "paper_a"]
    source = str(df.source.iloc[0])
    vals = {r.quantity: float(r.value) for r in df[df.source == source].itertuples()}
    return {"source": source, **{k: vals[k] for k in ("g0", "g1", "u0", "u1")}}


def gpu_seconds(steps: pd.DataFrame, model: dict) -> pd.Series:
    """Per step (with :func:`computed_rows`): one generate call per round (1 + refill rounds), every rollout
    generated, one update of the computed rows."""
    calls = 1.0 + steps.refill_rounds.fillna(0)
    return (
        model["g0"] * calls
        + model["g1"] * steps.gen_rollouts.fillna(0)
        + model["u0"]
        + model["u1"] * steps.computed_rollouts
    )
