"""The analysis: run directories and the authors' released logs -> tidy tables -> the paper's statistics.

Everything the figures and the tables show is computed here, so it can be tested; the scripts in
`figures/` only select and plot. Which module owns what: docs/design.md's module map (a test keeps it
complete). The command line is pods_repro.analysis.cli (``python -m pods_repro.analysis``, ``pods analysis``).
This module imports none of them, so that a light one (released_logs) does not load pandas.
"""
