"""The code base stays clean by ruff's rules and format (pyproject.toml), as part of the
test suite."""

import subprocess
import sys

from conftest import ROOT


def test_ruff_finds_nothing():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_leaves_everything_unchanged():
    """Python files and the notebooks' cells are formatted as ``ruff format`` would."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
