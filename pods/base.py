"""Torch-free pieces the library and the reproduction share.

The objective's option names, the (rule, n, m) check that names the fix, the seed mixer behind every
seeded draw of the trainer, and the guard that turns a failed write into one line naming the path.
Importing it loads nothing beyond the standard library.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator

__all__ = [
    "AGGREGATIONS",
    "GRPO_RULES",
    "NORMALIZE",
    "DiskWriteError",
    "RuleError",
    "check_rule",
    "mix_seed",
    "writing",
]

NORMALIZE = ("after", "before")
"""Where the advantages' statistics come from: the kept m (the paper's default) or all n (App. A.3)."""
AGGREGATIONS = ("sequence", "token", "token_group")
"""Loss aggregations: per completion (the paper's formula), per token, per token with whole groups."""
GRPO_RULES = ("max_variance", "all")
"""Rules accepted when n == m (every rule keeps every rollout then)."""


def mix_seed(*parts: int) -> int:
    """A 63-bit seed from integers (stable across runs, processes and Python versions)."""
    h = hashlib.blake2b(",".join(str(int(p)) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


class DiskWriteError(OSError):
    """A write into the run directory failed (disk full, quota, read-only): the message names the path."""


@contextlib.contextmanager
def writing(path: str | os.PathLike, catch: tuple[type[BaseException], ...] = (OSError,)) -> Iterator[None]:
    """Turn a failed write of ``path`` into :class:`DiskWriteError` "disk full or unwritable: <path>".

    ``catch`` adds ``RuntimeError`` around ``torch.save``, which reports a full disk as "unexpected pos".
    """
    try:
        yield
    except DiskWriteError:
        raise
    except catch as e:
        why = " ".join(f"{type(e).__name__}: {e}".split())[:300]
        raise DiskWriteError(f"disk full or unwritable: {path} ({why})") from e


class RuleError(ValueError):
    """A bad (rule, n, m) triple: `key` (rollout.rule/n/m), `problem` and `fix`."""

    def __init__(self, key: str, problem: str, fix: str):
        self.key, self.problem, self.fix = key, problem, fix
        super().__init__(f"{key}: {problem}; {fix}")

    def __reduce__(self):
        return (type(self), (self.key, self.problem, self.fix))


def check_rule(rule: str, n: int, m: int, rules: Iterable[str]) -> None:
    """Check a (rule, n, m) triple for training; raise :class:`RuleError` saying the fix.

    Training needs 2 <= m <= n (a kept group of one has zero advantage); rule `all` keeps every
    rollout so needs m == n; with n == m only max_variance or all (every rule keeps everything,
    another name would give the same run a second name).
    """
    rules = tuple(rules)
    if rule not in rules:
        raise RuleError(
            "rollout.rule", f"{rule!r} is not a registered down-sampling rule", f"valid rules: {', '.join(rules)}"
        )
    for key, val in (("n", n), ("m", m)):
        if isinstance(val, bool) or not isinstance(val, int):
            raise RuleError(
                f"rollout.{key}", f"must be an integer, got {val!r}", f"write a whole number for rollout.{key}"
            )
    if n < 1:
        raise RuleError("rollout.n", f"n={n} must be >= 1 (rollouts generated per prompt)", "use e.g. rollout.n=64")
    if m > n:
        raise RuleError(
            "rollout.m",
            f"m={m} > n={n}: cannot keep more rollouts than are generated (rollout.m={m} > rollout.n={n})",
            f"set rollout.m <= {n} (e.g. {max(2, n // 4)}) or raise rollout.n",
        )
    if m < 0:
        raise RuleError(
            "rollout.m",
            f"m={m} is negative; m counts the rollouts kept per prompt group",
            f"set rollout.m between 2 and rollout.n={n} (rollout.m = rollout.n is vanilla GRPO)",
        )
    if m == 0:
        raise RuleError(
            "rollout.m",
            "m=0 keeps no rollout, so no update would learn anything",
            f"set rollout.m between 2 and rollout.n={n} (rollout.m = rollout.n is vanilla GRPO)",
        )
    if m < 2:
        raise RuleError(
            "rollout.m", f"m={m}: a kept group of one rollout always has zero advantage", "set rollout.m >= 2"
        )
    if rule == "all" and m != n:
        raise RuleError(
            "rollout.rule",
            f"'all' keeps every rollout, which needs m == n (got n={n}, m={m})",
            "set rollout.m equal to rollout.n (rollout.m = rollout.n), or choose a rule such as max_variance",
        )
    if n == m and rule not in GRPO_RULES:
        raise RuleError(
            "rollout.rule",
            f"{rule!r} does nothing when n == m == {n} (every rollout is kept), "
            "so it would only give the vanilla GRPO run a second name",
            "use rollout.rule=max_variance (how the authors run vanilla GRPO) or all",
        )
