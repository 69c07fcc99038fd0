"""What the n and m sweeps and the rule and normalisation ablations show (Figs. 4-6), as numbers.

Figs. 4-6 draw the ablation arms of a setting as curves with bands; this table says what the curves
show, beside what the authors' released logs show for the same arms, so that "agrees with the paper"
is a computed reading, not a glance at two plots.

The arms of a setting (its GRPO-PODS arm, the run sheet's `role` pods, with n0 / m0, is the reference):
- n sweep: max-variance, normalised after, m = m0, every n (n = m is GRPO);
- m sweep: max-variance, normalised after, n = n0, every m;
- rule: n0 / m0, normalised after, every down-sampling rule;
- normalisation: n0 / m0, max-variance, advantages normalised before / after down-sampling.
A group with one arm is left out.

Per arm, on the setting's primary test set and metric:
- the span: the position (optimizer step or training seconds) of the last evaluation that every arm
  of the setting reaches, so that no arm is judged on a longer run than another (Fig. 4 cuts its
  curves the same way);
- the window: the evaluations after t = 0 whose position lies in the last `window` share of the span
  (default the second half); per seed, the mean of its evaluations in the window;
- `mean`: the mean of those seed means; `start`: the mean at t = 0;
- `diff`: `mean` minus the reference arm's, in points of the metric x 100 in the Markdown;
- intervals, over seeds: the arm's mean, the Student t-interval of its per-seed window means; the
  difference, the Welch t-interval of the arm's per-seed window means minus the reference arm's
  (pods_repro.analysis.intervals.mean_diff_interval: each arm's own spread, Welch-Satterthwaite degrees of
  freedom). In simulation it held 93-96% at 3-64 seeds per arm, where the percentile bootstrap of the
  same difference covered 80% at 3 seeds and 87-89% at 5-8;
- `reading`: "above" / "below" where the difference's interval excludes 0, "level" where it does
  not, "-" where an arm has one seed (no interval).

Our tiny runs are read per optimizer step (their x-axis; seconds depend on the machine). The
released logs are read both ways: per hour, as the paper's figures plot them, and per optimizer
step (each checkpoint's step count), which is the tiny scale's axis. The two differ where an arm's
step costs more: the paper's n sweep peaks at n = 64 per hour because a step of n = 256 takes
2.8x as long (the released logs' seconds per step). `agreement` compares our reading with the released logs' per-step
reading: "agrees" (both above or both below), "level in both" (neither interval excludes 0: no evidence
either way where ours is wide), "not resolved here" (the paper's arms differ, ours are level),
"here only" (ours differ, the paper's are level) or "disagrees" (opposite directions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pods_repro import registry
from pods_repro.analysis import command, intervals
from pods_repro.analysis.curves import fmt_cell, primary_dataset
from pods_repro.analysis.speedups import main_comparison
from pods_repro.analysis.tidy import AnalysisInputError, arm_label, check_grids, read_curves, select

GROUPS = ("n sweep", "m sweep", "rule", "normalisation")
RULE_ORDER = ("max_variance", "max_reward", "random", "percentile")
# What the paper says of each group (arXiv 2504.13818, §4.2-4.3 and Figs. 4-6, App. A.3): its figures are per hour.
PAPER_SAYS = {
    "n sweep": "per hour, best around n = 64, worse beyond 128 (larger n makes a step slower)",
    "m sweep": "robust; worse only at small m (<= 4), most at m = 2",
    "rule": "max-variance best; random and percentile ~1 point below; max-reward collapses (60-67%)",
    "normalisation": "after beats before: before falls to ~52% at 1-2 h, recovers to 78-80% by 6 h",
}
COLUMNS = [
    "setting", "source", "axis", "group", "arm", "n", "m", "rule", "normalize", "reference", "n_seeds",
    "span", "window_from", "n_evals", "start", "mean", "ci_low", "ci_high", "diff", "diff_low", "diff_high",
    "reading",
]  # fmt: skip


def ablation_groups(df: pd.DataFrame, setting: str) -> tuple[dict, list[tuple[str, dict]]]:
    """(reference selector, [(group, arm selector), ...]) of a setting's ablation arms; ({}, []) when the
    setting has no GRPO-PODS arm (no `role` pods rows) or no group with an arm beyond the main comparison
    (GRPO and GRPO-PODS alone are Fig. 3, not an n sweep)."""
    main = main_comparison(df, setting)
    if main is None:
        return {}, []
    n0, m0 = main[1]["n"], main[1]["m"]
    ref = {"n": n0, "m": m0, "rule": "max_variance", "normalize": "after"}
    mains = [ref, {"n": main[0]["n"], "m": main[0]["m"], "rule": "max_variance", "normalize": "after"}]
    sub = select(df, setting=setting, grad_accum=1)
    configs = sub[["n", "m", "rule", "normalize"]].drop_duplicates()
    cfgs = [
        {"n": int(r.n), "m": int(r.m), "rule": str(r.rule), "normalize": str(r.normalize)}
        for r in configs.itertuples(index=False)
    ]
    groups: list[tuple[str, dict]] = []
    for group, keep, order in [
        ("n sweep", lambda c: c["rule"] == "max_variance" and c["normalize"] == "after" and c["m"] == m0,
         lambda c: c["n"]),
        ("m sweep", lambda c: c["rule"] == "max_variance" and c["normalize"] == "after" and c["n"] == n0,
         lambda c: -c["m"]),
        ("rule", lambda c: c["n"] == n0 and c["m"] == m0 and c["normalize"] == "after",
         lambda c: (RULE_ORDER.index(c["rule"]) if c["rule"] in RULE_ORDER else len(RULE_ORDER), c["rule"])),
        ("normalisation", lambda c: c["n"] == n0 and c["m"] == m0 and c["rule"] == "max_variance",
         lambda c: c["normalize"] != "after"),
    ]:  # fmt: skip
        members = sorted((c for c in cfgs if keep(c)), key=order)
        if any(c not in mains for c in members) and len(members) >= 2:  # not the main comparison alone
            groups += [(group, c) for c in members]
    return ref, groups


def _seed_windows(runs: pd.DataFrame, axis: str, lo: float, hi: float) -> pd.DataFrame:
    """Per seed: the mean (`mean`) and number (`size`) of its evaluations with `axis` in [lo, hi] (t = 0
    excluded)."""
    inside = runs[(runs["time_s"] > 0) & runs[axis].between(lo, hi) & runs["value"].notna()]
    return inside.groupby("seed")["value"].agg(["mean", "size"])


def _reading(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return "-"
    return "above" if low > 0 else "below" if high < 0 else "level"


def ablation_rows(
    df: pd.DataFrame,
    setting: str,
    axis: str = "step",
    window: float = 0.5,
    metric: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    source: str = "ours",
) -> list[dict]:
    """One row per ablation arm of `setting` (see the module docstring); [] when it has none. The intervals
    are t-intervals, which draw nothing: `n_boot` and `seed` are accepted so that every table of the
    command line takes the same arguments, and change nothing here."""
    if not 0 < window <= 1:
        raise AnalysisInputError(f"window={window}: the share of the span to average over must be in (0, 1]")
    ref, groups = ablation_groups(df, setting)
    if not groups:
        return []
    dataset = primary_dataset(df, setting)
    metric = metric or registry.setting_metric(setting)
    base = select(df, setting=setting, grad_accum=1, dataset=dataset, metric=metric)
    if base.empty:
        raise AnalysisInputError(f"setting {setting}: no {metric!r} rows on its primary test set {dataset!r}")
    if base.loc[base["time_s"] > 0, axis].isna().any():
        raise AnalysisInputError(
            f"setting {setting}: some evaluations carry no {axis!r}; read it along 'time_s' instead"
        )
    runs_of = {}
    for _, sel in groups:
        runs = select(base, **sel)
        runs_of[tuple(sel.values())] = runs[runs[axis].notna()]
    # The span: the last position every arm reaches (each arm's own last evaluation, the shortest seed's).
    span = min(float(r[r["time_s"] > 0].groupby("seed")[axis].max().min()) for r in runs_of.values())
    lo = span * (1 - window)
    ref_key = tuple(ref.values())
    windows = {k: _seed_windows(r, axis, lo, span) for k, r in runs_of.items()}
    means = {k: w["mean"] for k, w in windows.items()}
    if ref_key not in means or means[ref_key].empty:
        raise AnalysisInputError(
            f"setting {setting}: the reference arm n={ref['n']} m={ref['m']} has no evaluation in "
            f"{axis} {lo:g}-{span:g}"
        )
    rows = []
    for group, sel in groups:
        key = tuple(sel.values())
        per_seed, runs = means[key], runs_of[key]
        n_seeds = len(per_seed)
        mean = float(per_seed.mean()) if n_seeds else math.nan
        start_rows = runs[runs["time_s"] == 0]["value"]
        ci = intervals.mean_interval(per_seed.to_numpy(float)) if n_seeds >= 2 else (math.nan, math.nan)
        diff = mean - float(means[ref_key].mean())
        if key == ref_key:
            d_ci = (0.0, 0.0) if n_seeds >= 2 else (math.nan, math.nan)
        elif n_seeds >= 2 and len(means[ref_key]) >= 2:
            d_ci = intervals.mean_diff_interval(per_seed.to_numpy(float), means[ref_key].to_numpy(float))
        else:
            d_ci = (math.nan, math.nan)
        n_evals = int(windows[key]["size"].mean()) if n_seeds else 0  # 0: no evaluation in the window
        rows.append(
            {
                "setting": setting, "source": source, "axis": axis, "group": group,
                "arm": f"{arm_label(sel['n'], sel['m'], sel['rule'], sel['normalize'])} {sel['n']}/{sel['m']}",
                **sel, "reference": key == ref_key, "n_seeds": n_seeds, "span": span, "window_from": lo,
                "n_evals": n_evals, "start": float(start_rows.mean()) if len(start_rows) else math.nan,
                "mean": mean, "ci_low": ci[0], "ci_high": ci[1], "diff": diff, "diff_low": d_ci[0],
                "diff_high": d_ci[1], "reading": "reference" if key == ref_key else _reading(*d_ci),
            }
        )  # fmt: skip
    return rows


def ablation_table(
    ours: pd.DataFrame | None,
    released: pd.DataFrame | None = None,
    settings: Sequence[str] | None = None,
    window: float = 0.5,
    metric: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Rows of every setting with ablation arms: ours per step; the released logs per hour and per step
    (`n_boot`, `seed`: as `ablation_rows`, unused)."""
    rows: list[dict] = []
    for df, source, axes in [(ours, "ours", ("step",)), (released, "released", ("time_s", "step"))]:
        if df is None:
            continue
        letters = sorted(df["setting"].astype(str).unique(), key=lambda s: (len(s) != 1, s))
        for s in letters:
            if settings and s not in settings:
                continue
            for axis in axes:
                rows += ablation_rows(df, s, axis, window, metric, n_boot, seed, source)
    return pd.DataFrame(rows, columns=COLUMNS)


