"""Tests of pods_repro.data: synthetic tasks, prompts, local files and error messages (fast, no network)."""

import json
import re
from pathlib import Path

import pytest

from pods_repro import data

SYNTH = data.SYNTHETIC_TASKS
# The development setup keeps a copy of GSM8K beside the clone; the tests that need the real set skip without it.
SIBLING_GSM8K = Path(__file__).resolve().parents[3] / "shared" / "data" / "gsm8k"


@pytest.fixture
def real_gsm8k(monkeypatch):
    """PODS_GSM8K_DIR pointed at the sibling copy of GSM8K; skip where there is none."""
    if not (SIBLING_GSM8K / "test.jsonl").is_file():
        pytest.skip("no local GSM8K copy beside the clone (../shared/data/gsm8k)")
    monkeypatch.setenv(data.GSM8K_DIR_ENV, str(SIBLING_GSM8K))


def _eval_line(line: str) -> bool:
    """True if a scratchpad line 'x+y+c=s' / 'x-y-b=d' is a true equation."""
    lhs, rhs = line.split("=")
    return eval(lhs) == int(rhs)  # noqa: S307 - digits and +/- only, checked by the regex below


@pytest.mark.parametrize("task", SYNTH)
def test_synthetic_deterministic_and_disjoint(task):
    train = data.load_task(task, "train", prompt_style="plain", seed=0)
    again = data.load_task(task, "train", prompt_style="plain", seed=0)
    other = data.load_task(task, "train", prompt_style="plain", seed=1)
    test = data.load_task(task, "test", prompt_style="plain", seed=0)
    test_other_seed = data.load_task(task, "test", prompt_style="plain", seed=7)
    assert train == again
    assert test == test_other_seed  # the test set never depends on the run seed
    assert len(test) == (data.ARITH_ADD_TEST_SIZE if task == "arith_add" else data.SYNTH_TEST_SIZE)
    assert [r["id"] for r in train] != [r["id"] for r in other]
    # ids name the arithmetic problem, so disjoint ids mean no test problem is trained on.
    assert {r["id"] for r in train}.isdisjoint({r["id"] for r in test})
    assert len({r["id"] for r in train}) == len(train)
    if task == "arith":  # every 2-digit problem is train, test or arith_heldout
        heldout = data.load_task("arith_heldout", "test", prompt_style="plain")
        assert len(train) + len(test) + len(heldout) == 90 * 90 + 90 * 91 // 2
        assert {r["id"] for r in train} == {r["id"] for r in other}
    if task == "arith_mc":  # gold letters are uniform, so guessing scores 25%
        for split in (train, test):
            counts = [sum(r["answer"] == L for r in split) / len(split) for L in data.LETTERS]
            assert all(0.2 < c < 0.3 for c in counts), counts


def test_arith_heldout_is_in_no_training_set():
    """arith_heldout (the tiny GSM8K-Platinum analogue): disjoint from arith test and from the RL
    training split at any seed; exactly the problems the tiny models' warm start held out."""
    heldout = data.load_task("arith_heldout", "test", prompt_style="plain")
    ids = {r["id"] for r in heldout}
    assert len(ids) == len(heldout) == data.ARITH_HELDOUT_SIZE
    assert ids.isdisjoint(r["id"] for r in data.load_task("arith", "test", prompt_style="plain"))
    for seed in (0, 1, 7):
        assert ids.isdisjoint(r["id"] for r in data.load_task("arith", "train", prompt_style="plain", seed=seed))
    assert heldout == data.load_task("arith_heldout", "test", prompt_style="plain", seed=5)  # no run seed
    # pods_repro.models holds out the first TinySpec.val_size warm-start problems of the seed-0 order
    from pods_repro.models import TINY_MODELS

    for name in ("llama-arith", "qwen2-arith", "llama-arith_warm"):
        spec = TINY_MODELS[name]
        assert (spec.task, spec.seed, spec.val_size) == ("arith", data.ARITH_HELDOUT_SEED, data.ARITH_HELDOUT_SIZE)
    warm = data.warm_start_train("arith", seed=0)
    assert [r["id"] for r in warm[: data.ARITH_HELDOUT_SIZE]] == [r["id"] for r in heldout]
    for r in heldout:
        assert r["answer"] == str(eval(r["question"].rstrip("=")))  # noqa: S307 - '47+38' style
    with pytest.raises(data.DataError, match="evaluation-only"):
        data.load_task("arith_heldout", "train")


