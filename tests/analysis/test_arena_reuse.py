"""The arena's ``reuse`` condition exercises the filters: short real runs of its PODS arms, where the GRESO-style
skip, the zero-variance filter and the refill each fire and change what PODS would have trained on.

Slow (about 2 CPU minutes): four runs of 110 steps of the tiny model, one seed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pods_repro.arena import load_arena

REPO = Path(__file__).resolve().parents[2]
STEPS = 110  # past the first epoch of the 100-prompt pool (2 a step): prompts come back
FIRES = {"pods_greso": "skipped_prompts", "pods_zero_std": "trained_rollouts", "pods_refill": "refill_rounds"}


def _train(grid, condition: str, arm: str, out: Path) -> list[dict]:
    over = [
        o if not o.startswith(("budget.max_steps=", "eval.every_steps=")) else o.split("=")[0] + f"={STEPS}"
        for o in grid.run_overrides(condition, arm)
    ]
    cmd = [sys.executable, "-m", "pods_repro", "train", grid.experiment, "seed=0", f"out_dir={out}", *over]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-2000:]
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_each_filter_fires_and_changes_the_update_in_the_reuse_condition(tmp_path):
    grid = load_arena("full")
    pods = _train(grid, "reuse", "pods", tmp_path / "pods")
    rows = 16 * 2  # m x prompts per step
    for arm, column in FIRES.items():
        mine = _train(grid, "reuse", arm, tmp_path / arm)
        if column == "trained_rollouts":  # the filter fired where fewer rows than m a prompt were trained
            fired = sum(r[column] < rows for r in mine)
        else:
            fired = sum((r[column] or 0) > 0 for r in mine)
        assert fired > 0, (arm, column)
        # a changed update (or prompt) shows in the rewards of a later step
        assert [r["reward_mean"] for r in mine] != [r["reward_mean"] for r in pods], arm
