"""``python -m pods_repro.analysis SUBCOMMAND ...``: the analysis's command line (pods_repro.analysis.cli)."""

import sys

from pods_repro.analysis.cli import main

if __name__ == "__main__":
    sys.exit(main())
