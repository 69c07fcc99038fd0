"""Golden and property tests of pods_repro.rewards: gold extraction, accuracy rules, format/tags, variants,
evaluation metrics and the TRL adapters. Hostile input lives in tests/rewards/test_hostile_text.py.

Every expected number below was computed by hand from the rules in the pods_repro.rewards docstring
(App. A.1; docs/paper.md#prompts-and-rewards).
"""

from __future__ import annotations

import math
import pickle
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pods_repro import rewards as R
from pods_repro import verifier as V
from pods_repro.rewards import TASKS, VARIANTS, eval_metrics, extract_gold, score, trl_reward_funcs


@pytest.fixture(scope="module", autouse=True)
def _warm():
    R.warmup()


GSM = (
    "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72"
)


def fmt(think: str, ans: str) -> str:
    return f"<think>\n{think}\n</think>\n<answer>\n{ans}\n</answer>"


# ----------------------------------------------------------------------------------------------
# Gold extraction


@pytest.mark.parametrize(
    ("answer", "task", "gold"),
    [
        (GSM, "gsm8k", "72"),
        ("He has 1,000 + 50 = 1,050.\n#### 1,050", "gsm8k", "1050"),
        ("1,050", "gsm8k", "1050"),  # already extracted: used as is, commas removed
        ("#### -3", "gsm8k_platinum", "-3"),
        # Nested braces: the official code (up to the first '}') would give '\frac{1'.
        ("so $x = \\boxed{\\frac{1}{2}}$.", "math", "\\frac{1}{2}"),
        ("first \\boxed{3}, finally \\boxed{\\{1, \\{2\\}\\}}", "math", "\\{1, \\{2\\}\\}"),  # the LAST box
        ("\\fbox{\\sqrt{2}}", "math", "\\sqrt{2}"),
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "math", "\\left( 3, \\frac{\\pi}{2} \\right)"),  # bare: as is
        (" B ", "chemistry", "B"),
        ("(c)", "arith_mc", "C"),
        ("85", "arith", "85"),
        ("-007", "arith_hard", "-7"),
        ("-0", "arith", "0"),
        (85, "arith", "85"),
    ],
)
def test_extract_gold(answer, task, gold):
    assert extract_gold(answer, task) == gold


@pytest.mark.parametrize(
    ("text", "contents"),
    [
        ("a \\boxed{x} b \\boxed{\\dfrac{a}{b}}", "\\dfrac{a}{b}"),  # the last box, nested braces matched
        ("\\boxed{ {1,2} }", " {1,2} "),  # unstripped
        ("\\fbox{7}", "7"),
        ("\\boxed{}", ""),
        ("nothing", None),
        ("\\boxed{open", None),  # an unclosed box yields nothing ...
        ("\\boxed{12} then \\boxed{1{3}", None),  # ... even after a closed one (the LAST box decides)
        ("\\boxed{\\frac{1}{2}", None),
    ],
)
def test_one_boxed_extractor(text, contents):
    from pods_repro import data, textutil

    assert textutil.last_boxed(text) == contents
    assert data.extract_boxed is textutil.last_boxed  # pods_repro.data uses the same function


def test_unclosed_box_in_math_gold_is_the_bare_answer():
    # No closed box: the whole string is the gold, as for MATH-500's bare answers.
    assert extract_gold("\\boxed{3", "math") == "\\boxed{3"
    assert extract_gold("\\boxed{ 3 }", "math") == "3"


def test_official_crude_math_extraction_differs_on_nested_braces():
    # What the official `extract_math_answer` does (split on '\boxed{', cut at the first '}').
    sol = "so $x = \\boxed{\\frac{1}{2}}$."
    crude = sol.split("\\boxed{")[-1].split("}")[0]
    assert crude == "\\frac{1"
    assert extract_gold(sol, "math") == "\\frac{1}{2}"
    assert score(fmt("x", "0.5"), sol, "math")["accuracy"] == 1.0


