"""Reward conditions of the selection arena: digit-wise partial credit and noisy (flipped) correctness rewards.

:func:`partial_int_credit` is the accuracy of the ``partial`` reward variant on a wrong integer answer;
:func:`flip_rewards` is ``task.reward_noise``, applied by :class:`pods_repro.rewards.RewardComponent` to the
accuracy component. Both are importable from :mod:`pods_repro.rewards` too. Pure Python, no torch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["flip_rewards", "partial_int_credit"]


def partial_int_credit(answer: str, gold: str) -> float:
    """Digit-wise closeness of an integer answer to the integer gold, in [0, 1]; 1.0 exactly when they are equal.

    Both are canonical decimal strings (:func:`pods_repro.rewards._canonical_int`). The digits are right-aligned (units with
    units) and the share of the ``max(len)`` positions that agree is the credit (a shorter number's missing
    positions disagree); a sign that differs halves it. ``85`` vs ``83``: 0.5; ``85`` vs ``185``: 2/3;
    ``-7`` vs ``7``: 0.5. Linear in the length, no ``int()``.
    """
    if answer == gold:
        return 1.0
    neg_a, neg_g = answer.startswith("-"), gold.startswith("-")
    da, dg = answer.lstrip("-"), gold.lstrip("-")
    width = max(len(da), len(dg))
    same = sum(x == y for x, y in zip(reversed(da), reversed(dg), strict=False))
    return (same / width) * (0.5 if neg_a != neg_g else 1.0)


def _mix(*parts: int) -> int:
    """A 63-bit seed from integers (the same mixing as pods_repro.evaluation.mix_seed, without importing torch)."""
    h = hashlib.blake2b(",".join(str(int(p)) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


def flip_rewards(values: Sequence[float], p: float, seed: int, step: int, round_: int, rank: int = 0) -> list[float]:
    """Noisy correctness rewards: ``values[i]`` replaced by ``1 - values[i]`` with probability ``p``, independently
    per rollout; rollout ``i``'s draw is seeded by ``(seed, step, round_, i)`` (and ``rank``, the process that
    scores it, when it is not 0), so a rerun (or a resumed run) flips the same rollouts. ``round_`` counts the
    scoring calls within one step (refill rounds)."""
    if not 0 <= p < 0.5:
        raise ValueError(f"flip probability p={p} must be in [0, 0.5); use e.g. 0.1")
    import random

    out = []
    for i, v in enumerate(values):
        parts = (seed, step, round_, i, 0x401) if rank == 0 else (seed, step, round_, i, rank, 0x401)
        u = random.Random(_mix(*parts)).random()
        out.append(1.0 - v if u < p else v)
    return out
