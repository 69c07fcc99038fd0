"""The arena's conditions and config keys: the partial-credit reward, noisy rewards, the group-filter keys of
``pods train`` (validation, trainer keywords) and the fingerprint rule that keeps recorded runs' fingerprints."""

from __future__ import annotations

import pytest

from pods_repro import registry
from pods_repro.config import ConfigError, load_config
from pods_repro.config.fingerprint import FINGERPRINT_OMIT_AT_DEFAULT, config_fingerprint
from pods_repro.rewards import eval_metrics, flip_rewards, partial_int_credit, score, trl_reward_funcs

GOOD = "<think>\n5+3=8\n</think>\n<answer>\n{}\n</answer>"


# ----------------------------------------------------------------------------- partial credit


@pytest.mark.parametrize(
    ("answer", "gold", "credit"),
    [("85", "85", 1.0), ("83", "85", 0.5), ("185", "85", 2 / 3), ("5", "85", 0.5), ("-7", "7", 0.5), ("12", "85", 0.0)],
)
def test_partial_credit_is_the_share_of_right_aligned_digits(answer, gold, credit):
    assert partial_int_credit(answer, gold) == pytest.approx(credit)


def test_partial_credit_is_one_only_for_the_right_answer_and_between_zero_and_one():
    for a in range(-120, 121, 7):
        for g in (0, 9, 85, 107, -13):
            c = partial_int_credit(str(a), str(g))
            assert 0.0 <= c <= 1.0
            assert (c == 1.0) == (a == g)


def test_partial_reward_scores_closeness_in_training_and_exactness_in_evaluation():
    assert score(GOOD.format(83), "85", "arith", "partial")["accuracy"] == pytest.approx(0.5)
    assert score(GOOD.format(83), "85", "arith", "paper")["accuracy"] == 0.0
    assert score(GOOD.format(85), "85", "arith", "partial")["total"] == 3.0
    assert score("<answer>\nabc\n</answer>", "85", "arith", "partial")["accuracy"] == 0.0
    assert eval_metrics(GOOD.format(83), "85", "arith", "partial")["accuracy"] == 0.0
    assert eval_metrics(GOOD.format(85), "85", "arith", "partial")["accuracy"] == 1.0


# ----------------------------------------------------------------------------- noisy rewards


def test_flip_rewards_flips_about_p_of_the_rollouts_and_nothing_at_zero():
    values = [1.0, 0.0] * 2000
    assert flip_rewards(values, 0.0, seed=1, step=3, round_=0) == values
    out = flip_rewards(values, 0.2, seed=1, step=3, round_=0)
    flipped = [o != v for o, v in zip(out, values, strict=True)]
    assert all(o == 1.0 - v for o, v, f in zip(out, values, flipped, strict=True) if f)
    assert sum(flipped) / len(values) == pytest.approx(0.2, abs=0.02)


def test_noise_on_partial_credit_flips_the_credit_as_the_docs_say():
    """task.reward_noise with task.reward=partial flips a partial credit r to 1 - r: what `pods train --help`
    (the schema's text) and docs/trl.md say."""
    import subprocess
    import sys

    values = [0.25, 2 / 3, 0.5] * 500
    out = flip_rewards(values, 0.4, seed=0, step=1, round_=0)
    assert {round(o, 9) for o, v in zip(out, values, strict=True) if o != v} == {0.75, round(1 / 3, 9)}
    load_config(registry.repo_file("experiments/tiny_a.yaml"), ["task.reward=partial", "task.reward_noise=0.1"])
    helptext = subprocess.run(
        [sys.executable, "-m", "pods_repro", "train", "--help"], capture_output=True, text=True, check=True
    ).stdout
    at = helptext.index("task.reward_noise")
    assert "task.reward=partial" in helptext[at : at + 700]
    assert "partial credit r to 1 - r" in (registry.REPO_ROOT / "docs" / "trl.md").read_text().replace("\n", " ")


def test_flip_rewards_is_seeded_per_run_step_round_and_rollout():
    values = [1.0] * 400
    a = flip_rewards(values, 0.3, seed=0, step=5, round_=0)
    assert a == flip_rewards(values, 0.3, seed=0, step=5, round_=0)
    for other in (dict(seed=1, step=5, round_=0), dict(seed=0, step=6, round_=0), dict(seed=0, step=5, round_=1)):
        assert a != flip_rewards(values, 0.3, **other)
    assert a != flip_rewards(values, 0.3, seed=0, step=5, round_=0, rank=1)  # another process's rows
    with pytest.raises(ValueError, match="must be in"):
        flip_rewards(values, 0.5, seed=0, step=0, round_=0)


