"""Has an arm's mean curve stopped rising? The plateau statistics of the speed-up table and `plateau_table`.

Where the mean curve peaks within its run (`baseline_plateau`, PLATEAU_SHARE), how sure that verdict is
over bootstrap resamples of the seeds (`baseline_plateau_share`: a share of resamples, not an interval),
how far the late part beats the best before it (`baseline_late_gain`, with its jackknife t-interval over
seeds) and the rise of the second half (`baseline_trend`, with its Student t-interval over the seeds'
own rises); `plateau_table` / `write_plateau_table` (`pods analysis plateau`) give them for every arm, and
pods_repro.analysis.speedups adds them as the baseline's columns of Table 3. The intervals are the ones that
held their 95% at 3-64 seeds in simulation (pods_repro.analysis.intervals); at 3 seeds the percentile bootstrap
covered 77% for the late gain and about 80% for a mean over seeds such as the trend.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from pods_repro import registry
from pods_repro.analysis import command, intervals
from pods_repro.analysis.collect import collect_runs, parse_letters
from pods_repro.analysis.curves import (
    ArmMatrices,
    arm_matrices,
    as_series,
    bootstrap_means,
    fmt_cell,
    mean_curve,
    primary_dataset,
    selector_label,
)
from pods_repro.analysis.tidy import CONFIG_KEYS, AnalysisInputError, check_grids, read_curves, select

PLATEAU_SHARE = 0.8  # a baseline has plateaued if its peak lies before the last 20% of its run


def baseline_plateau(base_curve: pd.DataFrame, t_peak_s: float) -> dict:
    """Where the baseline's mean curve peaks within its run (the plateau criterion, PLATEAU_SHARE).

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
    the first evaluation of a tie). A share of resamples, not an interval: `seed` fixes them. Near 1
    or 0 the verdict stands; between, it is what noise placed: (a)'s tiny GRPO peaks at 1825 of 2000
    steps, and only 13% of its resamples peak before step 1600. NaN with one seed (a resample of one
    seed is that seed) or no evaluations.
    """
    arm = arm_matrices(runs)
    if arm.values_S_T.size == 0 or len(arm.seeds) < 2:
        return {"p_plateau_baseline": math.nan}
    pos_T = _positions(arm)
    means_B_T = _resampled_means(arm, n_boot, seed)
    peak_B = np.argmax(np.where(np.isnan(means_B_T), -np.inf, means_B_T), axis=1)
    return {"p_plateau_baseline": float(np.mean(pos_T[peak_B] <= PLATEAU_SHARE * np.nanmax(pos_T)))}


def _positions(arm: ArmMatrices) -> np.ndarray:
    """Where each evaluation of an arm lies: its mean optimizer step over seeds where the rows have
    steps, else its grid time in seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no steps, use seconds
        pos_T = np.nanmean(arm.steps_S_T, axis=0)
    return pos_T if np.isfinite(pos_T).all() else arm.times_T


def _resampled_means(arm: ArmMatrices, n_boot: int, seed: int) -> np.ndarray:
    """The arm's mean curves (B x T) over `n_boot` resamples of its seeds, drawn from `seed`."""
    idx = np.random.default_rng(seed).integers(0, len(arm.seeds), (n_boot, len(arm.seeds)))
    return bootstrap_means(arm.values_S_T, idx)


def _mean_curve_T(arm: ArmMatrices) -> np.ndarray:
    """The arm's mean curve over all its seeds (an evaluation a seed lacks is left out of that point's mean)."""
    return bootstrap_means(arm.values_S_T, np.arange(len(arm.seeds))[None])[0]


def _nan_stat(name: str) -> dict:
    return {name: math.nan, f"{name}_ci_low": math.nan, f"{name}_ci_high": math.nan}


def _stat(name: str, point: float, low: float = math.nan, high: float = math.nan) -> dict:
    return {name: float(point), f"{name}_ci_low": float(low), f"{name}_ci_high": float(high)}


