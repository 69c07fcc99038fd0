"""Down-sampling rules: which m of the n rollouts of each prompt group enter the policy update.

The public entry point is :func:`select`::

    keep_P_M = select(rewards_P_N, m, rule="max_variance")   # (P, m) indices into each group
    keep_M = select(rewards_N, m)                              # (m,) for a single group

Rules live in a registry keyed by the name used in configs (``rollout.rule``, ``pods_rule``):

- ``max_variance`` (the paper's D_maxv, §3.3, Algorithm 2): the size-m subset of maximal reward
  variance, "the k highest plus the m-k lowest" (Lemma 3.1); one sort, prefix sums of r and r^2,
  all m+1 candidates scored in O(1) each: O(n log n) per group, vectorised over the P groups.
- ``max_reward`` (D_maxr): the m highest rewards. ``random`` (D_rand): m uniformly, seeded by
  ``generator``. ``percentile`` (D_perc): the rollouts at the reward quantiles (j - 0.5)/m.
- ``all``: every rollout (m == n; vanilla GRPO).
- ``max_variance_shortest`` (beyond the paper): ``max_variance``'s kept rewards, each value taken
  from the shortest completions that have it. Needs ``lengths``.

:func:`register_selector` adds a rule (the reproduction registers rules from other papers this way).
Ties are broken by index through stable sorts, and equal variances go to the smallest k, as Algorithm
2's loop does; every rule returns each group's indices sorted ascending (docs/method.md, "Ties").
Bad input raises ``ValueError`` with a message that says what to change.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pods import base

__all__ = ["RULES", "check_rule", "register_selector", "registered_rules", "select", "uses_lengths"]

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
    """Config-time check of a (rule, n, m) triple against the registered rules (:func:`pods.base.check_rule`);
    raises ValueError saying the fix.

    Stricter than :func:`select`: training needs m >= 2, because the advantage of a group of one
    rollout is always zero (its reward equals its own mean).
    """
    base.check_rule(rule, n, m, rules=_REGISTRY)


def registered_rules() -> tuple[str, ...]:
    """The names of every registered rule, those added by :func:`register_selector` included, sorted."""
    return tuple(sorted(_REGISTRY))


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


RULES: tuple[str, ...] = tuple(sorted(_REGISTRY))
"""The library's own rules; :func:`registered_rules` also lists those added by :func:`register_selector`."""
