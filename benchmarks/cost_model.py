"""Thin entry point: the benchmark lives in the package, pods_repro/analysis/cost_model.py, so that it also works
from an installed wheel (`pods bench cost_model` or `python -m pods_repro.bench.cost_model`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without an install

from pods_repro.bench import run_cli  # noqa: E402
from pods_repro.bench.cost_model import main  # noqa: E402

if __name__ == "__main__":
    run_cli(main, "cost_model")
