"""Shared plumbing of the figure scripts: arguments, style, curve/bar panels, placeholders, saving.

The scripts `figures/fig_*.py` select runs and call these helpers; every statistic (mean over
seeds, SEM band, seconds per step) comes from `pods_repro.analysis`. A panel whose runs are absent
shows a placeholder naming them instead of failing, so partial workflows still give a report.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # scripts run as `python figures/fig_x.py` from any directory
    sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.rc_file(Path(__file__).with_name("matplotlibrc"))
import matplotlib.pyplot as plt  # noqa: E402

from pods_repro import registry as R  # noqa: E402
from pods_repro.analysis import curves as C  # noqa: E402
from pods_repro.analysis import speedups as S  # noqa: E402
from pods_repro.analysis import tidy as T  # noqa: E402

ARM_LABEL = {
    "grpo": "GRPO",
    "grpo_ga": "GRPO-GA",
    "pods": "GRPO-PODS",
    "pods_before": "Before",
    "pods_max_reward": "Max-reward",
    "pods_random": "Random",
    "pods_percentile": "Percentile",
}
# The paper's colours (scripts/plot.py, softened tol palette): GRPO red, PODS blue.
ARM_COLOR = {
    "grpo": "#CF4D58",
    "grpo_ga": "#CF4D58",
    "pods": "#5894DB",
    "pods_max_reward": "#4CC388",
    "pods_random": "#F39458",
    "pods_percentile": "#C37AB7",
    "pods_before": "#F39458",
}
DATASET_LABEL = {
    "gsm8k": "GSM8K",
    "gsm8k_platinum": "GSM8K Platinum",
    "math": "MATH-500",
    "train": "training rollouts",
    # the tiny analogues (pods_repro.registry TRANSFER_ANALOGUES for Fig. 7)
    "arith": "2-digit arithmetic test",
    "arith_heldout": "held-out 2-digit arithmetic (GSM8K Platinum analogue)",
    "arith_hard": "3-digit arithmetic (MATH-500 analogue)",
    "arith_mc": "arithmetic multiple-choice test",
}
PALETTE = ["#CF4D58", "#F39458", "#5894DB", "#4CC388", "#C37AB7", "#8C8C8C"]


def parser(doc: str, bench: bool = False) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=doc.strip().splitlines()[0])
    if bench:
        ap.add_argument("--bench", required=True, help="benchmark CSV (pods bench)")
    else:
        ap.add_argument("--curves", required=True, help="curves.csv from pods_repro.analysis")
        ap.add_argument("--steps", help="steps.csv from pods_repro.analysis (s/step bars)")
        ap.add_argument(
            "--x",
            choices=("time", "steps"),
            default="time",
            help="x axis of the curves: training time (the paper's, wall-clock budgets) or optimizer steps "
            "(step budgets, the tiny scale: the same figure whatever the machine's load)",
        )
    ap.add_argument("--out", required=True, help="PATH.pdf; PATH.png is written beside it")
    return ap


XAXIS = "time"  # set by load(): "time" or "steps"


def load(args) -> tuple:
    """(curves or None, steps or None): a missing file gives None and a placeholder later."""
    global XAXIS
    XAXIS = getattr(args, "x", "time")
    curves = T.read_curves(args.curves) if Path(args.curves).exists() else None
    return curves, T.read_steps(getattr(args, "steps", None))


def placeholder(ax, text: str) -> None:
    ax.text(
        0.5,
        0.5,
        "\n".join(textwrap.wrap(text, 48)),
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=8,
        color="0.35",
    )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)


def title(df, setting: str) -> str:
    names = df.loc[df["setting"] == setting, "setting_name"].unique() if df is not None else []
    name = str(names[0]) if len(names) else ""
    return R.setting_title(setting, name)  # the setting record's title (paper or tiny analogue)


def cut_text(end: float, scale: float, unit: str, xcol: str) -> str:
    """Where Figs. 4-6 cut their curves, for the x label: a step count whole, a time to 3 significant
    digits in its unit (a measured time such as 67.2167 s reads 67.2 seconds)."""
    if xcol == "time_s":
        return f"{end / scale:.3g} {unit}"
    return f"{end:g}"


def curve_panel(ax, df, setting, groups, dataset=None, metric="accuracy", common_range=False) -> None:
    """Mean +- 1.96 SEM curves of `groups` = [(label, selector dict, colour)] in one setting.

    common_range: draw every curve only up to the shortest one's last point, so that arms with different
    budgets are compared over the same span (the tiny scale trains its sweeps and ablations 200 steps,
    the main arms they share 600: uncut, the ablations would fill a third of the axis); the x label says
    where the curves were cut. No effect where every arm ran as long (the paper scale)."""
    if df is None:
        return placeholder(ax, "no curves table: run `python -m pods_repro.analysis collect` first")
    dataset = dataset or C.primary_dataset(df, setting)
    curves, missing = [], []
    for label, sel, color in groups:
        rows = T.select(df, setting=setting, dataset=dataset, metric=metric, **sel)
        (curves.append((label, C.mean_curve(rows), color)) if len(rows) else missing.append(label))
    if not curves:
        what = ", ".join(missing) or "any arm"
        return placeholder(ax, f"({setting}) no runs for {what} on {dataset} / {metric}")
    if XAXIS == "steps":
        xcol, unit, scale, xlabel = "step", "", 1.0, "optimizer steps"
    else:
        unit, scale = T.time_unit(max(c["time_s"].max() for _, c, _ in curves))
        xcol, xlabel = "time_s", f"training time ({unit})"
    if common_range:
        end = min(c[xcol].max() for _, c, _ in curves)
        if any(c[xcol].max() > end for _, c, _ in curves):
            curves = [(label, c[c[xcol] <= end], color) for label, c, color in curves]
            xlabel += f" (all arms cut at {cut_text(end, scale, unit, xcol)}, the shortest arm's last evaluation)"
    pct = 100.0 if metric != "completion_len_mean" else 1.0
    for label, c, color in curves:
        ax.plot(c[xcol] / scale, c["mean"] * pct, marker="o", color=color, label=label)
        top = 100.0 if pct == 100 else None  # an accuracy band cannot leave [0, 100] %
        ax.fill_between(
            c[xcol] / scale, (c["lo"] * pct).clip(0, top), (c["hi"] * pct).clip(0, top), color=color, alpha=0.25
        )
    if pct == 1.0:
        # Lengths: the whole range from 0 tokens, so that a drift of one token reads as one token.
        top = max(c["hi"].max() for _, c, _ in curves)
        ax.set_ylim(0, max(top, 1.0) * 1.08)
    else:
        later = [c[c["time_s"] > 0] for _, c, _ in curves]
        later = [x for x in later if len(x)] or [c for _, c, _ in curves]
        lo, hi = min(x["lo"].min() for x in later) * pct, max(x["hi"].max() for x in later) * pct
        if hi > lo:  # like the paper: the y-range follows t > 0, the base-model point may sit below
            ax.set_ylim(lo - 0.03 * (hi - lo), hi + 0.03 * (hi - lo))
    ax.set_xlim(0, None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (%)" if pct == 100 else "completion length (tokens)")
    ax.legend(title=", ".join(missing) + " missing" if missing else None)


def bar_panel(ax, steps, setting, groups) -> None:
    """Seconds per (global) step of `groups`, from steps.csv via pods_repro.analysis.speedups.seconds_per_step."""
    if steps is None:
        return placeholder(ax, "no steps.csv: seconds per step unavailable")
    sps = S.seconds_per_step(steps[steps["setting"] == setting])
    bars = [(lab, T.select(sps, **sel), col) for lab, sel, col in groups]
    bars = [(lab, s["seconds_per_step"].iloc[0], col) for lab, s, col in bars if len(s)]
    if not bars:
        return placeholder(ax, f"({setting}) no step counts")
    ax.bar(range(len(bars)), [b[1] for b in bars], color=[b[2] for b in bars])
    ax.set_xticks(range(len(bars)), [b[0] for b in bars], rotation=30, ha="right")
    ax.set_ylabel("seconds per (global) step")
    ax.grid(axis="x", visible=False)


def main_groups(df, setting) -> list:
    """[(label, selector, colour)] of a setting's baseline and PODS arms (pods_repro.analysis)."""
    sel = S.main_comparison(df, setting) if df is not None else None
    if sel is None:
        return []
    return [(ARM_LABEL[s["arm"]], s, ARM_COLOR[s["arm"]]) for s in sel]


def save(fig, out: str | Path) -> None:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out.with_suffix(".pdf"))
    fig.savefig(out.with_suffix(".png"))
    plt.close(fig)
    print(f"wrote {out.with_suffix('.pdf')} and {out.with_suffix('.png')}")
