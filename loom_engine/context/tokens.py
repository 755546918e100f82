"""Token counting, and how full the context window is before each request.

Public API
----------
``TokenCounter(model="", *, allow_tiktoken=True)``
    ``count_text(text) -> int``, ``count_message(message) -> int``,
    ``count_messages(messages) -> int``, ``count_tools(tool_specs) -> int``;
    ``backend`` says what counts: ``"tiktoken:<encoding>"`` or ``"estimate"``.
``ContextTracker(counter, *, system="", tools=())``
    ``before_request(messages)`` when a request is sent, ``observe(usage)`` when its
    usage arrives, ``tokens_in_use(messages)`` / ``fraction_used(messages, window)``
    before the next one, ``reset_after_compaction()`` after the history is replaced.

tiktoken offline
----------------
tiktoken downloads its BPE table on first use, and there may be no network; a request
to an unreachable host can hang for minutes. Loom therefore never lets tiktoken
download anything: it looks for the table where tiktoken would cache it
(``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``),
checks its SHA-256 itself (tiktoken deletes a file that fails the check and downloads
it again) and only then asks tiktoken for the encoding, which now reads just that file.
Without a verified table the calibrated estimate below is used. An empty
``TIKTOKEN_CACHE_DIR`` disables tiktoken's cache, so it disables tiktoken here too.

The estimate
------------
Counting characters is poor: cl100k_base averages 4.2 characters per token on Python
but 3.3 on JSON, 3.0 on shell output and 2.6 on non-Latin text, so any single ratio is
off by 17-20% on average. The estimate instead counts what BPE tokens are made of —
ASCII words (plus their letters past the sixth, since long identifiers split), runs of
up to three digits, punctuation runs and their length, line breaks, runs of spaces
(indentation), and non-ASCII characters by UTF-8 width — and weighs each count with a
coefficient fitted by least squares (weighted for relative error, each category
equally) against cl100k_base token counts of 1,972 samples: Python, C headers,
JavaScript/CSS, JSON, Markdown, licence prose, shell output (ls, ps, git log, grep) and
mixed-language text, each both as ~6,000- and ~800-character pieces. On a held-out half
the mean absolute error was 5.3% over all samples (per category 2-11%; bias within
±4.6%), against 17% for characters / 4 (3.8% on Loom's own .py and .md files, see
bench/bench_context.py). Emoji and other 4-byte characters are set by
hand to 3 tokens each. Whatever tokenizer the provider uses, ``ContextTracker`` rescales
the estimate by the ratio it observes between reported and estimated prompt tokens.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import tempfile
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..messages import ImagePart, Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from ..tool_spec import ToolSpec
from ..usage import Usage

# --- the estimate ----------------------------------------------------------------------

_WORDS = re.compile(r"[A-Za-z]+")
_LONG_WORD_TAIL = re.compile(r"(?<![A-Za-z])[A-Za-z]{6}([A-Za-z]+)")
_DIGITS = re.compile(r"\d{1,3}")
_PUNCT = re.compile(r"[!-/:-@\[-`{-~]+")
_LINE_BREAKS = re.compile(r"\s*\n\s*")
_SPACE_RUNS = re.compile(r"[ \t]{2,}")
_NON_ASCII_2 = re.compile(r"[\u0080-\u07ff]")
_NON_ASCII_3 = re.compile(r"[\u0800-\uffff]")
_NON_ASCII_4 = re.compile(r"[\U00010000-\U0010ffff]")

# Fitted coefficients (see the module docstring).
_W_WORD = 0.96
_W_LONG_WORD_LETTER = 0.16
_W_DIGIT_RUN = 1.51
_W_PUNCT_RUN = 0.51
_W_PUNCT_CHAR = 0.15
_W_LINE_BREAK = 0.57
_W_SPACE_RUN = 1.35
_W_NON_ASCII_2 = 0.78
_W_NON_ASCII_3 = 0.71
_W_NON_ASCII_4 = 3.0


def estimate_tokens(text: str) -> int:
    """cl100k_base-like token count of ``text`` without a tokenizer."""
    if not text:
        return 0
    punct = _PUNCT.findall(text)
    total = (_W_WORD * len(_WORDS.findall(text))
             + _W_LONG_WORD_LETTER * sum(map(len, _LONG_WORD_TAIL.findall(text)))
             + _W_DIGIT_RUN * len(_DIGITS.findall(text))
             + _W_PUNCT_RUN * len(punct) + _W_PUNCT_CHAR * sum(map(len, punct))
             + _W_LINE_BREAK * len(_LINE_BREAKS.findall(text))
             + _W_SPACE_RUN * len(_SPACE_RUNS.findall(text)))
    if not text.isascii():
        total += (_W_NON_ASCII_2 * len(_NON_ASCII_2.findall(text))
                  + _W_NON_ASCII_3 * len(_NON_ASCII_3.findall(text))
                  + _W_NON_ASCII_4 * len(_NON_ASCII_4.findall(text)))
    return max(1, math.ceil(total))


# --- tiktoken, only from a verified local file ----------------------------------------

@dataclass(frozen=True)
class _BpeTable:
    encoding: str
    url: str
    sha256: str


_TABLES = {
    "cl100k_base": _BpeTable("cl100k_base",
                             "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
                             "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    "o200k_base": _BpeTable("o200k_base",
                            "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
                            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
}

_O200K_MODELS = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss")


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding closest to ``model``'s tokenizer.

    Claude's tokenizer is not public; cl100k_base is the usual stand-in.
    """
    name = model.lower().rsplit("/", 1)[-1]
    return "o200k_base" if name.startswith(_O200K_MODELS) else "cl100k_base"


