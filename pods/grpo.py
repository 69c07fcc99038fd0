"""The GRPO-PODS objective as pure tensor functions (no model, no I/O).

Three pieces, each a drop-in for the matching part of a GRPO trainer:

1. :func:`group_advantages` / :func:`pods_advantages`: group-relative advantages
   ``a_i = (r_i - mean) / (std + eps)``. With PODS the statistics come from the *kept* subset
   (PAPER.md §1.2, the paper's default, "after"); the App. A.3 ablation ("before") takes them from all
   n rollouts of the group and then keeps the selected rows.
2. :func:`kl_k3`: the k3 estimator ``exp(ref - logp) - (ref - logp) - 1`` of KL(pi || pi_ref).
3. :func:`policy_loss`: the clipped surrogate ``-min(rho A, clip(rho, 1-eps, 1+eps_high) A)`` plus
   ``beta * k3``, aggregated either per ``sequence`` (the paper's formula: mean over the tokens of each
   completion, then over completions; TRL ``loss_type="grpo"``) or per ``token`` (sum over all tokens
   / number of tokens; the open-r1 code of settings (e)-(f), TRL ``loss_type="bnpo"``).

Conventions (PAPER.md §1.4, the authors' code and TRL agree on them):

- the std is the *unbiased* sample std (torch's default) and ``eps = 1e-4`` is added to it;
- a group whose rewards are all equal gets advantages of exactly zero (never NaN): the numerator
  ``r - mean`` can be a rounding error away from zero, so such groups are zeroed explicitly;
- a group of a single rollout has advantage zero (its std is undefined; it carries no signal);
- completions with no tokens contribute zero loss (their token count is clamped to 1).

The paper's formula has no KL term; it enters only through the "KL coefficient" hyperparameter
(Table 2: 0.04 for Llama, 0 elsewhere), so ``beta = 0`` is the default.
"""

from __future__ import annotations

import torch

from pods.registry import AGGREGATIONS, NORMALIZE

__all__ = ["group_advantages", "kl_k3", "pods_advantages", "policy_loss", "AGGREGATIONS", "NORMALIZE"]


def group_advantages(rewards_P_N: torch.Tensor, eps: float = 1e-4, scale: bool = True) -> torch.Tensor:
    """``(r - mean) / (std + eps)`` within each row (group) of a (P, N) or (N,) reward tensor.

    ``scale=False`` returns ``r - mean`` (TRL's ``scale_rewards="none"``, Dr. GRPO style).
    """
    r = rewards_P_N.unsqueeze(0) if rewards_P_N.dim() == 1 else rewards_P_N
    if r.dim() != 2:
        raise ValueError(f"rewards must have shape (N,) or (P, N), got {tuple(rewards_P_N.shape)}")
    r = r.to(torch.float32) if not r.is_floating_point() else r
    centred_P_N = r - r.mean(dim=-1, keepdim=True)
    # A constant group (or a group of one) has no learning signal: exact zeros, never NaN.
    constant_P1 = (r.amax(dim=-1, keepdim=True) == r.amin(dim=-1, keepdim=True)) | (r.shape[-1] < 2)
    if scale:
        std_P1 = r.std(dim=-1, keepdim=True) if r.shape[-1] > 1 else torch.zeros_like(r[:, :1])
        adv_P_N = centred_P_N / (std_P1 + eps)
    else:
        adv_P_N = centred_P_N
    adv_P_N = torch.where(constant_P1, torch.zeros_like(adv_P_N), adv_P_N)
    return adv_P_N[0] if rewards_P_N.dim() == 1 else adv_P_N


