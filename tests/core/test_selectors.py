"""The paper's theorems about max-variance down-sampling, checked against brute force.

Theorem 1 / Lemma 3.1 (arXiv 2504.13818 §3.3): the maximum-variance m-subset is "the k highest plus the m-k
lowest rewards" for some k, and Algorithm 2 finds it. Theorem 2: for binary rewards and even m, the
m/2 highest plus m/2 lowest attain the optimum (three cases of the proof).

The rule under test is ``max_variance`` unless the environment variable ``PODS_RULE_UNDER_TEST``
names another one: ``PODS_RULE_UNDER_TEST=max_reward pytest tests/core/test_selectors.py`` shows the
theorem tests failing on a wrong selector (also checked in-suite by ``test_checker_rejects_...``).
"""

from __future__ import annotations

import itertools
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pods_repro.rules  # noqa: F401  (registers the rules from other papers, tested here beside the library's)
from pods.selectors import RULES as LIBRARY_RULES
from pods.selectors import check_rule, registered_rules, select
from pods_repro import registry

RULES = registered_rules()

RULE = os.environ.get("PODS_RULE_UNDER_TEST", "max_variance")
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pvar(x: torch.Tensor) -> float:
    """Population variance in float64 (the paper's Var)."""
    x = x.to(torch.float64)
    return float(((x - x.mean()) ** 2).mean())


def brute_max_var(r: torch.Tensor, m: int) -> float:
    return max(pvar(r[list(c)]) for c in itertools.combinations(range(len(r)), m))


def tol(r: torch.Tensor) -> float:
    return 1e-9 * (1.0 + float(r.abs().max()) ** 2)


# ---- reward-vector strategies: continuous, 3-level discrete, binary, many ties ---------------
def _vec(elements):
    return st.integers(2, 12).flatmap(
        lambda n: st.tuples(st.lists(elements, min_size=n, max_size=n), st.integers(1, n))
    )


continuous = _vec(st.floats(-100, 100, allow_nan=False, width=32))
three_level = _vec(st.sampled_from([0.0, 0.5, 1.0]))
binary = _vec(st.sampled_from([0.0, 1.0]))
many_ties = _vec(st.sampled_from([0.0, 0.25, 1.0, 1.2, 2.2]))  # the paper's reward levels
any_rewards = st.one_of(continuous, three_level, binary, many_ties)


def assert_max_variance_optimal(values: list[float], m: int, rule: str = RULE) -> None:
    r = torch.tensor(values, dtype=torch.float64)
    keep = select(r, m, rule=rule)
    assert keep.shape == (m,)
    assert keep.dtype == torch.long
    assert len(set(keep.tolist())) == m, "indices must be distinct"
    assert abs(pvar(r[keep]) - brute_max_var(r, m)) <= tol(r), "not the maximum-variance subset"
    # Lemma 3.1 form: k highest plus m-k lowest, in the (stable) sorted order, for some k.
    order = torch.sort(r, stable=True).indices.tolist()
    n = len(values)
    forms = [sorted(order[: m - k] + order[n - k :]) for k in range(m + 1)]
    assert keep.tolist() in forms, "kept set is not 'k highest plus m-k lowest'"


@FAST
@given(any_rewards)
def test_theorem1_max_variance_matches_brute_force(case):
    values, m = case
    assert_max_variance_optimal(values, m)


@pytest.mark.parametrize("case", ["few_positives", "few_negatives", "otherwise"])
@FAST
@given(data=st.data())
def test_theorem2_binary_half_half_is_optimal(case, data):
    m = data.draw(st.sampled_from([2, 4, 6]), label="m")
    n = data.draw(st.integers(m + 1, 12), label="n")
    half = m // 2
    if case == "few_positives":  # k <= m/2 ones
        k = data.draw(st.integers(0, half), label="k")
    elif case == "few_negatives":  # n - k <= m/2 zeros
        k = data.draw(st.integers(n - half, n), label="k")
    else:  # m/2 < k < n - m/2
        if half + 1 > n - half - 1:
            return
        k = data.draw(st.integers(half + 1, n - half - 1), label="k")
    perm = data.draw(st.permutations(list(range(n))), label="perm")
    r = torch.zeros(n, dtype=torch.float64)
    r[torch.tensor(perm[:k], dtype=torch.long)] = 1.0
    best = brute_max_var(r, m)
    order = torch.sort(r, stable=True).indices
    half_half = torch.cat([order[:half], order[n - half :]])
    assert abs(pvar(r[half_half]) - best) <= 1e-12, "m/2 top + m/2 bottom is not optimal"
    assert abs(pvar(r[select(r, m, rule=RULE)]) - best) <= 1e-12


