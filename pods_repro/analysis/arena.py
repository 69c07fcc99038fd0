"""The selection arena's tables and page: every rule and group filter against GRPO and against PODS max-variance,
per condition, per step and per unit of compute (docs/arena.md).

Run:
    pods analysis arena --scale full                       # collect results/arena/runs -> results/arena/tables
    pods analysis arena --scale full --record benchmarks/results/arena    # add a sitting's runs to the record
    pods analysis arena --scale full --missing             # the runs the record lacks, as Snakemake targets
    pods analysis arena --page docs/arena.md               # the page, from the committed record

Inputs: the run directories of the arena's grid (:func:`pods_repro.arena.load_arena`: ``{root}/runs/{condition}/{arm}/
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
difference over seeds, paired by seed where the two arms ran the same seeds (else Welch), with its 95% interval
and p-value, Holm's adjusted p-value and BH's q-value within the test's family (its reference and statistic over
every recorded condition: :mod:`pods_repro.analysis.arena_stats`), and the verdict: "better" / "worse" when the
Holm-adjusted p-value is below 0.05, else "not resolved" (``verdict_uncorrected``: by the raw interval, as
:func:`verdict`); a filter arm that changed no update there reads "not exercised", with no test. The compute
statistics (tokens 1 : 1, the record's CPU-weighted compute, CPU seconds, the GPU cost model's seconds) read
each pair to the smallest total either arm's runs spent.
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

from pods_repro import registry
from pods_repro.analysis import arena_stats
from pods_repro.analysis.arena_record import FLOAT_FORMAT, RUN_KEY
from pods_repro.analysis.intervals import mean_diff_interval, mean_interval

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
COMPARED = ("auc_step", "acc_final", "auc_tokens", "acc_tokens", "auc_compute", "auc_cpu", "auc_gpu", "peak_step")
CI = 0.95


class ArenaInputError(ValueError):
    """Missing or unusable arena input; the message names it and says how to fix it."""


# ----------------------------------------------------------------------------------------------
# Collecting runs


def collect(grid, partial: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(curves, steps, runs) of the grid's finished runs (summary.json present). An unfinished run is an error,
    unless ``partial`` (a sitting): then it is left out, and each finished run's config is checked against the
    grid's (its fingerprint, kept in ``config_sha256``)."""
    from pods_repro.analysis.arena_record import check_fingerprint, expected_fingerprints
    from pods_repro.runlog import read_jsonl

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


COMPUTE = {
    "tokens": "tokens generated + computed in the update, weighed 1 : 1",
    "compute": "generated-token equivalents: a computed token weighs the record's CPU cost ratio",
    "cpu": "CPU seconds of the steps (step_cpu_s)",
    "gpu": "GPU seconds by the H200 cost model (a model, not a measurement)",
}
"""The compute measures of a step; each reads every run of a comparison to the same budget of it."""


def run_series(curves: pd.DataFrame, steps: pd.DataFrame) -> dict:
    """Per run (condition, arm, seed): (evaluation steps, accuracies, {measure: cumulative compute at each
    evaluation}) for the measures of :data:`COMPUTE` whose step columns the table holds (``cost_tokens``,
    ``cost_compute``, ``step_cpu_s``, ``cost_gpu_s``; without ``cost_tokens``, generated + trained tokens)."""
    steps = steps.copy()
    if "cost_tokens" not in steps:
        trained = steps.computed_tokens if "computed_tokens" in steps else steps.trained_tokens
        steps["cost_tokens"] = steps.gen_tokens.fillna(0) + trained.fillna(0)
    columns = {"tokens": "cost_tokens", "compute": "cost_compute", "cpu": "step_cpu_s", "gpu": "cost_gpu_s"}
    columns = {k: v for k, v in columns.items() if v in steps}
    by_run = {key: g.sort_values("step") for key, g in steps.groupby(["condition", "arm", "seed"], sort=True)}
    out = {}
    for key, c in curves.groupby(["condition", "arm", "seed"], sort=True):
        c = c.sort_values("step")
        x, y = c.step.to_numpy(float), c.accuracy.to_numpy(float)
        if x[0] != 0:
            raise ArenaInputError(f"run {'/'.join(map(str, key))} has no evaluation at step 0; collect it again")
        s = by_run.get(key, steps.iloc[:0])
        step_of = s.step.to_numpy(int)
        cum = {k: s[col].fillna(0).cumsum().to_numpy(float) for k, col in columns.items()}
        at = {k: _at_evals(x, step_of, v) if len(v) else np.zeros_like(x) for k, v in cum.items()}
        totals = {k: float(v[-1]) if len(v) else math.nan for k, v in cum.items()}
        out[key] = (x, y, at, totals)
    return out


