"""What ``pods train`` prints, through the installed command: no TRL deprecation noise, a line when a
run resumes, one summary line at the end, and a progress bar that counts the budget in force."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import one_per_key

REPO = Path(__file__).resolve().parents[2]


def _cmd(overrides, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pods_repro",
        "train",
        "experiments/tiny_a.yaml",
        *one_per_key(*overrides, f"out_dir={out}"),
    ]


def _train(overrides, out: Path) -> str:
    env = {**os.environ, "PODS_NO_PROGRESS": "1"}
    proc = subprocess.run(_cmd(overrides, out), cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == str(out)  # stdout stays the run directory alone, for scripts
    return proc.stderr


def test_train_logs_a_summary_line_a_resume_line_and_no_trl_deprecation(tiny_overrides, tiny_cfg, tmp_path, capfd):
    out = tmp_path / "run"
    err = _train((*tiny_overrides, "checkpoint.every_steps=1"), out)
    # TRL 1.16 reads transformers' deprecated is_gradient_checkpointing at every generation and evaluation
    assert "is_gradient_checkpointing" not in err
    assert "resuming" not in err  # a fresh run
    summary = json.loads((out / "summary.json").read_text())
    last = err.strip().splitlines()[-1]
    want = (
        f"[pods] done: 4/4 steps (stop: max_steps); arith accuracy best {summary['best_accuracy']['arith']:.4f} "
        f"final {summary['final_accuracy']['arith']:.4f}; training {summary['time_s']:.1f} s "
        f"(CPU {summary['train_cpu_s']:.1f} s); {out}"
    )
    assert last == want

    # killed after the last checkpoint, before the final policy and summary were written: it resumes there
    (out / "summary.json").unlink()
    shutil.rmtree(out / "final")
    from pods_repro.run import train  # the same lines in-process (``pods train`` is ``train`` of the config)

    capfd.readouterr()
    train(tiny_cfg(out, "checkpoint.every_steps=1"))
    err = capfd.readouterr().err
    assert f"[pods] resuming {out} from step 4 (checkpoint-4)\n" in err
    assert err.strip().splitlines()[-1].startswith("[pods] done: 4/4 steps (stop: max_steps); arith accuracy best ")


def test_progress_bar_counts_the_step_budget_when_one_is_set(tiny_overrides, tmp_path):
    # tiny_a.yaml keeps budget.max_time_s: 300; a budget.max_steps override is what stops the run, so the bar
    # must count steps (it counted the 300 s and stopped at "0%" or so).
    import fcntl
    import pty
    import struct
    import termios

    overrides = [o for o in tiny_overrides if not o.startswith("budget.max_time_s=")]
    out = tmp_path / "run"
    master, slave = pty.openpty()  # stderr a terminal: the bar is drawn
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a new pty is 0 columns wide
    env = {k: v for k, v in os.environ.items() if k != "PODS_NO_PROGRESS"}
    proc = subprocess.Popen(_cmd(overrides, out), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal (EIO)
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=600) == 0
    text = b"".join(chunks).decode(errors="replace")
    assert re.search(r"train: 100%\|[^\n\r]*\| 4/4 ", text), text[-2000:]
    assert "/300 s" not in text
    assert "[pods] done: 4/4 steps (stop: max_steps)" in text


def test_a_run_budgeted_in_seconds_alone_counts_seconds(tiny_cfg, tmp_path):
    from pods_repro.run import RunController, summary_line

    cfg = tiny_cfg(tmp_path / "run", "budget.max_steps=null", "budget.max_time_s=300")
    assert not RunController(cfg, None, [], None, use_cuda=False)._bar_in_steps()
    summary = {"steps": 7, "stop_reason": "max_time", "time_s": 301.25, "train_cpu_s": 250.0,
               "best_accuracy": {"arith": 0.5}, "final_accuracy": {"arith": 0.25}}  # fmt: skip
    assert summary_line(summary, cfg, "arith", tmp_path / "run") == (
        "[pods] done: 7 steps in 301.2/300 s (stop: max_time); arith accuracy best 0.5000 final 0.2500; "
        f"training 301.2 s (CPU 250.0 s); {tmp_path / 'run'}"
    )
    both = tiny_cfg(tmp_path / "run", "budget.max_steps=4", "budget.max_time_s=300")
    assert RunController(both, None, [], None, use_cuda=False)._bar_in_steps()  # tiny_a.yaml keeps its 300 s