def test_checker_rejects_max_reward():
    """The theorem check has teeth: max_reward fails it on a simple binary group."""
    with pytest.raises(AssertionError):
        assert_max_variance_optimal([0, 0, 1, 1, 1, 1], 2, rule="max_reward")


@FAST
@given(st.integers(1, 6), st.integers(2, 10), st.data())
def test_vectorised_equals_per_group_loop(P, n, data):
    m = data.draw(st.integers(1, n))
    vals = data.draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 2.2, -1.5]), min_size=P * n, max_size=P * n))
    r_P_N = torch.tensor(vals, dtype=torch.float32).view(P, n)
    for rule in ("max_variance", "max_reward", "percentile"):
        batched = select(r_P_N, m, rule=rule)
        looped = torch.stack([select(r_P_N[p], m, rule=rule) for p in range(P)])
        assert torch.equal(batched, looped), rule


@FAST
@given(any_rewards, st.data())
def test_invariant_under_permutation(case, data):
    values, m = case
    r = torch.tensor(values, dtype=torch.float64)
    perm = torch.tensor(data.draw(st.permutations(list(range(len(values))))))
    v1 = pvar(r[select(r, m, rule=RULE)])
    v2 = pvar(r[perm][select(r[perm], m, rule=RULE)])
    assert abs(v1 - v2) <= tol(r)
    # the kept multiset of rewards is the same too (only which of tied rollouts may differ)
    assert sorted(r[select(r, m, rule=RULE)].tolist()) == pytest.approx(
        sorted(r[perm][select(r[perm], m, rule=RULE)].tolist())
    )


@FAST
@given(many_ties, st.sampled_from([0.5, 1.0, 2.0, 8.0]), st.integers(-5, 5))
def test_invariant_under_positive_affine_map(case, a, b):
    # Powers of two and integer shifts keep these values exact, so the sort order (ties included)
    # is unchanged and the selected indices must be identical.
    values, m = case
    r = torch.tensor(values, dtype=torch.float64)
    for rule in ("max_variance", "max_reward", "percentile"):
        assert torch.equal(select(r, m, rule=rule), select(a * r + b, m, rule=rule)), rule


@FAST
@given(continuous, st.floats(0.01, 100), st.floats(-1000, 1000))
def test_affine_map_keeps_optimal_variance(case, a, b):
    values, m = case
    r = torch.tensor(values, dtype=torch.float64)
    rr = a * r + b
    assert abs(pvar(rr[select(rr, m)]) - a * a * brute_max_var(r, m)) <= 1e-7 * (1 + float(rr.abs().max()) ** 2)


def test_tie_rule_smallest_k_and_lowest_index():
    # All equal: every candidate has variance 0 -> k = 0 (the m lowest = lowest indices).
    assert select(torch.zeros(6), 3).tolist() == [0, 1, 2]
    # Symmetric binary: k = 1 and k = 2 of m = 3 are both optimal (var 2/9); the smallest k wins:
    # bottom two zeros (indices 0, 1: lowest index first) + top one (highest index among the ones).
    r = torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    assert select(r, 3).tolist() == [0, 1, 5]
    # Deterministic across calls and across the batched path.
    r_P_N = r.repeat(4, 1)
    assert torch.equal(select(r_P_N, 3), torch.tensor([[0, 1, 5]] * 4))


