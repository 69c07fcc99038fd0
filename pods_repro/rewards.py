"""Task rewards: ``score(completion, answer, task, variant)``, evaluation metrics and TRL adapters.

The details: docs/design.md, "Module notes" (`pods_repro/rewards.py`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from pods_repro import verifier
from pods_repro.textutil import last_boxed
from pods_repro.verifier import WorkerStartError, warmup
from pods_repro.verifier import stats as guard_stats

__all__ = [
    "COMPONENTS",
    "MAX_TOTAL",
    "TASKS",
    "VARIANTS",
    "answer_block",
    "code_format_extra",
    "completion_text",
    "eval_format",
    "code_eval_accuracy",
    "eval_metrics",
    "extract_gold",
    "flip_rewards",
    "format_reward",
    "guard_stats",
    "math_equal",
    "partial_int_credit",
    "plain_int",
    "score",
    "tag_count",
    "trl_reward_funcs",
    "warmup",
]

log = logging.getLogger(__name__)

from pods_repro.registry import TASK_DESCRIPTIONS as TASKS  # noqa: E402  task name -> how it is scored
from pods_repro.reward_conditions import flip_rewards, partial_int_credit  # noqa: E402

VARIANTS: dict[str, str] = {
    "paper": "App. A.1: accuracy (math-verify) + format (0/1) + tags (0.25 each); max 3",
    "openr1": "settings (e)-(f): open-r1 accuracy_reward (boxed-first LaTeX, gold = full answer) + format + tags",
    "code_head": "official single-GPU code at 187f43b: correct + 0.1*format_score + 0.1*xml; max 1.2",
    "code_sep24": "official code at 0c453d2 (Sept 24): code_head shaping scaled by 0.01; max 1.02",
    "code_jun25": "official June release 3fc107e: shaping 0.1-0.001*extra and 0.025/tag for "
    "incorrect answers only, gsm8k only; max 1.0",
    "partial": "integer tasks: paper, with digit-wise partial credit for a wrong integer answer; max 3",
}
COMPONENTS = ("accuracy", "format", "tags")
MAX_TOTAL = {"paper": 3.0, "openr1": 3.0, "code_head": 1.2, "code_sep24": 1.02, "code_jun25": 1.0, "partial": 3.0}

_GSM8K_TASKS = ("gsm8k", "gsm8k_platinum")
_MATH_TASKS = (*_GSM8K_TASKS, "math")
_LETTER_TASKS = ("chemistry", "arith_mc")
_INT_TASKS = ("arith", "arith_hard", "arith_heldout", "arith_add")

# code_* whole-completion candidate: longer texts are not normalised (see docstring).
_MAX_WHOLE_TEXT_CHARS = 2000


# ----------------------------------------------------------------------------------------------
# Text structure: answer block, tags, format (all linear-time)

_THINK_OPEN, _THINK_CLOSE, _ANS_OPEN, _ANS_CLOSE = "<think>", "</think>", "<answer>", "</answer>"


def answer_block(text: str) -> str | None:
    """Stripped text after the last ``<answer>`` up to the next ``</answer>``; None without ``<answer>``."""
    i = text.rfind(_ANS_OPEN)
    if i < 0:
        return None
    j = text.find(_ANS_CLOSE, i + len(_ANS_OPEN))
    return (text[i + len(_ANS_OPEN) :] if j < 0 else text[i + len(_ANS_OPEN) : j]).strip()


def format_reward(text: str) -> float:
    """1.0 iff open-r1's ``^<think>\\n.*?\\n</think>\\n<answer>\\n.*?\\n</answer>$`` (DOTALL|MULTILINE) matches."""
    head, mid, tail = "<think>\n", "\n</think>\n<answer>\n", "\n</answer>"
    if not text.startswith(head):
        return 0.0
    # The earliest `mid` leaves the most room for the closing tag, so it decides the match.
    i = text.find(mid, len(head))
    if i < 0:
        return 0.0
    # MULTILINE `$`: the closing tag must be followed by a newline or the end of the text.
    j = i + len(mid)
    if text.find(tail + "\n", j) >= 0:
        return 1.0
    return float(text.endswith(tail) and len(text) - len(tail) >= j)


