"""A small copy of a figure for the README (docs/img/*.png, 8-bit palette PNGs).

    snakemake -c1 results/released/figures/fig_3_main.png  # add --config released_logs=DIR offline
    python scripts/readme_images.py                          # -> docs/img/released_fig_3_main.png
    python scripts/readme_images.py --src results/figures --prefix tiny --figures fig_3_main fig_4_sweeps
                                                             # -> docs/img/tiny_fig_*.png (after snakemake -c2)

Needs Pillow (a matplotlib dependency). The figures themselves come from figures/fig_*.py; this only
shrinks them (width --width pixels, 128 colours) so that the repository stays small.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image

FIGURES = ("fig_3_main",)


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