def _agreement(ours: str, paper: str) -> str:
    if "-" in (ours, paper) or not paper:
        return "-"
    if ours == "reference":
        return ""
    if ours == paper:
        return "level in both" if ours == "level" else "agrees"
    if ours == "level":
        return "not resolved here"
    if paper == "level":
        return "here only"
    return "disagrees"


def _pts(row, col: str) -> str:
    x = float(row[col])
    return "-" if math.isnan(x) else f"{100 * x:+.1f}" if col.startswith("diff") else f"{100 * x:.1f}"


def _cell(row) -> str:
    """'mean [lo, hi]' in percent, then the difference to the reference with its interval."""
    mean = f"{_pts(row, 'mean')}" + (f" [{_pts(row, 'ci_low')}, {_pts(row, 'ci_high')}]" if row["n_seeds"] >= 2 else "")
    if row["reference"]:
        return f"{mean}; reference"
    diff = _pts(row, "diff")
    if row["n_seeds"] >= 2 and not math.isnan(float(row["diff_low"])):
        diff += f" [{_pts(row, 'diff_low')}, {_pts(row, 'diff_high')}]"
    return f"{mean}; {diff}"


def _axis_text(rows: pd.DataFrame) -> str:
    r = rows.iloc[0]
    if r["axis"] == "time_s":
        return f"hours {fmt_cell(r['window_from'] / 3600, 1)}-{fmt_cell(r['span'] / 3600, 1)}"
    return f"steps {fmt_cell(r['window_from'], 0)}-{fmt_cell(r['span'], 0)}"


