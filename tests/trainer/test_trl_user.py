"""PODSGRPOTrainer as a TRL user runs it: generation at TRL's cost, the completions table of what was
trained, the length-aware rules, the rules from other papers and the zero-variance group filter, and
reward functions that return the wrong thing.

Every trainer here is built from a user's own ``GRPOConfig``/``PODSConfig`` on the cached tiny test
policy (tests/conftest.py), with cheap rewards, and trains one or two steps.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import QUIET_CPU_ARGS, build_user_trainer

from pods_repro.trainer import PODSConfig, PODSGRPOTrainer, records_to_dataset


def _args(tmp_path, cls=PODSConfig, **kw):
    base = dict(
        output_dir=str(tmp_path / "out"),
        num_generations=4,
        per_device_train_batch_size=8,  # two prompt groups of n = 4 per generation round
        gradient_accumulation_steps=1,
        max_steps=2,
        max_completion_length=8,
        learning_rate=1e-4,
        **QUIET_CPU_ARGS,
        seed=0,
    )
    if cls is PODSConfig:
        base["pods_m"] = 2
    base.update(kw)
    return cls(**base)


def _trainer(tiny_policy_dir, args, reward_funcs, **pods_kw):
    return build_user_trainer(tiny_policy_dir, args, reward_funcs, **pods_kw)[0]


def _count_generate(trainer) -> list[int]:
    """Count calls of the policy's ``generate`` (the module TRL unwraps for generation on one process)."""
    calls = []
    model = trainer.accelerator.unwrap_model(trainer.model)
    inner = model.generate

    def generate(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return inner(*args, **kwargs)

    model.generate = generate
    return calls


def _mod3(completions, **_):
    return [float(i % 3) for i in range(len(completions))]


# ----------------------------------------------------------------------------- generation at TRL's cost


def test_library_generates_once_per_round_as_trl_and_pods_train_seeds_each_group(tiny_policy_dir, tmp_path):
    # The library's default: one generate() call per generation round (all 2 x 4 rows), as trl.GRPOTrainer.
    trainer = _trainer(tiny_policy_dir, _args(tmp_path), _mod3)
    assert trainer.pods_seeded_generation is False
    calls = _count_generate(trainer)
    trainer.train()
    assert calls == [8, 8], calls  # 2 steps, one call of 8 rows each
    # Asked for (what pods train does): each prompt group under its own seed, one call per group.
    trainer = _trainer(tiny_policy_dir, _args(tmp_path, pods_seeded_generation=True), _mod3)
    calls = _count_generate(trainer)
    trainer.train()
    assert calls == [4, 4, 4, 4], calls


def test_pods_train_keeps_seeded_generation(tiny_cfg, tmp_path):
    from pods_repro.trainer import pods_trainer_kwargs

    cfg = tiny_cfg(tmp_path)
    assert pods_trainer_kwargs(cfg, 4, 4)["pods_seeded_generation"] is True


def test_seeded_generation_as_a_keyword_and_a_field_must_agree(tiny_policy_dir, tmp_path):
    with pytest.raises(ValueError, match="set it in one place"):
        _trainer(tiny_policy_dir, _args(tmp_path, pods_seeded_generation=True), _mod3, pods_seeded_generation=False)
    trainer = _trainer(tiny_policy_dir, _args(tmp_path), _mod3, pods_seeded_generation=True)
    assert trainer.pods_seeded_generation is True


# ----------------------------------------------------------------------------- the completions table


def test_completions_table_marks_the_kept_rollouts_and_their_trained_advantages(tiny_policy_dir, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    args = _args(tmp_path, max_steps=1, log_completions=True)
    trainer = _trainer(tiny_policy_dir, args, _mod3)
    trainer.train()
    table = pd.read_parquet(tmp_path / "out" / "completions" / "completions_00001.parquet")
    sel = trainer.pods_last_selection
    assert len(table) == 8  # every generated rollout is a row
    kept = table["kept"].to_numpy().reshape(2, 4)
    want = torch.zeros(2, 4, dtype=torch.bool).scatter_(1, sel["keep_G_M"], True)
    assert kept.tolist() == want.tolist()
    adv = table["advantage"].to_numpy().reshape(2, 4)
    for g in range(2):
        for j in range(4):
            if want[g, j]:
                k = sel["keep_G_M"][g].tolist().index(j)
                assert adv[g, j] == pytest.approx(sel["adv_G_M"][g, k].item(), abs=1e-6)
            else:
                assert math.isnan(adv[g, j])  # dropped: not trained on, no advantage
    # the rewards columns still show all n rollouts' rewards
    assert table["_mod3"].tolist() == [float(i % 3) for i in range(8)]


# ----------------------------------------------------------------------------- length-aware rule, group filter


def test_length_aware_rule_gets_each_rollouts_completion_length(tiny_policy_dir, tmp_path):
    from pods.selectors import select

    def correct_if_even(completions, **_):
        return [float(i % 2) for i in range(len(completions))]

    args = _args(tmp_path, max_steps=1, pods_rule="max_variance_shortest", max_completion_length=24)
    trainer = _trainer(tiny_policy_dir, args, correct_if_even)
    seen = {}
    inner = trainer._calculate_rewards

    def spy(inputs, prompts, completions, completion_ids_list):
        seen["lengths"] = [len(ids) for ids in completion_ids_list]
        return inner(inputs, prompts, completions, completion_ids_list)

    trainer._calculate_rewards = spy
    trainer.train()
    sel = trainer.pods_last_selection
    lengths = torch.tensor(seen["lengths"], dtype=torch.float64).view(2, 4)
    assert sel["lengths_G_N"].tolist() == lengths.tolist()
    assert sel["keep_G_M"].tolist() == select(sel["rewards_G_N"], 2, "max_variance_shortest", lengths=lengths).tolist()


@pytest.mark.parametrize(
    ("rule", "normalize"),
    [
        ("gfpo_shortest", "after"),
        ("gfpo_token_efficiency", "after"),
        ("cppo_abs_advantage", "before"),
        ("balanced", "after"),
    ],
)
def test_literature_rules_train_through_the_trainer(tiny_policy_dir, tmp_path, rule, normalize):
    from pods.grpo import group_advantages, pods_advantages
    from pods.selectors import select

    def token_sum_mod3(completions, completion_ids, **_):  # 0, 1 or 2, unrelated to the length
        return [float(sum(ids) % 3) for ids in completion_ids]

    # long enough that some completions end before the cap: lengths differ within the groups
    args = _args(tmp_path, max_steps=1, pods_rule=rule, pods_normalize=normalize, max_completion_length=96)
    trainer = _trainer(tiny_policy_dir, args, token_sum_mod3)
    seen = {}
    inner_rewards, inner_loss = trainer._calculate_rewards, trainer._compute_loss

    def spy_rewards(inputs, prompts, completions, completion_ids_list):
        seen["ids"] = [list(ids) for ids in completion_ids_list]
        return inner_rewards(inputs, prompts, completions, completion_ids_list)

    def spy_loss(model, inputs):
        seen["advantages"] = inputs["advantages"].clone()
        seen["tokens"] = inputs["completion_mask"].sum(1)
        return inner_loss(model, inputs)

    trainer._calculate_rewards, trainer._compute_loss = spy_rewards, spy_loss
    trainer.train()
    sel = trainer.pods_last_selection
    rewards, keep = sel["rewards_G_N"], sel["keep_G_M"]
    lengths = torch.tensor([len(ids) for ids in seen["ids"]], dtype=torch.float64).view(2, 4)
    assert rewards.view(-1).tolist() == [float(sum(ids) % 3) for ids in seen["ids"]]
    assert (lengths.amax(1) > lengths.amin(1)).any()  # not vacuous: lengths and rewards vary within a group
    assert (rewards.amax(1) > rewards.amin(1)).any()
    assert keep.tolist() == select(rewards, 2, rule, lengths=lengths).tolist()
    if rule in ("gfpo_shortest", "gfpo_token_efficiency"):
        assert sel["lengths_G_N"].tolist() == lengths.tolist()  # the length-aware rules got the token counts
    if rule == "gfpo_shortest":  # no dropped rollout is shorter than a kept one
        for g in range(2):
            dropped = [j for j in range(4) if j not in keep[g].tolist()]
            assert lengths[g, keep[g]].max() <= lengths[g, dropped].min()
    # the kept rows reach the loss (TRL shuffles the rows: compared as multisets)
    assert sorted(seen["tokens"].tolist()) == sorted(lengths.gather(1, keep).view(-1).tolist())
    # the update's advantages: the full group's with normalize="before" (CPPO), the kept set's with "after"
    want = pods_advantages(rewards, keep, normalize=normalize)
    if normalize == "before":
        assert torch.allclose(want, group_advantages(rewards).gather(1, keep))
    assert torch.allclose(sel["adv_G_M"].double(), want.double())
    got = seen["advantages"].double().sort().values
    assert torch.allclose(got, want.reshape(-1).double().sort().values, atol=1e-6)


def test_zero_std_filter_drops_groups_whose_rewards_are_all_equal(tiny_policy_dir, tmp_path):
    def first_group_flat(completions, **_):  # group 0: all rewards 1.0; group 1: 0, 1, 2, 0
        return [1.0] * 4 + [float(i % 3) for i in range(len(completions) - 4)]

    args = _args(tmp_path, max_steps=1, pods_filter_zero_std=True, log_completions=True)
    trainer = _trainer(tiny_policy_dir, args, first_group_flat)
    losses = []
    inner = trainer._compute_loss

    def spy(model, inputs):
        losses.append({k: v.clone() for k, v in inputs.items() if k in ("completion_mask", "advantages", "pods_live")})
        return inner(model, inputs)

    trainer._compute_loss = spy
    trainer.train()
    sel = trainer.pods_last_selection
    assert sel["live_G"].tolist() == [False, True]
    (batch,) = losses
    # the kept rows of group 0 are masked out of the loss; group 1's keep their tokens and advantages
    tokens = batch["completion_mask"].sum(1)
    live = batch["pods_live"].bool()
    assert live.tolist().count(False) == 2  # the m = 2 kept rows of group 0
    assert (tokens[~live] == 0).all()
    assert (tokens[live] > 0).all()
    assert batch["advantages"][batch["pods_live"] == 0].abs().sum() == 0
    log = [row for row in trainer.state.log_history if "pods/filtered_groups" in row]
    assert [row["pods/filtered_groups"] for row in log] == [1.0]
    # the kept_* metrics count only the group that entered the update (group 0's kept rewards are all equal)
    trained = sel["rewards_G_N"][1][sel["keep_G_M"][1]]
    assert log[0]["kept_reward"] == pytest.approx(trained.mean().item())
    assert log[0]["kept_reward_std"] == pytest.approx(trained.std().item())
    assert log[0]["kept_frac_reward_zero_std"] == 0.0
    assert log[0]["kept_completion_length"] == pytest.approx(tokens[live].float().mean().item())
    # the completions table marks no rollout of the filtered group as kept
    kept = list(trainer._logs["extra"]["kept"])
    assert len(kept) == 8
    assert not any(kept[:4])
    assert sum(kept[4:]) == 2


def test_zero_std_filter_averages_the_sequence_loss_over_the_live_rows(tiny_policy_dir, tmp_path):
    # loss_type grpo averages per-row losses over the rows of a micro-batch; with the filter on, over the
    # live rows: the same loss as training on the live group alone.
    def first_group_flat(completions, **_):
        return [1.0] * 4 + [float(i % 3) for i in range(len(completions) - 4)]

    args = _args(tmp_path, max_steps=1, pods_filter_zero_std=True, loss_type="grpo", learning_rate=0.0)
    trainer = _trainer(tiny_policy_dir, args, first_group_flat)
    inner = trainer._compute_loss
    out = {}

    def spy(model, inputs):
        loss = inner(model, inputs)
        live = inputs["pods_live"].bool()
        alone = inner(
            model, {k: (v[live] if k != "num_items_in_batch" else v) for k, v in inputs.items() if k != "pods_live"}
        )
        out["pair"] = (loss.detach(), alone.detach())
        return loss

    trainer._compute_loss = spy
    trainer.train()
    loss, alone = out["pair"]
    torch.testing.assert_close(loss, alone)


def test_filter_and_length_rule_are_off_by_default(tiny_policy_dir, tmp_path):
    args = _args(tmp_path, max_steps=1)
    assert args.pods_filter_zero_std is False
    trainer = _trainer(tiny_policy_dir, args, _mod3)
    trainer.train()
    assert trainer.pods_last_selection["live_G"] is None
    assert trainer.pods_last_selection["lengths_G_N"] is None
    assert not any("pods/filtered_groups" in row for row in trainer.state.log_history)


# ----------------------------------------------------------------------------- reward functions' output


def _strings(completions, **_):
    return ["1.0" for _ in completions]


def _nones(completions, **_):
    return [None for _ in completions]


def _a_float(completions, **_):
    return 1.0


@pytest.mark.parametrize(
    ("func", "match"),
    [
        (
            _strings,
            r"^reward function '_strings' returned str '1.0' for completion 0 of 8; it must return a list of floats",
        ),
        (_a_float, r"^reward function '_a_float' returned float 1.0; it must return a list of floats"),
        (_nones, r"reward function '_nones' returned None \(or NaN\) for every completion of the batch"),
    ],
)
def test_a_reward_function_returning_the_wrong_thing_is_named(tiny_policy_dir, tmp_path, func, match):
    trainer = _trainer(tiny_policy_dir, _args(tmp_path, max_steps=1), func)
    with pytest.raises((TypeError, ValueError), match=match) as err:
        trainer.train()
    assert "\n" not in str(err.value)
    assert "pods/trainer" in err.traceback[-1].path.as_posix()  # refused by PODS, not deep in TRL


def test_reward_check_keeps_async_reward_functions_async(tiny_policy_dir, tmp_path):
    async def async_mod3(completions, **_):
        return [float(i % 3) for i in range(len(completions))]

    trainer = _trainer(tiny_policy_dir, _args(tmp_path, max_steps=1), async_mod3)
    trainer.train()
    assert trainer.pods_last_selection["rewards_G_N"].tolist() == [[0.0, 1.0, 2.0, 0.0], [1.0, 2.0, 0.0, 1.0]]


# ----------------------------------------------------------------------------- epoch and model card


@pytest.mark.parametrize(("prompts", "max_steps", "want"), [(8, 2, [0.25, 0.5]), (4, 4, [0.5, 1.0, 1.5, 2.0])])
def test_epoch_is_counted_in_data_epochs_as_trl_counts_it(tiny_policy_dir, tmp_path, prompts, max_steps, want):
    # 2 prompts per step: 8 prompts are 4 steps per data epoch (max_steps=2 stops half-way through it),
    # 4 prompts are 2 steps (max_steps=4 runs two epochs).
    from trl import GRPOConfig, GRPOTrainer

    from pods_repro.data import load_task
    from pods_repro.models import load_policy

    records = load_task("arith", "train", prompt_style="plain", seed=0)[:prompts]
    runs = {}
    for name, (trainer_cls, args_cls) in {
        "pods": (PODSGRPOTrainer, PODSConfig),
        "trl": (GRPOTrainer, GRPOConfig),
    }.items():
        model, tok = load_policy(str(tiny_policy_dir), dtype="float32", device="cpu")
        args = _args(tmp_path / name, cls=args_cls, max_steps=max_steps, learning_rate=0.0)
        trainer = trainer_cls(
            model=model, reward_funcs=_mod3, args=args, train_dataset=records_to_dataset(records), processing_class=tok
        )
        trainer.train()
        runs[name] = trainer
    epochs = {name: [row["epoch"] for row in tr.state.log_history if "loss" in row] for name, tr in runs.items()}
    assert epochs["trl"] == want
    assert epochs["pods"] == epochs["trl"]
    assert runs["pods"].state.epoch == runs["trl"].state.epoch == want[-1]


def test_a_lora_checkpoint_carries_the_pods_model_card(tiny_policy_dir, tmp_path):
    from peft import LoraConfig, get_peft_model

    from pods_repro.models import load_policy

    model, _ = load_policy(str(tiny_policy_dir), dtype="float32", device="cpu")
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    args = _args(tmp_path, max_steps=1, save_strategy="steps", save_steps=1)
    trainer, _ = build_user_trainer(tiny_policy_dir, args, _mod3, model=model, pods_base_model="tiny:test-policy")
    trainer.train()
    trainer.save_model(str(tmp_path / "final"))
    for folder in (tmp_path / "out" / "checkpoint-1", tmp_path / "final"):
        assert (folder / "adapter_model.safetensors").is_file()
        card = (folder / "README.md").read_text()
        assert "2504.13818" in card, card[:400]  # the PODS card, not PEFT's blank template
        assert "tiny:test-policy" in card
        assert "library_name: peft" in card  # PEFT's metadata added to it
        assert "[More Information Needed]" not in card
