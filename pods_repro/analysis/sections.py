"""The sections of the results page (docs/results.md).

Each section is a function of the records and the computed tables that returns its Markdown (rows and
verdicts); :func:`page` fills the named slots of the page's template (``results_page.md`` beside this
module) with them. Every verdict comes from :mod:`pods_repro.analysis.verdicts` (the rules the page states); the
records, the tables and the formatting are :mod:`pods_repro.analysis.page_parts`'s, the README's first screen
:mod:`pods_repro.analysis.headline`'s. It imports neither :mod:`pods_repro.analysis.results` nor anything that does.
"""

from __future__ import annotations

import math
from pathlib import Path
from string import Template

import pandas as pd

from pods_repro import registry
from pods_repro.analysis import jobtime, seed_bias, verdicts
from pods_repro.analysis.headline import findings, headline, job_sentence  # noqa: F401 - the first screen, for callers
from pods_repro.analysis.intervals import MIN_SEEDS_SPEEDUP
from pods_repro.analysis.page_parts import (
    BOOT_SEED,
    BUDGETS,
    MAIN_JOB,
    NOT_RECORDED,
    PAPER_BARS_SPS,
    RECORD_CMD,
    RELEASED_CMD,
    Records,
    Tables,
    by_verdict,
    ci_text,
    lcell,
    letters,
    md_table,
    minutes,
    num,
    paper_per_step,
    partial_text,
    pooled,
    row_of,
    speedup_verdict,
    tiny_missing,
    verdict_list,
)
from pods_repro.analysis.speedups import DEFAULT_N_BOOT

TEMPLATE = Path(__file__).with_name("results_page.md")


# ----------------------------------------------------------------------------------------------
# the page's sections


def mc_sentence(t: Tables) -> str:
    """The Monte-Carlo error of the page's bootstrap bounds (the tables' `*_ci_mc` columns), in words."""
    tables = [x for x in (t.released, t.tiny, t.gpu, *t.budgets.values()) if x is not None and not x.empty]
    worst = {}
    for col, what in (("speedup_steps_ci_mc", "per-step"), ("ci_mc", "eval-grid")):
        vals = pd.concat([x[col] for x in tables if col in x]).dropna()
        worst[what] = float(vals.max()) if len(vals) else math.nan
    n_boot = int(t.released["n_boot"].iloc[0]) if "n_boot" in t.released else DEFAULT_N_BOOT
    return (
        f"The bounds are read far in the bootstrap's tails (0.1% each side at 5 seeds per arm) from {n_boot} "
        f"resamples with seed {BOOT_SEED}: another seed moves a bound by up to its Monte-Carlo error (the tables' "
        f"`ci_mc` columns), here at most {num(worst['per-step'])} for the per-step speed-ups and "
        f"{num(worst['eval-grid'])} for the eval-grid ones, whose bounds are ratios of grid times (a bound "
        "between two of them moves by a whole grid point): a bound's second decimal is not settled."
    )


def sec_table3(rec: Records, t: Tables) -> str:
    rows, exact = [], 0
    for _, r in t.released.iterrows():
        paper = float(r["paper_speedup"])
        exact += int(abs(float(r["speedup"]) - paper) < 1e-9)
        never = f", never {float(r['p_pods_never']):.0%}" if float(r["p_pods_never"]) > 0 else ""
        rows.append([f"({r['setting']})", f"{paper:.1f}", f"{float(r['speedup']):.1f} ({float(r['speedup_exact']):.2f})",
                     f"[{num(float(r['ci_low']))}, {num(float(r['ci_high']))}]{never}",
                     verdicts.speedup(float(r["ci_low"]), float(r["ci_high"])),
                     f"{int(r['n_seeds_baseline'])} + {int(r['n_seeds_pods'])}"])  # fmt: skip
    L = md_table(["setting", "paper", "released logs (exact)", "95% CI over seeds", "verdict", "seeds"], rows)
    wall = by_verdict(t.released.rename(columns={"ci_low": "w_ci_low", "ci_high": "w_ci_high"}), "w")
    widths = [float(r["ci_high"]) - float(r["ci_low"]) for _, r in t.released.iterrows()]
    seeds = [int(min(r["n_seeds_baseline"], r["n_seeds_pods"])) for _, r in t.released.iterrows()]
    L += ["", f"Verdict: the point estimates reproduce Table 3 ({exact} of {len(t.released)} settings exactly as "
          f"printed; (d) has no released logs). The intervals, {min(widths):.1f}-{max(widths):.1f} wide over the "
          f"authors' {min(seeds)}-{max(seeds)} seeds per arm, give: {verdict_list(wall)}. The logs establish a wall-clock speed-up above 1 "
          f"only in {letters(wall.get('faster', []))}."]  # fmt: skip
    return "\n".join(L)


