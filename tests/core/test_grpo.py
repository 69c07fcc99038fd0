"""Golden values for the GRPO-PODS advantages and losses, computed by hand, and a gradient check."""

from __future__ import annotations

import math

import pytest
import torch

from pods.grpo import group_advantages, kl_k3, pods_advantages, policy_loss
from pods.selectors import select


def test_group_advantages_golden():
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]))
    a = 0.5 / (3**-0.5 + 1e-4)  # mean 0.5, unbiased std sqrt(1/3), eps 1e-4
    assert adv.tolist() == pytest.approx([a, -a, -a, a], rel=1e-6)
    assert group_advantages(torch.tensor([[2.0, 4.0]]), scale=False).tolist() == [[-1.0, 1.0]]


def test_zero_variance_and_singleton_groups_give_zero_not_nan():
    r_P_N = torch.tensor([[0.1, 0.1, 0.1], [1.2, 1.2, 1.2], [0.0, 1.0, 0.5]])
    adv = group_advantages(r_P_N)
    assert torch.equal(adv[:2], torch.zeros(2, 3))  # exactly zero (0.1 * 3 / 3 != 0.1 in floats)
    assert torch.isfinite(adv).all()
    assert adv[2].abs().sum() > 0
    assert group_advantages(torch.tensor([[3.0]])).tolist() == [[0.0]]
    keep = select(torch.tensor([5.0, 5.0, 5.0, 5.0]), 2)
    assert pods_advantages(torch.tensor([5.0, 5.0, 5.0, 5.0]), keep).tolist() == [0.0, 0.0]


def test_pods_advantages_after_vs_before_golden():
    r = torch.tensor([0.0, 1.0, 2.0, 3.0])
    keep = torch.tensor([0, 3])
    after = 1.5 / (math.sqrt(4.5) + 1e-4)  # kept {0, 3}: mean 1.5, unbiased std sqrt(4.5)
    before = 1.5 / (math.sqrt(5 / 3) + 1e-4)  # all four: mean 1.5, unbiased std sqrt(5/3)
    assert pods_advantages(r, keep, "after").tolist() == pytest.approx([-after, after], rel=1e-6)
    assert pods_advantages(r, keep, "before").tolist() == pytest.approx([-before, before], rel=1e-6)
    # after-normalisation gives each kept group a total advantage of zero (App. A.3)
    r_P_N = torch.rand(5, 16, generator=torch.Generator().manual_seed(0))
    adv_P_M = pods_advantages(r_P_N, select(r_P_N, 4), "after")
    assert adv_P_M.sum(-1).abs().max() < 1e-5
    with pytest.raises(ValueError, match="normalize"):
        pods_advantages(r, keep, "during")


def test_advantage_scales_group_batch_none_golden():
    # TRL's scale_rewards values: the std of each group (the paper), of the whole batch, or none.
    r_P_N = torch.tensor([[0.0, 2.0], [1.0, 1.0], [0.0, 4.0]])
    centred = torch.tensor([[-1.0, 1.0], [0.0, 0.0], [-2.0, 2.0]])
    assert torch.equal(group_advantages(r_P_N, scale="none"), centred)
    assert torch.equal(group_advantages(r_P_N, scale=False), centred)
    batch_std = float(r_P_N.std())  # unbiased, over all 6 rewards
    torch.testing.assert_close(group_advantages(r_P_N, scale="batch"), centred / (batch_std + 1e-4))
    assert torch.equal(group_advantages(r_P_N, scale="group"), group_advantages(r_P_N))
    # pods_advantages: "batch" takes the std of every kept reward (after) or of every reward (before)
    r = torch.tensor([[0.0, 1.0, 2.0, 3.0], [5.0, 5.0, 6.0, 9.0]])
    keep = torch.tensor([[0, 3], [1, 3]])
    kept = r.gather(1, keep)
    want_after = (kept - kept.mean(1, keepdim=True)) / (kept.std() + 1e-4)
    want_before = ((r - r.mean(1, keepdim=True)) / (r.std() + 1e-4)).gather(1, keep)
    torch.testing.assert_close(pods_advantages(r, keep, "after", scale="batch"), want_after)
    torch.testing.assert_close(pods_advantages(r, keep, "before", scale="batch"), want_before)
    with pytest.raises(ValueError, match="scale must be one of"):
        group_advantages(r_P_N, scale="std")


