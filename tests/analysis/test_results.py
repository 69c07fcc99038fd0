"""docs/results.md and the README's headline block are what the committed records give, number for number, and
the page's arithmetic is the paper's (the per-step figure is Table 3 x s/step(PODS) / s/step(GRPO), not its
inverse)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pods_repro.analysis import results

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benchmarks" / "results"
needs_tiny = pytest.mark.skipif(
    not (DATA / "tiny" / "job.json").exists(), reason="the tiny default job is not recorded in benchmarks/results/tiny/"
)


@pytest.fixture(scope="module")
def generated():
    rec = results.load_records(DATA)
    tables = results.compute(rec)
    return rec, tables, results.page(rec, tables)


def test_the_results_page_regenerates_byte_for_byte(generated):
    _, _, text = generated
    assert (REPO / "docs" / "results.md").read_text(encoding="utf-8") == text, (
        "docs/results.md differs from what benchmarks/results/ gives: run `pods analysis results`"
    )


def test_the_readme_headline_block_is_the_generated_one(generated):
    rec, tables, _ = generated
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert results.replace_block(readme, results.headline(rec, tables)) == readme, (
        "README.md's results block differs from what benchmarks/results/ gives: run `pods analysis results`"
    )


def test_the_paper_per_step_figure_multiplies_by_the_step_cost_ratio(generated):
    rec, _, text = generated
    per_step = results.paper_per_step(rec)
    # (a): 2.0 x 10.08 / 7.53 on one L40S, the released logs' seconds per step of the two arms
    assert per_step["a"] == pytest.approx(2.0 * 10.08 / 7.53, abs=0.01)
    assert "2.0 x 10.08 / 7.53 = 2.68" in text
    assert "1.49" not in text  # the inverted reading, 2.0 / (10.08 / 7.53)


def _needs_a(tables):
    if tables.tiny is None or "a" not in set(tables.tiny["setting"].astype(str)):
        pytest.skip("the tiny default job's (a) is not fully recorded yet (benchmarks/results/tiny/)")


@needs_tiny
def test_the_default_job_trains_a_on_64_seeds_per_arm(generated):
    rec, tables, _ = generated
    _needs_a(tables)
    a = tables.tiny[tables.tiny["setting"].astype(str) == "a"].iloc[0]
    assert (a["n_seeds_baseline"], a["n_seeds_pods"]) == (64, 64)
    assert not math.isnan(a["speedup_steps_ci_low"])


def test_every_interval_on_the_page_counts_never_reached_resamples(generated):
    """Where PODS misses the target in some resamples the page says how often, beside the interval."""
    _, tables, text = generated
    for table in (tables.released, tables.tiny, tables.gpu):
        for _, r in (table if table is not None else pd.DataFrame()).iterrows():
            if r["p_pods_never"] > 0 and not math.isnan(r["speedup_steps_ci_low"]):
                assert r["speedup_steps_ci_low"] == 0.0 or r["p_pods_never"] < 0.025
    assert re.search(r"never \d+%", text)


@needs_tiny
def test_budget_cuts_read_the_same_runs(generated):
    """(a) at 300 and 450 steps is the 600-step job cut there (no other runs), on the same seeds."""
    rec, tables, _ = generated
    _needs_a(tables)
    for b in results.BUDGETS:
        row = tables.budgets[b].iloc[0]
        assert row["last_at_baseline"] <= b
        assert (row["n_seeds_baseline"], row["n_seeds_pods"]) == (64, 64)


def _job_record(tmp_path, monkeypatch) -> Path:
    """A copy of the committed records with a tiny job recorded from real tiny runs (the H100 record of the tiny
    (a) on 8 seeds and (e) on 4, standing in for the default job, which is then taken to be exactly those runs),
    in the layout `pods analysis record` writes."""
    from pods_repro.analysis import record

    data = tmp_path / "data"
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("tiny"))
    tiny = data / "tiny"
    tiny.mkdir()
    gz = {"method": "gzip", "mtime": 0}
    pd.read_csv(DATA / "gpu_h100_tt_curves.csv").to_csv(tiny / "curves.csv.gz", index=False, compression=gz)
    steps = pd.read_csv(DATA / "gpu_h100_tt_steps.csv")
    steps["run"] = [f"{r.setting}/{r.arm}_{r.n}_{r.m}/seed~{r.seed}" for r in steps.itertuples()]
    steps["config_sha256"] = [f"sha-{r}" for r in steps["run"]]
    steps.to_csv(tiny / "steps.csv.gz", index=False, compression=gz)
    fake = {r: record.ExpectedRun(r, r[0], "", (), f"sha-{r}") for r in steps["run"]}
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": fake)
    (tiny / "jobs.tsv").write_text("kind\tname\tmodel\tseconds\nrun\ttrain/a/x\tm\t100.0\nrun\ttrain/a/y\tm\t140.0\n"
                                   "run\ttrain/e/x\tm\t60.0\n")  # fmt: skip
    sittings = [{"sitting": 1, "cpu": "a CPU", "cores": 2, "wall_s": 3600.0, "install_s": 50.0, "runs_added": 20,
                 "run_cpu_s": 3000.0}, {"sitting": 2, "cpu": "a CPU", "cores": 2, "wall_s": 1800.0, "install_s": None,
                 "runs_added": 4, "run_cpu_s": 1000.0}]  # fmt: skip
    job = {"command": "c", "wall_s": 5400.0, "install_s": 50.0, "cores": 2, "cpu": "a CPU", "sittings": sittings}
    (tiny / "job.json").write_text(json.dumps(job))
    return data


def test_a_recorded_job_fills_the_tiny_columns_and_the_cost_section(tmp_path, monkeypatch):
    data = _job_record(tmp_path, monkeypatch)
    rec = results.load_records(data)
    tables = results.compute(rec, n_boot=200)
    text = results.page(rec, tables)
    a = tables.tiny[tables.tiny["setting"].astype(str) == "a"].iloc[0]
    assert (a["n_seeds_baseline"], a["n_seeds_pods"]) == (8, 8)
    assert "not recorded" not in text
    head = results.headline(rec, tables)
    assert "| 8 + 8 |" in head
    assert "took 1 h 30 min in 2 sittings" in head
    assert "## 8. What the tiny default job costs" in text
    assert "the check" in text
    assert len([ln for ln in text.splitlines() if ln.startswith("| 300 |") or ln.startswith("| 450 |")]) == 2


def test_without_a_tiny_record_the_page_says_so_and_how_to_make_it(generated):
    rec, tables, text = generated
    if rec.job is not None:
        pytest.skip("the tiny default job is recorded")
    assert tables.tiny is None
    assert "is not recorded in this version" in text
    assert "pods analysis record --root results" in text
    assert "## 1. Table 3 from the authors' released logs" in text


def test_a_partly_recorded_job_fills_only_its_complete_settings(tmp_path, monkeypatch):
    """A record made in sittings and not finished: the settings with every run recorded are filled, the others
    say how many of their runs are recorded, and the page says how to train the rest."""
    from pods_repro.analysis import record

    data = _job_record(tmp_path, monkeypatch)
    fake = record.expected_runs()
    more = {"e/pods_8_4/seed~9": record.ExpectedRun("e/pods_8_4/seed~9", "e", "", (), "sha-x")}
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": {**fake, **more})
    rec = results.load_records(data)
    tables = results.compute(rec, n_boot=200)
    head = results.headline(rec, tables)
    n_e = sum(1 for r in fake if r.startswith("e/"))
    assert f"| {n_e} of {n_e + 1} runs recorded |" in head
    assert "| 8 + 8 |" in head  # (a) is complete
    assert "recorded in part" in head
    assert "$(pods analysis record --missing)" in head
    text = results.page(rec, tables)
    assert "| 2 | 4 | 30 min |" in text  # the sittings table


def test_a_record_with_a_stale_or_foreign_run_is_refused(tmp_path, monkeypatch):
    """`pods analysis results` refuses a record whose runs the default job no longer trains as recorded."""
    from pods_repro.analysis import record

    data = _job_record(tmp_path, monkeypatch)
    fake = record.expected_runs()
    run = sorted(fake)[0]
    stale = {**fake, run: record.ExpectedRun(run, run[0], "", (), "sha-changed")}
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": stale)
    with pytest.raises(results.AnalysisInputError, match=f"recorded run {re.escape(run)} was trained under another"):
        results.load_records(data)
    fewer = {k: v for k, v in fake.items() if k != run}
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": fewer)
    with pytest.raises(results.AnalysisInputError, match="which the default job does not make"):
        results.load_records(data)


@pytest.mark.parametrize("drop", ["jobs.tsv", "curves.csv.gz"])
def test_an_incomplete_tiny_record_is_refused(tmp_path, drop, monkeypatch):
    data = _job_record(tmp_path, monkeypatch)
    (data / "tiny" / drop).unlink()
    with pytest.raises(
        results.AnalysisInputError, match=f"tiny/{re.escape(drop)} is missing: the tiny record is incomplete"
    ):
        results.load_records(data)


def test_released_tables_alone_can_be_recorded(tmp_path):
    src = tmp_path / "released"
    src.mkdir()
    pd.read_csv(DATA / "released" / "curves.csv.gz").head(40).to_csv(src / "curves.csv", index=False)
    pd.read_csv(DATA / "released" / "steps.csv.gz").head(4).to_csv(src / "steps.csv", index=False)
    rc = results.main(["--released", str(src), "--data", str(tmp_path / "d"), "--out", str(tmp_path / "p.md"),
                       "--readme", str(tmp_path / "none.md"), "--check"])  # fmt: skip
    assert (tmp_path / "d" / "released" / "curves.csv.gz").exists()
    assert rc == 2  # the copy has no GPU index: a one-line error, the recorded tables kept


def test_the_recorded_trl_benchmark_matches_trls_generate_calls_and_time():
    """The committed `pods bench trl_generation` record: PODSGRPOTrainer makes TRL's generate calls per step and
    takes at most 1.10x TRL's generation seconds (medians, the trainers interleaved on one CPU)."""
    trl = pd.read_csv(DATA / "trl_generation.csv").set_index("trainer")
    pods_row, trl_row = trl.loc["PODSGRPOTrainer"], trl.loc["trl.GRPOTrainer"]
    assert pods_row["generate_calls_per_step"] == trl_row["generate_calls_per_step"]
    assert pods_row["generation_s_per_step"] <= 1.10 * trl_row["generation_s_per_step"]
    assert pods_row["tokens_per_step"] == pytest.approx(trl_row["tokens_per_step"], rel=0.05)  # equal rollouts