def pods_advantages(
    rewards_P_N: torch.Tensor,
    keep_P_M: torch.Tensor,
    normalize: str = "after",
    eps: float = 1e-4,
    scale: bool = True,
) -> torch.Tensor:
    """Advantages of the kept rollouts, shape (P, M) (or (M,) for 1-D inputs).

    normalize="after": statistics over the kept subset (PODS default, PAPER.md §1.2);
    normalize="before": statistics over all n rollouts, then the kept rows (App. A.3 ablation).
    """
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be one of {NORMALIZE}, got {normalize!r}")
    one_d = rewards_P_N.dim() == 1
    r_P_N = rewards_P_N.unsqueeze(0) if one_d else rewards_P_N
    k_P_M = keep_P_M.unsqueeze(0) if keep_P_M.dim() == 1 else keep_P_M
    if k_P_M.shape[0] != r_P_N.shape[0]:
        raise ValueError(f"keep has {k_P_M.shape[0]} groups but rewards have {r_P_N.shape[0]}")
    if normalize == "after":
        adv_P_M = group_advantages(r_P_N.gather(-1, k_P_M), eps=eps, scale=scale)
    else:
        adv_P_M = group_advantages(r_P_N, eps=eps, scale=scale).gather(-1, k_P_M)
    return adv_P_M[0] if one_d else adv_P_M


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi_theta || pi_ref): ``exp(d) - d - 1`` with ``d = ref - logp``.

    Non-negative, unbiased in expectation under samples from pi_theta, and zero where the two agree.
    """
    d = ref_logp - logp
    return torch.exp(d) - d - 1


def policy_loss(
    logp_B_T: torch.Tensor,
    old_logp_B_T: torch.Tensor | None,
    adv_B: torch.Tensor,
    mask_B_T: torch.Tensor,
    *,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    beta: float = 0.0,
    ref_logp_B_T: torch.Tensor | None = None,
    aggregation: str = "sequence",
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped GRPO/PODS surrogate loss (to minimise) and a few diagnostics.

    Args:
        logp_B_T: log-probs of the sampled completion tokens under the current policy.
        old_logp_B_T: the same under the policy that generated them; ``None`` means on-policy
            (one update per generation, as in every setting of the paper): ratio = 1 but the gradient
            is the policy gradient.
        adv_B: one advantage per completion.
        mask_B_T: 1 for completion tokens, 0 for padding.
        epsilon, epsilon_high: clip range [1 - epsilon, 1 + epsilon_high]; epsilon_high defaults to
            epsilon (symmetric clipping).
        beta: coefficient of the k3 KL penalty against ``ref_logp_B_T`` (needed when beta != 0).
        aggregation: "sequence" (paper formula) or "token" (open-r1/TRL bnpo).
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if beta != 0.0 and ref_logp_B_T is None:
        raise ValueError("beta != 0 needs ref_logp_B_T (reference-model log-probs); pass them or set beta=0")
    eps_high = epsilon if epsilon_high is None else epsilon_high
    mask = mask_B_T.to(logp_B_T.dtype)
    old = logp_B_T.detach() if old_logp_B_T is None else old_logp_B_T
    ratio_B_T = torch.exp(logp_B_T - old)
    clipped_B_T = torch.clamp(ratio_B_T, 1.0 - epsilon, 1.0 + eps_high)
    a_B1 = adv_B.to(logp_B_T.dtype).unsqueeze(-1)
    per_token_B_T = -torch.min(ratio_B_T * a_B1, clipped_B_T * a_B1)
    kl_B_T = None
    if beta != 0.0:
        kl_B_T = kl_k3(logp_B_T, ref_logp_B_T)
        per_token_B_T = per_token_B_T + beta * kl_B_T
    if aggregation == "sequence":
        loss = ((per_token_B_T * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    else:
        loss = (per_token_B_T * mask).sum() / mask.sum().clamp(min=1.0)
    with torch.no_grad():
        n_tok = mask.sum().clamp(min=1.0)
        clipped = ((ratio_B_T < 1.0 - epsilon) & (a_B1 < 0)) | ((ratio_B_T > 1.0 + eps_high) & (a_B1 > 0))
        stats = {
            "clip_frac": float((clipped.to(mask.dtype) * mask).sum() / n_tok),
            "ratio_mean": float((ratio_B_T * mask).sum() / n_tok),
            "kl": float((kl_B_T * mask).sum() / n_tok) if kl_B_T is not None else 0.0,
        }
    return loss, stats