def test_advantage_inputs_are_checked():
    r = torch.tensor([[0.0, 1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="repeats a rollout"):
        pods_advantages(r, torch.tensor([[3, 3]]))
    with pytest.raises(ValueError, match=r"outside \[0, 4\)"):
        pods_advantages(r, torch.tensor([[0, 4]]))
    with pytest.raises(ValueError, match=r"outside \[0, 4\)"):
        pods_advantages(r, torch.tensor([[-1, 2]]))
    with pytest.raises(ValueError, match="integer torch.Tensor"):
        pods_advantages(r, [[0, 3]])
    with pytest.raises(ValueError, match="integer torch.Tensor"):
        pods_advantages(r, torch.tensor([[0.0, 3.0]]))
    with pytest.raises(ValueError, match="NaN or inf"):
        pods_advantages(torch.tensor([[0.0, math.nan, 2.0]]), torch.tensor([[0, 2]]))
    with pytest.raises(ValueError, match="2 group"):
        pods_advantages(torch.zeros(2, 4), torch.tensor([[0, 1], [0, 1], [0, 1]]))
    with pytest.raises(ValueError, match="no rollouts"):
        group_advantages(torch.empty(2, 0))
    with pytest.raises(ValueError, match="torch.Tensor"):
        group_advantages([1.0, 2.0])
    # half precision is computed in float32: a bf16 7.5-8.5 reward would be rounded by ~4e-3
    r16 = torch.tensor([[7.0, 7.5, 8.0, 8.5]], dtype=torch.bfloat16)
    adv = group_advantages(r16)
    assert adv.dtype == torch.float32
    torch.testing.assert_close(adv.double(), group_advantages(r16.double()), atol=1e-6, rtol=0)


def test_policy_loss_shapes_and_clip_range_are_checked():
    logp = torch.zeros(4, 5, requires_grad=True)
    mask = torch.ones(4, 5)
    with pytest.raises(ValueError, match=r"one advantage per completion, shape \(4,\)"):
        policy_loss(logp, None, torch.ones(1), mask)  # would broadcast one advantage to every row
    with pytest.raises(ValueError, match=r"one advantage per completion"):
        policy_loss(logp, None, torch.ones(4, 1), mask)
    with pytest.raises(ValueError, match="same shape"):
        policy_loss(logp, None, torch.ones(4), torch.ones(4, 6))
    with pytest.raises(ValueError, match="old_logp has shape"):
        policy_loss(logp, torch.zeros(4, 4), torch.ones(4), mask)
    with pytest.raises(ValueError, match="must be >= 0"):
        policy_loss(logp, torch.zeros(4, 5), torch.ones(4), mask, epsilon=-0.5)
    with pytest.raises(ValueError, match="must be >= 0"):
        policy_loss(logp, torch.zeros(4, 5), torch.ones(4), mask, epsilon_high=-0.1)


MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])


def test_loss_golden_on_policy():
    logp = torch.log(torch.tensor([[0.5, 0.25, 0.9], [0.5, 0.5, 0.5]]))
    adv = torch.tensor([1.0, -1.0])
    seq, _ = policy_loss(logp, None, adv, MASK, aggregation="sequence")
    tok, _ = policy_loss(logp, None, adv, MASK, aggregation="token")
    assert float(seq) == pytest.approx(0.0)  # row means -1 and +1
    assert float(tok) == pytest.approx((-1 * 2 + 1 * 3) / 5)


def test_loss_golden_with_clipping_and_kl():
    old = torch.zeros(2, 3)
    logp = torch.tensor([[math.log(1.5)] * 3, [math.log(0.5)] * 3])
    adv = torch.tensor([1.0, -1.0])
    # row 0: min(1.5, clip 1.2) * 1 -> -1.2 per token; row 1: min(-0.5, -0.8) -> +0.8 per token
    seq, stats = policy_loss(logp, old, adv, MASK, epsilon=0.2)
    tok, _ = policy_loss(logp, old, adv, MASK, epsilon=0.2, aggregation="token")
    assert float(seq) == pytest.approx((-1.2 + 0.8) / 2)
    assert float(tok) == pytest.approx((-1.2 * 2 + 0.8 * 3) / 5, abs=1e-6)
    assert stats["clip_frac"] == pytest.approx(1.0)
    # asymmetric upper clip: row 0 now clipped at 1.28
    seq_hi, _ = policy_loss(logp, old, adv, MASK, epsilon=0.2, epsilon_high=0.28)
    assert float(seq_hi) == pytest.approx((-1.28 + 0.8) / 2)
    # k3 KL with ref = logp + log 2: exp(log 2) - log 2 - 1 per token
    k3 = 2 - math.log(2) - 1
    ref = logp + math.log(2)
    seq_kl, st = policy_loss(logp, old, adv, MASK, epsilon=0.2, beta=0.1, ref_logp_B_T=ref)
    assert float(seq_kl) == pytest.approx((-1.2 + 0.8) / 2 + 0.1 * k3)
    assert st["kl"] == pytest.approx(k3)
    assert float(kl_k3(logp, logp).abs().max()) == 0.0
    with pytest.raises(ValueError, match="ref_logp"):
        policy_loss(logp, old, adv, MASK, beta=0.1)
    with pytest.raises(ValueError, match="aggregation"):
        policy_loss(logp, old, adv, MASK, aggregation="tokens")


def test_empty_completion_contributes_zero_not_nan():
    logp = torch.zeros(2, 3, requires_grad=True)
    mask = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    for agg in ("sequence", "token"):
        loss, _ = policy_loss(logp, None, torch.tensor([1.0, 1.0]), mask, aggregation=agg)
        loss.backward()
        assert torch.isfinite(loss)
        assert torch.isfinite(logp.grad).all()
        logp.grad = None


@pytest.mark.parametrize("aggregation", ["sequence", "token"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_gradient_step_moves_logprob_with_advantage_sign(aggregation, sign):
    torch.manual_seed(0)
    logits_V = torch.zeros(5, requires_grad=True)  # a one-state "policy" over a vocabulary of 5
    tokens_B_T = torch.tensor([[2, 3, 3], [1, 4, 0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])

    def seq_logp():
        return torch.log_softmax(logits_V, -1)[tokens_B_T]

    before = (seq_logp()[0] * mask[0]).sum().item()
    loss, _ = policy_loss(seq_logp(), None, torch.tensor([sign, 0.0]), mask, aggregation=aggregation)
    loss.backward()
    with torch.no_grad():
        logits_V -= 0.5 * logits_V.grad
    after = (seq_logp()[0] * mask[0]).sum().item()
    assert (after - before) * sign > 0, "positive advantage must raise the sequence's log-probability"