def test_each_verdict_follows_its_rule_when_a_number_changes(generated):
    """The page's verdicts are computed: moving an interval's bound across 1 (speed-ups), across the paper's
    figure, or across 0 (differences) changes the verdict on the page."""
    from pods_repro.analysis import sections, verdicts

    assert verdicts.speedup(1.01, 2.0) == "faster"
    assert verdicts.speedup(0.99, 2.0) == "not resolved"
    assert verdicts.speedup(0.2, 0.99) == "slower"
    assert verdicts.speedup(math.nan, 2.0) == "no interval"
    assert verdicts.against(1.4, 2.5, 2.68) == "differs from the paper (below)"
    assert verdicts.against(1.4, 2.7, 2.68) == "agrees with the paper"
    assert verdicts.against(1.3, 2.7, 2.68) == "consistent with the paper, not resolved"  # 2.7 > 2 x 1.3
    assert verdicts.difference(-0.5, -0.1) == "lower"
    assert verdicts.difference(-0.5, 0.1) == "not resolved"
    assert verdicts.within(1.11, 1.10) == "outside"
    rec, tables, text = generated
    assert "| (b) | 3.0 | 3.0 (3.00) | [1.75, 4.50] | faster |" in text
    changed = tables.released.copy()
    b = changed["setting"].astype(str) == "b"
    changed.loc[b, "ci_low"] = 0.9  # (b)'s wall-clock interval now contains 1
    changed.loc[changed["setting"].astype(str) == "a", "speedup_steps_ci_low"] = 0.5
    other = dataclasses.replace(tables, released=changed)
    new = sections.page(rec, other)
    assert "| (b) | 3.0 | 3.0 (3.00) | [0.90, 4.50] | not resolved |" in new
    assert "establish a wall-clock speed-up above 1 only in none" in new
    assert "per optimizer step the released logs give faster in (b), (c); not resolved in (a), (e), (f)" in new
    assert (
        "| (a) | 2.68 | - | 2.89 [0.50, 4.38] | not resolved; consistent with the printed figure, not resolved |" in new
    )
    head = sections.headline(rec, other)
    assert "wall-clock, not resolved in (a), (b), (c), (e), (f)" in head


def test_the_first_screen_states_the_findings_and_explains_its_columns():
    """The README opens on what the package found (generated sentences with intervals) and explains the
    labels '(i)' and 'never N%' where they appear."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first = "\n".join(text.splitlines()[:40])
    assert "released logs reproduce Table 3's printed speed-ups" in first
    assert "Per step: counted in optimizer steps" in text
    assert '"never N%": the share of bootstrap resamples' in text
    assert text.count("is not recorded in this version") <= 1