def tiktoken_cache_dir() -> str | None:
    """Where tiktoken keeps its downloads, or None when its cache is disabled."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return folder or None


def _cached_table_path(table: _BpeTable) -> str | None:
    folder = tiktoken_cache_dir()
    if folder is None:
        return None
    path = os.path.join(folder, hashlib.sha1(table.url.encode()).hexdigest())
    try:
        st = os.stat(path)
    except OSError:
        return None
    return path if _file_has_hash(path, st.st_size, st.st_mtime_ns, table.sha256) else None


@functools.lru_cache(maxsize=8)
def _file_has_hash(path: str, size: int, mtime_ns: int, sha256: str) -> bool:
    # size and mtime are part of the key so a replaced file is checked again.
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return False
    return digest.hexdigest() == sha256


def load_offline_encoding(model: str) -> Any | None:
    """A tiktoken Encoding for ``model`` if its table is verified on disk, else None.

    Never touches the network: tiktoken is called only after the file it will read
    has been found and its hash checked.
    """
    preferred = encoding_for_model(model)
    order = [preferred] + [name for name in _TABLES if name != preferred]
    for name in order:
        if _cached_table_path(_TABLES[name]) is None:
            continue
        try:
            import tiktoken

            return tiktoken.get_encoding(name)
        except Exception:  # a broken install must not break counting
            continue
    return None


# --- counting messages -------------------------------------------------------------------

# Framing the providers add around content (role markers, block wrappers, ids).
MESSAGE_OVERHEAD = 4
TOOL_USE_OVERHEAD = 12
TOOL_RESULT_OVERHEAD = 8
TOOL_SPEC_OVERHEAD = 10
# The hidden instructions a provider adds when a request declares tools.
TOOLS_PREAMBLE = 300
# Anthropic bills an image by its pixels (about 1,600 tokens for a ~1.15 MP image, the
# size it scales large images down to); the dimensions are unknown here.
IMAGE_TOKENS = 1600

_MESSAGE_CACHE_SIZE = 16384


class TokenCounter:
    """Counts tokens with tiktoken when available offline, else with the estimate."""

    def __init__(self, model: str = "", *, allow_tiktoken: bool = True) -> None:
        self.model = model
        self._encoding = load_offline_encoding(model) if allow_tiktoken else None
        self.backend = f"tiktoken:{self._encoding.name}" if self._encoding is not None else "estimate"
        # Messages are immutable, so each is counted once. Keyed by identity while the
        # cache holds the message itself, so an id cannot be reused by another object.
        self._message_cache: OrderedDict[int, tuple[Message, int]] = OrderedDict()

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        if self._encoding is not None:
            return len(self._encoding.encode(text, disallowed_special=()))
        return estimate_tokens(text)

    def count_message(self, message: Message) -> int:
        key = id(message)
        hit = self._message_cache.get(key)
        if hit is not None and hit[0] is message:
            self._message_cache.move_to_end(key)
            return hit[1]
        tokens = self._count_parts(message)
        self._message_cache[key] = (message, tokens)
        if len(self._message_cache) > _MESSAGE_CACHE_SIZE:
            self._message_cache.popitem(last=False)
        return tokens

    def count_messages(self, messages: Sequence[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, tool_specs: Sequence[ToolSpec]) -> int:
        if not tool_specs:
            return 0
        total = TOOLS_PREAMBLE
        for spec in tool_specs:
            schema = json.dumps(_plain(spec.input_schema), separators=(",", ":"), ensure_ascii=False)
            total += TOOL_SPEC_OVERHEAD + self.count_text(spec.name) + self.count_text(spec.description)
            total += self.count_text(schema)
        return total

    def _count_parts(self, message: Message) -> int:
        total = MESSAGE_OVERHEAD
        for part in message.parts:
            if isinstance(part, TextPart):
                total += self.count_text(part.text)
            elif isinstance(part, ToolResultPart):
                total += TOOL_RESULT_OVERHEAD + self.count_text(part.content)
            elif isinstance(part, ToolUsePart):
                arguments = part.raw_input if part.raw_input is not None else json.dumps(
                    _plain(part.input), separators=(",", ":"), ensure_ascii=False)
                total += TOOL_USE_OVERHEAD + self.count_text(part.name) + self.count_text(arguments)
            elif isinstance(part, ThinkingPart):
                total += self.count_text(part.thinking)
                if part.redacted_data:
                    total += len(part.redacted_data) // 4
            elif isinstance(part, ImagePart):
                total += IMAGE_TOKENS
        return total


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# --- the context tracker -----------------------------------------------------------------

@dataclass(frozen=True)
class _Anchor:
    """What the provider reported for a request: the exact size of its prefix."""

    tokens: int  # prompt tokens (incl. cache reads and writes) + output tokens
    message_count: int  # messages the request carried
    last_message_id: str | None  # to recognise the same prefix later


@dataclass(frozen=True)
class _Pending:
    message_count: int
    last_message_id: str | None
    estimate: int  # our own estimate of the request, to calibrate the estimate


class ContextTracker:
    """How many tokens the next request will use.

    The provider's reported usage is the truth for the previous request: its prompt
    tokens (cache reads and writes included) plus its output tokens (the answer, now
    part of the history). Only messages added after that answer are estimated, scaled
    by the ratio between reported and estimated size seen on the last request, so the
    estimate follows the provider's real tokenizer.
    """

    # The scale is clamped so a provider that reports nonsense cannot distort counts.
    MIN_SCALE = 0.5
    MAX_SCALE = 2.5

    def __init__(self, counter: TokenCounter, *, system: str = "", tools: Sequence[ToolSpec] = ()) -> None:
        self.counter = counter
        self.fixed_tokens = counter.count_text(system) + counter.count_tools(tools)
        self.scale = 1.0
        self.last_usage: Usage | None = None
        self._anchor: _Anchor | None = None
        self._pending: _Pending | None = None
        # The history only grows between compactions: its estimate is kept as a running
        # total, (message count, first id, last id, tokens), so each turn counts only
        # what it added instead of walking the whole conversation again.
        self._running: tuple[int, str | None, str | None, int] = (0, None, None, 0)

    def estimate(self, messages: Sequence[Message]) -> int:
        """Our own (unscaled) estimate of ``messages``, counting only what is new."""
        count, first_id, last_id, total = self._running
        if count and count <= len(messages) and messages[0].id == first_id \
                and messages[count - 1].id == last_id:
            total += self.counter.count_messages(messages[count:])
        else:
            total = self.counter.count_messages(messages)
        if messages:
            self._running = (len(messages), messages[0].id, messages[-1].id, total)
        return total

    def before_request(self, messages: Sequence[Message]) -> None:
        """Call when a request carrying ``messages`` is sent."""
        self._pending = _Pending(len(messages), messages[-1].id if messages else None,
                                 self.fixed_tokens + self.estimate(messages))

    def observe(self, usage: Usage) -> None:
        """Call with the usage the provider reported for the request just sent."""
        pending, self._pending = self._pending, None
        if usage.prompt_tokens <= 0:
            return  # the provider reports nothing useful; keep estimating
        self.last_usage = usage
        if pending is None:
            return
        if pending.estimate > 0:
            ratio = usage.prompt_tokens / pending.estimate
            self.scale = min(self.MAX_SCALE, max(self.MIN_SCALE, ratio))
        self._anchor = _Anchor(usage.prompt_tokens + usage.output_tokens, pending.message_count,
                               pending.last_message_id)

    def reset_after_compaction(self) -> None:
        """The history was replaced: nothing reported so far describes it."""
        self._anchor = None
        self._pending = None
        self._running = (0, None, None, 0)

    def tokens_in_use(self, messages: Sequence[Message]) -> int:
        """Tokens the next request carrying ``messages`` will use (system and tools included)."""
        anchor = self._anchor
        if anchor is not None and self._same_prefix(anchor, messages):
            new = list(messages[anchor.message_count:])
            if new and new[0].role == "assistant":
                new = new[1:]  # the answer to the anchored request: counted as its output
            return anchor.tokens + self._scaled(self.counter.count_messages(new))
        return self._scaled(self.fixed_tokens + self.estimate(messages))

    def fraction_used(self, messages: Sequence[Message], window: int) -> float:
        """Share of a ``window``-token context the next request will fill."""
        if window <= 0:
            raise ValueError("the context window must be a positive number of tokens")
        return self.tokens_in_use(messages) / window

    def _scaled(self, tokens: int) -> int:
        return math.ceil(tokens * self.scale)

    @staticmethod
    def _same_prefix(anchor: _Anchor, messages: Sequence[Message]) -> bool:
        if len(messages) < anchor.message_count:
            return False
        if anchor.message_count == 0:
            return True
        return messages[anchor.message_count - 1].id == anchor.last_message_id
