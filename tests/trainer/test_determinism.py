"""Determinism: on CPU, the same config and seed give identical metrics, times aside."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import strip_timing

from pods_repro.run import train
from pods_repro.runlog import read_jsonl

REPO = Path(__file__).resolve().parents[2]
RUN = ("budget.max_steps=3", "eval.every_steps=3", "eval.max_examples=3", "checkpoint.every_steps=10")


def test_same_seed_same_metrics_other_seed_differs(tiny_cfg, tmp_path):
    a = train(tiny_cfg(tmp_path / "a", *RUN))
    b = train(tiny_cfg(tmp_path / "b", *RUN))
    ma, mb = read_jsonl(a / "metrics.jsonl"), read_jsonl(b / "metrics.jsonl")
    assert len(ma) == 3
    assert strip_timing(ma) == strip_timing(mb)
    assert strip_timing(read_jsonl(a / "eval.jsonl")) == strip_timing(read_jsonl(b / "eval.jsonl"))
    # the comparison is sharp enough to see a different seed (different prompts and rollouts)
    c = train(tiny_cfg(tmp_path / "c", *RUN, "seed=1", "budget.max_steps=1"))
    mc = read_jsonl(c / "metrics.jsonl")
    assert strip_timing(mc)[0] != strip_timing(ma)[0]


# ---------------------------------------------------------------------------------------------------
# The tiny scale's own budget: config/config.yaml `scales.tiny` counts optimizer
# steps and evaluates on a step grid, so a run's rewards and evaluations do not depend on the load.


def tiny_scale_overrides(letter: str) -> dict:
    """The budget and evaluation keys of a tiny run of setting `letter` as the workflow resolves it: its
    experiment file (experiments/tiny_<letter>.yaml, which says what the default job trains), then the scale's
    overrides (pods_repro.config.scales, as rules/common.smk)."""
    import yaml

    from pods_repro.config import load_config

    scale = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["scales"]["tiny"]
    over = {**scale.get("overrides", {}), **scale.get("settings", {}).get(letter, {}).get("overrides", {})}
    cfg = load_config(REPO / "experiments" / f"tiny_{letter}.yaml", [f"{k}={_value(v)}" for k, v in over.items()],
                      check_machine=False)  # fmt: skip
    keys = ("budget.max_time_s", "budget.max_steps", "eval.every_s", "eval.every_steps", "eval.noise",
            "eval.max_examples", "eval.others_every", "policy.model")  # fmt: skip
    return {k: getattr(getattr(cfg, k.split(".")[0]), k.split(".")[1]) for k in keys}


def _value(v) -> str:
    return "null" if v is None else str(v)


def test_tiny_scale_budget_has_no_wall_clock():
    for letter in "abcdef":
        over = tiny_scale_overrides(letter)
        assert over.get("budget.max_time_s", "unset") is None, (letter, over)
        assert over.get("eval.every_s", "unset") is None, (letter, over)
        for key in ("budget.max_steps", "eval.every_steps"):
            assert isinstance(over.get(key), int), (letter, key, over)
            assert over[key] > 0, (letter, key, over)
        assert over["budget.max_steps"] % over["eval.every_steps"] == 0, "the last step should be on the grid"


def test_tiny_scale_arm_is_deterministic(tiny_policy_dir, tmp_path):
    """The baseline arm of tiny (a) under the scale's own overrides, shrunk from its step budget to 4
    steps (evaluation grid shrunk by the same factor), twice: identical rewards and evaluations."""
    from pods_repro.config import load_config
    from pods_repro.registry import main_arms, read_sheet

    over = tiny_scale_overrides("a")
    factor = over["budget.max_steps"] // 4
    shrunk = {
        **over,
        "budget.max_steps": 4,
        "eval.every_steps": max(1, over["eval.every_steps"] // factor),
        "eval.max_examples": 8,  # the only cut below the scale's setting: evaluation cost
        "checkpoint.every_steps": 10,
    }
    arm = main_arms(read_sheet(REPO / "config" / "runs_tiny.tsv"))["a"]["baseline"]
    args = [f"{k}={v}" for k, v in arm.overrides.items()] + [f"{k}={_value(v)}" for k, v in shrunk.items()]

    def run(name):
        cfg = load_config(
            REPO / "experiments" / "tiny_a.yaml",
            [f"policy.model={tiny_policy_dir}", f"out_dir={tmp_path / name}", *args],
        )
        assert cfg.budget.max_time_s is None
        assert cfg.eval.every_s is None
        return train(cfg)

    a, b = run("a"), run("b")
    ma, mb = read_jsonl(a / "metrics.jsonl"), read_jsonl(b / "metrics.jsonl")
    assert [r["step"] for r in ma] == [1, 2, 3, 4]
    assert [r["reward_mean"] for r in ma] == [r["reward_mean"] for r in mb]
    assert strip_timing(ma) == strip_timing(mb)
    ea, eb = read_jsonl(a / "eval.jsonl"), read_jsonl(b / "eval.jsonl")
    assert sorted({r["step"] for r in ea}) == list(range(0, 5, shrunk["eval.every_steps"]))
    assert strip_timing(ea) == strip_timing(eb)
    import json

    summary = json.loads((a / "summary.json").read_text())
    assert summary["stop_reason"] == "max_steps"
    assert summary["steps"] == 4
    # the seconds are measured beside the step budget: s/step and its split
    for key in ("s_per_step", "gen_s_per_step", "update_s_per_step", "reward_s_per_step"):
        assert summary[key] is not None, key
        assert summary[key] >= 0, key
    assert summary["gen_s_per_step"] + summary["update_s_per_step"] == pytest.approx(summary["s_per_step"], rel=1e-6)


def test_other_sets_on_a_coarser_grid_change_nothing_else(tiny_cfg, tmp_path):
    """eval.others_every (the tiny (a) runs evaluate Fig. 7's sets at every 4th point): the primary set at every
    point, the others at points 0, k, 2k, ... and at the last evaluation, each equal to the every-point run's
    value there; training (every per-step metric) and the primary curve unchanged."""
    run = ("budget.max_steps=5", "eval.every_steps=1", "eval.max_examples=3", "checkpoint.every_steps=10",
           "eval.datasets=[arith,arith_heldout]")  # fmt: skip
    every = train(tiny_cfg(tmp_path / "every", *run))
    coarse = train(tiny_cfg(tmp_path / "coarse", *run, "eval.others_every=2"))
    assert strip_timing(read_jsonl(every / "metrics.jsonl")) == strip_timing(read_jsonl(coarse / "metrics.jsonl"))
    e_rows, c_rows = strip_timing(read_jsonl(every / "eval.jsonl")), strip_timing(read_jsonl(coarse / "eval.jsonl"))
    steps = {ds: [r["step"] for r in c_rows if r["dataset"] == ds] for ds in ("arith", "arith_heldout")}
    assert steps == {"arith": [0, 1, 2, 3, 4, 5], "arith_heldout": [0, 2, 4, 5]}
    assert c_rows == [r for r in e_rows if r["dataset"] == "arith" or r["step"] in (0, 2, 4, 5)]
    with pytest.raises(Exception, match="others_every"):
        tiny_cfg(tmp_path / "bad", "eval.others_every=0")


def test_tiny_scale_evaluates_with_common_noise_and_the_paper_scale_with_fresh():
    """The tiny scale's curves differ where the policies do (eval.noise: common for every setting and the
    ablations); the paper scale keeps the paper's independent evaluations (the trainer default, fresh)."""
    import yaml

    from pods_repro.config.schema import EvalConfig

    scales = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["scales"]
    for letter in "abcdef":
        assert tiny_scale_overrides(letter).get("eval.noise") == "common", letter
    assert "eval.noise" not in scales["tiny"].get("ablation_overrides", {})
    assert EvalConfig().noise == "fresh"
    assert "eval.noise" not in str(scales["paper"])


