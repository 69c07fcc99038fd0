"""How many seeds would a steps-to-peak interval of a given width take? A projection from measured runs.

Speed-up (i) of the time-to-peak table (steps to 0.99 x the baseline's peak, pods_repro.analysis.speedups) has a
wide interval at the tiny scale's seeds; how many seeds per arm would make it at most 1.0 wide? Resampling
the measured seeds cannot say what more seeds would give: a resample of N > S seeds drawn from S keeps the
S-seed mean curve's wiggles, so near-ties at the target never average out. This module fits a model to
each arm instead and simulates experiments of N seeds from it, each seed

    curve = trend + (its own offset, sd sigma_seed) + (independent noise at each evaluation, sd sigma_eval)

- trend: a quadratic in log(step) fitted to the arm's measured mean curve (evaluations after step 0);
- sigma_seed: the spread of the seeds' mean residuals (a seed that is better throughout), and sigma_eval: the
  residual spread left at each evaluation (test-set sampling and the policy's step-to-step jitter);
- each simulated experiment then gets the interval the time-to-peak table prints for (i): the expanded
  percentile bootstrap over seeds, each arm's seeds resampled on their own (pods_repro.analysis.intervals.
  ratio_interval; a resample in which PODS never reaches the target counts as speed-up 0), and none below
  MIN_SEEDS_SPEEDUP seeds per arm, where no interval held 95% in simulation (those rows read n/a, with why).

Per N the table gives the median over the simulated experiments of the point, of each end and of the width
of that interval, the share of experiments whose point is "never" and whose lower end is 0. It is an
optimistic projection: the smooth trend removes any real wiggle of the mean curves, so at the measured
number of seeds it tends to come out narrower than the measured interval (both are in the table, side by
side, with ``misfit``: the RMS distance of the measured mean curve from its trend in units of the noise the
model expects there; about 1 when the trend fits). A width the model cannot reach is therefore out of reach.
Each experiment resamples its seeds n_boot times, so the work grows as sims x n_boot x N: 200 experiments
per N (`seed_projection`'s default) put the median width within about 0.1 of 2000's at 8 seeds per arm and
0.01 from 32 on; 2000 take ten times as long.

Run:  python -m pods_repro.analysis seeds --curves results/tables/curves.csv --out-dir results/tables --setting a e
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pods_repro.analysis import command, intervals
from pods_repro.analysis.curves import arm_matrices
from pods_repro.analysis.speedups import arm_runs, default_comparisons
from pods_repro.analysis.tidy import AnalysisInputError

DEFAULT_SEEDS = (8, 16, 32, 64, 128, 256)


def _same_grid(base, pods) -> bool:
    """Both arms evaluated at the same optimizer steps (the tiny profile's step grid)."""
    if base.values_S_T.shape[1] != pods.values_S_T.shape[1]:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.allclose(np.nanmean(base.steps_S_T, 0), np.nanmean(pods.steps_S_T, 0), equal_nan=True))


def _unprojectable(base, pods, steps_T) -> str | None:
    """Why a comparison cannot be projected (None: it can)."""
    if steps_T is None:
        return "the two arms were evaluated on different grids"
    if min(len(base.seeds), len(pods.seeds)) < 2:
        return "an arm has one seed: no spread between seeds to project from (train at least 2 per arm)"
    if base.values_S_T.shape[1] < 4:
        return "fewer than 4 evaluations after step 0: no trend to fit"
    if not np.all(np.isfinite(steps_T) & (steps_T > 0)):
        return "curves without optimizer steps; (i) needs them"
    return None