def _per_step_example(rec: Records) -> str:
    """'(a): T x s(PODS) / s(GRPO) = P': the per-step reading's arithmetic, from the released seconds per step."""
    steps, per_step = rec.released_steps, paper_per_step(rec)
    if "a" not in per_step:
        return "-"
    sub = steps[steps["setting"].astype(str) == "a"]
    sps = [float(a["time_s"].mean() / a["steps"].mean()) for a in (sub[sub["role"] == r] for r in registry.ROLES)]
    return f"(a): {registry.SETTINGS['a'].paper_speedup:.1f} x {sps[1]:.2f} / {sps[0]:.2f} = {per_step['a']:.2f}"


def sec_per_step(rec: Records, t: Tables) -> str:
    per_step = paper_per_step(rec)
    rows = []
    for letter in [s for s in registry.SETTINGS if len(s) == 1]:
        r_rel, r_tiny = row_of(t.released, letter), row_of(t.tiny, letter)
        bars = "-"
        if letter in PAPER_BARS_SPS and registry.SETTINGS[letter].paper_speedup:
            ga, pods = PAPER_BARS_SPS[letter]
            bars = f"{registry.SETTINGS[letter].paper_speedup * pods / ga:.2f}"

        def verdict(r, letter=letter, same_data=False):
            if r is None:
                return "-"
            lo, hi = float(r["speedup_steps_ci_low"]), float(r["speedup_steps_ci_high"])
            v = verdicts.speedup(lo, hi)
            if v == "no interval":
                return verdicts.few_seeds(int(min(r["n_seeds_baseline"], r["n_seeds_pods"])))
            if letter not in per_step:
                return v
            return f"{v}; {verdicts.against(lo, hi, per_step[letter], same_data=same_data)}"

        rows.append([
            f"({letter})",
            f"{per_step[letter]:.2f}" if letter in per_step else "-",
            bars,
            "-" if r_rel is None else ci_text(r_rel, "speedup_steps"),
            verdict(r_rel, same_data=True),
            tiny_missing(rec, letter) if r_tiny is None else ci_text(r_tiny, "speedup_steps"),
            verdict(r_tiny),
        ])  # fmt: skip
    head = ["setting", "paper per optimizer step", "paper per step, its bars", "released logs (i)", "verdict",
            "tiny default job (i)", "verdict"]  # fmt: skip
    step = by_verdict(t.released, "speedup_steps")
    L = md_table(head, rows)
    L += ["", "\"Paper per optimizer step\" is Table 3 x s/step(PODS) / s/step(baseline), the seconds per optimizer "
          f"step of the released runs ({_per_step_example(rec)}; (e)/(f) count optimizer steps from the logs' "
          "wandb `_step` as [fidelity.md](fidelity.md#the-released-ef-step-counter) settles it). \"Its bars\" uses "
          "the paper's own Fig. 3(e)/(f) seconds-per-step bars (GRPO-GA / PODS "
          + ", ".join(f"({k}) {ga:.2f} / {p:.2f} s" for k, (ga, p) in PAPER_BARS_SPS.items())
          + "), which count logging calls as steps. The released logs' per-step reading and the paper's per-step "
          "figure come from the same runs, so where the interval contains it the logs reproduce the printed figure; "
          "that is no second test of it.", "",
          f"Verdict: per optimizer step the released logs give {verdict_list(step)}."]  # fmt: skip
    return "\n".join(L)


