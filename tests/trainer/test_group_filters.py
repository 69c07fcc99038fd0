"""Group-level filters of PODSGRPOTrainer on hand-made rewards: the DAPO-style refill, the GRESO-style skip,
the per-step token accounting, and the concatenation of generation rounds they rely on.

Each trainer is built on the cached tiny test policy (tests/conftest.py) from a user's PODSConfig, with
rewards chosen per prompt, and trains one to three steps.
"""

from __future__ import annotations

from collections import deque

import pytest
import torch
from conftest import QUIET_CPU_ARGS, build_user_trainer

from pods_repro.trainer import STEP_COUNTS, PODSConfig, concat_rows

FLAT_ANSWERS: set[str] = set()  # prompts whose rollouts all get the same reward (filled per test)


def _args(tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path / "out"),
        num_generations=4,
        pods_m=2,
        per_device_train_batch_size=8,  # two prompt groups of n = 4 per generation round
        gradient_accumulation_steps=1,
        max_steps=1,
        max_completion_length=8,
        learning_rate=1e-4,
        **QUIET_CPU_ARGS,
        seed=0,
    )
    base.update(kw)
    return PODSConfig(**base)


def _trainer(tiny_policy_dir, args, reward, n_records=8, **pods_kw):
    return build_user_trainer(tiny_policy_dir, args, reward, records=n_records, **pods_kw)


def _by_prompt(flat: set[str]):
    """Reward: 1.0 for every rollout of a prompt whose answer is in ``flat``, else 0, 1, 2, 0, ... (informative)."""

    def reward(completions, answer, **_):
        return [1.0 if a in flat else float(i % 3) for i, a in enumerate(answer)]

    return reward


def _logged(trainer, key):
    return [row[key] for row in trainer.state.log_history if key in row]


# ----------------------------------------------------------------------------- concatenating rounds


def test_concat_rows_pads_prompts_on_the_left_and_completions_on_the_right():
    a = {
        "prompt_ids": torch.tensor([[5, 6, 7]]),
        "prompt_mask": torch.tensor([[1, 1, 1]]),
        "completion_ids": torch.tensor([[1, 2]]),
        "completion_mask": torch.tensor([[1, 1]]),
        "advantages": torch.tensor([0.5]),
        "old_per_token_logps": None,
        "num_items_in_batch": torch.tensor(2),
    }
    b = {
        "prompt_ids": torch.tensor([[8]]),
        "prompt_mask": torch.tensor([[1]]),
        "completion_ids": torch.tensor([[3, 4, 9, 9]]),
        "completion_mask": torch.tensor([[1, 1, 1, 0]]),
        "advantages": torch.tensor([-0.5]),
        "old_per_token_logps": None,
        "num_items_in_batch": torch.tensor(3),
    }
    out = concat_rows([a, b], pad_token_id=0)
    assert out["prompt_ids"].tolist() == [[5, 6, 7], [0, 0, 8]]
    assert out["prompt_mask"].tolist() == [[1, 1, 1], [0, 0, 1]]
    assert out["completion_ids"].tolist() == [[1, 2, 0, 0], [3, 4, 9, 9]]
    assert out["completion_mask"].tolist() == [[1, 1, 0, 0], [1, 1, 1, 0]]
    assert out["advantages"].tolist() == [0.5, -0.5]
    assert out["old_per_token_logps"] is None
    assert int(out["num_items_in_batch"]) == 2


# ----------------------------------------------------------------------------- DAPO-style refill


def test_refill_replaces_uninformative_groups_by_informative_ones(tiny_policy_dir, tmp_path):
    from pods_repro.data import load_task

    records = load_task("arith", "train", prompt_style="plain", seed=0)[:8]
    flat = {r["answer"] for r in records[:6]}  # 6 of the 8 prompts give groups of zero variance
    args = _args(tmp_path, max_steps=3, pods_refill_max_rounds=16, log_completions=True)
    trainer, _ = _trainer(tiny_policy_dir, args, _by_prompt(flat))
    trainer.train()
    rounds = _logged(trainer, "pods/refill_rounds")
    assert sum(rounds) > 0  # some step met a flat prompt and refilled
    sel = trainer.pods_last_selection
    r = sel["rewards_G_N"]
    assert (r.amax(1) > r.amin(1)).all()  # every trained group is informative
    assert sel["live_G"].all()
    # every generated rollout counted; only the kept rows of the informative groups trained
    gen, trained = _logged(trainer, "pods/gen_rollouts"), _logged(trainer, "pods/trained_rollouts")
    assert all(g >= 8 and (g - 8) % 4 == 0 for g in gen)
    assert trained == [4.0, 4.0, 4.0]
    assert any(g > 8 for g in gen)
    # the completions table (TRL keeps the last 8 rows) marks the trained rows of the last groups generated
    kept = trainer._logs["extra"]["kept"]
    assert len(kept) == kept.maxlen == 8
    assert sum(kept) <= 4
    assert all(k in (True, False) for k in kept)