@pytest.mark.parametrize(("answer", "task"), [("E", "chemistry"), ("AB", "arith_mc"), ("8.5", "arith"), ("x", "arith")])
def test_bad_gold_raises(answer, task):
    with pytest.raises(ValueError, match="fix the dataset"):
        score(fmt("x", "1"), answer, task)


def test_bad_names_raise_and_list_valid_names():
    with pytest.raises(ValueError, match="gsm8k, gsm8k_platinum, math, chemistry, arith, arith_hard, arith_mc"):
        score("x", "1", "gsm8")
    with pytest.raises(ValueError, match="paper, openr1, code_head, code_sep24, code_jun25"):
        score("x", "#### 1", "gsm8k", "papr")
    with pytest.raises(ValueError, match="choose one of"):
        trl_reward_funcs("math", "nope")
    with pytest.raises(TypeError, match="completion_text"):
        score(None, "#### 1", "gsm8k")


# ----------------------------------------------------------------------------------------------
# Accuracy rules per task


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("B", 1.0),
        ("b", 1.0),
        ("(B)", 1.0),
        ("[B]", 1.0),
        ("B.", 1.0),
        ("B) the oxidation state rises", 1.0),
        ("(B). Because the bond is polar", 1.0),
        ("B:", 1.0),
        ("B\nbecause of resonance", 1.0),
        ("**B**", 1.0),
        ("\\boxed{B}", 1.0),
        ("$B$", 1.0),
        ("\\text{B}", 1.0),
        ("C", 0.0),
        ("A reaction occurs", 0.0),  # an article, not option A
        ("Answer: B", 0.0),
        ("AB", 0.0),
        ("B 42", 0.0),
        ("", 0.0),
        ("Because", 0.0),
        ("(B) or (C)", 0.0),  # hedges: another option right after the answer, or "or C"
        ("(B) (C)", 0.0),
        ("B or C", 0.0),
        ("B, C", 0.0),
        ("B/C", 0.0),
        ("(B) and (D)", 0.0),
        ("B\nor [A]", 0.0),
        ("B) 42, or C if heated", 0.0),
        ("(B). Not (C), since (B) keeps the charge", 1.0),  # explanations naming other options
        ("(B). Because (B) keeps the charge", 1.0),
        ("(B) or (B)", 1.0),
        ("B) vitamin b is unrelated", 1.0),
        ("B. A catalyst speeds it up", 1.0),  # "A" as an article, not an option
        ("B\nA reaction occurs", 1.0),
    ],
)
def test_letter_rule(block, expected):
    for task in ("chemistry", "arith_mc"):
        assert score(fmt("x", block), "B", task)["accuracy"] == expected


def test_letter_needs_answer_block():
    assert score("B", "B", "chemistry")["accuracy"] == 0.0
    assert score("<answer>B", "B", "chemistry")["accuracy"] == 1.0  # unclosed block runs to the end


@pytest.mark.parametrize(
    ("block", "gold", "expected"),
    [
        ("85", "85", 1.0),
        ("085", "85", 1.0),
        ("+85", "85", 1.0),
        (" 85 ", "85", 1.0),
        ("-7", "-7", 1.0),
        ("-0", "0", 1.0),
        ("85.", "85", 0.0),
        ("85.0", "85", 0.0),
        ("1,000", "1000", 0.0),
        ("\\boxed{85}", "85", 0.0),
        ("８５", "85", 0.0),  # full-width digits
        ("- 7", "-7", 0.0),
        ("7", "-7", 0.0),
        ("86", "85", 0.0),
    ],
)
def test_integer_rule(block, gold, expected):
    for task in ("arith", "arith_hard"):
        assert score(fmt("x", block), gold, task)["accuracy"] == expected