def tag_count(text: str) -> float:
    """open-r1 ``tag_count_reward``: 0.25 per tag string whose non-overlapping count is exactly 1."""
    return 0.25 * sum(text.count(t) == 1 for t in ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>"))


def _xml_count(text: str) -> int:
    """Official single-GPU ``count_xml``: how many of the four bare tags occur exactly once."""
    return sum(text.count(t) == 1 for t in (_THINK_OPEN, _THINK_CLOSE, _ANS_OPEN, _ANS_CLOSE))


def _think_answer_bridge(text: str, start: int, limit: int) -> bool:
    """Is there a ``</think>[ \\n]?<answer>`` at index >= start that ends at or before ``limit``?"""
    # Three plain searches (C speed) instead of a loop over every `</think>`.
    for bridge in ("</think><answer>", "</think> <answer>", "</think>\n<answer>"):
        p = text.find(bridge, start)
        if 0 <= p and p + len(bridge) <= limit:
            return True
    return False


def code_format_extra(text: str) -> int | None:
    """Characters outside ``re.search(r"<think>.*</think>[ \\n]?<answer>.*</answer>", DOTALL)``; None: no match.

    The match starts at the first ``<think>`` (a later start only has fewer options) and, both
    ``.*`` being greedy, ends at the last ``</answer>``, provided a ``</think>[ \\n]?<answer>``
    fits between them.
    """
    s = text.find(_THINK_OPEN)
    last = text.rfind(_ANS_CLOSE)
    if s < 0 or last < 0 or not _think_answer_bridge(text, s + len(_THINK_OPEN), last):
        return None
    return len(text) - (last + len(_ANS_CLOSE) - s)


def eval_format(text: str) -> float:
    """1.0 iff the evaluation regex ``^[ \\n]?<think>.*</think>[ \\n]?<answer>.*</answer>[ \\n]?$`` matches.

    This is ``format_correct`` of the official ``utils/eval.py`` (``re.match``, DOTALL); docs/paper.md#evaluation-protocol.
    """
    if text[:1] in (" ", "\n") and text.startswith(_THINK_OPEN, 1):
        a = 1 + len(_THINK_OPEN)
    elif text.startswith(_THINK_OPEN):
        a = len(_THINK_OPEN)
    else:
        return 0.0
    # `[ \n]?$` (no MULTILINE): after </answer> one optional blank, then the end or a final newline.
    for suffix in ("", " ", "\n", " \n", "\n\n"):
        q = len(text) - len(suffix) - len(_ANS_CLOSE)
        if q >= a and text.endswith(suffix) and text.startswith(_ANS_CLOSE, q):
            return 1.0 if _think_answer_bridge(text, a, q) else 0.0
    return 0.0


# ----------------------------------------------------------------------------------------------
# Gold answers

_INT_RE = re.compile(r"[+-]?[0-9]+")
_FAST_INT_RE = re.compile(r"[0-9]+|-[1-9][0-9]*")
_COMMA_INT_RE = re.compile(r"-?[1-9][0-9]{0,2}(?:,[0-9]{3})+")
_LETTERS = "ABCD"


def _canonical_int(s: str) -> str:
    """'-007' -> '-7', '+0' -> '0': a canonical decimal string (no int(), so no size limit)."""
    sign = "-" if s[0] == "-" else ""
    digits = s.lstrip("+-").lstrip("0") or "0"
    return digits if digits == "0" else sign + digits


def _gold_letter(answer: str) -> str | None:
    s = answer.strip()
    if len(s) == 3 and s[0] in "([" and s[2] in ")]":
        s = s[1]
    s = s.upper()
    return s if len(s) == 1 and s in _LETTERS else None


def extract_gold(answer: Any, task: str) -> str:
    """The gold answer of ``task`` from the raw dataset field (see the module docstring)."""
    _check_task(task)
    if isinstance(answer, int) and not isinstance(answer, bool):
        answer = str(answer)
    if not isinstance(answer, str):
        raise TypeError(f"gold answer must be a str (the dataset's 'answer' field), got {type(answer).__name__}")
    if task in _GSM8K_TASKS:
        _, sep, after = answer.partition("####")
        return (after if sep else answer).strip().replace(",", "")
    if task == "math":
        boxed = last_boxed(answer)
        return boxed.strip() if boxed is not None else answer.strip()
    if task in _LETTER_TASKS:
        letter = _gold_letter(answer)
        if letter is None:
            raise ValueError(
                f"gold answer {answer[:50]!r} of task {task!r} is not a letter A-D; fix the dataset's 'answer' field"
            )
        return letter
    s = answer.strip()
    if not _INT_RE.fullmatch(s):
        raise ValueError(
            f"gold answer {answer[:50]!r} of task {task!r} is not an integer; fix the dataset's 'answer' field"
        )
    return _canonical_int(s)


# ----------------------------------------------------------------------------------------------
# Letter and integer tasks (pure Python, microseconds)

_WRAPPERS = ("\\boxed{", "\\text{", "\\textbf{", "\\mathrm{")
_LETTER_RE = re.compile(
    r"(?:\(([A-D])\)|\[([A-D])\]|([A-D])[.):])[.,;:]?(?:\s.*)?|([A-D])(?:\n.*)?",
    re.IGNORECASE | re.DOTALL | re.ASCII,
)


def _unwrap(s: str) -> str:
    """Remove one enclosing ``$..$``, ``\\boxed{}``, ``\\text{}``, ``\\textbf{}``, ``\\mathrm{}`` or ``**..**``."""
    s = s.strip()
    if len(s) >= 2 and s[0] == "$" and s[-1] == "$":
        s = s.strip("$").strip()
    for w in _WRAPPERS:
        if s.startswith(w) and s.endswith("}"):
            return s[len(w) : -1].strip()
    if len(s) >= 4 and s.startswith("**") and s.endswith("**"):
        return s[2:-2].strip()
    return s


# A hedge: another option right after the answer's own ("(B) (C)", "B, C", "B/C", "(B) or (C)", "B and C"),
# or "or C" anywhere after it. An explanation that names another option ("(B). Not (C), since ...") is not one.
_NEXT_OPTION_RE = re.compile(
    r"\s*[,;/&]?\s*(?:(?:or|and)\s+)?(?:\(([A-D])\)|\[([A-D])\]|([A-D])(?=[.):,;/]|\s*$))", re.IGNORECASE | re.ASCII
)
_OR_OPTION_RE = re.compile(r"\bor\s+[(\[]?([A-D])\b", re.IGNORECASE | re.ASCII)
_MARKER_TAIL_RE = re.compile(r"[)\]]?[.):]?[.,;:]?")


def _letter_of(block: str) -> str | None:
    text = _unwrap(block)
    m = _LETTER_RE.fullmatch(text)
    if m is None:
        return None
    group = next(i for i, g in enumerate(m.groups(), 1) if g)
    letter = m.group(group).upper()
    rest = text[m.end(group) :]
    rest = rest[_MARKER_TAIL_RE.match(rest).end() :]  # the answer's own ")", "]", "." ...
    others = [_NEXT_OPTION_RE.match(rest), *_OR_OPTION_RE.finditer(rest)]
    if any(o is not None and next(g for g in o.groups() if g).upper() != letter for o in others):
        return None  # a hedge between options answers none of them
    return letter


def _letter_accuracy(text: str, gold: str) -> float:
    block = answer_block(text)
    return float(block is not None and _letter_of(block) == gold)


def _int_accuracy(text: str, gold: str) -> float:
    block = answer_block(text)
    return float(block is not None and _INT_RE.fullmatch(block) is not None and _canonical_int(block) == gold)


def _partial_accuracy(text: str, gold: str) -> float:
    block = answer_block(text)
    if block is None or _INT_RE.fullmatch(block) is None:
        return 0.0
    return partial_int_credit(_canonical_int(block), gold)


# ----------------------------------------------------------------------------------------------
# Our normalised matcher (code_* variants) and the integer fast path

_SPACING = re.compile(r"\\[!,;: ]|\\left|\\right|\\displaystyle")
_TEXT_CMD = re.compile(r"\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}")
_NUM_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)
_FRAC_RE = re.compile(r"([+-]?)\\frac\{([0-9]+)\}\{([0-9]+)\}|([+-]?[0-9]+)/([0-9]+)", re.ASCII)
_DIGIT_COMMA = re.compile(r"(?<=[0-9]),(?=[0-9]{3}(?![0-9]))")


