"""Fig. 1: the asymmetry behind PODS. Top: wall-clock per step, split into generation and policy
update, vs rollouts per device (x where the update ran out of memory). Bottom: generation time per
token vs rollouts. Input: the benchmark CSV (`pods bench`), averaged per rollout count by pods_repro.analysis.

    python figures/fig_1_asymmetry.py --bench results/bench/asymmetry.csv --out results/figures/fig_1_asymmetry.pdf
"""

from pathlib import Path

import figlib as F

args = F.parser(__doc__, bench=True).parse_args()
fig, (top, bot) = F.plt.subplots(2, 1, figsize=(6, 5), sharex=True, constrained_layout=True)
if not Path(args.bench).exists():
    for ax in (top, bot):
        F.placeholder(ax, f"benchmark table {args.bench} missing: run the benchmark rule (pods bench)")
else:
    b = F.T.summarize_benchmark(F.T.read_benchmark(args.bench))
    ok, oom = b[~b["update_oom"]], b[b["update_oom"]]
    width = b["rollouts"] * 0.5  # equal widths on the log2 axis
    top.bar(b["rollouts"], b["gen_time_s"], width=width, color="#5894DB", label="generation")
    top.bar(
        ok["rollouts"],
        ok["update_time_s"],
        bottom=ok["gen_time_s"],
        width=width[ok.index],
        color="#CF4D58",
        label="policy update",
    )
    top.plot(oom["rollouts"], oom["gen_time_s"] * 1.05, "kx", markersize=8, label="update out of memory")
    top.set_ylabel("seconds per step")
    top.legend()
    bot.plot(b["rollouts"], b["per_token_gen_ms"], marker="o", color="#5894DB")
    bot.set_ylabel("generation ms per token")
    bot.set_xscale("log", base=2)
    bot.set_xticks(b["rollouts"], [str(r) for r in b["rollouts"]])
    bot.set_xlabel("rollouts per device")
    ratio = b["per_token_gen_ms"].iloc[0] / b["per_token_gen_ms"].min()
    r_min = b["rollouts"][b["per_token_gen_ms"].idxmin()]
    bot.set_title(f"per-token time falls {ratio:.1f}x from {b['rollouts'].iloc[0]} to {r_min} rollouts", fontsize=9)
F.save(fig, args.out)
