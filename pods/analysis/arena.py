"""The selection arena's tables and page: every rule and group filter against GRPO and against PODS max-variance,
per condition, per step and per unit of compute (docs/arena.md).

Run:
    pods analysis arena --scale full                       # collect results/arena/runs -> results/arena/tables
    pods analysis arena --scale full --record benchmarks/results/arena    # add a sitting's runs to the record
    pods analysis arena --scale full --missing             # the runs the record lacks, as Snakemake targets
    pods analysis arena --page docs/arena.md               # the page, from the committed record

Inputs: the run directories of the arena's grid (:func:`pods.arena.load_arena`: ``{root}/runs/{condition}/{arm}/
seed~{seed}``), or a record folder holding what :func:`collect` makes of them: ``arena_curves.csv`` (condition,
arm, seed, step, accuracy on the primary test set), ``arena_steps.csv.gz`` (per step: rollouts and completion
tokens generated and trained on, refill rounds, skipped prompts, CPU seconds) and ``arena_runs.csv`` (per run:
CPU seconds of its steps, evaluations and start-up), with ``arena_meta.json`` (scale, seeds, steps, conditions,
arms).

Statistics, per run (a seed of an arm under a condition), each then averaged over seeds:

- ``auc_step``: mean accuracy over the step budget B, the area under the accuracy curve (trapezoids between the
  evaluations, step 0 included) divided by B. It uses every evaluation, so it separates arms at few seeds
  better than one point does; ``acc_half`` and ``acc_final``: the accuracy at B/2 and at B (fixed budgets);
  ``peak_step``: the step of the best evaluation (the first, on ties): time-to-peak.
- ``auc_tokens``: the same over compute, measured in completion tokens generated plus trained on (cumulative
  per step); the budget is the smallest total any run of the condition spent, so every run is read on the same
  budget, and the curve is interpolated linearly between evaluations; ``acc_tokens``: the accuracy at that
  budget. ``auc_cpu``: the same in CPU seconds of the training steps (``step_cpu_s``; machine-bound).

Comparisons (``arena_vs.csv``): for each condition, arm, reference (``grpo``, ``pods``) and statistic, the
difference of the means over seeds with a 95% Welch t-interval (:func:`pods.analysis.intervals.mean_diff_interval`)
and a verdict by :func:`verdict`: the interval above 0 "better", containing 0 "not resolved", below 0 "worse"
(fewer than 2 seeds on either side: "too few seeds").
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pods import registry
from pods.analysis.arena_record import FLOAT_FORMAT, RUN_KEY
from pods.analysis.intervals import mean_diff_interval, mean_interval

__all__ = [
    "STATS",
    "add_arguments",
    "arm_table",
    "collect",
    "cost_estimate",
    "main",
    "run",
    "run_stats",
    "token_table",
    "verdict",
    "vs_table",
]

DEFAULT_RECORD = "benchmarks/results/arena"
TINY_CURVES = "benchmarks/results/tiny/curves.csv.gz"  # the default job's record: the expected width
STEP_KEYS = (
    "gen_rollouts",
    "gen_tokens",
    "trained_rollouts",
    "trained_tokens",
    "refill_rounds",
    "skipped_prompts",
    "step_cpu_s",
    "reward_mean",
    "frac_zero_std",
)
STATS = {
    "auc_step": "mean accuracy over the step budget",
    "acc_half": "accuracy at half the step budget",
    "acc_final": "accuracy at the step budget",
    "peak_step": "step of the best evaluation (time-to-peak)",
    "auc_tokens": "mean accuracy over the token budget (tokens generated + trained)",
    "acc_tokens": "accuracy at the token budget",
    "auc_cpu": "mean accuracy over the CPU-seconds budget",
}
COMPARED = ("auc_step", "acc_final", "auc_tokens", "acc_tokens", "auc_cpu", "peak_step")
CI = 0.95


class ArenaInputError(ValueError):
    """Missing or unusable arena input; the message names it and says how to fix it."""


# ----------------------------------------------------------------------------------------------
# Collecting runs


def collect(grid, partial: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(curves, steps, runs) of the grid's finished runs (summary.json present). An unfinished run is an error,
    unless ``partial`` (a sitting): then it is left out, and each finished run's config is checked against the
    grid's (its fingerprint, kept in ``config_sha256``)."""
    from pods.analysis.arena_record import check_fingerprint, expected_fingerprints
    from pods.runlog import read_jsonl

    curves, steps, runs = [], [], []
    missing = []
    expected = expected_fingerprints(grid) if partial else None
    for run in grid.runs():
        d = Path(grid.root) / "runs" / run.folder
        if not (d / "summary.json").is_file():
            missing.append(str(d))
            continue
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        ident = {"condition": run.condition, "arm": run.arm, "seed": run.seed}
        checked = {"config_sha256": check_fingerprint(d, run.folder, expected)} if expected is not None else {}
        primary = None
        try:
            for row in read_jsonl(d / "eval.jsonl"):
                primary = primary or row["dataset"]
                if row["dataset"] == primary:
                    curves.append({**ident, "step": int(row["step"]), "accuracy": float(row["accuracy"])})
            for row in read_jsonl(d / "metrics.jsonl"):
                steps.append({**ident, "step": int(row["step"]), **{k: row.get(k) for k in STEP_KEYS}})
        except (ValueError, KeyError, TypeError) as err:  # a damaged log (cut mid-line) or one without its keys
            raise ArenaInputError(
                f"{d}: a log cannot be read ({err}); train the run again (remove {d} and rerun its Snakemake target)"
            ) from None
        runs.append(
            {
                **ident,
                "steps": summary.get("steps"),
                "n_evals": summary.get("n_evals"),
                "train_cpu_s": summary.get("train_cpu_s"),
                "eval_cpu_s": summary.get("eval_cpu_s"),
                "startup_cpu_s": summary.get("startup_cpu_s"),
                "process_cpu_s": summary.get("cpu_s_last_session"),
                "wall_s": summary.get("wall_s_last_session"),
                **checked,
            }
        )
    if missing and not partial:
        raise ArenaInputError(
            f"{len(missing)} arena run(s) have not finished, e.g. {missing[0]}; train them "
            f"(snakemake arena --config arena={grid.scale}) before the tables"
        )
    out = pd.DataFrame(curves), pd.DataFrame(steps), pd.DataFrame(runs)
    check_tables(*out, f"{grid.root}/runs")
    return out


