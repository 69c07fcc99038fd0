"""Rules from other papers, registered into :mod:`pods.selectors` for comparison with PODS.

Each keeps m of the n rollouts by another paper's criterion; the trainer then treats it as any rule
(the kept rows' advantages recomputed with the run's ``normalize`` and ``scale_rewards``).
docs/method.md, "Rules from other papers", states each rule and its ties. Importing this module
registers them (:func:`pods.register_selector`); every entry point of the reproduction imports it.
"""

from __future__ import annotations

import torch

from pods.grpo import group_advantages
from pods.selectors import register_selector

LITERATURE_RULES = ("balanced", "cppo_abs_advantage", "gfpo_shortest", "gfpo_token_efficiency")

# A reward within this share of the group's range from the mean counts as at the mean (balanced).
_MEAN_RTOL = 1e-12


@register_selector("gfpo_shortest", uses_lengths=True)
def _gfpo_shortest(
    r_P_N: torch.Tensor, m: int, generator: torch.Generator | None, lengths_P_N: torch.Tensor
) -> torch.Tensor:
    """GFPO's length filter (arXiv 2508.09726): the m shortest completions of each group, rewards unseen.

    Equal lengths: the lower index (stable sort). GFPO trains the kept rollouts on advantages from the
    kept set's statistics, which is the trainer's ``normalize="after"``.
    """
    return torch.sort(lengths_P_N, dim=-1, stable=True).indices[:, :m]


@register_selector("gfpo_token_efficiency", uses_lengths=True)
def _gfpo_token_efficiency(
    r_P_N: torch.Tensor, m: int, generator: torch.Generator | None, lengths_P_N: torch.Tensor
) -> torch.Tensor:
    """GFPO's token-efficiency filter (arXiv 2508.09726): the m highest ``reward / max(length, 1)``.

    A zero length counts as one token (no division by zero). Equal scores: the shorter completion, then
    the lower index; every reward-0 rollout scores 0, so the shortest of them are kept first. Negative
    rewards keep the plain ratio (among them, a longer completion scores higher).
    """
    score_P_N = r_P_N / lengths_P_N.clamp(min=1.0)
    # Order by (score descending, length, index): stable sorts, the last key first.
    order_P_N = torch.sort(lengths_P_N, dim=-1, stable=True).indices
    best_P_N = torch.sort(score_P_N.gather(-1, order_P_N), dim=-1, descending=True, stable=True).indices
    return order_P_N.gather(-1, best_P_N[:, :m])


@register_selector("cppo_abs_advantage")
def _cppo_abs_advantage(r_P_N: torch.Tensor, m: int, generator: torch.Generator | None) -> torch.Tensor:
    """CPPO (arXiv 2503.22342): the m largest |A|, A the full group's advantage (pods.grpo.group_advantages).

    Equal |A|: the lower index. The update's advantages are then the trainer's: recomputed over the kept
    set with ``normalize="after"``, these full-group A with ``normalize="before"`` (CPPO's own choice).
    """
    abs_adv_P_N = group_advantages(r_P_N).abs()
    return torch.sort(abs_adv_P_N, dim=-1, descending=True, stable=True).indices[:, :m]


@register_selector("balanced")
def _balanced(r_P_N: torch.Tensor, m: int, generator: torch.Generator | None) -> torch.Tensor:
    """Balanced groups (after Reinforce-Ada, arXiv 2510.04996): m // 2 above the mean, m // 2 at or below.

    The odd one goes to the side with more rollouts (equal sides: above); a short side gives all it has and
    the other fills the rest. Within a side, the lowest indices.
    """
    P, N = r_P_N.shape
    # Within a relative 1e-12 of the range from the mean counts as at the mean (the float mean may round).
    # A constant group may land on either side: all of it on one side keeps its m lowest indices either way.
    spread_P1 = r_P_N.amax(dim=-1, keepdim=True) - r_P_N.amin(dim=-1, keepdim=True)
    above_P_N = (r_P_N - r_P_N.mean(dim=-1, keepdim=True)) > _MEAN_RTOL * spread_P1
    n_above_P = above_P_N.sum(-1)
    n_below_P = N - n_above_P
    want_above_P = m // 2 + (m % 2) * (n_above_P >= n_below_P).long()
    # Feasible: m - n_below <= n_above because n_above + n_below = N >= m.
    k_above_P1 = torch.minimum(torch.maximum(want_above_P, m - n_below_P), n_above_P).unsqueeze(-1)
    k_below_P1 = m - k_above_P1
    # Rank of each rollout within its side in index order (0 = the lowest index of that side).
    rank_above_P_N = above_P_N.long().cumsum(-1) - 1
    rank_below_P_N = (~above_P_N).long().cumsum(-1) - 1
    take_P_N = torch.where(above_P_N, rank_above_P_N < k_above_P1, rank_below_P_N < k_below_P1)
    idx_P_N = torch.arange(N, device=r_P_N.device).expand(P, N)
    return idx_P_N[take_P_N].view(P, m)  # exactly m per row, in index order
