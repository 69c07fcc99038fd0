"""What a TRL user and a ``pods`` user are told about a bad PODS option: a misspelt trainer keyword, m = 0 or
negative, and the rules that the help texts list."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import build_user_trainer

from pods_repro import registry
from pods_repro.trainer import PODSConfig

REPO = Path(__file__).resolve().parents[2]


def _build(tiny_policy_dir, tmp_path, **kw):
    from trl import GRPOConfig

    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), num_generations=4, per_device_train_batch_size=4, max_steps=1,
        use_cpu=True, bf16=False, report_to=[], save_strategy="no",
    )  # fmt: skip
    records = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(8)]
    reward = lambda completions, **_: [0.0] * len(completions)  # noqa: E731
    return build_user_trainer(tiny_policy_dir, args, reward, records=records, quiet=False, **kw)[0]


@pytest.mark.parametrize(
    ("typo", "meant"), [("pods_M", "pods_m"), ("pods_rulle", "pods_rule"), ("pods_filter_zero", "pods_filter_zero_std")]
)
def test_a_misspelt_pods_keyword_names_the_closest_one(tiny_policy_dir, tmp_path, typo, meant):
    with pytest.raises(TypeError) as err:
        _build(tiny_policy_dir, tmp_path, **{"pods_m": 2, typo: 4} if typo != "pods_M" else {typo: 4})
    text = str(err.value)
    assert "\n" not in text
    assert f"unknown keyword argument {typo!r}; did you mean {meant}?" in text
    assert _build(tiny_policy_dir, tmp_path, pods_m=2).pods_m == 2  # the spelling it suggests works


@pytest.mark.parametrize("m", [0, -1])
def test_m_zero_or_negative_gets_its_own_message(tmp_path, m):
    with pytest.raises(ValueError) as err:
        PODSConfig(output_dir=str(tmp_path), num_generations=4, pods_m=m, use_cpu=True)
    text = str(err.value)
    assert "a kept group of one rollout" not in text  # m = 1's reason, which is not m <= 0's
    assert ("keeps no rollout" if m == 0 else "is negative") in text
    assert "set pods_m between 2 and num_generations=4" in text
    proc = subprocess.run(
        [sys.executable, "-m", "pods_repro", "validate", "tiny_a", f"rollout.m={m}"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2
    assert ("keeps no rollout" if m == 0 else "is negative") in proc.stderr
    assert "a kept group of one rollout" not in proc.stderr


def test_help_texts_list_every_registered_rule():
    from transformers import HfArgumentParser

    from pods.selectors import RULES

    help_text = " ".join(HfArgumentParser(PODSConfig).format_help().split())  # a TrlParser script's --help
    out = subprocess.run([sys.executable, "-m", "pods_repro", "config", "rollout.rule"], capture_output=True, text=True)
    assert "max_variance_shortest" in RULES
    for rule in RULES:  # the library's own rules in its --help; every rule of the reproduction in `pods config`
        assert rule in help_text.rsplit("--pods_rule", 1)[1].split("--pods_normalize")[0], rule
    for rule in registry.RULES:
        assert rule in out.stdout, rule


@pytest.mark.parametrize(
    ("typo", "meant"), [("pods_M", "pods_m"), ("pods_rulle", "pods_rule"), ("learning_rat", "learning_rate")]
)
def test_a_misspelt_pods_config_field_names_the_closest_one(tmp_path, typo, meant):
    """PODSConfig(pods_M=4) was a bare TypeError from the dataclass; the trainer's keywords said the fix."""
    with pytest.raises(TypeError) as err:
        PODSConfig(output_dir=str(tmp_path), num_generations=4, use_cpu=True, **{"pods_m": 2, typo: 4})
    assert f"pods.PODSConfig got an unknown keyword argument {typo!r}; did you mean {meant}?" == str(err.value)


@pytest.mark.parametrize("name", ["pods_ga_same_prompt", "pods_seeded_generation", "pods_filter_zero_std"])
def test_a_string_for_a_boolean_option_is_refused(tiny_policy_dir, tmp_path, name):
    """`pods_ga_same_prompt="false"` is truthy: it would turn on what it says to turn off."""
    with pytest.raises(ValueError, match=rf"pods.PODSConfig: {name}='false' must be True or False"):
        PODSConfig(output_dir=str(tmp_path), num_generations=4, pods_m=2, use_cpu=True, **{name: "false"})
    assert getattr(PODSConfig(output_dir=str(tmp_path), num_generations=4, pods_m=2, use_cpu=True), name) is False
    with pytest.raises(ValueError, match=rf"pods.PODSGRPOTrainer: {name}='false' must be True or False"):
        _build(tiny_policy_dir, tmp_path, pods_m=2, **{name: "false"})


def test_a_string_for_a_trainer_only_boolean_is_refused(tiny_policy_dir, tmp_path):
    from pods_repro.trainer import ReproTrainer

    with pytest.raises(ValueError, match=r"pods_strict_rewards='no' must be True or False"):
        _build(tiny_policy_dir, tmp_path, pods_m=2, pods_strict_rewards="no")
    with pytest.raises(ValueError, match=r"pods_fast_decode='no' must be True or False"):  # the reproduction's own
        _build(tiny_policy_dir, tmp_path, trainer_cls=ReproTrainer, pods_m=2, pods_fast_decode="no")


def test_a_skip_probability_without_the_skip_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"pods_skip_prob=0.3 is the skip probability of pods_skip_after"):
        PODSConfig(output_dir=str(tmp_path), num_generations=4, pods_m=2, use_cpu=True, pods_skip_prob=0.3)
    args = PODSConfig(output_dir=str(tmp_path), num_generations=4, pods_m=2, use_cpu=True, pods_skip_after=1,
                      pods_skip_prob=0.3)  # fmt: skip
    assert args.pods_skip_prob == 0.3
