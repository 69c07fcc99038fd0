"""How many optimizer steps carry a gradient? The share of steps whose trained rollouts all got one reward.

GRPO's advantage of a rollout is its reward minus the mean of its group, over the group's spread. When every
rollout of a prompt gets the same reward the advantages are all zero and the step moves nothing (beta = 0:
no KL term). The paper's case for max-variance down-sampling rests on this (arXiv 2504.13818, §3.3): of n
rollouts, train on the m whose rewards vary most, so that a step sees a wrong answer whenever one of the n
has one. This table measures it per arm from what each step logged (metrics.jsonl):

- ``kept_frac_zero_std``: the share of the step's prompts whose m trained rollouts all got one reward (no
  gradient from them); with one prompt per step (the paper's (a)-(d)) each step is 0 or 1;
- ``frac_zero_std``: the same share over all n generated rollouts (no selection could have helped those);
  for GRPO (n = m) both are the same.

``collect`` writes both into curves.csv as dataset "train" (the mean over the steps of each grid interval,
beside the training rollouts' lengths). Per arm: the share over the whole run (steps weighted equally), the
share over each quarter of the span the arm's runs cover (the share grows as accuracy rises and more
prompts are solved by every rollout), and a 95% Student t-interval over seeds for the whole-run share
(`pods_repro.analysis.intervals.mean_interval` on the per-seed shares: in simulation it held 93.5-95.5% at 3-64
seeds, where the percentile bootstrap of the same shares covered 75% at 3 seeds and 84-88% at 5-8). The
CSV keeps the interval as computed; at few seeds it can reach below 0 or above 1, and the Markdown prints
such an end at 0% / 100% and says so.

Run:  python -m pods_repro.analysis signal --curves results/tables/curves.csv --out-dir results/tables
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pods_repro.analysis import command, intervals
from pods_repro.analysis.curves import selector_label
from pods_repro.analysis.tidy import SHARE_METRICS, AnalysisInputError

SIGNAL_METRICS = SHARE_METRICS
"""metrics.jsonl keys that `collect` writes into curves.csv (dataset "train") for this table."""

QUARTERS = 4

COLUMNS = [
    "setting", "arm", "role", "n", "m", "rule", "normalize", "grad_accum", "seeds", "steps",
    "kept_zero_share", "kept_zero_ci_low", "kept_zero_ci_high",
    *[f"kept_zero_q{q + 1}" for q in range(QUARTERS)],
    "generated_zero_share",
]  # fmt: skip


def _per_run_shares(rows: pd.DataFrame, span: float) -> tuple[float, list[float]]:
    """One run's share over its steps and over each quarter of `span` steps, from its grid-interval means
    (each interval weighted by the steps it covers: its last step minus the previous interval's)."""
    rows = rows.sort_values("step")
    last = rows["step"].to_numpy(float)
    width = np.diff(np.concatenate([[0.0], last]))
    value = rows["value"].to_numpy(float)
    whole = float(np.sum(value * width) / np.sum(width)) if np.sum(width) > 0 else float("nan")
    quarters = []
    for q in range(QUARTERS):
        lo, hi = span * q / QUARTERS, span * (q + 1) / QUARTERS
        sel = (last > lo) & (last <= hi) & (width > 0)
        quarters.append(float(np.sum(value[sel] * width[sel]) / np.sum(width[sel])) if sel.any() else float("nan"))
    return whole, quarters


def signal_table(curves: pd.DataFrame, n_boot: int = 2000, boot_seed: int = 0) -> pd.DataFrame:
    """One row per setting and arm with ``kept_frac_zero_std`` rows in `curves` (see the module docstring).
    The interval is a t-interval, which draws nothing: `n_boot` and `boot_seed` are accepted so that every
    table of the command line takes the same arguments, and change nothing here."""
    train = curves[(curves["dataset"] == "train") & curves["metric"].isin(SIGNAL_METRICS)]
    train = train[train["step"].notna() & (train["step"] > 0)]
    if train.empty:
        raise AnalysisInputError(
            "the curves have no per-step reward-spread rows (dataset 'train', metric kept_frac_zero_std): "
            "`collect` writes them from runs whose metrics.jsonl logs kept_frac_zero_std (our trainer's runs; "
            "the authors' released logs have none); rerun `python -m pods_repro.analysis collect`"
        )
    out = []
    keys = ["setting", "arm", "role", "n", "m", "rule", "normalize", "grad_accum"]
    order = ["setting", "n", "m", "grad_accum", "rule", "normalize", "arm", "role"]  # a sweep's arms by n, then m
    train = train.sort_values(order, kind="stable")  # groupby(sort=False) then meets the arms in this order
    for key, arm in train.groupby(keys, sort=False, dropna=False):
        kept = arm[arm["metric"] == "kept_frac_zero_std"]
        if kept.empty:
            continue
        span = float(kept["step"].max())
        per_seed = {s: _per_run_shares(r, span) for s, r in kept.groupby("seed")}
        whole = np.array([w for w, _ in per_seed.values()])
        quarters = np.array([q for _, q in per_seed.values()])
        gen = arm[arm["metric"] == "frac_zero_std"]
        gen_whole = [_per_run_shares(r, span)[0] for _, r in gen.groupby("seed")]
        row = dict(zip(keys, key, strict=True))
        lo = hi = float("nan")
        if len(whole) > 1:
            lo, hi = intervals.mean_interval(whole, 0.95)
        finite = np.isfinite(quarters)  # a quarter with no interval ending in it (a coarse grid): "-"
        q_sums, q_counts = np.where(finite, quarters, 0.0).sum(axis=0), finite.sum(axis=0)
        q_means = [float(t / c) if c else float("nan") for t, c in zip(q_sums, q_counts, strict=True)]
        row.update(
            seeds=len(whole), steps=int(span), kept_zero_share=float(whole.mean()), kept_zero_ci_low=lo,
            kept_zero_ci_high=hi, generated_zero_share=float(np.mean(gen_whole)) if gen_whole else float("nan"),
            **{f"kept_zero_q{q + 1}": float(v) for q, v in enumerate(q_means)},
        )  # fmt: skip
        out.append(row)
    return pd.DataFrame(out, columns=COLUMNS)


def _pct(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{100 * x:.0f}%"


def write_signal_table(df: pd.DataFrame, stem: str | Path) -> list[Path]:
    """signal.csv and signal.md (a table per setting's arms, then how to read it)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv, md = stem.with_suffix(".csv"), stem.with_suffix(".md")
    df.to_csv(csv, index=False)
    lines = [
        "| setting | arm | rule / norm | role | seeds | steps | no-gradient steps [95% CI] | by quarter of the run "
        "| all n generated tied |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples(index=False):
        # a share lies in [0, 1]; the t-interval of a few seeds' shares can reach past either end
        lo, hi = max(r.kept_zero_ci_low, 0.0), min(r.kept_zero_ci_high, 1.0)
        ci = f" [{_pct(lo)}, {_pct(hi)}]" if np.isfinite(r.kept_zero_ci_low) else ""
        quarters = " / ".join(_pct(getattr(r, f"kept_zero_q{q + 1}")) for q in range(QUARTERS))
        lines.append(
            f"| {r.setting} | {selector_label({'arm': r.arm, 'n': r.n, 'm': r.m, 'grad_accum': r.grad_accum})} | {r.rule} / {r.normalize} | {r.role or '-'} | {r.seeds} | {r.steps} "
            f"| {_pct(r.kept_zero_share)}{ci} | {quarters} | {_pct(r.generated_zero_share)} |"
        )
    lines += [
        "",
        "No-gradient steps: the share of optimizer steps (for more than one prompt per step, of prompts) whose "
        "trained rollouts all got the same reward, so their advantages are zero and they move nothing "
        "(metrics.jsonl `kept_frac_zero_std`), mean over seeds; by quarter: the same over each quarter of the "
        "steps the arm's runs cover; all n generated tied: the same over every generated rollout "
        "(`frac_zero_std`: no down-sampling rule could have given those a gradient; equal to the first for GRPO, "
        "n = m). Interval: 95% Student t-interval over seeds of the per-seed shares (t with seeds - 1 degrees "
        "of freedom; none with one seed), an end beyond 0% or 100% printed at that bound (signal.csv keeps the "
        "interval as computed) (pods_repro/analysis/gradsignal.py).",
        "",
    ]
    md.write_text("\n".join(lines))
    return [csv, md]


# ----------------------------------------------------------------------------------------------
# the command: pods analysis signal


def add_arguments(p) -> None:
    p.add_argument(
        "--curves", required=True, help="a curves.csv written by collect (our runs; the released logs have none)"
    )
    p.add_argument("--out-dir", required=True, help="where signal.csv and signal.md are written")


def run(args) -> int:
    out = command.check_out_dir(args.out_dir)
    table = signal_table(command.read_until(args), args.n_boot, args.boot_seed)
    return command.report(out, "signal", write_signal_table(table, out / "signal"))