def test_integer_rule_uses_last_answer_block():
    text = "<answer>\n85\n</answer> wait, no: <answer>\n86\n</answer>"
    assert score(text, "86", "arith")["accuracy"] == 1.0
    assert score(text, "85", "arith")["accuracy"] == 0.0
    assert score("85", "85", "arith")["accuracy"] == 0.0  # no answer block


@pytest.mark.parametrize(
    ("completion", "answer", "expected"),
    [
        (fmt("x", "72"), GSM, 1.0),
        (fmt("x", "$72$"), GSM, 1.0),
        (fmt("x", "72 clips"), GSM, 1.0),
        (fmt("x", "\\boxed{72}"), GSM, 1.0),
        (fmt("x", "72.0"), GSM, 1.0),
        (fmt("x", "70"), GSM, 0.0),
        ("She sold 72 clips in total.", GSM, 1.0),  # no block: the whole completion is parsed
        (fmt("x", "1,050"), "#### 1,050", 1.0),
        (fmt("x", "0.5"), "\\frac{1}{2}", 1.0),
        (fmt("x", "\\frac{2}{4}"), "\\frac{1}{2}", 1.0),
        (fmt("x", "\\frac{1}{3}"), "\\frac{1}{2}", 0.0),
        (fmt("x", "$(3, \\frac{\\pi}{2})$"), "\\left( 3, \\frac{\\pi}{2} \\right)", 1.0),
        (fmt("x", "$p-q$"), "p - q", 1.0),
        (fmt("x", "$q-p$"), "p - q", 0.0),
        (fmt("x", "$2^{2019}$"), "2^{2019}", 1.0),
        (fmt("x", "$2^{2018}$"), "2^{2019}", 0.0),
    ],
)
def test_math_verify_accuracy(completion, answer, expected):
    task = "gsm8k" if "####" in answer or answer == GSM else "math"
    assert score(completion, answer, task)["accuracy"] == expected


# The integer fast path must agree with math-verify on the integers it accepts.
_int_forms = st.integers(-(10**30), 10**30).flatmap(
    lambda n: st.sampled_from([str(n), f"{n:,}", f"+{n}", "0" + str(abs(n)), "-0" + str(abs(n)), f" {n} "])
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gold=_int_forms, cand=_int_forms)
def test_integer_fast_path_agrees_with_math_verify(gold, cand):
    fast = R.math_equal(gold, cand, "text")  # fast path where both forms allow it, else math-verify
    before = V.stats()
    verified = V.verify(gold, cand, "text")  # math-verify itself
    assert V.stats() == before  # no guard fired
    assert fast == verified


def test_integer_fast_path_agrees_on_equal_values():
    for gold, cand in [("72", "072"), ("1050", "1,050"), ("-1050", "-1,050"), ("-5", "-5"), ("0", "000")]:
        assert R.plain_int(gold) is not None  # the fast path is taken
        assert R.plain_int(cand) is not None
        assert R.math_equal(gold, cand, "text") == 1.0
        assert V.verify(gold, cand, "text") == 1.0
    assert R.plain_int("+5") is None  # math-verify reads these as nothing
    assert R.plain_int("-05") is None


# ----------------------------------------------------------------------------------------------
# Format and tags: linear-time implementations versus the reference regexes

OPENR1_FORMAT = re.compile(r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$", re.DOTALL | re.MULTILINE)
EVAL_FORMAT = re.compile(r"^[ \n]?<think>.*</think>[ \n]?<answer>.*</answer>[ \n]?$", re.DOTALL)
CODE_FORMAT = re.compile(r"<think>.*</think>[ \n]?<answer>.*</answer>", re.DOTALL)


def ref_tags(text: str) -> float:  # open-r1 tag_count_reward.count_tags
    count = 0.0
    for t in ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>"):
        if text.count(t) == 1:
            count += 0.25
    return count


def ref_answer_block(text: str) -> str | None:  # official extract_xml_answer, when <answer> occurs
    if "<answer>" not in text:
        return None
    return text.split("<answer>")[-1].split("</answer>")[0].strip()


tag_soup = st.lists(
    st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "\n", " ", "x", "7", "<", "/", ">", "\n\n"]),
    max_size=14,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=tag_soup)
