"""Selection benchmark: time per ``pods.selectors.select`` call for max-variance down-sampling.

Run:  python -m pods_repro.bench.bench_select            (or: pods bench select)
      python -m pods_repro.bench.bench_select --max-n 4096 --repeats 5   (quicker)

For P in {1, 8, 64} prompt groups and n = 16 .. 65,536 rollouts per group (m = n/4) it prints the
median time per call, the growth ratio per doubling of n (O(n log n) gives about 2x once n is large
enough for the per-call overhead to vanish), and the speed-up over a straightforward reference that
recomputes every candidate's variance from scratch as the authors' code does (O(n log n + m^2): one
``torch.var`` over m gathered rewards per candidate k). The reference is skipped (printed as "-")
where its estimated cost exceeds ``--ref-budget`` seconds per call.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from pods.selectors import select


def reference_max_variance(r_P_N: torch.Tensor, m: int) -> torch.Tensor:
    """The authors' scheme (docs/paper.md#code-differences), vectorised over groups: O(m) work per candidate k."""
    n = r_P_N.shape[-1]
    order = torch.sort(r_P_N, dim=-1, descending=True).indices
    best_idx, best_var = order[:, :m], r_P_N.gather(-1, order[:, :m]).var(-1)
    for i in range(m):  # candidate: top i plus bottom m - i
        idx = torch.cat([order[:, :i], order[:, n - (m - i) :]], dim=-1)
        v = r_P_N.gather(-1, idx).var(-1)
        better = v > best_var
        best_var = torch.where(better, v, best_var)
        best_idx = torch.where(better.unsqueeze(-1), idx, best_idx)
    return best_idx


def time_call(fn, repeats: int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--max-n", type=int, default=65536)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--groups", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--ref-budget", type=float, default=2.0, help="skip reference calls estimated slower (s)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 = comparable across machines)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    print(f"torch {torch.__version__}, {args.threads} thread(s); rewards on 4 levels {{0, .25, 1, 1.2}}")
    print(f"{'P':>3} {'n':>6} {'m':>6} {'select ms':>10} {'x/doubling':>10} {'reference ms':>12} {'ref/select':>10}")
    for P in args.groups:
        prev, ref_prev = None, None
        n = 16
        while n <= args.max_n:
            m = n // 4
            levels = torch.tensor([0.0, 0.25, 1.0, 1.2])
            r_P_N = levels[torch.randint(0, 4, (P, n), generator=g)]
            t = time_call(lambda r=r_P_N, k=m: select(r, k), args.repeats)
            growth = f"{t / prev:10.2f}" if prev else f"{'':>10}"
            est_ref = ref_prev * 4 if ref_prev else 0.0  # the reference is ~quadratic in m
            if est_ref <= args.ref_budget:
                ref = time_call(lambda r=r_P_N, k=m: reference_max_variance(r, k), max(1, min(args.repeats, 3)))
                ref_s, ratio_s = f"{ref * 1e3:12.2f}", f"{ref / t:10.1f}"
                ref_prev = ref
            else:
                ref_s, ratio_s = f"{'-':>12}", f"{'-':>10}"
            print(f"{P:>3} {n:>6} {m:>6} {t * 1e3:10.3f} {growth} {ref_s} {ratio_s}", flush=True)
            prev, n = t, n * 2


if __name__ == "__main__":
    from pods_repro.bench import run_cli

    run_cli(main, "bench_select")
