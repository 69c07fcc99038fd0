"""Small copies of the released-logs figures for the README (docs/img/*.png, 8-bit palette PNGs).

    snakemake -c1 results/released/figures/fig_3_main.png results/released/figures/fig_4_sweeps.png \
        results/released/figures/fig_5_rules.png            # add --config released_logs=DIR offline
    python scripts/readme_images.py                          # -> docs/img/released_fig_*.png
    snakemake -c2                                            # the tiny scale's figures, then:
    python scripts/readme_images.py --src results/figures --prefix tiny \
        --figures fig_3_main fig_4_sweeps fig_5_rules fig_6_normalization   # -> docs/img/tiny_fig_*.png
    python scripts/readme_images.py --src results/warm_a2000/figures --prefix tiny_a2000 \
        --figures fig_3_main                   # (a) at 2000 steps, notebook/overlays/tiny_a2000.yaml (docs/workflow.md)
    python scripts/readme_images.py --src results/ablations200/figures --prefix tiny_ablations200 \
        --figures fig_5_rules                  # the rules at 200 steps, notebook/overlays/tiny_ablations200.yaml

Needs Pillow (a matplotlib dependency). The figures themselves come from figures/fig_*.py; this only
shrinks them (width --width pixels, 128 colours) so that the repository stays small.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image

FIGURES = ("fig_3_main", "fig_4_sweeps", "fig_5_rules")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=Path, default=Path("results/released/figures"))
    ap.add_argument("--dest", type=Path, default=Path("docs/img"))
    ap.add_argument("--width", type=int, default=1000)
    ap.add_argument("--prefix", default="released", help="file names: docs/img/<prefix>_<figure>.png")
    ap.add_argument("--figures", nargs="+", default=list(FIGURES))
    args = ap.parse_args(argv)
    missing = [name for name in args.figures if not (args.src / f"{name}.png").is_file()]
    if missing:
        print(f"error: {', '.join(missing)} not in {args.src}: build them first (see the docstring)", file=sys.stderr)
        return 2
    args.dest.mkdir(parents=True, exist_ok=True)
    for name in args.figures:
        img = Image.open(args.src / f"{name}.png").convert("RGB")
        if img.width > args.width:
            img = img.resize((args.width, round(img.height * args.width / img.width)), Image.LANCZOS)
        out = args.dest / f"{args.prefix}_{name}.png"
        img.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
        print(f"{out}: {img.width}x{img.height}, {out.stat().st_size / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