def _normalize(s: str) -> str:
    """Lenient canonical form of a short answer string (see the module docstring, code_*)."""
    s = s.strip()
    for _ in range(2):  # e.g. $\boxed{18}$
        s = _unwrap(s)
    s = _TEXT_CMD.sub(r"\1", s)
    s = _SPACING.sub("", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "").replace("$", "")
    s = _DIGIT_COMMA.sub("", s)
    s = "".join(s.split())
    return s.rstrip(".").lower()


def _as_fraction(s: str) -> Fraction | None:
    if len(s) > 60:
        return None
    if _NUM_RE.fullmatch(s):
        return Fraction(s)
    m = _FRAC_RE.fullmatch(s)
    if m is None:
        return None
    if m.group(2) is not None:
        num, den, sign = int(m.group(2)), int(m.group(3)), m.group(1)
    else:
        num, den, sign = int(m.group(4)), int(m.group(5)), ""
    if den == 0:
        return None
    return Fraction(-num if sign == "-" else num, den)


def _normalized_equal(candidate: str, gold: str) -> bool:
    if len(candidate) > _MAX_WHOLE_TEXT_CHARS:  # cannot normalise to a short gold; skip the work
        return False
    a, b = _normalize(candidate), _normalize(gold)
    if not a or not b:
        return False
    if a == b:
        return True
    fa, fb = _as_fraction(a), _as_fraction(b)
    return fa is not None and fb is not None and fa == fb


