"""What the results page's modules share: the records and computed tables they read, and the formatting.

:mod:`pods_repro.analysis.results` loads the records and computes the tables; :mod:`pods_repro.analysis.headline` (the
README's first screen) and :mod:`pods_repro.analysis.sections` (docs/results.md) turn them into Markdown. All three
import this module and none imports another back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pods_repro import registry
from pods_repro.analysis import verdicts
from pods_repro.analysis.speedups import released_comparisons

BUDGETS = (300, 450, 600)  # (a)'s main comparison read as if its budget had ended there
BOOT_SEED = 0
MAIN_JOB = "bash scripts/install.sh && .venv/bin/snakemake -c2 --config released_logs=DIR"
RECORD_CMD = "pods analysis record --root results --wall-s SECONDS"
RELEASED_CMD = "pods analysis released --logs DIR --sheet config/runs.tsv --out-dir results/released"
# The paper's Fig. 3(e)/(f) seconds-per-step bars (GRPO-GA, PODS), which divide the training time by wandb's
# `_step` / GA (docs/paper.md#seconds-per-step): the paper's own step ratio, beside the optimizer-step one.
PAPER_BARS_SPS = {"e": (21.85, 10.09), "f": (39.82, 9.50)}


NOT_RECORDED = (
    "The tiny default job (every figure and table of the tiny scale, (a) on 64 seeds per arm) is not recorded "
    f"in this version: run `{MAIN_JOB}`, then `{RECORD_CMD}` fills its columns."
)


# ----------------------------------------------------------------------------------------------
# the records and the tables


@dataclass
class Records:
    """The committed data the page is computed from."""

    data: Path
    tiny_curves: pd.DataFrame | None  # None: the tiny default job is not recorded (the page says so)
    tiny_steps: pd.DataFrame | None
    released_curves: pd.DataFrame
    released_steps: pd.DataFrame | None
    jobs: list[dict] | None
    job: dict | None
    gpu_index: pd.DataFrame
    gpu_curves: pd.DataFrame | None
    gpu_steps: pd.DataFrame | None
    tiny_status: dict[str, tuple[int, int]] | None = None  # setting -> (runs recorded, runs of the default job)


@dataclass
class Tables:
    released: pd.DataFrame
    tiny: pd.DataFrame | None  # None: no tiny record
    budgets: dict[int, pd.DataFrame]
    tiny_levels: dict[int, pd.DataFrame]
    released_levels: pd.DataFrame
    ablations: pd.DataFrame
    gpu: pd.DataFrame | None
    tiny_means: pd.DataFrame = field(default_factory=pd.DataFrame)  # pods_repro.analysis.seed_bias.mean_differences
    subsample: pd.DataFrame = field(default_factory=pd.DataFrame)  # seed_bias.subsample_speedups of (a)
    crossing: dict | None = None  # seed_bias.interpolated_crossing of (a)
    answer_only: pd.DataFrame | None = None  # the released (b) on answer accuracy alone


# ----------------------------------------------------------------------------------------------
# formatting


def num(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "never"
    return f"{x:.{digits}f}"


def ci_text(row: pd.Series, point: str, prefix: str | None = None, digits: int = 2, never: bool = True) -> str:
    """'1.82 [1.45, 2.22]', '1.82 [0.00, 2.22], never 3%', '1.00 (n/a: 3 seeds)' for a speed-up column and its
    `{prefix}_ci_low/high` interval (`prefix` "": the eval-grid columns `ci_low/high`)."""
    prefix = point if prefix is None else prefix
    lo_col, hi_col = (f"{prefix}_ci_low", f"{prefix}_ci_high") if prefix else ("ci_low", "ci_high")
    value = float(row[point])
    reached = float(row.get("t_pods_s", 0)) < math.inf
    text = num(value, digits) if reached else "never"
    lo, hi = float(row.get(lo_col, math.nan)), float(row.get(hi_col, math.nan))
    n = int(min(row.get("n_seeds_baseline", 0), row.get("n_seeds_pods", 0)))
    if math.isnan(lo):
        text += f" (n/a: {n} seed{'s' if n != 1 else ''})"
    else:
        text += f" [{num(lo, digits)}, {num(hi, digits)}]"
        p = float(row.get("p_pods_never", math.nan))
        if never and not math.isnan(p) and p > 0:
            text += f", never {p:.0%}"
    return text


def lcell(row: pd.Series) -> str:
    """A levels-table row: '1.74 [1.10, 2.19]'."""
    text = num(float(row["speedup"]))
    if not math.isnan(float(row["ci_low"])):
        text += f" [{num(float(row['ci_low']))}, {num(float(row['ci_high']))}]"
        p = float(row.get("p_pods_never", math.nan))
        if not math.isnan(p) and p > 0:
            text += f", never {p:.0%}"
    return text


def md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def side(row: pd.Series, value: float, prefix: str) -> str:
    """Where an interval lies against `value`: 'above', 'below' or 'includes'."""
    lo, hi = float(row.get(f"{prefix}_ci_low", math.nan)), float(row.get(f"{prefix}_ci_high", math.nan))
    if math.isnan(lo):
        return "no interval"
    return "above" if lo > value else "below" if hi < value else "includes"


def minutes(s: float) -> str:
    h, m = divmod(int(round(s / 60)), 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


def row_of(table: pd.DataFrame | None, setting: str) -> pd.Series | None:
    if table is None or table.empty:
        return None
    hit = table[table["setting"].astype(str) == setting]
    return hit.iloc[0] if len(hit) else None


def pooled(levels: pd.DataFrame, setting: str) -> pd.Series | None:
    hit = levels[(levels["setting"].astype(str) == setting) & (levels["kind"] == "pooled")]
    return hit.iloc[0] if len(hit) else None


def paper_per_step(rec: Records) -> dict[str, float]:
    """The per-step speed-up implied by Table 3 and the released seconds per step: Table 3 x s/step(PODS) /
    s/step(baseline) (a PODS step that costs more must be worth more steps to reach the target as soon)."""
    out = {}
    steps = rec.released_steps
    for c in released_comparisons():
        sub = steps[steps["setting"].astype(str) == c.setting]
        arms = [sub[sub["role"] == role] for role in registry.ROLES]
        if all(len(a) for a in arms) and c.paper:
            sps = [float(a["time_s"].mean() / a["steps"].mean()) for a in arms]
            out[c.setting] = c.paper * sps[1] / sps[0]
    return out


def tiny_missing(rec: Records, letter: str) -> str:
    """The tiny cell of a setting without a result: not recorded, partly recorded, or not a tiny comparison."""
    status = (rec.tiny_status or {}).get(letter)
    if rec.tiny_status is None:
        return "not recorded"
    if status is not None and status[0] < status[1]:
        return f"{status[0]} of {status[1]} runs recorded"
    return "-"


def partial_text(rec: Records) -> str:
    """What a partly recorded job lacks and how to finish it ('' when every run is recorded)."""
    status = rec.tiny_status or {}
    short = {k: v for k, v in status.items() if v[0] < v[1]}
    if not short:
        return ""
    have, want = sum(v[0] for v in status.values()), sum(v[1] for v in status.values())
    sittings = len((rec.job or {}).get("sittings", []))
    return (
        f"The tiny default job is recorded in part: {have} of its {want} runs, in {sittings} sitting"
        f"{'s' if sittings != 1 else ''} (the settings with every run recorded have their columns filled). "
        "Another sitting trains the rest: `.venv/bin/snakemake -c2 $(pods analysis record --missing)`, then "
        f"`{RECORD_CMD}`."
    )


def letters(items: Sequence[str]) -> str:
    return ", ".join(f"({x})" for x in items) if items else "none"


def by_verdict(table: pd.DataFrame | None, prefix: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for _, r in (table if table is not None else pd.DataFrame()).iterrows():
        v = verdicts.speedup(float(r.get(f"{prefix}_ci_low", math.nan)), float(r.get(f"{prefix}_ci_high", math.nan)))
        out.setdefault(v, []).append(str(r["setting"]))
    return out


def verdict_list(groups: dict[str, list[str]]) -> str:
    order = ("faster", "not resolved", "slower", "no interval")
    return "; ".join(f"{v} in {letters(groups[v])}" for v in order if groups.get(v))


def speedup_verdict(r: pd.Series, prefix: str) -> str:
    return verdicts.speedup(float(r.get(f"{prefix}_ci_low", math.nan)), float(r.get(f"{prefix}_ci_high", math.nan)))
