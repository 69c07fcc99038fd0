"""The ``fidelity`` switch: the paper's text (``paper``, default) or the authors' code (``code``).

One table, :data:`DEPARTURES`, lists every known place where the paper's text and the authors' code
(YixuanEvenXu/pods at 187f43b; the paper side is summarised in docs/paper.md#code-differences) disagree
and the package can follow either. Each row names the config option that controls it and its value under each switch
value per setting letter. ``fidelity: code`` (top-level key, or the override ``fidelity=code``) is
resolved at config load (:func:`pods_repro.config.load_config`): the row values of the run's setting are
applied as overrides after the YAML and before the command line's own overrides, so ``config.json``
shows the resolved values and a single option can still be overridden on top.

docs/fidelity.md is generated from this table (``python -m pods_repro.config.fidelity > docs/fidelity.md``);
tests/config/test_fidelity.py checks that the committed file is up to date and that every arm of the paper
sheet resolves to the table's values under both switch values. Torch-free.

Rows whose paper and code values are equal are kept (``same``): they document a departure of an
earlier package version (or of TRL's defaults) from both sources.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

from pods_repro import registry

__all__ = [
    "DEPARTURES",
    "Departure",
    "FidelityError",
    "GSM8K_TRAIN_PROMPTS",
    "code_overrides",
    "letter_of_setting",
    "render_markdown",
    "schedule_rows",
]

PAPER_LETTERS = ("a", "b", "c", "d", "e", "f")
SINGLE_GPU = ("a", "b", "c", "d")
MULTI_GPU = ("e", "f")
GSM8K_TRAIN_PROMPTS = 7473
"""GSM8K train split size (docs/paper.md#datasets), all under the 512-token prompt filter: the (e)/(f) epoch."""


class FidelityError(ValueError):
    """fidelity=code asked of a setting the table does not cover."""


@dataclass(frozen=True)
class Departure:
    """One row of docs/fidelity.md."""

    topic: str
    """What differs."""
    option: str
    """The dotted config key that controls it (its one-line doc is in pods_repro/config/schema.py)."""
    paper: dict[str, Any]
    """Setting letter -> the value under fidelity=paper (what experiments/<paper YAML> sets)."""
    code: dict[str, Any]
    """Setting letter -> the value under fidelity=code (the authors' code)."""
    paper_text: str
    """What the paper says."""
    code_text: str
    """What the authors' code does (path:line in YixuanEvenXu/pods at 187f43b)."""
    effect: str
    """How it moves results."""
    trl: dict[str, Any] = field(default_factory=dict)
    """GRPOConfig field -> {value: expected field value} checks (tests), e.g. {"top_k": {50: 50}}."""


def _all(value: Any, letters: tuple[str, ...] = PAPER_LETTERS) -> dict[str, Any]:
    return {k: value for k in letters}


DEPARTURES: tuple[Departure, ...] = (
    # ---------------------------------------------------------------- (a)-(d), single GPU
    Departure(
        "4-bit (QLoRA) base weights",
        "policy.load_in_4bit",
        _all(False, SINGLE_GPU),
        _all(True, SINGLE_GPU),
        'Table 1: "LoRA"',
        "`config/train.yaml:6` load_in_4bit: true (Unsloth, NF4)",
        "quantisation noise in policy and reference; different per-step time (s/step, time-to-peak)",
    ),
    Departure(
        "optimizer",
        "optim.optimizer",
        _all("adamw_torch", SINGLE_GPU),
        _all("adamw_8bit", SINGLE_GPU),
        'Table 2: "AdamW"',
        "`config/train.yaml:39` adamw_8bit",
        "minor (8-bit moments)",
        {"optim": {"adamw_torch": "adamw_torch", "adamw_8bit": "adamw_8bit"}},
    ),
    Departure(
        "gradient-norm clip",
        "optim.max_grad_norm",
        _all(1.0, SINGLE_GPU),
        _all(0.1, SINGLE_GPU),
        "Table 2: 1.0",
        "`config/train.yaml:45` max_grad_norm: 0.1",
        "most LoRA steps are rescaled at 0.1: changes the relative weight of steps in Adam",
        {"max_grad_norm": {1.0: 1.0, 0.1: 0.1}},
    ),
    Departure(
        "log-probs at the sampling temperature",
        "optim.logprob_temperature",
        _all("sampling", SINGLE_GPU),
        _all("none", SINGLE_GPU),
        "silent (TRL divides the logits by T)",
        "`trainer/maxvargrpo_trainer.py:361-378`: log-softmax of the raw logits",
        "gradient direction and KL of (b) use softmax(z) instead of softmax(z/0.9)",
    ),
    Departure(
        "training reward",
        "task.reward",
        _all("paper", SINGLE_GPU),
        {"a": "code_jun25", "b": "code_sep24", "c": "code_jun25", "d": "code_jun25"},
        "App. A.1: accuracy + format + 0.25/tag (max 3)",
        "`utils/data.py`: correctness + small shaping for incorrect GSM8K answers (June release 3fc107e; "
        "the Llama runs: the 0.01-scale commit 0c453d2); correctness only for MATH (`MATH-NF`); the "
        "chemistry code is not released",
        "format terms dominate the within-group variance under the paper reward, so they decide what "
        "max-variance keeps; binary reward on MATH",
    ),
    Departure(
        "evaluation accuracy",
        "eval.metric",
        _all("paper", SINGLE_GPU),
        _all("code", SINGLE_GPU),
        "App. A.1: the reward's accuracy (answer block)",
        "`utils/eval.py:13-16,52-54` ans_acc: whole text, answer block or last number matches",
        "absolute accuracies higher under code (last-number fallback); moves the 0.99 x peak crossing",
    ),
    Departure(
        "MATH training gold",
        "task.math_gold",
        {"c": "balanced"},
        {"c": "code"},
        "silent",
        "`utils/data.py:147-153`: last `\\boxed{` up to the FIRST `}`",
        "answers with nested braces (`\\frac{a}{b}`) get an unmatchable gold: reward always 0",
    ),
    Departure(
        "vLLM importance-sampling correction",
        "rollout.vllm_is_correction",
        _all(False),
        _all(False),
        "none",
        "none (`maxvargrpo_trainer.py:580-588`); TRL 1.16 turns it on for vLLM",
        "same in both: an extra forward over all n rows (PODS 64 vs GRPO 16) and a per-sequence "
        "reweighting, which earlier package versions inherited from TRL",
        {"vllm_importance_sampling_correction": {False: False, True: True}},
    ),
    # ---------------------------------------------------------------- (e)-(f), 8 GPUs
    Departure(
        "top-k sampling (rollouts and evaluation)",
        "rollout.top_k",
        _all(0, MULTI_GPU),
        _all(50, MULTI_GPU),
        "silent",
        "TRL 1bca495 `grpo_config.py:244-245` top_k 50, passed to generation and `my_evaluate`",
        "top-50 truncation at T 0.9 removes tail tokens; usually slightly higher sampled accuracy",
        {"top_k": {0: 0, 50: 50}},
    ),
    Departure(
        "loss aggregation",
        "optim.aggregation",
        _all("sequence", MULTI_GPU),
        _all("token_group", MULTI_GPU),
        "§3.1: per-sequence mean",
        "`open-r1 grpo_trainer.py:1271-1274` bnpo: token mean per micro-batch, one prompt group per micro-batch",
        "long and short completions weighted differently: length dynamics (Fig. 10)",
        {"loss_type": {"sequence": "grpo", "token": "bnpo", "token_group": "bnpo"}},
    ),
    Departure(
        "max completion length (training)",
        "rollout.max_completion_length",
        _all(1536, MULTI_GPU),
        _all(1024, MULTI_GPU),
        "Table 2: max sequence 2048 = 512 + 1536",
        "`config_pods.yaml:33` max_completion_length 1024",
        "HF generate runs to the longest completion: step time up to 1.5x; truncation",
        {"max_completion_length": {1536: 1536, 1024: 1024}},
    ),
    Departure(
        "weight decay",
        "optim.weight_decay",
        _all(0.1, MULTI_GPU),
        _all(0.0, MULTI_GPU),
        "Table 2: 0.1",
        "`config_pods.yaml`: unset, HF default 0.0",
        "negligible in 40 min at 2e-5",
        {"weight_decay": {0.1: 0.1, 0.0: 0.0}},
    ),
)
"""Every known departure the package can switch (docs/fidelity.md is rendered from it)."""


def letter_of_setting(setting: str) -> str | None:
    """The paper letter whose paper-scale experiment YAML is ``experiments/{setting}.yaml``; else None."""
    for letter, s in registry.SETTINGS.items():
        path = s.experiments.get("paper", "")
        if path.rsplit("/", 1)[-1].removesuffix(".yaml") == setting:
            return letter
    return None


def code_overrides(setting: str) -> list[str]:
    """``key=value`` overrides that turn a paper setting's YAML into the authors' code (fidelity=code)."""
    letter = letter_of_setting(setting)
    if letter is None:
        papers = ", ".join(s.experiments["paper"] for s in registry.SETTINGS.values() if "paper" in s.experiments)
        raise FidelityError(
            f"fidelity=code is defined for the paper settings only (setting {setting!r} is not one of {papers}); "
            "use fidelity=paper and set the individual options (docs/fidelity.md lists them)"
        )
    return [f"{d.option}={_yaml(d.code[letter])}" for d in DEPARTURES if letter in d.code]


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


# ------------------------------------------------------------------------------ LR schedule, (e)/(f)
def schedule_rows(n_train: int = GSM8K_TRAIN_PROMPTS) -> list[dict[str, Any]]:
    """(e)/(f) cosine horizon and warmup per main arm, as the authors' code counts one epoch.

    horizon = n_train // prompts_per_step // GA (prompts per process per epoch // GA, one prompt per
    process), warmup = ceil(warmup_ratio x horizon) (HF's rule for a ratio); the run stops at the horizon.
    """
    rows = []
    for letter in MULTI_GPU:
        for role, (ga, procs, ratio) in {"grpo_ga": (16, 8, 0.1), "pods": (4, 8, 0.1)}.items():
            horizon = n_train // procs // ga
            rows.append(
                {
                    "setting": letter,
                    "arm": role,
                    "grad_accum": ga,
                    "horizon": horizon,
                    "warmup": math.ceil(ratio * horizon),
                }
            )
    return rows


# ------------------------------------------------------------------------------ docs/fidelity.md
def _cell(values: dict[str, Any]) -> str:
    groups: dict[str, list[str]] = {}
    for letter, v in values.items():
        groups.setdefault(_yaml(v), []).append(letter)
    return "; ".join(f"{''.join(ls)}: `{v}`" for v, ls in groups.items())


def render_table() -> str:
    head = (
        "| topic | option | paper says | authors' code | `fidelity=paper` | `fidelity=code` | how it moves results "
        "|\n|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for d in DEPARTURES:
        cells = [d.topic, f"`{d.option}`", d.paper_text, d.code_text, _cell(d.paper), _cell(d.code), d.effect]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return head + "\n".join(lines) + "\n"


def render_schedule() -> str:
    head = "| setting | arm | GA | horizon (optimizer steps) | warmup steps |\n|---|---|---|---|---|\n"
    return head + "".join(
        f"| {r['setting']} | {r['arm']} | {r['grad_accum']} | {r['horizon']} | {r['warmup']} |\n"
        for r in schedule_rows()
    )


DOC_HEAD = """# Fidelity: the paper's text or the authors' code

<!-- Generated by `python -m pods_repro.config.fidelity > docs/fidelity.md` from pods_repro/config/fidelity.py; tests/config/test_fidelity.py
checks it is up to date. Edit the table in pods_repro/config/fidelity.py, not here. -->

The package follows the paper's text by default (`fidelity: paper`). `fidelity: code` (a top-level key
of the config, or the override `fidelity=code`) gives every known departure the value of the authors'
code (YixuanEvenXu/pods at 187f43b; the table gives the code's file:line, and
[docs/paper.md](paper.md#code-differences) the paper's side with its section numbers). It is
resolved when the config is loaded: the values below are applied after the experiment YAML and before
the command line's other overrides, so `config.json` shows them and any single option can still be
set on top. Each is also an option of its own.

    python -m pods_repro train experiments/a_gsm8k_qwen3b.yaml fidelity=code      # one run as the code ran it
    snakemake --config scale=paper fidelity=code                             # the 200 runs, in results/paper-code/

`fidelity=code` is defined for the paper settings (a)-(f) (the tiny analogues have no 4-bit kernels,
no GSM8K/MATH and no 8 GPUs); on a CPU machine the 4-bit base and 8-bit AdamW of (a)-(d) are refused
at validation (`python -m pods_repro validate ... --paper` checks a GPU config here).

## Departures

"""

DOC_SCHEDULE = """
## Not switched: both values follow the code

- **No forward over discarded rollouts.** The reference log-probs of (b) (and, with
  `rollout.vllm_is_correction=true`, the old log-probs and the importance-sampling ratio) are computed
  on the m kept rollouts per group only, after down-sampling, as the authors' code computed them; TRL
  1.16 would compute them on all n (64 rows for PODS against 16 for GRPO). The importance-sampling
  correction itself is off in both (the row above).
- **(e)/(f) learning-rate schedule.** Both sources say cosine with warmup ratio 0.1; the paper does not
  say over how many steps. The authors' code decays over one epoch as HF and its sampler count it
  (`num_train_epochs: 1`, `config_pods.yaml:31,34,36,55`): HF sets max_steps = len(dataloader) // GA,
  and the sampler yields one prompt per process per dataloader batch (`grpo_trainer.py:771-779`), so
  one epoch is (GSM8K's 7,473 training prompts // 8 processes) // GA optimizer steps; each optimizer
  step consumes GA batches but generates from the first only. The package derives the horizon the same
  way (`pods_repro.trainer.step_plan`: n_train // prompts_per_step // grad_accum; warmup = ceil(0.1 x
  horizon), HF's rule) and stops there, under both switch values.

"""

DOC_TAIL = """
## Known departures that no switch changes

- Grader: the code_* rewards and `eval.metric=code` use the package's normaliser (plus math-verify on
  the answer block) in place of the authors' TURN `grade_answer`: a superset of what
  TURN accepts.
- Answer pattern: `eval.metric=code` takes the last number with the pattern of the authors' newest code
  (`[\\d.,]+`, ASCII digits), while the released Qwen GSM8K, sweep, rule and MATH result files were
  most likely graded with the first release's `\\d+` (the Llama files with the newer one), so it is close
  to, not exactly, the grading behind those curves ([docs/paper.md](paper.md#answer-patterns)).
- Seeds: the authors' single-GPU runs appear to set no per-run seed (no seed key in their config, none
  passed to the trainer: every run gets the same default seed, LoRA initialisation and data order), so
  their ten runs per configuration differ mainly through non-deterministic GPU computation, and their
  spread may understate the spread over independent seeds. The package runs (a)-(d) on seeds 0-9, which
  change data order, initialisation and sampling; (e)/(f) on the authors' own seeds
  ([docs/paper.md](paper.md#seeds)). No seed can reproduce the authors' RNG streams.
- (a)-(d) evaluation model: the authors merged each LoRA checkpoint in fp16, reloaded it in 4-bit and
  sampled with vLLM; the package evaluates the training policy as it is.
- Wall clock: the package sums step durations (no set-up, evaluation, logging, checkpoints); the
  authors' (e)/(f) clock starts at trainer construction.
- Ties in max-variance selection go to another of several equal-reward rollouts (same kept reward
  multiset); prompts over 512 tokens are dropped rather than left-truncated;
  vLLM weight sync and reward cost differ in size.

## The released (e)/(f) step counter

The (e)/(f) logs are wandb exports, and their `_step` column counts `wandb.log` calls, not optimizer
steps. At the authors' pinned code every optimizer step logs 3 x GA + 5 times (three profiling timers per
micro-step; then each of the three reward functions, the trainer's metrics and the completions table)
and every timed evaluation 4 x B + 1 times (per evaluation batch the inputs and the three reward
functions; then the evaluation itself), so evaluation j after optimizer
step N is logged at `_step` = N (3 GA + 5) + j (4 B + 1) - 2, and every evaluation row of the release
comes out as a whole number of optimizer steps. The package reads the optimizer steps that way
(`pods_repro/analysis/released.py`, `optimizer_steps`; a row that does not fit the pattern is an input error).

The paper's Fig. 3(e)/(f) seconds-per-step bars divide the training time by `_step` / GA (the authors'
`scripts/plot-h100s.py`), which counts logging calls as steps. Consequences:

- the bars are smaller than the seconds per optimizer step, by more than the (3 x GA + 5) / GA of the
  training logs alone, because each evaluation also logs into `_step` (4 x B + 1 calls): the released runs'
  seconds per optimizer step over the bars are 76.92 / 21.85 = 3.5 (GRPO-GA) and 48.13 / 10.09 = 4.8 (PODS)
  in (e), 243.24 / 39.82 = 6.1 and 145.16 / 9.50 = 15.3 in (f); the bars cannot be compared with this
  package's `s_per_step` (`summary.json`, optimizer steps);
- the bars' GRPO-GA/PODS ratio is biased by the arms' different GA;
- with steps that long, the authors' runs spent a larger share of their 40 minutes in the warmup of the
  schedule above.

The released runs' seconds per optimizer step, and their speed-ups read per optimizer step, are on
[docs/results.md](results.md).

## The released (e)/(f) test accuracies

The (e)/(f) evaluations split GSM8K's test set over the 8 processes in equal batches, padding it with
repeated items: on the H100s ((e), 256 examples per process) the 1,319 test items fill 2,048 slots, so 729
items count twice in every (e) accuracy; on the A100s ((f), B = 11 batches of 16) 1,408 slots hold 89 items
twice. The released (e)/(f) accuracies are therefore weighted test accuracies, not plain GSM8K test accuracy.
Speed-ups are unaffected (both arms of a setting share the weighting); comparisons of these accuracies with
other runs' are not.
"""


def render_markdown() -> str:
    """The whole docs/fidelity.md."""
    return DOC_HEAD + render_table() + DOC_SCHEDULE + render_schedule() + DOC_TAIL


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
