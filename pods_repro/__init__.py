"""The reproduction of PODS (Xu et al., arXiv 2504.13818) on the library :mod:`pods`.

Everything that turns the method into the paper's experiments: configs and run sheets
(:mod:`pods_repro.config`, :mod:`pods_repro.registry`), tiny models, tasks, rewards and the answer
verifier, evaluation and fast generation, run logs, the ``pods`` command, the quick start, the
selection arena, the analysis of records and released logs, and the benchmarks. docs/design.md
shows the two packages and what may import what: this package imports the library, never the
other way round.

Importing it pins torch's CPU kernels for this process, as the ``pods`` command does
(:func:`pods_repro.kernels.pin_cpu_kernels`; ``PODS_KERNELS=native`` opts out), so that a script,
a figure and ``pods train`` run the same kernels and share one cached tiny model. It pins only where
torch is not imported yet (torch reads the variables at its first operation). The library
(``import pods``) pins nothing.
"""

from __future__ import annotations

import sys

from pods import __version__
from pods_repro.kernels import KernelsError as _KernelsError
from pods_repro.kernels import pin_cpu_kernels as _pin_cpu_kernels

__all__ = ["__version__"]

_KERNEL_ENV_ERROR: _KernelsError | None = None
if "torch" not in sys.modules:  # after torch ran, a pin would not hold and the record would claim it did
    try:
        _pin_cpu_kernels()
    except _KernelsError as err:
        # An unknown kernel variable: the `pods` command reports it in one line (exit 2) instead of a
        # traceback at its import.
        _KERNEL_ENV_ERROR = err