def test_arith_add_is_the_additions_of_arith_training_split():
    """arith_add (notebook/overlays/tiny_a_add.yaml): its test set is the first 1,000 additions of arith's seed-0
    training order, its training split the other additions of that split at any seed; so neither meets
    arith's test set or arith_heldout, and the records are arith's, scored as arith."""
    test = data.load_task("arith_add", "test", prompt_style="plain", seed=3)
    arith0 = data.load_task("arith", "train", prompt_style="plain", seed=0)
    additions = [r for r in arith0 if "+" in r["question"]]
    assert test == additions[: data.ARITH_ADD_TEST_SIZE] == data.load_task("arith_add", "test", prompt_style="plain")
    others = {r["id"] for r in data.load_task("arith", "test", prompt_style="plain")}
    others |= {r["id"] for r in data.load_task("arith_heldout", "test", prompt_style="plain")}
    test_ids = {r["id"] for r in test}
    assert test_ids.isdisjoint(others)
    for seed in (0, 1):
        train = data.load_task("arith_add", "train", prompt_style="plain", seed=seed)
        arith = [r for r in data.load_task("arith", "train", prompt_style="plain", seed=seed) if "+" in r["question"]]
        assert train == [r for r in arith if r["id"] not in test_ids]  # arith's records, in the seed's order
        assert len(train) == len(additions) - data.ARITH_ADD_TEST_SIZE
        assert all(re.fullmatch(r"\d\d\+\d\d=", r["question"]) for r in train)
    # every entry point gives the same problems (the warm-start reader too, were a model built on it)
    assert data.synthetic_problems("arith_add", "test") == [
        (int(r["question"][:2]), "+", int(r["question"][3:5])) for r in test
    ]
    assert {r["question"] for r in data.warm_start_train("arith_add", seed=1)} == {
        r["question"] for r in data.load_task("arith_add", "train", prompt_style="plain", seed=1)
    }
    from pods_repro.rewards import score

    r = test[0]
    assert score(r["solution"], r["answer"], "arith_add") == score(r["solution"], r["answer"], "arith")
    assert score(r["solution"], r["answer"], "arith_add")["accuracy"] == 1.0
    wrong = r["solution"].replace(f"<answer>\n{r['answer']}", "<answer>\n0")
    assert score(wrong, r["answer"], "arith_add")["accuracy"] == 0.0


def test_warm_start_data_unchanged():
    """The tiny models' supervised warm start reads the same problems, in the same order, as when the
    cached models were built (ids hashed before arith_heldout was split off arith's training set)."""
    import hashlib

    expected = {"arith": "318ff95273e5ab5e", "arith_hard": "5dbaa6884364c7c5", "arith_mc": "492db049f1b1ebfc"}
    for task, digest in expected.items():
        ids = "\n".join(r["id"] for r in data.warm_start_train(task, seed=0))
        assert hashlib.sha1(ids.encode()).hexdigest()[:16] == digest, task