def baseline_late_gain(runs: pd.DataFrame, n_boot: int = 2000, seed: int = 0, ci: float = 0.95) -> dict:
    """How much the baseline's best mean evaluation in the last 20% of its run beats its best before.

    `baseline_plateau`'s argmax says *where* the peak lies; on a curve that is flat at the end it lands on
    whichever late evaluation noise lifted. This says whether the late part is *higher* beyond noise:
    late_gain_baseline = max(mean curve over the last 20% of the evaluations' positions, steps where
    the rows have them) - max(mean curve before), with its 95% jackknife t-interval over the baseline's
    seeds (`intervals.late_gain_interval`: the gain +- t_{S-1} x its leave-one-seed-out standard error;
    the percentile bootstrap of this maximum of a noisy curve covered 77% at 3 seeds in simulation, the
    jackknife t 95%). An interval above 0 means the late peak beats everything before it; one that
    includes 0 does not show a plateau by itself: a slowly rising curve whose earlier best was a lucky
    evaluation gives one too (the released logs' (b) GRPO, 10 seeds: +1.7 [-1.8, +5.2] points, while
    its second half rises +9.0 [+1.9, +16.1]; `baseline_trend` tells the two apart). The start (t = 0)
    is excluded, as in `time_to_peak`. NaN where the run has no evaluation on one side of the 80% mark;
    no interval with one seed. `n_boot` and `seed` draw nothing here (the jackknife has no resamples);
    they are accepted so that every baseline statistic takes the same arguments.
    """
    name = "late_gain_baseline"
    arm = arm_matrices(runs)
    if arm.values_S_T.size == 0:
        return _nan_stat(name)
    pos_T = _positions(arm)
    late_T = pos_T > PLATEAU_SHARE * np.nanmax(pos_T)
    if late_T.all() or not late_T.any():
        return _nan_stat(name)
    if len(arm.seeds) < 2:
        return _stat(name, intervals.late_gain_from_curves(_mean_curve_T(arm), pos_T, PLATEAU_SHARE))
    res = intervals.late_gain_interval(arm.values_S_T, pos_T, PLATEAU_SHARE, ci)
    return _stat(name, res["point"], res["low"], res["high"])


TREND_SHARE = 0.5  # baseline_trend fits the evaluations after this share of the run


def _rise(curves_T: np.ndarray, pos_T: np.ndarray, half_T: np.ndarray) -> np.ndarray:
    """The rise of a least-squares line through each curve's evaluations `half_T`, over their span."""
    x_H = pos_T[half_T] - pos_T[half_T].mean()
    y_H = curves_T[..., half_T]
    return (y_H - y_H.mean(axis=-1, keepdims=True)) @ x_H / (x_H @ x_H) * float(np.ptp(pos_T[half_T]))


def _trend_jackknife(values_S_T: np.ndarray, pos_T: np.ndarray, half_T: np.ndarray, ci: float) -> tuple:
    """(low, high) of the jackknife t-interval of the mean curve's rise: for seeds with every evaluation of
    the second half it is `intervals.trend_interval`'s Student t-interval (the rise is linear in the curve,
    and the jackknife standard error of a mean is s / sqrt(S)); where seeds miss evaluations, each
    leave-one-seed-out mean curve averages the seeds that have each one, as the table's mean curve does."""
    s = values_S_T.shape[0]
    point = _rise(intervals.weighted_curves(values_S_T[None], np.ones((1, 1, s)))[0, 0], pos_T, half_T)
    jack_S = _rise(intervals.weighted_curves(values_S_T[None], intervals.jackknife_weights(s)[None])[0], pos_T, half_T)
    low, high = intervals.jackknife_t_ends(np.array([point]), [jack_S[None]], ci, log=False)
    return float(low[0]), float(high[0])


def baseline_trend(runs: pd.DataFrame, n_boot: int = 2000, seed: int = 0, ci: float = 0.95) -> dict:
    """Is the baseline still rising in the second half of its run? The rise of a least-squares line
    through its mean curve at the evaluations after TREND_SHARE of the run (positions in optimizer
    steps where the rows have them, else seconds), over the span of those evaluations: trend_baseline,
    in the metric's units, with its 95% Student t-interval over the baseline's seeds
    (`intervals.trend_interval`: the line's rise is linear in the curve, so it is the mean of the
    seeds' own rises, and the interval is that mean's; where a seed misses an evaluation of the second
    half, the equivalent jackknife t-interval of the mean curve's rise).

    The argmax (`baseline_plateau`) and the late gain (`baseline_late_gain`) each read one or two
    evaluations of a noisy curve; the trend pools every evaluation of the second half. An interval
    above 0: still rising, whatever the argmax says (the released logs' (b) GRPO, 10 seeds: +9.0 [+1.9,
    +16.1] points); one that includes 0: level within the noise (the released (a) GRPO, whose curve
    peaks at 66% of its run, 10 seeds: -0.5 [-1.6, +0.7]). At 3 seeds the t quantile is 4.30: (a)'s
    tiny GRPO at 600 steps gives +4.0 [-3.9, +12.0], unresolved, though run on to 2000 steps it rose
    another ~2.3 points per 1000. NaN with fewer than
    three evaluations in the second half; no interval with one seed. `n_boot` and `seed` draw nothing
    here; they are accepted so that every baseline statistic takes the same arguments.
    """
    name = "trend_baseline"
    arm = arm_matrices(runs)
    if arm.values_S_T.size == 0:
        return _nan_stat(name)
    pos_T = _positions(arm)
    half_T = pos_T > TREND_SHARE * np.nanmax(pos_T)
    if half_T.sum() < 3:
        return _nan_stat(name)
    point = float(_rise(_mean_curve_T(arm), pos_T, half_T))
    if len(arm.seeds) < 2:
        return _stat(name, point)
    if np.isfinite(arm.values_S_T[:, half_T]).all():
        res = intervals.trend_interval(arm.values_S_T, pos_T, TREND_SHARE, ci)
        return _stat(name, res["point"], res["low"], res["high"])
    return _stat(name, point, *_trend_jackknife(arm.values_S_T, pos_T, half_T, ci))


