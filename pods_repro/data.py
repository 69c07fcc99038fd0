"""Tasks and prompts: GSM8K, MATH, SciKnowEval-Chemistry, GSM8K-Platinum and synthetic arithmetic.

The details: docs/design.md, "Module notes" (`pods_repro/data.py`).
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pods_repro import registry
from pods_repro.textutil import last_boxed as extract_boxed  # the package's one \boxed{} extractor
from pods_repro.textutil import last_boxed_code

GSM8K_DIR_ENV = "PODS_GSM8K_DIR"
"""Environment variable: a directory holding a local copy of GSM8K as JSON lines (``train.jsonl``,
``test.jsonl``); when set, the gsm8k task reads its splits there instead of the hub (offline machines)."""

# The authors' single-GPU prompt, settings (a)-(d), verbatim: starts and ends with a newline
# (docs/paper.md#prompts-and-rewards).
SYSTEM_PROMPT_INSTRUCT = """
You will be given a math question.
Reason about the question and correct your own mistakes if you make any.

Respond in the following format:
<think>
Reason here. Decide to answer when you are confident as your response length is limited.
</think>
<answer>
Answer here.
</answer>
"""

# The open-r1 recipe's prompt, multi-GPU settings (e)-(f), verbatim (docs/paper.md#prompts-and-rewards).
SYSTEM_PROMPT_OPENR1 = (
    "You are a helpful AI Assistant that provides well-reasoned and detailed responses. You first "
    "think about the reasoning process as an internal monologue and then provide the user with the "
    "answer. Respond in the following format: <think>\n...\n</think>\n<answer>\n...\n</answer>"
)

SPLITS = ("train", "test")
# Task and prompt-style names: pods_repro.registry owns them (one record per task: name, description, kind).
PROMPT_STYLES = registry.PROMPT_STYLES
MATH_GOLD = registry.MATH_GOLD
SYNTHETIC_TASKS = registry.SYNTHETIC_TASKS
GENERATED_TASKS = registry.GENERATED_TASKS  # the synthetic tasks and their eval-only sets
TASKS = registry.TASK_NAMES

# Version of the synthetic generators: bump it whenever the generated problems, prompts or solutions
# change, so that cached tiny models warm-started on the old data are rebuilt (pods_repro.models.ensure_tiny).
SYNTHETIC_VERSION = 1
# Synthetic tasks: the test set is a fixed sample drawn with its own seed, never the run seed.
SYNTH_TEST_SIZE = 500
SYNTH_TEST_SEED = 1234
ARITH_HARD_TRAIN_SIZE = 20_000
# arith_heldout: the problems the seed-0 warm start of the tiny arith models held out (TinySpec.val_size).
ARITH_HELDOUT_SIZE = 256
ARITH_HELDOUT_SEED = 0
# arith_add: its test set is the first ARITH_ADD_TEST_SIZE additions of arith's seed-0 training order.
ARITH_ADD_TEST_SIZE = 1000
# Chemistry split (open in the paper: docs/paper.md#open-items): fixed seed and test fraction, independent
# of the run seed.
CHEM_SPLIT_SEED = 42
CHEM_TEST_FRACTION = 0.2
MATH_SUBSETS = (
    "algebra",
    "counting_and_probability",
    "geometry",
    "intermediate_algebra",
    "number_theory",
    "prealgebra",
    "precalculus",
)
LETTERS = ("A", "B", "C", "D")


class DataError(ValueError):
    """Bad task name, split, style or file; the message says how to fix it."""


# ----------------------------------------------------------------------------------------------
# Synthetic arithmetic


def _scratchpad(a: int, op: str, b: int) -> list[str]:
    """Digit-wise working for a op b (a >= b for '-'), one line per column from the units up."""
    da, db = str(a)[::-1], str(b)[::-1]
    lines, carry = [], 0
    for i in range(max(len(da), len(db))):
        x = int(da[i]) if i < len(da) else 0
        y = int(db[i]) if i < len(db) else 0
        if op == "+":
            s = x + y + carry
            lines.append(f"{x}+{y}+{carry}={s}")
            carry = s // 10
        else:
            # Borrow: write the column's top digit as 1x so the line itself is a true equation.
            top = x + 10 if x - y - carry < 0 else x
            lines.append(f"{top}-{y}-{carry}={top - y - carry}")
            carry = 1 if top != x else 0
    return lines


def _arith_completion(a: int, op: str, b: int, first_decade: int | None = None) -> str:
    """Gold completion in the paper's format; with `first_decade` (arith_mc) the answer is a letter.

    arith_mc writes the value, then which option holds it as a digit subtraction on the tens,
    e.g. value 85 with options starting at 60-69: `8-6=2`, so the answer is the third letter, C.
    """
    value = a + b if op == "+" else a - b
    think = _scratchpad(a, op, b)
    answer = str(value)
    if first_decade is not None:
        k = value // 10 - first_decade
        think += [str(value), f"{value // 10}-{first_decade}={k}"]
        answer = LETTERS[k]
    return "<think>\n" + "\n".join(think) + "\n</think>\n<answer>\n" + answer + "\n</answer>"


def _answer_of(solution: str) -> str:
    return solution.rsplit("<answer>\n", 1)[1].split("\n", 1)[0]


def _all_problems(digits: int) -> list[tuple[int, str, int]]:
    lo, hi = 10 ** (digits - 1), 10**digits
    out = [(a, "+", b) for a in range(lo, hi) for b in range(lo, hi)]
    out += [(a, "-", b) for a in range(lo, hi) for b in range(lo, a + 1)]
    return out


def _random_problem(rng: random.Random, digits: int) -> tuple[int, str, int]:
    lo, hi = 10 ** (digits - 1), 10**digits - 1
    a, b = rng.randint(lo, hi), rng.randint(lo, hi)
    op = rng.choice("+-")
    if op == "-" and a < b:
        a, b = b, a
    return a, op, b


def _mc_first_decade(a: int, op: str, b: int, rng: random.Random) -> int:
    """First of four consecutive decade options (e.g. 60-69 .. 90-99), the value's one uniform among them.

    Why ranges and not four numbers: picking the option equal to a computed number is a content
    lookup across lines that our tiny models did not learn at all (options of near-miss numbers, with
    the letter after a `value=letter` line or after per-option Y/N checks: chance accuracy after
    450-1100 SFT steps; a bare lookup task stayed at loss ln 4 for 900 steps at three learning rates).
    With ranges the letter follows from the value by one digit subtraction, which they do learn.
    """
    tens = (a + b if op == "+" else a - b) // 10
    return tens - rng.randint(0, 3)


def _synthetic_record(task: str, a: int, op: str, b: int, rng: random.Random) -> dict:
    expr = f"{a}{op}{b}="
    if task == "arith_mc":
        first = _mc_first_decade(a, op, b, rng)
        question = expr + "".join(f"\n{L} {10 * (first + i)}-{10 * (first + i) + 9}" for i, L in enumerate(LETTERS))
        solution = _arith_completion(a, op, b, first_decade=first)
        return {
            "question": question,
            "answer": _answer_of(solution),
            "solution": solution,
            "id": f"{task}:{a}{op}{b}",
        }
    return {
        "question": expr,
        "answer": str(a + b if op == "+" else a - b),
        "solution": _arith_completion(a, op, b),
        "id": f"{task}:{a}{op}{b}",
    }


def synthetic_problems(
    task: str, split: str, seed: int = 0, exclude_heldout: bool = True
) -> list[tuple[int, str, int]]:
    """The (a, op, b) triples of a synthetic split; test is fixed, train excludes every test triple
    (and, for arith unless `exclude_heldout` is false, every arith_heldout triple)."""
    if task == "arith_add":  # a subset of arith's training split, which never holds arith_heldout
        return _arith_add(split, seed)
    digits = 3 if task == "arith_hard" else 2
    test_rng = random.Random(SYNTH_TEST_SEED + digits)
    if digits == 2:
        universe = _all_problems(2)
        if task == "arith_mc":
            # Values below 30 cannot sit in the 3rd/4th of four decades from 0: dropping them keeps
            # the gold letters uniform (otherwise "always A" would score 34%, not 25%).
            universe = [(a, op, b) for a, op, b in universe if (a + b if op == "+" else a - b) >= 30]
        test = test_rng.sample(universe, SYNTH_TEST_SIZE)
    else:
        test_set: dict[tuple[int, str, int], None] = {}
        while len(test_set) < SYNTH_TEST_SIZE:
            test_set[_random_problem(test_rng, 3)] = None
        test = list(test_set)
    if split == "test":
        return test
    banned = set(test)
    rng = random.Random(seed)
    if digits == 2:
        # Every 2-digit problem not in test (12,195 - 500 for arith), in a seed-dependent order.
        train = [p for p in universe if p not in banned]
        rng.shuffle(train)
    else:
        train_set: dict[tuple[int, str, int], None] = {}
        while len(train_set) < ARITH_HARD_TRAIN_SIZE:
            p = _random_problem(rng, 3)
            if p not in banned:
                train_set[p] = None
        train = list(train_set)
    assert banned.isdisjoint(train), "synthetic train and test overlap"
    if task == "arith" and exclude_heldout:
        heldout = set(_arith_heldout())
        train = [p for p in train if p not in heldout]
    return train


def _load_synthetic(task: str, split: str, seed: int) -> list[dict]:
    problems = synthetic_problems(task, split, seed)
    # Options of arith_mc come from a per-split RNG so that a record is a function of (split, seed).
    rng = random.Random(f"{task}-{split}-{seed if split == 'train' else SYNTH_TEST_SEED}")
    return [_synthetic_record(task, a, op, b, rng) for a, op, b in problems]


def _arith_heldout() -> list[tuple[int, str, int]]:
    """The arith_heldout problems: the first ARITH_HELDOUT_SIZE of the seed-0 warm-start order."""
    return synthetic_problems("arith", "train", seed=ARITH_HELDOUT_SEED, exclude_heldout=False)[:ARITH_HELDOUT_SIZE]


def _arith_add(split: str, seed: int) -> list[tuple[int, str, int]]:
    """The arith_add triples: additions of arith's training split (never arith's test or heldout)."""
    test = [p for p in synthetic_problems("arith", "train", seed=0) if p[1] == "+"][:ARITH_ADD_TEST_SIZE]
    if split == "test":
        return test
    banned = set(test)
    return [p for p in synthetic_problems("arith", "train", seed=seed) if p[1] == "+" and p not in banned]


def _load_generated(task: str, split: str, seed: int) -> list[dict]:
    if task == "arith_heldout" and split != "test":
        raise DataError("arith_heldout is an evaluation-only set: use split='test' (train on arith)")
    if task in ("arith_heldout", "arith_add"):
        # Subsets of arith's 2-digit problems: records exactly as arith writes them (ids `arith:a+b`, one
        # id space across the 2-digit sets; the rng only draws arith_mc's options, so it is not used).
        problems = _arith_heldout() if task == "arith_heldout" else _arith_add(split, seed)
        return [_synthetic_record("arith", a, op, b, random.Random(0)) for a, op, b in problems]
    return _load_synthetic(task, split, seed)


def warm_start_train(task: str, seed: int = 0) -> list[dict]:
    """Training records of a tiny model's supervised warm start (pods_repro.models): the task's training
    problems in the seed's order, with arith_heldout still in them (the warm start holds its first
    `val_size` problems out itself). Unchanged since the tiny models were built."""
    problems = synthetic_problems(task, "train", seed, exclude_heldout=False)
    rng = random.Random(f"{task}-train-{seed}")
    return [
        {"prompt": make_prompt(r["question"], "plain"), **r}
        for r in (_synthetic_record(task, a, op, b, rng) for a, op, b in problems)
    ]


# ----------------------------------------------------------------------------------------------
# Real tasks: hub and local files


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise DataError(
            f"data file {path} does not exist. Pass an existing JSON-lines file "
            "(e.g. task.train=PATH.jsonl / task.test=PATH.jsonl in the config); "
            "see the pods_repro.data docstring for the expected fields."
        )
    rows = []
    try:
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DataError(f"{path}:{lineno} is not valid JSON ({e}); each line must be one object") from e
                if not isinstance(row, dict):
                    raise DataError(
                        f"{path}:{lineno} is a JSON {type(row).__name__}, not an object; each line must be one "
                        'object such as {"question": ..., "answer": ...}'
                    )
                rows.append(row)
    except UnicodeDecodeError as e:
        raise DataError(f"{path} is not UTF-8 text ({e}); save it as UTF-8 JSON lines") from None
    return rows


def _load_hub(task: str, split: str, loader: Callable[[], list[dict]], hub_id: str) -> list[dict]:
    """Run a hub loader; turn any failure into a DataError that says how to use a local file."""
    try:
        return loader()
    except Exception as e:  # noqa: BLE001 - any hub/network/parsing failure gets the same advice
        raise DataError(
            f"could not load the {split} split of task {task!r} from the Hugging Face hub "
            f"({hub_id}): {type(e).__name__}: {str(e)[:300]}. Without hub access pass a local "
            f"JSON-lines file: task.{split}=PATH.jsonl in the config (path=... for load_task); "
            "see the pods_repro.data docstring for the expected fields."
        ) from e


def _require(row: dict, keys: tuple[str, ...], where: str) -> str:
    for k in keys:
        if row.get(k) is not None:
            if not isinstance(row[k], (str, int)) or isinstance(row[k], bool):
                raise DataError(f"{where}: field {k!r} is a {type(row[k]).__name__}; write it as a string")
            return str(row[k])  # an integer answer (or question) as its digits
    raise DataError(f"{where}: missing field {' or '.join(map(repr, keys))} (has {sorted(row)})")


def _gsm8k_rows(rows: list[dict], task: str, split: str, src: str) -> list[dict]:
    out = []
    for i, r in enumerate(rows):
        if r.get("cleaning_status") == "rejected":  # GSM8K-Platinum marks dropped questions so
            continue
        where = f"{src} row {i}"
        out.append(
            {
                "question": _require(r, ("question",), where),
                "answer": str(_require(r, ("answer",), where)),
                "id": f"{task}-{split}-{i}",
            }
        )
    return out


def _math_rows(rows: list[dict], task: str, split: str, src: str, math_gold: str = "balanced") -> list[dict]:
    if math_gold not in MATH_GOLD:
        raise DataError(f"unknown math_gold {math_gold!r}; choose one of {', '.join(MATH_GOLD)}")
    extract = last_boxed_code if math_gold == "code" else extract_boxed
    out = []
    for i, r in enumerate(rows):
        where = f"{src} row {i}"
        question = _require(r, ("problem", "question"), where)
        answer = r.get("answer")
        if answer is None:
            answer = extract(_require(r, ("solution",), where))
            if answer is None:
                continue  # a solution without a \boxed{} has no gold answer to grade against
        out.append({"question": question, "answer": str(answer), "id": r.get("unique_id") or f"{task}-{split}-{i}"})
    return out


def _chem_question(r: dict, where: str) -> tuple[str, str] | None:
    """Question text with the options as lines 'A. ...', and the gold letter; None if not A-D."""
    question = _require(r, ("question",), where)
    gold = str(_require(r, ("answerKey", "answer"), where)).strip()
    choices = r.get("choices")
    if choices is not None:
        if isinstance(choices, dict):
            labels, texts = list(choices.get("label") or []), list(choices.get("text") or [])
        else:
            texts = list(choices)
            labels = list(LETTERS[: len(texts)])
        if tuple(labels) != LETTERS or len(texts) != 4:
            return None
        question = question + "\n" + "\n".join(f"{L}. {t}" for L, t in zip(labels, texts, strict=True))
    if gold not in LETTERS:
        return None
    return question, gold


def chem_rows(rows: list[dict], task: str, split: str, src: str, filter_l3: bool) -> list[dict]:
    out = []
    for i, r in enumerate(rows):
        if filter_l3:
            level = (r.get("details") or {}).get("level", r.get("level"))
            if str(r.get("domain", "")).lower() != "chemistry" or level != "L3":
                continue
        qa = _chem_question(r, f"{src} row {i}")
        if qa is None:
            continue  # not a 4-option A-D item: the paper grades letters only (App. A.1)
        out.append({"question": qa[0], "answer": qa[1], "id": r.get("id") or f"{task}-{i}"})
    return out


def chem_split(records: list[dict], split: str) -> list[dict]:
    """Fixed 80/20 split: sort by question (hub order independent), shuffle with seed 42."""
    records = sorted(records, key=lambda r: r["question"])
    random.Random(CHEM_SPLIT_SEED).shuffle(records)
    n_test = round(CHEM_TEST_FRACTION * len(records))
    for i, r in enumerate(records):
        r["id"] = f"chemistry-{i}"
    return records[:n_test] if split == "test" else records[n_test:]


def _hub_rows(hub_id: str, config: str | None, split: str) -> list[dict]:
    import datasets  # imported lazily: slow to import and only needed for hub sources

    return list(datasets.load_dataset(hub_id, config, split=split))


def local_gsm8k_file(split: str) -> Path | None:
    """``$PODS_GSM8K_DIR/{split}.jsonl``, or None when the variable is unset or empty (then the hub)."""
    root = os.environ.get(GSM8K_DIR_ENV, "")
    if not root:
        return None
    path = Path(root) / f"{split}.jsonl"
    if not path.is_file():
        raise DataError(
            f"{GSM8K_DIR_ENV}={root} has no {split}.jsonl: point it at a directory holding GSM8K's "
            "train.jsonl and test.jsonl, or unset it to read the hub"
        )
    return path


def _load_real(task: str, split: str, path: str | Path | None, math_gold: str = "balanced") -> list[dict]:
    if path is not None:
        src = Path(path)
        rows = _read_jsonl(src)
        if task in ("gsm8k", "gsm8k_platinum"):
            return _gsm8k_rows(rows, task, split, str(src))
        if task == "math":
            return _math_rows(rows, task, split, str(src), math_gold)
        # chemistry: a local file is already this split; keep only the letter items.
        return chem_rows(rows, task, split, str(src), filter_l3=False)

    if task == "gsm8k":
        local = local_gsm8k_file(split)
        if local is not None:
            return _gsm8k_rows(_read_jsonl(local), task, split, str(local))
        rows = _load_hub(task, split, lambda: _hub_rows("openai/gsm8k", "main", split), "openai/gsm8k")
        return _gsm8k_rows(rows, task, split, "openai/gsm8k")
    if task == "gsm8k_platinum":
        if split != "test":
            raise DataError("gsm8k_platinum is an evaluation-only set: use split='test' (train on gsm8k)")
        hub = "madrylab/gsm8k-platinum"
        rows = _load_hub(task, split, lambda: _hub_rows(hub, "main", "test"), hub)
        return _gsm8k_rows(rows, task, split, hub)
    if task == "math":
        if split == "test":
            hub = "HuggingFaceH4/MATH-500"
            rows = _load_hub(task, split, lambda: _hub_rows(hub, None, "test"), hub)
            return _math_rows(rows, task, split, hub)
        hub = "EleutherAI/hendrycks_math"

        def train_rows() -> list[dict]:
            import datasets

            parts = [datasets.load_dataset(hub, s, split="train") for s in MATH_SUBSETS]
            # The 7 subsets concatenated, shuffle(seed=42) (docs/paper.md#datasets).
            return list(datasets.concatenate_datasets(parts).shuffle(seed=42))

        return _math_rows(_load_hub(task, split, train_rows, hub), task, split, hub, math_gold)
    # chemistry
    hub = "hicai-zju/SciKnowEval"
    rows = _load_hub(task, split, lambda: _hub_rows(hub, None, "test"), hub)
    return chem_split(chem_rows(rows, task, split, hub, filter_l3=True), split)


# ----------------------------------------------------------------------------------------------
# Prompts


def make_prompt(question: str, style: str) -> list[dict] | str:
    """The policy input for one question in the given style (docs/paper.md#prompts-and-rewards)."""
    if style == "instruct":
        return [{"role": "system", "content": SYSTEM_PROMPT_INSTRUCT}, {"role": "user", "content": question}]
    if style == "openr1":
        return [{"role": "system", "content": SYSTEM_PROMPT_OPENR1}, {"role": "user", "content": question}]
    if style == "plain":
        return question + "\n"
    raise DataError(f"unknown prompt_style {style!r}; choose one of {', '.join(PROMPT_STYLES)}")


def prompt_length(prompt: list[dict] | str, tokenizer: Any) -> int:
    """Tokens the policy sees for this prompt: chat template + generation prompt, or the string."""
    if isinstance(prompt, str):
        return len(tokenizer(prompt)["input_ids"])
    if getattr(tokenizer, "chat_template", None) is None:
        raise DataError(
            "this tokenizer has no chat template, so chat prompts cannot be rendered; "
            "use prompt_style=plain for models without one (the tiny models)"
        )
    enc = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=True)
    return len(enc["input_ids"])