@pytest.mark.parametrize("task", SYNTH)
def test_synthetic_solutions_are_correct(task):
    for r in data.load_task(task, "test", prompt_style="plain"):
        sol = r["solution"]
        m = re.fullmatch(r"<think>\n(.*)\n</think>\n<answer>\n(.*)\n</answer>", sol, flags=re.S)
        assert m, sol
        lines = m.group(1).split("\n")
        expr = r["question"].split("=")[0]
        value = eval(expr)  # noqa: S307 - generated '47+38' style expressions
        assert value >= 0
        if task == "arith_mc":
            *work, value_line, pick = lines
            opts = [line.split(" ") for line in r["question"].split("\n")[1:]]
            assert [o[0] for o in opts] == list(data.LETTERS)
            ranges = [tuple(map(int, o[1].split("-"))) for o in opts]
            assert ranges == [(ranges[0][0] + 10 * i, ranges[0][0] + 10 * i + 9) for i in range(4)]
            k = data.LETTERS.index(r["answer"])
            assert ranges[k][0] <= value <= ranges[k][1]
            assert value_line == str(value)
            assert pick == f"{value // 10}-{ranges[0][0] // 10}={k}"
            assert m.group(2) == r["answer"]
        else:
            work = lines
            assert r["answer"] == m.group(2) == str(value)
        for line in work:
            assert re.fullmatch(r"\d+[+-]\d+[+-]\d=\d+", line), line
            assert _eval_line(line), line
        # The last digit of each column, read from the top column down, plus the final carry.
        digits = "".join(line.split("=")[1][-1] for line in reversed(work))
        carry = work[-1].split("=")[1][:-1] if "+" in work[-1] else ""
        assert int(carry + digits) == value
        assert r["prompt"] == r["question"] + "\n"


def test_prompts_verbatim():
    expected = (
        "\nYou will be given a math question.\n"
        "Reason about the question and correct your own mistakes if you make any.\n\n"
        "Respond in the following format:\n<think>\n"
        "Reason here. Decide to answer when you are confident as your response length is limited.\n"
        "</think>\n<answer>\nAnswer here.\n</answer>\n"
    )
    assert data.SYSTEM_PROMPT_INSTRUCT == expected
    assert data.SYSTEM_PROMPT_OPENR1 == (
        "You are a helpful AI Assistant that provides well-reasoned and detailed responses. You first think "
        "about the reasoning process as an internal monologue and then provide the user with the answer. "
        "Respond in the following format: <think>\n...\n</think>\n<answer>\n...\n</answer>"
    )
    q = "What is 2+2?"
    assert data.make_prompt(q, "instruct") == [
        {"role": "system", "content": expected},
        {"role": "user", "content": q},
    ]
    assert data.make_prompt(q, "openr1")[0]["content"] == data.SYSTEM_PROMPT_OPENR1
    assert data.make_prompt(q, "plain") == q + "\n"


def test_trl_sees_chat_prompts_as_conversational():
    from trl.data_utils import is_conversational

    rec = data.load_task("arith", "test", prompt_style="instruct", limit=1)[0]
    assert is_conversational({"prompt": rec["prompt"]})
    rec = data.load_task("arith", "test", prompt_style="plain", limit=1)[0]
    assert not is_conversational({"prompt": rec["prompt"]})


def test_gsm8k_dir_variable_replaces_the_hub(tmp_path, monkeypatch):
    """PODS_GSM8K_DIR: both splits come from the directory; a directory without the split's file is an
    error naming the variable, never a silent fall back to the hub."""
    _write(tmp_path / "test.jsonl", [{"question": "Ann has 2 apples and buys 3. How many?", "answer": "2+3=5\n#### 5"}])
    monkeypatch.setenv(data.GSM8K_DIR_ENV, str(tmp_path))
    (rec,) = data.load_task("gsm8k", "test")
    assert rec["answer"].endswith("#### 5")
    assert rec["question"].startswith("Ann")
    with pytest.raises(data.DataError, match=r"PODS_GSM8K_DIR=.* has no train\.jsonl"):
        data.load_task("gsm8k", "train")
    monkeypatch.setenv(data.GSM8K_DIR_ENV, "")
    assert data.local_gsm8k_file("test") is None  # empty or unset: the hub


def test_local_gsm8k(real_gsm8k):
    test = data.load_task("gsm8k", "test")
    assert len(test) == 1319
    assert test[0]["answer"].endswith("#### 18")
    assert test[0]["question"].startswith("Janet")
    assert test[0]["prompt"][1]["content"] == test[0]["question"]
    assert len(data.load_task("gsm8k", "train", limit=10)) == 10


