"""``pods bench cost_model`` (``python -m pods_repro.bench.cost_model``): the linear cost model of a GRPO /
GRPO-PODS / GRPO-GA step, fitted to bench_asymmetry.py output. The model lives in the analysis,
pods_repro/analysis/cost_model.py, which also predicts the paper hardware's seconds per step from it."""

from pods_repro.analysis.cost_model import main

if __name__ == "__main__":
    from pods_repro.bench import run_cli

    run_cli(main, "cost_model")
