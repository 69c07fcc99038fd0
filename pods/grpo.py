"""The GRPO-PODS objective as pure tensor functions (no model, no I/O).

Three pieces, each a drop-in for the matching part of a GRPO trainer:

1. :func:`group_advantages` / :func:`pods_advantages`: group-relative advantages
   ``a_i = (r_i - mean) / (std + eps)``. With PODS the statistics come from the *kept* subset
   (arXiv 2504.13818 §3.2, the paper's default, "after"); the App. A.3 ablation ("before") takes them from all
   n rollouts of the group and then keeps the selected rows.
2. :func:`kl_k3`: the k3 estimator ``exp(ref - logp) - (ref - logp) - 1`` of KL(pi || pi_ref).
3. :func:`policy_loss`: the clipped surrogate ``-min(rho A, clip(rho, 1-eps, 1+eps_high) A)`` plus
   ``beta * k3``, aggregated either per ``sequence`` (the paper's formula: mean over the tokens of each
   completion, then over completions; TRL ``loss_type="grpo"``) or per ``token`` (sum over all tokens
   / number of tokens; the open-r1 code of settings (e)-(f), TRL ``loss_type="bnpo"``).

Conventions (open in the paper; the authors' code and TRL agree on them: docs/paper.md#open-items):

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

from pods.base import AGGREGATIONS, NORMALIZE

__all__ = ["group_advantages", "kl_k3", "pods_advantages", "policy_loss", "AGGREGATIONS", "NORMALIZE", "SCALES"]


SCALES = ("group", "batch", "none")
"""Advantage scalings, TRL's ``scale_rewards`` values: the std of each group (the paper), of the whole batch, none."""


def _scale_name(scale: bool | str) -> str:
    if scale is True:
        return "group"
    if scale is False:
        return "none"
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES} (or True = 'group', False = 'none'), got {scale!r}")
    return scale


def _as_rewards(rewards_P_N: torch.Tensor) -> torch.Tensor:
    """(P, N) float rewards (at least float32) or ValueError saying what to change."""
    if not isinstance(rewards_P_N, torch.Tensor):
        raise ValueError(f"rewards must be a torch.Tensor, got {type(rewards_P_N).__name__}; wrap with torch.as_tensor")
    r = rewards_P_N.unsqueeze(0) if rewards_P_N.dim() == 1 else rewards_P_N
    if r.dim() != 2:
        raise ValueError(f"rewards must have shape (N,) or (P, N), got {tuple(rewards_P_N.shape)}")
    if r.shape[-1] == 0:
        raise ValueError("rewards has no rollouts (N == 0); each group needs at least one rollout")
    # Integers, bool and half precision are computed in float32 (bf16 would round a 7.5-8.5 reward by 4e-3).
    if not r.is_floating_point() or r.dtype in (torch.float16, torch.bfloat16):
        r = r.to(torch.float32)
    return r


def group_advantages(rewards_P_N: torch.Tensor, eps: float = 1e-4, scale: bool | str = True) -> torch.Tensor:
    """``(r - mean) / (std + eps)`` within each row (group) of a (P, N) or (N,) reward tensor.

    ``scale`` (TRL's ``scale_rewards``): ``True``/``"group"`` divides by each group's std (the paper);
    ``"batch"`` by the std of all P x N rewards together; ``False``/``"none"`` returns ``r - mean``
    (Dr. GRPO style). Half-precision and integer rewards are computed in float32.
    """
    scale = _scale_name(scale)
    r = _as_rewards(rewards_P_N)
    centred_P_N = r - r.mean(dim=-1, keepdim=True)
    # A constant group (or a group of one) has no learning signal: exact zeros, never NaN.
    constant_P1 = (r.amax(dim=-1, keepdim=True) == r.amin(dim=-1, keepdim=True)) | (r.shape[-1] < 2)
    if scale == "group":
        std_P1 = r.std(dim=-1, keepdim=True) if r.shape[-1] > 1 else torch.zeros_like(r[:, :1])
        adv_P_N = centred_P_N / (std_P1 + eps)
    elif scale == "batch":
        std = r.std() if r.numel() > 1 else torch.zeros((), dtype=r.dtype, device=r.device)
        adv_P_N = centred_P_N / (std + eps)
    else:
        adv_P_N = centred_P_N
    adv_P_N = torch.where(constant_P1, torch.zeros_like(adv_P_N), adv_P_N)
    return adv_P_N[0] if rewards_P_N.dim() == 1 else adv_P_N


