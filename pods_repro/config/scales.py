"""The workflow's scales (config/config.yaml ``scales:``) and the trainer overrides of one of its runs.

A train job of the workflow (rules/train.smk) runs
``pods train {experiment} seed={seed} out_dir={root}/runs/{setting}/{run name}/seed~{seed} {overrides}``,
its overrides being the run sheet's (rule, n, m, ``extra``) and then the scale's: ``overrides``, the
setting's ``settings.{letter}.overrides``, and for the sweeps and ablations (sheet rows without a role)
``ablation_overrides``. :func:`run_overrides` computes that list; rules/common.smk calls it, and so does
``pods train CONFIG --scale NAME`` (:func:`workflow_overrides`), so one run outside Snakemake is the
workflow's run exactly: ``pods train tiny_a seed=0 --scale tiny`` trains what the workflow's job
``results/runs/a/sel~max_variance_n~64_m~16/seed~0`` trains, in the same directory.

Torch-free: the Snakefile imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pods_repro import registry

__all__ = ["load_scales", "override_value", "run_overrides", "scale_overrides", "workflow_overrides"]

WORKFLOW_CONFIG = "config/config.yaml"


def load_scales(path: str | Path | None = None) -> dict[str, Any]:
    """``scales:`` of the workflow's config (the checkout's config/config.yaml, or the copy in the package)."""
    import yaml

    p = Path(path) if path is not None else registry.repo_file(WORKFLOW_CONFIG)
    return (yaml.safe_load(p.read_text(encoding="utf-8")) or {}).get("scales") or {}


def override_value(value: Any) -> str:
    """A value in its YAML spelling, so that the trainer's YAML-typed parsing reads back the same value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def scale_overrides(scale: Mapping[str, Any], letter: str, ablation: bool) -> dict[str, Any]:
    """The scale's trainer overrides of a run of setting ``letter``: ``overrides``, then the setting's own,
    then, for the sweeps and ablations (``ablation``), ``ablation_overrides``."""
    settings = scale.get("settings") or {}
    part = {**(scale.get("overrides") or {}), **((settings.get(letter) or {}).get("overrides") or {})}
    if ablation:
        part.update(scale.get("ablation_overrides") or {})
    return part


def run_overrides(
    scale: Mapping[str, Any], arm: registry.Arm, fidelity: str = "paper", scale_name: str = ""
) -> list[str]:
    """``key=value`` overrides of a train job of ``arm``: fidelity, the sheet's, then the scale's.

    Raises ValueError when the scale sets a key that the sheet sets per arm."""
    sheet_part = arm.overrides
    scale_part = scale_overrides(scale, arm.setting, ablation=not arm.role)
    clash = sorted(set(sheet_part) & set(scale_part))
    if clash:
        raise ValueError(
            f"scales.{scale_name} overrides {clash}, which the run sheet sets per arm: "
            "remove them from the scale (hyperparameters belong to the sheet or experiments/*.yaml)"
        )
    fidelity_part = {} if fidelity == "paper" else {"fidelity": fidelity}
    return [f"{k}={override_value(v)}" for k, v in {**fidelity_part, **sheet_part, **scale_part}.items()]


_CONTINUES = ("budget.max_steps", "budget.max_time_s", "checkpoint.every_steps")


def _given(overrides: Sequence[str], key: str) -> bool:
    return any(item.partition("=")[0].strip() == key for item in overrides)


def workflow_overrides(config: str, overrides: Sequence[str], scale_name: str) -> tuple[list[str], str]:
    """The overrides that make ``pods train CONFIG OVERRIDES`` the workflow's run at scale ``scale_name``,
    and a line saying which run that is.

    CONFIG must be the experiment of a setting at that scale (``tiny_a`` for setting (a) at ``tiny``). The
    run sheet's arm is the one whose run name the command line's overrides give (none: the PODS arm,
    ``rollout.n=16 rollout.m=16``: the GRPO arm, ``rollout.rule=random``: that ablation, ...); the job's
    overrides come first and the command line's last, and ``out_dir`` is the workflow's run directory
    unless given. A command line that names no arm of the sheet gets the scale's overrides of the
    setting's main runs and a run directory named as the workflow names runs.
    """
    from pods_repro.config import ConfigError, load_config, run_name

    scales = load_scales()
    if scale_name not in scales:
        raise ConfigError(
            "--scale", scale_name, "is not a scale of config/config.yaml", f"use one of {', '.join(scales)}"
        )
    scale = scales[scale_name]
    stem = Path(config).name.removesuffix(".yaml").removesuffix(".yml")
    letters = [s.letter for s in registry.SETTINGS.values() if Path(s.experiments.get(scale_name, "")).stem == stem]
    if not letters:
        known = ", ".join(
            f"{Path(s.experiments[scale_name]).stem} ({s.letter})"
            for s in registry.SETTINGS.values()
            if scale_name in s.experiments
        )
        raise ConfigError(
            "config", config, f"is not the experiment of a setting at scale {scale_name}", f"use one of {known}"
        )
    letter = letters[0]
    sheet = registry.repo_file(scale["runs"])
    arms = [arm for arm in registry.read_sheet(sheet) if arm.setting == letter]
    user = list(overrides)
    # How far a run goes and how often it is saved do not make it another run: a longer budget continues the
    # workflow's run in its directory (pods_repro.config.fingerprint leaves the same keys out).
    same_run = [o for o in user if o.partition("=")[0].strip() not in _CONTINUES]
    probe = load_config(config, user, check_machine=False)
    fidelity = probe.fidelity
    root = scale["root"] if fidelity == "paper" else f"{scale['root']}-{fidelity}"
    seed = probe.seed
    for arm in arms:
        part = [f"{k}={override_value(v)}" for k, v in scale_overrides(scale, letter, not arm.role).items()]
        base = load_config(
            config, [*part, *(["fidelity=" + fidelity] if fidelity != "paper" else [])], check_machine=False
        )
        if run_name(load_config(config, [*part, *same_run], check_machine=False), base=base) != arm.run_name:
            continue
        out = [*run_overrides(scale, arm, fidelity, scale_name), *user]
        run_dir = f"{root}/runs/{letter}/{arm.run_name}/seed~{seed}"
        if not _given(user, "out_dir"):
            out.append(f"out_dir={run_dir}")
        kind = f"role {arm.role}" if arm.role else "a sweep/ablation arm"
        return (
            out,
            f"scale {scale_name}: the workflow's run {letter}/{arm.run_name}/seed~{seed} ({kind}, {sheet.name} line {arm.line})",
        )
    part = [f"{k}={override_value(v)}" for k, v in scale_overrides(scale, letter, False).items()]
    base = load_config(config, part, check_machine=False)
    cfg = load_config(config, [*part, *user], check_machine=False)
    name = run_name(cfg, base=base)
    out = [*part, *user]
    if not _given(user, "out_dir"):
        out.append(f"out_dir={root}/runs/{letter}/{name}/seed~{seed}")
    return out, (
        f"scale {scale_name}: {letter}/{name} is not a run of {sheet.name}; the scale's overrides of setting "
        f"({letter})'s main runs apply"
    )
