"""PODS: down-sampling rollouts in GRPO (Xu et al., arXiv 2504.13818), a reproducibility package.

The library is small on purpose: ``pods.selectors`` (down-sampling rules), ``pods.grpo`` (the
objective as pure tensor functions), ``pods.rewards`` (task rewards), and the trainer glue on TRL.
Its public names are importable from here::

    from pods import PODSGRPOTrainer, PODSConfig, select, register_selector

They load on first use (module ``__getattr__``), so ``import pods`` stays cheap: it imports neither
torch nor TRL. It does pin torch's CPU kernels for this process, as the ``pods`` command does
(:func:`pods.kernels.pin_cpu_kernels`; ``PODS_KERNELS=native`` opts out), so that a script and
``pods train`` run the same kernels and share one cached tiny model. It pins only where torch is not
imported yet (torch reads the variables at its first operation); a script that ran torch first keeps
torch's own kernels and still uses the pinned tiny model (:func:`pods.tiny.wanted_kernels`).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from pods.kernels import KernelsError as _KernelsError
from pods.kernels import pin_cpu_kernels as _pin_cpu_kernels

__version__ = "0.2.0"

# public name -> the module that defines it (imported on first access)
_LAZY = {
    "PODSGRPOTrainer": "pods.trainer",
    "PODSConfig": "pods.trainer",
    "select": "pods.selectors",
    "register_selector": "pods.selectors",
    "uses_lengths": "pods.selectors",
    "RULES": "pods.selectors",
    "pods_advantages": "pods.grpo",
    "policy_loss": "pods.grpo",
}

__all__ = ["__version__", *_LAZY]

_KERNEL_ENV_ERROR: _KernelsError | None = None
if "torch" not in sys.modules:  # after torch ran, a pin would not hold and the record would claim it did
    try:
        _pin_cpu_kernels()
    except _KernelsError as err:
        # An unknown kernel variable: the `pods` command reports it in one line (exit 2) instead of a traceback
        # at its import, and a script gets it at its first public name below.
        _KERNEL_ENV_ERROR = err


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pods' has no attribute {name!r}")
    if _KERNEL_ENV_ERROR is not None:
        raise _KERNEL_ENV_ERROR
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
