"""The README's first screen and the verdict rule behind it: "agrees with the paper" only on an informative
interval, every tiny cell an interval or words, the three clocks side by side, the budget and the seeds'
effect stated from the record, and the page's modules free of an import circle and of typed-in numbers."""

from __future__ import annotations

import ast
import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pods_repro.analysis import headline, results, seed_bias, verdicts

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benchmarks" / "results"
ANALYSIS = REPO / "pods_repro" / "analysis"
FIRST = "\n".join((REPO / "README.md").read_text(encoding="utf-8").splitlines()[:40])


@pytest.fixture(scope="module")
def computed():
    rec = results.load_records(DATA)
    if rec.tiny_curves is None or "a" not in set(rec.tiny_curves["setting"].astype(str)):
        pytest.skip("the tiny default job's (a) is not recorded")
    return rec, results.compute(rec)


@pytest.fixture(scope="module")
def first(computed):
    """The generated first screen, once it is checked to be what README.md's first 40 lines hold."""
    rec, t = computed
    block = headline.headline(rec, t)
    assert block.rstrip("\n") in FIRST, (
        "README.md's first 40 lines do not hold the generated block: run `pods analysis results`"
    )
    return block


# ----------------------------------------------------------------------------------------------
# the rule


def test_a_wide_interval_that_contains_the_paper_is_not_resolved():
    # tiny (e): [0.00, 1.50] contains every figure from 0 to 1.5
    for paper in (0.1, 0.5, 1.06, 1.5):
        assert verdicts.against(0.0, 1.5, paper) == "consistent with the paper, not resolved"
    assert verdicts.against(0.0, 1.5, 1.6) == "differs from the paper (below)"


def test_each_bound_moves_the_verdict_against_the_paper():
    paper = 2.68
    assert verdicts.against(1.4, 2.7, paper) == "agrees with the paper"
    assert verdicts.against(1.3, 2.7, paper) == "consistent with the paper, not resolved"  # upper > 2 x lower
    assert verdicts.against(1.4, 2.6, paper) == "differs from the paper (below)"
    assert verdicts.against(2.7, 3.0, paper) == "differs from the paper (above)"
    assert verdicts.against(math.nan, 3.0, paper) == "no interval"
    # a claimed speed-up of 1.5 or more needs the lower end above 1; a smaller claim does not
    assert verdicts.against(1.01, 2.0, 1.6) == "agrees with the paper"
    assert verdicts.against(0.99, 1.9, 1.6) == "consistent with the paper, not resolved"
    assert verdicts.against(0.8, 1.5, 1.06) == "agrees with the paper"
    assert verdicts.against(0.7, 1.5, 1.06) == "consistent with the paper, not resolved"
    assert verdicts.against(0.0, 0.0, 0.0) == "consistent with the paper, not resolved"  # lower end 0


def test_a_figure_from_the_same_runs_is_reproduced_not_agreed_with():
    assert verdicts.against(1.4, 2.7, 2.68, same_data=True) == "reproduces the printed figure"
    assert verdicts.against(1.3, 2.7, 2.68, same_data=True) == "consistent with the printed figure, not resolved"
    assert verdicts.against(1.4, 2.6, 2.68, same_data=True) == "differs from the printed figure (below)"
    assert verdicts.few_seeds(1) == "not resolved at 1 seed"
    assert verdicts.few_seeds(3) == "not resolved at 3 seeds"


def test_no_agreement_on_an_uninformative_interval_anywhere_on_the_first_screen(computed, first):
    page = results.page(*computed)
    hits = re.findall(r"(\d+\.\d+) \[(\d+\.\d+), (\d+\.\d+)\][^|;]*?: [a-z ]+; agrees with the paper", first + page)
    assert hits, "the pattern no longer finds the agreements it checks"
    for _, lo, hi in hits:
        assert float(lo) > 0, (lo, hi)
        assert float(hi) <= verdicts.WIDTH_FACTOR * float(lo), (lo, hi)
    for row in _block_rows(first):  # the released logs' columns are read against figures made from them
        assert "agrees" not in row[2], row[:4]
        assert "agrees" not in row[3], row[:4]


