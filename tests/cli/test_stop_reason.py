"""Why a run stopped, worded once for the chat (and the headless printer)."""

from __future__ import annotations

import subprocess
import sys

from loom_cli.stop_reason import stop_reason
from loom_engine.events import Aborted, BudgetExceeded, Error, MaxTurnsReached


def test_each_way_a_run_stops_has_one_line() -> None:
    assert stop_reason(MaxTurnsReached(max_turns=3, num_turns=3)) == "stopped: reached the limit of 3 turns"
    assert stop_reason(BudgetExceeded(max_budget_usd=0.5, cost_usd=0.51234)) == (
        "stopped: cost $0.5123 passed the budget of $0.50")
    assert stop_reason(Aborted(reason="interrupted by user")) == "interrupted by user"
    assert stop_reason(Error(message="invalid x-api-key", kind="auth")) == "invalid x-api-key"
    assert stop_reason(Error(message="boom", kind="")) == "boom"


def test_the_wording_imports_no_ui_library() -> None:
    code = "import sys, loom_cli.stop_reason; print([m for m in ('textual', 'rich') if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
