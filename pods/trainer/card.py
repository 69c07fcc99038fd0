"""The model card of a PODS checkpoint (README.md): front matter, base model, method, PODS/GRPO/TRL citations.

Part of :mod:`pods.trainer`; :meth:`pods.trainer.PODSGRPOTrainer.create_model_card` writes it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pods.trainer.compat import _trl_version

__all__ = ["GRPO_BIBTEX", "PODS_BIBTEX", "TRL_BIBTEX", "pods_model_card"]

PODS_BIBTEX = """@article{xu2025pods,
    title   = {{Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning}},
    author  = {Yixuan Even Xu and Yash Savani and Fei Fang and J. Zico Kolter},
    journal = {arXiv preprint arXiv:2504.13818},
    year    = {2025},
    url     = {https://arxiv.org/abs/2504.13818},
}"""
GRPO_BIBTEX = """@article{shao2024deepseekmath,
    title   = {{DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models}},
    author  = {Zhihong Shao and Peiyi Wang and Qihao Zhu and Runxin Xu and Junxiao Song and Mingchuan Zhang and Y. K. Li and Y. Wu and Daya Guo},
    journal = {arXiv preprint arXiv:2402.03300},
    year    = {2024},
}"""
TRL_BIBTEX = """@software{vonwerra2020trl,
    title   = {{TRL: Transformer Reinforcement Learning}},
    author  = {Leandro von Werra and Younes Belkada and Lewis Tunstall and Edward Beeching and Tristan Thrush and Nathan Lambert and Shengyi Huang and Kashif Rasul and Quentin Gallou{\\'e}dec},
    year    = {2020},
    url     = {https://github.com/huggingface/trl},
}"""

# The closing section of every model card.
CARD_CITATIONS = f"""## Citations

Cite PODS:

```bibtex
{PODS_BIBTEX}
```

GRPO:

```bibtex
{GRPO_BIBTEX}
```

TRL:

```bibtex
{TRL_BIBTEX}
```
"""


def _config_model_id(model: Any) -> str | None:
    config = getattr(model, "config", None)
    return getattr(config, "_name_or_path", None) or None


def pods_model_card(
    base_model: str | None,
    model_name: str,
    dataset_name: str | None,
    tags: Sequence[str],
    n: int,
    m: int,
    rule: str,
    normalize: str,
    ga: int,
    ga_same_prompt: bool,
    tag_names: Sequence[str] = ("trl", "grpo", "pods"),
) -> str:
    """The model card (README.md) of a PODS checkpoint: front matter, base model, method, citations."""
    import yaml
    from transformers import __version__ as tf_version

    import pods

    hub_id = (
        base_model
        if base_model and not Path(base_model).exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", base_model)
        else None
    )
    meta: dict[str, Any] = {"library_name": "transformers", "tags": sorted(set(tags) | set(tag_names))}
    if hub_id:
        meta["base_model"] = hub_id
    if dataset_name:
        meta["datasets"] = [dataset_name]
    base = (
        f"[{hub_id}](https://huggingface.co/{hub_id})"
        if hub_id
        else f"`{base_model}`"
        if base_model
        else "an unnamed model"
    )
    ga_text = (
        f"{ga} groups of n rollouts of the same prompt per optimizer step (the paper's GRPO-GA)"
        if ga_same_prompt and ga > 1
        else f"{ga} micro-batch(es) of different prompts per optimizer step"
    )
    rule_text = "the max-variance rule of the paper" if rule == "max_variance" else f"the `{rule}` rule"
    data_text = f" on `{dataset_name}`" if dataset_name else ""
    return f"""---
{yaml.safe_dump(meta, sort_keys=False).strip()}
---

# {model_name}

This model is a fine-tuned version of {base}{data_text}, trained with **GRPO-PODS** (policy optimization
with down-sampling; Xu et al., [arXiv:2504.13818](https://arxiv.org/abs/2504.13818)) using
[TRL](https://github.com/huggingface/trl) and the `pods` package (pods-rl {pods.__version__}).

## Training procedure

GRPO-PODS generates n = {n} rollouts per prompt and updates the policy on the m = {m} of them selected by
{rule_text}; advantages are normalised over the {"kept m" if normalize == "after" else "all n"} rollouts
(`pods_normalize={normalize}`). Gradient accumulation: {ga_text}.
{"With n == m this is vanilla GRPO." if n == m else ""}

Framework versions: TRL {_trl_version()}, Transformers {tf_version}, PyTorch {torch.__version__}.

{CARD_CITATIONS}"""
