"""The arena's tests and weights (pods_repro.analysis.arena_stats): paired differences, Holm's correction per family,
the filter arms that were not exercised, what the update computed, and the compute weights of a record."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pods_repro.analysis import arena as A
from pods_repro.analysis import arena_page
from pods_repro.analysis import arena_stats as S

REPO = Path(__file__).resolve().parents[2]


def test_holm_and_bh_match_hand_computed_values():
    p = np.array([0.01, 0.04, 0.03, math.nan, 0.005])
    # Holm, sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, kept monotone: 0.02, 0.03, 0.06, 0.06
    assert S.holm(p)[[4, 0, 2, 1]] == pytest.approx([0.02, 0.03, 0.06, 0.06])
    assert math.isnan(S.holm(p)[3])
    # BH: 0.005 * 4 / 1, 0.01 * 4 / 2, 0.03 * 4 / 3, 0.04 * 4 / 4, then the running minimum from the top
    assert S.bh(p)[[4, 0, 2, 1]] == pytest.approx([0.02, 0.02, 0.04, 0.04])


def test_difference_pairs_shared_seeds_and_is_welch_otherwise():
    rng = np.random.default_rng(1)
    offset = rng.normal(0, 0.05, 8)  # a seed effect both arms share
    a = {s: 0.80 + 0.01 + offset[s] + rng.normal(0, 0.002) for s in range(8)}
    b = {s: 0.80 + offset[s] + rng.normal(0, 0.002) for s in range(8)}
    paired = S.difference(a, b)
    assert paired["analysis"] == "paired"
    assert paired["low"] > 0
    assert paired["p"] < 0.001
    unpaired = S.difference(a, {s + 100: v for s, v in b.items()})
    assert unpaired["analysis"] == "unpaired"
    assert unpaired["low"] < 0 < unpaired["high"]  # the seed effect swamps it
    assert unpaired["difference"] == pytest.approx(paired["difference"])


def _stats(effects: dict[str, float], seeds: int = 8, rng_seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """Per-seed auc_step of arms with a known effect over PODS (and the seed effect all arms share)."""
    rng = np.random.default_rng(rng_seed)
    offset = rng.normal(0, 0.02, seeds)
    rows = []
    for arm, eff in {"grpo": -0.01, "pods": 0.0, **effects}.items():
        for s in range(seeds):
            rows.append({"condition": "base", "arm": arm, "seed": s, "auc_step": 0.8 + eff + offset[s]
                         + rng.normal(0, 0.01)})  # fmt: skip
    arms = {a: {"rule": "max_variance", "n": 64, "m": 16, "extra": []} for a in ("grpo", "pods", *effects)}
    return pd.DataFrame(rows), {"conditions": {"base": []}, "steps": 10, "arms": arms}


def test_a_known_null_reads_not_resolved_and_a_known_effect_better_after_correction():
    effects = {f"null{i}": 0.0 for i in range(20)} | {"effect": 0.05}
    stats, meta = _stats(effects)
    vs = A.vs_table(stats, meta, references=("pods",))
    vs = vs[vs.statistic == "auc_step"].set_index("arm")
    assert vs.loc["effect", "verdict"] == "better"
    nulls = vs.loc[[a for a in effects if a.startswith("null")]]
    assert (nulls.verdict == "not resolved").all()
    assert (nulls.analysis == "paired").all()
    # among 20 null tests some raw interval excludes 0 at this draw: the correction is what removes it
    assert (nulls.verdict_uncorrected != "not resolved").any()
    assert (vs.family == "pods / auc_step").all()


def _toy_record(same_arm: bool = True):
    """grpo, pods, an arm with a zero-std filter whose curves equal PODS's, and one that differs."""
    curves, steps = [], []
    lifts = {"grpo": -0.02, "pods": 0.0, "pods_zero_std": 0.0, "other": 0.05}
    for arm, lift in lifts.items():
        for seed in range(4):
            for st in (0, 10, 20):
                acc = 0.5 + (0.01 * st + lift + 0.003 * seed if st else 0.0)
                curves.append({"condition": "base", "arm": arm, "seed": seed, "step": st, "accuracy": acc})
            for st in range(1, 21):
                n, m = (16, 16) if arm == "grpo" else (64, 8) if arm == "other" else (64, 16)
                filtered = arm == "pods_zero_std" and st % 5 == 0
                steps.append({"condition": "base", "arm": arm, "seed": seed, "step": st, "gen_rollouts": n,
                              "gen_tokens": 20.0 * n, "trained_rollouts": 0 if filtered else m,
                              "trained_tokens": 0.0 if filtered else 20.0 * m, "refill_rounds": 0,
                              "skipped_prompts": 0, "step_cpu_s": 0.01 + 1e-5 * n * 20 + 2.5e-5 * m * 20 + 1e-4 * seed,
                              "reward_mean": 1.0, "frac_zero_std": 1.0 if st % 5 == 0 else 0.0})  # fmt: skip
    c = pd.DataFrame(curves)
    if not same_arm:
        c.loc[(c.arm == "pods_zero_std") & (c.step == 20) & (c.seed == 0), "accuracy"] += 0.01
    arms = {a: {"rule": "max_variance", "n": 16 if a == "grpo" else 64, "m": 8 if a == "other" else 16, "extra": []}
            for a in lifts}  # fmt: skip
    arms["pods_zero_std"]["extra"] = ["rollout.filter=zero_std"]
    return c, pd.DataFrame(steps), {"conditions": {"base": []}, "steps": 20, "eval_every": 10, "arms": arms}