def run_stats(curves: pd.DataFrame, steps: pd.DataFrame, budget_steps: int) -> pd.DataFrame:
    """Per run (condition, arm, seed): the statistics of :data:`STATS` (see the module docstring); the compute
    ones at the smallest total any run of the condition spent (a comparison reads its own pair's budget:
    :func:`vs_table`)."""
    series = run_series(curves, steps)
    rows = []
    for key, (x, y, _at, totals) in series.items():
        auc, final = _area(x, y, float(budget_steps))
        rows.append(
            {
                "condition": key[0],
                "arm": key[1],
                "seed": int(key[2]),
                "auc_step": auc,
                "acc_half": float(np.interp(budget_steps / 2, x, y)),
                "acc_final": final,
                "peak_step": float(x[int(np.argmax(y))]),
                "total_tokens": totals.get("tokens", math.nan),
                "total_cpu_s": totals.get("cpu", math.nan),
            }
        )
    out = pd.DataFrame(rows)
    if out.empty:
        raise ArenaInputError("the arena curves hold no run; collect the runs first")
    for col in ("auc_tokens", "acc_tokens", "auc_cpu", "token_budget", "cpu_budget_s"):
        out[col] = math.nan
    for _cond, idx in out.groupby("condition").groups.items():
        tok_budget = out.loc[idx, "total_tokens"].min()
        cpu_budget = out.loc[idx, "total_cpu_s"].min()
        for i in idx:
            x, y, at, _ = series[(out.at[i, "condition"], out.at[i, "arm"], out.at[i, "seed"])]
            out.at[i, "auc_tokens"], out.at[i, "acc_tokens"] = _area(at["tokens"], y, tok_budget)
            out.at[i, "auc_cpu"], _ = _area(at["cpu"], y, cpu_budget)
            out.at[i, "token_budget"], out.at[i, "cpu_budget_s"] = tok_budget, cpu_budget
    return out


def _pair_values(series: dict, cond: str, arms: tuple[str, str], measure: str, stat: str) -> tuple:
    """Per seed of each arm, the AUC/B (or accuracy at B) of ``measure`` at the pair's budget: the smallest
    total either arm's runs spent; and the mean step each arm's runs reach at it."""
    keys = {arm: [k for k in series if k[0] == cond and k[1] == arm] for arm in arms}
    budget = min(series[k][3][measure] for arm in arms for k in keys[arm])
    vals, reach = [], []
    for arm in arms:
        one, steps_at = {}, []
        for k in keys[arm]:
            x, y, at, _ = series[k]
            auc, final = _area(at[measure], y, budget)
            one[int(k[2])] = final if stat.startswith("acc_") else auc
            steps_at.append(float(np.interp(budget, at[measure], x)))
        vals.append(one)
        reach.append(float(np.mean(steps_at)))
    return vals[0], vals[1], budget, reach


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


_MEASURE_OF = {"auc_tokens": "tokens", "acc_tokens": "tokens", "auc_compute": "compute", "auc_cpu": "cpu",
               "auc_gpu": "gpu"}  # fmt: skip


def _comparison(stats, series, cond, arm, ref, stat) -> dict | None:
    """One test: the arm minus the reference on ``stat`` (paired by seed where they share seeds)."""
    reach = (math.nan, math.nan)
    budget = math.nan
    if series is not None and stat in _MEASURE_OF:
        measure = _MEASURE_OF[stat]
        if not any(measure in v[3] for k, v in series.items() if k[0] == cond):
            return None
        a, b, budget, reach = _pair_values(series, cond, (arm, ref), measure, stat)
    else:
        if stat not in stats:
            return None
        sub = stats[(stats.condition == cond) & (stats.arm == arm)]
        base = stats[(stats.condition == cond) & (stats.arm == ref)]
        a, b = dict(zip(sub.seed, sub[stat], strict=True)), dict(zip(base.seed, base[stat], strict=True))
    if stat == "peak_step":  # better is earlier: reference minus arm
        a, b = b, a
    d = arena_stats.difference(a, b, CI)
    return {"condition": cond, "arm": arm, "reference": ref, "statistic": stat, **d,
            "seeds": len(a), "reference_seeds": len(b), "budget": budget,
            "arm_step_at_budget": reach[0], "reference_step_at_budget": reach[1]}  # fmt: skip