def sec_budgets(rec: Records, t: Tables) -> str:
    L = []
    if t.tiny is None or row_of(t.tiny, "a") is None:
        return partial_text(rec) or NOT_RECORDED
    rows, points, per_step = [], [], paper_per_step(rec).get("a", math.nan)
    for b in BUDGETS:
        r, p = row_of(t.budgets[b], "a"), pooled(t.tiny_levels[b], "a")
        if r is None:
            continue
        points.append((b, r, p))
        against = verdicts.against(float(r["speedup_steps_ci_low"]), float(r["speedup_steps_ci_high"]), per_step)
        rows.append([str(b), ci_text(r, "speedup_steps"), f"{speedup_verdict(r, 'speedup_steps')}; {against}",
                     "-" if p is None else lcell(p),
                     f"{num(float(r['peak_at_baseline']), 0)} of {num(float(r['last_at_baseline']), 0)}",
                     num(100 * float(r.get("trend_baseline", math.nan)), 1)])  # fmt: skip
    L += md_table(["budget (steps)", "(i) steps to 0.99 x GRPO's peak", f"verdict (paper per step {num(per_step)})",
              "pooled fixed levels (0.25-0.9 of the rise)", "GRPO's mean peaks at step",
              "GRPO's 2nd-half trend (points)"], rows)  # fmt: skip
    L.append("")
    text = ("The same runs read as if their step budget had ended earlier (`pods analysis time-to-peak --until-step "
            "B`; the tiny runs train the same up to any step).")  # fmt: skip
    if len(points) >= 2:
        (b0, r0, p0), (b1, r1, p1) = points[0], points[-1]
        text += (f" From {b0} to {b1} steps, (i) moves from {num(float(r0['speedup_steps']))} to "
                 f"{num(float(r1['speedup_steps']))}")  # fmt: skip
        if p0 is not None and p1 is not None:
            text += f" and the pooled fixed levels from {num(float(p0['speedup']))} to {num(float(p1['speedup']))}"
        text += "."
    L.append(text)
    return "\n".join(L)


def sec_bias(rec: Records, t: Tables) -> str:
    """How far few seeds and the evaluation grid move the tiny (a)'s per-step speed-up."""
    sub = t.subsample
    if sub is None or not len(sub):
        return partial_text(rec) or NOT_RECORDED
    per_step = paper_per_step(rec).get("a", math.nan)
    rows = [[f"{int(r['k'])}" + (" (all)" if r["all_seeds"] else ""), str(int(r["draws"])), num(float(r["median"])),
             f"[{num(float(r['low']))}, {num(float(r['high']))}]", f"{float(r['p_interval']):.0%}",
             f"{float(r['p_faster']):.0%}"] for _, r in sub.iterrows()]  # fmt: skip
    L = md_table(["seeds per arm (k)", "experiments drawn", "median (i)", "central 95% of (i)",
                  "with an interval", "called faster"], rows)  # fmt: skip
    L += ["", f"Each experiment draws k of the recorded seeds of each arm without replacement (generator seed "
          f"{BOOT_SEED}) and reads (i) and its interval as the table does ({int(sub['draws'].max())} experiments, "
          f"{seed_bias.SUBSAMPLE_BOOT} bootstrap resamples each, so a share carries a few points of Monte-Carlo "
          "error). The median moves with k: the statistic is biased at few seeds, and below "
          f"{MIN_SEEDS_SPEEDUP} seeds per arm there is no interval at all."]  # fmt: skip
    x = t.crossing
    if x is not None:
        r = row_of(t.tiny, "a")
        L += ["", f"The evaluation grid: read at the first evaluation at or above the target, as the table does, "
              f"(i) is {ci_text(r, 'speedup_steps')}; with each arm's crossing interpolated linearly between the two "
              f"evaluations around it, {x['point']:.2f} [{x['low']:.2f}, {x['high']:.2f}] "
              f"({x['point'] - float(r['speedup_steps']):+.2f}): {verdicts.speedup(x['low'], x['high'])}; "
              f"{verdicts.against(x['low'], x['high'], per_step)} (paper per step {num(per_step)})."]  # fmt: skip
    return "\n".join(L)


def sec_ga(rec: Records, t: Tables) -> str:
    rows = []
    for source, table in (("released logs", t.released), ("tiny default job", t.tiny)):
        for letter in ("e", "f"):
            r = row_of(table, letter)
            if r is None:
                continue
            ratio = float(r["sps_baseline"]) / float(r["sps_pods"])
            rows.append([f"({letter}) {source}", ci_text(r, "speedup_steps"), speedup_verdict(r, "speedup_steps"),
                         f"{ratio:.2f}", ci_text(r, "speedup_wall"), ci_text(r, "speedup_paper_hw")])  # fmt: skip
    L = md_table(["setting", "(i) per step", "verdict", "GRPO-GA s/step over PODS's", "(ii) training time",
             "(iii) paper hardware"], rows)  # fmt: skip
    parts, ratios = [], []
    for letter in ("e", "f"):
        r = row_of(t.released, letter)
        if r is not None:
            ratios.append(float(r["sps_baseline"]) / float(r["sps_pods"]))
            parts.append(f"({letter}) per step {ci_text(r, 'speedup_steps')}: {speedup_verdict(r, 'speedup_steps')}")
    bars = ", ".join(f"{ga / p:.2f}x ({k})" for k, (ga, p) in PAPER_BARS_SPS.items())
    L += ["", "Verdict (released logs): " + "; ".join(parts) + ". A GRPO-GA optimizer step costs "
          + (f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios else "-") + f" a PODS step (the paper's bars: {bars}, "
          "counting logging calls as steps)."]  # fmt: skip
    return "\n".join(L)


