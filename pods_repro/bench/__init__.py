"""Benchmarks that print what PODS buys (selection speed, update memory, the inference/update
asymmetry of Fig. 1, a cost model). Each module is a CLI, run as ``pods bench NAME [ARGS]`` or
``python -m pods_repro.bench.bench_NAME`` (``cost_model``: ``pods bench cost_model``); ``benchmarks/*.py``
in the repository are thin entry points to them. Details and results: benchmarks/README.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PACKAGE_PARENT = BENCH_DIR.parents[1]  # the folder `import pods` found pods in (checkout or site-packages)


def names() -> list[str]:
    """Benchmarks `pods bench` knows: bench_NAME.py -> NAME, other modules by their own name."""
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("*.py") if not p.stem.startswith("_"))


def child_env() -> dict[str, str]:
    """os.environ with this copy of pods first on PYTHONPATH, so a benchmark's subprocess imports the
    same package whether it was installed (wheel, editable) or run from a checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_PARENT), env.get("PYTHONPATH", "")) if p)
    return env


def run_cli(main: Callable[[], Any], name: str) -> None:
    """Run a benchmark's ``main()``; bad input (an unknown model, a missing file) exits 2 with one line
    saying what to change, not a traceback (other errors keep theirs: they are bugs to debug)."""
    from pods_repro.data import DataError
    from pods_repro.tiny import PolicyError

    try:
        result = main()
    except (PolicyError, DataError, FileNotFoundError) as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        sys.exit(2)
    sys.exit(result if isinstance(result, int) else 0)