def test_gold_round_trip_with_rewards(real_gsm8k):
    rewards = pytest.importorskip("pods_repro.rewards")
    for r in data.load_task("gsm8k", "test", limit=20):
        gold = r["answer"].split("####")[-1].strip().replace(",", "")
        good = f"<think>\nwork\n</think>\n<answer>\n{gold}\n</answer>"
        bad = f"<think>\nwork\n</think>\n<answer>\n{int(gold) + 1}\n</answer>"
        assert rewards.score(good, r["answer"], "gsm8k")["accuracy"] == 1
        assert rewards.score(bad, r["answer"], "gsm8k")["accuracy"] == 0
    for task in SYNTH:
        for r in data.load_task(task, "test", prompt_style="plain", limit=20):
            assert rewards.score(r["solution"], r["answer"], task)["accuracy"] == 1, (task, r)
            wrong = r["solution"].replace(f"<answer>\n{r['answer']}\n", "<answer>\nX\n")
            assert rewards.score(wrong, r["answer"], task)["accuracy"] == 0, (task, r)


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_local_files_for_every_task(tmp_path):
    gsm = _write(tmp_path / "g.jsonl", [{"question": "1+1?", "answer": "one and one\n#### 2"}])
    for task in ("gsm8k", "gsm8k_platinum"):
        (r,) = data.load_task(task, "test", path=gsm)
        assert r["answer"] == "one and one\n#### 2"
    math = _write(
        tmp_path / "m.jsonl",
        [
            {"problem": "p1", "solution": "so \\boxed{1} then \\boxed{\\frac{1}{2}}."},
            {"problem": "p2", "answer": "7"},
            {"problem": "p3", "solution": "no box"},
        ],
    )
    recs = data.load_task("math", "train", path=math)
    assert [r["answer"] for r in recs] == ["\\frac{1}{2}", "7"]
    chem = _write(
        tmp_path / "c.jsonl",
        [
            {
                "question": "Q1",
                "choices": {"label": ["A", "B", "C", "D"], "text": ["a", "b", "c", "d"]},
                "answerKey": "C",
            },
            {"question": "Q2", "choices": ["w", "x", "y", "z"], "answerKey": "A"},
            {"question": "Q3", "choices": {"label": ["A", "B"], "text": ["y", "n"]}, "answerKey": "A"},
            {"question": "Q4 with options inline", "answer": "E"},
        ],
    )
    recs = data.load_task("chemistry", "test", path=chem)
    assert [r["answer"] for r in recs] == ["C", "A"]
    assert recs[0]["question"] == "Q1\nA. a\nB. b\nC. c\nD. d"
    arith = _write(tmp_path / "a.jsonl", [{"question": "2+2=", "answer": "4"}])
    assert data.load_task("arith", "train", path=arith, prompt_style="plain")[0]["prompt"] == "2+2=\n"


def test_chemistry_split_is_fixed_and_disjoint():
    rows = [
        {"question": f"q{i}", "domain": "Chemistry", "details": {"level": "L3" if i % 3 else "L2"},
         "choices": {"label": list("ABCD"), "text": list("wxyz")}, "answerKey": "ABCD"[i % 4]}
        for i in range(60)
    ] + [{"question": "bio", "domain": "Biology", "details": {"level": "L3"},
          "choices": {"label": list("ABCD"), "text": list("wxyz")}, "answerKey": "A"}]  # fmt: skip
    kept = data.chem_rows(rows, "chemistry", "train", "rows", filter_l3=True)
    assert len(kept) == 40
    test = data.chem_split([dict(r) for r in kept], "test")
    train = data.chem_split([dict(r) for r in reversed(kept)], "train")  # input order does not matter
    assert len(test) == 8
    assert len(train) == 32
    assert {r["question"] for r in test}.isdisjoint({r["question"] for r in train})


def test_extract_boxed():
    assert data.extract_boxed("a \\boxed{x} b \\boxed{\\dfrac{a}{b}}") == "\\dfrac{a}{b}"
    assert data.extract_boxed("\\boxed{ {1,2} }") == " {1,2} "
    assert data.extract_boxed("nothing") is None
    assert data.extract_boxed("\\boxed{open") is None