def test_common_eval_noise_repeats_the_draws_wherever_the_policy_is_the_same(tiny_cfg, tmp_path):
    """eval.noise=common: one sampling seed per test set for every evaluation of every run, so an unchanged
    policy (lr 1e-30: updates below float32's resolution) scores the same at every step and under every run
    seed; eval.noise=fresh (the default, the paper's independent evaluations) draws anew at each point."""
    run = ("budget.max_steps=2", "eval.every_steps=1", "eval.max_examples=16", "checkpoint.every_steps=10",
           "optim.lr=1e-30")  # fmt: skip
    keys = ("accuracy", "format_accuracy", "both_accuracy", "completion_len_mean")

    def evals(out: Path) -> list[tuple]:
        return [tuple(r[k] for k in keys) for r in read_jsonl(out / "eval.jsonl")]

    common = evals(train(tiny_cfg(tmp_path / "common", *run, "eval.noise=common")))
    other_seed = evals(train(tiny_cfg(tmp_path / "common1", *run, "eval.noise=common", "seed=1")))
    fresh = evals(train(tiny_cfg(tmp_path / "fresh", *run)))
    assert len(common) == len(fresh) == 3
    assert len(set(common)) == 1, common  # steps 0, 1, 2: the same draws of the same policy
    assert other_seed == common
    assert len(set(fresh)) > 1, fresh  # sharp enough to see fresh draws of that same policy
    with pytest.raises(Exception, match="eval.noise"):
        tiny_cfg(tmp_path / "bad", "eval.noise=shared")


