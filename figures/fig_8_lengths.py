"""Figs. 8-10: average completion length on the test set vs training time, baseline vs GRPO-PODS in
every setting present, plus the down-sampling rules of (a) (Fig. 9: max-reward grows long). Falls
back to training-rollout lengths (metrics.jsonl) where a setting logged no evaluation lengths.

    python figures/fig_8_lengths.py --curves results/tables/curves.csv --out results/figures/fig_8_lengths.pdf
"""

import figlib as F

args = F.parser(__doc__).parse_args()
curves, _ = F.load(args)
L = "completion_len_mean"
panels = []  # (setting, groups)
if curves is not None:
    for s in sorted(curves["setting"].unique()):
        if F.S.main_comparison(curves, s):
            panels.append((s, F.main_groups(curves, s), "main"))
    main_a = F.S.main_comparison(curves, "a")
    rules = (
        []
        if main_a is None
        else sorted(set(F.T.select(curves, setting="a", n=main_a[1]["n"], m=main_a[1]["m"], normalize="after")["rule"]))
    )
    if len(rules) > 1:
        sel = {"n": main_a[1]["n"], "m": main_a[1]["m"], "normalize": "after", "grad_accum": 1}
        panels.append(
            (
                "a",
                [(r.replace("_", "-"), {**sel, "rule": r}, F.ARM_COLOR[F.T.arm_label(2, 1, r)]) for r in rules],
                "rules",
            )
        )
cols = 2
rows = max((len(panels) + cols - 1) // cols, 1)
fig, axes = F.plt.subplots(rows, cols, figsize=(9, 2.7 * rows), squeeze=False, constrained_layout=True)
if not panels:
    F.placeholder(axes[0, 0], "no setting has both baseline and GRPO-PODS runs with lengths")
for ax, (s, groups, kind) in zip(axes.flat, panels, strict=False):
    evald = F.T.select(curves, setting=s, metric=L)
    ds = F.C.primary_dataset(curves, s)
    ds = ds if len(F.T.select(evald, dataset=ds)) else "train"
    F.curve_panel(ax, curves, s, groups, dataset=ds, metric=L)
    ax.set_title(f"{F.title(curves, s)}{' rules' if kind == 'rules' else ''}\n[{F.DATASET_LABEL.get(ds, ds)}]")
for ax in list(axes.flat)[max(len(panels), 1) :]:
    ax.set_visible(False)
F.save(fig, args.out)
