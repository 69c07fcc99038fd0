"""Ordinary answers, in the forms models write them, against the expected verdict of every variant.

Correct answers written without ``$`` in the answer block (``\\sqrt{2}``, ``\\text{18}``, ``\\$18``)
must score 1 under the default ``paper`` reward. Each row below is (task, completion, raw dataset
answer, verdicts); ``verdicts`` gives the expected accuracy per variant in the order of
``VARIANTS_ORDER`` (one character each), or a single character that holds for every variant (the letter and integer tasks ignore the variant). Expected values follow the
rules in the pods_repro.rewards docstring:

- ``paper``: math-verify on the answer block (gold and block both read as LaTeX where they look
  like it) or, without a block, on the whole completion.
- ``openr1``: open-r1's ``accuracy_reward`` on the whole completion: ``\\boxed{}`` first, else LaTeX
  in ``$..$``/``\\(..\\)`` or a ``\\frac{a}{b}`` anchored by the word "answer" (the ``<answer>`` tag
  counts); never a bare number or bare LaTeX.
- ``code_*``: the authors' graders (whole text, answer block, or the last number token, compared by
  our normaliser; math-verify on the block as it is). They keep their quirks: ``-18`` is right
  for 18 because its last number token is ``18``; a final ``.`` is code_head's last token.

Run: ``pytest tests/rewards/test_scoring_table.py``.
"""

from __future__ import annotations

import pytest

from pods_repro import rewards as R

VARIANTS_ORDER = ("paper", "openr1", "code_head", "code_sep24", "code_jun25")


@pytest.fixture(scope="module", autouse=True)
def _warm():
    R.warmup()


def A(block: str) -> str:
    """A completion in the trained format whose answer block is ``block`` (no digits in the reasoning)."""
    return f"<think>\nI work it out.\n</think>\n<answer>\n{block}\n</answer>"


GSM = "She pays 2 * 9 = <<2*9=18>>18 dollars.\n#### 18"
GSM_K = "He earns 1,200 + 600 = <<1200+600=1800>>1,800.\n#### 1,800"
GSM_DEC = "Each costs 7 / 2 = <<7/2=3.5>>3.5.\n#### 3.5"
GSM_NEG = "The change is 5 - 12 = <<5-12=-7>>-7.\n#### -7"
SQRT2 = "Hence the side is $\\boxed{\\sqrt{2}}$."
FRAC97 = "So $x = \\boxed{\\frac{9}{7}}$."

