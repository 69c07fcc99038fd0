"""A TRL user's script: ``PODSGRPOTrainer(pods_m=n)`` replays ``trl.GRPOTrainer`` at the same seed.

The same prompts in the same order at every step (TRL's default ``shuffle_dataset=True``, over more than
one data epoch, step-capped and epoch-based), the same sampled completions and the same losses.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch
from conftest import QUIET_CPU_ARGS, build_user_trainer

from pods_repro.trainer import PODSGRPOTrainer

N = 4


def _args(tmp_path, **kw):
    from trl import GRPOConfig

    base = dict(
        output_dir=str(tmp_path / "out"),
        num_generations=N,
        per_device_train_batch_size=2 * N,  # two prompts per step
        gradient_accumulation_steps=1,
        max_completion_length=8,
        learning_rate=1e-3,
        **QUIET_CPU_ARGS,
        seed=3,
    )
    base.update(kw)
    return GRPOConfig(**base)


def _run(tiny_policy_dir, cls, args, **pods_kw):
    seen: dict[int, list] = defaultdict(list)  # optimizer step -> (prompt, completion) of every rollout
    holder = {}

    def reward(prompts, completions, **_):
        seen[holder["trainer"].state.global_step].extend(zip(prompts, completions, strict=True))
        return [float(sum(map(ord, c)) % 3) for c in completions]

    trainer, _ = build_user_trainer(tiny_policy_dir, args, reward, trainer_cls=cls, quiet=False, **pods_kw)
    holder["trainer"] = trainer
    trainer.train()
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    return dict(seen), losses


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("budget", [dict(max_steps=6), dict(max_steps=-1, num_train_epochs=2)], ids=["steps", "epochs"])
def test_pods_at_m_equal_n_replays_trl_grpo(tiny_policy_dir, tmp_path, budget):
    from trl import GRPOTrainer

    trl_seen, trl_losses = _run(tiny_policy_dir, GRPOTrainer, _args(tmp_path / "trl", **budget))
    pods_seen, pods_losses = _run(tiny_policy_dir, PODSGRPOTrainer, _args(tmp_path / "pods", **budget), pods_m=N)
    assert len(trl_seen) == 6 if "num_train_epochs" not in budget else 8  # 4 steps per epoch of 8 prompts
    prompts = {step: [p for p, _ in rows] for step, rows in trl_seen.items()}
    assert {step: [p for p, _ in rows] for step, rows in pods_seen.items()} == prompts
    assert len({tuple(dict.fromkeys(prompts[s])) for s in prompts}) > 1  # not one prompt pair over and over
    assert pods_seen == trl_seen  # the same completions, sampled from the same weights
    assert any(loss != 0 for loss in trl_losses)
    torch.testing.assert_close(torch.tensor(pods_losses), torch.tensor(trl_losses))