# ----------------------------------------------------------------------------------------------
# the first screen


def _block_rows(text: str) -> list[list[str]]:
    rows = [ln for ln in text.splitlines() if ln.startswith("| (")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in rows]


def test_every_tiny_cell_of_the_headline_table_has_an_interval_or_words(first):
    rows = _block_rows(first)
    assert len(rows) == 6, "the headline table's six settings are not in README's first 40 lines"
    for row in rows:
        for cell in row[4:8]:
            assert re.search(r"\[-?\+?\d+\.\d+, [-+]?\d+\.\d+\]", cell) or re.fullmatch(
                r"not resolved at \d+ seeds?|\d+ of \d+ runs recorded|not recorded|-", cell
            ), cell


def test_the_first_screen_states_the_logs_the_clocks_the_budget_and_the_seeds(first):
    assert "answer-and-format accuracy" in first
    assert "on answer accuracy alone PODS" in first
    assert "computed from these same runs" in first
    assert "by the CPU clock of the machine that ran it" in first
    assert "projected to the paper's hardware" in first
    assert "cost model" in first
    assert "a projection" in first
    assert "They differ because" in first
    assert "depends on its budget" in first
    assert re.search(r"cut at \d+ steps", first)
    assert "interpolated between evaluations" in first
    assert "Few seeds move the statistic" in first
    assert "called" not in first.split("Few seeds")[0][-5:]
    assert "older default" not in first
    assert "H100" not in first
    for letter in "abcdef":
        assert f"({letter}) " in first.split("**The tiny default job**")[1].split("\n")[0]


def test_the_headline_verdicts_follow_the_numbers(computed):
    rec, t = computed
    head = headline.headline(rec, t)
    r = t.tiny[t.tiny["setting"].astype(str) == "a"].iloc[0]
    lo, hi = float(r["speedup_steps_ci_low"]), float(r["speedup_steps_ci_high"])
    paper = results.paper_per_step(rec)["a"]
    words = verdicts.against(lo, hi, paper)
    assert f"(a) {r['speedup_steps']:.2f} [{lo:.2f}, {hi:.2f}]: faster; against {paper:.2f}, {words}" in head
    wide = t.tiny.copy()
    wide.loc[wide["setting"].astype(str) == "a", "speedup_steps_ci_high"] = 2 * lo + 0.1
    other = headline.headline(rec, dataclasses.replace(t, tiny=wide))
    assert (
        f"(a) {r['speedup_steps']:.2f} [{lo:.2f}, {2 * lo + 0.1:.2f}]: faster; against {paper:.2f}, consistent with the paper, not resolved"
        in other
    )
    low = t.tiny.copy()
    low.loc[low["setting"].astype(str) == "a", "speedup_steps_ci_high"] = 2.5
    assert f"faster; against {paper:.2f}, differs from the paper (below)" in headline._tiny_finding(
        rec, dataclasses.replace(t, tiny=low)
    )
    # a setting with one seed reads in words, never as a bare number
    one = t.tiny.copy()
    one.loc[one["setting"].astype(str) == "a", ["speedup_steps_ci_low", "speedup_steps_ci_high"]] = math.nan
    one.loc[one["setting"].astype(str) == "a", ["n_seeds_baseline", "n_seeds_pods"]] = 1
    row = [x for x in headline._headline_rows(rec, dataclasses.replace(t, tiny=one)) if x[0].startswith("(a)")][0]
    assert row[4] == "not resolved at 1 seed"


def test_the_budget_verdicts_are_read_against_the_papers_per_step_figure(computed):
    rec, t = computed
    text = headline._budget_finding(rec, t)
    for b in results.BUDGETS:
        r = t.budgets[b].iloc[0]
        lo, hi = float(r["speedup_steps_ci_low"]), float(r["speedup_steps_ci_high"])
        assert f"{b} steps {r['speedup_steps']:.2f} [{lo:.2f}, {hi:.2f}]" in text
        assert verdicts.against(lo, hi, results.paper_per_step(rec)["a"]) in text


