"""From YAML and ``key=value`` overrides to a checked :class:`~pods_repro.config.schema.TrainConfig`.

Dicts to configs and back (:func:`from_dict`, :func:`to_dict`, :func:`apply_overrides`, with a
"did you mean" for unknown keys), YAML reading (:func:`read_yaml`: duplicate keys refused), the
``fidelity`` resolution (:func:`resolve_fidelity`), :func:`load_config`, and the checks against the
environment (:func:`validate`: local files, the policy spec, the accelerate config and the
:class:`Machine`). The overview is :mod:`pods_repro.config`'s docstring.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml

from pods_repro import registry
from pods_repro.config.base import _NO_VALUE, ConfigError, _closest_hint, field_types, get_key
from pods_repro.config.schema import GPU_ATTENTION, TrainConfig
from pods_repro.config.trl import check_trl_section

# ----------------------------------------------------------------------------------------------
# Building, dumping, overrides

# Common names from TRL / the authors' Hydra config, so a user coming from them is pointed home.
_ALIASES = {
    "learning_rate": "optim.lr",
    "lr": "optim.lr",
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

# Names that mean different things in the sources a user may come from: refused naming each meaning.
_AMBIGUOUS = {
    "num_generations": (
        "it is ambiguous: TRL's GRPOConfig and PODSGRPOTrainer mean n by it (rollouts generated per prompt: "
        "write rollout.n=...), the authors' multi-GPU code means m (rollouts kept for the update: rollout.m=...)"
    ),
}


def all_keys(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    keys = []
    hints = field_types(cls)
    for f in fields(cls):
        keys.append(prefix + f.name)
        if is_dataclass(hints[f.name]):
            keys.extend(all_keys(hints[f.name], prefix + f.name + "."))
    return keys


def _unknown_key(key: str, cls: type, prefix: str) -> ConfigError:
    leaf = key.rsplit(".", 1)[-1]
    everything = all_keys()
    here = [prefix + f.name for f in fields(cls)]
    # A known synonym (TRL / the authors' Hydra names) first, then a close spelling here or anywhere,
    # then the right name in the wrong section ("n=64" for "rollout.n=64").
    guess = [_ALIASES[leaf]] if leaf in _ALIASES else []
    guess = guess or difflib.get_close_matches(key, here, n=1, cutoff=0.6)
    guess = guess or difflib.get_close_matches(key, everything, n=1, cutoff=0.75)
    guess = guess or [k for k in everything if k.rsplit(".", 1)[-1] == leaf and k != key][:1]
    fix = f"did you mean {guess[0]}?" if guess else f"valid keys here: {', '.join(here)}"
    if leaf in _AMBIGUOUS:
        fix = _AMBIGUOUS[leaf]
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
    hints = field_types(cls)
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


def load_config(
    path: str | os.PathLike, overrides: Iterable[str] = (), *, check_machine: bool = True, environment: bool = True
) -> TrainConfig:
    """Read a YAML config, apply dotted overrides, and run every check (:func:`validate`).

    check_machine=False skips the checks against this machine (GPU-only options, bf16 on CPU), so a
    GPU config can be validated on a laptop; everything else is still checked. environment=False skips
    :func:`validate` and the `trl:` check altogether (the structure and value checks still run): what the
    records need to fingerprint a run, without torch, TRL or the models.
    """
    raw = read_yaml(path)
    cfg = from_dict(resolve_fidelity(raw, list(overrides)))
    if environment:
        validate(cfg, check_machine=check_machine)
        check_trl_section(cfg)
    return cfg


def resolve_fidelity(raw: Mapping[str, Any], overrides: list[str]) -> dict[str, Any]:
    """YAML dict + overrides, with ``fidelity: code`` resolved (pods_repro.config.fidelity): the YAML, then the code's
    values of the setting, then the command line's overrides (so a single option can still be set on top)."""
    d = apply_overrides(raw, overrides)
    if d.get("fidelity", "paper") != "code":
        return d
    from pods_repro.config.fidelity import FidelityError, code_overrides

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
                get_key(cfg, key),
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
    """The policy spec resolves without downloading (pods_repro.models.describe_policy) and fits the prompts."""
    from pods_repro import models  # imports torch: only reached once the cheap checks passed

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
        # pods_repro.data would fail at load time: the tiny tokenizer has no chat template.
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