def sec_ablations(rec: Records, t: Tables) -> str:
    ab = t.ablations
    ours = ab[(ab["source"] == "ours")]
    rel_step = ab[(ab["source"] == "released") & (ab["axis"] == "step")]
    rel_hour = ab[(ab["source"] == "released") & (ab["axis"] == "time_s")]

    def cell(x):
        if x is None or not len(x):
            return "-"
        x = x.iloc[0]
        v = verdicts.difference(float(x["diff_low"]), float(x["diff_high"]))
        v = verdicts.few_seeds(int(x["n_seeds"])) if v == "not resolved" else v
        return (f"{100 * float(x['diff']):+.1f} [{100 * float(x['diff_low']):+.1f}, "
                f"{100 * float(x['diff_high']):+.1f}]: {v}")  # fmt: skip

    rows = []
    for _, r in (ours if len(ours) else rel_step).iterrows():
        if bool(r["reference"]):
            continue
        match = [x[(x["group"] == r["group"]) & (x["n"] == r["n"]) & (x["m"] == r["m"]) & (x["rule"] == r["rule"])
                 & (x["normalize"] == r["normalize"])] for x in (rel_hour, rel_step, ours)]  # fmt: skip
        tiny_cell = cell(pd.DataFrame([r])) if len(ours) else tiny_missing(rec, "a")
        rows.append([r["group"], r["arm"], f"{int(r['n'])}/{int(r['m'])}", cell(match[0]), cell(match[1]), tiny_cell])
    L = md_table(
        ["group", "arm", "n/m", "released, per hour", "released, per step", "tiny default job, per step"], rows
    )
    arms = ab[~ab["reference"].astype(bool)]
    n_of = {src: sorted({int(n) for n in arms[arms["source"] == src]["n_seeds"]}) for src in ("ours", "released")}
    said = "; ".join(f"{what} arms: {'-'.join(str(x) for x in sorted({n[0], n[-1]}))} seeds"
                     for what, n in (("tiny", n_of["ours"]), ("released", n_of["released"])) if n)  # fmt: skip
    L += ["", "Each arm's mean accuracy minus GRPO-PODS 64/16's over the last half of each run (points, 95% Welch "
          "t-interval over seeds; higher / lower by the rule above, and \"not resolved at k seeds\" where the "
          f"interval contains 0); {said}. The paper's sweep and rule claims are read here from those seeds: a "
          "difference smaller than the interval's half-width is not resolved by them. `pods analysis ablations`."]  # fmt: skip
    return "\n".join(L)


def sec_fig1(rec: Records, t: Tables) -> str:
    rows, falls = [], []
    for _, g in rec.gpu_index.iterrows():
        d = pd.read_csv(rec.data / g["file"]).set_index("rollouts")
        tok = d["per_token_gen_ms"]
        fall = float(tok.iloc[0] / tok[512]) if 512 in tok.index else math.nan
        if not math.isnan(fall) and g["counts"] == "yes":
            falls.append(fall)
        rows.append([str(g["gpu"]), str(g["model"]), "-" if math.isnan(fall) else f"{fall:.1f}x", str(g["note"]),
                     f"`{g['file']}`"])  # fmt: skip
    L = md_table(["GPU", "model", "per-token generation time, 8 -> 512 rollouts", "note", "data"], rows)
    if falls:
        spread = max(falls) / min(falls)
        stable = spread <= 1.5
        L += ["", f"The paper's Fig. 1 shows a 21x fall on 8 A100s with vLLM. On one GPU with HF generation the "
              f"warmed-up measurements of the same 85M model range {min(falls):.1f}x to {max(falls):.1f}x over "
              f"machines ({spread:.1f}x apart). Verdict (a measurement tests the paper's figure only when its spread "
              f"over machines is within 1.5x): " + ("it can be compared with the paper's." if stable else
              "not evidence for or against Fig. 1: generation here is launch-bound, so the fall measures Python "
              "and kernel-launch overhead.")]  # fmt: skip
    return "\n".join(L)


