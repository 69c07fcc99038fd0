"""The selection arena: its grid (config/arena.yaml, config/runs_arena.tsv), its statistics and verdicts
(pods_repro.analysis.arena), and docs/arena.md, regenerated from the committed record byte for byte."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pods_repro.analysis import arena as A
from pods_repro.analysis import arena_page
from pods_repro.arena import ArenaError, load_arena

REPO = Path(__file__).resolve().parents[2]
RECORD = REPO / "benchmarks" / "results" / "arena"


# ----------------------------------------------------------------------------- the grid


def test_full_grid_is_every_arm_under_every_condition_and_seed():
    grid = load_arena("full")
    assert list(grid.conditions) == ["base", "noisy10", "noisy20", "partial", "reuse"]
    assert {"grpo", "pods", "pods_m4", "pods_m8", "pods_refill", "pods_greso", "pods_zero_std"} <= set(grid.arms)
    assert len(grid.seeds) == 8
    assert len(grid.runs()) == len(grid.arms) * 5 * 8
    over = grid.run_overrides("noisy20", "pods_refill")
    assert "rollout.filter=refill" in over
    assert "task.reward_noise=0.2" in over
    assert f"budget.max_steps={grid.steps}" in over


def test_every_arena_run_is_a_valid_config():
    from pods_repro.config import load_config

    grid = load_arena("full")
    for cond in grid.conditions:
        for arm in grid.arms:
            load_config(REPO / grid.experiment, list(grid.run_overrides(cond, arm)), check_machine=False)


def test_a_sheet_without_a_reference_arm_is_refused(tmp_path):
    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config" / "arena.yaml", tmp_path / "config" / "arena.yaml")
    sheet = (REPO / "config" / "runs_arena.tsv").read_text().splitlines()
    (tmp_path / "config" / "runs_arena.tsv").write_text(
        "\n".join(x for x in sheet if not x.startswith("grpo\t")) + "\n"
    )
    with pytest.raises(ArenaError, match="reference arm"):
        load_arena("full", config=tmp_path / "config" / "arena.yaml")


# ----------------------------------------------------------------------------- statistics and verdicts


def test_verdict_follows_the_interval():
    assert A.verdict(0.01, 0.2) == "better"
    assert A.verdict(-0.2, -0.01) == "worse"
    assert A.verdict(-0.1, 0.1) == "not resolved"
    assert A.verdict(0.0, 0.1) == "not resolved"
    assert A.verdict(math.nan, math.nan) == "too few seeds"


def _toy(gap: float):
    """Two arms, 3 seeds, evaluations at steps 0, 10, 20; arm x is `gap` above grpo at steps 10 and 20."""
    curves, steps = [], []
    for arm, lift in (("grpo", 0.0), ("pods", 0.0), ("x", gap)):
        for seed, noise in enumerate((0.0, 0.01, -0.01)):
            for st, acc in ((0, 0.5), (10, 0.6), (20, 0.7)):
                curves.append({"condition": "base", "arm": arm, "seed": seed, "step": st,
                               "accuracy": acc + (lift + noise if st else 0.0)})  # fmt: skip
            for st in range(1, 21):
                steps.append({"condition": "base", "arm": arm, "seed": seed, "step": st, "gen_tokens": 100.0,
                              "trained_tokens": 25.0, "step_cpu_s": 0.1})  # fmt: skip
    meta = {"conditions": {"base": []}, "steps": 20,
            "arms": {a: {"rule": "max_variance", "n": 4, "m": 2, "extra": []} for a in ("grpo", "pods", "x")}}  # fmt: skip
    return pd.DataFrame(curves), pd.DataFrame(steps), meta


def test_mean_accuracy_over_the_budget_is_the_area_over_the_budget():
    curves, steps, meta = _toy(0.0)
    stats = A.run_stats(curves, steps, 20)
    row = stats[(stats.arm == "grpo") & (stats.seed == 0)].iloc[0]
    # trapezoids: (0.5 + 0.6) / 2 * 10 + (0.6 + 0.7) / 2 * 10 = 12, over 20 steps
    assert row.auc_step == pytest.approx(0.6)
    assert row.acc_final == pytest.approx(0.7)
    assert row.acc_half == pytest.approx(0.6)
    assert row.peak_step == 20
    assert row.total_tokens == pytest.approx(20 * 125)
    assert row.auc_tokens == pytest.approx(0.6)  # tokens grow linearly with steps here


def test_changing_a_number_changes_the_verdict():
    for gap, expected in ((0.0, "not resolved"), (0.2, "better"), (-0.2, "worse")):
        curves, steps, meta = _toy(gap)
        vs = A.vs_table(A.run_stats(curves, steps, 20), meta)
        row = vs[(vs.arm == "x") & (vs.reference == "grpo") & (vs.statistic == "auc_step")].iloc[0]
        assert row.verdict == expected, (gap, row)


def test_cost_estimate_scales_the_recorded_seconds():
    runs = pd.DataFrame([{"arm": "pods", "steps": 10, "n_evals": 3, "train_cpu_s": 1.0, "eval_cpu_s": 0.6,
                          "startup_cpu_s": 4.0}])  # fmt: skip
    target = {"steps": 100, "eval_every": 25, "seeds": [0, 1], "conditions": ["a", "b"], "arms": ["pods", "other"]}
    est = A.cost_estimate(runs, {}, target)
    one = 4.0 + 100 * 0.1 + 5 * 0.2
    assert est["runs"] == 8
    assert est["cpu_s"] == pytest.approx(8 * one)


# ----------------------------------------------------------------------------- the page from the record


def test_docs_arena_md_is_the_page_of_the_committed_record(tmp_path):
    out = tmp_path / "arena.md"
    assert A.main(["--page", str(out)]) == 0
    assert out.read_bytes() == (REPO / "docs" / "arena.md").read_bytes()


def test_the_page_names_its_record_and_a_changed_number_changes_a_verdict(tmp_path):
    page = (REPO / "docs" / "arena.md").read_text()
    assert "pilot" in page
    curves, steps, runs, meta = A.read_record(RECORD)
    assert f"{len(meta['seeds'])} seeds" in page
    assert f"x {meta['steps']} steps" in page
    # lift one arm's accuracy far above GRPO's everywhere after step 0: its verdict against GRPO turns "better"
    arm = next(a for a in meta["arms"] if a not in ("grpo", "pods"))
    cond = next(iter(meta["conditions"]))
    before = A.vs_table(A.run_stats(curves, steps, meta["steps"]), meta)
    pick = (
        (before.arm == arm)
        & (before.reference == "grpo")
        & (before.statistic == "auc_step")
        & (before.condition == cond)
    )
    assert before[pick].verdict.iloc[0] != "better"
    lifted = curves.copy()
    sel = (lifted.arm == arm) & (lifted.condition == cond) & (lifted.step > 0)
    lifted.loc[sel, "accuracy"] = 1.0 + 0.001 * lifted.loc[sel, "seed"]
    after = A.vs_table(A.run_stats(lifted, steps, meta["steps"]), meta)
    assert after[pick].verdict.iloc[0] == "better"


# ----------------------------------------------------------------------------- the workflow target


def test_snakemake_dry_run_of_arena_lists_the_grid(tmp_path):
    import os
    import shutil as sh
    import subprocess
    import sys

    exe = sh.which("snakemake", path=str(Path(sys.executable).parent)) or sh.which("snakemake")
    if exe is None:
        pytest.skip("snakemake is not installed")
    for name in ("Snakefile", "rules", "config", "profiles", "report", "envs", "experiments", "figures", "pods"):
        (tmp_path / name).symlink_to(REPO / name)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PODS_CACHE": str(tmp_path / "cache")}
    res = subprocess.run([exe, "-n", "arena"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    counts = dict(re.findall(r"^(arena_\w+|arena)\s+(\d+)$", res.stdout + res.stderr, flags=re.M))
    grid = load_arena("full")
    assert int(counts["arena_train"]) == len(grid.runs())
    assert int(counts["arena_figure"]) == len(grid.conditions)
    assert "results/arena/runs/partial/pods_greso/seed~7/summary.json" in res.stdout + res.stderr


# ----------------------------------------------------------------------------- what the seed count can resolve


def test_expected_width_shrinks_with_seeds_and_reads_the_default_job_s_record():
    tiny = pd.read_csv(REPO / "benchmarks" / "results" / "tiny" / "curves.csv.gz")
    few, many = A.expected_width(tiny, 250, 4, draws=300), A.expected_width(tiny, 250, 16, draws=300)
    assert few["seeds_recorded"] == (64, 64)
    assert few["difference"] == many["difference"]  # all seeds: the same difference whatever the draw size
    assert few["difference_ci"][0] < few["difference"] < few["difference_ci"][1]
    assert many["half_width"] < few["half_width"]
    assert many["share_above_0"] >= few["share_above_0"]
    with pytest.raises(A.ArenaInputError, match="end before step"):
        A.expected_width(tiny, 10_000, 8, draws=10)
    with pytest.raises(A.ArenaInputError, match="fewer than"):
        A.expected_width(tiny, 250, 65, draws=10)


def test_choosing_counts_the_verdicts_of_the_condition_tables():
    curves, steps, meta = _toy(0.2)
    vs = A.vs_table(A.run_stats(curves, steps, 20), meta)
    text = "\n".join(arena_page.choosing(vs, meta))
    assert "| x | 1 / 0 | 1 / 0 | 0 |" in text  # vs PODS and vs GRPO per step (no compute measure in the toy)
    assert "Better than PODS per step in at least one: x." in text
    curves, steps, meta = _toy(-0.2)
    text = "\n".join(arena_page.choosing(A.vs_table(A.run_stats(curves, steps, 20), meta), meta))
    assert "| x | 0 / 1 |" in text
    assert "Never worse than PODS per step in a recorded condition where exercised: grpo." in text


def test_same_as_pods_lists_the_arms_whose_curves_are_pods_s():
    curves, _, _ = _toy(0.2)  # arm x is lifted; grpo and pods share the toy's curves
    copy = curves[curves.arm == "pods"].assign(arm="twin")
    curves = pd.concat([curves, copy], ignore_index=True)
    assert A.same_as_pods(curves, ["base"]) == {"base": ["grpo", "twin"]}  # grpo equals pods in the toy too
    curves.loc[(curves.arm == "twin") & (curves.step == 20) & (curves.seed == 2), "accuracy"] += 0.0025
    assert A.same_as_pods(curves, ["base"]) == {"base": ["grpo"]}


def test_cost_estimate_counts_a_condition_s_prompts_per_step():
    runs = pd.DataFrame([{"arm": "pods", "steps": 10, "n_evals": 3, "train_cpu_s": 1.0, "eval_cpu_s": 0.6,
                          "startup_cpu_s": 4.0}])  # fmt: skip
    target = {"steps": 100, "eval_every": 25, "seeds": [0], "arms": ["pods"],
              "conditions": {"one": [], "two": ["task.reward=paper", "rollout.prompts_per_step=2"]}}  # fmt: skip
    est = A.cost_estimate(runs, {}, target)
    assert est["cpu_s"] == pytest.approx((4.0 + 100 * 0.1 + 5 * 0.2) + (4.0 + 2 * 100 * 0.1 + 5 * 0.2))


def test_the_page_of_a_full_record_states_its_measured_cost_once():
    """A full, complete record is no pilot and its cost is measured: the page and config/arena.yaml give one
    cost (the record's), not an estimate beside it."""
    page = (REPO / "docs" / "arena.md").read_text()
    _, _, runs, meta = A.read_record(RECORD)
    if meta["scale"] != "full" or meta["recorded_runs"] != meta["grid_runs"]:
        pytest.skip("the committed arena record is not the complete full grid")
    assert "the pilot grid of this page" not in page
    assert "Estimated cost" not in page
    wall = sum(s["wall_s"] for s in meta["sittings"])
    assert f"{wall:,.0f} s ({wall / 3600:.1f} h) of wall time" in page
    arena_yaml = (REPO / "config" / "arena.yaml").read_text()
    assert "the pilot that docs/arena.md reports" not in arena_yaml
    assert not re.search(r"about [\d.]+ h", arena_yaml), "a cost estimate beside the page's measured cost"
