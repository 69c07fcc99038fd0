"""Down-sampling rules: which m of the n rollouts of each prompt group enter the policy update.

The public entry point is :func:`select`::

    keep_P_M = select(rewards_P_N, m, rule="max_variance")   # (P, m) indices into each group
    keep_M = select(rewards_N, m)                              # (m,) for a single group

Rules live in a small registry keyed by the name used in configs (``rollout.rule``):

- ``max_variance`` (the paper's D_maxv, §3.3, Algorithm 2): the size-m subset of maximal reward
  variance. By Lemma 3.1 it is "the k highest plus the m-k lowest rewards" for some k in {0..m};
  we sort once, build prefix sums of r and r^2, score all m+1 candidates in O(1) each, and pick the
  best: O(n log n) per group, vectorised over the P groups (no Python loop over groups or over k).
- ``max_reward`` (D_maxr): the m highest rewards.
- ``random`` (D_rand): m indices uniformly without replacement, seeded by ``generator``.
- ``percentile`` (D_perc): the rollouts at the reward quantiles (j - 0.5)/m, j = 1..m.
- ``all``: keep every rollout (requires m == n; vanilla GRPO).
- ``max_variance_shortest`` (length-aware, beyond the paper; a GFPO-style length filter that keeps
  PODS's guarantee): the same kept *rewards* as ``max_variance`` (so the same maximal variance and the
  same advantages), and, for each distinct kept reward value v taken c times, the c rollouts with the
  shortest completions among those whose reward is v (equal lengths: the lower index). With 0/1
  correctness rewards it trains on the shortest correct and the shortest wrong rollouts of the
  max-variance split. Needs ``lengths`` (each rollout's completion length, e.g. in tokens).

Rules from other papers, for comparison with PODS under the same trainer (each keeps m of the n rollouts;
the trainer then computes the kept rollouts' advantages exactly as for PODS's rules, ``normalize``
included, see :func:`pods.grpo.pods_advantages`):

- ``gfpo_shortest`` (GFPO, Shrivastava et al., arXiv 2508.09726, "Group Filtered Policy Optimization"): the
  m shortest completions, whatever their rewards (equal lengths: the lower index). Needs ``lengths``.
- ``gfpo_token_efficiency`` (GFPO's token-efficiency filter): the m highest rewards per token,
  ``reward / max(length, 1)`` (a completion of no tokens counts as one token). Equal scores go to the
  shorter completion, then to the lower index; so among rollouts of reward 0 (score 0 at any length) the
  shortest are kept. Negative rewards are divided like the others: among them a longer completion scores
  higher (its penalty is spread over more tokens), as in the paper's plain ratio. Needs ``lengths``.
- ``cppo_abs_advantage`` (CPPO, Lin et al., arXiv 2503.22342, "Completion Pruning Policy Optimization"):
  the m rollouts of largest absolute advantage |A|, with A computed over the full group exactly as
  :func:`pods.grpo.group_advantages` does (``(r - mean) / (std + 1e-4)``, unbiased std; a constant group
  has A = 0 everywhere); equal |A|: the lower index. Which advantage the update then uses is the
  trainer's ``normalize``: with ``after`` (PODS's default) the kept rollouts' advantages are recomputed
  from the kept set's mean and std; with ``before`` the full-group advantages A are used, as in CPPO.
  Dividing by a group's std (or the batch's, or nothing) does not change the order of |r - mean| within a
  group, so the kept set does not depend on ``scale_rewards``.
- ``balanced`` (in the spirit of Reinforce-Ada's balanced groups, Xiong et al., arXiv 2510.04996): as many
  rollouts with reward above the group mean as at or below it: m // 2 from each side, the odd one to the
  side with more rollouts (equal sides: the above side); a side with too few rollouts gives all it has
  and the other side fills the rest. Within a side, the lowest indices (the first sampled: rollouts are
  independent draws, so this is an unbiased pick within the side, not the extremes). A reward within a
  relative 1e-12 of the group's range from the mean counts as at the mean, so rounding in the mean
  cannot move it; a constant group keeps its m lowest indices.

A rule registered with ``register_selector(name, uses_lengths=True)`` is called with the rollouts'
completion lengths as the keyword ``lengths_P_N`` (float64, the shape of the rewards); ``select``
then needs ``lengths=``, and :class:`pods.trainer.PODSGRPOTrainer` passes the completion token counts.

Determinism and ties (the paper leaves these open, docs/paper.md#open-items):

- Equal rewards are ordered by their index: we sort with a *stable* sort, so among equal rewards the
  rollout with the lower index counts as "lower". Consequently ``max_variance`` takes tied bottom
  rewards from the lowest indices and tied top rewards from the highest indices, and ``max_reward``
  takes the lowest indices among rewards tied at the cut-off. (The authors' code uses torch's
  default, unstable sort, so its choice among equal rewards is arbitrary.)
- Equal variances: ``max_variance`` keeps the candidate with the smallest k (fewest rollouts taken
  from the top), exactly as Algorithm 2's loop (initialised with k = 0, replaced only on a strictly
  greater variance). Variances within a relative 1e-12 of the maximum count as equal, so rounding
  noise in the prefix sums cannot flip the choice. (The authors' single-GPU code tries candidates in
  the order k = m, 0, 1, ..., m-1, so its ties go to k = m first; this only changes which of several
  equally good subsets is kept.)
- The length-aware and literature rules break ties by the lower index (after the secondary keys
  stated above), through stable sorts.
- Every rule returns each group's kept indices sorted ascending, so results compare directly.

Bad input raises ``ValueError`` with a message that says what to change.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pods import registry
from pods.grpo import group_advantages

__all__ = ["RULES", "check_rule", "register_selector", "select", "uses_lengths"]

# A rule maps (rewards_P_N float64, m, generator) -> keep_P_M (LongTensor, any order within a row); a rule
# registered with uses_lengths=True also gets lengths_P_N= (float64, completion lengths).
SelectorFn = Callable[..., torch.Tensor]
_REGISTRY: dict[str, SelectorFn] = {}
_USES_LENGTHS: set[str] = set()

# Two variances closer than this (relative to the group's spread) are treated as equal.
_VAR_RTOL = 1e-12


def register_selector(name: str, *, uses_lengths: bool = False) -> Callable[[SelectorFn], SelectorFn]:
    """Register a down-sampling rule under ``name`` (the string used in configs and ``pods_rule``).

    The rule is called as ``fn(rewards_P_N, m, generator)`` (float64 rewards of P groups of n rollouts;
    returns the (P, m) kept indices, any order within a row). With ``uses_lengths=True`` it is called as
    ``fn(rewards_P_N, m, generator, lengths_P_N=...)`` with each rollout's completion length, so a
    length-aware rule is one function::

        @register_selector("shortest_correct", uses_lengths=True)
        def shortest_correct(r_P_N, m, generator, lengths_P_N):
            # best reward first, then the shortest completion
            order = torch.sort(lengths_P_N, dim=-1, stable=True).indices
            best = torch.sort(-r_P_N.gather(-1, order), dim=-1, stable=True).indices[:, :m]
            return order.gather(-1, best)
    """

    def deco(fn: SelectorFn) -> SelectorFn:
        if name in _REGISTRY:
            raise ValueError(f"a down-sampling rule named {name!r} is already registered")
        _REGISTRY[name] = fn
        if uses_lengths:
            _USES_LENGTHS.add(name)
        return fn

    return deco


def uses_lengths(rule: str) -> bool:
    """Whether the rule ``rule`` ranks rollouts by their completion lengths (needs ``lengths=``)."""
    return rule in _USES_LENGTHS


def _rules_text() -> str:
    return ", ".join(sorted(_REGISTRY))


def check_rule(rule: str, n: int, m: int) -> None:
    """Config-time check of a (rule, n, m) triple for training (:func:`pods.registry.check_rule`,
    the one copy of it); raises ValueError saying the fix.

    Stricter than :func:`select`: training needs m >= 2, because the advantage of a group of one
    rollout is always zero (its reward equals its own mean).
    """
    registry.check_rule(rule, n, m, rules=_REGISTRY)


def _validate(rewards: torch.Tensor, m: int, rule: str) -> torch.Tensor:
    """Return rewards as a float64 (P, N) tensor, or raise ValueError saying what to change."""
    if rule not in _REGISTRY:
        raise ValueError(f"unknown down-sampling rule {rule!r}; valid rules: {_rules_text()}")
    if not isinstance(rewards, torch.Tensor):
        raise ValueError(
            f"rewards must be a torch.Tensor of shape (n,) or (P, n), got {type(rewards).__name__}; "
            "wrap it with torch.as_tensor(...)"
        )
    if rewards.dim() not in (1, 2):
        raise ValueError(
            f"rewards must have shape (n,) or (P, n) (P prompt groups of n rollouts), got shape "
            f"{tuple(rewards.shape)}; reshape with rewards.view(P, n)"
        )
    if rewards.is_meta:
        raise ValueError("rewards is a 'meta' tensor (shape only, no values); pass the computed rewards")
    if rewards.dtype == torch.bool or rewards.is_complex():
        raise ValueError(f"rewards must be real numbers, got dtype {rewards.dtype}; cast with .float()")
    n = rewards.shape[-1]
    if n == 0:
        raise ValueError("rewards has no rollouts (n == 0); each group needs at least one rollout")
    if isinstance(m, bool) or not isinstance(m, int):
        raise ValueError(f"m must be a Python int, got {m!r} ({type(m).__name__})")
    if m < 1:
        raise ValueError(f"m={m} must be >= 1 (the number of rollouts to keep per group)")
    if m > n:
        raise ValueError(f"m={m} > n={n}: cannot keep more rollouts than each group has; use m <= {n}")
    if rule == "all" and m != n:
        raise ValueError(f"rule 'all' keeps every rollout and needs m == n (got m={m}, n={n})")
    r = rewards.to(torch.float64)
    if not torch.isfinite(r).all():
        bad = (~torch.isfinite(r)).nonzero()[0].tolist()
        raise ValueError(
            f"rewards contain NaN or inf (first at index {bad}); fix the reward function or map "
            "non-finite values to a finite penalty before selection"
        )
    return r.unsqueeze(0) if r.dim() == 1 else r


def _validate_lengths(lengths: object, rewards: torch.Tensor, rule: str) -> torch.Tensor:
    """The completion lengths as a float64 (P, N) tensor, or raise ValueError saying what to pass."""
    if lengths is None:
        raise ValueError(
            f"rule {rule!r} ranks rollouts by completion length: pass lengths= (each rollout's completion "
            "length, e.g. its token count, in a tensor of the rewards' shape)"
        )
    if not isinstance(lengths, torch.Tensor):
        raise ValueError(f"lengths must be a torch.Tensor of the rewards' shape, got {type(lengths).__name__}")
    if lengths.shape != rewards.shape:
        raise ValueError(
            f"lengths has shape {tuple(lengths.shape)} but rewards {tuple(rewards.shape)}: one length per rollout"
        )
    ln = lengths.to(torch.float64)
    if not torch.isfinite(ln).all() or (ln < 0).any():
        raise ValueError("lengths must be finite and >= 0 (completion lengths, e.g. in tokens)")
    return ln.unsqueeze(0) if ln.dim() == 1 else ln


def select(
    rewards: torch.Tensor,
    m: int,
    rule: str = "max_variance",
    generator: torch.Generator | None = None,
    lengths: torch.Tensor | None = None,
) -> torch.LongTensor:
    """Indices of the m rollouts kept per group, sorted ascending; shape (m,) or (P, m).

    Args:
        rewards: float tensor of shape (n,) (one group) or (P, n) (P prompt groups of n rollouts).
        m: rollouts to keep per group, 1 <= m <= n.
        rule: a name in :data:`RULES` (or registered with :func:`register_selector`).
        generator: torch RNG for the ``random`` rule (reproducible selection); ignored otherwise.
        lengths: each rollout's completion length, the shape of ``rewards``; needed by the rules that
            rank by length (:func:`uses_lengths`), ignored by the others.
    """
    r_P_N = _validate(rewards, m, rule)
    if rule in _USES_LENGTHS:
        keep_P_M = _REGISTRY[rule](r_P_N, m, generator, lengths_P_N=_validate_lengths(lengths, rewards, rule))
    else:
        keep_P_M = _REGISTRY[rule](r_P_N, m, generator)
    keep_P_M = keep_P_M.sort(dim=-1).values.to(device=rewards.device, dtype=torch.long)
    return keep_P_M[0] if rewards.dim() == 1 else keep_P_M


@register_selector("max_variance")
def _max_variance(r_P_N: torch.Tensor, m: int, generator: torch.Generator | None) -> torch.Tensor:
    # PODS: Algorithm 2 with prefix sums (Theorem 1). Candidate k keeps sorted positions
    # [0, m-k) (the m-k lowest) and [n-k, n) (the k highest).
    P, N = r_P_N.shape
    sorted_P_N, order_P_N = torch.sort(r_P_N, dim=-1, stable=True)
    # Centre each group before squaring: variance is shift-invariant and this avoids the
    # catastrophic cancellation of E[x^2] - E[x]^2 when rewards sit far from zero.
    x_P_N = sorted_P_N - sorted_P_N.mean(dim=-1, keepdim=True)
    zero = x_P_N.new_zeros(P, 1)
    c1_P_N1 = torch.cat([zero, x_P_N.cumsum(-1)], dim=-1)  # c1[:, j] = sum of the j lowest
    c2_P_N1 = torch.cat([zero, (x_P_N * x_P_N).cumsum(-1)], dim=-1)
    k_K = torch.arange(m + 1, device=r_P_N.device)  # K = m + 1 candidates
    low_K, top_start_K = m - k_K, N - k_K
    s1_P_K = c1_P_N1[:, low_K] + c1_P_N1[:, N : N + 1] - c1_P_N1[:, top_start_K]
    s2_P_K = c2_P_N1[:, low_K] + c2_P_N1[:, N : N + 1] - c2_P_N1[:, top_start_K]
    var_P_K = s2_P_K / m - (s1_P_K / m) ** 2  # population variance; the argmax is the same
    # Tie rule: the smallest k whose variance is (numerically) the maximum, as in Algorithm 2.
    best_P = var_P_K.max(dim=-1, keepdim=True).values
    tol_P = _VAR_RTOL * (c2_P_N1[:, N : N + 1] / N + 1e-300)
    k_P = (var_P_K >= best_P - tol_P).to(torch.int8).argmax(dim=-1)  # first True = smallest k
    # Map candidate slot j in [0, m) to a sorted position: j if j < m-k, else n-m+j (top block).
    j_M = torch.arange(m, device=r_P_N.device)
    pos_P_M = torch.where(j_M < (m - k_P).unsqueeze(-1), j_M, N - m + j_M)
    return order_P_N.gather(-1, pos_P_M)


@register_selector("max_reward")
def _max_reward(r_P_N: torch.Tensor, m: int, generator: torch.Generator | None) -> torch.Tensor:
    # Stable sort of the negated rewards: the lowest index wins among rewards tied at the cut.
    return torch.sort(-r_P_N, dim=-1, stable=True).indices[:, :m]


@register_selector("random")
def _random(r_P_N: torch.Tensor, m: int, generator: torch.Generator | None) -> torch.Tensor:
    # Uniform without replacement: the first m of a uniformly random permutation per group.
    device = "cpu" if generator is None else generator.device
    u_P_N = torch.rand(r_P_N.shape, generator=generator, device=device, dtype=torch.float64)
    return u_P_N.argsort(dim=-1)[:, :m].to(r_P_N.device)


@register_selector("percentile")
def _percentile(r_P_N: torch.Tensor, m: int, generator: torch.Generator | None) -> torch.Tensor:
    # PODS: the rollouts at the quantiles q_j = (j - 0.5)/m, j = 1..m, of the group's rewards.
    # No interpolation: take the order statistic at 0-based sorted position floor(q_j * n), i.e. the
    # middle of the j-th of m equal slices of the sorted group. Consecutive positions differ by at
    # least n/m >= 1, so the m indices are distinct; equal rewards are ordered by index (stable sort).
    P, N = r_P_N.shape
    order_P_N = torch.sort(r_P_N, dim=-1, stable=True).indices
    j_M = torch.arange(1, m + 1, device=r_P_N.device)
    # (2j - 1) * N // (2m) is floor((j - 0.5)/m * N) in exact integer arithmetic.
    pos_M = ((2 * j_M - 1) * N) // (2 * m)
    return order_P_N[:, pos_M]


@register_selector("all")
def _all(r_P_N: torch.Tensor, m: int, generator: torch.Generator | None) -> torch.Tensor:
    P, N = r_P_N.shape
    return torch.arange(N, device=r_P_N.device).expand(P, N)


@register_selector("max_variance_shortest", uses_lengths=True)
def _max_variance_shortest(
    r_P_N: torch.Tensor, m: int, generator: torch.Generator | None, lengths_P_N: torch.Tensor
) -> torch.Tensor:
    # The rewards max_variance keeps; each value's copies from the shortest rollouts of that value.
    P, N = r_P_N.shape
    kept_r_P_M = r_P_N.gather(-1, _max_variance(r_P_N, m, generator))
    # Order every group by (reward, length, index): stable sorts, last key first.
    order_P_N = torch.sort(lengths_P_N, dim=-1, stable=True).indices
    order_P_N = order_P_N.gather(-1, torch.sort(r_P_N.gather(-1, order_P_N), dim=-1, stable=True).indices)
    sorted_r_P_N = r_P_N.gather(-1, order_P_N)
    # Rank of each sorted rollout within its block of equal rewards (0 = the shortest of that reward).
    pos_N = torch.arange(N, device=r_P_N.device)
    new_block_P_N = torch.ones_like(sorted_r_P_N, dtype=torch.bool)
    new_block_P_N[:, 1:] = sorted_r_P_N[:, 1:] != sorted_r_P_N[:, :-1]
    start_P_N = torch.where(new_block_P_N, pos_N, 0).cummax(dim=-1).values
    rank_P_N = pos_N - start_P_N
    # How many copies of each rollout's reward value max_variance keeps (exact: the same float values).
    copies_P_N = (sorted_r_P_N.unsqueeze(-1) == kept_r_P_M.unsqueeze(-2)).sum(-1)
    take_P_N = rank_P_N < copies_P_N  # exactly m per group: the copies add up to m, each block is big enough
    return order_P_N[take_P_N].view(P, m)


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
    above_P_N = (r_P_N - r_P_N.mean(dim=-1, keepdim=True)) > _VAR_RTOL * spread_P1
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


RULES: tuple[str, ...] = tuple(sorted(_REGISTRY))  # = pods.registry.RULES (tests/core/test_selectors.py)
"""Names of the registered down-sampling rules (valid values of ``rollout.rule``)."""
