"""``python -m pods.analysis SUBCOMMAND ...``: the analysis's command line (pods.analysis.cli)."""

import sys

from pods.analysis.cli import main

if __name__ == "__main__":
    sys.exit(main())