def vs_table(
    stats: pd.DataFrame,
    meta: dict,
    references: Sequence[str] = ("grpo", "pods"),
    series: dict | None = None,
    skip: dict | None = None,
) -> pd.DataFrame:
    """Each arm against each reference arm, per condition and compared statistic: the difference (paired over
    shared seeds, else Welch: :func:`pods_repro.analysis.arena_stats.difference`), its 95% interval and p-value, Holm's
    adjusted p-value within the test's family (:data:`pods_repro.analysis.arena_stats.FAMILY`) and BH's q-value, and the
    verdict: "better" / "worse" when the Holm-adjusted p-value is below ``ALPHA`` (``verdict_uncorrected``: by
    the raw interval). A higher accuracy is better; for ``peak_step`` the difference is reference minus arm.
    ``series`` (:func:`run_series`): the compute measures read each pair at its own budget (else the condition's,
    from ``stats``). ``skip``: (condition, arm) -> fired share of the filter arms that changed no update: "not
    exercised", no test."""
    rows = []
    skip = skip or {}
    for cond in meta["conditions"]:
        for ref in references:
            if stats[(stats.condition == cond) & (stats.arm == ref)].empty:
                continue
            for arm in meta["arms"]:
                if arm == ref or stats[(stats.condition == cond) & (stats.arm == arm)].empty:
                    continue
                for stat in COMPARED:
                    if (cond, arm) in skip:
                        rows.append({"condition": cond, "arm": arm, "reference": ref, "statistic": stat,
                                     "analysis": "none", "fired_share": skip[(cond, arm)]})  # fmt: skip
                        continue
                    row = _comparison(stats, series, cond, arm, ref, stat)
                    if row is not None:
                        rows.append(row)
    return _corrected(pd.DataFrame(rows))


def _corrected(vs: pd.DataFrame) -> pd.DataFrame:
    """Holm (verdicts) and BH (stated beside) per family; the verdicts before and after."""
    if vs.empty:
        return vs
    for col in ("difference", "low", "high", "p", "fired_share", "budget"):
        if col not in vs:
            vs[col] = math.nan
    vs["family"] = vs.reference.astype(str) + " / " + vs.statistic.astype(str)
    vs["p_holm"], vs["q_bh"] = math.nan, math.nan
    for _fam, idx in vs.groupby("family").groups.items():
        vs.loc[idx, "p_holm"] = arena_stats.holm(vs.loc[idx, "p"].to_numpy(float))
        vs.loc[idx, "q_bh"] = arena_stats.bh(vs.loc[idx, "p"].to_numpy(float))
    raw = [verdict(lo, hi) for lo, hi in zip(vs.low, vs.high, strict=True)]
    vs["verdict_uncorrected"] = raw
    vs["verdict"] = [
        "not exercised" if an == "none" else v if v == "too few seeds" else
        ("better" if d > 0 else "worse") if ph < arena_stats.ALPHA else "not resolved"
        for an, v, d, ph in zip(vs.analysis, raw, vs.difference, vs.p_holm, strict=True)
    ]  # fmt: skip
    vs.loc[vs.verdict == "not exercised", "verdict_uncorrected"] = "not exercised"
    return vs


