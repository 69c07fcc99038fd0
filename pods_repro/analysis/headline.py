"""The README's first screen (its generated results block), from the records and the computed tables.

It states what the authors' released logs establish, the tiny default job's verdict in every setting with its
interval, three readings of the tiny job's speed-up side by side (per optimizer step, by the CPU clock of the
machine that ran it, projected to the paper's hardware), where (a)'s verdict depends on its budget and on
the evaluation grid, and how far few seeds move the statistic. Every verdict comes from
:mod:`pods_repro.analysis.verdicts`.
"""

from __future__ import annotations

import math

import pandas as pd

from pods_repro import registry
from pods_repro.analysis import jobtime, verdicts
from pods_repro.analysis.intervals import MIN_SEEDS_SPEEDUP
from pods_repro.analysis.page_parts import (
    BUDGETS,
    NOT_RECORDED,
    PAPER_BARS_SPS,
    Records,
    Tables,
    by_verdict,
    ci_text,
    letters,
    md_table,
    minutes,
    num,
    paper_per_step,
    partial_text,
    row_of,
    tiny_missing,
    verdict_list,
)
from pods_repro.analysis.speedups import default_comparisons

HEADLINE_HEAD = [
    "setting",
    "paper: Table 3 (its per-step reading)",
    "released logs: wall-clock",
    "released logs: per step",
    "tiny job: per step",
    "tiny job: CPU clock",
    "tiny job: paper hardware (projected)",
    "tiny job: mean accuracy, PODS - baseline (points)",
    "tiny seeds",
]

COLUMNS_NOTE = (
    "Speed-up = the baseline's time (or optimizer steps) to first reach 0.99 x its peak mean accuracy over "
    'PODS\'s; [95% interval over seeds]; "never N%": the share of bootstrap resamples in which PODS never reaches '
    "the target (counted as a speed-up of 0). Per step: counted in optimizer steps, which no hardware changes; "
    "CPU clock: in the training steps' CPU seconds on the machine that ran the tiny job; paper hardware: the same steps priced at "
    "the authors' seconds per step (a projection). Mean accuracy: over each run's optimizer-step budget, Welch "
    "interval. Table 3's per-step reading is its speed-up x s/step(PODS) / s/step(baseline) of the released runs."
)


def _n(row: pd.Series) -> int:
    return int(min(row["n_seeds_baseline"], row["n_seeds_pods"]))


def speedup_cell(
    row: pd.Series | None, col: str, paper: float | None = None, same_data: bool = False, named: bool = False
) -> str:
    """'2.14 [1.64, 2.71]: faster; agrees with the paper', or 'not resolved at 1 seed' without an interval."""
    if row is None:
        return "-"
    lo, hi = float(row.get(f"{col}_ci_low", math.nan)), float(row.get(f"{col}_ci_high", math.nan))
    if math.isnan(lo):
        return verdicts.few_seeds(_n(row))
    text = f"{ci_text(row, col)}: {verdicts.speedup(lo, hi)}"
    if paper is not None and not math.isnan(paper):
        text += f"; against {paper:.2f}," if named else ";"
        text += f" {verdicts.against(lo, hi, paper, same_data=same_data)}"
    return text


def _wall_cell(row: pd.Series | None) -> str:
    """The released logs' wall-clock cell: Table 3 is computed from these runs, so the verdict is 'reproduces'."""
    if row is None:
        return "no released logs"
    lo, hi = float(row["ci_low"]), float(row["ci_high"])
    return (f"{ci_text(row, 'speedup_exact', '')}: {verdicts.speedup(lo, hi)}; "
            f"{verdicts.against(lo, hi, float(row['paper_speedup']), same_data=True)}")  # fmt: skip


def mean_cell(means: pd.DataFrame, letter: str) -> str:
    """PODS minus the baseline in mean accuracy over the budget: '+1.9 [+1.6, +2.1]: higher'."""
    hit = means[means["setting"].astype(str) == letter] if len(means) else means
    if not len(hit):
        return "-"
    r = hit.iloc[0]
    if math.isnan(float(r["diff_low"])):
        return verdicts.few_seeds(_n(r))
    lo, hi = float(r["diff_low"]), float(r["diff_high"])
    return f"{float(r['diff']):+.1f} [{lo:+.1f}, {hi:+.1f}]: {verdicts.difference(lo, hi)}"


