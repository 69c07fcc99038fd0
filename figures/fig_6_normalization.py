"""Fig. 6 (App. A.3): advantage normalization after (default) vs before down-sampling, max-variance
at the main PODS n, m of setting (a): accuracy vs training time, and seconds per step.

    python figures/fig_6_normalization.py --curves results/tables/curves.csv \
        --steps results/tables/steps.csv --out results/figures/fig_6_normalization.pdf
"""

import figlib as F

ap = F.parser(__doc__)
ap.add_argument("--setting", default="a")
args = ap.parse_args()
curves, steps = F.load(args)
s = args.setting
main = F.S.main_comparison(curves, s) if curves is not None else None
fig, (ax_c, ax_b) = F.plt.subplots(1, 2, figsize=(9, 3), gridspec_kw={"width_ratios": [3, 1]}, constrained_layout=True)
sel = {} if main is None else {"n": main[1]["n"], "m": main[1]["m"], "rule": "max_variance"}
have = set() if main is None else set(F.T.select(curves, setting=s, **sel)["normalize"])
if "before" not in have:
    msg = (
        f"setting ({s}): no runs with rollout.normalize=before"
        + (f" at n = {sel['n']}, m = {sel['m']}" if sel else "")
        + " (the authors released none; train the App. A.3 ablation)"
    )
    F.placeholder(ax_c, msg)
    F.placeholder(ax_b, "no runs")
else:
    groups = [
        (f"{w} down-sampling", {**sel, "normalize": w}, F.ARM_COLOR[F.T.arm_label(2, 1, "max_variance", w)])
        for w in ("after", "before")
    ]
    F.curve_panel(ax_c, curves, s, groups, common_range=True)
    ax_c.set_title(f"({s}) advantage normalization, n = {sel['n']}, m = {sel['m']}")
    F.bar_panel(ax_b, steps, s, groups)
F.save(fig, args.out)
