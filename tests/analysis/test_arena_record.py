"""The arena's record in sittings (pods_repro.analysis.arena_record): a sitting adds its finished runs, checked by
fingerprint; a run already recorded must agree; a condition's table fills only once all its runs are recorded.

The run folders are written by hand (config.json from the grid's own resolved config, eval/metrics/summary in
the formats `pods train` writes), so these tests cost no training."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from pods_repro.analysis import arena as A
from pods_repro.analysis import arena_record as R
from pods_repro.arena import load_arena

REPO = Path(__file__).resolve().parents[2]


def _write_run(root: Path, run, steps: int, every: int, lift: float = 0.0, lr: float | None = None) -> None:
    from pods_repro.config import load_config, to_dict

    cfg = load_config(REPO / "experiments" / "tiny_a.yaml", list(run.overrides), check_machine=False)
    cfg = dataclasses.replace(cfg, seed=run.seed)
    raw = to_dict(cfg)
    if lr is not None:
        raw["optim"]["lr"] = lr
    d = root / "runs" / run.folder
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({**raw, "meta": {}}))
    evals = [
        {"dataset": "arith", "step": s, "accuracy": 0.2 + lift * (s > 0) + 0.001 * run.seed + s / (10 * steps)}
        for s in range(0, steps + 1, every)
    ]
    (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    metrics = [
        {"step": s, "gen_rollouts": 64, "gen_tokens": 640, "trained_rollouts": 16, "trained_tokens": 160,
         "refill_rounds": 0, "skipped_prompts": 0, "step_cpu_s": 0.2, "reward_mean": 0.3, "frac_zero_std": 0.0}
        for s in range(1, steps + 1)
    ]  # fmt: skip
    (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    summary = {"steps": steps, "n_evals": len(evals), "train_cpu_s": 0.2 * steps, "eval_cpu_s": 1.0,
               "startup_cpu_s": 5.0, "cpu_s_last_session": 12.0, "wall_s_last_session": 20.0}  # fmt: skip
    (d / "summary.json").write_text(json.dumps(summary))


@pytest.fixture
def pilot(tmp_path, monkeypatch):
    """The pilot grid with its root under tmp_path (the CLI resolves the grid's relative root from the cwd)."""
    monkeypatch.chdir(tmp_path)
    grid = load_arena("pilot")
    return grid, tmp_path / grid.root


def test_sittings_fill_a_condition_once_all_its_runs_are_recorded(pilot, tmp_path, capsys):
    grid, root = pilot
    runs = grid.runs()
    first = [r for r in runs if r.condition == "base"] + [r for r in runs if r.condition == "noisy20"][:3]
    for r in first:
        _write_run(root, r, grid.steps, grid.eval_every)
    rec = tmp_path / "record"
    assert A.main(["--scale", "pilot", "--record", str(rec), "--wall-s", "100"]) == 0
    curves, steps, table, meta = A.read_record(rec)
    assert meta["recorded_runs"] == len(first)
    assert meta["grid_runs"] == len(runs)
    assert R.complete_conditions(table, meta) == ["base"]
    assert set(table.config_sha256) <= set(R.expected_fingerprints(grid).values())
    # the missing runs are exactly the others, as Snakemake targets
    capsys.readouterr()
    assert A.main(["--scale", "pilot", "--missing", "--from-record", str(rec)]) == 0
    targets = capsys.readouterr().out.split()
    assert len(targets) == len(runs) - len(first)
    assert f"{grid.root}/runs/noisy20/{runs[-1].arm}/seed~{runs[-1].seed}/summary.json" in targets
    # the page: base has its table and verdicts, noisy20 says how many runs it has
    page = tmp_path / "arena.md"
    assert A.main(["--from-record", str(rec), "--page", str(page)]) == 0
    text = page.read_text()
    per = len(grid.seeds) * len(grid.arms)
    assert f"3 of {per} runs recorded: the table fills once all are recorded" in text
    assert "- Against GRPO, per step: better" in text
    assert f"**{len(first)} of {len(runs)} runs recorded**" not in text  # a pilot record says it is a pilot
    # the second sitting adds the rest; the runs already recorded agree
    for r in runs:
        if r not in first:
            _write_run(root, r, grid.steps, grid.eval_every)
    assert A.main(["--scale", "pilot", "--record", str(rec), "--wall-s", "50"]) == 0
    _, _, table, meta = A.read_record(rec)
    assert meta["recorded_runs"] == len(runs)
    assert [(s["runs_added"], s["runs_agreed"]) for s in meta["sittings"]] == [
        (len(first), 0),
        (len(runs) - len(first), len(first)),
    ]
    assert R.complete_conditions(table, meta) == ["base", "noisy20"]


def test_a_run_that_disagrees_with_the_record_is_refused(pilot, tmp_path, capsys):
    grid, root = pilot
    run = grid.runs()[0]
    _write_run(root, run, grid.steps, grid.eval_every)
    rec = tmp_path / "record"
    assert A.main(["--scale", "pilot", "--record", str(rec)]) == 0
    before = (rec / "arena_curves.csv").read_bytes()
    # the same run, recomputed with other curves
    (root / "runs" / run.folder).rename(tmp_path / "old")
    _write_run(root, run, grid.steps, grid.eval_every, lift=0.1)
    assert A.main(["--scale", "pilot", "--record", str(rec)]) == 2
    assert "differ from the record" in capsys.readouterr().err
    assert (rec / "arena_curves.csv").read_bytes() == before  # nothing recorded is lost


def test_a_run_of_another_config_is_refused(pilot, tmp_path, capsys):
    grid, root = pilot
    _write_run(root, grid.runs()[1], grid.steps, grid.eval_every, lr=0.5)
    assert A.main(["--scale", "pilot", "--record", str(tmp_path / "record")]) == 2
    err = capsys.readouterr().err
    assert "another config" in err
    assert "fingerprint" in err
    assert not (tmp_path / "record").exists()


def test_a_record_of_another_grid_is_refused(pilot, tmp_path, capsys):
    grid, root = pilot
    _write_run(root, grid.runs()[0], grid.steps, grid.eval_every)
    rec = tmp_path / "record"
    assert A.main(["--scale", "pilot", "--record", str(rec)]) == 0
    meta = json.loads((rec / "arena_meta.json").read_text())
    (rec / "arena_meta.json").write_text(json.dumps({**meta, "steps": meta["steps"] + 1}))
    assert A.main(["--scale", "pilot", "--record", str(rec)]) == 2
    assert "record it in another folder" in capsys.readouterr().err


def test_the_recorded_arena_s_references_are_the_default_job_s_runs():
    """The base condition's `grpo` and `pods` arms train what the default job's (a) trains (the arena only
    evaluates fewer sets and stops at its budget), so their curves are the default job's up to that budget:
    the ground of the page's expected width, and a check of both records."""
    curves, _, runs, meta = A.read_record(REPO / "benchmarks" / "results" / "arena")
    if meta["scale"] != "full" or "base" not in R.complete_conditions(runs, meta):
        pytest.skip("the committed arena record holds no complete base condition of the full grid")
    tiny = pd.read_csv(REPO / "benchmarks" / "results" / "tiny" / "curves.csv.gz")
    tiny = tiny[(tiny.setting == "a") & (tiny.metric == "accuracy") & (tiny.dataset == tiny.primary_dataset)]
    compared = 0
    for arm, role in (("grpo", "baseline"), ("pods", "pods")):
        for seed in meta["seeds"]:
            ours = curves[(curves.condition == "base") & (curves.arm == arm) & (curves.seed == seed)]
            theirs = tiny[(tiny.role == role) & (tiny.seed == seed) & (tiny.step <= meta["steps"])]
            theirs = theirs.drop_duplicates("step").sort_values("step")
            assert ours.sort_values("step").step.tolist() == theirs.step.tolist()
            assert ours.sort_values("step").accuracy.round(6).tolist() == theirs.value.round(6).tolist(), (arm, seed)
            compared += 1
    assert compared == 2 * len(meta["seeds"])


def _snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@pytest.fixture
def recorded(pilot, tmp_path):
    """A pilot record of two runs, made by the command."""
    grid, root = pilot
    for run in grid.runs()[:2]:
        _write_run(root, run, grid.steps, grid.eval_every)
    rec = tmp_path / "record"
    assert A.main(["--scale", "pilot", "--record", str(rec), "--wall-s", "100"]) == 0
    return grid, root, rec


@pytest.mark.parametrize("damage", ["nan", "duplicate", "truncated", "runs_twice"])
def test_a_damaged_record_is_refused_not_tabled(recorded, tmp_path, capsys, damage):
    """A NaN accuracy or a duplicated run would change the tables in silence; a truncated file is a traceback."""
    _, _, rec = recorded
    if damage == "nan":
        curves = pd.read_csv(rec / "arena_curves.csv")
        curves.loc[3, "accuracy"] = float("nan")
        curves.to_csv(rec / "arena_curves.csv", index=False)
    elif damage == "duplicate":
        curves = pd.read_csv(rec / "arena_curves.csv")
        pd.concat([curves, curves.iloc[[2]]]).to_csv(rec / "arena_curves.csv", index=False)
    elif damage == "runs_twice":
        runs = pd.read_csv(rec / "arena_runs.csv")
        pd.concat([runs, runs.iloc[[0]]]).to_csv(rec / "arena_runs.csv", index=False)
    else:
        gz = rec / "arena_steps.csv.gz"
        gz.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])
    before = _snapshot(rec)
    capsys.readouterr()
    out = tmp_path / "tables"
    assert A.main(["--from-record", str(rec), "--out-dir", str(out), "--page", str(tmp_path / "p.md")]) == 2
    err = _one_line(capsys)
    assert str(rec) in err
    assert {"nan": "not a number in [0, 1]", "duplicate": "appears twice", "runs_twice": "appears twice",
            "truncated": "cannot be read"}[damage] in err  # fmt: skip
    assert not out.exists()
    assert not (tmp_path / "p.md").exists()
    assert A.main(["--scale", "pilot", "--record", str(rec), "--wall-s", "10"]) == 2  # a sitting: the same
    assert _snapshot(rec) == before


