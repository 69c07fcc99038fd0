"""The sections of the results page (docs/results.md) and the README's headline block.

Each section is a function of the records and the computed tables that returns its Markdown (rows and
verdicts); :func:`page` fills the named slots of the page's template (``results_page.md`` beside this
module) with them. Every verdict comes from :mod:`pods_repro.analysis.verdicts` (the rules the page states).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

import pandas as pd

from pods_repro import registry
from pods_repro.analysis import jobtime, verdicts
from pods_repro.analysis.speedups import DEFAULT_N_BOOT, released_comparisons

if TYPE_CHECKING:
    from pods_repro.analysis.results import Records, Tables

TEMPLATE = Path(__file__).with_name("results_page.md")
BUDGETS = (300, 450, 600)  # (a)'s main comparison read as if its budget had ended there
BOOT_SEED = 0
MAIN_JOB = "bash scripts/install.sh && .venv/bin/snakemake -c2 --config released_logs=DIR"
RECORD_CMD = "pods analysis record --root results --wall-s SECONDS"
RELEASED_CMD = "pods analysis released --logs DIR --sheet config/runs.tsv --out-dir results/released"
# The paper's Fig. 3(e)/(f) seconds-per-step bars (GRPO-GA, PODS), which divide the training time by wandb's
# `_step` / GA (docs/paper.md#seconds-per-step): the paper's own step ratio, beside the optimizer-step one.
PAPER_BARS_SPS = {"e": (21.85, 10.09), "f": (39.82, 9.50)}


# ----------------------------------------------------------------------------------------------
# formatting


def _num(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "never"
    return f"{x:.{digits}f}"


def _ci(row: pd.Series, point: str, prefix: str | None = None, digits: int = 2, never: bool = True) -> str:
    """'1.82 [1.45, 2.22]', '1.82 [0.00, 2.22], never 3%', '1.00 (n/a: 3 seeds)' for a speed-up column and its
    `{prefix}_ci_low/high` interval (`prefix` "": the eval-grid columns `ci_low/high`)."""
    prefix = point if prefix is None else prefix
    lo_col, hi_col = (f"{prefix}_ci_low", f"{prefix}_ci_high") if prefix else ("ci_low", "ci_high")
    value = float(row[point])
    reached = float(row.get("t_pods_s", 0)) < math.inf
    text = _num(value, digits) if reached else "never"
    lo, hi = float(row.get(lo_col, math.nan)), float(row.get(hi_col, math.nan))
    n = int(min(row.get("n_seeds_baseline", 0), row.get("n_seeds_pods", 0)))
    if math.isnan(lo):
        text += f" (n/a: {n} seed{'s' if n != 1 else ''})"
    else:
        text += f" [{_num(lo, digits)}, {_num(hi, digits)}]"
        p = float(row.get("p_pods_never", math.nan))
        if never and not math.isnan(p) and p > 0:
            text += f", never {p:.0%}"
    return text


def _lcell(row: pd.Series) -> str:
    """A levels-table row: '1.74 [1.10, 2.19]'."""
    text = _num(float(row["speedup"]))
    if not math.isnan(float(row["ci_low"])):
        text += f" [{_num(float(row['ci_low']))}, {_num(float(row['ci_high']))}]"
        p = float(row.get("p_pods_never", math.nan))
        if not math.isnan(p) and p > 0:
            text += f", never {p:.0%}"
    return text


def _md(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def _side(row: pd.Series, value: float, prefix: str) -> str:
    """Where an interval lies against `value`: 'above', 'below' or 'includes'."""
    lo, hi = float(row.get(f"{prefix}_ci_low", math.nan)), float(row.get(f"{prefix}_ci_high", math.nan))
    if math.isnan(lo):
        return "no interval"
    return "above" if lo > value else "below" if hi < value else "includes"


def _minutes(s: float) -> str:
    h, m = divmod(int(round(s / 60)), 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


def _row(table: pd.DataFrame | None, setting: str) -> pd.Series | None:
    if table is None or table.empty:
        return None
    hit = table[table["setting"].astype(str) == setting]
    return hit.iloc[0] if len(hit) else None


def _pooled(levels: pd.DataFrame, setting: str) -> pd.Series | None:
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


# ----------------------------------------------------------------------------------------------
# the headline


def _paper_cell(rec: Records, letter: str) -> str:
    """Table 3's speed-up and its per-step reading: Table 3 x s/step(PODS) / s/step(baseline), with the package's
    optimizer steps, and for (e)/(f) also with the paper's own seconds-per-step bars."""
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
    rows = []
    for letter, srec in registry.SETTINGS.items():
        if len(letter) != 1:
            continue
        r_rel, r_tiny = _row(t.released, letter), _row(t.tiny, letter)
        rel_wall = "no released logs" if r_rel is None else _ci(r_rel, "speedup_exact", "")
        rel_step = "-" if r_rel is None else _ci(r_rel, "speedup_steps")
        missing = _tiny_missing(rec, letter)
        tiny = missing if r_tiny is None else _ci(r_tiny, "speedup_steps")
        seeds = missing if r_tiny is None else f"{int(r_tiny['n_seeds_baseline'])} + {int(r_tiny['n_seeds_pods'])}"
        rows.append([f"({letter}) {srec.title}", _paper_cell(rec, letter), rel_wall, rel_step, tiny, seeds])
    return rows