def write_ablation_table(df: pd.DataFrame, stem: str | Path) -> list[Path]:
    """`stem`.csv (every row) and `stem`.md (per setting: ours beside the released logs, with the reading)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".csv"), stem.with_suffix(".md")]
    df.to_csv(paths[0], index=False)
    md: list[str] = []
    ours = df[df["source"] == "ours"]
    rel = df[df["source"] == "released"]
    for s in list(dict.fromkeys(ours["setting"])) or list(dict.fromkeys(rel["setting"])):
        mine = ours[ours["setting"] == s]
        per_hour = rel[(rel["setting"] == s) & (rel["axis"] == "time_s")]
        per_step = rel[(rel["setting"] == s) & (rel["axis"] == "step")]
        lead = mine if len(mine) else per_hour
        head = ["group", "arm"]
        if len(mine):
            head.append(
                f"here: seeds, start, mean over {_axis_text(mine)} [95% t]; minus reference [95% Welch t] (points)"
            )
        if len(per_hour):
            head += [
                f"released logs: runs, mean over {_axis_text(per_hour)}; minus reference",
                f"released logs per step: mean over {_axis_text(per_step)}; minus reference",
            ]
        head += ["the paper says", "agreement (here vs released, per step)"] if len(mine) else ["the paper says"]
        md += [f"**Setting ({s})**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for group in GROUPS:
            for i, (_, r) in enumerate(lead[lead["group"] == group].iterrows()):
                cells = [group, r["arm"]]
                match = {k: r[k] for k in ("n", "m", "rule", "normalize")}
                hour, step = select(per_hour, **match), select(per_step, **match)
                if len(mine):
                    cells.append(f"{int(r['n_seeds'])}, {_pts(r, 'start')}, {_cell(r)}")
                if len(per_hour):
                    cells.append(f"{int(hour.iloc[0]['n_seeds'])}, {_cell(hour.iloc[0])}" if len(hour) else "no logs")
                    cells.append(_cell(step.iloc[0]) if len(step) else "no logs")
                cells.append(PAPER_SAYS[group] if i == 0 else "")
                if len(mine):
                    paper = step.iloc[0]["reading"] if len(step) else ""
                    cells.append(_agreement(r["reading"], paper) if paper else "no released logs")
                md.append("| " + " | ".join(str(c) for c in cells) + " |")
        md.append("")
    if not md:
        md = ["No setting has ablation arms (n or m sweeps, rules, normalisation) beside its GRPO-PODS arm.", ""]
    md.append(
        "Each arm's mean over seeds of its per-seed mean accuracy in the window (the last half of the span "
        "every arm of the setting reaches; t = 0 excluded), in percent; 'minus reference': the arm's mean minus "
        "GRPO-PODS n0/m0's (max-variance, normalised after), in points. Intervals over seeds, on the per-seed "
        "window means: the mean's, a 95% Student t-interval; the difference's, a 95% Welch t-interval (each "
        "arm's own spread, Welch-Satterthwaite degrees of freedom); '-' where an arm has one seed. Here: per "
        "optimizer step. Released logs: per hour, as the paper's figures, and per optimizer step. 'agreement' "
        "compares the sign of the difference where its interval excludes 0 ('level' otherwise), here against "
        "the released logs per step; rows with no released logs (percentile, normalise before) keep only the "
        "paper's text. pods_repro/analysis/ablations.py."
    )
    paths[1].write_text("\n".join(md) + "\n")
    return paths


# ----------------------------------------------------------------------------------------------
# the command: pods analysis ablations

window_type = command.option_type(
    float,
    lambda x: 0 < x <= 1,
    "{text}: the window is a share of the span, in (0, 1], e.g. 0.5",
    "{text!r} is not a number: pass a share in (0, 1], e.g. 0.5",
)


def add_arguments(p) -> None:
    p.add_argument("--curves", help="a curves.csv written by collect (our runs, read per optimizer step)")
    p.add_argument("--released", help="a curves.csv written by released (the authors' logs, per hour and per step)")
    p.add_argument("--out-dir", required=True, help="where ablations.csv and ablations.md are written")
    p.add_argument("--setting", nargs="+", help="only these settings (letters)")
    p.add_argument(
        "--window", type=window_type, default=0.5,
        help="average each seed over this last share of the span every arm reaches (default 0.5)",
    )  # fmt: skip
    p.add_argument("--metric", help=command.METRIC_HELP)


def run(args) -> int:
    out = command.check_out_dir(args.out_dir)
    if not (args.curves or args.released):
        raise AnalysisInputError("pass --curves (our runs), --released (the authors' logs) or both")
    ours = command.read_until(args) if args.curves else None
    theirs = read_curves(args.released) if args.released else None
    if theirs is not None:
        check_grids(theirs, args.released)
    command.check_settings(args.setting, ours, theirs, source=" and ".join(filter(None, (args.curves, args.released))))
    table = ablation_table(ours, theirs, args.setting, args.window, args.metric, args.n_boot, args.boot_seed)
    return command.report(out, "ablations", write_ablation_table(table, out / "ablations"))