def test_a_truncated_log_in_a_sitting_is_one_line(recorded, capsys):
    grid, root, rec = recorded
    run = grid.runs()[2]
    _write_run(root, run, grid.steps, grid.eval_every)
    log = root / "runs" / run.folder / "metrics.jsonl"
    log.write_bytes(log.read_bytes()[:-30])
    before = _snapshot(rec)
    capsys.readouterr()
    assert A.main(["--scale", "pilot", "--record", str(rec), "--wall-s", "10"]) == 2
    assert "metrics.jsonl" in _one_line(capsys)
    assert _snapshot(rec) == before


@pytest.mark.parametrize(
    ("argv", "says"),
    [(["--wall-s", "inf"], "--wall-s inf"), (["--wall-s", "-1"], "--wall-s -1"), (["--wall-s", "nan"], "--wall-s nan"),
     (["--wall-s", "0"], "--wall-s 0"), (["--no-record", "--wall-s", "60"], "--wall-s is kept in a record"),
     (["--no-scale"], "--record needs --scale")],
)  # fmt: skip
def test_options_that_would_do_nothing_or_write_nonsense_are_refused(recorded, tmp_path, capsys, argv, says):
    _, _, rec = recorded
    before = _snapshot(rec)
    base = {"--scale": ["--scale", "pilot"], "--record": ["--record", str(rec)]}
    if "--no-scale" in argv:
        base.pop("--scale")
    if "--no-record" in argv:
        base.pop("--record")
    cmd = [*base.get("--scale", []), *base.get("--record", []), *(a for a in argv if not a.startswith("--no-"))]
    capsys.readouterr()
    assert A.main(cmd) == 2
    assert says in _one_line(capsys)
    assert _snapshot(rec) == before
    assert json.loads((rec / "arena_meta.json").read_text())["sittings"][-1]["wall_s"] == 100.0


def test_missing_says_when_the_record_is_complete(pilot, tmp_path, capsys):
    grid, root = pilot
    for run in grid.runs():
        _write_run(root, run, grid.steps, grid.eval_every)
    rec = tmp_path / "record"
    assert A.main(["--scale", "pilot", "--record", str(rec), "--wall-s", "100"]) == 0
    capsys.readouterr()
    assert A.main(["--scale", "pilot", "--missing", "--from-record", str(rec)]) == 1
    out = capsys.readouterr()
    assert out.out.split() == ["nothing-missing:the-record-is-complete"]
    assert "nothing to train" in out.err