HEADLINE_HEAD = [
    "setting",
    "paper: Table 3 (its per-step reading)",
    "released logs: wall-clock [95% CI]",
    "released logs: per step (i)",
    "tiny default job: per step (i)",
    "tiny seeds (GRPO + PODS)",
]

COLUMNS_NOTE = (
    "Speed-up = the baseline's time (or optimizer steps) to first reach 0.99 x its peak mean accuracy over "
    "PODS's. (i): counted in optimizer steps, which no hardware changes; wall-clock: in the authors' training "
    'time. [95% interval over seeds]; "never N%": the share of bootstrap resamples in which PODS never reaches '
    "the target (counted as a speed-up of 0). The per-step reading of Table 3 is its speed-up x s/step(PODS) / "
    "s/step(baseline)."
)

NOT_RECORDED = (
    "The tiny default job (every figure and table of the tiny scale, (a) on 64 seeds per arm) is not recorded "
    f"in this version: run `{MAIN_JOB}`, then `{RECORD_CMD}` fills its columns."
)


def _tiny_missing(rec: Records, letter: str) -> str:
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


def _letters(items: Sequence[str]) -> str:
    return ", ".join(f"({x})" for x in items) if items else "none"


def _by_verdict(table: pd.DataFrame | None, point: str, prefix: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for _, r in (table if table is not None else pd.DataFrame()).iterrows():
        v = verdicts.speedup(float(r.get(f"{prefix}_ci_low", math.nan)), float(r.get(f"{prefix}_ci_high", math.nan)))
        out.setdefault(v, []).append(str(r["setting"]))
    return out


def _verdict_list(groups: dict[str, list[str]]) -> str:
    order = ("faster", "not resolved", "slower", "no interval")
    return "; ".join(f"{v} in {_letters(groups[v])}" for v in order if groups.get(v))


def findings(rec: Records, t: Tables) -> list[str]:
    """What the package found, one sentence each, from the numbers (the README's first screen)."""
    out = []
    rel = t.released
    exact = sum(abs(float(r["speedup"]) - float(r["paper_speedup"])) < 1e-9 for _, r in rel.iterrows())
    wall = _by_verdict(rel.rename(columns={"ci_low": "w_ci_low", "ci_high": "w_ci_high"}), "speedup", "w")
    step = _by_verdict(rel, "speedup_steps", "speedup_steps")
    out.append(
        f"**The authors' released logs reproduce Table 3's printed speed-ups** ({exact} of {len(rel)} settings exactly; "
        f"(d) has no logs), **but their seeds resolve less than the table says**: with 95% intervals over seeds, "
        f"wall-clock: {_verdict_list(wall)}; per optimizer step: {_verdict_list(step)}."
    )
    per_step = paper_per_step(rec)
    sides: dict[str, list[str]] = {}
    for letter, value in per_step.items():
        r = _row(rel, letter)
        if r is not None:
            v = verdicts.against(float(r["speedup_steps_ci_low"]), float(r["speedup_steps_ci_high"]), value)
            sides.setdefault(v, []).append(letter)
    out.append(
        "Read per optimizer step, the released curves against Table 3's per-step reading: "
        + "; ".join(f"{v} in {_letters(x)}" for v, x in sorted(sides.items()))
        + "."
    )
    for letter in ("a", "e"):
        r = _row(t.tiny, letter)
        if r is None:
            status = (rec.tiny_status or {}).get(letter)
            what = f"{status[0]} of its {status[1]} runs are recorded" if status else "it is not recorded"
            out.append(f"The tiny default job's ({letter}): no verdict yet ({what}).")
            continue
        lo, hi = float(r["speedup_steps_ci_low"]), float(r["speedup_steps_ci_high"])
        text = (
            f"The tiny default job's ({letter}), {int(r['n_seeds_baseline'])} + {int(r['n_seeds_pods'])} seeds: per "
            f"step {_ci(r, 'speedup_steps')}, **{verdicts.speedup(lo, hi)}**"
        )
        if letter in per_step:
            text += f"; against the paper's per-step {per_step[letter]:.2f}: **{verdicts.against(lo, hi, per_step[letter])}**"
        out.append(text + ".")
    g = _row(t.gpu, "a")
    if g is not None:
        lo, hi = float(g["speedup_steps_ci_low"]), float(g["speedup_steps_ci_high"])
        out.append(
            f"The tiny (a) on one H100 (8 + 8 seeds, an older default): per step {_ci(g, 'speedup_steps')}, "
            f"**{verdicts.speedup(lo, hi)}**"
            + (f"; {verdicts.against(lo, hi, per_step['a'])} ({per_step['a']:.2f})" if "a" in per_step else "")
            + "."
        )
    return out


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
        f"The tiny default job (every figure and table of the tiny scale) took {_minutes(float(job['wall_s']))}{how} "
        f"on {cores} shared cores ({job.get('cpu', 'a CPU')}); from its jobs' "
        f"{'CPU' if key != 'seconds' else 'wall'} seconds, {_minutes(jobtime.project(rec.jobs, cores, key))} on "
        f"{cores} idle cores, {_minutes(jobtime.project(rec.jobs, 8, key))} on 8 and "
        f"{_minutes(jobtime.project(rec.jobs, 16, key))} on 16."
    )