def load_task(
    name: str,
    split: str,
    path: str | Path | None = None,
    prompt_style: str = "instruct",
    tokenizer: Any = None,
    max_prompt_length: int | None = None,
    limit: int | None = None,
    seed: int = 0,
    math_gold: str = "balanced",
) -> list[dict]:
    """Records {prompt, answer, id, question[, solution]} of one split of a task.

    path: a local JSON-lines file that replaces the task's default source for this split.
    tokenizer + max_prompt_length: drop prompts longer than max_prompt_length tokens (docs/paper.md#hyperparameters).
    limit: keep the first `limit` records (after filtering).
    seed: order of the generated synthetic training set (test sets never depend on it).
    math_gold: "balanced" (matched braces) or "code" (the authors' first-"}" cut) for MATH answers taken
    from a solution's last \\boxed{} (the training split; MATH-500's bare answers are unaffected).
    """
    if name not in TASKS:
        raise DataError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; choose 'train' or 'test'")
    if prompt_style not in PROMPT_STYLES:
        raise DataError(f"unknown prompt_style {prompt_style!r}; choose one of {', '.join(PROMPT_STYLES)}")
    if max_prompt_length is not None and tokenizer is None:
        raise DataError("max_prompt_length needs the policy's tokenizer (pass tokenizer=...)")

    if name in GENERATED_TASKS and path is None:
        records = _load_generated(name, split, seed)
    elif name in GENERATED_TASKS:
        rows = _read_jsonl(Path(path))
        records = [
            {
                "question": _require(r, ("question",), f"{path} row {i}"),
                "answer": str(_require(r, ("answer",), f"{path} row {i}")),
                **({"solution": r["solution"]} if "solution" in r else {}),
                "id": r.get("id") or f"{name}-{split}-{i}",
            }
            for i, r in enumerate(rows)
        ]
    else:
        records = _load_real(name, split, path, math_gold)
    if not records:
        raise DataError(f"task {name!r} split {split!r} has no usable records (source: {path or 'default'})")
    _check_golds(records, name, path)

    out = []
    too_long = 0
    for r in records:
        prompt = make_prompt(r["question"], prompt_style)
        if max_prompt_length is not None and prompt_length(prompt, tokenizer) > max_prompt_length:
            too_long += 1
            continue
        out.append({"prompt": prompt, **r})
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise DataError(
            f"every prompt of task {name!r} split {split!r} is longer than task.max_prompt_length={max_prompt_length} "
            f"tokens ({too_long} of {len(records)} read); raise task.max_prompt_length (or set it to null)"
        )
    if too_long:
        print(
            f"[pods] task {name!r} {split}: task.max_prompt_length={max_prompt_length} dropped {too_long} prompt(s) "
            f"longer than that (kept {len(out)}{' up to the limit' if limit is not None and len(out) >= limit else ''})",
            file=sys.stderr,
        )
    return out


def _check_golds(records: list[dict], task: str, path: str | Path | None) -> None:
    """DataError at load time for a gold answer the task's scorer cannot read (else the first training step
    would fail, after the step-0 evaluation)."""
    from pods_repro.rewards import extract_gold

    for i, r in enumerate(records):
        try:
            extract_gold(r["answer"], task)
        except (TypeError, ValueError) as e:
            raise DataError(f"{path or f'task {task!r}'} record {i}: {e}") from None


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit("usage: python -m pods_repro.data TASK SPLIT [N] [STYLE]")
    n = int(argv[2]) if len(argv) > 2 else 3
    style = argv[3] if len(argv) > 3 else "plain"
    recs = load_task(argv[0], argv[1], prompt_style=style)
    print(f"{len(recs)} records")
    for r in recs[:n]:
        print(json.dumps(r, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