def token_table(steps: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Per condition and arm: the mean per step (over seeds and steps) of what was generated and trained on."""
    rows = []
    keys = [k for k in (*STEP_KEYS, "computed_rollouts", "computed_tokens") if k != "reward_mean" and k in steps]
    for cond in meta["conditions"]:
        for arm in meta["arms"]:
            sub = steps[(steps.condition == cond) & (steps.arm == arm)]
            if sub.empty:
                continue
            rows.append({"condition": cond, "arm": arm, **{f"{k}_per_step": float(sub[k].mean()) for k in keys}})
    return pd.DataFrame(rows)


def _prompts_per_step(overrides) -> int:
    """A condition's prompts per step (``rollout.prompts_per_step=k`` among its overrides; else 1)."""
    got = [o.split("=", 1)[1] for o in overrides or () if o.startswith("rollout.prompts_per_step=")]
    return int(got[-1]) if got else 1


def cost_estimate(runs: pd.DataFrame, meta: dict, target: dict) -> dict:
    """CPU seconds of a grid ``target`` (seeds, steps, eval_every, conditions, arms: the full scale's meta),
    estimated from the recorded runs: per arm, start-up + steps x its CPU seconds per step + evaluations x its CPU
    seconds per evaluation (means over its recorded runs; an arm not recorded takes the recorded n = 64 PODS arm's,
    or the mean of all). A condition of k prompts per step (``conditions`` a mapping to its overrides) counts
    k times the steps' seconds (the record's runs train one prompt a step). Returns total CPU seconds and hours
    of wall on 2 and 4 cores."""
    r = runs.assign(
        step_cpu=runs.train_cpu_s / runs.steps,
        eval_cpu=runs.eval_cpu_s / runs.n_evals,
    )
    per_arm = r.groupby("arm")[["step_cpu", "eval_cpu", "startup_cpu_s"]].mean()
    fallback = per_arm.loc["pods"] if "pods" in per_arm.index else per_arm.mean()
    evals = target["steps"] // target["eval_every"] + 1
    conds = target["conditions"]
    factors = [_prompts_per_step(conds[c]) if isinstance(conds, dict) else 1 for c in conds]
    total = 0.0
    for arm in target["arms"]:
        c = per_arm.loc[arm] if arm in per_arm.index else fallback
        for k in factors:
            total += (c.startup_cpu_s + k * target["steps"] * c.step_cpu + evals * c.eval_cpu) * len(target["seeds"])
    runs_n = len(target["arms"]) * len(target["seeds"]) * len(conds)
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


def full_references(
    tiny_curves: pd.DataFrame, stats: pd.DataFrame, meta: dict, skip: dict | None = None, draws: int = 2000
) -> dict:
    """The base condition's references at full strength: the default job's (a) GRPO and PODS runs (the base
    ``grpo`` and ``pods`` arms are its seeds 0-7, the same runs) read on the arena's evaluation grid to its step
    budget. Returns the seed counts, where the arena's draw of each reference (its seeds' mean AUC/B) sits among
    ``draws`` random subsets of as many seeds (its percentile; generator seeded 0), and each base arm against
    each 64-seed reference (Welch, unpaired; Holm within its family, the 64-seed reference and the measure)."""
    budget, every = meta["steps"], meta["eval_every"]
    c = tiny_curves[
        (tiny_curves.setting == "a")
        & (tiny_curves.metric == "accuracy")
        & (tiny_curves.dataset == tiny_curves.primary_dataset)
        & tiny_curves.role.isin(["baseline", "pods"])
        & (tiny_curves.step % every == 0)
        & (tiny_curves.step <= budget)
    ]
    auc: dict[str, dict[int, float]] = {"grpo": {}, "pods": {}}
    for (role, seed), g in c.groupby(["role", "seed"], sort=True):
        g = g.drop_duplicates("step").sort_values("step")
        arm = "grpo" if role == "baseline" else "pods"
        auc[arm][int(seed)] = _area(g.step.to_numpy(float), g.value.to_numpy(float), float(budget))[0]
    base = stats[stats.condition == "base"]
    rng = np.random.default_rng(0)
    out: dict = {"seeds": {a: len(v) for a, v in auc.items()}, "percentile": {}, "rows": []}
    for ref, vals in auc.items():
        ours = base[base.arm == ref].auc_step.to_numpy(float)
        pool = np.array(list(vals.values()))
        means = np.array([rng.choice(pool, len(ours), replace=False).mean() for _ in range(draws)])
        out["percentile"][ref] = float(np.mean(means < ours.mean()))
        for arm in meta["arms"]:
            if arm == ref or ("base", arm) in (skip or {}):
                continue
            a = base[base.arm == arm]
            mine = auc[arm] if arm in auc else dict(zip(a.seed, a.auc_step, strict=True))
            out["rows"].append({"arm": arm, "reference": ref, **arena_stats.difference(mine, vals, CI)})
    rows = pd.DataFrame(out["rows"])
    for _ref, idx in rows.groupby("reference").groups.items():
        rows.loc[idx, "p_holm"] = arena_stats.holm(rows.loc[idx, "p"].to_numpy(float))
    out["rows"] = rows
    return out


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
    from pods_repro.analysis import arena_record
    from pods_repro.analysis.record import host_info

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
    from pods_repro.analysis import arena_record
    from pods_repro.arena import ArenaError, load_arena

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
                from pods_repro.analysis.record import NOTHING_MISSING

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
                                (curves, steps, *tables[:3]), strict=True):  # fmt: skip
                df.to_csv(out_dir / f"{name}.csv", index=False, float_format="%.6g")
                written.append(out_dir / f"{name}.csv")
        if args.page:
            from pods_repro.analysis.arena_page import render_page

            tiny_path = registry.repo_file(TINY_CURVES)
            tiny = pd.read_csv(tiny_path) if tiny_path.is_file() else None
            width = expected_width(tiny, meta["steps"], len(meta["seeds"])) if tiny is not None else None
            if tiny is not None and "base" in done and tables[3]:
                tables[3]["full_refs"] = full_references(tiny, tables[3]["stats"], meta, tables[3]["skip"])
            if meta.get("scale") == full["scale"]:  # conditions of the grid not yet in the record read "not recorded"
                meta = {**meta, "conditions": {**meta["conditions"], **full["conditions"]}}
            cost = {
                "full": cost_estimate(runs, meta, full),
                **{c: cost_estimate(runs, meta, {**full, "conditions": {c: o}}) for c, o in meta["conditions"].items()},
            }
            page = render_page(tables, runs, meta, source.rstrip("/"), full, cost, width)
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


