"""Two CPU processes select the same rollouts and give the same advantages as one.

The same small GA run (2 prompts per step, GA = 2 groups of n per prompt, m < n) is trained once in
one process and once under ``accelerate launch --num_processes 2`` (experiments/accelerate/
cpu_2proc.yaml). With $PODS_DEBUG_DUMP set, every process writes, per generation round, the rewards
it gathered from all processes, the selection and advantages it computed, and the rows it kept.

Checked: on every step each rank gathered the same rewards and took the same per-group decisions; each
rank kept exactly its own groups' rows; and the first round (identical weights) matches the
one-process run rollout for rollout: same rewards, same kept indices, same advantages, and the same
base-model evaluation (sharded over the two ranks). After the first update the two runs' weights
agree only to rounding (gradients are all-reduced in a different order), so later rollouts may differ.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import one_per_key

import pods.trainer as pt
import pods_repro.evaluation as pe
from pods.selectors import select
from pods_repro.run import train
from pods_repro.runlog import read_jsonl

REPO = Path(__file__).resolve().parents[2]
ACCEL = REPO / "experiments" / "accelerate" / "cpu_2proc.yaml"
GA_RUN = (
    "rollout.prompts_per_step=2",
    "rollout.n=4",
    "rollout.m=2",
    "optim.grad_accum=2",
    "budget.max_steps=2",
    "eval.every_steps=2",
    "eval.max_examples=4",
    "checkpoint.every_steps=10",
)
EVAL_ROWS = "2"  # two prompts per evaluation batch: the 4 examples split over both ranks


def _dump(path: Path, rank: int) -> list[dict]:
    return [json.loads(x) for x in (path / f"selection_rank{rank}.jsonl").read_text().splitlines()]


@pytest.mark.skipif(
    shutil.which("accelerate") is None and not (Path(sys.executable).parent / "accelerate").exists(),
    reason="accelerate CLI not installed",
)
def test_two_processes_select_like_one(tiny_overrides, tiny_cfg, tmp_path, monkeypatch):
    one_dump, two_dump = tmp_path / "dump1", tmp_path / "dump2"
    # one process, in-process
    monkeypatch.setenv(pt.DEBUG_ENV, str(one_dump))
    monkeypatch.setattr(pe, "EVAL_BATCH_ROWS", int(EVAL_ROWS))
    one = train(tiny_cfg(tmp_path / "one", *GA_RUN))
    # two processes
    accel = shutil.which("accelerate") or str(Path(sys.executable).parent / "accelerate")
    env = {
        **os.environ,
        pt.DEBUG_ENV: str(two_dump),
        "PODS_EVAL_BATCH_ROWS": EVAL_ROWS,
        "PODS_NO_PROGRESS": "1",
        "OMP_NUM_THREADS": "1",
    }
    cmd = [
        accel,
        "launch",
        "--config_file",
        str(ACCEL),
        "-m",
        "pods_repro",
        "train",
        "experiments/tiny_a.yaml",
        *one_per_key(*tiny_overrides, *GA_RUN, "hardware.num_processes=2", f"out_dir={tmp_path / 'two'}"),
    ]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    two = tmp_path / "two"
    assert (two / "summary.json").exists()

    d1 = _dump(one_dump, 0)
    r0, r1 = _dump(two_dump, 0), _dump(two_dump, 1)
    assert len(d1) == len(r0) == len(r1) == 2  # one generation round per optimizer step
    for a, b in zip(r0, r1, strict=True):
        # every rank gathered the same rewards and took the same per-group decisions
        for key in ("step", "rewards_G_N", "keep_G_M", "adv_G_M"):
            assert a[key] == b[key], key
        assert (a["num_processes"], b["process_index"]) == (2, 1)
        rewards_G_N = torch.tensor(a["rewards_G_N"], dtype=torch.float64)
        assert rewards_G_N.shape == (2 * 2, 4)  # 2 prompts x GA 2 groups, n = 4
        assert select(rewards_G_N, 2).tolist() == a["keep_G_M"]
        # each rank holds whole prompts (GA groups of the same prompt) and keeps its own groups' rows
        for r in (a, b):
            assert r["local_groups"] == 2
            assert r["group_offset"] == 2 * r["process_index"]
            adv = torch.tensor(r["adv_G_M"])[r["group_offset"] : r["group_offset"] + 2].reshape(-1)
            torch.testing.assert_close(torch.tensor(r["local_advantages"]), adv.float())
    # first round: identical to the single process, rollout for rollout
    first1, (first_r0, first_r1) = d1[0], (r0[0], r1[0])
    assert first1["rewards_G_N"] == first_r0["rewards_G_N"]
    assert first1["keep_G_M"] == first_r0["keep_G_M"]
    torch.testing.assert_close(torch.tensor(first1["adv_G_M"]), torch.tensor(first_r0["adv_G_M"]))
    assert first1["local_completion_sha"] == first_r0["local_completion_sha"] + first_r1["local_completion_sha"]
    torch.testing.assert_close(
        torch.tensor(first1["local_advantages"]),
        torch.tensor(first_r0["local_advantages"] + first_r1["local_advantages"]),
    )
    # logs: same steps and evaluations; the base-model evaluation (sharded over ranks) is identical
    m1, m2 = read_jsonl(one / "metrics.jsonl"), read_jsonl(two / "metrics.jsonl")
    assert [r["step"] for r in m1] == [r["step"] for r in m2] == [1, 2]
    assert m1[0]["reward_mean"] == pytest.approx(m2[0]["reward_mean"])
    assert m1[0]["kept_reward_mean"] == pytest.approx(m2[0]["kept_reward_mean"])
    e1, e2 = read_jsonl(one / "eval.jsonl"), read_jsonl(two / "eval.jsonl")
    assert [e["step"] for e in e1] == [e["step"] for e in e2] == [0, 2]
    assert e1[0]["accuracy"] == e2[0]["accuracy"]
    assert e1[0]["completion_len_mean"] == e2[0]["completion_len_mean"]