def test_compare_runs_ignores_seconds_and_names_the_first_difference(tmp_path, capsys):
    """scripts/compare_runs.py (the same-bits check between two roots of runs, e.g. two machines): values
    measured in seconds or bytes may differ, anything else makes the run DIFFERENT, with the first key."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("compare_runs", Path(__file__).parents[2] / "scripts/compare_runs.py")
    cmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmp)

    def write(root, time_s, reward):
        d = root / "e" / "arm" / "seed~0"
        d.mkdir(parents=True)
        steps = [{"step": s, "time_s": time_s * s, "gen_time_s": time_s, "peak_mem_mb": 600 + time_s,
                  "reward_mean": reward if s == 2 else 1.0} for s in (1, 2)]  # fmt: skip
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in steps))
        ev = {"step": 0, "dataset": "arith", "accuracy": 0.5, "time_s": 0.0, "eval_time_s": time_s}
        (d / "eval.jsonl").write_text(json.dumps(ev) + "\n")
        (d / "summary.json").write_text("{}")

    write(tmp_path / "a", 1.0, 2.0)
    write(tmp_path / "b", 3.5, 2.0)  # slower machine, same bits
    write(tmp_path / "c", 1.0, 2.5)
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "1 of 1 shared runs identical" in capsys.readouterr().out
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    assert (
        "DIFFERENT  e/arm/seed~0  first: metrics.jsonl record 1 (step 2): reward_mean = 2.0 vs 2.5"
        in capsys.readouterr().out
    )
    (tmp_path / "c" / "e" / "arm" / "seed~0" / "summary.json").unlink()  # c's run still training
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    assert "UNFINISHED e/arm/seed~0  (no summary.json in B)" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "empty")]) == 1  # nothing compared is no pass


def test_compare_runs_shared_steps_compares_a_short_run_with_the_prefix_of_a_long_one(tmp_path, capsys):
    """scripts/compare_runs.py --shared-steps: a 2-step run with an evaluation every 2 steps against a 4-step run
    evaluated every step is compared on steps 1-2 and the evaluations at steps 0 and 2 (grid index and `final`
    differ by design); a difference inside that prefix is found, one after it is not looked at."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("compare_runs", Path(__file__).parents[2] / "scripts/compare_runs.py")
    cmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmp)

    def write(root, last, every, reward_at=None):
        d = root / "a" / "arm" / "seed~0"
        d.mkdir(parents=True)
        steps = [{"step": s, "time_s": 0.1 * s, "reward_mean": 1.0 + s + (0.5 if s == reward_at else 0)}
                 for s in range(1, last + 1)]  # fmt: skip
        evals = [{"step": s, "dataset": "arith", "accuracy": 0.5 + s / 100, "grid_index": s // every,
                  "final": s == last} for s in range(0, last + 1, every)]  # fmt: skip
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in steps))
        (d / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evals))
        (d / "summary.json").write_text("{}")

    write(tmp_path / "short", 2, 2)
    write(tmp_path / "long", 4, 1)
    write(tmp_path / "late", 4, 1, reward_at=3)  # differs after the short run's last step only
    write(tmp_path / "early", 4, 1, reward_at=2)
    assert cmp.main([str(tmp_path / "short"), str(tmp_path / "long")]) == 1  # whole runs: not the same
    capsys.readouterr()
    assert cmp.main(["--shared-steps", str(tmp_path / "short"), str(tmp_path / "long")]) == 0
    assert "identical  a/arm/seed~0  (2 evaluations, 2 steps in common)" in capsys.readouterr().out
    assert cmp.main(["--shared-steps", str(tmp_path / "short"), str(tmp_path / "late")]) == 0
    capsys.readouterr()
    assert cmp.main(["--shared-steps", str(tmp_path / "short"), str(tmp_path / "early")]) == 1
    assert "metrics.jsonl record 1 (step 2): reward_mean = 3.0 vs 3.5" in capsys.readouterr().out


