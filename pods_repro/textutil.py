"""Small text helpers shared across the reproduction (standard library only): the ``\\boxed{}`` extractor of
pods_repro.data and pods_repro.rewards, and the one check that a file's bytes are text (:func:`decode_text`),
which the readers of records, released logs and tables turn into their own one-line errors.

Tests: ``pytest tests/rewards/test_rewards.py -k boxed tests/inputs/test_data.py -k boxed``.
"""

from __future__ import annotations

__all__ = ["NotTextError", "decode_text", "last_boxed", "last_boxed_code"]


class NotTextError(ValueError):
    """Bytes that are not UTF-8 text, or hold a NUL byte: where (``offset``, 1-based ``line``) and the byte
    (``byte``; None for a NUL byte), for the caller's own message."""

    def __init__(self, offset: int, line: int, byte: int | None):
        self.offset, self.line, self.byte = offset, line, byte
        what = "a NUL byte" if byte is None else f"byte 0x{byte:02x}, not UTF-8"
        super().__init__(f"{what} at offset {offset} (line {line})")


def decode_text(data: bytes) -> str:
    """``data`` as UTF-8 text without NUL bytes, else :class:`NotTextError` saying where it is not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotTextError(e.start, data.count(b"\n", 0, e.start) + 1, data[e.start]) from None
    if "\0" in text:
        at = text.index("\0")
        raise NotTextError(len(text[:at].encode()), text.count("\n", 0, at) + 1, None)
    return text


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