def check_tables(curves: pd.DataFrame, steps: pd.DataFrame, runs: pd.DataFrame, source: str) -> None:
    """ArenaInputError unless every accuracy is a number in [0, 1] and no run or evaluation appears twice: a NaN
    or a duplicate would change the tables without a word."""
    if not curves.empty:
        acc = pd.to_numeric(curves["accuracy"], errors="coerce")
        bad = ~acc.between(0.0, 1.0)  # NaN too
        if bad.any():
            r = curves[bad].iloc[0]
            raise ArenaInputError(
                f"{source}: run {r['condition']}/{r['arm']}/seed~{r['seed']} step {r['step']} has accuracy "
                f"{r['accuracy']!r}, not a number in [0, 1]; restore the record from git or train the run again"
            )
    for df, key, what in ((curves, [*RUN_KEY, "step"], "evaluation"), (steps, [*RUN_KEY, "step"], "step row"),
                          (runs, list(RUN_KEY), "run")):  # fmt: skip
        if df.empty or not set(key) <= set(df.columns):
            continue
        twice = df.duplicated(key, keep=False)
        if twice.any():
            r = df[twice].iloc[0]
            at = f" step {r['step']}" if "step" in key else ""
            raise ArenaInputError(
                f"{source}: the {what} {r['condition']}/{r['arm']}/seed~{r['seed']}{at} appears twice; keep one "
                "(restore the record from git)"
            )