def plain_int(s: str) -> str | None:
    """Canonical integer if s is a plain ASCII integer in a form math-verify reads as that integer.

    math-verify 0.9.0 parses ``05``, ``1,050``, ``-1,050`` but returns nothing for ``+5`` or
    ``-05``; those forms are left to it (tests check that the fast path agrees with it).
    """
    s = s.strip()
    if len(s) > 400:
        return None
    if _FAST_INT_RE.fullmatch(s):
        return _canonical_int(s)
    if _COMMA_INT_RE.fullmatch(s):
        return _canonical_int(s.replace(",", ""))
    return None


def _last_number(text: str, pattern: re.Pattern[str]) -> str | None:
    """Last match of a number-token regex, found by searching the reversed text (linear time)."""
    m = pattern.search(text[::-1])
    return m.group(0)[::-1] if m else None


_LASTNUM_HEAD = re.compile(r"[0-9.,]+")
_LASTNUM_JUN25 = re.compile(r"[0-9]+")


def math_equal(gold: str, candidate: str, mode: str) -> float:
    """math-verify equivalence (``pods_repro.verifier.verify``), after the integer fast path outside mode 'openr1'."""
    if mode != "openr1":
        g, c = plain_int(gold), plain_int(candidate)
        if g is not None and c is not None:
            return float(g == c)
    return verifier.verify(gold, candidate, mode)


# ----------------------------------------------------------------------------------------------
# score


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of: {', '.join(TASKS)}")


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"unknown reward variant {variant!r}; choose one of: {', '.join(VARIANTS)}")


def _as_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (bytes, bytearray)):
        return bytes(completion).decode("utf-8", errors="replace")
    raise TypeError(
        f"completion must be a str (or bytes), got {type(completion).__name__}; "
        "for chat-format completions pass pods_repro.rewards.completion_text(completion)"
    )


def _whole_text(text: str) -> str:
    """A whole completion for math-verify; one too long to send is judged by its last ``\\boxed{}`` alone."""
    if len(text) <= verifier.MAX_VERIFY_CHARS:
        return text
    boxed = last_boxed(text)
    return text if boxed is None else "\\boxed{" + boxed + "}"  # still too long: verify() scores 0


def _code_correct(text: str, gold: str, number_re: re.Pattern[str]) -> float:
    """Official single-GPU ``answer_correct``: whole text, answer block, or last number matches."""
    if _normalized_equal(text, gold):
        return 1.0
    block = answer_block(text)
    if block is not None and (_normalized_equal(block, gold) or math_equal(gold, block, "text")):
        return 1.0
    last = _last_number(text, number_re)
    return float(last is not None and _normalized_equal(last, gold))


def _accuracy(text: str, gold: str, answer: str, task: str, variant: str) -> float:
    if task in _LETTER_TASKS:
        return _letter_accuracy(text, gold)
    if task in _INT_TASKS:
        return _partial_accuracy(text, gold) if variant == "partial" else _int_accuracy(text, gold)
    if variant in ("paper", "partial"):
        block = answer_block(text)
        return math_equal(gold, _whole_text(text), "text") if block is None else math_equal(gold, block, "answer")
    if variant == "openr1":
        raw = answer.strip() if task in _GSM8K_TASKS else answer
        if task == "math" and last_boxed(raw) is None:
            raw = "\\boxed{" + raw + "}"
        return math_equal(raw, _whole_text(text), "openr1")
    return _code_correct(text, gold, _LASTNUM_JUN25 if variant == "code_jun25" else _LASTNUM_HEAD)


