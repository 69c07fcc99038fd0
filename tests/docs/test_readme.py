"""The README works outside this repository's development setup (its images are committed small PNGs, its
commands need no sibling ../shared folder) and answers in five minutes: the detail is on the docs pages."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def test_readme_images_are_committed_small_pngs():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert "docs/img/released_fig_3_main.png" in images
    assert "docs/img/tiny_fig_3_main.png" in images  # the package's own job, beside the authors'
    for rel in images:
        path = REPO / rel
        assert path.is_file(), f"{rel} is linked from README.md but missing (python scripts/readme_images.py)"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size < 200_000, f"{rel}: keep README images small"


def test_readme_commands_do_not_need_the_development_folders():
    commands = "\n".join(re.findall(r"```bash\n(.*?)```", README, re.S))
    assert "../shared" not in commands
    assert "snakemake -c1 results/released/time_to_peak.csv" in commands  # the download is the default


def test_readme_says_which_grpo_config_fields_pods_train_takes():
    # It said "any other GRPOConfig field" while `pods train` refuses the fields the package sets itself.
    assert "any other `GRPOConfig` field" not in README
    assert "any `GRPOConfig` field the package does not set itself" in README
    assert "docs/trl.md" in README


README_MAX_LINES = 260


def test_readme_stays_short():
    # The README is the five-minute answer: what PODS is, the headline, the quick start, the paper -> command
    # table, the two snippets, the layout and the docs index. Detail goes to docs/ (the README's index).
    n = len(README.splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES}): move detail to a docs page"


def test_readme_keeps_the_generated_blocks():
    from pods_repro.analysis import cost, results

    for start, end in ((results.README_START, results.README_END), (cost.README_START, cost.README_END)):
        assert start in README, f"README.md lost the marker {start.strip()!r}"
        assert end in README, f"README.md lost the marker {end!r}"
        assert README.index(start) < README.index(end)


def test_the_readme_says_how_long_the_test_tier_takes():
    tests = README[README.index("## Tests") :]
    tests = tests[: tests.index("\n## ", 5)]
    line = next(
        ln for ln in tests.splitlines() if ln.startswith("bash scripts/install.sh && .venv/bin/python -m pytest")
    )
    assert re.search(r"~\d+ CPU min \(\d+ min on a busy 2-core host\)", line), line
