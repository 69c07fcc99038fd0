"""The fidelity switch (paper | code), its options, and no forward over discarded rollouts.

- no forward over discarded rollouts: every forward pass of a PODS step outside generation runs on the
  m kept rows per group (policy and reference), and gives the same reference log-probs as TRL's all-n forward; the vLLM
  importance-sampling correction is off by default and, when on, computed on the kept rows;
- schedule: the (e)/(f) cosine horizon and warmup per arm, as the authors' code counts an epoch;
- options: each option (top_k, token_group, logprob_temperature, eval.metric, task.math_gold,
  load_in_4bit) on CPU, the 4-bit load path on a GPU (marked ``gpu``);
- the table: every arm of the paper sheet under both switch values against docs/fidelity.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from trl import GRPOTrainer

from pods.selectors import select
from pods_repro import registry
from pods_repro.config import ConfigError, fidelity, load_config
from pods_repro.evaluation import HFGenerator, evaluate_policy
from pods_repro.rewards import eval_metrics
from pods_repro.textutil import last_boxed, last_boxed_code
from pods_repro.trainer import (
    TRLCompatError,
    build_grpo_config,
    check_trl_compat,
    pods_trainer_kwargs,
    step_plan,
)

REPO = Path(__file__).resolve().parents[2]
EXP = REPO / "experiments"


def r_len(completions, **kwargs):
    """A deterministic reward that varies within a group: completion length mod 7."""
    return [float(len(c) % 7) for c in completions]


# ---------------------------------------------------------------------------------------------
# no forward over discarded rollouts
# ---------------------------------------------------------------------------------------------
class RowCounter:
    """Forward hooks counting the batch rows of every forward of the given models outside generation."""

    def __init__(self, trainer, models: dict):
        self.rows: dict[str, list[int]] = {name: [] for name in models}
        self.generating = False
        self.handles = [
            model.register_forward_hook(self._hook(name), with_kwargs=True) for name, model in models.items()
        ]
        original = trainer._generate

        def generate(prompts):
            self.generating = True
            try:
                return original(prompts)
            finally:
                self.generating = False

        trainer._generate = generate

    def _hook(self, name):
        def hook(module, args, kwargs, output):
            if not self.generating:
                ids = kwargs.get("input_ids", args[0] if args else None)
                self.rows[name].append(int(ids.shape[0]))

        return hook


@pytest.mark.parametrize(("n", "m"), [(8, 2), (4, 4)])
def test_every_forward_of_a_pods_step_runs_on_the_kept_rows(make_trainer, batch_inputs, n, m):
    """beta > 0: reference and loss forwards see P x m rows (m per group), never n; generation aside."""
    trainer, _ = make_trainer(
        [r_len], "optim.beta=0.04", f"rollout.n={n}", f"rollout.m={m}", "rollout.prompts_per_step=2"
    )
    assert trainer.ref_model is not None  # full-parameter tiny policy: a separate reference model
    counter = RowCounter(trainer, {"policy": trainer.model, "ref": trainer.ref_model})
    trainer.model.train()
    inputs = batch_inputs(trainer)
    assert len(inputs) == 2 * n
    batch = trainer._prepare_inputs(inputs)  # generation, rewards, selection, reference log-probs
    trainer.current_gradient_accumulation_steps = 1
    trainer.compute_loss(trainer.model, batch)  # the update's forward
    assert counter.rows["ref"] == [2 * m], counter.rows
    assert counter.rows["policy"] == [2 * m], counter.rows
    assert batch["ref_per_token_logps"].shape[0] == 2 * m


def test_reference_logps_on_kept_rows_equal_trls_all_n_forward(make_trainer, batch_inputs):
    trainer, cfg = make_trainer([r_len], "optim.beta=0.04", "rollout.n=8", "rollout.m=3", "rollout.prompts_per_step=2")
    trainer.model.train()
    inputs = batch_inputs(trainer)
    full = GRPOTrainer._generate_and_score_completions(trainer, inputs)  # TRL: reference over all 16 rows
    rewards_G_N = trainer._pods_rewards_per_func[:, 0].double().view(-1, 8)
    kept = trainer._generate_and_score_completions(inputs)  # same step -> same seeded rollouts
    keep_G_M = select(rewards_G_N, 3, rule=cfg.rollout.rule)
    rows = (torch.arange(2).unsqueeze(1) * 8 + keep_G_M).reshape(-1)
    assert torch.equal(kept["completion_ids"], full["completion_ids"][rows])
    mask = kept["completion_mask"].bool()
    torch.testing.assert_close(
        kept["ref_per_token_logps"][mask], full["ref_per_token_logps"][rows][mask], atol=1e-5, rtol=1e-5
    )
    assert trainer.beta == 0.04
    assert trainer.vllm_importance_sampling_correction is False


def test_importance_sampling_correction_is_off_by_default(tmp_path):
    for name in ("a_gsm8k_qwen3b", "b_gsm8k_llama3b", "e_gsm8k_qwen3b_8gpu"):
        for fid in registry.FIDELITY:
            cfg = load_config(EXP / f"{name}.yaml", [f"fidelity={fid}"], check_machine=False)
            args = build_grpo_config(cfg, tmp_path, cfg.hardware.num_processes, False, 10)
            assert args.vllm_importance_sampling_correction is False, (name, fid)
    cfg = load_config(EXP / "a_gsm8k_qwen3b.yaml", ["rollout.vllm_is_correction=true"], check_machine=False)
    assert build_grpo_config(cfg, tmp_path, 1, False, 10).vllm_importance_sampling_correction is True
    with pytest.raises(ConfigError, match="rollout.vllm_is_correction.*backend is not vllm"):
        load_config(EXP / "tiny_a.yaml", ["rollout.vllm_is_correction=true"])


def test_importance_sampling_ratio_is_computed_on_the_kept_rows(make_trainer, batch_inputs):
    """With the correction on (vLLM), the policy's log-probs and TRL's masked ratio come from the kept rows."""
    trainer, _ = make_trainer([r_len], "rollout.n=8", "rollout.m=2")
    trainer.model.train()
    kept = trainer._generate_and_score_completions(batch_inputs(trainer))
    assert "old_per_token_logps" not in kept
    rows, width = kept["completion_ids"].shape
    sampling = torch.zeros(rows, width)  # row 0: ratio exp(sum logp) < 1, kept
    sampling[1] = -20.0  # row 1: vLLM far below the policy, ratio exp(sum(logp + 20)) > 3: masked to 0
    kept["sampling_per_token_logps"] = sampling
    counter = RowCounter(trainer, {"policy": trainer.model})
    trainer.use_vllm, trainer.vllm_importance_sampling_correction = True, True
    try:
        trainer._pods_kept_forwards(kept)
    finally:
        trainer.use_vllm, trainer.vllm_importance_sampling_correction = False, False
    assert counter.rows["policy"] == [rows] == [2]
    old = kept["old_per_token_logps"]
    mask = kept["completion_mask"]
    expected = torch.exp(((old - sampling) * mask).sum(-1, keepdim=True))
    expected = expected.masked_fill(expected > trainer.vllm_importance_sampling_clip_max, 0.0)
    torch.testing.assert_close(kept["importance_sampling_ratio"], expected)
    assert kept["importance_sampling_ratio"].shape == (rows, 1)
    assert float(kept["importance_sampling_ratio"][1]) == 0.0  # masked as TRL does
    assert 0.0 < float(kept["importance_sampling_ratio"][0]) < 1.0


# ---------------------------------------------------------------------------------------------
# (e)/(f) learning-rate schedule per arm
# ---------------------------------------------------------------------------------------------
SCHEDULE = {("pods", 4): (233, 24), ("grpo_ga", 16): (58, 6)}


@pytest.mark.parametrize("letter", ["e", "f"])
@pytest.mark.parametrize("fid", registry.FIDELITY)
def test_multi_gpu_schedule_spans_the_authors_epoch_per_arm(letter, fid, tmp_path):
    setting = registry.SETTINGS[letter]
    arms = {
        arm.role: arm for arm in registry.read_sheet(REPO / "config/runs.tsv") if arm.setting == letter and arm.role
    }
    for role, arm in arms.items():
        overrides = [f"{k}={v}" for k, v in arm.overrides.items()]
        cfg = load_config(REPO / setting.experiments["paper"], [*overrides, f"fidelity={fid}"], check_machine=False)
        label = "pods" if role == "pods" else "grpo_ga"
        horizon, warmup = SCHEDULE[(label, cfg.optim.grad_accum)]
        max_steps, sched = step_plan(cfg, fidelity.GSM8K_TRAIN_PROMPTS)
        assert (max_steps, sched) == (horizon, horizon), (letter, role)
        args = build_grpo_config(cfg, tmp_path, cfg.hardware.num_processes, False, max_steps)
        assert args.max_steps == horizon
        assert args.lr_scheduler_type == "cosine"
        assert args.get_warmup_steps(sched) == warmup  # HF: ceil(0.1 x horizon)
        assert pods_trainer_kwargs(cfg, max_steps, sched)["pods_scheduler_steps"] == horizon
    rows = {
        (r["arm"], r["grad_accum"]): (r["horizon"], r["warmup"])
        for r in fidelity.schedule_rows()
        if r["setting"] == letter
    }
    assert rows == SCHEDULE  # the docs table says the same


def test_trainer_scheduler_uses_the_horizon(make_trainer):
    """The LR scheduler HF builds spans pods_scheduler_steps with ceil(0.1 x horizon) warmup steps."""
    trainer, _ = make_trainer([r_len], "optim.scheduler=cosine", "optim.warmup_ratio=0.1", "optim.scheduler_steps=58")
    trainer.create_optimizer_and_scheduler(num_training_steps=4)
    sched, lr = trainer.lr_scheduler, trainer.args.learning_rate
    lrs = []
    for _ in range(8):
        lrs.append(sched.get_last_lr()[0])
        trainer.optimizer.step()
        sched.step()
    assert lrs[0] == 0.0
    assert lrs[5] < lr
    assert lrs[6] == pytest.approx(lr)


# ---------------------------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------------------------
def _logps(trainer, batch):
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    T = batch["completion_ids"].shape[1]
    with torch.no_grad():
        fused, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, attn, T)
        logits = trainer.model(input_ids=ids, attention_mask=attn).logits[:, -T - 1 : -1].float()  # unfused forward
    return fused, logits, batch["completion_ids"], batch["completion_mask"].bool()


@pytest.mark.parametrize("mode", ["sampling", "none"])
def test_logprob_temperature(make_trainer, batch_inputs, mode):
    trainer, _ = make_trainer([r_len], "rollout.temperature=0.5", f"optim.logprob_temperature={mode}")
    trainer.model.train()
    batch = trainer._generate_and_score_completions(batch_inputs(trainer))
    fused, logits, ids, mask = _logps(trainer, batch)
    scale = 0.5 if mode == "sampling" else 1.0
    expected = torch.log_softmax(logits / scale, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(fused[mask], expected[mask], atol=1e-4, rtol=1e-4)
    other = torch.log_softmax(logits / (1.5 - scale), -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    assert (fused[mask] - other[mask]).abs().max() > 1e-2  # the two modes really differ here
    assert trainer.temperature == 0.5  # sampling stays at T


def test_trl_compat_guards_the_fidelity_hooks():
    class NoShuffle(GRPOTrainer):
        def _prepare_inputs(self, generation_batch):  # a TRL that no longer shuffles here
            return generation_batch

    with pytest.raises(TRLCompatError, match=r"_prepare_inputs no longer contains 'shuffle_sequence_dict"):
        check_trl_compat(NoShuffle)

    class NoGate(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):  # reference log-probs no longer gated on beta
            return inputs

    with pytest.raises(TRLCompatError, match=r"gated on self\.beta"):
        check_trl_compat(NoGate)


def test_token_group_keeps_one_group_per_micro_batch(make_trainer, batch_inputs):
    trainer, _ = make_trainer(
        [r_len], "rollout.n=4", "rollout.m=2", "optim.grad_accum=4", "optim.aggregation=token_group"
    )
    assert trainer.loss_type == "bnpo"
    assert trainer.pods_keep_groups
    trainer.model.train()
    inputs = batch_inputs(trainer)
    kept = trainer._generate_and_score_completions(inputs)  # 4 groups x 2 kept rows, in order
    trainer._step = 0
    trainer._prepare_inputs(inputs)  # same step -> same rollouts; split into GA micro-batches
    micro = trainer._buffered_inputs
    assert len(micro) == 4
    for k, mb in enumerate(micro):
        assert torch.equal(mb["completion_ids"], kept["completion_ids"][2 * k : 2 * k + 2]), k
        assert torch.equal(mb["advantages"], kept["advantages"][2 * k : 2 * k + 2]), k


def test_token_aggregation_still_shuffles(make_trainer, batch_inputs):
    trainer, _ = make_trainer([r_len], "rollout.n=4", "rollout.m=2", "optim.grad_accum=4", "optim.aggregation=token")
    assert not trainer.pods_keep_groups
    trainer.model.train()
    inputs = batch_inputs(trainer)
    kept = trainer._generate_and_score_completions(inputs)
    trainer._step = 0
    torch.manual_seed(1)
    trainer._prepare_inputs(inputs)
    joined = torch.cat([mb["completion_ids"] for mb in trainer._buffered_inputs])
    assert not torch.equal(joined, kept["completion_ids"])  # TRL's shuffle mixes groups across micro-batches


def test_top_k_reaches_rollouts_and_evaluation(make_trainer, tmp_path):
    cfg = load_config(EXP / "e_gsm8k_qwen3b_8gpu.yaml", ["rollout.top_k=50"], check_machine=False)
    assert build_grpo_config(cfg, tmp_path, 8, False, 10).top_k == 50
    assert build_grpo_config(load_config(EXP / "tiny_a.yaml"), tmp_path, 1, False, 10).top_k == 0
    trainer, _ = make_trainer([r_len], "rollout.top_k=5")
    assert trainer.top_k == 5  # TRL passes it to the rollouts' generation config
    with trainer.eval_generator() as gen:
        assert gen.top_k == 5
        assert gen._generation_config(0.9, 8).top_k == 5
    with pytest.raises(ConfigError, match="rollout.top_k"):
        load_config(EXP / "tiny_a.yaml", ["rollout.top_k=-1"])


def test_top_k_truncates_evaluation_sampling(tiny_policy_dir):
    from pods_repro.models import load_policy

    model, tok = load_policy(str(tiny_policy_dir))
    vocab = set()
    for k, label in ((1, "greedy-like"), (0, "off")):
        gen = HFGenerator(model, tok, top_k=k)
        outs = gen.generate(["1+2="], 8, 1.0, 6, seed=0)[0]
        vocab.add((label, len(set(outs))))
    assert ("greedy-like", 1) in vocab  # top_k=1: all 8 samples identical
    assert any(label == "off" and n > 1 for label, n in vocab)


def test_eval_metric_code_is_the_authors_lenient_rule():
    text = "<think>\n17 + 1\n</think>\n<answer>\n17\n</answer> sorry, 18"
    assert eval_metrics(text, "#### 18", "gsm8k", "paper", "paper")["accuracy"] == 0.0
    assert eval_metrics(text, "#### 18", "gsm8k", "paper", "code")["accuracy"] == 1.0  # last number
    whole = "18"
    assert eval_metrics(whole, "#### 18", "gsm8k", "paper", "code")["accuracy"] == 1.0
    block = "<answer>\n\\frac{1}{2}\n</answer>"
    assert eval_metrics(block, "\\boxed{\\frac{1}{2}}", "math", "paper", "code")["accuracy"] == 1.0
    # letter tasks keep their rule
    assert eval_metrics("<answer>\nB\n</answer>", "B", "chemistry", "paper", "code")["accuracy"] == 1.0
    with pytest.raises(ValueError, match="evaluation metric"):
        eval_metrics(text, "#### 18", "gsm8k", "paper", "lenient")
    with pytest.raises(ConfigError, match="eval.metric"):
        load_config(EXP / "tiny_a.yaml", ["eval.metric=lenient"])


def test_evaluate_policy_passes_the_metric():
    class Fixed:
        last_lengths = None

        def generate(self, prompts, n, temperature, max_tokens, seed=None):
            return [["<answer>\n17\n</answer> no: 18"] * n for _ in prompts]

    examples = [{"prompt": "q", "answer": "#### 18"}]
    paper = evaluate_policy(Fixed(), examples, "gsm8k", 1, 1.0, 8, metric="paper")
    code = evaluate_policy(Fixed(), examples, "gsm8k", 1, 1.0, 8, metric="code")
    assert (paper["accuracy"], code["accuracy"]) == (0.0, 1.0)


def test_math_gold_code_cuts_at_the_first_brace(tmp_path):
    solution = "so the answer is $\\boxed{\\frac{1}{2}}$."
    assert last_boxed(solution) == "\\frac{1}{2}"
    assert last_boxed_code(solution) == "\\frac{1"
    assert last_boxed_code("\\boxed{12}") == "12"
    assert last_boxed_code("no box") is None
    from pods_repro.data import load_task

    path = tmp_path / "math.jsonl"
    path.write_text(json.dumps({"problem": "half?", "solution": solution}) + "\n")
    balanced = load_task("math", "train", path=str(path), prompt_style="plain")
    code = load_task("math", "train", path=str(path), prompt_style="plain", math_gold="code")
    assert (balanced[0]["answer"], code[0]["answer"]) == ("\\frac{1}{2}", "\\frac{1")
    with pytest.raises(ConfigError, match="task.math_gold"):
        load_config(EXP / "tiny_a.yaml", ["task.math_gold=first"])


def test_load_in_4bit_is_refused_on_cpu_with_a_clear_message(tiny_policy_dir):
    with pytest.raises(ConfigError, match=r"policy.load_in_4bit.*need a CUDA GPU"):
        load_config(EXP / "tiny_a.yaml", ["policy.load_in_4bit=true", "policy.lora.enabled=true"])
    # validated without the machine check, a GPU config passes here
    cfg = load_config(EXP / "a_gsm8k_qwen3b.yaml", ["fidelity=code"], check_machine=False)
    assert cfg.policy.load_in_4bit
    from pods_repro.models import PolicyError, load_policy

    if not torch.cuda.is_available():
        with pytest.raises(PolicyError, match="needs a CUDA GPU"):
            load_policy(str(tiny_policy_dir), device="cpu", lora={"rank": 8, "alpha": 8}, load_in_4bit=True)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="bitsandbytes 4-bit needs CUDA")
def test_load_in_4bit_trains_lora_on_a_4bit_base(tiny_policy_dir):
    pytest.importorskip("bitsandbytes")
    from pods_repro.models import load_policy

    model, tok = load_policy(
        str(tiny_policy_dir), dtype="bfloat16", device="cuda", lora={"rank": 8, "alpha": 8}, load_in_4bit=True
    )
    kinds = {type(m).__name__ for m in model.modules()}
    assert "Linear4bit" in kinds, kinds
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert trainable
    assert all(p.dtype != torch.uint8 for p in trainable)
    ids = tok(["1+2="], return_tensors="pt").input_ids.cuda()
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    assert all(p.grad is not None for p in trainable)


def test_fidelity_code_needs_a_paper_setting():
    with pytest.raises(ConfigError, match=r"fidelity.*paper settings only"):
        load_config(EXP / "tiny_a.yaml", ["fidelity=code"])
    with pytest.raises(ConfigError, match="fidelity"):
        load_config(EXP / "tiny_a.yaml", ["fidelity=authors"])


def test_fidelity_code_resolves_at_load_and_single_options_override_it(tmp_path):
    a = EXP / "a_gsm8k_qwen3b.yaml"
    cfg = load_config(a, ["fidelity=code", "optim.max_grad_norm=0.5"], check_machine=False)
    assert cfg.fidelity == "code"
    assert cfg.optim.optimizer == "adamw_8bit"
    assert cfg.task.reward == "code_jun25"
    assert cfg.optim.max_grad_norm == 0.5  # the command line wins over the table
    from pods_repro.config import default_run_dir, run_name, to_dict

    assert to_dict(cfg)["policy"]["load_in_4bit"] is True  # config.json shows the resolved values
    assert run_name(cfg) == "sel~max_variance_n~64_m~16_clip~0.5"  # named against the YAML at fidelity=code
    assert str(default_run_dir(cfg)).startswith("results/runs-code/")


# ---------------------------------------------------------------------------------------------
# every arm under both switch values, against docs/fidelity.md
# ---------------------------------------------------------------------------------------------
def test_docs_fidelity_is_up_to_date():
    committed = (REPO / "docs" / "fidelity.md").read_text()
    assert committed == fidelity.render_markdown(), (
        "docs/fidelity.md is stale: regenerate it with `python -m pods_repro.config.fidelity > docs/fidelity.md`"
    )
    assert "docs/fidelity.md" in (REPO / "README.md").read_text()


def _doc_rows() -> dict[str, dict[str, str]]:
    """The departures table of docs/fidelity.md: option -> {column: cell}."""
    text = (REPO / "docs" / "fidelity.md").read_text()
    section = text.split("## Departures", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for ln in lines[2:]:
        cells = [c.strip() for c in ln.strip("|").split(" | ")]
        row = dict(zip(head, cells, strict=True))
        rows[row["option"].strip("`")] = row
    return rows


def _doc_value(cell: str, letter: str) -> str | None:
    for part in cell.split("; "):
        letters, value = part.split(": ", 1)
        if letter in letters:
            return value.strip("`")
    return None


def get_key(cfg, key):
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


def test_every_arm_resolves_to_the_docs_table_under_both_switch_values(tmp_path):
    doc = _doc_rows()
    assert set(doc) == {d.option for d in fidelity.DEPARTURES}
    dump = {}
    for arm in registry.read_sheet(REPO / "config/runs.tsv"):
        exp = REPO / registry.SETTINGS[arm.setting].experiments["paper"]
        for fid in registry.FIDELITY:
            overrides = [f"{k}={v}" for k, v in arm.overrides.items()] + [f"fidelity={fid}"]
            cfg = load_config(exp, overrides, check_machine=False)
            max_steps, sched = step_plan(cfg, fidelity.GSM8K_TRAIN_PROMPTS)
            args = build_grpo_config(cfg, tmp_path, cfg.hardware.num_processes, False, max_steps)
            kwargs = pods_trainer_kwargs(cfg, max_steps, sched)
            trl = {
                f: getattr(args, f)
                for f in (
                    "optim", "max_grad_norm", "weight_decay", "top_k", "loss_type", "max_completion_length",
                    "vllm_importance_sampling_correction", "temperature", "beta", "learning_rate",
                    "lr_scheduler_type", "max_steps", "gradient_accumulation_steps", "num_generations",
                )
            }  # fmt: skip
            trl["warmup_steps"] = args.get_warmup_steps(sched)
            dump[f"{arm.setting}/{arm.run_name}/{fid}"] = {
                "trl": trl,
                "pods": {k: v for k, v in kwargs.items() if k != "pods_seed"},
                "options": {d.option: get_key(cfg, d.option) for d in fidelity.DEPARTURES},
            }
            for d in fidelity.DEPARTURES:
                table = d.paper if fid == "paper" else d.code
                if arm.setting not in table:
                    continue
                value = get_key(cfg, d.option)
                assert value == table[arm.setting], (arm.setting, arm.run_name, fid, d.option)
                column = "`fidelity=paper`" if fid == "paper" else "`fidelity=code`"
                assert _doc_value(doc[d.option][column], arm.setting) == fidelity._yaml(value), (d.option, fid)
                for field_name, mapping in d.trl.items():
                    assert getattr(args, field_name) == mapping[value], (d.option, field_name)
            assert kwargs["pods_logprob_temperature"] == cfg.optim.logprob_temperature
            assert kwargs["pods_keep_groups"] == (cfg.optim.aggregation == "token_group")
    (tmp_path / "resolved.json").write_text(json.dumps(dump, indent=1, default=str))
    assert len(dump) == 2 * 22
    # spot checks of the dump
    assert dump["e/sel~max_variance_n~128_m~32/code"]["trl"]["top_k"] == 50
    assert dump["e/sel~max_variance_n~128_m~32/code"]["trl"]["warmup_steps"] == 24
    assert dump["e/sel~max_variance_n~32_m~32_ga~16/paper"]["trl"]["max_steps"] == 58
    assert dump["a/sel~max_variance_n~64_m~16/code"]["pods"]["pods_logprob_temperature"] == "none"
    assert dump["a/sel~max_variance_n~64_m~16/paper"]["trl"]["optim"] == "adamw_torch"


@pytest.mark.parametrize("letter", fidelity.PAPER_LETTERS)
def test_code_overrides_cover_each_paper_setting(letter):
    name = Path(registry.SETTINGS[letter].experiments["paper"]).stem
    assert fidelity.letter_of_setting(name) == letter
    keys = {o.split("=", 1)[0] for o in fidelity.code_overrides(name)}
    assert keys == {d.option for d in fidelity.DEPARTURES if letter in d.code}


def test_the_bars_factor_on_the_fidelity_page_is_the_records():
    """docs/fidelity.md's factors between the paper's (e)/(f) bars and the released seconds per optimizer step are
    the quotients of the package's two records of them (the analysis's step counter and the paper's bars)."""
    from pods_repro.analysis.cost_model import PAPER_GLOBAL
    from pods_repro.analysis.sections import PAPER_BARS_SPS

    text = " ".join((REPO / "docs" / "fidelity.md").read_text().split())
    for letter, (ga_bar, pods_bar) in PAPER_BARS_SPS.items():
        ga, pods = PAPER_GLOBAL[letter]["ga"], PAPER_GLOBAL[letter]["pods"]
        assert f"{ga:.2f} / {ga_bar:.2f} = {ga / ga_bar:.1f}" in text, letter
        assert f"{pods:.2f} / {pods_bar:.2f} = {pods / pods_bar:.1f}" in text, letter