def test_max_reward_and_percentile_and_all():
    r = torch.tensor([0.3, 0.9, 0.1, 0.9, 0.5, 0.7, 0.2, 0.8])
    assert select(r, 3, rule="max_reward").tolist() == [1, 3, 7]
    # sorted order: 2(.1) 6(.2) 0(.3) 4(.5) 5(.7) 7(.8) 1(.9) 3(.9); n=8, m=4 -> positions 1,3,5,7
    assert select(r, 4, rule="percentile").tolist() == sorted([6, 4, 7, 3])
    assert select(r, 8, rule="all").tolist() == list(range(8))
    # percentile with m == n returns everything; with n/m non-integer the indices stay distinct
    for n in range(1, 40):
        for m in range(1, n + 1):
            k = select(torch.arange(n, dtype=torch.float32).flip(0), m, rule="percentile")
            assert len(set(k.tolist())) == m


def test_random_is_seeded_uniform_without_replacement():
    r = torch.zeros(3, 10)
    a = select(r, 4, rule="random", generator=torch.Generator().manual_seed(0))
    b = select(r, 4, rule="random", generator=torch.Generator().manual_seed(0))
    assert torch.equal(a, b)
    assert all(len(set(row.tolist())) == 4 for row in a)
    counts = torch.zeros(10)
    g = torch.Generator().manual_seed(1)
    for _ in range(500):
        counts[select(torch.zeros(10), 4, rule="random", generator=g)] += 1
    assert counts.min() > 120
    assert counts.max() < 280


@pytest.mark.parametrize(
    ("rewards", "m", "rule", "match"),
    [
        (torch.zeros(4), 5, "max_variance", "m=5 > n=4"),
        (torch.zeros(4), 0, "max_variance", "must be >= 1"),
        (torch.tensor([0.0, float("nan")]), 1, "max_variance", "NaN or inf"),
        (torch.tensor([0.0, float("inf")]), 1, "max_reward", "NaN or inf"),
        (torch.zeros(2, 3, 4), 2, "max_variance", r"shape \(n,\) or \(P, n\)"),
        (torch.zeros(()), 1, "max_variance", r"shape \(n,\) or \(P, n\)"),
        (
            torch.zeros(4),
            2,
            "maxvar",
            "valid rules: all, balanced, cppo_abs_advantage, gfpo_shortest, gfpo_token_efficiency, max_reward, "
            "max_variance, max_variance_shortest, percentile, random",
        ),
        (torch.zeros(4), 2, "all", "needs m == n"),
        ([0.0, 1.0], 1, "max_variance", "torch.as_tensor"),
        (torch.zeros(4), 2.0, "max_variance", "Python int"),
        (torch.zeros(4, device="meta"), 2, "max_variance", "'meta' tensor"),
    ],
)
def test_bad_input_raises_helpful_value_error(rewards, m, rule, match):
    with pytest.raises(ValueError, match=match):
        select(rewards, m, rule=rule)


def test_check_rule_for_configs():
    check_rule("max_variance", 64, 16)
    check_rule("all", 16, 16)
    for args, match in [
        (("max_variance", 16, 64), "rollout.m=64 > rollout.n=16"),
        (("max_variance", 16, 1), "rollout.m >= 2"),
        (("nope", 16, 4), "valid rules"),
        (("all", 16, 4), "rollout.m = rollout.n"),
    ]:
        with pytest.raises(ValueError, match=match):
            check_rule(*args)
    assert set(RULES) == {
        "all",
        "balanced",
        "cppo_abs_advantage",
        "gfpo_shortest",
        "gfpo_token_efficiency",
        "max_reward",
        "max_variance",
        "max_variance_shortest",
        "percentile",
        "random",
    }
    assert RULES == registry.RULES  # the torch-free registry names exactly the registered selectors
    assert set(LIBRARY_RULES) == set(RULES) - set(LITERATURE_RULES)  # the library's own: PODS's and the paper's


def test_large_group_prefix_sums_stay_accurate():
    # Rewards far from zero: the centred prefix sums must still find the optimum (n = 4096).
    g = torch.Generator().manual_seed(0)
    r = 1e6 + torch.randint(0, 3, (4096,), generator=g).double()
    keep = select(r, 1024)
    # Optimal for 3 levels with >= 512 at each extreme: 512 lowest + 512 highest values.
    assert sorted(r[keep].tolist()) == [1e6] * 512 + [1e6 + 2] * 512