def _components(text: str, gold: str, answer: str, task: str, variant: str) -> tuple[float, float, float]:
    acc = _accuracy(text, gold, answer, task, variant)
    if variant in ("paper", "openr1", "partial"):
        return acc, format_reward(text), tag_count(text)
    extra = code_format_extra(text)
    if variant in ("code_head", "code_sep24"):
        scale = 0.1 if variant == "code_head" else 0.01
        fmt = 0.0 if extra is None else max(0.0, 1.0 - 0.01 * extra)
        return acc, scale * fmt, scale * 0.25 * _xml_count(text)
    # code_jun25: shaping only for gsm8k, and only for incorrect answers.
    if task not in _GSM8K_TASKS or acc == 1.0:
        return acc, 0.0, 0.0
    fmt = 0.0 if extra is None else max(0.0, 0.1 - 0.001 * extra)
    return acc, fmt, 0.025 * _xml_count(text)


def score(completion: str, answer: str, task: str, variant: str = "paper") -> dict[str, float]:
    """Reward of one completion: ``{"accuracy", "format", "tags", "total"}`` with total = their sum.

    ``answer`` is the raw dataset answer field; ``task`` one of ``TASKS``; ``variant`` one of
    ``VARIANTS``. Never raises because of the completion's content (see the module docstring).
    """
    _check_task(task)
    _check_variant(variant)
    text = _as_text(completion)
    gold = extract_gold(answer, task)
    try:
        acc, fmt, tags = _components(text, gold, answer, task, variant)
    except WorkerStartError:
        raise  # a broken installation must stop the run, not silently score everything 0
    except Exception:  # last line of defence for an hours-long run; tests assert it never fires
        verifier.count("internal_error")
        log.exception("reward computation failed on a %d-char completion; scoring it 0", len(text))
        acc = fmt = tags = 0.0
    return {"accuracy": acc, "format": fmt, "tags": tags, "total": acc + fmt + tags}


EVAL_METRICS = ("paper", "code")


def eval_metrics(
    completion: str, answer: str, task: str, variant: str = "paper", metric: str = "paper"
) -> dict[str, float]:
    """Evaluation metrics of one completion (docs/paper.md#evaluation-protocol; official ``utils/eval.py``).

    ``accuracy``: with ``metric="paper"`` the reward variant's accuracy; with ``metric="code"`` the
    authors' ``utils/eval.py`` ``ans_acc`` for the gsm8k/math family: correct if the whole text, the
    answer block or the last number-like token (``[0-9.,]+``) matches the gold (our normaliser standing
    in for their TURN grader, as in the code_* variants); letter and integer tasks keep their rule.
    ``format_accuracy``: :func:`eval_format`; ``both_accuracy``: both. The paper plots ``accuracy``
    (ans_acc) for settings (a), (c) and the ablations and ``both_accuracy`` for Llama (b).
    """
    if metric not in EVAL_METRICS:
        raise ValueError(f"unknown evaluation metric {metric!r}; choose one of: {', '.join(EVAL_METRICS)}")
    if variant == "partial":
        variant = "paper"  # partial credit shapes the training reward; evaluation counts exact answers
    if metric == "code" and task in _MATH_TASKS:
        acc = code_eval_accuracy(_as_text(completion), answer, task)
    else:
        acc = score(completion, answer, task, variant)["accuracy"]
    fmt = eval_format(_as_text(completion))
    return {"accuracy": acc, "format_accuracy": fmt, "both_accuracy": acc * fmt}


def code_eval_accuracy(text: str, answer: str, task: str) -> float:
    """The authors' ``ans_acc`` (``utils/eval.py``): whole text, answer block or last number matches."""
    gold = extract_gold(answer, task)
    try:
        return _code_correct(text, gold, _LASTNUM_HEAD)
    except WorkerStartError:
        raise
    except Exception:  # as score(): never raise on a completion's content
        verifier.count("internal_error")
        log.exception("code evaluation failed on a %d-char completion; scoring it 0", len(text))
        return 0.0


# ----------------------------------------------------------------------------------------------
# TRL adapters