def test_prompt_length_filter(tmp_path):
    from pods_repro.models import build_char_tokenizer

    tok = build_char_tokenizer()
    full = data.load_task("arith_mc", "test", prompt_style="plain")
    lengths = [len(r["prompt"]) + 1 for r in full]  # one token per character plus BOS
    cut = sorted(lengths)[len(lengths) // 2]
    kept = data.load_task("arith_mc", "test", prompt_style="plain", tokenizer=tok, max_prompt_length=cut)
    assert len(kept) == sum(n <= cut for n in lengths) < len(full)
    assert all(len(r["prompt"]) + 1 <= cut for r in kept)
    with pytest.raises(data.DataError, match="chat template"):
        data.load_task("arith", "test", prompt_style="instruct", tokenizer=tok, max_prompt_length=10)


def test_errors(tmp_path):
    with pytest.raises(data.DataError, match="choose one of"):
        data.load_task("gsm9k", "train")
    with pytest.raises(data.DataError, match="'train' or 'test'"):
        data.load_task("arith", "validation")
    with pytest.raises(data.DataError, match="prompt_style"):
        data.load_task("arith", "test", prompt_style="chatml")
    with pytest.raises(data.DataError, match=r"does not exist.*task\.train=PATH"):
        data.load_task("gsm8k", "train", path=tmp_path / "missing.jsonl")
    with pytest.raises(data.DataError, match="evaluation-only"):
        data.load_task("gsm8k_platinum", "train")
    with pytest.raises(data.DataError, match="tokenizer"):
        data.load_task("arith", "test", max_prompt_length=10)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "x", "answer": "1"}\nnot json\n')
    with pytest.raises(data.DataError, match=r"bad\.jsonl:2"):
        data.load_task("gsm8k", "test", path=bad)
    _write(bad, [{"question": "x"}])
    with pytest.raises(data.DataError, match="missing field 'answer'"):
        data.load_task("gsm8k", "test", path=bad)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"[1, 2]\n", r"bad\.jsonl:1 is a JSON list, not an object"),
        (b'{"question": {"a": 1}, "answer": "2"}\n', "field 'question' is a dict; write it as a string"),
        (b'{"question": "1+1=", "answer": ["2"]}\n', "field 'answer' is a list"),
        (b"\xff\xfe{}\n", "not UTF-8 text"),
        ('{"question": "1+1=", "answer": "\uff12"}\n'.encode(), r"record 0: gold answer '\uff12' .* not an integer"),
        (b'{"question": "1+1=", "answer": ""}\n', "record 0: gold answer '' .* not an integer"),
    ],
)
def test_a_task_file_the_scorer_cannot_use_is_refused_at_load_time(tmp_path, content, why):
    # Before: raw AttributeError / TypeError / UnicodeDecodeError, or a ValueError in the first training step.
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    with pytest.raises(data.DataError, match=why):
        data.load_task("arith", "train", path=bad, prompt_style="plain")


def test_max_prompt_length_says_what_it_dropped(tmp_path, capsys):
    from pods_repro.models import build_char_tokenizer

    tok = build_char_tokenizer()
    with pytest.raises(data.DataError, match=r"every prompt .* longer than task\.max_prompt_length=3 .*500 of 500"):
        data.load_task("arith", "test", prompt_style="plain", tokenizer=tok, max_prompt_length=3)
    capsys.readouterr()
    full = data.load_task("arith_mc", "test", prompt_style="plain")
    cut = sorted(len(r["prompt"]) + 1 for r in full)[len(full) // 2]
    kept = data.load_task("arith_mc", "test", prompt_style="plain", tokenizer=tok, max_prompt_length=cut)
    err = capsys.readouterr().err
    assert f"task.max_prompt_length={cut} dropped {len(full) - len(kept)} prompt(s)" in err
    data.load_task("arith", "test", prompt_style="plain", tokenizer=tok, max_prompt_length=64)
    assert capsys.readouterr().err == ""  # nothing dropped: nothing said


def test_hub_failure_says_how_to_fix(monkeypatch):
    datasets = pytest.importorskip("datasets")
    import huggingface_hub.constants

    # Offline mode makes the hub call fail at once instead of retrying for ~25 s.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(data.DataError, match=r"HuggingFaceH4/MATH-500.*task\.test=PATH\.jsonl"):
        data.load_task("math", "test")