def test_format_functions_match_reference_regexes(text):
    assert R.format_reward(text) == float(OPENR1_FORMAT.match(text) is not None)
    assert R.eval_format(text) == float(EVAL_FORMAT.match(text) is not None)
    m = CODE_FORMAT.search(text)
    assert R.code_format_extra(text) == (None if m is None else len(text) - len(m.group(0)))
    assert R.tag_count(text) == ref_tags(text)
    assert R.answer_block(text) == ref_answer_block(text)


@pytest.mark.parametrize(
    ("text", "format_", "tags", "eval_fmt"),
    [
        (fmt("r", "7"), 1.0, 1.0, 1.0),
        (fmt("r", "7") + "\nPS", 1.0, 1.0, 0.0),  # MULTILINE `$` tolerates text after "</answer>\n"
        (fmt("r", "7") + " PS", 0.0, 1.0, 0.0),
        ("\n" + fmt("r", "7") + "\n", 0.0, 1.0, 1.0),
        ("<think>\nr\n</think> <answer>7</answer>", 0.0, 0.25, 1.0),
        ("<think>\n\n</think>\n<answer>\n\n</answer>", 1.0, 1.0, 1.0),
        (fmt("r", "7") + fmt("r", "7"), 1.0, 0.0, 1.0),  # every tag twice
        ("", 0.0, 0.0, 0.0),
    ],
)
def test_format_tags_golden(text, format_, tags, eval_fmt):
    assert R.format_reward(text) == format_
    assert R.tag_count(text) == tags
    assert R.eval_format(text) == eval_fmt


# ----------------------------------------------------------------------------------------------
# Variants: golden totals, computed by hand

C_RIGHT = fmt("She sold 48 + 24.", "72")
C_BOXED = fmt("She sold 48 + 24.", "\\boxed{72}")
C_WRONG = fmt("x", "70")
C_NOTAGS = "The answer is 72."
C_EXTRA_RIGHT = "<think>\na\n</think> <answer>72</answer> trailing"  # 9 chars after the match
C_EXTRA_WRONG = "<think>\na\n</think> <answer>7</answer> trailing"

GOLDEN = {
    # completion: {variant: (accuracy, format, tags)}
    C_RIGHT: {
        "paper": (1, 1, 1),
        "openr1": (0, 1, 1),  # a bare 72 has no \boxed / $ anchor
        "code_head": (1, 0.1, 0.1),
        "code_sep24": (1, 0.01, 0.01),
        "code_jun25": (1, 0, 0),  # shaping only for incorrect answers
    },
    C_BOXED: {
        "paper": (1, 1, 1),
        "openr1": (1, 1, 1),
        "code_head": (1, 0.1, 0.1),
        "code_sep24": (1, 0.01, 0.01),
        "code_jun25": (1, 0, 0),
    },
    C_WRONG: {
        "paper": (0, 1, 1),
        "openr1": (0, 1, 1),
        "code_head": (0, 0.1, 0.1),
        "code_sep24": (0, 0.01, 0.01),
        "code_jun25": (0, 0.1, 0.1),  # 0.1 - 0.001*0, and 4 tags * 0.025
    },
    C_NOTAGS: {
        "paper": (1, 0, 0),  # math-verify on the whole completion finds 72
        "openr1": (0, 0, 0),
        "code_head": (1, 0, 0),  # last number-like token "72." -> 72
        "code_sep24": (1, 0, 0),
        "code_jun25": (1, 0, 0),
    },
    C_EXTRA_RIGHT: {
        "paper": (1, 0, 0.25),  # only "<think>\n" of the newline tags
        "openr1": (0, 0, 0.25),
        "code_head": (1, 0.1 * 0.91, 0.1),
        "code_sep24": (1, 0.01 * 0.91, 0.01),
        "code_jun25": (1, 0, 0),
    },
    C_EXTRA_WRONG: {
        "paper": (0, 0, 0.25),
        "openr1": (0, 0, 0.25),
        "code_head": (0, 0.1 * 0.91, 0.1),
        "code_sep24": (0, 0.01 * 0.91, 0.01),
        "code_jun25": (0, 0.1 - 0.009, 0.1),
    },
}