def headline(rec: Records, t: Tables, page_link: str = "docs/results.md") -> str:
    """The README's first screen: the findings, the table, what its columns mean, the job's state."""
    lines = [f"- {x}" for x in findings(rec, t)]
    lines += ["", *_md(HEADLINE_HEAD, _headline_rows(rec, t)), ""]
    lines.append(
        f"{COLUMNS_NOTE} [docs/results.md]({page_link}) has every number with its command, its data and its "
        f"verdict rule. {job_sentence(rec)}"
    )
    return "\n".join(lines) + "\n"


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
        f"`ci_mc` columns), here at most {_num(worst['per-step'])} for the per-step speed-ups and "
        f"{_num(worst['eval-grid'])} for the eval-grid ones, whose bounds are ratios of grid times (a bound "
        "between two of them moves by a whole grid point): a bound's second decimal is not settled."
    )


def _speedup_verdict(r: pd.Series, prefix: str) -> str:
    return verdicts.speedup(float(r.get(f"{prefix}_ci_low", math.nan)), float(r.get(f"{prefix}_ci_high", math.nan)))


def sec_table3(rec: Records, t: Tables) -> str:
    rows, exact = [], 0
    for _, r in t.released.iterrows():
        paper = float(r["paper_speedup"])
        exact += int(abs(float(r["speedup"]) - paper) < 1e-9)
        never = f", never {float(r['p_pods_never']):.0%}" if float(r["p_pods_never"]) > 0 else ""
        rows.append([f"({r['setting']})", f"{paper:.1f}", f"{float(r['speedup']):.1f} ({float(r['speedup_exact']):.2f})",
                     f"[{_num(float(r['ci_low']))}, {_num(float(r['ci_high']))}]{never}",
                     verdicts.speedup(float(r["ci_low"]), float(r["ci_high"])),
                     f"{int(r['n_seeds_baseline'])} + {int(r['n_seeds_pods'])}"])  # fmt: skip
    L = _md(["setting", "paper", "released logs (exact)", "95% CI over seeds", "verdict", "seeds"], rows)
    wall = _by_verdict(t.released.rename(columns={"ci_low": "w_ci_low", "ci_high": "w_ci_high"}), "speedup", "w")
    widths = [float(r["ci_high"]) - float(r["ci_low"]) for _, r in t.released.iterrows()]
    L += ["", f"Verdict: the point estimates reproduce Table 3 ({exact} of {len(t.released)} settings exactly as "
          f"printed; (d) has no released logs). The intervals, {min(widths):.1f}-{max(widths):.1f} wide over the "
          f"authors' 5-10 seeds, give: {_verdict_list(wall)}. The logs establish a wall-clock speed-up above 1 "
          f"only in {_letters(wall.get('faster', []))}."]  # fmt: skip
    return "\n".join(L)