def test_reward_noise_touches_the_accuracy_component_only_and_counts_rounds_within_a_step():
    class State:
        global_step = 4

    acc, fmt, tags = trl_reward_funcs("arith", "paper", noise=0.4, seed=7)
    completions = [GOOD.format(85)] * 200
    answers = ["85"] * 200
    first = acc(completions=completions, answer=answers, trainer_state=State())
    second = acc(completions=completions, answer=answers, trainer_state=State())  # a refill round of step 4
    assert first == flip_rewards([1.0] * 200, 0.4, 7, 4, 0)
    assert second == flip_rewards([1.0] * 200, 0.4, 7, 4, 1)
    assert 0 < first.count(0.0) < 200
    assert fmt(completions=completions, answer=answers, trainer_state=State()) == [1.0] * 200
    assert tags(completions=completions, answer=answers, trainer_state=State()) == [1.0] * 200


# ----------------------------------------------------------------------------- config keys


def test_group_filter_keys_are_validated():
    with pytest.raises(ConfigError, match=r"rollout.filter='zero_sd': is not one of none, zero_std, refill"):
        load_config(registry.repo_file("experiments/tiny_a.yaml"), ["rollout.filter=zero_sd"], check_machine=False)
    with pytest.raises(ConfigError, match="rollout.skip_prob=1.5: must be in"):
        load_config(registry.repo_file("experiments/tiny_a.yaml"), ["rollout.skip_prob=1.5"], check_machine=False)
    with pytest.raises(ConfigError, match="task.reward_noise=0.5: must be in"):
        load_config(registry.repo_file("experiments/tiny_a.yaml"), ["task.reward_noise=0.5"], check_machine=False)
    with pytest.raises(ConfigError, match="task.reward='partial': gives digit-wise partial credit"):
        load_config(registry.repo_file("experiments/a_gsm8k_qwen3b.yaml"), ["task.reward=partial"], check_machine=False)


def test_refill_and_skip_need_one_process():
    two = ["hardware.num_processes=2", "rollout.prompts_per_step=2"]
    tiny_a = registry.repo_file("experiments/tiny_a.yaml")
    load_config(tiny_a, [*two, "rollout.filter=zero_std"], check_machine=False)  # the plain filter is fine
    for override in ("rollout.filter=refill", "rollout.skip_after=1"):
        with pytest.raises(ConfigError, match="on one process, but hardware.num_processes=2"):
            load_config(tiny_a, [*two, override], check_machine=False)


def test_group_filter_keys_become_trainer_keywords():
    pytest.importorskip("trl")
    from pods_repro.trainer.grpo_config import group_filter_kwargs

    def kwargs(*overrides):
        return group_filter_kwargs(
            load_config(registry.repo_file("experiments/tiny_a.yaml"), list(overrides), check_machine=False)
        )

    assert kwargs() == {}
    assert kwargs("rollout.filter=zero_std") == {"pods_filter_zero_std": True}
    assert kwargs("rollout.filter=refill", "rollout.refill_max_rounds=3") == {
        "pods_filter_zero_std": True,
        "pods_refill_max_rounds": 3,
    }
    assert kwargs("rollout.skip_after=2", "rollout.skip_prob=0.25") == {"pods_skip_after": 2, "pods_skip_prob": 0.25}


def test_new_keys_at_their_default_stay_out_of_the_fingerprint():
    cfg = load_config(registry.repo_file("experiments/tiny_a.yaml"), [], check_machine=False)
    flat, digest = config_fingerprint(cfg)
    assert not set(FINGERPRINT_OMIT_AT_DEFAULT) & set(flat)
    assert "rollout.rule" in flat  # the other keys are all there
    for override, key in (
        ("rollout.filter=refill", "rollout.filter"),
        ("task.reward_noise=0.1", "task.reward_noise"),
        ("rollout.skip_after=1", "rollout.skip_after"),
    ):
        other = load_config(registry.repo_file("experiments/tiny_a.yaml"), [override], check_machine=False)
        flat2, digest2 = config_fingerprint(other)
        assert key in flat2
        assert digest2 != digest
