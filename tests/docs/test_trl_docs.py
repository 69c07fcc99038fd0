"""The TRL drop-in page's promises as code: examples/trl_length_aware_filter.py runs, the README's TRL snippet
trains, and docs/trl.md's own-rule example registers and selects."""

from __future__ import annotations

import pytest
import torch

from pods_repro.trainer import records_to_dataset


def _mod3(completions, **_):
    return [float(i % 3) for i in range(len(completions))]


# ----------------------------------------------------------------------------- the example and the README snippet


def test_example_trains_with_the_length_aware_rule_and_the_group_filter(tiny_policy_dir, tmp_path, capsys, monkeypatch):
    """examples/trl_length_aware_filter.py, in this process, on the test policy (the example's own default is
    the project's tiny model; the full run takes seconds of training)."""
    import importlib.util
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "trl_length_aware_filter", repo / "examples" / "trl_length_aware_filter.py"
    )
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "trl_length_aware_filter", example)  # its dataclass looks itself up there
    spec.loader.exec_module(example)
    argv = ["--model", str(tiny_policy_dir), "--output_dir", str(tmp_path / "out"), "--max_steps", "2",
            "--max_completion_length", "16"]  # fmt: skip
    assert example.main(argv) == 0
    out = capsys.readouterr().out
    assert "[example] step 1: reward" in out, out
    assert "[example] step 2: reward" in out, out
    assert "2 steps of rule max_variance_shortest with the zero-variance filter on" in out, out


def test_readme_trl_snippet_trains(tiny_policy_dir, tmp_path, monkeypatch):
    """The README's TRL snippet, run as written on a GPU recipe, with the CPU's three fields added."""
    import re
    from pathlib import Path

    from pods_repro.data import load_task
    from pods_repro.models import load_policy

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    code = next(c for c in re.findall(r"```python\n(.*?)```", readme, re.S) if "PODSConfig(" in c)
    assert "from pods import PODSConfig, PODSGRPOTrainer" in code
    cpu = 'report_to=["tensorboard"], use_cpu=True, bf16=False, max_completion_length=8,'
    code = code.replace('report_to=["tensorboard"],', cpu, 1)
    code = code.replace("train_dataset=dataset)", "train_dataset=dataset, processing_class=tok)", 1)
    assert cpu in code, "the README snippet changed: update this test"
    assert "processing_class=tok" in code, "the README snippet changed: update this test"
    model, tok = load_policy(str(tiny_policy_dir), dtype="float32", device="cpu")
    records = load_task("arith", "train", prompt_style="plain", seed=0)[:4]  # 4 prompts: one step of GA 4
    namespace = {"model": model, "tok": tok, "reward_funcs": [_mod3], "dataset": records_to_dataset(records)}
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), namespace)
    trainer = namespace["trainer"]
    assert trainer.state.global_step == 1
    # one round per step: GA 4 micro-batches of one group of n = 16 each, m = 4 kept from each
    assert trainer.pods_last_selection["keep_G_M"].shape == (4, 4)


def test_docs_own_rule_registers_and_selects():
    """docs/trl.md's own-rule example is one registered function that the trainer's rule check accepts."""
    import re
    from pathlib import Path

    from pods import selectors
    from pods.trainer.options import _check_rule

    doc = (Path(__file__).resolve().parents[2] / "docs" / "trl.md").read_text()
    code = next(c for c in re.findall(r"```python\n(.*?)```", doc, re.S) if "register_selector(" in c)
    code = code.split("\nargs = ")[0]  # the PODSConfig line needs a real run's fields
    try:
        exec(compile(code, "docs/trl.md", "exec"), {})
        assert selectors.uses_lengths("best_then_shortest")
        _check_rule("pods.PODSConfig", "best_then_shortest", 8, 2)
        rewards = torch.tensor([[1.0, 1.0, 0.0, 1.0]])
        lengths = torch.tensor([[10.0, 4.0, 1.0, 8.0]])
        assert selectors.select(rewards, 2, "best_then_shortest", lengths=lengths).tolist() == [[1, 3]]
        with pytest.raises(ValueError, match="ranks rollouts by completion length: pass lengths="):
            selectors.select(rewards, 2, "best_then_shortest")
    finally:
        selectors._REGISTRY.pop("best_then_shortest", None)
        selectors._USES_LENGTHS.discard("best_then_shortest")
