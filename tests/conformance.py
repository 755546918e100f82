"""Where the shared conformance data lives (``../shared/conformance`` beside the
repository, or ``LOOM_CONFORMANCE_DIR``), and what happens when it is missing.

On a developer's machine a missing folder skips the suite with one line naming the
folder. CI sets ``LOOM_REQUIRE_CONFORMANCE=1``: there a missing folder fails the run,
so a green CI always means the conformance suites ran.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def conformance_dir(*parts: str) -> Path:
    base = os.environ.get("LOOM_CONFORMANCE_DIR")
    return (Path(base) if base else ROOT.parent / "shared" / "conformance").joinpath(*parts)


def require(path: Path) -> None:
    """Call at module level: skip (or, in CI, fail) the module when ``path`` is missing."""
    if path.exists():
        return
    message = f"conformance data not found at {path}"
    if os.environ.get("LOOM_REQUIRE_CONFORMANCE"):
        pytest.fail(message + " (LOOM_REQUIRE_CONFORMANCE is set)", pytrace=False)
    pytest.skip(message, allow_module_level=True)