def test_an_arm_whose_curves_equal_pods_s_reads_not_exercised():
    curves, steps, meta = _toy_record()
    arms, vs, tokens, info = A._tables(curves, steps, meta, ["base"])
    mine = vs[vs.arm == "pods_zero_std"]
    assert not mine.empty
    assert (mine.verdict == "not exercised").all()
    assert mine.fired_share.iloc[0] == pytest.approx(0.2)  # steps 5, 10, 15, 20 of 20
    assert not (vs[vs.arm == "other"].verdict == "not exercised").any()
    text = "\n".join(arena_page.choosing(vs, meta))
    assert "| pods_zero_std | 0 / 0 | 0 / 0 | 0 / 0 | 0 / 0 | 1 |" in text
    assert "where exercised: other." in text  # never worse than PODS: not an arm without a test
    # its curves differ once: it was exercised, and it gets tests
    curves, steps, meta = _toy_record(same_arm=False)
    vs = A._tables(curves, steps, meta, ["base"])[1]
    assert not (vs[vs.arm == "pods_zero_std"].verdict == "not exercised").any()


def test_the_update_s_masked_rows_count_as_computed():
    _, steps, meta = _toy_record()
    out = S.computed_rows(steps, meta)
    zs = out[out.arm == "pods_zero_std"]
    assert zs.trained_tokens.sum() < zs.computed_tokens.sum()
    assert (zs.computed_rollouts == 16).all()
    assert zs.computed_tokens.to_numpy() == pytest.approx(np.full(len(zs), 20.0 * 16))


def test_cpu_weights_recover_the_cost_of_a_generated_and_a_trained_token():
    _, steps, meta = _toy_record()
    w = S.cpu_weights(S.computed_rows(steps, meta))
    assert w["gen_s"] == pytest.approx(1e-5, rel=0.05)
    assert w["trained_s"] == pytest.approx(2.5e-5, rel=0.05)
    assert w["ratio"] == pytest.approx(2.5, rel=0.05)


def test_a_compute_budget_reads_both_arms_of_a_pair_to_the_same_compute():
    curves, steps, meta = _toy_record()
    vs = A._tables(curves, steps, meta, ["base"])[1]
    row = vs[(vs.arm == "other") & (vs.reference == "grpo") & (vs.statistic == "auc_tokens")].iloc[0]
    # grpo spends 16 x 20 x 2 tokens a step, the arm (n = 64, m = 8) 64 x 20 + 8 x 20: read to step 20 x 640 / 1440
    assert row.budget == pytest.approx(20 * 640)
    assert row.arm_step_at_budget == pytest.approx(20 * 640 / 1440)
    assert row.reference_step_at_budget == pytest.approx(20.0)
    # against PODS (64 x 20 + 16 x 20 a step) the arm spends less: it is read to its end, PODS to step 18
    row = vs[(vs.arm == "other") & (vs.reference == "pods") & (vs.statistic == "auc_tokens")].iloc[0]
    assert row.arm_step_at_budget == pytest.approx(20.0)
    assert row.reference_step_at_budget == pytest.approx(20 * 1440 / 1600)


def test_gpu_model_reads_the_committed_cost_model():
    model = S.gpu_model(REPO / S.GPU_COST_MODEL)
    assert model["source"].startswith("tiny:")
    assert model["g0"] > 0
    assert model["u1"] > 0


def test_the_reuse_condition_trains_on_a_small_pool_of_arith_s_training_prompts():
    from pods_repro.arena import load_arena
    from pods_repro.data import synthetic_problems

    grid = load_arena("full")
    over = grid.conditions["reuse"]
    path = next(o.split("=", 1)[1] for o in over if o.startswith("task.train="))
    rows = [json.loads(x) for x in (REPO / path).read_text().splitlines()]
    pool = [f"{a}{op}{b}=" for a, op, b in synthetic_problems("arith", "train", seed=0)[: len(rows)]]
    assert [r["question"] for r in rows] == pool
    per_step = int(next(o.split("=")[1] for o in over if o.startswith("rollout.prompts_per_step=")))
    assert grid.steps * per_step // len(rows) >= 5  # every prompt is seen at least 5 times: the skip can fire


def test_full_references_use_the_default_job_s_64_seeds_and_the_arena_s_draw():
    curves, steps, runs, meta = A.read_record(REPO / "benchmarks" / "results" / "arena")
    base = curves[curves.condition == "base"]
    stats = A.run_stats(base, steps[steps.condition == "base"], meta["steps"])
    tiny = pd.read_csv(REPO / "benchmarks" / "results" / "tiny" / "curves.csv.gz")
    full = A.full_references(tiny, stats, meta, draws=200)
    assert full["seeds"] == {"grpo": 64, "pods": 64}
    rows = full["rows"].set_index(["arm", "reference"])
    assert rows.loc[("pods", "grpo"), "analysis"] == "paired"  # the same 64 seeds
    assert rows.loc[("random", "pods"), "analysis"] == "unpaired"  # 8 arm seeds against 64
    assert 0 <= full["percentile"]["pods"] <= 1


def test_cpu_weights_give_no_ratio_when_the_steps_cannot_separate_the_costs():
    _, steps, meta = _toy_record()
    same = S.computed_rows(steps[steps.arm == "pods"], meta)  # every step the same counts
    assert math.isnan(S.cpu_weights(same)["ratio"])
