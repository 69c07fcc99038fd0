"""The PODS hook against the installed TRL: the internals it overrides, and loss equivalence.

If a TRL upgrade moves an internal, these tests fail with a message naming it (method, expected
signature, or the keys of the dict ``_generate_and_score_completions`` returns). The equivalence
tests check that, on a fixed batch, the loss TRL computes equals ``pods.grpo.policy_loss`` for both
aggregations (``sequence`` = TRL ``loss_type="grpo"``, ``token`` = ``bnpo``), with ratios away from 1
(so clipping is active) and a KL term.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from trl import GRPOTrainer

from pods.grpo import pods_advantages, policy_loss
from pods.selectors import select
from pods.trainer import (
    HF_PRIVATE_METHODS,
    ROW_KEYS,
    SCALAR_KEYS,
    TRL_HOOKS,
    PODSGRPOTrainer,
    TRLCompatError,
    check_trl_compat,
    downsample_rows,
)


def r_len(completions, **kwargs):
    """A deterministic reward that varies within a group: completion length mod 7."""
    return [float(len(c) % 7) for c in completions]


def r_digits(completions, **kwargs):
    return [0.25 * sum(ch.isdigit() for ch in c[:8]) for c in completions]


def test_trl_internals_have_the_expected_signatures():
    for name, expected in TRL_HOOKS.items():
        fn = getattr(GRPOTrainer, name, None)
        assert fn is not None, f"TRL moved GRPOTrainer.{name}: the PODS hook overrides it (pods/trainer/hook.py)"
        params = tuple(inspect.signature(fn).parameters)
        assert params[: len(expected)] == expected, (
            f"TRL changed GRPOTrainer.{name}{params}; the PODS hook expects {expected}"
        )
    check_trl_compat()  # the runtime check agrees


def test_check_trl_compat_names_the_moved_internal():
    class Renamed(GRPOTrainer):
        pass

    Renamed._calculate_rewards = lambda self, inputs, prompts: None  # a changed signature
    with pytest.raises(TRLCompatError, match=r"_calculate_rewards changed signature"):
        check_trl_compat(Renamed)

    Gone = type("Gone", (), {k: getattr(GRPOTrainer, k) for k in TRL_HOOKS if k != "_generate_single_turn"})
    with pytest.raises(TRLCompatError, match=r"_generate_single_turn no longer exists"):
        check_trl_compat(Gone)


@pytest.mark.parametrize(
    ("moved", "message"),
    [
        ("_load_from_checkpoint", r"_load_from_checkpoint no longer exists"),
        ("_save_checkpoint", r"_save_checkpoint no longer exists"),
        ("multi_objective_aggregation", r"no longer sets self\.multi_objective_aggregation"),
        ("use_transformers_continuous_batching", r"no longer sets self\.use_transformers_continuous_batching"),
        ("shuffle_dataset", r"no longer sets self\.shuffle_dataset"),
        ("vllm_generation", r"no longer sets self\.vllm_generation"),
        ("_last_loaded_step", r"no longer sets self\._last_loaded_step"),
    ],
)
def test_check_trl_compat_guards_every_private_it_uses(moved, message, tmp_path, monkeypatch):
    """Each TRL/HF private the PODS code reads or calls, moved: check_trl_compat names it."""
    import importlib
    import textwrap

    if moved in HF_PRIVATE_METHODS:
        fake = type("Gone", (), {k: getattr(GRPOTrainer, k) for k in {**TRL_HOOKS, **HF_PRIVATE_METHODS} if k != moved})
    else:  # a subclass whose __init__ is TRL's own source without that one assignment
        src = textwrap.dedent(inspect.getsource(GRPOTrainer.__init__)).replace(f"self.{moved} =", "self.moved =")
        assert f"self.{moved} =" not in src
        body = textwrap.indent(src, "    ")
        code = f"from __future__ import annotations\nfrom trl import GRPOTrainer\n\nclass Moved(GRPOTrainer):\n{body}"
        name = f"moved_trl_{moved.strip('_')}"  # one module per case (imports are cached)
        (tmp_path / f"{name}.py").write_text(code)
        monkeypatch.syspath_prepend(str(tmp_path))
        fake = importlib.import_module(name).Moved
    with pytest.raises(TRLCompatError, match=message):
        check_trl_compat(fake)


def test_check_trl_compat_guards_repeat_sampler_and_unwrap():
    class OldSampler:
        def __init__(self, data_source, mini_repeat_count, batch_size=1, shuffle=True, seed=None):
            pass

    with pytest.raises(TRLCompatError, match=r"RepeatSampler\.__init__ changed signature"):
        check_trl_compat(sampler_cls=OldSampler)

    def unwrap(model, accelerator):
        pass

    with pytest.raises(TRLCompatError, match=r"unwrap_model_for_generation lost parameters"):
        check_trl_compat(unwrap=unwrap)


def test_downsample_rejects_unknown_batch_keys():
    batch = {"completion_ids": torch.zeros(4, 3), "new_trl_field": torch.zeros(4)}
    with pytest.raises(TRLCompatError, match="new_trl_field"):
        downsample_rows(batch, torch.tensor([0, 2]))


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_generate_and_score_returns_known_keys(make_trainer, batch_inputs, beta):
    trainer, _ = make_trainer([r_len], f"optim.beta={beta}")
    trainer.model.train()
    inputs = batch_inputs(trainer)
    out = GRPOTrainer._generate_and_score_completions(trainer, inputs)  # TRL's own, un-down-sampled
    unknown = set(out) - set(ROW_KEYS) - set(SCALAR_KEYS)
    assert not unknown, (
        f"TRL's GRPOTrainer._generate_and_score_completions now returns {sorted(unknown)}; teach "
        "pods.trainer.downsample_rows how to cut them (ROW_KEYS / SCALAR_KEYS)"
    )
    for key in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages", "num_items_in_batch"):
        assert key in out, f"TRL's _generate_and_score_completions no longer returns {key!r}"
    assert out["completion_ids"].shape[0] == len(inputs)
    assert ("ref_per_token_logps" in out) == (beta != 0)
    # _calculate_rewards returns the rewards gathered over processes, one column per function
    rpf = trainer._pods_rewards_per_func
    assert rpf is not None
    assert rpf.shape == (len(inputs), 1), "TRL's _calculate_rewards no longer returns a (rows, reward functions) tensor"


def test_hook_equals_trl_for_vanilla_grpo(make_trainer, batch_inputs):
    """n == m: the hook keeps every row and reproduces TRL's own advantages exactly."""
    trainer, _ = make_trainer([r_len, r_digits], "rollout.n=6", "rollout.m=6", "rollout.prompts_per_step=2")
    trainer.model.train()
    inputs = batch_inputs(trainer)
    trl_out = GRPOTrainer._generate_and_score_completions(trainer, inputs)
    pods_out = trainer._generate_and_score_completions(inputs)  # same step -> same seeded rollouts
    assert torch.equal(pods_out["completion_ids"], trl_out["completion_ids"])
    assert torch.equal(pods_out["completion_mask"], trl_out["completion_mask"])
    assert trl_out["advantages"].abs().sum() > 0  # the check below is not vacuous
    torch.testing.assert_close(pods_out["advantages"], trl_out["advantages"], atol=1e-5, rtol=1e-5)
    assert int(pods_out["num_items_in_batch"]) == int(trl_out["num_items_in_batch"])


