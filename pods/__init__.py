"""PODS: down-sampling rollouts in GRPO (Xu et al., arXiv 2504.13818), as a library on TRL.

``pods.selectors`` (the down-sampling rules and their registry), ``pods.grpo`` (the objective as pure
tensor functions) and ``pods.trainer`` (:class:`PODSGRPOTrainer`, a drop-in for TRL's ``GRPOTrainer``,
and :class:`PODSConfig`). Its public names are importable from here::

    from pods import PODSGRPOTrainer, PODSConfig, select, register_selector

They load on first use, so ``import pods`` imports neither torch nor TRL, and importing the library
changes nothing in the process (no environment variable, no global setting). It imports only torch,
TRL and what TRL brings; the reproduction of the paper (configs, tiny models, the workflow, the
analysis) is the separate package ``pods_repro``, which builds on this one.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.3.0"

# public name -> the module that defines it (imported on first access)
_LAZY = {
    "PODSGRPOTrainer": "pods.trainer",
    "PODSConfig": "pods.trainer",
    "select": "pods.selectors",
    "register_selector": "pods.selectors",
    "registered_rules": "pods.selectors",
    "uses_lengths": "pods.selectors",
    "RULES": "pods.selectors",
    "pods_advantages": "pods.grpo",
    "policy_loss": "pods.grpo",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pods' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