def prepare_steps(steps: pd.DataFrame, meta: dict) -> tuple[pd.DataFrame, dict]:
    """The step table with what the update computed (``computed_rollouts``, ``computed_tokens``) and each
    step's cost in every measure of :data:`COMPUTE`; and the weights used: the CPU fit of the record's steps
    (:func:`pods_repro.analysis.arena_stats.cpu_weights`) and the GPU cost model (None without its file)."""
    s = arena_stats.computed_rows(steps, meta)
    cpu = arena_stats.cpu_weights(s)
    s["cost_tokens"] = s.gen_tokens.fillna(0) + s.computed_tokens
    if math.isfinite(cpu["ratio"]):  # else no per-compute reading (the steps cannot separate the two costs)
        s["cost_compute"] = s.gen_tokens.fillna(0) + cpu["ratio"] * s.computed_tokens
    path = registry.repo_file(arena_stats.GPU_COST_MODEL)
    gpu = arena_stats.gpu_model(path) if path.is_file() else None
    if gpu is not None:
        s["cost_gpu_s"] = arena_stats.gpu_seconds(s, gpu)
    return s, {"cpu": cpu, "gpu": gpu}


def _tables(curves: pd.DataFrame, steps: pd.DataFrame, meta: dict, done: list[str]) -> tuple:
    """(arms, vs, tokens, info) over the conditions whose runs are all recorded (empty tables when none is);
    info: the compute weights, the filter arms' firing, the arms not exercised, per condition the arms whose
    curves equal PODS's."""
    curves, steps = curves[curves.condition.isin(done)], steps[steps.condition.isin(done)]
    if curves.empty:
        return pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {}
    meta_done = {**meta, "conditions": {c: o for c, o in meta["conditions"].items() if c in done}}
    steps, weights = prepare_steps(steps, meta)
    same = same_as_pods(curves, done)
    fire = arena_stats.firing(steps, meta_done)
    skip = arena_stats.not_exercised(fire, same)
    stats = run_stats(curves, steps, meta["steps"])
    vs = vs_table(stats, meta_done, series=run_series(curves, steps), skip=skip)
    info = {**weights, "firing": fire, "skip": skip, "same": same, "stats": stats}
    return arm_table(stats, meta_done), vs, token_table(steps, meta_done), info


def main(argv: Sequence[str] | None = None, prog: str = "pods analysis arena") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    add_arguments(p)
    return run(p.parse_args(argv))