# fmt: off
MATH_FAMILY = [
    # ---- GSM8K, gold 18: paper / openr1 / code_head / code_sep24 / code_jun25
    ("gsm8k", A("18"), GSM, "10111"),
    ("gsm8k", A("$18$"), GSM, "11111"),
    ("gsm8k", A("\\boxed{18}"), GSM, "11111"),
    ("gsm8k", A("$\\boxed{18}$"), GSM, "11111"),
    ("gsm8k", A("\\$18"), GSM, "10111"),
    ("gsm8k", A("\\$18.00"), GSM, "10111"),
    ("gsm8k", A("$18.00"), GSM, "10111"),  # an unpaired $ is a currency sign
    ("gsm8k", A("\\text{18}"), GSM, "10111"),
    ("gsm8k", A("\\textbf{18}"), GSM, "10111"),
    ("gsm8k", A("\\mathrm{18}"), GSM, "10111"),
    ("gsm8k", A("18 dollars"), GSM, "10111"),
    ("gsm8k", A("18 \\text{ dollars}"), GSM, "10111"),
    ("gsm8k", A("\\$18 \\text{ dollars}"), GSM, "10111"),
    ("gsm8k", A("18.0"), GSM, "10111"),
    ("gsm8k", A("018"), GSM, "10111"),
    ("gsm8k", A("The answer is 18."), GSM, "10111"),
    ("gsm8k", A("She pays 18 dollars in total."), GSM, "10111"),
    ("gsm8k", A("x = 18"), GSM, "10111"),
    ("gsm8k", A("\\frac{36}{2}"), GSM, "11111"),  # openr1: a plain \frac anchored by the <answer> tag
    ("gsm8k", A("$\\frac{36}{2}$"), GSM, "11111"),
    ("gsm8k", A("36/2"), GSM, "10111"),
    ("gsm8k", "The answer is 18", GSM, "10111"),
    ("gsm8k", "So she pays \\boxed{18}.", GSM, "11001"),  # code_head's last token is the final "."
    ("gsm8k", "So she pays $18$ in total", GSM, "10111"),
    ("gsm8k", "18", GSM, "10111"),
    ("gsm8k", A("19"), GSM, "00000"),
    ("gsm8k", A("\\boxed{19}"), GSM, "00000"),
    ("gsm8k", A("$19$"), GSM, "00000"),
    ("gsm8k", A("\\text{19}"), GSM, "00000"),
    ("gsm8k", A("\\$19"), GSM, "00000"),
    ("gsm8k", A("eighteen"), GSM, "00000"),
    ("gsm8k", A("1.8"), GSM, "00000"),
    ("gsm8k", A("180"), GSM, "00000"),
    ("gsm8k", A("-18"), GSM, "00111"),  # code_*: the last number token of "-18" is "18"
    ("gsm8k", A("18 or 19"), GSM, "00000"),
    ("gsm8k", "no answer at all", GSM, "00000"),
    ("gsm8k", "", GSM, "00000"),
    # ---- GSM8K, thousands, decimals, negatives
    ("gsm8k", A("1,800"), GSM_K, "10111"),
    ("gsm8k", A("1800"), GSM_K, "10111"),
    ("gsm8k", A("\\$1,800"), GSM_K, "10111"),
    ("gsm8k", A("1{,}800"), GSM_K, "10000"),  # code_*: the normaliser knows no {,}
    ("gsm8k", A("1\\,800"), GSM_K, "00111"),  # math-verify reads 1\,800 as 801, boxed or not
    ("gsm8k", A("$1,800$"), GSM_K, "11111"),
    ("gsm8k", A("\\boxed{1,800}"), GSM_K, "11111"),
    ("gsm8k", A("\\text{1,800}"), GSM_K, "00111"),  # math-verify reads \text{1,800} as a word, boxed or not
    ("gsm8k", A("\\text{1,800 dollars}"), GSM_K, "00110"),  # paper: text, boxed or not; code_jun25: last token 800
    ("gsm8k", A("1,801"), GSM_K, "00000"),
    ("gsm8k", A("3.5"), GSM_DEC, "10111"),
    ("gsm8k", A("3.50"), GSM_DEC, "10111"),
    ("gsm8k", A("\\frac{7}{2}"), GSM_DEC, "11111"),
    ("gsm8k", A("7/2"), GSM_DEC, "10111"),
    ("gsm8k", A("\\$3.50"), GSM_DEC, "10111"),
    ("gsm8k", A("3.6"), GSM_DEC, "00000"),
    ("gsm8k", A("-7"), GSM_NEG, "10111"),
    ("gsm8k", A("$-7$"), GSM_NEG, "11111"),
    ("gsm8k", A("\\boxed{-7}"), GSM_NEG, "11111"),
    ("gsm8k", A("7"), GSM_NEG, "00000"),
    # ---- GSM8K-Platinum: scored exactly as gsm8k
    ("gsm8k_platinum", A("18"), GSM, "10111"),
    ("gsm8k_platinum", A("\\$18"), GSM, "10111"),
    ("gsm8k_platinum", A("\\text{18}"), GSM, "10111"),
    ("gsm8k_platinum", A("\\boxed{18}"), GSM, "11111"),
    ("gsm8k_platinum", A("1,800"), "#### 1,800", "10111"),
    ("gsm8k_platinum", A("17"), GSM, "00000"),
    # ---- MATH, gold from a solution's last \boxed{}
    ("math", A("\\sqrt{2}"), SQRT2, "10111"),
    ("math", A("$\\sqrt{2}$"), SQRT2, "11111"),
    ("math", A("\\boxed{\\sqrt{2}}"), SQRT2, "11111"),
    ("math", A("\\sqrt 2"), SQRT2, "10000"),
    ("math", A("2^{1/2}"), SQRT2, "10000"),
    ("math", A("\\frac{2}{\\sqrt{2}}"), SQRT2, "10000"),
    ("math", A("\\sqrt{3}"), SQRT2, "00000"),
    ("math", A("x = \\sqrt{2}"), SQRT2, "10000"),
    ("math", "Thus $x = \\boxed{\\sqrt{2}}$.", SQRT2, "11000"),  # code_*: last tokens "." and "2"
    ("math", A("\\dfrac{9}{7}"), FRAC97, "10111"),
    ("math", A("\\frac{9}{7}"), FRAC97, "11111"),
    ("math", A("\\tfrac{9}{7}"), FRAC97, "10111"),
    ("math", A("9/7"), FRAC97, "10111"),
    ("math", A("$\\dfrac{9}{7}$"), FRAC97, "11111"),
    ("math", A("\\boxed{\\dfrac{9}{7}}"), FRAC97, "11111"),
    ("math", A("\\frac{18}{14}"), FRAC97, "11111"),
    ("math", A("1.2857"), FRAC97, "00000"),
    ("math", A("\\frac{7}{9}"), FRAC97, "00000"),
    ("math", A("\\pi"), "\\pi", "10111"),
    ("math", A("$\\pi$"), "\\pi", "11111"),
    ("math", A("2\\pi"), "2\\pi", "10111"),
    ("math", A("\\pi \\cdot 2"), "2\\pi", "10000"),
    ("math", A("3.14"), "\\pi", "00000"),
    ("math", A("p - q"), "p - q", "10111"),
    ("math", A("-q + p"), "p - q", "10000"),
    ("math", A("q - p"), "p - q", "00000"),
    ("math", A("[2,5)"), "[2,5)", "10111"),
    ("math", A("[2, 5)"), "[2,5)", "10111"),
    ("math", A("\\left[2,5\\right)"), "[2,5)", "10111"),
    ("math", A("$[2,5)$"), "[2,5)", "11111"),
    ("math", A("(2,5)"), "[2,5)", "00000"),
    ("math", A("[2,5]"), "[2,5)", "00000"),
    ("math", A("(-\\infty, 3]"), "(-\\infty, 3]", "10111"),
    ("math", A("\\infty"), "\\infty", "10111"),
    ("math", A("\\{1,3\\}"), "\\{1,3\\}", "10111"),
    ("math", A("1, 3"), "\\{1,3\\}", "10000"),
    ("math", A("(3, \\frac{\\pi}{2})"), "\\left( 3, \\frac{\\pi}{2} \\right)", "10111"),
    ("math", A("\\left( 3, \\frac{\\pi}{2} \\right)"), "\\left( 3, \\frac{\\pi}{2} \\right)", "10111"),
    ("math", A("(3, \\pi)"), "\\left( 3, \\frac{\\pi}{2} \\right)", "00000"),
    ("math", A("10\\%"), "10\\%", "10111"),
    ("math", A("\\frac{1}{2}"), "0.5", "11111"),
    ("math", A("0.5"), "\\frac{1}{2}", "10111"),
    ("math", A("\\frac12"), "\\frac{1}{2}", "10000"),
    ("math", A("(x+1)^2"), "x^2+2x+1", "10000"),
    ("math", A("x^2+2x+1"), "x^2+2x+1", "10111"),
    ("math", A("6 - 5i"), "6 - 5i", "10111"),
    ("math", A("2\\sqrt{2}"), "\\sqrt{8}", "10000"),
    ("math", A("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"), "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "10111"),
    ("math", A("\\text{(C)}"), "\\text{(C)}", "10111"),
    ("math", A("\\text{Evelyn}"), "\\text{Evelyn}", "10111"),
    ("math", A("Evelyn"), "\\text{Evelyn}", "10111"),
    ("math", A("5 \\text{ cm}"), "5", "10111"),
    ("math", A("5\\text{ cm}^2"), "5", "10111"),
    ("math", A("\\boxed{5}"), "The area is \\boxed{5\\text{ cm}^2}.", "11111"),  # units dropped
    ("math", A("1,000,000"), "1000000", "10111"),
    ("math", A("10^6"), "1000000", "10111"),
    ("math", A("90^\\circ"), "90^\\circ", "10111"),
]

LETTER_ROWS = [  # (completion, gold, verdict): the same for chemistry and arith_mc and every variant
    (A("B"), "B", "1"),
    (A("b"), "B", "1"),
    (A("(B)"), "B", "1"),
    (A("[B]"), "B", "1"),
    (A("B."), "B", "1"),
    (A("B) 42"), "B", "1"),
    (A("(B). Because the others fail."), "B", "1"),
    (A("B\nsince the rest are wrong"), "B", "1"),
    (A("\\boxed{B}"), "B", "1"),
    (A("$B$"), "B", "1"),
    (A("\\text{B}"), "B", "1"),
    (A("\\textbf{B}"), "B", "1"),
    (A("**B**"), "B", "1"),
    (A("B"), "(B)", "1"),
    (A("C"), "B", "0"),
    (A("Answer: B"), "B", "0"),
    (A("B 42"), "B", "0"),
    (A("AB"), "B", "0"),
    (A("A reaction occurs"), "A", "0"),
    ("B", "B", "0"),  # no answer block
]

INT_ROWS = [  # (completion, gold, verdict): the same for arith, arith_hard, arith_heldout, arith_add and every variant
    (A("85"), "85", "1"),
    (A("085"), "85", "1"),
    (A("+85"), "85", "1"),
    (A("-7"), "-7", "1"),
    (A("1000"), "1000", "1"),
    (A("85."), "85", "0"),
    (A("85.0"), "85", "0"),
    (A("1,000"), "1000", "0"),
    (A("\\boxed{85}"), "85", "0"),
    (A("$85$"), "85", "0"),
    (A("86"), "85", "0"),
    (A("7"), "-7", "0"),
    (A("８５"), "85", "0"),
    ("85", "85", "0"),  # no answer block
]
# fmt: on

ROWS = (
    MATH_FAMILY
    + [(task, c, g, v) for task in ("chemistry", "arith_mc") for c, g, v in LETTER_ROWS]
    + [(task, c, g, v) for task in ("arith", "arith_hard", "arith_heldout", "arith_add") for c, g, v in INT_ROWS]
)


def _expected(verdicts: str, variant: str) -> float:
    return float(verdicts if len(verdicts) == 1 else verdicts[VARIANTS_ORDER.index(variant)])


def test_table_covers_every_task_and_variant():
    assert len(ROWS) >= 100
    assert {row[0] for row in ROWS} == set(R.TASKS)
    # `partial` grades a wrong integer answer with a fraction, not 0/1: its own tests are in test_arena_conditions
    assert set(VARIANTS_ORDER) == set(R.VARIANTS) - {"partial"}
    assert all(len(v) in (1, len(VARIANTS_ORDER)) for *_, v in ROWS)
    for variant in VARIANTS_ORDER:  # right and wrong answers for every variant
        assert {_expected(v, variant) for *_, v in ROWS} == {0.0, 1.0}


@pytest.mark.parametrize(("task", "completion", "answer", "verdicts"), ROWS)
def test_scoring_table(task, completion, answer, verdicts):
    got = {v: R.score(completion, answer, task, v)["accuracy"] for v in VARIANTS_ORDER}
    want = {v: _expected(verdicts, v) for v in VARIANTS_ORDER}
    assert got == want
