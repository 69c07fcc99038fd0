"""Run-directory safety: one writer per run directory, damaged runs are
named instead of passing silently, unusable inputs exit 2 before any work, resume from a copied
directory, and a full disk is reported as such.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import one_per_key

from pods_repro import cli

REPO = Path(__file__).resolve().parents[2]
TINY_A = REPO / "experiments" / "tiny_a.yaml"
SHORT = ("budget.max_steps=2", "eval.every_steps=2", "eval.max_examples=2", "checkpoint.every_steps=1")


def _train_cli(tiny_overrides, out: Path, *extra: str) -> int:
    return cli.main(["train", str(TINY_A), *one_per_key(*tiny_overrides, *SHORT, f"out_dir={out}", *extra)])


# ----------------------------------------------------------------------------------------------
# One writer per run directory


def test_second_writer_is_refused_while_the_first_holds_the_run_dir(tiny_overrides, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    with open(out / ".pods.lock", "a+") as held:  # what the first `pods train` holds while it runs
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 12345 on host since 2026-01-01T00:00:00+00:00\n")
        held.flush()
        code = _train_cli(tiny_overrides, out)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "in use by another `pods train` (pid 12345" in err
    assert "Traceback" not in err
    assert [p.name for p in out.iterdir()] == [".pods.lock"]  # nothing read or written


def test_lock_of_a_killed_process_does_not_block_a_resume(tmp_path):
    from pods_repro.runlog import run_dir_lock

    code = (
        "import os, signal, sys; from pods_repro.runlog import run_dir_lock\n"
        "with run_dir_lock(sys.argv[1]):\n"
        "    print('locked', flush=True); os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL
    assert proc.stdout.strip() == "locked"
    assert (tmp_path / ".pods.lock").exists()  # the file stays, the lock does not
    with run_dir_lock(tmp_path):
        assert f"pid {os.getpid()}" in (tmp_path / ".pods.lock").read_text()


# ----------------------------------------------------------------------------------------------
# Damaged runs are named, not taken as finished or resumed from silently


@pytest.fixture(scope="module")
def finished_run(tiny_overrides, tmp_path_factory):
    """A finished 2-step run (checkpoint every step); tests damage copies of it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert _train_cli(tiny_overrides, out) == 0
    return out


def _copy(run: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(run, dest, symlinks=True)
    return dest


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("", "not valid JSON"),
        ("\x00\x01garbage{", "not valid JSON"),
        ('["finished"]', "not a finished-run summary"),
        ('{"status": "finished", "steps": 2, "n": 99, "m": 4, "rule": "max_variance", "seed": 0}', "n=99"),
    ],
)
def test_damaged_summary_is_named_not_taken_as_finished(finished_run, tiny_overrides, tmp_path, capsys, content, why):
    run = _copy(finished_run, tmp_path / "run")
    (run / "summary.json").write_text(content)
    assert _train_cli(tiny_overrides, run) == 2
    err = capsys.readouterr().err
    assert str(run / "summary.json") in err
    assert why in err
    assert "Traceback" not in err


