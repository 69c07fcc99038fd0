"""Thin entry point: the profile lives in the package, pods_repro/bench/profile_tiny_step.py (`pods bench
profile_tiny_step` or `python -m pods_repro.bench.profile_tiny_step`); it reads the workflow's tiny scale from
config/config.yaml, so it needs a checkout."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without an install

from pods_repro.bench import run_cli  # noqa: E402
from pods_repro.bench.profile_tiny_step import main  # noqa: E402

if __name__ == "__main__":
    run_cli(main, "profile_tiny_step")