def _fit_arm(values_S_T: np.ndarray, x_T: np.ndarray) -> dict:
    """Trend (quadratic in x = log step), sigma_seed, sigma_eval and misfit of one arm's seed matrix."""
    mean_T = np.nanmean(values_S_T, axis=0)
    ok = np.isfinite(mean_T)
    if ok.sum() < 4:
        raise AnalysisInputError("an arm has fewer than 4 evaluations after step 0: no trend to fit")
    trend_T = np.polyval(np.polyfit(x_T[ok], mean_T[ok], 2), x_T)
    resid_S_T = values_S_T - trend_T[None]
    seeds, evals = values_S_T.shape
    offset_S = np.nanmean(resid_S_T, axis=1)
    sigma_eval = float(np.sqrt(np.nanmean((resid_S_T - offset_S[:, None]) ** 2) * evals / max(evals - 1, 1)))
    # the seeds' mean residuals spread by sigma_seed plus the evaluations' noise averaged over T points
    var_seed = float(np.var(offset_S, ddof=1)) - sigma_eval**2 / evals if seeds > 1 else 0.0
    sigma_seed = math.sqrt(max(var_seed, 0.0))
    expected = math.sqrt((sigma_seed**2 + sigma_eval**2) / seeds)
    misfit = float(np.sqrt(np.nanmean((mean_T - trend_T) ** 2)) / expected) if expected > 0 else math.nan
    return {"trend": trend_T, "sigma_seed": sigma_seed, "sigma_eval": sigma_eval, "misfit": misfit}


_CHUNK = 4_000_000  # seed draws per ratio_interval call (experiments x n_boot x N): bounds its memory