def _paper_cell(rec: Records, letter: str) -> str:
    paper = registry.SETTINGS[letter].paper_speedup
    cell = f"{paper:.1f}" if paper else "-"
    per_step = paper_per_step(rec)
    if letter in per_step and letter in PAPER_BARS_SPS:
        ga, pods = PAPER_BARS_SPS[letter]
        cell += f" ({per_step[letter]:.2f} per optimizer step; {paper * pods / ga:.2f} by the paper's bars)"
    elif letter in per_step:
        cell += f" ({per_step[letter]:.2f} per step)"
    return cell


def _headline_rows(rec: Records, t: Tables) -> list[list[str]]:
    rows, per_step = [], paper_per_step(rec)
    for letter, srec in registry.SETTINGS.items():
        if len(letter) != 1:
            continue
        r_rel, r_tiny = row_of(t.released, letter), row_of(t.tiny, letter)
        rel_step = speedup_cell(r_rel, "speedup_steps", per_step.get(letter), same_data=True)
        if r_tiny is None:
            tiny = [tiny_missing(rec, letter)] * 5
        else:
            paper = srec.paper_speedup or math.nan
            tiny = [speedup_cell(r_tiny, "speedup_steps", per_step.get(letter, math.nan)),
                    speedup_cell(r_tiny, "speedup_wall"), speedup_cell(r_tiny, "speedup_paper_hw", paper),
                    mean_cell(t.tiny_means, letter),
                    f"{int(r_tiny['n_seeds_baseline'])} + {int(r_tiny['n_seeds_pods'])}"]  # fmt: skip
        rows.append([f"({letter}) {srec.title}", _paper_cell(rec, letter), _wall_cell(r_rel), rel_step, *tiny])
    return rows


def _released_finding(rec: Records, t: Tables) -> str:
    rel = t.released
    exact = sum(abs(float(r["speedup"]) - float(r["paper_speedup"])) < 1e-9 for _, r in rel.iterrows())
    wall = by_verdict(rel.rename(columns={"ci_low": "w_ci_low", "ci_high": "w_ci_high"}), "w")
    seeds = [_n(r) for _, r in rel.iterrows()]
    per_step, sides = paper_per_step(rec), {}
    for letter, value in per_step.items():
        r = row_of(rel, letter)
        if r is not None:
            v = verdicts.against(float(r["speedup_steps_ci_low"]), float(r["speedup_steps_ci_high"]), value, True)
            sides.setdefault(v, []).append(letter)
    text = (
        f"**The authors' released logs reproduce Table 3's printed speed-ups** ({exact} of {len(rel)} settings "
        f"exactly; (d) has no logs), **but their {min(seeds)}-{max(seeds)} seeds per arm resolve less than the table "
        f"says**: wall-clock, {verdict_list(wall)}."
    )
    b = row_of(t.answer_only, "b")
    if b is not None and row_of(rel, "b") is not None:
        reached = float(b["t_pods_s"]) < math.inf
        lo, hi = float(b["ci_low"]), float(b["ci_high"])
        point = f"{float(b['speedup_exact']):.2f}" if reached else "0"
        text += (
            f" (b)'s {float(row_of(rel, 'b')['paper_speedup']):.1f} is on answer-and-format accuracy; on answer "
            f"accuracy alone PODS {'reaches' if reached else 'never reaches'} GRPO's target (speed-up {point} "
            f"[{lo:.2f}, {hi:.2f}], PODS missing the target in {float(b['p_pods_never']):.0%} of resamples: "
            f"{verdicts.speedup(lo, hi)})."
        )
    return text + (
        " Table 3's per-step figures are computed from these same runs, so read per step the logs can only "
        "reproduce them: " + "; ".join(f"{v} in {letters(x)}" for v, x in sorted(sides.items())) + "."
    )


