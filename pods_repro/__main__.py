"""``python -m pods_repro ...``: the same as the ``pods`` console script (see pods_repro/cli.py)."""

import sys

from pods_repro.cli import main

sys.exit(main())