# ---- max_variance_shortest: max_variance's rewards, each from the shortest rollouts that have it -----
lengths_for = st.integers(2, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([0.0, 0.25, 1.0, 1.2, 2.2]), min_size=n, max_size=n),
        st.lists(st.integers(1, 6), min_size=n, max_size=n),  # few lengths: ties in length too
        st.integers(1, n),
    )
)


@FAST
@given(lengths_for)
def test_max_variance_shortest_is_the_shortest_subset_with_max_variance_s_rewards(case):
    values, lens, m = case
    r = torch.tensor(values, dtype=torch.float64)
    ln = torch.tensor(lens, dtype=torch.float64)
    keep = select(r, m, "max_variance_shortest", lengths=ln)
    mv = select(r, m, "max_variance")
    assert keep.shape == (m,)
    assert keep.tolist() == sorted(set(keep.tolist()))  # distinct, ascending like every rule
    assert sorted(r[keep].tolist()) == sorted(r[mv].tolist())  # the same kept rewards, so the same variance
    # brute force: of all subsets with those rewards, the least total length, ties to the lowest indices
    want = sorted(r[mv].tolist())
    best = min(
        (c for c in itertools.combinations(range(len(values)), m) if sorted(r[list(c)].tolist()) == want),
        key=lambda c: (
            float(ln[list(c)].sum()),
            [sorted((float(ln[i]), i) for i in c if r[i] == v) for v in set(want)],
        ),
    )
    assert float(ln[keep].sum()) == float(ln[list(best)].sum())
    for v in set(want):  # within each reward value: the shortest, equal lengths by lower index
        with_v = sorted((i for i in range(len(values)) if r[i] == v), key=lambda i: (float(ln[i]), i))
        assert sorted(i for i in keep.tolist() if r[i] == v) == sorted(with_v[: want.count(v)])


def test_max_variance_shortest_examples_and_its_lengths_argument():
    r = torch.tensor([[0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]])
    ln = torch.tensor([[5.0, 3.0, 9.0, 2.0, 1.0, 7.0, 4.0, 6.0], [9.0, 1, 1, 1, 1, 1, 1, 9]])
    keep = select(r, 4, "max_variance_shortest", lengths=ln)
    # group 0: two 0s (the shortest: indices 3 and 0) and two 1s (indices 4 and 1)
    assert keep[0].tolist() == [0, 1, 3, 4]
    assert keep[1].tolist() == select(r, 4, "max_variance")[1].tolist()  # distinct rewards: max_variance's
    for bad, match in [
        (None, "ranks rollouts by completion length: pass lengths="),
        (ln[:, :4], "one length per rollout"),
        (-ln, "finite and >= 0"),
        ([1.0] * 8, "must be a torch.Tensor"),
    ]:
        with pytest.raises(ValueError, match=match):
            select(r, 4, "max_variance_shortest", lengths=bad)
    # the other rules ignore lengths
    assert select(r, 4, "max_variance", lengths=ln).tolist() == select(r, 4, "max_variance").tolist()


# ---- rules from other papers: GFPO's two filters, CPPO, balanced groups ------------------------------
LITERATURE_RULES = ("gfpo_shortest", "gfpo_token_efficiency", "cppo_abs_advantage", "balanced")
rewards_lengths = st.integers(2, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([-1.0, 0.0, 0.25, 1.0, 1.2, 2.2]), min_size=n, max_size=n),
        st.lists(st.integers(0, 6), min_size=n, max_size=n),  # few lengths (0 included): ties in length too
        st.integers(1, n),
    )
)


def _first_m(key, n: int, m: int) -> list[int]:
    """The m indices of range(n) that come first under ``key``, sorted ascending."""
    return sorted(sorted(range(n), key=key)[:m])


@FAST
@given(rewards_lengths)
def test_gfpo_shortest_keeps_the_m_shortest_ties_to_the_lower_index(case):
    values, lens, m = case
    r, ln = torch.tensor(values), torch.tensor(lens, dtype=torch.float64)
    keep = select(r, m, "gfpo_shortest", lengths=ln)
    assert keep.tolist() == _first_m(lambda i: (lens[i], i), len(values), m)
    dropped = sorted(set(range(len(values))) - set(keep.tolist()))
    assert all(lens[i] <= lens[j] for i in keep.tolist() for j in dropped)
    assert torch.equal(keep, select(-r, m, "gfpo_shortest", lengths=ln))  # rewards play no part