def plateau_table(df: pd.DataFrame, metric: str | None = None, n_boot: int = 2000, boot_seed: int = 0) -> pd.DataFrame:
    """Has each arm's mean curve stopped rising? One row per curve of `df` (a tidy curves frame; every
    arm, with or without a sheet role) on its setting's primary test set and metric (`metric`
    overrides it): seeds, last evaluation, peak and where it lies (`baseline_plateau`), the share of
    seed resamples that peak before the last 20% (`baseline_plateau_share`), the late gain with its 95%
    jackknife t-interval and the second-half trend with its 95% Student t-interval over seeds. The
    statistics are the
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
            after = as_series(curve)  # t = 0 excluded, as in time_to_peak
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
                    "arm": selector_label(label),
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
            f"plateau (peak before {PLATEAU_SHARE:.0%})", "share of resamples", "late gain [95% jackknife t]",
            "2nd-half trend [95% t]"]  # fmt: skip
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in df.iterrows():
        late = points_text(r, "late_gain") if not math.isnan(float(r["late_gain"])) else "-"
        trend = points_text(r, "trend") if not math.isnan(float(r["trend"])) else "-"
        cells = [
            str(r["setting"]), str(r["arm"]), f"{r['rule']} / {r['normalize']}", str(r["role"] or "-"),
            str(r["n_seeds"]), f"{100 * r['peak']:.1f}%",
            f"{fmt_cell(float(r['peak_at']), 0)} of {fmt_cell(float(r['last_at']), 0)} ({float(r['peak_share']):.2f})",
            "yes" if r["plateau"] else "no", fmt_cell(float(r["p_plateau"]), 2), late, trend,
        ]  # fmt: skip
        md.append("| " + " | ".join(cells) + " |")
    md += ["", f"Each arm's mean curve over seeds on its setting's primary test set (t = 0 excluded). 'plateau': "
           f"its peak lies before the last {1 - PLATEAU_SHARE:.0%} of the run; 'share of resamples': the same "
           "verdict over bootstrap resamples of the arm's seeds (a share, not an interval; - with one seed); "
           f"'late gain': the best mean evaluation of the last {1 - PLATEAU_SHARE:.0%} minus the best before, "
           "with its 95% jackknife t-interval over seeds (leave one seed out, t with seeds - 1 degrees of "
           f"freedom); '2nd-half trend': the rise of a least-squares line through the mean curve after "
           f"{TREND_SHARE:.0%} of the run, over that part (above 0: still rising), with its 95% Student "
           "t-interval over seeds (the mean of the seeds' own rises). No interval with one seed."]  # fmt: skip
    paths[1].write_text("\n".join(md) + "\n")
    return paths


def points_text(row, name: str) -> str:
    """'+1.0 [-1.0, +2.9] pts': a fraction-valued statistic of the row in points, with its interval if any."""
    lo, hi = (float(row.get(f"{name}_ci_{e}", math.nan)) for e in ("low", "high"))
    ci = "" if math.isnan(lo) else f" [{100 * lo:+.1f}, {100 * hi:+.1f}]"
    return f"{100 * float(row[name]):+.1f}{ci} pts"


# ----------------------------------------------------------------------------------------------
# the command: pods analysis plateau


def add_arguments(p) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--curves", help=command.CURVES_HELP)
    which.add_argument("--run-dirs", nargs="+", metavar="DIR", help="run directories (one arm alone will do)")
    p.add_argument("--out-dir", required=True, help="where plateau.csv and plateau.md are written")
    p.add_argument("--metric", help=command.METRIC_HELP)
    p.add_argument("--sheet", help="with --run-dirs: run sheet whose `role` column names the arms' roles")
    p.add_argument("--letters", help="with --run-dirs: NAME=LETTER,... as for collect")


def run(args) -> int:
    out = command.check_out_dir(args.out_dir)
    if args.curves:
        curves = read_curves(args.curves)
    else:
        curves = collect_runs(None, parse_letters(args.letters), args.sheet, args.run_dirs)[0]
    curves = command.until(curves, args.until_step, args.curves or "the run directories")
    check_grids(curves, args.curves or "the run directories")
    plateau = plateau_table(curves, args.metric, args.n_boot, args.boot_seed)
    if plateau.empty:
        raise AnalysisInputError("no arm has an evaluation after t = 0: nothing to take a peak of")
    return command.report(out, "plateau", write_plateau_table(plateau, out / "plateau"))