def sec_per_step(rec: Records, t: Tables) -> str:
    per_step = paper_per_step(rec)
    rows = []
    for letter in [s for s in registry.SETTINGS if len(s) == 1]:
        r_rel, r_tiny, r_gpu = _row(t.released, letter), _row(t.tiny, letter), _row(t.gpu, letter)
        bars = "-"
        if letter in PAPER_BARS_SPS and registry.SETTINGS[letter].paper_speedup:
            ga, pods = PAPER_BARS_SPS[letter]
            bars = f"{registry.SETTINGS[letter].paper_speedup * pods / ga:.2f}"

        def verdict(r, letter=letter):
            if r is None:
                return "-"
            lo, hi = float(r["speedup_steps_ci_low"]), float(r["speedup_steps_ci_high"])
            v = verdicts.speedup(lo, hi)
            if v == "no interval" or letter not in per_step:
                return v
            return f"{v}; {verdicts.against(lo, hi, per_step[letter])}"

        rows.append([
            f"({letter})",
            f"{per_step[letter]:.2f}" if letter in per_step else "-",
            bars,
            "-" if r_rel is None else _ci(r_rel, "speedup_steps"),
            verdict(r_rel),
            _tiny_missing(rec, letter) if r_tiny is None else _ci(r_tiny, "speedup_steps"),
            verdict(r_tiny),
            "-" if r_gpu is None else f"{_ci(r_gpu, 'speedup_steps')}: {verdict(r_gpu)}",
        ])  # fmt: skip
    head = ["setting", "paper per optimizer step", "paper per step, its bars", "released logs (i)", "verdict",
            "tiny default job (i)", "verdict", "tiny on one H100 (i)"]  # fmt: skip
    step = _by_verdict(t.released, "speedup_steps", "speedup_steps")
    L = _md(head, rows)
    L += ["", "\"Paper per optimizer step\" is Table 3 x s/step(PODS) / s/step(baseline), the seconds per optimizer "
          "step of the released runs ((a): 2.0 x 10.08 / 7.53 = 2.68; (e)/(f) count optimizer steps from the logs' "
          "wandb `_step` as [fidelity.md](fidelity.md#the-released-ef-step-counter) settles it). \"Its bars\" uses "
          "the paper's own Fig. 3(e)/(f) seconds-per-step bars (GRPO-GA / PODS "
          + ", ".join(f"({k}) {ga:.2f} / {p:.2f} s" for k, (ga, p) in PAPER_BARS_SPS.items())
          + "), which count logging calls as steps. The H100 column is one machine's 8-seed run of the tiny (a) "
          "and 4-seed (e) (`benchmarks/results/gpu_h100_tt_*`), an older default.", "",
          f"Verdict: per optimizer step the released logs give {_verdict_list(step)}."]  # fmt: skip
    return "\n".join(L)