def completion_text(completion: Any) -> str:
    """Text of a TRL completion: a str, or a conversational list of ``{"role", "content"}`` messages.

    For a conversation the contents of the assistant messages (all messages if none has a role)
    are joined; a content given as a list of parts contributes its ``"text"`` parts.
    """
    if isinstance(completion, (str, bytes, bytearray)):
        return _as_text(completion)
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, Sequence):
        raise TypeError(f"completion must be a str or a list of chat messages, got {type(completion).__name__}")
    messages = [m for m in completion if isinstance(m, dict)]
    if any("role" in m for m in messages):
        messages = [m for m in messages if m.get("role") == "assistant"]
    parts = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "".join(parts)


class _ScoreCache:
    """Scores shared by the three component functions, so that TRL's three calls score once."""

    def __init__(self, task: str, variant: str, maxsize: int = 4096) -> None:
        self.task, self.variant, self.maxsize = task, variant, maxsize
        self._data: OrderedDict[tuple, dict[str, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, answer: str) -> dict[str, float]:
        # A digest, not the text, as key: completions can be megabytes long.
        key = (hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), answer)
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
                return hit
        result = score(text, answer, self.task, self.variant)
        with self._lock:
            self._data[key] = result
            if len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return result

    def __getstate__(self) -> dict:  # picklable (TRL may pickle reward functions); the cache is dropped
        return {"task": self.task, "variant": self.variant, "maxsize": self.maxsize}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["task"], state["variant"], state["maxsize"])


class RewardComponent:
    """One reward component as a TRL reward function ``f(prompts, completions, **kwargs) -> list[float]``.

    The gold arrives as ``kwargs["answer"]`` (the dataset's ``answer`` column, one per completion).
    ``__name__`` is the component name, which TRL uses as the logging key (``rewards/accuracy/mean``).
    With ``noise`` > 0 (the accuracy component only) the scores pass through :func:`flip_rewards`, seeded by
    ``seed``, TRL's ``trainer_state.global_step`` and the number of earlier calls at that step.
    """

    def __init__(self, component: str, cache: _ScoreCache, noise: float = 0.0, seed: int = 0) -> None:
        self.component, self.cache = component, cache
        self.noise, self.seed = float(noise), int(seed)
        self._calls: tuple[int, int] = (-1, 0)  # (step, calls made at that step)
        self.__name__ = component

    def __call__(self, prompts: Any = None, completions: Any = None, **kwargs: Any) -> list[float]:
        if completions is None:
            raise TypeError(f"reward function {self.component!r} needs completions=...")
        answers = kwargs.get("answer")
        if answers is None:
            raise ValueError(
                f"reward function {self.component!r} got no 'answer' column; the training dataset must have an "
                "'answer' field per row (pods_repro.data.load_task provides it)"
            )
        if isinstance(answers, str) or len(answers) != len(completions):
            raise ValueError(
                f"reward function {self.component!r}: 'answer' must be a list with one gold per completion, "
                f"got {type(answers).__name__} for {len(completions)} completions"
            )
        values = [
            self.cache.get(completion_text(c), a)[self.component] for c, a in zip(completions, answers, strict=True)
        ]
        if not self.noise:
            return values
        state = kwargs.get("trainer_state")
        step = int(getattr(state, "global_step", 0) or 0)
        round_ = self._calls[1] if self._calls[0] == step else 0
        self._calls = (step, round_ + 1)
        # each process scores its own rows: its rank (accelerate's RANK) keeps their draws apart
        rank = int(os.environ.get("RANK", "0") or 0)
        return flip_rewards(values, self.noise, self.seed, step, round_, rank)

    def __repr__(self) -> str:
        return f"RewardComponent({self.component!r}, task={self.cache.task!r}, variant={self.cache.variant!r})"


def trl_reward_funcs(
    task: str, variant: str = "paper", noise: float = 0.0, seed: int = 0
) -> list[Callable[..., list[float]]]:
    """Reward functions for ``GRPOTrainer(reward_funcs=...)``: accuracy, format, tags (weights 1, 1, 1).

    Their per-completion sum equals ``score(...)["total"]``; each completion is scored once. ``noise`` > 0
    flips each rollout's accuracy reward r to 1 - r with that probability (:func:`flip_rewards`, seeded by
    ``seed``): ``task.reward_noise``.
    """
    _check_task(task)
    _check_variant(variant)
    if not 0 <= noise < 0.5:
        raise ValueError(f"noise={noise} must be in [0, 0.5) (a flip probability); use 0 (off) or e.g. 0.1")
    cache = _ScoreCache(task, variant)
    return [RewardComponent(c, cache, noise=noise if c == "accuracy" else 0.0, seed=seed) for c in COMPONENTS]