def test_gfpo_shortest_example():
    r = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    ln = torch.tensor([7.0, 3.0, 3.0, 9.0, 1.0, 3.0])
    # lengths 1 (index 4), then three of length 3 (indices 1, 2, 5): the lower two indices
    assert select(r, 3, "gfpo_shortest", lengths=ln).tolist() == [1, 2, 4]


@FAST
@given(rewards_lengths)
def test_gfpo_token_efficiency_keeps_the_highest_reward_per_token(case):
    values, lens, m = case
    r, ln = torch.tensor(values, dtype=torch.float64), torch.tensor(lens, dtype=torch.float64)
    keep = select(r, m, "gfpo_token_efficiency", lengths=ln)
    # reward per token, a zero length counted as one token; equal scores: shorter, then lower index
    score = [values[i] / max(lens[i], 1) for i in range(len(values))]
    assert keep.tolist() == _first_m(lambda i: (-score[i], lens[i], i), len(values), m)
    dropped = sorted(set(range(len(values))) - set(keep.tolist()))
    assert all(score[i] >= score[j] for i in keep.tolist() for j in dropped)


def test_gfpo_token_efficiency_zero_lengths_and_non_positive_rewards():
    # index:           0     1     2     3     4     5     6     7
    r = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, -1.0, -1.0, 0.5])
    ln = torch.tensor([4.0, 0.0, 1.0, 9.0, 2.0, 2.0, 8.0, 1.0])
    # scores 0.25, 1 (length 0 counts as 1), 1, 0, 0, -0.5, -0.125, 0.5
    order = [1, 2, 7, 0, 4, 3, 6, 5]  # 1 ties 2 at score 1: the shorter (length 0) first; 0s: the shorter
    for m in range(1, 9):
        assert select(r, m, "gfpo_token_efficiency", lengths=ln).tolist() == sorted(order[:m]), m


@FAST
@given(rewards_lengths)
def test_cppo_keeps_the_largest_absolute_full_group_advantages(case):
    from pods.grpo import group_advantages

    values, _, m = case
    r = torch.tensor(values, dtype=torch.float64)
    keep = select(r, m, "cppo_abs_advantage")
    a = group_advantages(r).abs().tolist()  # over all n rollouts, pods.grpo's epsilon and std
    assert keep.tolist() == _first_m(lambda i: (-a[i], i), len(values), m)
    # no m-subset has a larger total |r - mean| (brute force)
    dev = (r - r.mean()).abs()
    best = max(float(dev[list(c)].sum()) for c in itertools.combinations(range(len(values)), m))
    assert float(dev[keep].sum()) >= best - 1e-9


def test_cppo_example_ties_and_scale():
    r = torch.tensor([0.0, 1.0, 0.5, 1.0, 0.0, 0.5])  # mean 0.5: |A| equal for the four 0s and 1s
    assert select(r, 2, "cppo_abs_advantage").tolist() == [0, 1]  # the lower indices among equal |A|
    assert select(r, 5, "cppo_abs_advantage").tolist() == [0, 1, 2, 3, 4]
    r = torch.tensor([3.0, 1.0, 2.0, 5.0, 4.0, 0.0, 7.0, 6.0])  # mean 3.5
    assert select(r, 3, "cppo_abs_advantage").tolist() == [1, 5, 6]  # |A| of 0 and 7 top; 1 ties 6: index 1
    assert torch.equal(select(r, 3, "cppo_abs_advantage"), select(4 * r - 8, 3, "cppo_abs_advantage"))
    assert select(torch.ones(5), 2, "cppo_abs_advantage").tolist() == [0, 1]  # constant group: A = 0


