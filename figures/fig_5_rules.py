"""Fig. 5: down-sampling rules (max-variance, max-reward, random, percentile) at the main PODS n, m
of setting (a): accuracy vs training time, and seconds per step.

    python figures/fig_5_rules.py --curves results/tables/curves.csv --steps results/tables/steps.csv \
        --out results/figures/fig_5_rules.pdf [--setting a]
"""

import figlib as F

RULES = ["max_variance", "max_reward", "random", "percentile"]
ap = F.parser(__doc__)
ap.add_argument("--setting", default="a")
args = ap.parse_args()
curves, steps = F.load(args)
s = args.setting
main = F.S.main_comparison(curves, s) if curves is not None else None
fig, (ax_c, ax_b) = F.plt.subplots(1, 2, figsize=(9, 3), gridspec_kw={"width_ratios": [3, 1]}, constrained_layout=True)
if main is None:
    F.placeholder(ax_c, f"setting ({s}) has no GRPO-PODS runs: train the rule ablation")
    F.placeholder(ax_b, "no runs")
else:
    n0, m0 = main[1]["n"], main[1]["m"]
    sel = {"n": n0, "m": m0, "normalize": "after", "grad_accum": 1}
    present = set(F.T.select(curves, setting=s, **sel)["rule"])
    groups = [
        (r.replace("_", "-"), {**sel, "rule": r}, F.ARM_COLOR[F.T.arm_label(n0, m0, r)]) for r in RULES if r in present
    ]
    F.curve_panel(ax_c, curves, s, groups, common_range=True)
    absent = [r for r in RULES if r not in present]
    ax_c.set_title(f"({s}) rules at n = {n0}, m = {m0}" + (f"; no runs: {', '.join(absent)}" if absent else ""))
    F.bar_panel(ax_b, steps, s, groups)
F.save(fig, args.out)
