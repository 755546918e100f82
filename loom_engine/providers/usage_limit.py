"""Telling a usage limit from a rate limit in a 429, and when it lifts.

Both arrive as 429. A rate limit (requests or tokens per minute) passes in seconds and
is retried with backoff. A usage limit - a subscription's 5-hour or weekly allowance
spent, an account's quota used up - lasts minutes to days: retrying it only adds
requests, so the engine waits for the reset or stops (:mod:`loom_engine.usage_wait`).

What the servers say:

- Anthropic (subscription plans) sends unified limit headers with every answer:
  ``anthropic-ratelimit-unified-status`` (``allowed`` | ``allowed_warning`` |
  ``rejected``) and ``anthropic-ratelimit-unified-reset`` (unix seconds), and the same
  per window: ``anthropic-ratelimit-unified-5h-status`` / ``-5h-reset``, ``-7d-...``,
  and model-specific weekly windows (``-7d_opus-...``). A 429 with any of them
  ``rejected`` is a usage limit; the API-key rate limits use other headers
  (``anthropic-ratelimit-requests-*``) and stay transient.
- OpenAI: a 429 whose error code or type is ``insufficient_quota`` (the account's credit
  is used up; no reset is given). The ChatGPT-plan backend answers
  ``usage_limit_reached`` with ``resets_at`` / ``resets_in_seconds`` in the body. A
  plain 429 with ``x-ratelimit-reset-*`` headers is a rate limit and stays transient.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

_UNIFIED = "anthropic-ratelimit-unified-"

# The windows' names as the user knows them.
_WINDOW_NAMES = {"5h": "5-hour", "7d": "weekly"}

# OpenAI's error codes/types for a spent allowance.
_OPENAI_QUOTA_CODES = frozenset({"insufficient_quota", "usage_limit_reached"})


@dataclass(frozen=True)
class UsageLimit:
    """A usage limit the server reported: when it lifts (unix seconds; None: not said)
    and which allowance ran out ("5-hour", "weekly", "account quota"; "" when not said)."""

    resets_at: float | None
    window: str = ""


def anthropic_usage_limit(headers: Mapping[str, str] | None,
                          retry_after: float | None = None, *,
                          now: Callable[[], float] = time.time) -> UsageLimit | None:
    """The usage limit the unified headers of a 429 say was hit, or None (a rate limit)."""
    if not headers:
        return None
    rejected_windows: list[tuple[str, float | None]] = []
    for name, value in headers.items():
        lowered = name.lower()
        if not (lowered.startswith(_UNIFIED) and lowered.endswith("-status")):
            continue
        window = lowered[len(_UNIFIED):-len("-status")]
        if window and value.strip().lower() == "rejected":
            rejected_windows.append((window, _seconds(headers.get(f"{_UNIFIED}{window}-reset"))))
    overall = (headers.get(f"{_UNIFIED}status") or "").strip().lower() == "rejected"
    if not overall and not rejected_windows:
        return None
    resets_at = _seconds(headers.get(f"{_UNIFIED}reset"))
    if resets_at is None:
        # Requests go again once every spent window has reset: the latest of them.
        known = [at for _, at in rejected_windows if at is not None]
        resets_at = max(known) if known else None
    if resets_at is None and retry_after is not None:
        resets_at = now() + retry_after
    return UsageLimit(resets_at, _window_name([w for w, _ in rejected_windows]))


def openai_usage_limit(code: str, etype: str, body: Mapping[str, object] | None, *,
                       now: Callable[[], float] = time.time) -> UsageLimit | None:
    """The usage limit an OpenAI error says was hit (``insufficient_quota``, or the
    ChatGPT backend's ``usage_limit_reached``), or None."""
    if code not in _OPENAI_QUOTA_CODES and etype not in _OPENAI_QUOTA_CODES:
        return None
    body = body or {}
    resets_at = _seconds(body.get("resets_at"))
    if resets_at is None:
        resets_in = _seconds(body.get("resets_in_seconds"))
        resets_at = now() + resets_in if resets_in is not None else None
    return UsageLimit(resets_at, "account quota" if "insufficient_quota" in (code, etype) else "")


def _window_name(windows: list[str]) -> str:
    names = sorted({_WINDOW_NAMES.get(w, "weekly" if w.startswith("7d") else w) for w in windows})
    return " and ".join(names)


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number >= 0 else None
