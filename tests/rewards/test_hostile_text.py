"""Hostile completions: score() never raises, returns a finite in-range score fast,
and the guards (not the CPU-time kill) are what stop the hand-made corpus.

Run: ``pytest tests/rewards/test_hostile_text.py`` (fast, ~30 s on 2 cores); ``-m slow`` adds the exhaustive
corpus x task x variant sweep and a longer fuzz run.

Calls take ~1 s at worst on an idle machine. The property asserted is "never hangs": a call returns
within the verifier's own wall-clock safety net (``WALL_TIMEOUT_S``) plus a margin for a shared,
overloaded machine (a 34-char completion once took 2.8 s at load 11 on 2 cores). A hang would take
minutes; speed itself is measured by benchmarks, not asserted here.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time

import pytest
from hostile_corpus import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pods_repro import rewards as R
from pods_repro import verifier as V

CALL_LIMIT_S = V.WALL_TIMEOUT_S + 2.5
ALL_TASKS = list(R.TASKS)
ALL_VARIANTS = list(R.VARIANTS)
# (correct gold, wrong gold, the answer a correct completion puts in its block) per task
GOLDS = {
    "gsm8k": ("Clips: 9 + 9 = 18.\n#### 18", "#### 19", "18"),
    "gsm8k_platinum": ("#### 18", "#### 1,800", "18"),
    "math": ("\\boxed{18}", "\\frac{1}{2}", "18"),
    "chemistry": ("B", "A", "B"),
    "arith": ("18", "-7", "18"),
    "arith_hard": ("18", "180", "18"),
    "arith_heldout": ("18", "-7", "18"),
    "arith_add": ("18", "19", "18"),
    "arith_mc": ("B", "C", "B"),
}
# Failure modes that the corpus must never reach: the guards in front of them must fire first.
LAST_RESORTS = ("cpu_limit", "wall_timeout", "worker_lost", "internal_error")


@pytest.fixture(scope="module", autouse=True)
def _warm():
    R.warmup()


def check(completion, answer, task, variant):
    t0 = time.perf_counter()
    out = R.score(completion, answer, task, variant)
    elapsed = time.perf_counter() - t0
    assert set(out) == {"accuracy", "format", "tags", "total"}
    assert all(isinstance(v, float) and math.isfinite(v) for v in out.values())
    assert out["accuracy"] in (0.0, 1.0)
    assert 0.0 <= out["format"]
    assert 0.0 <= out["tags"]
    assert out["total"] == pytest.approx(out["accuracy"] + out["format"] + out["tags"])
    assert 0.0 <= out["total"] <= R.MAX_TOTAL[variant] + 1e-9
    assert elapsed < CALL_LIMIT_S, f"{elapsed:.2f} s for a {len(completion)}-char completion ({task}, {variant})"
    return out


def _variants(task):
    return ALL_VARIANTS if task in ("gsm8k", "math") else ["paper"]


def _embedded(s: str, block: str) -> str:
    return "<think>\n" + s + "\n</think>\n<answer>\n" + block + "\n</answer>"


def test_corpus_size():
    assert len(CORPUS) >= 50


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_corpus_string(index):
    """Each corpus string, alone and as the reasoning before a correct answer, for every task."""
    s = CORPUS[index]
    before = R.guard_stats()
    for task in ALL_TASKS:
        right, wrong, block = GOLDS[task]
        for variant in _variants(task):
            for gold in (right, wrong):
                check(s, gold, task, variant)
        # Hostile reasoning must not spoil a correct final answer (openr1, which reads the whole
        # completion, included: the guards judge the answer math-verify extracts).
        for variant in _variants(task):
            text = _embedded(s, "\\boxed{18}" if variant == "openr1" else block)
            assert check(text, right, task, variant)["accuracy"] == 1.0
            assert check(text, wrong, task, variant)["accuracy"] == 0.0
    after = R.guard_stats()
    fired = {k: after.get(k, 0) - before.get(k, 0) for k in LAST_RESORTS}
    assert not any(fired.values()), f"corpus entry {index} got past the guards: {fired}"


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_corpus_string_exhaustive(index):
    """Every task x every variant x both golds, alone and embedded (openr1 included)."""
    s = CORPUS[index]
    for task in ALL_TASKS:
        right, wrong, block = GOLDS[task]
        for variant in ALL_VARIANTS:
            for text in (s, _embedded(s, block), s + _embedded("", block)):
                for gold in (right, wrong):
                    check(text, gold, task, variant)


# ----------------------------------------------------------------------------------------------
# Property-based fuzzing

FRAGMENTS = [
    "<think>\n",
    "\n</think>\n",
    "<answer>\n",
    "\n</answer>",
    "<think>",
    "</answer>",
    "\\boxed{",
    "\\frac{",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "^",
    "^{",
    "**",
    "!",
    "9",
    "10",
    "$",
    "$$",
    "\\sqrt{",
    "\\left(",
    "e^{",
    "\\{",
    ",",
    ".",
    "-",
    "+",
    " ",
    "\n",
    "\x00",
    "\ud800",
    "\udfff",
    "١٨",
    "１８",
    "\u202e",
    "x",
    "B",
    "(B)",
    "18",
    "\\text{",
    "\\begin{pmatrix}",
    "&",
    "\\\\",
    "\\sum_{i=1}^{",
    "\\prod_{k=1}^{",
    "\\int_0^{",
    "\\infty",
]
fragment_runs = st.lists(
    st.tuples(st.sampled_from(FRAGMENTS), st.integers(1, 8) | st.integers(1, 400_000)), min_size=0, max_size=12
).map(lambda runs: "".join(frag * n for frag, n in runs)[:6_000_000])
hostile_text = st.one_of(
    st.text(st.characters(codec=None, exclude_categories=()), max_size=300),  # includes lone surrogates
    fragment_runs,
    st.tuples(fragment_runs, st.sampled_from(["18", "B", "\\boxed{18}", "-7"])).map(lambda t: _embedded(*t)),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=hostile_text, task=st.sampled_from(ALL_TASKS), variant=st.sampled_from(ALL_VARIANTS), right=st.booleans())
def test_fuzz_never_raises_finite_in_range_fast(text, task, variant, right):
    gold = GOLDS[task][0 if right else 1]
    check(text, gold, task, variant)
    check(text.encode("utf-8", "surrogatepass"), gold, task, variant)  # bytes are decoded with replacement


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=hostile_text, task=st.sampled_from(ALL_TASKS), variant=st.sampled_from(ALL_VARIANTS), right=st.booleans())
def test_fuzz_long(text, task, variant, right):
    check(text, GOLDS[task][0 if right else 1], task, variant)


# ----------------------------------------------------------------------------------------------
# Each guard on its own

DEEP = "<answer>\n$" + "{" * 40 + "18" + "}" * 40 + "$\n</answer>"  # antlr needs many CPU seconds


def test_nesting_guard_refuses_before_math_verify():
    before = R.guard_stats().get("nesting", 0)
    t0 = time.perf_counter()
    assert R.score(DEEP, "#### 18", "gsm8k")["accuracy"] == 0.0
    assert time.perf_counter() - t0 < 0.5
    assert R.guard_stats()["nesting"] == before + 1


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        ("9**9**9", "huge_exponent"),
        ("$10^{10^{10}}$", "huge_exponent"),
        ("$e^{e^{e^{e^{e}}}}$", "huge_exponent"),
        ("$(10^{100})!$", "huge_factorial"),
        ("$\\prod_{k=1}^{10^{9}} k$", "calculus"),
    ],
)
def test_tree_guard_refuses_huge_numbers(block, reason):
    before = R.guard_stats()
    out = R.score("<answer>\n" + block + "\n</answer>", "#### 18", "gsm8k")
    after = R.guard_stats()
    assert out["accuracy"] == 0.0
    assert after.get(reason, 0) == before.get(reason, 0) + 1
    assert after.get("cpu_limit", 0) == before.get("cpu_limit", 0)


def test_magnitude_bounds():
    # The worker-side guard as a pure function of sympy expressions (sympy is imported here only).
    sympy = pytest.importorskip("sympy")
    x = sympy.Symbol("x")
    P = lambda b, e: sympy.Pow(b, e, evaluate=False)  # noqa: E731
    ok = [P(2, P(2, 2)), P(2, 65535), P(x, P(x, x)), sympy.factorial(1000, evaluate=False), sympy.Rational(1, 3)]
    bad = {
        "huge_exponent": [P(9, P(9, 9)), P(10, P(10, 10)), P(2, 10**6), P(x, P(x, P(x, x))), sympy.exp(P(10, 7))],
        "huge_value": [sympy.Mul(*[P(10, 60000)] * 3, evaluate=False)],
        "huge_factorial": [sympy.factorial(10**5, evaluate=False), sympy.binomial(10**9, 3, evaluate=False)],
        "calculus": [sympy.Product(x, (x, 1, 10**9))],
        "tree_size": [sympy.Add(*sympy.symbols("a0:1500"), evaluate=False)],
    }
    for expr in ok:
        assert V.tree_guard([expr]) is None, expr
    for reason, exprs in bad.items():
        for expr in exprs:
            assert V.tree_guard([expr, "string fallbacks are skipped"]) == reason


def test_list_guard_refuses_huge_sets():
    before = R.guard_stats().get("list_size", 0)
    block = "$\\{" + "4," * 100 + "4\\}$"  # ~0.5 s of antlr CPU time if parsed
    assert R.score("<answer>\n" + block + "\n</answer>", "#### 18", "gsm8k")["accuracy"] == 0.0
    assert R.guard_stats()["list_size"] == before + 1
    # A short tuple passes: (1, 2) and a 40-element set are within the limit.
    assert R.score("<answer>\n$(1, 2)$\n</answer>", "(1, 2)", "math")["accuracy"] == 1.0
    assert V.string_guard("$\\{" + "4," * 40 + "4\\}$") is None


def test_tree_guard_lets_ordinary_powers_through():
    for block, gold in [("$2^{10}$", "1024"), ("$2^{2^{2}}$", "16"), ("$10^{-3}$", "0.001"), ("$5!$", "120")]:
        assert R.score("<answer>\n" + block + "\n</answer>", gold, "math")["accuracy"] == 1.0


def _slow_call(monkeypatch):
    # Switch the nesting guard off so a 40-deep nest reaches math-verify: only the CPU timer stops it.
    monkeypatch.setattr(V, "MAX_NESTING", 10**6)
    before = R.guard_stats().get("cpu_limit", 0)
    t0 = time.perf_counter()
    out = R.score(DEEP, "#### 18", "gsm8k")
    return out, time.perf_counter() - t0, R.guard_stats().get("cpu_limit", 0) - before


def test_cpu_timer_kills_a_runaway_worker(monkeypatch):
    out, elapsed, kills = _slow_call(monkeypatch)
    assert out["accuracy"] == 0.0
    assert kills == 1
    assert elapsed < V.CPU_BUDGET_S + CALL_LIMIT_S
    # The next call gets a freshly forked worker and is correct and quick.
    t0 = time.perf_counter()
    assert R.score("<answer>\n$\\frac{36}{2}$\n</answer>", "#### 18", "gsm8k")["accuracy"] == 1.0
    assert time.perf_counter() - t0 < CALL_LIMIT_S


def test_cpu_timer_works_from_a_worker_thread(monkeypatch):
    results = {}

    def work():
        results["slow"] = _slow_call(monkeypatch)
        results["normal"] = R.score("<answer>\n$\\frac{36}{2}$\n</answer>", "#### 18", "gsm8k")

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    out, elapsed, kills = results["slow"]
    assert out["accuracy"] == 0.0
    assert kills == 1
    assert elapsed < V.CPU_BUDGET_S + CALL_LIMIT_S
    assert results["normal"]["accuracy"] == 1.0


def test_scores_from_many_threads_agree():
    cases = [("<answer>\n$\\frac{36}{2}$\n</answer>", 1.0), ("<answer>\n$\\frac{35}{2}$\n</answer>", 0.0)] * 8
    outs = [None] * len(cases)

    def work(i):
        outs[i] = R.score(cases[i][0], "#### 18", "gsm8k")["accuracy"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert outs == [c[1] for c in cases]


def test_worker_killed_from_outside_is_replaced():
    R.warmup()
    os.kill(V.worker_pid(), signal.SIGKILL)
    time.sleep(0.05)
    assert R.score("<answer>\n$\\frac{36}{2}$\n</answer>", "#### 18", "gsm8k")["accuracy"] == 1.0


# ----------------------------------------------------------------------------------------------
# The guards judge the extracted answer, not the reasoning around it

BUSY_REASONING = {
    "nesting_7": "We expand $" + "(" * 7 + "x" + ")" * 7 + "$ first.",
    "nesting_12": "Consider {[(" * 4 + "y" + ")]}" * 4 + ".",
    "list_42": "The multiples are $\\{" + ", ".join(str(4 * k) for k in range(42)) + "\\}$.",  # 41 commas
    "list_100": "Values: (" + ", ".join(str(k) for k in range(100)) + ").",
    "unclosed_paren_41_commas": "Note (that " + "a, " * 41 + "and so on.",
}


@pytest.mark.parametrize("reasoning", list(BUSY_REASONING), ids=list(BUSY_REASONING))
@pytest.mark.parametrize(
    ("completion", "variant"),
    [
        ("{r}\nSo the total is \\boxed{{72}}.", "openr1"),  # openr1 reads the whole completion
        ("{r}\nSo the total is \\boxed{{72}}.", "paper"),  # paper without an answer block, too
        ("<think>\n{r}\n</think>\n<answer>\n\\boxed{{72}}\n</answer>", "openr1"),
        ("{r}\nThe answer is $72$.", "paper"),
    ],
)
def test_busy_reasoning_does_not_zero_a_correct_answer(reasoning, completion, variant):
    text = completion.format(r=BUSY_REASONING[reasoning])
    assert check(text, "#### 72", "gsm8k", variant)["accuracy"] == 1.0
    assert check(text, "#### 73", "gsm8k", variant)["accuracy"] == 0.0
    assert check(text, "\\boxed{72}", "math", variant)["accuracy"] == 1.0


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("\\boxed{" + "(" * 7 + "72" + ")" * 7 + "}", "nesting"),
        ("\\boxed{\\{" + "4," * 41 + "72\\}}", "list_size"),
    ],
)
@pytest.mark.parametrize("variant", ["paper", "openr1"])
def test_guards_still_refuse_a_hostile_answer(answer, reason, variant):
    before = V.stats().get(reason, 0)
    assert check("Some reasoning.\nSo " + answer + ".", "#### 72", "gsm8k", variant)["accuracy"] == 0.0
    assert V.stats().get(reason, 0) > before


# ----------------------------------------------------------------------------------------------
# An answer too long to check is wrong, never shortened until it looks right

ZEROS = "0" * 8000


@pytest.mark.parametrize("variant", ALL_VARIANTS)
@pytest.mark.parametrize(
    "completion",
    [
        "<answer>\n1" + ZEROS + "72\n</answer>",  # the last 8,000 characters would read 0...072
        "<answer>\n$1" + ZEROS + "72$\n</answer>",
        "<answer>\n\\boxed{1" + ZEROS + "72}\n</answer>",
        "So the total is \\boxed{1" + ZEROS + "72}.",
        "So the total is 1" + ZEROS + "72",
    ],
)
def test_long_answer_is_not_cut_into_a_right_one(completion, variant):
    assert check(completion, "#### 72", "gsm8k", variant)["accuracy"] == 0.0
    assert check(completion, "\\boxed{72}", "math", variant)["accuracy"] == 0.0


@pytest.mark.parametrize("variant", ["paper", "openr1"])
@pytest.mark.parametrize("task", ["gsm8k", "math"])
def test_huge_numbers_are_not_compared_by_their_tails(variant, task):
    gold = "3" + "0" * 9000  # 3 x 10^9000 against 5 x 10^9000: equal in their last 8,000 digits
    answer = "#### " + gold if task == "gsm8k" else "\\boxed{" + gold + "}"
    assert check("<answer>\n\\boxed{5" + "0" * 9000 + "}\n</answer>", answer, task, variant)["accuracy"] == 0.0


def test_long_reasoning_keeps_its_final_boxed_answer():
    # A completion too long to send whole is judged by its last \boxed{} (never by a cut tail).
    text = "Step. " * 3000 + "So the total is \\boxed{72}."
    for variant in ("paper", "openr1"):
        assert check(text, "#### 72", "gsm8k", variant)["accuracy"] == 1.0
        assert check(text, "#### 73", "gsm8k", variant)["accuracy"] == 0.0
    before = V.stats().get("too_long", 0)
    assert check("Step. " * 3000 + "So the total is 72.", "#### 72", "gsm8k", "paper")["accuracy"] == 0.0
    assert V.stats().get("too_long", 0) == before + 1