def grid_meta(grid) -> dict:
    return {
        "scale": grid.scale,
        "experiment": grid.experiment,
        "seeds": list(grid.seeds),
        "steps": grid.steps,
        "eval_every": grid.eval_every,
        "conditions": {c: list(o) for c, o in grid.conditions.items()},
        "arms": {a.name: {"rule": a.rule, "n": a.n, "m": a.m, "extra": list(a.extra)} for a in grid.arms.values()},
    }


RECORD_FILES = ("arena_curves.csv", "arena_steps.csv.gz", "arena_runs.csv", "arena_meta.json")
"""A record folder: curves and runs as CSV; the per-step table gzipped (mtime 0: the same bytes for the same
rows), since 416 runs x 250 steps are several MB of text."""


def write_record(out: Path, curves: pd.DataFrame, steps: pd.DataFrame, runs: pd.DataFrame, meta: dict) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, df in zip(RECORD_FILES[:3], (curves, steps, runs), strict=True):
        paths.append(out / name)
        gz = {"method": "gzip", "mtime": 0} if name.endswith(".gz") else None
        df.to_csv(paths[-1], index=False, float_format=FLOAT_FORMAT, compression=gz)
    paths.append(out / RECORD_FILES[3])
    paths[-1].write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")  # arms and conditions in grid order
    return paths


def read_record(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict]:
    for name in RECORD_FILES:
        if not (folder / name).is_file():
            raise ArenaInputError(
                f"{folder / name} is missing; make the record with pods analysis arena --scale NAME --record {folder}"
            )
    try:
        read = [pd.read_csv(folder / n) for n in RECORD_FILES[:3]]
        meta = json.loads((folder / RECORD_FILES[3]).read_text(encoding="utf-8"))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError, OSError, EOFError) as err:
        # EOFError: a truncated .csv.gz
        raise ArenaInputError(
            f"{folder}: the record cannot be read ({err or type(err).__name__}); restore it from git "
            f"(git checkout -- {folder})"
        ) from None
    check_tables(*read, str(folder))
    return (*read, meta)


# ----------------------------------------------------------------------------------------------
# Statistics


def _area(x: np.ndarray, y: np.ndarray, budget: float) -> tuple[float, float]:
    """(area under y(x) on [0, budget] / budget, y at budget), y linear between points; x ascending from 0."""
    if budget <= 0 or len(x) == 0:
        return math.nan, math.nan
    at = float(np.interp(budget, x, y))
    keep = x < budget
    xs = np.concatenate([x[keep], [budget]])
    ys = np.concatenate([y[keep], [at]])
    return float(np.trapezoid(ys, xs) / budget), at


def _at_evals(eval_steps: np.ndarray, step_of: np.ndarray, cumulative: np.ndarray) -> np.ndarray:
    """Cumulative compute at each evaluation's step (0 at step 0)."""
    return np.array([0.0 if st == 0 else float(np.interp(st, step_of, cumulative)) for st in eval_steps])