def _simulate(
    base: dict, pods: dict, steps_T: np.ndarray, n: int, threshold: float, sims: int, n_boot: int, rng
) -> dict:
    """The time-to-peak table's interval of (i) in each of ``sims`` simulated experiments of ``n`` seeds per arm:
    {point, low, high} arrays over the experiments (point 0: PODS never reached the target; NaN ends below
    MIN_SEEDS_SPEEDUP seeds) and the note of why there is no interval ("" where there is one)."""
    out: dict[str, list] = {"point": [], "low": [], "high": []}
    note = ""
    per_call = max(1, _CHUNK // (n_boot * n))

    def seeds(fit: dict, e: int) -> np.ndarray:
        offset = rng.normal(0.0, fit["sigma_seed"], (e, n, 1))
        return fit["trend"][None, None] + offset + rng.normal(0.0, fit["sigma_eval"], (e, n, len(steps_T)))

    for done in range(0, sims, per_call):
        e = min(per_call, sims - done)
        base_E_S_T, pods_E_S_T = seeds(base, e), seeds(pods, e)
        res = intervals.ratio_interval(base_E_S_T, pods_E_S_T, steps_T, threshold=threshold, rng=rng, n_boot=n_boot)
        for key in out:
            out[key].append(np.atleast_1d(res[key]))
        note = res["note"]
    return {key: np.concatenate(vals) for key, vals in out.items()} | {"note": note}


def _measured(base, pods, threshold: float, n_boot: int, seed: int) -> dict:
    """The interval of (i) on the measured seeds, as the time-to-peak table computes it (each resample's
    position of an evaluation: the mean step of its seeds there)."""
    res = intervals.ratio_interval(
        base.values_S_T, pods.values_S_T, base.steps_S_T, pods_steps_T=pods.steps_S_T, threshold=threshold,
        rng=np.random.default_rng(seed), n_boot=n_boot,
    )  # fmt: skip
    return {"measured_ci_low": res["low"], "measured_ci_high": res["high"], "measured_note": res["note"]}


def seed_projection(
    curves: pd.DataFrame,
    settings: Sequence[str] | None = None,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    threshold: float = 0.99,
    sims: int = 200,
    seed: int = 0,
    metric: str | None = None,
    n_boot: int = 4000,
) -> pd.DataFrame:
    """One row per setting and number of seeds N: over ``sims`` simulated experiments of N seeds per arm, the
    median point of (i), the median ends and width of its interval (the expanded percentile bootstrap of the
    time-to-peak table, ``n_boot`` resamples), the share of experiments in which PODS never reached the target
    and the share whose interval starts at 0; with the fitted noise, the misfit, and the same interval on the
    measured seeds beside them. Below MIN_SEEDS_SPEEDUP seeds per arm (simulated or measured) there is no
    interval: NaN ends and a ``note`` (``measured_note``) that says why.

    ``settings`` None: every setting that can be projected (both arms with at least 2 seeds and 4 evaluations
    after step 0 on one grid, with optimizer steps); the others are skipped. Named settings that cannot be
    projected are an AnalysisInputError that says why."""
    if n_boot < 100:
        raise AnalysisInputError(
            f"n_boot={n_boot}: the expanded percentile interval reads the tails of the resamples; use at least 100 "
            "(the default, 4000, holds its coverage from 5 seeds per arm)"
        )
    rows = []
    for c in default_comparisons(curves, metric):
        if settings and c.setting not in settings:
            continue
        base_runs, pods_runs = arm_runs(curves, c)
        base, pods = arm_matrices(base_runs), arm_matrices(pods_runs)
        steps_T = np.nanmean(np.vstack([base.steps_S_T, pods.steps_S_T]), axis=0) if _same_grid(base, pods) else None
        why = _unprojectable(base, pods, steps_T)
        if why:
            if settings:
                raise AnalysisInputError(f"setting {c.setting}: {why}")
            continue
        x_T = np.log(steps_T)
        fb, fp = _fit_arm(base.values_S_T, x_T), _fit_arm(pods.values_S_T, x_T)
        measured = _measured(base, pods, threshold, n_boot, seed)
        rng = np.random.default_rng(seed)
        for n in seeds:
            sim = _simulate(fb, fp, steps_T, int(n), threshold, sims, n_boot, rng)
            width = sim["high"] - sim["low"]
            rows.append(
                {
                    "setting": c.setting,
                    "seeds_per_arm": int(n),
                    "median": float(np.median(sim["point"])),
                    "ci_low": float(np.median(sim["low"])),
                    "ci_high": float(np.median(sim["high"])),
                    "width": float(np.median(width)),
                    "p_pods_never": float(np.mean(sim["point"] == 0)),
                    "p_low_zero": float(np.mean(sim["low"] == 0)) if not sim["note"] else math.nan,
                    "note": sim["note"],
                    "measured_seeds": f"{len(base.seeds)} + {len(pods.seeds)}",
                    **measured,
                    "baseline_sigma_seed": fb["sigma_seed"],
                    "baseline_sigma_eval": fb["sigma_eval"],
                    "baseline_misfit": fb["misfit"],
                    "pods_sigma_seed": fp["sigma_seed"],
                    "pods_sigma_eval": fp["sigma_eval"],
                    "pods_misfit": fp["misfit"],
                }
            )
    return pd.DataFrame(rows)


def write_seed_projection(table: pd.DataFrame, stem: Path, width: float = 1.0) -> list[Path]:
    """``stem``.csv (every column) and ``stem``.md (a readable table and, per setting, the fewest simulated
    seeds whose projected interval has a median width of at most ``width``)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv, md = stem.with_suffix(".csv"), stem.with_suffix(".md")
    table.to_csv(csv, index=False)
    if table.empty:  # the workflow's table at a scale with one seed per arm (the smoke run): say so
        md.write_text(
            "No setting could be projected: each needs a baseline and a PODS arm with at least 2 seeds and 4 "
            "evaluations after step 0 on one step grid (pods_repro/analysis/power.py).\n"
        )
        return [csv, md]
    lines = [
        "| setting | seeds per arm | (i) median | median 95% interval | median width | PODS never | lower end 0 "
        "| measured: seeds, 95% interval | noise sd (seed / eval, points): baseline, PODS | misfit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts, notes = [], []
    for setting, rows in table.groupby("setting", sort=False):
        for r in rows.itertuples():
            sim = "n/a" if math.isnan(r.width) else f"[{r.ci_low:.2f}, {r.ci_high:.2f}]"
            wide = "n/a" if math.isnan(r.width) else f"{r.width:.2f}"
            low0 = "-" if math.isnan(r.p_low_zero) else f"{r.p_low_zero:.1%}"
            meas = f"[{r.measured_ci_low:.2f}, {r.measured_ci_high:.2f}]"
            meas = "n/a" if math.isnan(r.measured_ci_low) else meas
            lines.append(
                f"| {setting} | {r.seeds_per_arm} | {r.median:.2f} | {sim} | {wide} | {r.p_pods_never:.1%} | {low0} "
                f"| {r.measured_seeds}: {meas} | {100 * r.baseline_sigma_seed:.1f} / {100 * r.baseline_sigma_eval:.1f}, "
                f"{100 * r.pods_sigma_seed:.1f} / {100 * r.pods_sigma_eval:.1f} | "
                f"{r.baseline_misfit:.2f}, {r.pods_misfit:.2f} |"
            )
            for note in (r.note, r.measured_note):
                if isinstance(note, str) and note and note not in notes:
                    notes.append(note)
        enough = rows[rows["width"] <= width]
        verdicts.append(
            f"({setting}): median width <= {width:g} from {int(enough['seeds_per_arm'].min())} seeds per arm"
            if len(enough)
            else f"({setting}): median width <= {width:g} not reached with up to "
            f"{int(rows['seeds_per_arm'].max())} seeds per arm"
        )
    head = (
        "How wide the time-to-peak table's 95% interval of speed-up (i) (steps to 0.99 x the baseline's peak) "
        "would be with N seeds per arm: the median over experiments simulated from a trend + noise model fitted "
        "to the measured runs (pods_repro/analysis/power.py; optimistic: compare the measured interval). "
        + "; ".join(verdicts)
        + "."
    )
    foot = [
        "",
        "The interval is the expanded percentile bootstrap over seeds, each arm's seeds resampled on their own "
        "(pods_repro.analysis.intervals.ratio_interval), read at a tail share that makes up for the few seeds; a resample "
        "in which PODS never reaches the target counts as speed-up 0 ('lower end 0': the share of experiments "
        f"whose interval starts there). None below {intervals.MIN_SEEDS_SPEEDUP} seeds per arm, where no interval "
        "held 95% in simulation (n/a); 'PODS never': the share of experiments whose point is never reached.",
        *(f"n/a: {note}." for note in notes),
    ]
    md.write_text(head + "\n\n" + "\n".join(lines + foot) + "\n")
    return [csv, md]


# ----------------------------------------------------------------------------------------------
# the command: pods analysis seeds

seed_counts = command.option_type(
    lambda text: [int(c) if c.is_integer() else c for c in command.numbers(text)],
    lambda counts: all(isinstance(c, int) and c >= 2 for c in counts),
    "{text!r}: seeds per arm are whole numbers >= 2, e.g. 8,16,32",
)
width_type = command.option_type(
    float, lambda x: math.isfinite(x) and x > 0, "{text!r} is not a finite width > 0 of the speed-up interval, e.g. 1.0"
)


def add_arguments(p) -> None:
    p.add_argument("--curves", required=True, help="a curves.csv written by collect")
    p.add_argument("--out-dir", required=True, help="where seeds.csv and seeds.md are written")
    p.add_argument("--setting", nargs="+", help="only these settings (letters)")
    p.add_argument(
        "--seeds",
        type=seed_counts,
        default=list(DEFAULT_SEEDS),
        help=f"comma-separated seeds per arm to simulate (default {','.join(map(str, DEFAULT_SEEDS))})",
    )
    p.add_argument("--width", type=width_type, default=1.0, help="the interval width asked for (default 1.0)")
    p.add_argument(
        "--sims",
        type=command.sims,
        default=200,
        help=f"simulated experiments per N, each its own bootstrap, at most {command.MAX_RESAMPLES} (default 200)",
    )
    p.add_argument("--metric", help=command.METRIC_HELP)


def run(args) -> int:
    out = command.check_out_dir(args.out_dir)
    curves = command.read_until(args)
    command.check_settings(args.setting, curves, source=args.curves)
    projection = seed_projection(
        curves, args.setting, args.seeds, args.threshold, args.sims, args.boot_seed, args.metric, args.n_boot
    )
    if projection.empty and args.setting:
        raise AnalysisInputError(
            f"{args.curves} has no setting with both a baseline and a PODS arm among {', '.join(args.setting)}"
        )
    return command.report(out, "seeds", write_seed_projection(projection, out / "seeds", args.width))
