"""Typed run configuration: nested frozen dataclasses, YAML + dotted overrides, validation.

One YAML file in ``experiments/`` holds everything a run needs; its sections map one to one onto the
dataclasses of :mod:`pods.config.schema` (docs/design.md, "Config schema"). Load it with overrides::

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
  code runs GRPO, docs/paper.md#other-rules) or ``all``: every rule keeps all rollouts then, so another rule name
  would only give the same run a second name. ``rollout.normalize=before`` with ``n == m`` is rejected
  for the same reason (before and after are identical).
- ``rollout.prompts_per_step`` counts prompt groups over *all* processes and must be divisible by
  ``hardware.num_processes``: each process holds whole prompt groups, so selection and advantages
  stay per group without communication (one prompt per GPU in settings (e)-(f): docs/paper.md#code-differences).
- ``eval.every_steps``, when set, replaces the time grid ``eval.every_s``; ``budget.max_time_s`` and
  ``budget.max_steps`` may both be set (the run stops at whichever comes first), but not both null.

Run names (:func:`run_name`, ``sel~{rule}_n~{n}_m~{m}[_{extra}]``) and their vocabulary: see
:mod:`pods.config.names`, which owns them.

Additions to the docs/design.md schema: ``policy.load_in_4bit`` (the authors' code loads 4-bit base weights,
the paper says only "LoRA"), ``optim.scheduler_steps`` (the horizon of cosine/linear decay; the
multi-GPU code decays over one epoch) and ``hardware.accelerate_config`` (the ``accelerate launch``
file a run is meant for, cross-checked against ``hardware.num_processes``).

Fidelity (docs/fidelity.md): the top-level ``fidelity: paper | code`` is resolved by
:func:`load_config` (:func:`resolve_fidelity`): with ``code`` the values of :mod:`pods.config.fidelity`'s table
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

Modules, by job (this one re-exports every name callers use, so ``from pods.config import X`` keeps
working): :mod:`pods.config.base` (:class:`ConfigError`, field type coercion), :mod:`pods.config.schema`
(the section dataclasses and their checks), :mod:`pods.config.trl` (the ``trl:`` tables),
:mod:`pods.config.load` (dicts, overrides, YAML, fidelity, :func:`load_config`, :func:`validate` and the
machine checks), :mod:`pods.config.names` (run names and directories), :mod:`pods.config.help` (the key
listing).
"""

from __future__ import annotations

from pathlib import Path

from pods import registry
from pods.config.base import _NO_VALUE as _NO_VALUE
from pods.config.base import ConfigError
from pods.config.base import _closest_hint as _closest_hint
from pods.config.base import _coerce as _coerce
from pods.config.base import _show as _show
from pods.config.base import field_types as field_types
from pods.config.base import get_key as get_key
from pods.config.help import _field_docs as _field_docs
from pods.config.help import describe_keys, format_keys
from pods.config.load import (
    Machine,
    apply_overrides,
    from_dict,
    load_config,
    resolve_fidelity,
    to_dict,
    validate,
)
from pods.config.load import _build as _build
from pods.config.load import all_keys as all_keys
from pods.config.load import read_yaml as read_yaml
from pods.config.names import NAME_EXCLUDED as NAME_EXCLUDED
from pods.config.names import NAME_HEAD as NAME_HEAD
from pods.config.names import default_run_dir, parse_run_name, resolve_run_dir, run_name
from pods.config.names import format_value as format_value
from pods.config.schema import AGGREGATIONS as AGGREGATIONS
from pods.config.schema import ATTENTION as ATTENTION
from pods.config.schema import BACKENDS as BACKENDS
from pods.config.schema import DEVICES as DEVICES
from pods.config.schema import DTYPES as DTYPES
from pods.config.schema import EVAL_ONLY_TASKS as EVAL_ONLY_TASKS
from pods.config.schema import GPU_ATTENTION as GPU_ATTENTION
from pods.config.schema import NORMALIZE as NORMALIZE
from pods.config.schema import OPTIMIZERS as OPTIMIZERS
from pods.config.schema import RULES as RULES
from pods.config.schema import SCHEDULERS as SCHEDULERS
from pods.config.schema import (
    BudgetConfig,
    CheckpointConfig,
    EvalConfig,
    HardwareConfig,
    LoraConfig,
    OptimConfig,
    PolicyConfig,
    RolloutConfig,
    TaskConfig,
    TrainConfig,
)
from pods.config.trl import TRL_CONTROLLED, TRL_FIXED
from pods.config.trl import TRL_OPEN as TRL_OPEN
from pods.config.trl import check_trl_keys as check_trl_keys
from pods.config.trl import check_trl_section as check_trl_section
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

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS_DIR = registry.repo_file("experiments")  # the checkout's, or the copy shipped in the package