def run_stats(curves: pd.DataFrame, steps: pd.DataFrame, budget_steps: int) -> pd.DataFrame:
    """Per run (condition, arm, seed): the statistics of :data:`STATS` (see the module docstring)."""
    rows = []
    per_run = {}
    for key, c in curves.groupby(["condition", "arm", "seed"], sort=True):
        c = c.sort_values("step")
        s = steps[(steps.condition == key[0]) & (steps.arm == key[1]) & (steps.seed == key[2])].sort_values("step")
        x, y = c.step.to_numpy(float), c.accuracy.to_numpy(float)
        if x[0] != 0:
            raise ArenaInputError(f"run {'/'.join(map(str, key))} has no evaluation at step 0; collect it again")
        tokens = (s.gen_tokens.fillna(0) + s.trained_tokens.fillna(0)).cumsum().to_numpy(float)
        cpu = s.step_cpu_s.fillna(0).cumsum().to_numpy(float)
        step_of = s.step.to_numpy(int)
        per_run[key] = (x, y, step_of, tokens, cpu)
        auc, final = _area(x, y, float(budget_steps))
        half = float(np.interp(budget_steps / 2, x, y))
        rows.append(
            {
                "condition": key[0],
                "arm": key[1],
                "seed": int(key[2]),
                "auc_step": auc,
                "acc_half": half,
                "acc_final": final,
                "peak_step": float(x[int(np.argmax(y))]),
                "total_tokens": float(tokens[-1]) if len(tokens) else math.nan,
                "total_cpu_s": float(cpu[-1]) if len(cpu) else math.nan,
            }
        )
    out = pd.DataFrame(rows)
    if out.empty:
        raise ArenaInputError("the arena curves hold no run; collect the runs first")
    for col in ("auc_tokens", "acc_tokens", "auc_cpu", "token_budget", "cpu_budget_s"):
        out[col] = math.nan
    # compute budgets: the smallest total any run of the condition spent
    for cond, idx in out.groupby("condition").groups.items():
        tok_budget = out.loc[idx, "total_tokens"].min()
        cpu_budget = out.loc[idx, "total_cpu_s"].min()
        for i in idx:
            key = (cond, out.at[i, "arm"], out.at[i, "seed"])
            x, y, step_of, tokens, cpu = per_run[key]

            out.at[i, "auc_tokens"], out.at[i, "acc_tokens"] = _area(_at_evals(x, step_of, tokens), y, tok_budget)
            out.at[i, "auc_cpu"], _ = _area(_at_evals(x, step_of, cpu), y, cpu_budget)
            out.at[i, "token_budget"], out.at[i, "cpu_budget_s"] = tok_budget, cpu_budget
    return out


def verdict(low: float, high: float) -> str:
    """The stated rule: a difference whose interval lies above 0 is "better", below 0 "worse", else "not
    resolved"; no interval (fewer than 2 seeds on a side) is "too few seeds"."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "too few seeds"
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "not resolved"


def arm_table(stats: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Per condition and arm: the mean of each statistic over seeds with its 95% t-interval."""
    rows = []
    for cond in meta["conditions"]:
        for arm in meta["arms"]:
            sub = stats[(stats.condition == cond) & (stats.arm == arm)]
            if sub.empty:
                continue
            row = {"condition": cond, "arm": arm, "seeds": len(sub), **meta["arms"][arm]}
            row["extra"] = " ".join(row["extra"])
            for stat in STATS:
                vals = sub[stat].to_numpy(float)
                row[stat] = float(np.mean(vals))
                lo, hi = mean_interval(vals, CI) if len(vals) >= 2 else (math.nan, math.nan)
                row[f"{stat}_lo"], row[f"{stat}_hi"] = lo, hi
            rows.append(row)
    return pd.DataFrame(rows)


def vs_table(stats: pd.DataFrame, meta: dict, references: Sequence[str] = ("grpo", "pods")) -> pd.DataFrame:
    """Each arm against each reference arm, per condition and compared statistic: difference of means, 95% Welch
    interval, verdict. A higher accuracy is better; for ``peak_step`` (time-to-peak) the difference is read the
    other way round (reference minus arm), so "better" means an earlier peak there too."""
    rows = []
    for cond in meta["conditions"]:
        for ref in references:
            base = stats[(stats.condition == cond) & (stats.arm == ref)]
            for arm in meta["arms"]:
                if arm == ref:
                    continue
                sub = stats[(stats.condition == cond) & (stats.arm == arm)]
                if sub.empty or base.empty:
                    continue
                for stat in COMPARED:
                    a, b = sub[stat].to_numpy(float), base[stat].to_numpy(float)
                    if stat == "peak_step":
                        a, b = b, a
                    diff = float(a.mean() - b.mean())
                    if len(a) >= 2 and len(b) >= 2:
                        lo, hi = mean_diff_interval(a, b, CI)
                    else:
                        lo, hi = math.nan, math.nan
                    rows.append(
                        {
                            "condition": cond,
                            "arm": arm,
                            "reference": ref,
                            "statistic": stat,
                            "difference": diff,
                            "low": float(lo),
                            "high": float(hi),
                            "verdict": verdict(float(lo), float(hi)),
                            "seeds": len(sub),
                            "reference_seeds": len(base),
                        }
                    )
    return pd.DataFrame(rows)