# ----------------------------------------------------------------------------------------------
# the statistics beside time-to-peak


def test_the_mean_accuracy_difference_is_the_per_seed_area_over_the_budget(computed):
    rec, t = computed
    m = t.tiny_means.set_index("setting")
    c = rec.tiny_curves
    a = c[(c["setting"].astype(str) == "a") & (c["metric"] == "accuracy") & (c["dataset"] == c["primary_dataset"])]

    def area(arm):
        runs = a[(a["arm"] == arm) & (a["n"] == (64 if arm == "pods" else 16)) & (a["m"] == 16)]
        per = [np.trapezoid(g.sort_values("step")["value"], g.sort_values("step")["step"]) / 600.0
               for _, g in runs.groupby("seed")]  # fmt: skip
        return np.array(per)

    assert m.loc["a", "diff"] == pytest.approx(100 * (area("pods").mean() - area("grpo").mean()))
    assert m.loc["a", "diff_low"] < m.loc["a", "diff"] < m.loc["a", "diff_high"]
    for letter, r in m.iterrows():
        if min(r["n_seeds_baseline"], r["n_seeds_pods"]) < 2:
            assert math.isnan(r["diff_low"]), letter


def test_the_interpolated_crossing_lies_between_evaluations():
    steps = np.array([0.0, 10.0, 20.0, 30.0])
    curves = np.array([[0.0, 0.5, 1.0, 1.0], [0.0, 0.2, 0.4, 1.0]])
    got = seed_bias._interp_crossing(curves, steps, np.array([0.75, 0.7]))
    assert got == pytest.approx([15.0, 25.0])
    assert np.isnan(seed_bias._interp_crossing(curves[:1], steps, np.array([2.0]))[0])


def test_the_subsample_of_all_seeds_is_the_tables_point_and_more_seeds_call_it_faster(computed):
    rec, t = computed
    sub = t.subsample.set_index("k")
    a = t.tiny[t.tiny["setting"].astype(str) == "a"].iloc[0]
    full = sub[sub["all_seeds"]].iloc[0]
    assert full["median"] == pytest.approx(float(a["speedup_steps"]))
    assert list(sub.index[~sub["all_seeds"]]) == [k for k in seed_bias.SUBSAMPLE_SEEDS if k < full.name]
    assert sub.loc[1, "p_interval"] == 0
    assert sub.loc[3, "p_interval"] == 0
    assert sub.loc[32, "p_faster"] > sub.loc[8, "p_faster"]


def test_equal_arms_are_rarely_called_faster(computed):
    rec, _ = computed
    c = rec.tiny_curves
    a = c[c["setting"].astype(str) == "a"]
    grpo = a[(a["arm"] == "grpo")]
    twin = grpo.assign(arm="pods", n=64, role="pods")  # PODS's curves replaced by GRPO's own
    sub = seed_bias.subsample_speedups(pd.concat([grpo, twin]), seeds=(16,), draws=60, n_boot=300)
    row = sub[sub["k"] == 16].iloc[0]
    assert 0.7 < row["median"] < 1.4
    assert row["p_faster"] <= 0.1


# ----------------------------------------------------------------------------------------------
# the page's modules


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_page_modules_do_not_import_results_back():
    for name in ("sections", "headline", "page_parts", "seed_bias"):
        assert "pods_repro.analysis.results" not in _imports(ANALYSIS / f"{name}.py"), name
    assert "pods_repro.analysis.sections" not in _imports(ANALYSIS / "headline.py")


def test_the_page_modules_type_no_result_into_their_prose():
    for name in ("sections", "headline"):
        text = (ANALYSIS / f"{name}.py").read_text(encoding="utf-8")
        for typed in ("10.08", "7.53", "5-10 seeds", "older default", "3 seeds, the released", "2.68"):
            assert typed not in text, f"{name}.py types {typed!r}: compute it from the record"