@pytest.mark.parametrize("completion", list(GOLDEN))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_variant_golden_gsm8k(completion, variant):
    # partial changes only the integer tasks' accuracy: a gsm8k completion scores as under paper
    acc, f, t = GOLDEN[completion]["paper" if variant == "partial" else variant]
    out = score(completion, GSM, "gsm8k", variant)
    assert out["accuracy"] == acc
    assert out["format"] == pytest.approx(f, abs=1e-12)
    assert out["tags"] == pytest.approx(t, abs=1e-12)
    assert out["total"] == pytest.approx(acc + f + t, abs=1e-12)


def test_code_jun25_is_correctness_only_outside_gsm8k():
    for answer, task in [("\\frac{1}{2}", "math"), ("B", "chemistry"), ("85", "arith"), ("B", "arith_mc")]:
        out = score(fmt("x", "wrong"), answer, task, "code_jun25")
        assert (out["format"], out["tags"], out["total"]) == (0.0, 0.0, 0.0)
    out = score(fmt("x", "wrong"), "#### 5", "gsm8k_platinum", "code_jun25")
    assert (out["format"], out["tags"]) == (pytest.approx(0.1), pytest.approx(0.1))


def test_code_correctness_candidates():
    # The answer block normalised: units/latex wrappers and a fraction equal to a decimal.
    assert score(fmt("x", "\\text{72}."), GSM, "gsm8k", "code_head")["accuracy"] == 1.0
    assert score(fmt("x", "0.5"), "\\frac{1}{2}", "math", "code_head")["accuracy"] == 1.0
    # The whole completion normalised (a bare answer).
    assert score(" $72$ ", GSM, "gsm8k", "code_head")["accuracy"] == 1.0
    # The last number: [0-9.,]+ at HEAD sees "7.2" and misses; [0-9]+ (June) sees "2" and misses.
    assert score("I think 72 or 7.2", GSM, "gsm8k", "code_head")["accuracy"] == 0.0
    # The last number when the text ends in a bare number.
    assert score("total = 3 + 69 = 72", GSM, "gsm8k", "code_jun25")["accuracy"] == 1.0
    assert score("total = 3 + 69 = 72", GSM, "gsm8k", "code_head")["accuracy"] == 1.0


def test_openr1_variant():
    # Gold parsed from the full GSM8K answer; completion needs a boxed/anchored LaTeX answer.
    assert score("so the answer is $72$", GSM, "gsm8k", "openr1")["accuracy"] == 1.0
    assert score("so the answer is 72", GSM, "gsm8k", "openr1")["accuracy"] == 0.0
    assert score("blah \\boxed{0.5}", "\\frac{1}{2}", "math", "openr1")["accuracy"] == 1.0
    assert score("blah \\boxed{0.5}", "so \\boxed{\\frac{1}{2}}", "math", "openr1")["accuracy"] == 1.0
    # The whole completion, boxed first: a boxed answer in the reasoning counts.
    assert score(fmt("\\boxed{72}", "I am not sure"), GSM, "gsm8k", "openr1")["accuracy"] == 1.0
    # Letter and integer tasks keep their rules.
    assert score(fmt("x", "(B)"), "B", "chemistry", "openr1")["accuracy"] == 1.0


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("task", list(TASKS))
def test_keys_and_bounds_every_task_variant(task, variant):
    ints = {"arith": "72", "arith_hard": "72", "arith_heldout": "72", "arith_add": "72"}
    answer = {"chemistry": "B", "arith_mc": "B", **ints, "math": "72"}.get(task, GSM)
    block = {"chemistry": "B", "arith_mc": "B", **ints}.get(task, "\\boxed{72}")
    out = score(fmt("r", block), answer, task, variant)
    assert set(out) == {"accuracy", "format", "tags", "total"}
    assert out["accuracy"] == 1.0
    assert out["total"] == pytest.approx(out["accuracy"] + out["format"] + out["tags"])
    assert out["total"] <= R.MAX_TOTAL[variant] + 1e-12