def test_cut_metrics_of_a_finished_run_is_named(finished_run, tiny_overrides, tmp_path, capsys):
    run = _copy(finished_run, tmp_path / "run")
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join(lines[: len(lines) // 2]))  # cut at a line boundary
    assert _train_cli(tiny_overrides, run) == 2
    err = capsys.readouterr().err
    assert f"{run / 'metrics.jsonl'} is damaged" in err
    assert "summary.json says 2 steps" in err
    from pods_repro.runlog import RunDirError, RunLogger

    with pytest.raises(RunDirError, match="metrics.jsonl is damaged"):  # what analysis can call
        RunLogger(run, enabled=False).check_finished()


def test_collect_refuses_a_finished_run_with_a_cut_metrics_log(finished_run, tmp_path, capsys):
    """`collect` refuses a run whose summary says finished but whose metrics.jsonl was cut (11 of 24 steps):
    exit 0 there would build tables from a partial run."""
    from pods_repro.analysis.cli import main as analysis_main

    run = _copy(finished_run, tmp_path / "runs" / "tiny_a" / "sel~x" / "seed~0")
    out = tmp_path / "tables"
    assert analysis_main(["collect", "--run-dirs", str(run), "--out-dir", str(out)]) == 0  # intact: fine
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join(lines[: len(lines) // 2]))
    capsys.readouterr()
    assert analysis_main(["collect", "--run-dirs", str(run), "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'metrics.jsonl'} is damaged" in err


def test_cut_metrics_of_an_unfinished_run_is_named(finished_run, tiny_overrides, tmp_path, capsys):
    run = _copy(finished_run, tmp_path / "run")
    (run / "summary.json").unlink()
    data = (run / "metrics.jsonl").read_bytes()
    (run / "metrics.jsonl").write_bytes(data[: len(data) // 2])  # cut mid-line, shorter than the checkpoint's offset
    assert _train_cli(tiny_overrides, run) == 2
    err = capsys.readouterr().err
    assert str(run / "metrics.jsonl") in err
    assert "Traceback" not in err


def _unfinished(finished_run: Path, dest: Path) -> Path:
    """A copy of the finished run as if killed after its last checkpoint (no summary, no final policy)."""
    import shutil

    run = _copy(finished_run, dest)
    (run / "summary.json").unlink()
    shutil.rmtree(run / "final")
    return run


def _logs(run: Path) -> tuple[bytes, bytes]:
    return (run / "metrics.jsonl").read_bytes(), (run / "eval.jsonl").read_bytes()


def test_edited_log_line_under_the_checkpoint_is_named_and_nothing_cut(finished_run, tiny_overrides, tmp_path, capsys):
    # A log longer than the checkpoint recorded, but with a line before the checkpoint's offset edited:
    # cutting it back by bytes would leave a broken line that only a later `collect` would find.
    run = _unfinished(finished_run, tmp_path / "run")
    text = (run / "metrics.jsonl").read_text()
    (run / "metrics.jsonl").write_text(text.replace('"step": 1,', '"step": 1000,', 1))
    before = _logs(run)
    assert _train_cli(tiny_overrides, run) == 2
    err = capsys.readouterr().err
    assert f"{run / 'metrics.jsonl'} is damaged" in err
    assert "is not the end of a line" in err
    assert _logs(run) == before  # neither log was cut


def test_a_cut_checkpoint_file_is_refused_before_the_logs_are_cut(finished_run, tiny_overrides, tmp_path, capsys):
    run = _unfinished(finished_run, tmp_path / "run")
    [ckpt] = (run / "checkpoints").glob("checkpoint-*")
    data = (ckpt / "model.safetensors").read_bytes()
    (ckpt / "model.safetensors").write_bytes(data[:100])
    (run / "metrics.jsonl").write_bytes((run / "metrics.jsonl").read_bytes() + b'{"step": 3}\n')  # past the ckpt
    before = _logs(run)
    assert _train_cli(tiny_overrides, run) == 2
    err = capsys.readouterr().err
    assert f"{ckpt} has unreadable model.safetensors" in err
    assert "Traceback" not in err
    assert _logs(run) == before


def test_run_files_without_a_config_are_refused_not_resumed_or_emptied(finished_run, tiny_overrides, tmp_path, capsys):
    # Resuming them under whatever config is given would mix two runs; emptying them would lose data.
    run = _unfinished(finished_run, tmp_path / "run")
    (run / "config.json").unlink()
    before = _logs(run)
    assert _train_cli(tiny_overrides, run, "optim.lr=0.01") == 2
    err = capsys.readouterr().err
    assert f"{run} has no config.json but holds metrics.jsonl, eval.jsonl, checkpoints/checkpoint-2" in err
    assert _logs(run) == before
    user = tmp_path / "mine"  # a folder of the user's own that happens to hold a metrics.jsonl
    user.mkdir()
    (user / "metrics.jsonl").write_text('{"mine": 1}\n')
    assert _train_cli(tiny_overrides, user) == 2
    assert (user / "metrics.jsonl").read_text() == '{"mine": 1}\n'


def test_a_finished_run_is_not_taken_for_a_run_with_another_config(finished_run, tiny_overrides, tmp_path, capsys):
    run = _copy(finished_run, tmp_path / "run")
    assert _train_cli(tiny_overrides, run) == 0  # the same command: finished, nothing to do
    assert "already finished" in capsys.readouterr().err
    assert _train_cli(tiny_overrides, run, "optim.lr=0.5") == 2
    assert "holds a run with a different config (optim.lr 0.001 -> 0.5)" in capsys.readouterr().err
    import json

    cfg = json.loads((run / "config.json").read_text())  # written before `trl` and `rollout.top_k` existed:
    del cfg["trl"], cfg["rollout"]["top_k"]  # their defaults make it the same run
    (run / "config.json").write_text(json.dumps(cfg))
    assert _train_cli(tiny_overrides, run) == 0
    assert "already finished" in capsys.readouterr().err


def test_a_finished_run_without_its_final_policy_says_how_to_get_it_back(
    finished_run, tiny_overrides, tmp_path, capsys
):
    import shutil

    run = _copy(finished_run, tmp_path / "run")
    shutil.rmtree(run / "final")
    for command in (lambda: _train_cli(tiny_overrides, run), lambda: cli.main(["eval", str(run)])):
        assert command() == 2
        err = capsys.readouterr().err
        assert f"its final policy {run / 'final'} is missing" in err
        assert f"delete {run / 'summary.json'} and rerun the same `pods train`" in err
    (run / "summary.json").unlink()  # the fix it names
    assert _train_cli(tiny_overrides, run) == 0, capsys.readouterr().err
    assert (run / "final").is_dir()
    assert _logs(run) == _logs(finished_run)


def test_checkpoint_without_optimizer_scheduler_rng_is_refused(finished_run, tiny_overrides, tmp_path, capsys):
    run = _copy(finished_run, tmp_path / "run")
    (run / "summary.json").unlink()
    [ckpt] = (run / "checkpoints").glob("checkpoint-*")
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (ckpt / name).unlink()
    assert _train_cli(tiny_overrides, run) == 2
    err = capsys.readouterr().err
    assert f"{ckpt} lacks optimizer.pt, scheduler.pt, rng_state.pth" in err
    assert not (run / "summary.json").exists()


def _fake_checkpoint(root: Path, step: int, files=("trainer_state.json", "model.safetensors", "optimizer.pt",
                                                      "scheduler.pt", "rng_state.pth")) -> Path:  # fmt: skip
    import json

    import torch
    from safetensors.torch import save_file

    d = root / f"checkpoint-{step}"
    d.mkdir(parents=True)
    for name in files:  # small but readable files of each kind
        if name.endswith(".json"):
            (d / name).write_text("{}")
        elif name.endswith(".safetensors"):
            save_file({"w": torch.zeros(2)}, str(d / name))
        else:
            torch.save({"step": step}, d / name)
    (d / "pods_state.json").write_text(json.dumps({"global_step": step, "offsets": {}}))
    return d


def test_resume_falls_back_to_the_previous_complete_checkpoint(tmp_path, capsys):
    from pods_repro.runlog import RunDirError, resumable_checkpoint

    older = _fake_checkpoint(tmp_path, 2)
    newer = _fake_checkpoint(tmp_path, 4, files=("trainer_state.json", "model.safetensors"))
    path, state = resumable_checkpoint(tmp_path, num_processes=1)
    assert (path, state["global_step"]) == (older, 2)
    assert f"{newer} lacks optimizer.pt, scheduler.pt, rng_state.pth" in capsys.readouterr().err
    import shutil

    shutil.rmtree(older)
    with pytest.raises(RunDirError, match="checkpoint-4 lacks optimizer.pt, scheduler.pt, rng_state.pth"):
        resumable_checkpoint(tmp_path, num_processes=1)
    (newer / "pods_state.json").write_text("{not json")
    with pytest.raises(RunDirError, match="pods_state.json is damaged"):
        resumable_checkpoint(tmp_path, num_processes=1)
    two = _fake_checkpoint(tmp_path / "two", 2, files=("trainer_state.json", "model.safetensors", "optimizer.pt",
                                                       "scheduler.pt", "rng_state_0.pth"))  # fmt: skip
    with pytest.raises(RunDirError, match="lacks rng_state_1.pth"):
        resumable_checkpoint(two.parent, num_processes=2)


@pytest.mark.parametrize("name", ["trainer_state.json", "model.safetensors", "optimizer.pt", "rng_state.pth"])
def test_a_cut_checkpoint_file_is_named_and_the_previous_checkpoint_used(tmp_path, capsys, name):
    # Present but cut short (a full disk, a copy interrupted): caught before anything is loaded or cut.
    from pods_repro.runlog import RunDirError, resumable_checkpoint

    older = _fake_checkpoint(tmp_path, 2)
    newer = _fake_checkpoint(tmp_path, 4)
    data = (newer / name).read_bytes()
    (newer / name).write_bytes(data[: len(data) // 2])
    path, _ = resumable_checkpoint(tmp_path, num_processes=1)
    assert path == older
    assert f"{newer} has unreadable {name}" in capsys.readouterr().err
    import shutil

    shutil.rmtree(older)
    with pytest.raises(RunDirError, match=f"unreadable {name}.*restore the missing or damaged files"):
        resumable_checkpoint(tmp_path, num_processes=1)


# ----------------------------------------------------------------------------------------------
# Inputs that cannot work exit 2 with one line, before any work, leaving no file behind


def _read_only_dir(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    return Path("/proc")  # root writes through file modes; /proc takes no new files


def _bad_out_dir(kind: str, tmp_path: Path) -> Path:
    if kind == "read_only":
        return _read_only_dir(tmp_path) / "run"
    (tmp_path / "a_file").write_text("not a directory\n")
    return tmp_path / "a_file" if kind == "a_file" else tmp_path / "a_file" / "run"


@pytest.mark.parametrize(("kind", "problem"), [("read_only", "not writable"), ("a_file", "is a file"),
                                               ("below_a_file", "below the file")])  # fmt: skip
def test_unusable_out_dir_exits_2_before_any_work(tiny_overrides, tmp_path, capsys, monkeypatch, kind, problem):
    monkeypatch.chdir(tmp_path)
    out = _bad_out_dir(kind, tmp_path)
    before = sorted(tmp_path.rglob("*"))
    assert _train_cli(tiny_overrides, out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pods: config error: out_dir"), err
    assert problem in err
    assert "\n" not in err
    assert sorted(tmp_path.rglob("*")) == before


def _assert_refused_cleanly(code: int, err: str, key: str, tmp_path: Path) -> None:
    assert code == 2, err
    err = err.strip()
    assert err.startswith(f"pods: config error: {key}"), err
    assert "Traceback" not in err
    assert "\n" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.yaml"] or not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("content", "extra", "why"),
    [
        ("[1, 2]\n", ("task.train={bad}",), "bad.jsonl:1 is a JSON list, not an object"),
        ("", ("task.max_prompt_length=5",), "every prompt of task 'arith' split 'train' is longer than"),
        (
            '{"question": "12+34=", "answer": "46"}\n',
            ("task.train={bad}", "rollout.prompts_per_step=2"),
            "the training set has 1 prompt(s) but one step needs rollout.prompts_per_step=2",
        ),
    ],
)
def test_data_the_run_cannot_use_exits_2_and_binds_nothing(tiny_overrides, tmp_path, capsys, content, extra, why):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    out = tmp_path / "run"
    assert _train_cli(tiny_overrides, out, *(e.format(bad=bad) for e in extra)) == 2
    err = capsys.readouterr().err
    assert f"pods: data error: {why}".replace(str(tmp_path) + "/", "") in err.replace(str(tmp_path) + "/", "")
    assert "Traceback" not in err
    assert not (out / "config.json").exists()  # the corrected command is not refused
    assert _train_cli(tiny_overrides, out) == 0, capsys.readouterr().err


def test_seed_beyond_numpy_range_exits_2(tiny_overrides, tmp_path, capsys):
    code = _train_cli(tiny_overrides, tmp_path / "run", f"seed={2**64 + 1}")
    _assert_refused_cleanly(code, capsys.readouterr().err, "seed", tmp_path)


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\x00binary", "setting: caf\xe9\n".encode("latin-1")])
def test_binary_or_non_utf8_yaml_exits_2(tmp_path, capsys, content):
    (tmp_path / "cfg.yaml").write_bytes(content)
    code = cli.main(["train", str(tmp_path / "cfg.yaml"), f"out_dir={tmp_path / 'run'}"])
    _assert_refused_cleanly(code, capsys.readouterr().err, "config", tmp_path)


@pytest.mark.parametrize("offline", [True, False])
def test_unknown_hub_model_exits_2_fast(tiny_overrides, tmp_path, capsys, monkeypatch, offline):
    import time

    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    t0 = time.monotonic()
    code = _train_cli(tiny_overrides, tmp_path / "run", "policy.model=nobody-pods-test/no-such-model")
    err = capsys.readouterr().err
    assert time.monotonic() - t0 < 30
    _assert_refused_cleanly(code, err, "policy.model", tmp_path)
    assert "nobody-pods-test/no-such-model" in err
    if offline:
        assert "HF_HUB_OFFLINE" in err


def test_a_start_that_fails_leaves_no_config_behind(tiny_overrides, tmp_path, capsys):
    """A policy directory that validates but does not load: the corrected command is not refused."""
    broken = tmp_path / "broken_model"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    out = tmp_path / "run"
    assert _train_cli(tiny_overrides, out, f"policy.model={broken}") == 1  # a real failure, with its traceback
    capsys.readouterr()
    assert not (out / "config.json").exists()
    assert _train_cli(tiny_overrides, out) == 0, capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# Resume from a copied directory; a full disk named as such


def test_killed_run_copied_elsewhere_resumes_there(finished_run, tiny_overrides, tmp_path, capsys):
    """A run killed after its last checkpoint (no summary, no final policy), copied to another folder."""
    import json

    run = _copy(finished_run, tmp_path / "elsewhere" / "run")
    (run / "summary.json").unlink()
    import shutil

    shutil.rmtree(run / "final")
    assert _train_cli(tiny_overrides, run) == 0, capsys.readouterr().err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 2
    assert (run / "metrics.jsonl").read_bytes() == (finished_run / "metrics.jsonl").read_bytes()
    assert (run / "final").is_dir()


@pytest.mark.parametrize(
    "error",
    [
        OSError(28, "No space left on device"),
        RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 64 vs 0"),
    ],
    ids=["ENOSPC", "torch_unexpected_pos"],
)
def test_full_disk_while_checkpointing_is_named(tiny_overrides, tmp_path, capsys, monkeypatch, error):
    import torch

    def full_disk(*args, **kwargs):
        raise error

    monkeypatch.setattr(torch, "save", full_disk)  # optimizer/scheduler/RNG state of the first checkpoint
    out = tmp_path / "run"
    assert _train_cli(tiny_overrides, out) == 1
    err = capsys.readouterr().err.strip()
    assert err.splitlines()[-1].startswith(f"pods: disk full or unwritable: {out / 'checkpoints' / 'checkpoint-1'} (")
    assert "Traceback" not in err


def test_full_disk_while_logging_is_named(tiny_overrides, tmp_path, capsys, monkeypatch):
    import builtins
    import errno

    import pods_repro.runlog

    def no_space_for_logs(file, mode="r", *args, **kwargs):
        if str(file).endswith(".jsonl") and "a" in mode:
            raise OSError(errno.ENOSPC, "No space left on device", str(file))
        return builtins.open(file, mode, *args, **kwargs)

    monkeypatch.setattr(pods_repro.runlog, "open", no_space_for_logs, raising=False)
    out = tmp_path / "run"
    assert _train_cli(tiny_overrides, out) == 1
    err = capsys.readouterr().err.strip()
    assert f"pods: disk full or unwritable: {out / 'eval.jsonl'} (OSError: [Errno 28]" in err  # the t = 0 evaluation
    assert "Traceback" not in err


def test_json_results_are_readable_as_the_umask_allows(tmp_path):
    # mkstemp creates 0600 files: config.json / summary.json were unreadable to the rest of a cluster group.
    from pods_repro.runlog import atomic_write_json

    old = os.umask(0o022)
    try:
        atomic_write_json(tmp_path / "summary.json", {"a": 1})
        os.umask(0o077)
        atomic_write_json(tmp_path / "private.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "summary.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "private.json").stat().st_mode & 0o777 == 0o600