@pytest.mark.parametrize("normalize", ["after", "before"])
def test_hook_keeps_selected_rows_with_recomputed_advantages(make_trainer, batch_inputs, normalize):
    trainer, cfg = make_trainer(
        [r_len], "rollout.n=8", "rollout.m=3", "rollout.prompts_per_step=2", f"rollout.normalize={normalize}"
    )
    trainer.model.train()
    inputs = batch_inputs(trainer)
    full = GRPOTrainer._generate_and_score_completions(trainer, inputs)
    rewards_G_N = trainer._pods_rewards_per_func[:, 0].double().view(-1, 8)
    kept = trainer._generate_and_score_completions(inputs)
    keep_G_M = select(rewards_G_N, 3, rule=cfg.rollout.rule)
    rows = (torch.arange(2).unsqueeze(1) * 8 + keep_G_M).reshape(-1)
    assert kept["completion_ids"].shape[0] == 6
    assert torch.equal(kept["completion_ids"], full["completion_ids"][rows])
    assert torch.equal(kept["prompt_ids"], full["prompt_ids"][rows])
    expected = pods_advantages(rewards_G_N, keep_G_M, normalize=normalize).reshape(-1).float()
    torch.testing.assert_close(kept["advantages"], expected)
    assert int(kept["num_items_in_batch"]) == int(full["completion_mask"][rows].sum())
    logged = trainer._metrics["train"]["kept_reward"][-1]
    assert logged == pytest.approx(rewards_G_N.gather(1, keep_G_M).mean().item())