def _tiny_finding(rec: Records, t: Tables) -> str:
    """The tiny job's verdict per setting: per step and in mean accuracy."""
    per_step, parts, means = paper_per_step(rec), [], []
    for letter in [s for s in registry.SETTINGS if len(s) == 1]:
        r = row_of(t.tiny, letter)
        if r is None:
            parts.append(f"({letter}) {tiny_missing(rec, letter)}")
            continue
        parts.append(f"({letter}) {speedup_cell(r, 'speedup_steps', per_step.get(letter, math.nan), named=True)}")
        means.append(f"({letter}) {mean_cell(t.tiny_means, letter)}")
    text = "**The tiny default job** (CPU analogues of the settings), per optimizer step: " + "; ".join(parts) + "."
    if means:
        text += " Mean accuracy over the budget, PODS minus the baseline (points): " + "; ".join(means) + "."
    return text


def _budget_finding(rec: Records, t: Tables) -> str | None:
    """Where (a)'s verdict against the paper depends on its budget and on the evaluation grid."""
    per_step = paper_per_step(rec).get("a")
    cuts = [(b, row_of(t.budgets.get(b), "a")) for b in BUDGETS]
    cuts = [(b, r) for b, r in cuts if r is not None]
    if per_step is None or not cuts:
        return None
    reads = [f"{b} steps {speedup_cell(r, 'speedup_steps', per_step)}" for b, r in cuts]
    text = f"**(a)'s verdict depends on its budget**: against the paper's per-step {per_step:.2f}, cut at " + (
        "; ".join(reads) + f" (the record's budget is {int(row_of(t.tiny, 'a')['last_at_baseline'])})."
    )
    x = t.crossing
    if x is not None:
        text += (
            f" With each crossing interpolated between evaluations instead of read at the first one at or above "
            f"the target, the full budget reads {x['point']:.2f} [{x['low']:.2f}, {x['high']:.2f}]: "
            f"{verdicts.speedup(x['low'], x['high'])}; {verdicts.against(x['low'], x['high'], per_step)}."
        )
    return text


def _model_source(source: str) -> str:
    """'the package's cost model (fitted to ..., `pods_repro/analysis/cost_model.py`)' from a clock's source text."""
    fit = source[source.find("fitted") :].split(", pods/")[0].rstrip(")") if "fitted" in source else ""
    return f"the package's cost model ({fit + ', ' if fit else ''}`pods_repro/analysis/cost_model.py`)"


def _clock_finding(rec: Records, t: Tables) -> str | None:
    """The three readings of the tiny (a) side by side, and why they differ."""
    r = row_of(t.tiny, "a")
    if r is None:
        return None
    paper = registry.SETTINGS["a"].paper_speedup
    sources: dict[str, list[str]] = {}
    for _, x in t.tiny.iterrows():
        src = str(x.get("paper_sps_source", ""))
        key = _model_source(src) if src.startswith("prediction") else "the authors' released seconds per step"
        sources.setdefault(key, []).append(str(x["setting"]))
    how = "; ".join(f"{k} for {letters(v)}" for k, v in sources.items())
    cpu = float(r["sps_pods"]) / float(r["sps_baseline"])
    gpu = float(r["paper_sps_pods"]) / float(r["paper_sps_baseline"])
    return (
        f"**Three readings of the tiny (a)'s same runs**: per optimizer step "
        f"{speedup_cell(r, 'speedup_steps', paper_per_step(rec).get('a', math.nan), named=True)}; by the CPU clock of the "
        f"machine that ran it {speedup_cell(r, 'speedup_wall')}; projected to the paper's hardware "
        f"{speedup_cell(r, 'speedup_paper_hw', paper, named=True)} (a projection: each arm's steps "
        f"priced at {how}). They differ because PODS needs fewer steps but each generates {rollouts(rec, 'a'):g}x the "
        f"rollouts: a PODS step costs {cpu:.2f}x a GRPO step on this CPU and {gpu:.2f}x on the authors' GPU, where "
        "generation is cheap (Fig. 1)."
    )


