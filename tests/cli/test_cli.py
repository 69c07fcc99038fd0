"""pods_repro.cli: exit codes, messages on stderr, nothing written on bad input, dispatch to trainer/benchmarks.

Run: pytest tests/cli/test_cli.py   (about 15 s here: ~25 `python -m pods_repro` subprocesses, run 4 at a time)
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pods_repro import cli
from pods_repro.config import load_config, to_dict

REPO = Path(__file__).resolve().parents[2]
TINY_A = REPO / "experiments" / "tiny_a.yaml"
PAPER_A = REPO / "experiments" / "a_gsm8k_qwen3b.yaml"

# Bad input through the real command line: (config, args after it, dotted key the message must name).
# The overrides of tiny_a cover >= 15 kinds of bad config.
CLI_BAD = {
    "unknown_key": (TINY_A, ["rollout.nn=3"], "rollout.nn"),
    "wrong_type": (TINY_A, ["rollout.n=abc"], "rollout.n"),
    "m_gt_n": (TINY_A, ["rollout.m=80"], "rollout.m"),
    "m_lt_2": (TINY_A, ["rollout.m=1"], "rollout.m"),
    "not_divisible": (TINY_A, ["rollout.prompts_per_step=3", "hardware.num_processes=2"], "rollout.prompts_per_step"),
    "negative_budget": (TINY_A, ["budget.max_time_s=-1"], "budget.max_time_s"),
    "no_budget": (TINY_A, ["budget.max_time_s=null", "budget.max_steps=null"], "budget"),
    "unknown_rule": (TINY_A, ["rollout.rule=maxvar"], "rollout.rule"),
    "unknown_model": (TINY_A, ["policy.model=tiny:nope"], "policy.model"),
    "unknown_task": (TINY_A, ["task.name=gsm9k"], "task.name"),
    "unknown_dataset": (TINY_A, ["eval.datasets=[arith,math5000]"], "eval.datasets"),
    "missing_local_file": (TINY_A, ["task.train=/nonexistent/train.jsonl"], "task.train"),
    "gpu_only_on_cpu": (TINY_A, ["rollout.backend=vllm"], "rollout.backend"),
    "eval_grid": (TINY_A, ["eval.every_s=0"], "eval.every_s"),
    "temperature": (TINY_A, ["rollout.temperature=0"], "rollout.temperature"),
    "epsilon": (TINY_A, ["optim.epsilon=2"], "optim.epsilon"),
    "aggregation": (TINY_A, ["optim.aggregation=tokens"], "optim.aggregation"),
    "normalize_before_grpo": (
        TINY_A,
        ["rollout.n=16", "rollout.m=16", "rollout.normalize=before"],
        "rollout.normalize",
    ),
    "malformed_override": (TINY_A, ["rollout.n"], "override"),
    "missing_config": (REPO / "experiments" / "nope.yaml", [], "config"),
}


def _run(args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "pods_repro", *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=_env()
    )


def _env():
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")  # run from a temp cwd
    return env


@pytest.fixture(scope="module")
def cli_bad_results(tmp_path_factory):
    """Run every CLI_BAD case once as `python -m pods_repro train CONFIG ... out_dir=...`, 4 at a time."""
    root = tmp_path_factory.mktemp("cli_bad")

    def one(kind):
        cwd = root / kind
        cwd.mkdir()
        config, args = CLI_BAD[kind][:2]
        proc = _run(["train", str(config), *args, f"out_dir={cwd / 'run'}"], cwd)
        return kind, proc, cwd

    with ThreadPoolExecutor(max_workers=4) as pool:
        return {kind: (proc, cwd) for kind, proc, cwd in pool.map(one, sorted(CLI_BAD))}


@pytest.mark.parametrize("kind", sorted(CLI_BAD))
def test_bad_config_exits_2_with_message_and_writes_nothing(kind, cli_bad_results):
    proc, cwd = cli_bad_results[kind]
    key = CLI_BAD[kind][2]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    err = proc.stderr.strip()
    assert err.startswith("pods: config error: " + key), err
    assert "Fix:" in err
    assert "\n" not in err
    assert proc.stdout == ""
    assert list(cwd.iterdir()) == []  # no run dir, no results/ under the working directory


def test_cuda_config_on_cpu_machine_exits_2(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = _run(["train", str(PAPER_A), f"out_dir={tmp_path / 'run'}"], tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "hardware.device='cuda'" in proc.stderr
    assert "--paper" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_validate_paper_config_and_dry_run(tmp_path):
    proc = _run(["validate", str(PAPER_A), "rollout.n=16", "--paper", "rollout.m=16"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "# run_dir: results/runs/a_gsm8k_qwen3b/sel~max_variance_n~16_m~16/seed~0" in proc.stdout
    assert "model: Qwen/Qwen2.5-3B-Instruct" in proc.stdout
    proc = _run(["train", str(PAPER_A), "--dry-run"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_usage_exits_2(tmp_path):
    for args in (["train"], [], ["frobnicate"], ["train", str(TINY_A), "--bogus"]):
        proc = _run(args, tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "usage:" in proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("sub", "required"), [("train", "config"), ("validate", "config"), ("eval", "run_dir")])
def test_missing_positional_names_only_what_is_required(sub, required, capsys):
    # Overrides are optional: Python 3.11's argparse listed `key=value` as required too unless it has a default.
    with pytest.raises(SystemExit) as exit_:
        cli.main([sub])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"the following arguments are required: {required}\n" in err
    assert "key=value\n" not in err.splitlines()[-1]


# ----------------------------------------------------------------------------------------------
# In-process: dispatch to the trainer (faked: the real one is tested in tests/trainer/test_trainer*.py)


@pytest.fixture
def fake_trainer(monkeypatch):
    calls = {}
    run_mod, eval_mod = types.ModuleType("pods_repro.run"), types.ModuleType("pods_repro.evaluation")

    def train(cfg):
        calls["train"] = cfg
        if cfg.seed == 13:
            raise RuntimeError("boom in training")
        return Path("results/runs/x")

    def evaluate(run_dir, overrides):
        calls["evaluate"] = (Path(run_dir), list(overrides))
        return {"arith": {"accuracy": 0.5}}

    run_mod.train, eval_mod.evaluate = train, evaluate
    monkeypatch.setitem(sys.modules, "pods_repro.run", run_mod)
    monkeypatch.setitem(sys.modules, "pods_repro.evaluation", eval_mod)
    return calls


def test_train_validates_then_calls_trainer(fake_trainer, capsys):
    assert cli.main(["train", str(TINY_A), "rollout.n=16", "rollout.m=16"]) == 0
    cfg = fake_trainer["train"]
    assert cfg == load_config(TINY_A, ["rollout.n=16", "rollout.m=16"])
    assert capsys.readouterr().out.strip() == "results/runs/x"


def test_train_bad_config_never_reaches_trainer(fake_trainer, capsys):
    assert cli.main(["train", str(TINY_A), "rollout.m=99"]) == 2
    assert "train" not in fake_trainer
    assert "rollout.m=99" in capsys.readouterr().err


def test_other_failures_exit_1_with_traceback(fake_trainer, capsys):
    assert cli.main(["train", str(TINY_A), "seed=13"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "boom in training" in err


def _fake_run(tmp_path, **over):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({**to_dict(load_config(TINY_A)), "meta": {"git": "abc"}, **over}))
    return run


def test_eval_checks_overrides_then_calls_evaluate(fake_trainer, tmp_path, capsys):
    run = _fake_run(tmp_path)
    assert cli.main(["eval", str(run), "eval.repeats=2"]) == 0
    assert fake_trainer["evaluate"] == (run, ["eval.repeats=2"])
    assert json.loads(capsys.readouterr().out) == {"arith": {"accuracy": 0.5}}


@pytest.mark.parametrize("bad", ["eval.repeatz=2", "eval.repeats=0"])
def test_eval_bad_override_exits_2(fake_trainer, tmp_path, capsys, bad):
    run = _fake_run(tmp_path)
    assert cli.main(["eval", str(run), bad]) == 2
    assert "evaluate" not in fake_trainer
    assert "Fix:" in capsys.readouterr().err


def test_eval_not_a_run_dir_exits_2(fake_trainer, tmp_path, capsys):
    assert cli.main(["eval", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# bench


def test_bench_dispatches_to_script(tmp_path, monkeypatch, capsys):
    (tmp_path / "bench_echo.py").write_text("import sys\nprint('ARGS', sys.argv[1:])\nsys.exit(3)\n")
    monkeypatch.setattr(cli, "BENCH_DIR", tmp_path)
    assert cli.main(["bench", "echo", "--n", "4", "x=1"]) == 3  # its exit code, its arguments verbatim
    assert cli.main(["bench", "nope"]) == 2
    assert "use one of echo" in capsys.readouterr().err
    assert cli.main(["bench"]) == 2
    assert cli.main(["bench", "--help"]) == 0


def test_bench_script_output_reaches_stdout(tmp_path, monkeypatch, capfd):
    (tmp_path / "bench_echo.py").write_text("import sys\nprint('ARGS', sys.argv[1:])\n")
    monkeypatch.setattr(cli, "BENCH_DIR", tmp_path)
    assert cli.main(["bench", "echo", "--n", "4"]) == 0
    assert "ARGS ['--n', '4']" in capfd.readouterr().out


def test_eval_path_imports_no_trainer():
    """`pods eval` loads pods_repro.evaluation only: neither pods.trainer nor TRL (the CLI imports lazily)."""
    code = (
        "import sys, pods_repro.cli, pods_repro.evaluation; "
        "bad = sorted(m for m in ('pods.trainer', 'pods_repro.run', 'trl') if m in sys.modules); print(bad)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_version_names_pods_and_its_torch_and_trl(capsys):
    from importlib.metadata import version

    import pods

    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"pods {pods.__version__} (")
    assert f"trl {version('trl')}" in out
    assert f"torch {version('torch')}" in out


def test_list_prints_each_shipped_experiment_on_one_line(capsys):
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = sorted(p.stem for p in (REPO / "experiments").glob("*.yaml"))
    assert [ln.split()[0] for ln in lines] == names
    row = dict(ln.split(maxsplit=1) for ln in lines)
    assert row["tiny_a"].startswith("Tiny analogue of setting (a)")
    assert row["tiny_a"].endswith("[--scale tiny (a), smoke (a)]")
    assert row["a_gsm8k_qwen3b"].startswith("Setting (a): GSM8K, Qwen2.5-3B-Instruct")
    assert all("arXiv" not in ln for ln in lines)  # the header's citation is dropped


def test_public_names_import_from_pods_lazily():
    code = (
        "import sys, pods\n"
        "assert 'torch' not in sys.modules and 'trl' not in sys.modules, 'import pods must stay cheap'\n"
        "from pods import PODSGRPOTrainer, PODSConfig, select, register_selector\n"
        "import pods.trainer, pods.selectors\n"
        "assert PODSGRPOTrainer is pods.trainer.PODSGRPOTrainer and select is pods.selectors.select\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    with pytest.raises(AttributeError, match="module 'pods' has no attribute 'nope'"):
        __import__("pods").nope  # noqa: B018


def test_every_message_that_names_a_class_names_an_importable_path():
    """A PODSConfig given to trl.GRPOTrainer said "Build pods.PODSGRPOTrainer", which did not import."""
    import ast
    import importlib
    import re

    classes = r"(?:PODSGRPOTrainer|PODSConfig|GRPOTrainer|GRPOConfig|EpochRepeatSampler|Trainer)"
    pattern = re.compile(rf"(?<![\w.])((?:[A-Za-z_]\w*\.)*){classes}\b")
    found = []
    for path in sorted([*(REPO / "pods").rglob("*.py"), *(REPO / "pods_repro").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # the text of every raised error, and the names _check_rule puts in front of its messages
        messages = [n for n in ast.walk(tree) if isinstance(n, ast.Raise)]
        messages += [n.args[0] for n in ast.walk(tree)
                     if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "_check_rule" and n.args]  # fmt: skip
        for message in messages:
            for node in ast.walk(message):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found.extend((path.name, m.group(0)) for m in pattern.finditer(node.value))
    assert found, "the scan found no class names at all"
    for where, name in found:
        mod, _, attr = name.rpartition(".")
        assert mod, f"{where}: a message names {name!r} without its module (e.g. pods.{name})"
        head = name.split(".")
        for cut in range(len(head) - 1, 0, -1):  # the longest importable module prefix, then attributes
            try:
                obj = importlib.import_module(".".join(head[:cut]))
            except ImportError:
                continue
            for part in head[cut:]:
                obj = getattr(obj, part)
            break
        else:
            raise AssertionError(f"{where}: {name!r} is not importable")
