"""Interruption: SIGKILL a small ``python -m pods_repro train`` run, restart it, compare.

A resumed run must finish with complete, parseable logs, the same steps and evaluations as an
uninterrupted run and, on CPU with the same seed, identical rewards (and every other non-timing
field) per step. The short form (default test run) kills once, at a random moment after the first
checkpoint; the long form (``-m slow``) kills several times at random moments of the whole run,
before the first checkpoint and during evaluations included.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import one_per_key, strip_timing

from pods_repro.run import train
from pods_repro.runlog import STATE_FILE, read_jsonl

REPO = Path(__file__).resolve().parents[2]
RUN = ("budget.max_steps=6", "checkpoint.every_steps=1", "eval.every_steps=2", "eval.max_examples=2")


def _cmd(overrides: tuple[str, ...], out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pods_repro",
        "train",
        "experiments/tiny_a.yaml",
        *one_per_key(*overrides, f"out_dir={out}"),
    ]


def _start(overrides, out: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PODS_NO_PROGRESS": "1"}
    return subprocess.Popen(_cmd(overrides, out), cwd=REPO, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)


def _has_checkpoint(out: Path) -> bool:
    return any((d / STATE_FILE).exists() for d in (out / "checkpoints").glob("checkpoint-*"))


def _assert_same_run(out: Path, ref: Path) -> None:
    assert (out / "summary.json").exists()
    m, m_ref = read_jsonl(out / "metrics.jsonl"), read_jsonl(ref / "metrics.jsonl")  # strict: every line parses
    e, e_ref = read_jsonl(out / "eval.jsonl"), read_jsonl(ref / "eval.jsonl")
    assert [r["step"] for r in m] == [r["step"] for r in m_ref], "steps differ (missing or duplicated lines)"
    assert [(r["step"], r["dataset"]) for r in e] == [(r["step"], r["dataset"]) for r in e_ref]
    assert strip_timing(m) == strip_timing(m_ref), "per-step rewards/losses differ from the uninterrupted run"
    assert strip_timing(e) == strip_timing(e_ref)
    times = [r["time_s"] for r in m]
    assert times == sorted(times)


@pytest.fixture
def reference(tiny_overrides, tiny_cfg, tmp_path):
    """An uninterrupted run of the same config (in-process: same code path, no interpreter start-up)."""

    def make(extra: tuple[str, ...] = ()) -> tuple[tuple[str, ...], Path]:
        overrides = (*tiny_overrides, *RUN, *extra)
        ref = train(tiny_cfg(tmp_path / "ref", *RUN, *extra))
        return overrides, ref

    return make


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _kill_when(proc: subprocess.Popen, out: Path, steps_done: int | None, seconds: float | None) -> bool:
    """SIGKILL ``proc`` once ``steps_done`` metrics lines exist or ``seconds`` have passed; False if it ended first."""
    t0 = time.time()
    while proc.poll() is None and time.time() - t0 < 600:
        if steps_done is not None and _lines(out / "metrics.jsonl") >= steps_done:
            break
        if seconds is not None and time.time() - t0 >= seconds:
            break
        time.sleep(0.005)
    if proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return True


def _finish(overrides, out: Path) -> str:
    done = subprocess.run(
        _cmd(overrides, out),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PODS_NO_PROGRESS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def test_sigkill_after_a_checkpoint_then_resume(reference, tiny_cfg, tmp_path, capfd):
    overrides, ref = reference()
    out, log = tmp_path / "killed", tmp_path / "killed.log"
    rng = random.Random()
    # A random point after the first checkpoint: once step k (k = 2 .. 4 of 6) is logged, the
    # checkpoint of step k - 1 is complete; the kill then lands anywhere in step k + 1's work.
    k = rng.randint(2, 4)
    killed = _kill_when(_start(overrides, out, log), out, steps_done=k, seconds=None)
    assert killed, f"the run ended before step {k} could be interrupted:\n{log.read_text()[-2000:]}"
    assert not (out / "summary.json").exists()
    assert _has_checkpoint(out)
    capfd.readouterr()
    train(tiny_cfg(out, *RUN))  # the resume, in-process: ``pods train`` is ``train`` of the config
    stderr = capfd.readouterr().err
    assert "resuming" in stderr
    _assert_same_run(out, ref)
    # the tied lm_head is restored with the embedding it shares; transformers' warning would say it was lost
    assert "There were missing keys" not in stderr


def test_a_finished_run_continues_with_a_longer_budget(reference, tiny_cfg, tmp_path, capfd):
    """A finished run given a longer budget continues from its last checkpoint (as docs/reproduce.md says) and
    ends with the curves of one run of the longer budget; the closing off-grid evaluation of the shorter run
    (its step 3 is not on the grid of 2) is not left behind. In-process: ``pods train`` is ``train`` of the
    resolved config (the subprocess path is the kill tests')."""
    _, ref = reference()  # 6 steps, evaluations every 2
    out = tmp_path / "continued"
    train(tiny_cfg(out, *RUN, "budget.max_steps=3"))
    assert (out / "summary.json").exists()
    capfd.readouterr()
    train(tiny_cfg(out, *RUN))
    stderr = capfd.readouterr().err
    assert "resuming" in stderr, stderr[-2000:]
    assert "from step 3 (checkpoint-3)" in stderr
    _assert_same_run(out, ref)
    assert json.loads((out / "config.json").read_text())["budget"]["max_steps"] == 6
    train(tiny_cfg(out, *RUN))  # the same budget again: nothing to do
    assert "already finished" in capfd.readouterr().err
    train(tiny_cfg(out, *RUN, "budget.max_steps=3"))  # a shorter one: nothing to do either, and it says why
    assert "already finished (6 steps, more than budget.max_steps=3" in capfd.readouterr().err


def test_a_continued_run_keeps_no_off_grid_evaluation_of_the_other_sets(reference, tiny_cfg, tmp_path, capfd):
    """The other sets are evaluated every `eval.others_every`-th point and when the budget stops the run: the
    shorter run's stop (step 2, grid point 1) evaluated them off their coarser grid, which a run of the longer
    budget does not; a continued run does not keep those rows (the quickstart's 25 then 50 steps)."""
    sets = ("eval.datasets=[arith,arith_heldout]", "eval.others_every=2")
    _, ref = reference(sets)  # 6 steps: the other set at steps 0, 4 and 6 (the stop)
    out = tmp_path / "continued"
    train(tiny_cfg(out, *RUN, *sets, "budget.max_steps=2"))
    assert [r["step"] for r in read_jsonl(out / "eval.jsonl") if r["dataset"] == "arith_heldout"] == [0, 2]
    train(tiny_cfg(out, *RUN, *sets))
    assert [r["step"] for r in read_jsonl(out / "eval.jsonl") if r["dataset"] == "arith_heldout"] == [0, 4, 6]
    _assert_same_run(out, ref)


@pytest.mark.slow  # kill + resume and a longer budget are each in the fast tier; their combination here
def test_a_killed_run_continues_with_a_longer_budget(reference, tiny_cfg, tmp_path, capfd):
    """A run killed after a checkpoint, restarted with a longer budget, ends as one run of the longer budget."""
    overrides, ref = reference(("budget.max_steps=8",))
    out, log = tmp_path / "killed", tmp_path / "killed.log"
    short = (*overrides, "budget.max_steps=6")
    assert _kill_when(_start(short, out, log), out, steps_done=3, seconds=None), log.read_text()[-2000:]
    assert _has_checkpoint(out)
    assert not (out / "summary.json").exists()
    capfd.readouterr()
    train(tiny_cfg(out, *RUN, "budget.max_steps=8"))
    assert "resuming" in capfd.readouterr().err
    _assert_same_run(out, ref)


def test_a_changed_training_key_is_refused_naming_the_key(tiny_overrides, tiny_cfg, tmp_path, capsys):
    """Another training value (not the budget) in a run directory is refused by ``pods train`` (exit 2),
    naming the key and both values."""
    from pods_repro.cli import main

    out = tmp_path / "run"
    train(tiny_cfg(out, *RUN, "budget.max_steps=2"))
    capsys.readouterr()
    argv = ["train", str(REPO / "experiments" / "tiny_a.yaml"), *one_per_key(*tiny_overrides, *RUN, "budget.max_steps=4",
                                                              "rollout.m=2", f"out_dir={out}")]  # fmt: skip
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    assert "rollout.m 4 -> 2" in err, err[-2000:]
    assert "rollout.m=4" in err


def test_a_tied_head_is_not_reported_missing_but_an_untied_one_is():
    from transformers import LlamaConfig, LlamaForCausalLM

    from pods.trainer.hook import really_missing

    cfg = dict(vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2)
    tied = LlamaForCausalLM(LlamaConfig(**cfg, tie_word_embeddings=True))
    assert really_missing(tied, ["lm_head.weight"]) == []
    both = ["model.embed_tokens.weight", "lm_head.weight"]  # neither name loaded: both really missing
    assert really_missing(tied, both) == both
    untied = LlamaForCausalLM(LlamaConfig(**cfg, tie_word_embeddings=False))
    assert really_missing(untied, ["lm_head.weight", "model.norm.weight"]) == ["lm_head.weight", "model.norm.weight"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_at_random_points_many_times(reference, tmp_path, seed):
    """Several kills per run, at random times after start (start-up, t = 0 evaluation, steps,
    checkpoint writes) or right after a random step's log line."""
    overrides, ref = reference(("budget.max_steps=10", "eval.every_steps=3", "eval.max_examples=4"))
    out, log = tmp_path / "killed", tmp_path / "killed.log"
    rng = random.Random(seed)
    kills = 0
    for _ in range(6):
        if rng.random() < 0.5:
            killed = _kill_when(_start(overrides, out, log), out, None, seconds=rng.uniform(0.5, 10.0))
        else:
            killed = _kill_when(_start(overrides, out, log), out, rng.randint(1, 9), seconds=None)
        kills += killed
        if not killed:
            break
    if not kills:  # the whole run ended before the first random time (a fast machine): kill after a step
        shutil.rmtree(out)
        kills += _kill_when(_start(overrides, out, log), out, rng.randint(1, 9), seconds=None)
    if not (out / "summary.json").exists():
        _finish(overrides, out)
    assert kills >= 1
    _assert_same_run(out, ref)


def test_latest_checkpoint_skips_incomplete_ones(tmp_path):
    from pods_repro.runlog import atomic_write_json, latest_checkpoint

    root = tmp_path / "checkpoints"
    for step, complete in ((2, True), (4, True), (6, False)):  # 6: killed while saving
        (root / f"checkpoint-{step}").mkdir(parents=True)
        if complete:
            atomic_write_json(root / f"checkpoint-{step}" / STATE_FILE, {"global_step": step})
    path, state = latest_checkpoint(root)
    assert path.name == "checkpoint-4"
    assert state["global_step"] == 4
    assert latest_checkpoint(tmp_path / "nothing") == (None, None)


def test_logger_truncates_to_checkpoint_offsets(tmp_path):
    from pods_repro.runlog import RunLogger

    log = RunLogger(tmp_path)
    log.log_metrics({"step": 1, "x": float("nan")})
    offsets = log.offsets()
    log.log_metrics({"step": 2})
    with open(log.metrics_path, "a") as f:
        f.write('{"step": 3, "cut sh')  # a line cut short by SIGKILL
    with pytest.raises(ValueError, match="metrics.jsonl:3"):
        read_jsonl(log.metrics_path)
    log.truncate(offsets)
    assert read_jsonl(log.metrics_path) == [{"step": 1, "x": None}]  # NaN is written as null


def test_killed_after_the_last_checkpoint_only_writes_the_summary(tiny_cfg, tmp_path):
    """A kill between the stop step's checkpoint and summary.json: the restart trains no further step."""
    from safetensors.torch import load_file

    cfg = tiny_cfg(tmp_path / "run", "budget.max_steps=2", "eval.every_steps=2", "eval.max_examples=2")
    run = train(cfg)
    metrics, evals = (run / "metrics.jsonl").read_bytes(), (run / "eval.jsonl").read_bytes()
    final = load_file(str(run / "final" / "model.safetensors"))
    (run / "summary.json").unlink()
    shutil.rmtree(run / "final")
    assert train(cfg) == run
    assert (run / "metrics.jsonl").read_bytes() == metrics
    assert (run / "eval.jsonl").read_bytes() == evals
    again = load_file(str(run / "final" / "model.safetensors"))
    assert all(torch.equal(final[k], again[k]) for k in final)  # the checkpoint's weights, not the initial ones
    assert (run / "summary.json").exists()


class _Stopped(Exception):
    """Stands for a kill right after a checkpoint was written (in-process: no interpreter start-up)."""


def test_a_resume_under_another_config_is_refused_even_with_an_edited_config_json(
    tiny_overrides, tiny_cfg, tmp_path, monkeypatch, capsys
):
    """Train m=8 to its step-2 checkpoint and stop; edit config.json to m=4 and resume with rollout.m=4.
    The checkpoint's weights, optimizer and logs are the m=8 run's: the resume is refused naming the
    differing key (old -> new) and the fix, and nothing already computed is cut or deleted."""
    import json

    from pods_repro import cli
    from pods_repro.run import RunController

    short = ("rollout.n=8", "budget.max_steps=4", "checkpoint.every_steps=2", "eval.every_steps=2")
    short += ("eval.max_examples=2",)
    out = tmp_path / "run"
    real_save = RunController.on_save

    def save_then_stop(self, args, state, control, **kwargs):
        real_save(self, args, state, control, **kwargs)
        if state.global_step == 2:
            raise _Stopped

    monkeypatch.setattr(RunController, "on_save", save_then_stop)
    with pytest.raises(_Stopped):
        train(tiny_cfg(out, *short, "rollout.m=8"))
    monkeypatch.undo()
    assert _has_checkpoint(out)
    assert not (out / "summary.json").exists()
    config = json.loads((out / "config.json").read_text())
    assert config["rollout"]["m"] == 8
    config["rollout"]["m"] = 4  # the edit: config.json no longer says what trained the checkpoint
    (out / "config.json").write_text(json.dumps(config))
    logs = (out / "metrics.jsonl").read_bytes(), (out / "eval.jsonl").read_bytes()
    assert logs[0].count(b"\n") == 2
    ckpts = sorted(p.name for p in (out / "checkpoints").iterdir())

    argv = [
        "train",
        str(REPO / "experiments" / "tiny_a.yaml"),
        *one_per_key(*tiny_overrides, *short, "rollout.m=4", f"out_dir={out}"),
    ]
    monkeypatch.chdir(REPO)
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "rollout.m 8 -> 4" in err
    assert "start a new run directory" in err
    assert "resume with the original values (rollout.m=8)" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert ((out / "metrics.jsonl").read_bytes(), (out / "eval.jsonl").read_bytes()) == logs  # nothing cut
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ckpts  # nor deleted
    assert not (out / "summary.json").exists()

    config["rollout"]["m"] = 8  # the original values resume it
    (out / "config.json").write_text(json.dumps(config))
    assert cli.main([*argv[:-2], "rollout.m=8", argv[-1]]) == 0
    assert (out / "metrics.jsonl").read_bytes().startswith(logs[0])
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2, 3, 4]


def test_the_config_fingerprint_leaves_out_only_what_a_resume_may_change(tiny_cfg, tmp_path):
    """pods_repro.run.config_fingerprint: a longer budget, another checkpoint interval or another out_dir continue the
    same run; the model, data, n, m, rule, learning rate, seed and evaluation do not. budget.max_steps counts
    where it is a decaying LR schedule's horizon. A pods_state.json whose config was edited is damaged."""
    from pods_repro.run import check_checkpoint_config, config_digest, config_fingerprint
    from pods_repro.runlog import RunDirError

    def fp(*overrides: str, out: str = "run") -> str:
        return config_fingerprint(tiny_cfg(tmp_path / out, *overrides))[1]

    base = fp()
    assert fp("budget.max_steps=40", "budget.max_time_s=900", "checkpoint.every_steps=7", out="moved") == base
    changed = ["rollout.m=2", "rollout.n=16", "rollout.rule=random", "optim.lr=0.002", "seed=3", "eval.repeats=2"]
    changed += ["task.max_prompt_length=48", "policy.model=tiny:llama-arith"]
    assert len({base, *(fp(c) for c in changed)}) == len(changed) + 1
    cosine = ("optim.scheduler=cosine",)
    assert fp(*cosine, "budget.max_steps=40") != fp(*cosine)  # the LR horizon
    assert fp(*cosine, "optim.scheduler_steps=50", "budget.max_steps=40") == fp(*cosine, "optim.scheduler_steps=50")

    cfg = tiny_cfg(tmp_path / "run")
    flat, digest = config_fingerprint(cfg)
    ckpt = tmp_path / "run" / "checkpoints" / "checkpoint-2"
    check_checkpoint_config(cfg, ckpt, {"config": flat, "config_sha256": digest})  # the same config: no error
    with pytest.raises(RunDirError, match=r"optim\.lr 0\.001 -> 0\.002.*\(optim\.lr=0\.001\)"):
        check_checkpoint_config(
            tiny_cfg(tmp_path / "run", "optim.lr=0.002"), ckpt, {"config": flat, "config_sha256": digest}
        )
    older = {k: v for k, v in flat.items() if k != "rollout.top_k"}  # written before the key existed: default
    check_checkpoint_config(cfg, ckpt, {"config": older, "config_sha256": config_digest(older)})
    with pytest.raises(RunDirError, match=r"rollout\.top_k \(absent\) -> 5"):
        check_checkpoint_config(
            tiny_cfg(tmp_path / "run", "rollout.top_k=5"),
            ckpt,
            {"config": older, "config_sha256": config_digest(older)},
        )
    with pytest.raises(RunDirError, match="pods_state.json is damaged"):
        check_checkpoint_config(cfg, ckpt, {"config": {**flat, "rollout.m": 2}, "config_sha256": digest})
