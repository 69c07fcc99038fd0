"""Fig. 4: the n sweep (m fixed at the main PODS m) and the m sweep (n fixed at the main PODS n) in
setting (a): accuracy vs training time and seconds per step. Max-variance, normalized after.

    python figures/fig_4_sweeps.py --curves results/tables/curves.csv --steps results/tables/steps.csv \
        --out results/figures/fig_4_sweeps.pdf [--setting a]
"""

import figlib as F

ap = F.parser(__doc__)
ap.add_argument("--setting", default="a")
args = ap.parse_args()
curves, steps = F.load(args)
s = args.setting
main = F.S.main_comparison(curves, s) if curves is not None else None
fig, axes = F.plt.subplots(2, 2, figsize=(9, 5.4), gridspec_kw={"width_ratios": [3, 1]}, constrained_layout=True)
if main is None:
    for ax in axes.flat:
        F.placeholder(ax, f"setting ({s}) needs GRPO (n == m) and GRPO-PODS runs for the sweeps")
else:
    n0, m0 = main[1]["n"], main[1]["m"]
    base = F.T.select(curves, setting=s, rule="max_variance", normalize="after", grad_accum=1)
    for row, (fixed, var, sym) in zip(axes, [({"m": m0}, "n", "N"), ({"n": n0}, "m", "M")], strict=False):
        values = sorted(F.T.select(base, **fixed)[var].unique(), reverse=var == "m")
        groups = [
            (
                f"${sym} = {v}$",
                {**fixed, var: int(v), "rule": "max_variance", "normalize": "after", "grad_accum": 1},
                F.PALETTE[i % len(F.PALETTE)],
            )
            for i, v in enumerate(values)
        ]
        if len(groups) < 2:
            F.placeholder(row[0], f"({s}) no {var} sweep at {fixed}: train more {var} values")
            F.placeholder(row[1], "no runs")
            continue
        F.curve_panel(row[0], curves, s, groups, common_range=True)
        row[0].set_title(f"({s}) {var} sweep at {next(iter(fixed))} = {next(iter(fixed.values()))}")
        F.bar_panel(row[1], steps, s, groups)
F.save(fig, args.out)