@pytest.mark.parametrize(("aggregation", "loss_type"), [("sequence", "grpo"), ("token", "bnpo")])
def test_trl_loss_equals_pods_reference(make_trainer, batch_inputs, aggregation, loss_type):
    trainer, cfg = make_trainer(
        [r_len],
        "optim.beta=0.04",
        f"optim.aggregation={aggregation}",
        "optim.epsilon=0.2",
        "optim.epsilon_high=0.28",
        "rollout.n=8",
        "rollout.m=4",
    )
    assert trainer.loss_type == loss_type
    trainer.model.train()
    batch = trainer._generate_and_score_completions(batch_inputs(trainer))
    model = trainer.model
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    T = batch["completion_ids"].shape[1]
    with torch.no_grad():
        logp_B_T, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, attn, T)
    gen = torch.Generator().manual_seed(0)
    # Move the "old" policy away so that ratios leave [1 - eps, 1 + eps_high] and clipping bites.
    batch["old_per_token_logps"] = logp_B_T + 0.3 * torch.randn(logp_B_T.shape, generator=gen)
    batch["ref_per_token_logps"] = logp_B_T + 0.2 * torch.randn(logp_B_T.shape, generator=gen)
    mask = batch["completion_mask"].clone()
    mask[0, 3:] = 0  # uneven lengths, so the two aggregations differ
    batch["completion_mask"] = mask
    trainer.current_gradient_accumulation_steps = 1
    loss_trl = trainer._compute_loss(model, batch)

    with torch.no_grad():
        logp_B_T, _, _ = trainer._get_per_token_logps_and_entropies(
            model, ids, torch.cat([batch["prompt_mask"], mask], 1), T
        )

    def reference(agg: str):
        return policy_loss(
            logp_B_T,
            batch["old_per_token_logps"],
            batch["advantages"],
            mask,
            epsilon=0.2,
            epsilon_high=0.28,
            beta=0.04,
            ref_logp_B_T=batch["ref_per_token_logps"],
            aggregation=agg,
        )

    loss_ref, stats = reference(aggregation)
    assert stats["clip_frac"] > 0  # clipping is exercised
    assert float(loss_trl.detach()) == pytest.approx(float(loss_ref), abs=1e-6, rel=1e-6)
    loss_other, _ = reference("token" if aggregation == "sequence" else "sequence")
    assert abs(float(loss_other) - float(loss_trl.detach())) > 1e-5  # the aggregation really matters on this batch


def test_pods_trainer_checks_batch_geometry(make_trainer):
    trainer, _ = make_trainer([r_len])
    assert trainer.args.per_device_train_batch_size == trainer.num_generations  # P x n rows, P = 1
    assert trainer.args.steps_per_generation == trainer.args.gradient_accumulation_steps == 1
    assert isinstance(trainer, PODSGRPOTrainer)