def rollouts(rec: Records, letter: str) -> float:
    """How many rollouts a PODS step generates per baseline step's: n(PODS) / n(baseline) of the comparison."""
    comp = [c for c in default_comparisons(rec.tiny_curves) if str(c.setting) == letter]
    return float(comp[0].pods["n"]) / float(comp[0].baseline["n"]) if comp else math.nan


def _bias_finding(t: Tables) -> str | None:
    sub = t.subsample
    if sub is None or not len(sub) or len(sub) < 2:
        return None
    seen = sub[sub["p_faster"] >= 0.9]["k"]  # the fewest seeds that see (a)'s effect in 9 of 10 experiments
    enough = int(seen.min()) if len(seen) else int(sub["k"].max())
    n = sorted({_n(r) for _, r in t.tiny.iterrows() if _n(r) < enough})
    tail = (f" So the settings at {n[0]}-{n[-1]} seeds per arm (fewer than the {enough} that see it in 9 of 10 "
            "experiments) cannot resolve an (a)-sized speed-up by time-to-peak; the mean-accuracy column, which "
            "uses every evaluation, is read beside it." if n else "")  # fmt: skip
    few, full = sub[~sub["all_seeds"]], sub[sub["all_seeds"]].iloc[0]
    ks = ", ".join(str(int(k)) for k in few["k"])
    one = few.iloc[0]
    return (
        f"**Few seeds move the statistic**: drawing k seeds per arm from (a)'s {int(full['k'])} + {int(full['k'])}, "
        f"the median per-step speed-up at k = {ks} is "
        + " / ".join(num(x) for x in few["median"])
        + f" ({num(float(full['median']))} on all), {int(one['k'])} seed per arm spans "
        f"[{num(float(one['low']))}, {num(float(one['high']))}] (central 95% of {int(one['draws'])} draws), and a "
        f"k-seed experiment calls PODS faster in "
        + " / ".join(f"{x:.0%}" for x in few["p_faster"])
        + f" of draws (no interval below {MIN_SEEDS_SPEEDUP} seeds).{tail}"
    )


def findings(rec: Records, t: Tables) -> list[str]:
    """What the package found, one sentence group each, from the numbers (the README's first screen)."""
    out = [_released_finding(rec, t)]
    if t.tiny is None:
        return [*out, partial_text(rec) or NOT_RECORDED]
    out.append(_tiny_finding(rec, t))
    return out + [x for x in (_budget_finding(rec, t), _clock_finding(rec, t), _bias_finding(t)) if x]


def job_sentence(rec: Records) -> str:
    job = rec.job
    if job is None or rec.jobs is None:
        return NOT_RECORDED
    if partial_text(rec):
        return partial_text(rec)
    sittings = job.get("sittings") or []
    how = f" in {len(sittings)} sittings" if len(sittings) > 1 else " from a fresh clone"
    key = jobtime.CPU_COLUMN if jobtime.has_cpu(rec.jobs) else "seconds"
    cores = int(job.get("cores", 2))
    return (
        f"The tiny default job (every figure and table of the tiny scale) took {minutes(float(job['wall_s']))}{how} "
        f"on {cores} shared cores ({job.get('cpu', 'a CPU')}); from its jobs' "
        f"{'CPU' if key != 'seconds' else 'wall'} seconds, {minutes(jobtime.project(rec.jobs, cores, key))} on "
        f"{cores} idle cores, {minutes(jobtime.project(rec.jobs, 8, key))} on 8 and "
        f"{minutes(jobtime.project(rec.jobs, 16, key))} on 16."
    )


def headline(rec: Records, t: Tables, page_link: str = "docs/results.md") -> str:
    """The README's first screen: the findings, the table, what its columns mean, the job's state."""
    lines = [f"- {x}" for x in findings(rec, t)]
    lines += ["", *md_table(HEADLINE_HEAD, _headline_rows(rec, t)), ""]
    lines.append(
        f"{COLUMNS_NOTE} [docs/results.md]({page_link}) has every number with its command, its data and its "
        f"verdict rule. {job_sentence(rec)}"
    )
    return "\n".join(lines) + "\n"