def test_compare_runs_outcomes_ignores_float_drift_and_says_where_the_samples_part(tmp_path, capsys):
    """scripts/compare_runs.py --outcomes (two CPU vendors): losses, gradients and entropies may differ from
    step 1; the run keeps 'same outcomes' while the sampled rewards, lengths and evaluations agree, and once
    they part the first step of each is named, with best/final accuracy on the primary test set."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("compare_runs", Path(__file__).parents[2] / "scripts/compare_runs.py")
    cmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmp)

    def write(root, drift, reward_from=None, acc_from=None):
        d = root / "e" / "arm" / "seed~0"
        d.mkdir(parents=True)
        steps = [{"step": s, "time_s": 0.1, "loss": 0.25 + drift, "entropy": 0.01 + drift, "grad_norm": 1 + drift,
                  "reward_mean": 2.0 + s / 8 + (0.125 if reward_from and s >= reward_from else 0),
                  "reward_accuracy_mean": 0.5, "completion_len_mean": 55.0} for s in range(1, 5)]  # fmt: skip
        evals = [{"step": s, "dataset": "arith", "accuracy": 0.5 + s / 100 + (0.0025 if acc_from is not None
                  and s >= acc_from else 0), "eval_time_s": drift} for s in range(0, 5, 2)]  # fmt: skip
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in steps))
        (d / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evals))
        (d / "summary.json").write_text("{}")

    write(tmp_path / "amd", 0.0)
    write(tmp_path / "intel", 1e-7)  # floats part at step 1, samples never
    write(tmp_path / "late", 1e-7, reward_from=3, acc_from=4)
    write(tmp_path / "eval_first", 1e-7, reward_from=4, acc_from=2)
    assert cmp.main([str(tmp_path / "amd"), str(tmp_path / "intel")]) == 1  # not the same bits
    capsys.readouterr()
    assert cmp.main(["--outcomes", str(tmp_path / "amd"), str(tmp_path / "intel")]) == 0
    out = capsys.readouterr().out
    assert "same outcomes  e/arm/seed~0  rewards part at step none, evaluations at step none" in out
    assert "best/final accuracy 0.5400/0.5400 vs 0.5400/0.5400" in out
    assert "1 of 1 shared runs with the same sampled outcomes" in out
    assert cmp.main(["--outcomes", str(tmp_path / "amd"), str(tmp_path / "late")]) == 1
    out = capsys.readouterr().out
    assert "OUTCOMES PART  e/arm/seed~0  rewards part at step 3, evaluations at step 4" in out
    assert "first: metrics.jsonl step 3: reward_mean = 2.375 vs 2.5" in out
    assert cmp.main(["--outcomes", str(tmp_path / "amd"), str(tmp_path / "eval_first")]) == 1
    assert "first: eval.jsonl step 2: accuracy = 0.52 vs 0.5225" in capsys.readouterr().out  # the earlier one
    write(tmp_path / "other_model", 1e-7, acc_from=0)  # parts at the evaluation before training
    assert cmp.main(["--outcomes", str(tmp_path / "amd"), str(tmp_path / "other_model")]) == 1
    assert "rewards part at step none, evaluations at step 0;" in capsys.readouterr().out
    (tmp_path / "late" / "e" / "arm" / "seed~0" / "summary.json").unlink()
    assert cmp.main(["--outcomes", str(tmp_path / "amd"), str(tmp_path / "late")]) == 1
    assert "0 of 1 shared runs with the same sampled outcomes (1 unfinished, not compared)" in capsys.readouterr().out


def test_compare_tables_allows_seconds_only_and_names_the_first_other_difference(tmp_path, capsys):
    """scripts/compare_tables.py (the same check for a whole job's tables): two tables folders may differ in the columns
    measured in seconds (by name, and time_to_peak.csv's eval-grid speed-up); a steps-to-peak speed-up or an
    accuracy that differs makes the table DIFFERENT, and a missing row count or nothing compared is no pass."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "compare_tables", Path(__file__).parents[2] / "scripts/compare_tables.py"
    )
    cmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmp)

    def write(root, sps, speedup, steps_speedup="1.5", value="0.8"):
        root.mkdir()
        (root / "time_to_peak.csv").write_text(
            "setting,speedup,ci_low,t_pods_s,sps_pods,speedup_steps,speedup_paper_hw\n"
            f"a,{speedup},1.0,{sps * 10},{sps},{steps_speedup},1.1\n"
        )
        (root / "curves.csv").write_text(f"setting,step,time_s,value\na,0,0.0,0.5\na,10,{sps * 10},{value}\n")
        (root / "levels.csv").write_text(f"setting,speedup\na,{steps_speedup}\n")

    write(tmp_path / "a", 0.3, 2.0)
    write(tmp_path / "b", 0.7, 2.6)  # the same job with a core busy: seconds differ, steps do not
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "seconds    time_to_peak.csv: differs only in speedup (1), t_pods_s (1), sps_pods (1) of 1 rows" in out
    assert "identical  levels.csv: 1 rows" in out
    assert "3 of 3 shared tables equal" in out
    write(tmp_path / "c", 0.3, 2.0, steps_speedup="1.6")
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    out = capsys.readouterr().out
    assert "DIFFERENT  levels.csv: row 1, speedup: '1.5' vs '1.6'" in out  # steps-based there
    assert "DIFFERENT  time_to_peak.csv: row 1, speedup_steps: '1.5' vs '1.6'" in out
    write(tmp_path / "d", 0.3, 2.0, value="0.9")
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "d")]) == 1
    assert "DIFFERENT  curves.csv: row 2, value: '0.8' vs '0.9'" in capsys.readouterr().out
    (tmp_path / "b" / "levels.csv").unlink()  # a table the other job did not write
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert "ONE SIDE   levels.csv (only in A)" in capsys.readouterr().out
    (tmp_path / "e").mkdir()
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "e")]) == 1  # nothing compared is no pass
