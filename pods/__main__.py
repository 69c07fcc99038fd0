"""``python -m pods ...``: the same as the ``pods`` console script (see pods/cli.py)."""

import sys

from pods.cli import main

sys.exit(main())