def _balanced_reference(values: list[float], m: int) -> list[int]:
    """Balanced groups by exact rational arithmetic: m // 2 above the mean and m // 2 at or below it, the odd
    one to the larger side (equal: above), short sides filled from the other, lowest indices within a side."""
    from fractions import Fraction

    x = [Fraction(repr(v)) for v in values]  # the decimal the test wrote: 1.2 is 6/5, not its binary float
    mean = sum(x) / len(x)
    above = [i for i in range(len(x)) if x[i] > mean]
    below = [i for i in range(len(x)) if x[i] <= mean]
    want = m // 2 + (m % 2 if len(above) >= len(below) else 0)
    k = min(max(want, m - len(below)), len(above))
    return sorted(above[:k] + below[: m - k])


@FAST
@given(rewards_lengths)
def test_balanced_takes_half_above_half_at_or_below_the_mean(case):
    values, _, m = case
    r = torch.tensor(values, dtype=torch.float64)
    keep = select(r, m, "balanced").tolist()
    assert keep == _balanced_reference(values, m)
    mean = sum(values) / len(values)
    up = sum(values[i] > mean + 1e-9 for i in keep)
    n_up = sum(v > mean + 1e-9 for v in values)
    if min(n_up, len(values) - n_up) >= (m + 1) // 2:  # both sides big enough: balanced within one
        assert abs(up - (m - up)) <= 1
    else:  # the short side gives all it has
        assert up == n_up or m - up == len(values) - n_up


def test_balanced_examples():
    r = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0])  # 3 above the mean, 5 at or below
    assert select(r, 4, "balanced").tolist() == [0, 1, 2, 3]  # 2 + 2, lowest indices of each side
    assert select(r, 3, "balanced").tolist() == [0, 1, 3]  # odd m: the extra one from the larger side (below)
    assert select(r, 7, "balanced").tolist() == [0, 1, 2, 3, 4, 5, 6]  # above has only 3: below fills 4
    r = torch.tensor([3.0, 1.0, 2.0, 5.0, 4.0, 0.0, 7.0, 6.0])  # 4 above (3, 4, 6, 7), 4 below
    assert select(r, 3, "balanced").tolist() == [0, 3, 4]  # equal sides: the extra one from above
    assert select(torch.full((6,), 0.1, dtype=torch.float64), 3, "balanced").tolist() == [0, 1, 2]  # constant
    # a reward equal to the mean is "at or below" even when the float mean rounds: 0.2 of [0.1, 0.2, 0.3]
    assert select(torch.tensor([0.3, 0.2, 0.1], dtype=torch.float64), 2, "balanced").tolist() == [0, 1]


@FAST
@given(st.integers(2, 6), st.integers(2, 10), st.data())
def test_literature_rules_vectorised_equal_per_group_loop(P, n, data):
    m = data.draw(st.integers(1, n))
    vals = data.draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 2.2, -1.5]), min_size=P * n, max_size=P * n))
    lens = data.draw(st.lists(st.integers(0, 5), min_size=P * n, max_size=P * n))
    r_P_N = torch.tensor(vals, dtype=torch.float32).view(P, n)
    ln_P_N = torch.tensor(lens, dtype=torch.float32).view(P, n)
    for rule in LITERATURE_RULES:
        batched = select(r_P_N, m, rule=rule, lengths=ln_P_N)
        assert batched.shape == (P, m)
        assert batched.dtype == torch.long
        assert all(row.tolist() == sorted(set(row.tolist())) for row in batched), rule  # distinct, ascending
        looped = torch.stack([select(r_P_N[p], m, rule=rule, lengths=ln_P_N[p]) for p in range(P)])
        assert torch.equal(batched, looped), rule


def test_literature_rules_are_valid_config_rules():
    from pods_repro.config.help import describe_keys

    (row,) = describe_keys("rollout.rule")
    assert [rule for rule in RULES if rule not in row["doc"]] == []  # `pods config` names every rule
    for rule in LITERATURE_RULES:
        check_rule(rule, 16, 4)
        with pytest.raises(ValueError, match="does nothing when n == m"):
            check_rule(rule, 4, 4)
    for rule in ("gfpo_shortest", "gfpo_token_efficiency"):
        with pytest.raises(ValueError, match="pass lengths="):
            select(torch.zeros(4), 2, rule)
    assert select(torch.zeros(4), 2, "balanced").tolist() == [0, 1]  # rules without lengths need none
