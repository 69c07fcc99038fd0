"""Thin entry point: the benchmark lives in the package, pods_repro/bench/bench_memory.py, so that it also works
from an installed wheel (`pods bench memory` or `python -m pods_repro.bench.bench_memory`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without an install

from pods_repro.bench import run_cli  # noqa: E402
from pods_repro.bench.bench_memory import main  # noqa: E402

if __name__ == "__main__":
    run_cli(main, "bench_memory")