def sec_trl(rec: Records, t: Tables) -> str:
    trl_path = rec.data / "trl_generation.csv"
    if not trl_path.exists():
        return ""
    trl = pd.read_csv(trl_path)
    rows = [[str(r["trainer"]), num(float(r["generate_calls_per_step"])), num(float(r["generation_s_per_step"]), 3),
             num(float(r["step_s"]), 3)] for _, r in trl.iterrows()]  # fmt: skip
    L = ["## 7. The TRL drop-in generates as TRL does", "",
         *md_table(["trainer", "generate calls per step", "generation s per step", "step s"], rows)]  # fmt: skip
    base = trl.set_index("trainer")
    if {"trl.GRPOTrainer", "PODSGRPOTrainer"} <= set(base.index):
        p, q = base.loc["PODSGRPOTrainer"], base.loc["trl.GRPOTrainer"]
        ratio = p["generation_s_per_step"] / q["generation_s_per_step"]
        same = int(p["generate_calls_per_step"]) == int(q["generate_calls_per_step"])
        L += ["", f"Medians of {int(q['repeats'])} repeats, the trainers interleaved on one CPU (`pods bench "
              f"trl_generation --out {trl_path.name}`; the record keeps no spread). Verdict: `PODSGRPOTrainer` makes "
              f"{'the same number of' if same else 'other'} generate calls per step as TRL and takes {ratio:.2f}x TRL's "
              f"generation time at equal rollouts: {verdicts.within(ratio, 1.10)} the 1.10x the drop-in is held to. "
              "The per-group seeded generation that `pods train` keeps for reproducibility costs one call per prompt "
              "group."]  # fmt: skip
    return "\n".join(L)


def sec_cost(rec: Records, t: Tables) -> str:
    job = rec.job
    if job is None or rec.jobs is None:
        return NOT_RECORDED
    sittings = job.get("sittings") or []
    rows = [[str(x["sitting"]), str(x["runs_added"]), minutes(float(x["wall_s"])), f"{x['cores']} ({x['cpu']})",
             minutes(float(x.get("run_cpu_s") or 0.0))] for x in sittings]  # fmt: skip
    table = (
        md_table(["sitting", "runs added", "wall time", "cores (CPU)", "CPU time of its runs"], rows) if rows else []
    )
    if partial_text(rec):
        return "\n".join([partial_text(rec), "", *table])
    total = sum(j["seconds"] for j in rec.jobs)
    cores = int(job.get("cores", 2))
    proj = {k: jobtime.project(rec.jobs, k) for k in (cores, 8, 16)}
    text = (f"Measured: `{job['command']}` on {cores} cores ({job.get('cpu', '?')}, torch {job.get('torch', '?')}): "
            f"{minutes(float(job['wall_s']))}"
            + (f" (install {int(round(float(job['install_s'])))} s)" if job.get("install_s") else "")
            + f"; its {len(rec.jobs)} training, build and benchmark jobs took {minutes(total)} of one core in all "
            f"(wall). Replayed from the same per-job wall seconds (`pods analysis job-time`): {minutes(proj[cores])} "
            f"on {cores} (the check), {minutes(proj[8])} on 8, {minutes(proj[16])} on 16.")  # fmt: skip
    if jobtime.has_cpu(rec.jobs):
        cpu = sum(j[jobtime.CPU_COLUMN] for j in rec.jobs)
        pc = {k: jobtime.project(rec.jobs, k, jobtime.CPU_COLUMN) for k in (cores, 8, 16)}
        text += (f" In CPU seconds, what the jobs cost the processor whatever ran beside them: {minutes(cpu)} of one "
                 f"core, replayed {minutes(pc[cores])} on {cores} idle cores, {minutes(pc[8])} on 8, "
                 f"{minutes(pc[16])} on 16; the wall clock ran {total / cpu:.1f}x the CPU clock on the shared "
                 "host.")  # fmt: skip
    return "\n".join([text, "", *table]) if len(rows) > 1 else text


def page(rec: Records, t: Tables) -> str:
    """docs/results.md: the template's named slots filled by the sections above."""
    slots = {
        "mc_sentence": mc_sentence(t),
        "rules": verdicts.RULES,
        "glance": headline(rec, t, page_link="results.md").rstrip("\n"),
        "commands": f"Commands: released logs `{RELEASED_CMD}` (data: `benchmarks/results/released/`); tiny job "
        f"`{MAIN_JOB}`, recorded by `{RECORD_CMD}` (data: `benchmarks/results/tiny/`).",
        "table3": sec_table3(rec, t),
        "per_step": sec_per_step(rec, t),
        "budgets": sec_budgets(rec, t),
        "bias": sec_bias(rec, t),
        "ga": sec_ga(rec, t),
        "ablations": sec_ablations(rec, t),
        "fig1": sec_fig1(rec, t),
        "trl": sec_trl(rec, t),
        "cost": sec_cost(rec, t),
    }
    text = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(slots)
    return "\n".join(line.rstrip() for line in text.splitlines()).replace("\n\n\n\n", "\n\n").rstrip("\n") + "\n"