# ----------------------------------------------------------------------------------------------
# Evaluation metrics


def test_eval_metrics():
    assert eval_metrics(fmt("r", "72"), GSM, "gsm8k") == {"accuracy": 1.0, "format_accuracy": 1.0, "both_accuracy": 1.0}
    assert eval_metrics("The answer is 72.", GSM, "gsm8k") == {
        "accuracy": 1.0,
        "format_accuracy": 0.0,
        "both_accuracy": 0.0,
    }
    assert eval_metrics(fmt("r", "70"), GSM, "gsm8k") == {"accuracy": 0.0, "format_accuracy": 1.0, "both_accuracy": 0.0}
    # The evaluation regex is looser than the training format: one space between blocks is fine.
    assert eval_metrics("<think>r</think> <answer>B</answer>", "B", "chemistry")["both_accuracy"] == 1.0


# ----------------------------------------------------------------------------------------------
# TRL adapters


def _call_like_trl(func, completions, answers):
    # The keyword arguments TRL 1.16 GRPOTrainer._calculate_rewards passes to a reward function.
    return func(
        prompts=[[{"role": "user", "content": "q"}]] * len(completions),
        completions=completions,
        completion_ids=[[1, 2]] * len(completions),
        answer=answers,
        id=[str(i) for i in range(len(completions))],
        trainer_state=None,
        log_extra=lambda *a, **k: None,
        log_metric=lambda *a, **k: None,
    )


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_trl_reward_funcs_sum_to_total(variant):
    funcs = trl_reward_funcs("gsm8k", variant)
    # TRL 1.16 names a reward function by trl.trainer.utils.get_callable_name: it unwraps
    # functools.partial, then takes getattr(func, "__name__", type(func).__name__). (Importing trl
    # here would cost seconds; the trainer tests exercise the real GRPOTrainer.)
    assert [getattr(f, "__name__", None) for f in funcs] == ["accuracy", "format", "tags"]
    texts = list(GOLDEN)
    answers = [GSM] * len(texts)
    conversational = [[{"role": "assistant", "content": t}] for t in texts]
    for completions in (texts, conversational):
        per_func = [_call_like_trl(f, completions, answers) for f in funcs]
        for i, text in enumerate(texts):
            total = sum(col[i] for col in per_func)
            assert total == pytest.approx(score(text, GSM, "gsm8k", variant)["total"])
            assert all(isinstance(col[i], float) and math.isfinite(col[i]) for col in per_func)


def test_trl_reward_funcs_pickle_and_errors():
    funcs = pickle.loads(pickle.dumps(trl_reward_funcs("arith", "paper")))
    assert _call_like_trl(funcs[0], [fmt("r", "5"), fmt("r", "6")], ["5", "5"]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="'answer' column"):
        funcs[0](prompts=["p"], completions=["c"])
    with pytest.raises(ValueError, match="one gold per completion"):
        funcs[0](prompts=["p"], completions=["c", "d"], answer=["5"])


def test_completion_text():
    assert R.completion_text("abc") == "abc"
    assert R.completion_text([{"role": "assistant", "content": "a"}]) == "a"
    assert (
        R.completion_text([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}]) == "a"
    )
    assert R.completion_text([{"role": "tool", "content": "x"}, {"role": "assistant", "content": "b"}]) == "b"
    with pytest.raises(TypeError, match="chat messages"):
        R.completion_text(42)
