"""The selection arena's grid: conditions x arms x seeds, from config/arena.yaml and its sheet config/runs_arena.tsv.

Torch-free: the workflow (rules/arena.smk) and the analysis (pods_repro.analysis.arena) read it. A run is one arm
(a row of the sheet: rule, n, m, extra overrides) under one condition (a list of overrides, e.g.
``task.reward_noise=0.1``) and one seed of the scale; it trains ``experiment`` with the arena's overrides, the
scale's step budget and evaluation grid, then the arm's and the condition's overrides::

    from pods_repro.arena import load_arena
    grid = load_arena("pilot")
    for run in grid.runs():
        print(run.folder, run.overrides)    # base/grpo/seed~0 ['eval.datasets=[arith]', ...]

Errors are :class:`ArenaError`, one line that names the file and says how to fix it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import yaml

from pods_repro import registry

__all__ = ["ArenaError", "ArenaGrid", "ArenaRun", "Arm", "load_arena", "ARENA_CONFIG", "REFERENCES"]

ARENA_CONFIG = "config/arena.yaml"
REFERENCES = ("grpo", "pods")
"""The arms every other arm is compared with: vanilla GRPO (n = m = 16) and PODS max-variance (n = 64, m = 16)."""
SHEET_COLUMNS = ("arm", "rule", "n", "m", "extra", "note")


class ArenaError(ValueError):
    """A bad arena config or sheet; the message names the file and the fix."""


@dataclass(frozen=True)
class Arm:
    name: str
    rule: str
    n: int
    m: int
    extra: tuple[str, ...]
    note: str

    def overrides(self) -> list[str]:
        return [f"rollout.rule={self.rule}", f"rollout.n={self.n}", f"rollout.m={self.m}", *self.extra]


@dataclass(frozen=True)
class ArenaRun:
    condition: str
    arm: str
    seed: int
    overrides: tuple[str, ...]

    @property
    def folder(self) -> str:
        return f"{self.condition}/{self.arm}/seed~{self.seed}"


@dataclass(frozen=True)
class ArenaGrid:
    scale: str
    root: str
    experiment: str
    seeds: tuple[int, ...]
    steps: int
    eval_every: int
    conditions: dict[str, tuple[str, ...]]  # the scale's conditions, in order
    arms: dict[str, Arm]  # the scale's arms, in sheet order
    common: tuple[str, ...]  # overrides of every run

    def run_overrides(self, condition: str, arm: str) -> tuple[str, ...]:
        if condition not in self.conditions:
            raise ArenaError(
                f"condition {condition!r} is not in the arena's {self.scale} scale ({', '.join(self.conditions)})"
            )
        if arm not in self.arms:
            raise ArenaError(f"arm {arm!r} is not in the arena's {self.scale} scale ({', '.join(self.arms)})")
        budget = (f"budget.max_steps={self.steps}", "budget.max_time_s=null", f"eval.every_steps={self.eval_every}")
        return (*self.common, *budget, *self.arms[arm].overrides(), *self.conditions[condition])

    def runs(self) -> list[ArenaRun]:
        return [
            ArenaRun(c, a, s, self.run_overrides(c, a)) for c in self.conditions for a in self.arms for s in self.seeds
        ]


def _read_sheet(path: Path) -> dict[str, Arm]:
    if not path.is_file():
        raise ArenaError(f"{path}: the arena's run sheet is missing; restore it (git checkout {path})")
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows or tuple(rows[0]) != SHEET_COLUMNS:
        raise ArenaError(f"{path}: the header must be the tab-separated columns {' '.join(SHEET_COLUMNS)}")
    arms: dict[str, Arm] = {}
    for line, row in enumerate(rows, start=2):
        name = row["arm"].strip()
        where = f"{path} line {line}"
        if not name.replace("_", "").isalnum():
            raise ArenaError(f"{where}: arm {name!r} must be a plain name (letters, digits, _)")
        if name in arms:
            raise ArenaError(f"{where}: arm {name!r} is listed twice; give each row its own name")
        try:
            n, m = int(row["n"]), int(row["m"])
        except ValueError:
            raise ArenaError(f"{where}: n={row['n']!r} and m={row['m']!r} must be whole numbers") from None
        try:
            registry.check_rule(row["rule"], n, m)
        except registry.RuleError as err:
            raise ArenaError(f"{where}: {err.key}: {err.problem}; fix: {err.fix}") from None
        extra = tuple(row["extra"].split())
        if any("=" not in item for item in extra):
            raise ArenaError(f"{where}: extra overrides are KEY=VALUE separated by spaces, got {row['extra']!r}")
        arms[name] = Arm(name, row["rule"], n, m, extra, row["note"])
    missing = [r for r in REFERENCES if r not in arms]
    if missing:
        raise ArenaError(f"{path}: the reference arm(s) {', '.join(missing)} are missing; every comparison needs them")
    return arms


def load_arena(scale: str = "full", config: str | Path | None = None) -> ArenaGrid:
    """The arena's grid at ``scale`` (a key of ``scales`` in config/arena.yaml)."""
    path = Path(config) if config is not None else registry.repo_file(ARENA_CONFIG)
    if not path.is_file():
        raise ArenaError(f"{path}: the arena config is missing; restore it (git checkout {ARENA_CONFIG})")
    cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    scales = cfg.get("scales") or {}
    if scale not in scales:
        raise ArenaError(f"{path}: no arena scale {scale!r}; choose one of {', '.join(scales)} (--config arena=NAME)")
    sc = scales[scale]
    arms = _read_sheet(registry.repo_file(cfg["sheet"]) if config is None else path.parent.parent / cfg["sheet"])
    wanted = list(arms) if sc.get("arms", "all") == "all" else list(sc["arms"])
    for name in wanted:
        if name not in arms:
            raise ArenaError(
                f"{path}: scales.{scale}.arms names {name!r}, which the sheet lacks; use {', '.join(arms)}"
            )
    for ref in REFERENCES:
        if ref not in wanted:
            raise ArenaError(f"{path}: scales.{scale}.arms must include the reference arm {ref!r}")
    conditions = cfg.get("conditions") or {}
    for name in sc["conditions"]:
        if name not in conditions:
            raise ArenaError(f"{path}: scales.{scale}.conditions names {name!r}; define it under conditions:")
    seeds = tuple(int(s) for s in sc["seeds"])
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise ArenaError(f"{path}: scales.{scale}.seeds must list at least 2 distinct seeds (an interval needs 2)")
    common = tuple(f"{k}={v}" for k, v in (cfg.get("overrides") or {}).items())
    return ArenaGrid(
        scale=scale,
        root=str(sc["root"]),
        experiment=str(cfg["experiment"]),
        seeds=seeds,
        steps=int(sc["steps"]),
        eval_every=int(sc["eval_every"]),
        conditions={c: tuple(conditions[c] or ()) for c in sc["conditions"]},
        arms={a: arms[a] for a in wanted},
        common=common,
    )
