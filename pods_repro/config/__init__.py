"""Typed run configuration: nested frozen dataclasses, YAML + dotted overrides, validation.

The details: docs/design.md, "Module notes" (`pods_repro/config/__init__.py`).
"""

from __future__ import annotations

from pathlib import Path

from pods_repro import registry
from pods_repro.config.base import _NO_VALUE as _NO_VALUE
from pods_repro.config.base import ConfigError
from pods_repro.config.base import _closest_hint as _closest_hint
from pods_repro.config.base import _coerce as _coerce
from pods_repro.config.base import _show as _show
from pods_repro.config.base import field_types as field_types
from pods_repro.config.base import get_key as get_key
from pods_repro.config.help import _field_docs as _field_docs
from pods_repro.config.help import describe_keys, format_keys
from pods_repro.config.load import (
    Machine,
    apply_overrides,
    from_dict,
    load_config,
    resolve_fidelity,
    to_dict,
    validate,
)
from pods_repro.config.load import _build as _build
from pods_repro.config.load import all_keys as all_keys
from pods_repro.config.load import read_yaml as read_yaml
from pods_repro.config.names import NAME_EXCLUDED as NAME_EXCLUDED
from pods_repro.config.names import NAME_HEAD as NAME_HEAD
from pods_repro.config.names import default_run_dir, parse_run_name, resolve_run_dir, run_name
from pods_repro.config.names import format_value as format_value
from pods_repro.config.schema import AGGREGATIONS as AGGREGATIONS
from pods_repro.config.schema import ATTENTION as ATTENTION
from pods_repro.config.schema import BACKENDS as BACKENDS
from pods_repro.config.schema import DEVICES as DEVICES
from pods_repro.config.schema import DTYPES as DTYPES
from pods_repro.config.schema import EVAL_ONLY_TASKS as EVAL_ONLY_TASKS
from pods_repro.config.schema import GPU_ATTENTION as GPU_ATTENTION
from pods_repro.config.schema import NORMALIZE as NORMALIZE
from pods_repro.config.schema import OPTIMIZERS as OPTIMIZERS
from pods_repro.config.schema import RULES as RULES
from pods_repro.config.schema import SCHEDULERS as SCHEDULERS
from pods_repro.config.schema import (
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
from pods_repro.config.trl import TRL_CONTROLLED, TRL_FIXED
from pods_repro.config.trl import TRL_OPEN as TRL_OPEN
from pods_repro.config.trl import check_trl_keys as check_trl_keys
from pods_repro.config.trl import check_trl_section as check_trl_section
from pods_repro.registry import NAME_VOCAB

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
