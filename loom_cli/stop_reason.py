"""Why a run stopped, and what a retry is waiting for, in the words the user reads.

The chat shows these lines (its transcript, its activity line) and `loom run` prints
them on stderr (and as the json result): one wording for both. The error kinds the
engine uses to decide on retries (`overloaded`, `stream_broken`...) are not words for
the user: they pick the wording here and are never shown themselves.
"""

from __future__ import annotations

import math
import re

from loom_engine.events import Aborted, BudgetExceeded, Error, Finished, MaxTurnsReached, Retrying

from .wording import plural

StopEvent = MaxTurnsReached | BudgetExceeded | Aborted | Error

# What Esc and Ctrl+C say; the engine's own abort uses the same words.
INTERRUPTED_BY_USER = "interrupted by user"

# What a retry is recovering from, by the failure's kind.
_RETRY_CAUSES = {
    "stream_broken": "connection dropped",
    "connection": "cannot reach the server",
    "timeout": "no answer from the model",
    "rate_limit": "rate limited",
    "overloaded": "the model is overloaded",
    "server": "server error",
}

# What the user can do once Loom gave up, by the failure's kind.
_WHAT_TO_DO = {
    "stream_broken": "check your network, then send your message again",
    "connection": "check that the server is running and its address is right, then send again",
    "timeout": "send your message again (or try later)",
    "rate_limit": "wait a minute, then send your message again",
    "usage_limit": "wait for the limit to reset, then send your message again",
    "overloaded": "the service is busy: try again in a few minutes",
    "server": "try again in a few minutes",
    "context_length": "run /compact to shorten the conversation (or /clear to start over), then send again",
}
# `loom run` has no /compact: it compacted already when the model refused the request, or
# there was nothing it could shorten (one long prompt, a first turn).
# A usage limit's advice names the reset and the flag that waits (`usage_limits.stop_line`).
_WHAT_TO_DO_HEADLESS = {
    **{kind: advice for kind, advice in _WHAT_TO_DO.items() if kind != "usage_limit"},
    "context_length": "Loom could not shorten the conversation enough: start a new session (without "
                      "--continue or --resume) or send a shorter prompt",
}

# Codes from the API's error body ("429 rate_limit_error: ...") and the engine's own
# kinds in parentheses: both mean nothing to the reader.
_API_CODE = re.compile(r"\b(\d{3}) [a-z]+(?:_[a-z]+)*_error\b")
_KIND_CODE = re.compile(r" ?\((?:" + "|".join(sorted({*_RETRY_CAUSES, *_WHAT_TO_DO})) + r")\)")
# "retry after 2s" is the server's advice to the retry loop; once Loom stopped
# retrying it would read as a promise.
_RETRY_AFTER = re.compile(r";? ?retry after [\d.]+ ?s\b")


# What /continue sends: the model goes on from where the output limit stopped it.
CONTINUE_PROMPT = ("Your last answer was cut off at the output limit. Continue exactly where it stopped, "
                   "without repeating what you already wrote.")


def cut_off(event: Finished) -> str:
    """What to say of an answer the model's output limit cut off (the reader decides how
    to go on: the chat offers /continue, `loom run` names --continue)."""
    if event.output_limited_by_window:
        return (f"the answer was cut off at the output limit ({event.max_output_tokens:,} tokens, "
                "all the context window had room for)")
    limit = f"{event.max_output_tokens:,} tokens, " if event.max_output_tokens else ""
    return f"the answer was cut off at the output limit ({limit}max_tokens in config.toml)"


def retry_status(event: Retrying, seconds_left: float) -> str:
    """The one line shown while a request waits to be retried; updated in place."""
    cause = _RETRY_CAUSES.get(event.kind, "the request failed")
    when = f"retrying in {math.ceil(seconds_left)}s" if seconds_left > 0.05 else "retrying now"
    attempt = event.attempt + 1  # the first request was attempt 1
    of = f" of {event.max_attempts}" if event.max_attempts >= attempt else ""
    return f"↻ {cause} — {when} (attempt {attempt}{of})"


def retry_detail(event: Retrying) -> str:
    """What failed, in the engine's words made plain: for a log line (`loom run`'s
    stderr), where the one-line status is too short to debug a setup with."""
    return _plain_failure(event.reason, event.kind)


def _plain_failure(message: str, kind: str) -> str:
    text = plain_error(message)
    if kind == "stream_broken":
        # The transport's own account of the drop ("peer closed connection without
        # sending complete message body...") says no more than the words before it.
        text = text.split(" (", 1)[0]
    return text


def plain_error(message: str) -> str:
    """An engine error message without API codes and retry advice meant for machines."""
    message = _API_CODE.sub(r"\1", message)
    message = _KIND_CODE.sub("", message)
    return _RETRY_AFTER.sub("", message).strip()


def stop_reason(event: StopEvent, *, attempts: int = 0, headless: bool = False) -> str:
    """One line: why the run ended without its answer (and, for an error, what to do).

    ``attempts``: how many times the failed request was tried, when it was retried;
    ``headless``: the advice is for `loom run` (no slash commands there).
    """
    match event:
        case MaxTurnsReached():
            return f"stopped: reached the limit of {plural(event.max_turns, 'turn')}"
        case BudgetExceeded():
            return f"stopped: cost ${event.cost_usd:.4f} passed the budget of ${event.max_budget_usd:.2f}"
        case Aborted():
            return event.reason
        case Error():
            text = _plain_failure(event.message, event.kind)
            if attempts > 1:
                text += f"; tried {attempts} times"
            advice = (_WHAT_TO_DO_HEADLESS if headless else _WHAT_TO_DO).get(event.kind)
            return f"{text} — {advice}" if advice and "/compact" not in text else text
