"""Why a run stopped, in the words the user reads.

The chat shows these lines in its transcript and `loom run` prints them on stderr (and
as the json result): one wording for both. The error kinds the engine uses to decide
on retries (`overloaded`, `stream_broken`...) are not words for the user, so an error
is shown by its message alone.
"""

from __future__ import annotations

from loom_engine.events import Aborted, BudgetExceeded, Error, MaxTurnsReached

StopEvent = MaxTurnsReached | BudgetExceeded | Aborted | Error

# What Esc and Ctrl+C say; the engine's own abort uses the same words.
INTERRUPTED_BY_USER = "interrupted by user"


def stop_reason(event: StopEvent) -> str:
    """One line: why the run ended without its answer."""
    match event:
        case MaxTurnsReached():
            return f"stopped: reached the limit of {event.max_turns} turns"
        case BudgetExceeded():
            return f"stopped: cost ${event.cost_usd:.4f} passed the budget of ${event.max_budget_usd:.2f}"
        case Aborted():
            return event.reason
        case Error():
            return event.message