def test_refill_stops_at_its_cap_and_filters_what_is_left(tiny_policy_dir, tmp_path):
    args = _args(tmp_path, max_steps=1, pods_refill_max_rounds=2)
    trainer, _ = _trainer(tiny_policy_dir, args, lambda completions, **_: [1.0] * len(completions))
    trainer.train()
    assert _logged(trainer, "pods/refill_rounds") == [2.0]
    assert _logged(trainer, "pods/gen_rollouts") == [8.0 + 2 * 8.0]  # two groups again in each extra round
    assert _logged(trainer, "pods/trained_rollouts") == [0.0]
    assert _logged(trainer, "pods/filtered_groups") == [2.0]
    assert trainer.pods_step_counts["trained_tokens"] == 0.0


def test_refill_is_off_by_default_and_every_step_counts_its_tokens(tiny_policy_dir, tmp_path):
    args = _args(tmp_path, max_steps=1)
    trainer, _ = _trainer(tiny_policy_dir, args, lambda completions, **_: [1.0] * len(completions))
    trainer.train()
    assert trainer.pods_refill_max_rounds == 0
    assert trainer.pods_skip_after == 0
    assert _logged(trainer, "pods/refill_rounds") == [0.0]
    assert _logged(trainer, "pods/gen_rollouts") == [8.0]
    assert _logged(trainer, "pods/trained_rollouts") == [4.0]  # no filter: m = 2 of each of 2 groups
    counts = trainer.pods_step_counts
    assert set(STEP_COUNTS) <= set(counts)
    lengths = trainer.pods_last_selection["rewards_G_N"]  # noqa: F841 - the step's groups
    assert 0 < counts["trained_tokens"] <= counts["gen_tokens"] <= 8 * 8  # at most max_completion_length each


# ----------------------------------------------------------------------------- GRESO-style skip


def test_skip_decision_needs_k_zero_variance_groups_in_a_row(tiny_policy_dir, tmp_path):
    args = _args(tmp_path, pods_skip_after=2, pods_skip_prob=1.0)
    trainer, records = _trainer(tiny_policy_dir, args, _by_prompt(set()))
    row = {"prompt": records[0]["prompt"]}
    gen = torch.Generator().manual_seed(0)
    assert not trainer._pods_skips(row, gen)  # never seen
    trainer._pods_history[row["prompt"]] = deque([True], maxlen=2)
    assert not trainer._pods_skips(row, gen)  # one zero-variance group, k = 2
    trainer._pods_history[row["prompt"]] = deque([False, True], maxlen=2)
    assert not trainer._pods_skips(row, gen)  # an informative group among the last k
    trainer._pods_history[row["prompt"]] = deque([True, True], maxlen=2)
    assert trainer._pods_skips(row, gen)
    trainer.pods_skip_prob = 0.0
    assert not trainer._pods_skips(row, gen)
    trainer.pods_skip_prob = 0.3
    share = sum(trainer._pods_skips(row, gen) for _ in range(4000)) / 4000
    assert share == pytest.approx(0.3, abs=0.03)


def test_skip_replaces_a_prompt_with_a_zero_variance_history(tiny_policy_dir, tmp_path):
    # 2 training prompts, every group flat: the second visit of a prompt is skipped (p = 1), and a prompt is
    # drawn in its place (itself flat, so drawn again, up to the cap); the first visits are never skipped.
    args = _args(tmp_path, per_device_train_batch_size=4, max_steps=3, pods_skip_after=1, pods_skip_prob=1.0)
    flat = lambda completions, **_: [1.0] * len(completions)  # noqa: E731
    trainer, _ = _trainer(tiny_policy_dir, args, flat, n_records=2)
    trainer.train()
    skipped = _logged(trainer, "pods/skipped_prompts")
    assert skipped[:2] == [0.0, 0.0]
    assert skipped[2] > 0
    assert all(len(h) == 1 and h[0] for h in trainer._pods_history.values())
    assert _logged(trainer, "pods/gen_rollouts") == [4.0, 4.0, 4.0]  # a skip costs no generation


def test_filters_refuse_bad_values():
    with pytest.raises(ValueError, match="pods_refill_max_rounds=-1 must be an integer >= 0"):
        _args_plain(pods_refill_max_rounds=-1)
    with pytest.raises(ValueError, match="pods_skip_prob=1.5 must be a probability"):
        _args_plain(pods_skip_after=1, pods_skip_prob=1.5)


def _args_plain(**kw):
    return PODSConfig(output_dir="/tmp/unused", num_generations=4, pods_m=2, per_device_train_batch_size=4,
                      use_cpu=True, bf16=False, report_to=[], **kw)  # fmt: skip