def pods_advantages(
    rewards_P_N: torch.Tensor,
    keep_P_M: torch.Tensor,
    normalize: str = "after",
    eps: float = 1e-4,
    scale: bool | str = True,
) -> torch.Tensor:
    """Advantages of the kept rollouts, shape (P, M) (or (M,) for 1-D inputs).

    normalize="after": statistics over the kept subset (PODS default, arXiv 2504.13818 §3.2);
    normalize="before": statistics over all n rollouts, then the kept rows (App. A.3 ablation).
    ``scale`` as in :func:`group_advantages` ("batch": the std of every kept reward, or of every reward
    with "before"). ``keep_P_M`` holds distinct indices in [0, N) per group, as :func:`pods.selectors.select`
    returns them.
    """
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be one of {NORMALIZE}, got {normalize!r}")
    r_P_N = _as_rewards(rewards_P_N)
    if not torch.isfinite(r_P_N).all():
        raise ValueError("rewards contain NaN or inf; fix the reward function (pods.selectors.select refuses them too)")
    if not isinstance(keep_P_M, torch.Tensor) or keep_P_M.dtype not in (torch.int64, torch.int32):
        raise ValueError(
            f"keep must be an integer torch.Tensor of indices (pods.selectors.select returns one), got "
            f"{type(keep_P_M).__name__}{'' if not isinstance(keep_P_M, torch.Tensor) else ' of ' + str(keep_P_M.dtype)}"
        )
    k_P_M = (keep_P_M.unsqueeze(0) if keep_P_M.dim() == 1 else keep_P_M).to(torch.long)
    if k_P_M.dim() != 2 or k_P_M.shape[0] != r_P_N.shape[0]:
        raise ValueError(f"keep has shape {tuple(keep_P_M.shape)} but rewards have {r_P_N.shape[0]} group(s)")
    n = r_P_N.shape[-1]
    if k_P_M.numel() and (k_P_M.min() < 0 or k_P_M.max() >= n):
        raise ValueError(f"keep holds indices outside [0, {n}) (n = {n} rollouts per group)")
    if k_P_M.shape[-1] > 1 and (k_P_M.sort(dim=-1).values.diff(dim=-1) == 0).any():
        raise ValueError("keep repeats a rollout within a group; each kept index must be distinct")
    if normalize == "after":
        adv_P_M = group_advantages(r_P_N.gather(-1, k_P_M), eps=eps, scale=scale)
    else:
        adv_P_M = group_advantages(r_P_N, eps=eps, scale=scale).gather(-1, k_P_M)
    return adv_P_M[0] if rewards_P_N.dim() == 1 else adv_P_M


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
    if not (epsilon >= 0 and eps_high >= 0):
        raise ValueError(f"epsilon={epsilon} and epsilon_high={eps_high} must be >= 0 (clip range [1-eps, 1+eps_high])")
    if logp_B_T.dim() != 2 or mask_B_T.shape != logp_B_T.shape:
        raise ValueError(
            f"logp must be (B, T) and mask the same shape, got {tuple(logp_B_T.shape)} and {tuple(mask_B_T.shape)}"
        )
    for name, t in (("old_logp", old_logp_B_T), ("ref_logp", ref_logp_B_T)):
        if t is not None and t.shape != logp_B_T.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, logp {tuple(logp_B_T.shape)}; they must match")
    if adv_B.shape != logp_B_T.shape[:1]:
        raise ValueError(
            f"adv must hold one advantage per completion, shape ({logp_B_T.shape[0]},), got {tuple(adv_B.shape)}"
        )
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
