"""Run names and run directories of a config.

Run names (:func:`run_name`): ``sel~{rule}_n~{n}_m~{m}[_{extra}]`` where ``extra`` lists, in the fixed
order of :data:`NAME_VOCAB`, ``short~value`` for every field that differs from the setting's own YAML
(``experiments/{setting}.yaml``; the schema defaults when there is none). So the PODS and GRPO arms of
setting (a) are ``sel~max_variance_n~64_m~16`` and ``sel~max_variance_n~16_m~16``, and an override
``optim.lr=1e-6`` adds ``_lr~1e-6``. Fields that do not change what is learned (``seed``, ``out_dir``,
``hardware.*``, ``checkpoint.*``, gradient checkpointing, attention kernel, vLLM memory share, the budget
unless ``budget.max_steps`` is a decaying schedule's horizon) are left out, so ``budget.max_steps=30`` after
``=20`` continues the same run directory. Values: floats in shortest round-trip form without exponent padding (``1e-6``, ``0.04``,
``21600``), booleans ``true``/``false``, lists joined by ``+``, characters outside ``[A-Za-z0-9._+-]``
replaced by ``-``. :func:`parse_run_name` reads a name back into ``{short: value}``.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

from pods_repro import registry
from pods_repro.config.base import get_key
from pods_repro.config.load import from_dict, read_yaml, resolve_fidelity
from pods_repro.config.schema import TrainConfig
from pods_repro.registry import NAME_VOCAB

# ----------------------------------------------------------------------------------------------
# Run names and directories

# Short names of run-name fields: pods_repro.registry.NAME_VOCAB (the sheet's `extra` column uses them too).
NAME_HEAD = ("rollout.rule", "rollout.n", "rollout.m")
NAME_EXCLUDED = (
    "setting",
    "fidelity",  # a bundle: its resolved values name the run against the setting's YAML at the same fidelity
    "seed",
    "out_dir",
    "policy.gradient_checkpointing",
    "policy.attn_implementation",
    "rollout.vllm_gpu_memory_utilization",
    "rollout.fast_decode",  # how rollouts are computed, not which (token-identical to generate)
    "checkpoint.every_steps",
    "hardware.device",
    "hardware.num_processes",
    "hardware.accelerate_config",
    "hardware.threads",
    "trl",
)


def format_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value).removesuffix(".0")  # shortest round-trip form: 1e-06, 0.04, 21600.0
        return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m[1] == "-" else "") + m[2], text)
    if isinstance(value, tuple | list):
        return "+".join(format_value(v) for v in value)
    return re.sub(r"[^A-Za-z0-9._+-]", "-", str(value))


@functools.cache
def _setting_base(path: Path, mtime: float, fidelity: str = "paper") -> TrainConfig:
    return from_dict(resolve_fidelity(read_yaml(path), [f"fidelity={fidelity}"]))


def _base_for(cfg: TrainConfig) -> TrainConfig:
    # experiments/{setting}.yaml of the checkout, else the copy shipped in the installed package
    # (pods_repro.registry.repo_file), so run names are the same short names with or without a checkout;
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
    continues = _continuing_keys(cfg)
    for key, short in NAME_VOCAB.items():
        if key in continues:
            continue
        value = get_key(cfg, key)
        if value != get_key(base, key):
            parts.append(f"{short}~{format_value(value)}")
    return registry.format_run_name(format_value(r.rule), r.n, r.m, parts)


def _continuing_keys(cfg: TrainConfig) -> tuple[str, ...]:
    """The budget keys that do not make another run (pods_repro.config.fingerprint leaves them out): a longer budget
    continues the shorter one's run in its directory. ``budget.max_steps`` names the run when it is the
    learning-rate schedule's horizon (a decaying scheduler without ``optim.scheduler_steps``)."""
    horizon = cfg.optim.scheduler != "constant" and cfg.optim.scheduler_steps is None
    return ("budget.max_time_s",) if horizon else ("budget.max_time_s", "budget.max_steps")


_NAME_SPLIT = re.compile(r"_(?=[A-Za-z][A-Za-z0-9]*~)")


def parse_run_name(name: str) -> dict[str, str]:
    """Inverse of :func:`run_name` on the text level: ``{"sel": "max_variance", "n": "64", ...}``."""
    out = {}
    for part in _NAME_SPLIT.split(name):
        short, sep, value = part.partition("~")
        if not sep:
            raise ValueError(
                f"run name part {part!r} of {name!r} is not short~value; names come from pods_repro.config.run_name"
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