def token_table(steps: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Per condition and arm: the mean per step (over seeds and steps) of what was generated and trained on."""
    rows = []
    keys = [k for k in STEP_KEYS if k not in ("reward_mean",)]
    for cond in meta["conditions"]:
        for arm in meta["arms"]:
            sub = steps[(steps.condition == cond) & (steps.arm == arm)]
            if sub.empty:
                continue
            rows.append({"condition": cond, "arm": arm, **{f"{k}_per_step": float(sub[k].mean()) for k in keys}})
    return pd.DataFrame(rows)


def cost_estimate(runs: pd.DataFrame, meta: dict, target: dict) -> dict:
    """CPU seconds of a grid ``target`` (seeds, steps, eval_every, conditions, arms: the full scale's meta),
    estimated from the recorded runs: per arm, start-up + steps x its CPU seconds per step + evaluations x its CPU
    seconds per evaluation (means over its recorded runs; an arm not recorded takes the recorded n = 64 PODS arm's,
    or the mean of all). Returns total CPU seconds and hours of wall on 2 and 4 cores."""
    r = runs.assign(
        step_cpu=runs.train_cpu_s / runs.steps,
        eval_cpu=runs.eval_cpu_s / runs.n_evals,
    )
    per_arm = r.groupby("arm")[["step_cpu", "eval_cpu", "startup_cpu_s"]].mean()
    fallback = per_arm.loc["pods"] if "pods" in per_arm.index else per_arm.mean()
    evals = target["steps"] // target["eval_every"] + 1
    total = 0.0
    for arm in target["arms"]:
        c = per_arm.loc[arm] if arm in per_arm.index else fallback
        one = c.startup_cpu_s + target["steps"] * c.step_cpu + evals * c.eval_cpu
        total += one * len(target["seeds"]) * len(target["conditions"])
    runs_n = len(target["arms"]) * len(target["seeds"]) * len(target["conditions"])
    return {"runs": runs_n, "cpu_s": total, "hours_2_cores": total / 2 / 3600, "hours_4_cores": total / 4 / 3600}


def expected_width(tiny_curves: pd.DataFrame, budget: int, seeds: int, draws: int = 2000, rng_seed: int = 0) -> dict:
    """What the arena's seed count can resolve, from the default job's 64 + 64 seeds of tiny (a): the GRPO and
    PODS arms of the arena's base condition are those runs read up to ``budget`` steps (same config but the
    evaluation sets, same curves). Per seed, the mean accuracy over the budget (``auc_step``); then ``draws``
    random choices of ``seeds`` + ``seeds`` of them (without replacement, generator seeded ``rng_seed``) give
    the median half-width of the 95% Welch interval of PODS minus GRPO and the share of draws whose interval
    lies above 0; beside them the difference over all seeds, with its interval."""
    c = tiny_curves[
        (tiny_curves.setting == "a")
        & (tiny_curves.metric == "accuracy")
        & (tiny_curves.dataset == tiny_curves.primary_dataset)
        & tiny_curves.role.isin(["baseline", "pods"])
    ]
    auc: dict[str, list[float]] = {}
    for (role, _seed), g in c.groupby(["role", "seed"], sort=True):
        g = g.drop_duplicates("step").sort_values("step")
        if g.step.iloc[-1] < budget:
            raise ArenaInputError(f"the tiny (a) record's runs end before step {budget}; give a shorter budget")
        auc.setdefault(role, []).append(_area(g.step.to_numpy(float), g.value.to_numpy(float), float(budget))[0])
    if set(auc) != {"baseline", "pods"}:
        raise ArenaInputError("the tiny record holds no (a) GRPO and PODS runs; record the default job first")
    base, pods = np.array(auc["baseline"]), np.array(auc["pods"])
    if min(len(base), len(pods)) < seeds:
        raise ArenaInputError(f"the tiny record has {len(base)} + {len(pods)} seeds of (a), fewer than {seeds}")
    rng = np.random.default_rng(rng_seed)
    a = np.stack([rng.choice(pods, seeds, replace=False) for _ in range(draws)])
    b = np.stack([rng.choice(base, seeds, replace=False) for _ in range(draws)])
    lo, hi = mean_diff_interval(a, b, CI)
    full = mean_diff_interval(pods, base, CI)
    return {
        "seeds_recorded": (len(base), len(pods)),
        "half_width": float(np.median((hi - lo) / 2)),
        "share_above_0": float(np.mean(lo > 0)),
        "difference": float(pods.mean() - base.mean()),
        "difference_ci": (float(full[0]), float(full[1])),
    }


# ----------------------------------------------------------------------------------------------
# Command line


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scale", default=None, help="collect the runs of this arena scale (config/arena.yaml; full, pilot)"
    )
    p.add_argument(
        "--from-record",
        default=None,
        help=f"read a record folder instead of runs (default with --page: {DEFAULT_RECORD})",
    )
    p.add_argument(
        "--record",
        default=None,
        help="add the finished runs of --scale to this record folder (a sitting; unfinished runs wait for the next)",
    )
    p.add_argument("--wall-s", type=float, default=None, help="the sitting's wall seconds, kept in the record")
    p.add_argument(
        "--missing",
        action="store_true",
        help=f"print the Snakemake targets of --scale's runs not yet in the record (--from-record, default "
        f"{DEFAULT_RECORD})",
    )
    p.add_argument(
        "--out-dir", default=None, help="write arena_*.csv tables here (default with --scale: {root}/tables)"
    )
    p.add_argument("--page", default=None, help="write the page (docs/arena.md) from the tables")


def _record_folder(source: str) -> Path:
    folder = Path(source)
    if not folder.is_absolute() and not folder.is_dir():  # a repository path, from any directory
        folder = registry.repo_file(source)
    return folder


def _add_sitting(grid, folder: Path, wall_s: float | None) -> tuple[tuple, dict]:
    """Collect the grid's finished runs and merge them into the record at ``folder`` (written back)."""
    from pods.analysis import arena_record
    from pods.analysis.record import host_info

    new = collect(grid, partial=True)
    if new[2].empty:
        raise ArenaInputError(f"{grid.root}/runs holds no finished arena run of scale {grid.scale}; train some first")
    old = read_record(folder) if (folder / "arena_meta.json").is_file() else None
    sitting = {**host_info(), "wall_s": wall_s}
    merged, meta, counts = arena_record.merge_sitting(old, new, grid_meta(grid), sitting)
    write_record(folder, *merged, meta)
    print(
        f"{folder}: {counts['added']} run(s) added, {counts['agreed']} agreed with the record; "
        f"{meta['recorded_runs']} of {meta['grid_runs']} runs recorded",
        file=sys.stderr,
    )
    return merged, meta


def run(args: argparse.Namespace) -> int:
    from pods.analysis import arena_record
    from pods.arena import ArenaError, load_arena

    try:
        full = grid_meta(load_arena("full"))
        if args.missing:
            if args.scale is None:
                raise ArenaInputError("--missing needs --scale NAME (the grid whose runs to list)")
            folder = _record_folder(args.from_record or DEFAULT_RECORD)
            record = read_record(folder) if (folder / "arena_meta.json").is_file() else None
            if record is not None and record[3].get("scale") != args.scale:
                record = None  # a record of another grid holds none of this one's runs
            targets = arena_record.missing(load_arena(args.scale), record)
            if not targets:
                from pods.analysis.record import NOTHING_MISSING

                print(NOTHING_MISSING)
                print(f"{folder}: the record holds every run of scale {args.scale}; nothing to train", file=sys.stderr)
                return 1
            print(" ".join(targets))
            return 0
        if args.record and args.scale is None:
            raise ArenaInputError("--record needs --scale NAME (the grid whose finished runs to add)")
        if args.wall_s is not None and not args.record:
            raise ArenaInputError("--wall-s is kept in a record: give it with --scale NAME --record DIR")
        if args.wall_s is not None and not (math.isfinite(args.wall_s) and args.wall_s > 0):
            raise ArenaInputError(f"--wall-s {args.wall_s}: give a finite number of seconds > 0")
        if args.scale is not None and args.from_record is None:
            grid = load_arena(args.scale)
            if args.record:
                (curves, steps, runs), meta = _add_sitting(grid, _record_folder(args.record), args.wall_s)
            else:
                curves, steps, runs = collect(grid)
                meta = grid_meta(grid)
            source = f"{grid.root}/runs"
            out_dir = Path(args.out_dir) if args.out_dir else Path(grid.root) / "tables"
        else:
            source = args.from_record or DEFAULT_RECORD
            curves, steps, runs, meta = read_record(_record_folder(source))
            out_dir = Path(args.out_dir) if args.out_dir else None
        done = arena_record.complete_conditions(runs, meta)
        tables = _tables(curves, steps, meta, done)
        written = []
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            for name, df in zip(("arena_curves", "arena_steps", "arena_arms", "arena_vs", "arena_tokens"),
                                (curves, steps, *tables), strict=True):  # fmt: skip
                df.to_csv(out_dir / f"{name}.csv", index=False, float_format="%.6g")
                written.append(out_dir / f"{name}.csv")
        if args.page:
            from pods.analysis.arena_page import render_page

            tiny = registry.repo_file(TINY_CURVES)
            width = expected_width(pd.read_csv(tiny), meta["steps"], len(meta["seeds"])) if tiny.is_file() else None
            cost = cost_estimate(runs, meta, full)
            page = render_page(tables, runs, meta, source.rstrip("/"), full, cost, width, same_as_pods(curves, done))
            Path(args.page).write_text(page, encoding="utf-8")
            written.append(Path(args.page))
    except (ArenaInputError, ArenaError, arena_record.ArenaRecordError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


def same_as_pods(curves: pd.DataFrame, conditions: list[str]) -> dict[str, list[str]]:
    """Per condition, the arms (not PODS) whose accuracy curve equals PODS's at every evaluation of every seed."""
    out = {}
    for cond in conditions:
        c = curves[curves.condition == cond].sort_values(["arm", "seed", "step"])
        ref = c[c.arm == "pods"][["seed", "step", "accuracy"]].reset_index(drop=True)
        out[cond] = [
            arm
            for arm, g in c.groupby("arm", sort=False)
            if arm != "pods" and not ref.empty and g[["seed", "step", "accuracy"]].reset_index(drop=True).equals(ref)
        ]
    return out


def _tables(curves: pd.DataFrame, steps: pd.DataFrame, meta: dict, done: list[str]) -> tuple:
    """(arms, vs, tokens) over the conditions whose runs are all recorded (empty tables when none is)."""
    curves, steps = curves[curves.condition.isin(done)], steps[steps.condition.isin(done)]
    if curves.empty:
        return pd.DataFrame(), pd.DataFrame(), pd.DataFrame()
    meta_done = {**meta, "conditions": {c: o for c, o in meta["conditions"].items() if c in done}}
    stats = run_stats(curves, steps, meta["steps"])
    return arm_table(stats, meta_done), vs_table(stats, meta_done), token_table(steps, meta_done)


def main(argv: Sequence[str] | None = None, prog: str = "pods analysis arena") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    add_arguments(p)
    return run(p.parse_args(argv))
