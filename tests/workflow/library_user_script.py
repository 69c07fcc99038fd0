"""A TRL user's GRPO script with PODS, on nothing but the library's core install (no `pods_repro`, no extras).

The model is a two-layer Llama built from its config and a character tokenizer built in place, so nothing is
downloaded; the task: write as many 'a's as possible. Prints one JSON line the slow test reads.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile

from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from pods import PODSConfig, PODSGRPOTrainer

VOCAB = ["<pad>", "<eos>", "<unk>", *"abcdefgh xyz?"]


def build_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(VOCAB)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def count_a(completions, **kwargs) -> list[float]:
    return [float(c.count("a")) for c in completions]


def main() -> int:
    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(VOCAB), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0, eos_token_id=1, bos_token_id=1,
    )  # fmt: skip
    model = LlamaForCausalLM(config)
    data = Dataset.from_dict({"prompt": ["abc?", "xyz?", "bad?", "hag?"] * 4})
    args = PODSConfig(
        output_dir=tempfile.mkdtemp(), max_steps=3, per_device_train_batch_size=8, num_generations=8, pods_m=4,
        learning_rate=1e-3, max_completion_length=6, logging_steps=1, save_strategy="no", report_to="none",
        use_cpu=True, bf16=False, seed=0, disable_tqdm=True,
    )  # fmt: skip
    trainer = PODSGRPOTrainer(
        model=model, reward_funcs=count_a, args=args, train_dataset=data, processing_class=tokenizer
    )
    trainer.train()
    kept = [row["kept_reward"] for row in trainer.state.log_history if "kept_reward" in row]
    print(
        json.dumps(
            {
                "steps": trainer.state.global_step,
                "kept_reward": kept,
                "pods_module": sys.modules["pods"].__file__,
                "repro_importable": importlib.util.find_spec("pods_repro") is not None,
                "extras_present": [
                    m for m in ("math_verify", "gguf", "peft", "snakemake", "matplotlib") if importlib.util.find_spec(m)
                ],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
