"""Small text helpers shared by pods.data and pods.rewards (standard library only).

Tests: ``pytest tests/rewards/test_rewards.py -k boxed tests/inputs/test_data.py -k boxed``.
"""

from __future__ import annotations

__all__ = ["last_boxed", "last_boxed_code"]


def last_boxed(text: str) -> str | None:
    """Contents of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in text, nested braces matched, unstripped.

    ``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``. None when there is no ``\\boxed{``/``\\fbox{``,
    or when the last one is never closed (``\\boxed{12`` at the end of a truncated text yields
    nothing, not ``12``): an unclosed box is not an answer. Linear time.
    """
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    i = text.index("{", start) + 1
    depth = 1
    for j in range(i, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i:j]
    return None


def last_boxed_code(text: str) -> str | None:
    """The authors' MATH gold (``utils/data.py``): after the last ``\\boxed{`` up to the FIRST ``}``.

    ``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1``, which no completion matches (``task.math_gold=code``
    reproduces that). None without a ``\\boxed{`` or a closing ``}``.
    """
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    i = start + len("\\boxed{")
    j = text.find("}", i)
    return None if j < 0 else text[i:j]