def sec_budgets(rec: Records, t: Tables) -> str:
    L = []
    if t.tiny is None or _row(t.tiny, "a") is None:
        return partial_text(rec) or NOT_RECORDED
    rows, points = [], []
    for b in BUDGETS:
        r, p = _row(t.budgets[b], "a"), _pooled(t.tiny_levels[b], "a")
        if r is None:
            continue
        points.append((b, r, p))
        rows.append([str(b), _ci(r, "speedup_steps"), _speedup_verdict(r, "speedup_steps"),
                     "-" if p is None else _lcell(p),
                     f"{_num(float(r['peak_at_baseline']), 0)} of {_num(float(r['last_at_baseline']), 0)}",
                     _num(100 * float(r.get("trend_baseline", math.nan)), 1)])  # fmt: skip
    L += _md(["budget (steps)", "(i) steps to 0.99 x GRPO's peak", "verdict",
              "pooled fixed levels (0.25-0.9 of the rise)", "GRPO's mean peaks at step",
              "GRPO's 2nd-half trend (points)"], rows)  # fmt: skip
    L.append("")
    text = ("The same runs read as if their step budget had ended earlier (`pods analysis time-to-peak --until-step "
            "B`; the tiny runs train the same up to any step).")  # fmt: skip
    if len(points) >= 2:
        (b0, r0, p0), (b1, r1, p1) = points[0], points[-1]
        text += (f" From {b0} to {b1} steps, (i) moves from {_num(float(r0['speedup_steps']))} to "
                 f"{_num(float(r1['speedup_steps']))}")  # fmt: skip
        if p0 is not None and p1 is not None:
            text += f" and the pooled fixed levels from {_num(float(p0['speedup']))} to {_num(float(p1['speedup']))}"
        text += "."
    L.append(text)
    return "\n".join(L)


def sec_ga(rec: Records, t: Tables) -> str:
    rows = []
    for source, table in (("released logs", t.released), ("tiny default job", t.tiny)):
        for letter in ("e", "f"):
            r = _row(table, letter)
            if r is None:
                continue
            ratio = float(r["sps_baseline"]) / float(r["sps_pods"])
            rows.append([f"({letter}) {source}", _ci(r, "speedup_steps"), _speedup_verdict(r, "speedup_steps"),
                         f"{ratio:.2f}", _ci(r, "speedup_wall"), _ci(r, "speedup_paper_hw")])  # fmt: skip
    L = _md(["setting", "(i) per step", "verdict", "GRPO-GA s/step over PODS's", "(ii) training time",
             "(iii) paper hardware"], rows)  # fmt: skip
    parts, ratios = [], []
    for letter in ("e", "f"):
        r = _row(t.released, letter)
        if r is not None:
            ratios.append(float(r["sps_baseline"]) / float(r["sps_pods"]))
            parts.append(f"({letter}) per step {_ci(r, 'speedup_steps')}: {_speedup_verdict(r, 'speedup_steps')}")
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
        return (f"{100 * float(x['diff']):+.1f} [{100 * float(x['diff_low']):+.1f}, "
                f"{100 * float(x['diff_high']):+.1f}]: {v}")  # fmt: skip

    rows = []
    for _, r in (ours if len(ours) else rel_step).iterrows():
        if bool(r["reference"]):
            continue
        match = [x[(x["group"] == r["group"]) & (x["n"] == r["n"]) & (x["m"] == r["m"]) & (x["rule"] == r["rule"])
                 & (x["normalize"] == r["normalize"])] for x in (rel_hour, rel_step, ours)]  # fmt: skip
        tiny_cell = cell(pd.DataFrame([r])) if len(ours) else _tiny_missing(rec, "a")
        rows.append([r["group"], r["arm"], f"{int(r['n'])}/{int(r['m'])}", cell(match[0]), cell(match[1]), tiny_cell])
    L = _md(["group", "arm", "n/m", "released, per hour", "released, per step", "tiny default job, per step"], rows)
    L += ["", "Each arm's mean accuracy minus GRPO-PODS 64/16's over the last half of each run (points, 95% Welch "
          "t-interval over seeds; higher / lower / not resolved by the rule above); tiny arms: 3 seeds, the released "
          "ones 10. `pods analysis ablations`."]  # fmt: skip
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
    L = _md(["GPU", "model", "per-token generation time, 8 -> 512 rollouts", "note", "data"], rows)
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
    rows = [[str(r["trainer"]), _num(float(r["generate_calls_per_step"])), _num(float(r["generation_s_per_step"]), 3),
             _num(float(r["step_s"]), 3)] for _, r in trl.iterrows()]  # fmt: skip
    L = ["## 7. The TRL drop-in generates as TRL does", "",
         *_md(["trainer", "generate calls per step", "generation s per step", "step s"], rows)]  # fmt: skip
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
    rows = [[str(x["sitting"]), str(x["runs_added"]), _minutes(float(x["wall_s"])), f"{x['cores']} ({x['cpu']})",
             _minutes(float(x.get("run_cpu_s") or 0.0))] for x in sittings]  # fmt: skip
    table = _md(["sitting", "runs added", "wall time", "cores (CPU)", "CPU time of its runs"], rows) if rows else []
    if partial_text(rec):
        return "\n".join([partial_text(rec), "", *table])
    total = sum(j["seconds"] for j in rec.jobs)
    cores = int(job.get("cores", 2))
    proj = {k: jobtime.project(rec.jobs, k) for k in (cores, 8, 16)}
    text = (f"Measured: `{job['command']}` on {cores} cores ({job.get('cpu', '?')}, torch {job.get('torch', '?')}): "
            f"{_minutes(float(job['wall_s']))}"
            + (f" (install {int(round(float(job['install_s'])))} s)" if job.get("install_s") else "")
            + f"; its {len(rec.jobs)} training, build and benchmark jobs took {_minutes(total)} of one core in all "
            f"(wall). Replayed from the same per-job wall seconds (`pods analysis job-time`): {_minutes(proj[cores])} "
            f"on {cores} (the check), {_minutes(proj[8])} on 8, {_minutes(proj[16])} on 16.")  # fmt: skip
    if jobtime.has_cpu(rec.jobs):
        cpu = sum(j[jobtime.CPU_COLUMN] for j in rec.jobs)
        pc = {k: jobtime.project(rec.jobs, k, jobtime.CPU_COLUMN) for k in (cores, 8, 16)}
        text += (f" In CPU seconds, what the jobs cost the processor whatever ran beside them: {_minutes(cpu)} of one "
                 f"core, replayed {_minutes(pc[cores])} on {cores} idle cores, {_minutes(pc[8])} on 8, "
                 f"{_minutes(pc[16])} on 16; the wall clock ran {total / cpu:.1f}x the CPU clock on the shared "
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
        "ga": sec_ga(rec, t),
        "ablations": sec_ablations(rec, t),
        "fig1": sec_fig1(rec, t),
        "trl": sec_trl(rec, t),
        "cost": sec_cost(rec, t),
    }
    text = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(slots)
    return "\n".join(line.rstrip() for line in text.splitlines()).replace("\n\n\n\n", "\n\n").rstrip("\n") + "\n"
