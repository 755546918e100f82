"""The context window a local server really runs with, asked of the server itself.

Loom's model table knows the vendors' models; a model served by llama.cpp, Ollama,
vLLM or LM Studio is unknown to it, and the 128k it would assume is often 30 times the
window the server was started with (so the status bar reads "ctx 4%" at 81% and
auto-compaction never fires). Each of those servers says its window on an endpoint of
its own; :class:`ServerWindows` asks them from a background thread at start (stdlib
HTTP only, a short deadline, never an SDK), and learns the number a context-overflow
error names. :func:`choose_window` is the one place that decides which window a model
client uses and says why.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

from .endpoints import VENDOR_DOMAINS, is_vendor_url

# The whole probe (every endpoint tried) gives up after this: a local server answers in
# milliseconds, and a dead one must not hold anything up.
PROBE_TIMEOUT_S = 2.0

# How the window of a model neither the table nor the server knows is described.
UNKNOWN_NOTE_PREFIX = "assumed for an unknown model"


@dataclass(frozen=True)
class WindowFact:
    """A context window and where it came from (a phrase the user reads)."""

    tokens: int
    source: str


@dataclass(frozen=True)
class ProbeAnswer:
    """What one probe found: the window, or a note saying why there is none."""

    fact: WindowFact | None
    note: str = ""


def probe_target(base_url: str | None) -> str | None:
    """The server root to probe for ``base_url`` (a custom endpoint), or None (no custom
    endpoint, or an official API whose models the table knows)."""
    if not base_url:
        return None
    try:
        parts = urlsplit(base_url.strip())
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        return None
    if any(is_vendor_url(base_url, vendor) for vendor in VENDOR_DOMAINS):  # the table knows their models
        return None
    # OpenAI-compatible base URLs end in /v1; the servers' own endpoints sit at the root.
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    # A password in the URL is not needed to ask, and the root is shown to the user.
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], path, "", ""))


# --- reading each server's answer ------------------------------------------------------


def _positive(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, float) and value.is_integer() and value > 0:
        return int(value)
    return None


def llama_cpp_props(body: object) -> int | None:
    """llama.cpp ``GET /props``: ``default_generation_settings.n_ctx``."""
    if not isinstance(body, Mapping):
        return None
    settings = body.get("default_generation_settings")
    return _positive(settings.get("n_ctx")) if isinstance(settings, Mapping) else None


def models_list(body: object, model: str) -> WindowFact | None:
    """``GET /v1/models``: vLLM's ``max_model_len``, or llama.cpp's ``meta.n_ctx`` (the
    window it runs with; ``n_ctx_train``, the trained one, only when that is all there is)."""
    if not isinstance(body, Mapping) or not isinstance(body.get("data"), list):
        return None
    entries = [entry for entry in body["data"] if isinstance(entry, Mapping)]
    chosen = [entry for entry in entries if entry.get("id") == model] or (entries if len(entries) == 1 else [])
    if not chosen:
        return None
    entry = chosen[0]
    if (tokens := _positive(entry.get("max_model_len"))) is not None:
        return WindowFact(tokens, "vLLM (GET /v1/models max_model_len)")
    meta = entry.get("meta")
    if isinstance(meta, Mapping):
        if (tokens := _positive(meta.get("n_ctx"))) is not None:
            return WindowFact(tokens, "llama.cpp (GET /v1/models meta.n_ctx)")
        if (tokens := _positive(meta.get("n_ctx_train"))) is not None:
            return WindowFact(tokens, "llama.cpp (GET /v1/models meta.n_ctx_train, the trained window)")
    return None


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def ollama_show(body: object) -> WindowFact | None:
    """Ollama ``POST /api/show``: the model's ``num_ctx`` parameter when it sets one,
    otherwise ``model_info["<architecture>.context_length"]``."""
    if not isinstance(body, Mapping):
        return None
    parameters = body.get("parameters")
    if isinstance(parameters, str) and (match := _NUM_CTX.search(parameters)):
        return WindowFact(int(match.group(1)), "Ollama (POST /api/show parameters num_ctx)")
    info = body.get("model_info")
    if not isinstance(info, Mapping):
        return None
    arch = info.get("general.architecture")
    keys = [f"{arch}.context_length"] if isinstance(arch, str) else []
    keys += [key for key in info if isinstance(key, str) and key.endswith(".context_length")]
    for key in keys:
        if (tokens := _positive(info.get(key))) is not None:
            return WindowFact(tokens, f"Ollama (POST /api/show model_info {key})")
    return None


def ollama_running(body: object, model: str) -> int | None:
    """Ollama ``GET /api/ps``: the window a loaded model was given (``context_length``),
    which is what it runs with when no ``num_ctx`` is set (the server's default, often far
    below the model's own ``context_length``)."""
    models = body.get("models") if isinstance(body, Mapping) else None
    if not isinstance(models, list):
        return None
    for entry in models:
        if isinstance(entry, Mapping) and model in (entry.get("name"), entry.get("model")):
            return _positive(entry.get("context_length"))
    return None


def lm_studio_model(body: object) -> WindowFact | None:
    """LM Studio ``GET /api/v0/models/<model>``: the loaded window, else the model's maximum."""
    if not isinstance(body, Mapping):
        return None
    if (tokens := _positive(body.get("loaded_context_length"))) is not None:
        return WindowFact(tokens, "LM Studio (GET /api/v0/models loaded_context_length)")
    if (tokens := _positive(body.get("max_context_length"))) is not None:
        return WindowFact(tokens, "LM Studio (GET /api/v0/models max_context_length)")
    return None


# What overflow errors say: llama.cpp's body field, and the messages of llama.cpp
# ("exceeds the available context size (4096 tokens)") and vLLM ("maximum context
# length is 4096 tokens").
_WINDOW_IN_MESSAGE = (re.compile(r"context size \((\d+) tokens\)"),
                      re.compile(r"maximum context length is (\d+) tokens"))


def window_in_error(body: Mapping[str, object] | None, message: str = "") -> int | None:
    """The window a context-overflow error names (``n_ctx`` in the body, or the message)."""
    if body:
        inner = body.get("error")
        for where in (inner if isinstance(inner, Mapping) else {}, body):
            if (tokens := _positive(where.get("n_ctx"))) is not None:
                return tokens
    for pattern in _WINDOW_IN_MESSAGE:
        if match := pattern.search(message):
            return int(match.group(1))
    return None


# --- asking the server -----------------------------------------------------------------


class _Unreachable(Exception):
    """No HTTP answer at all (refused, timed out): no other endpoint will do better."""


Fetch = Callable[[str, str, bytes | None, float], object]  # (method, url, body, timeout) -> JSON or None


def _make_fetch(headers: Mapping[str, str]) -> Fetch:
    def fetch(method: str, url: str, data: bytes | None, timeout: float) -> object:
        import urllib.error
        import urllib.request

        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"Accept": "application/json", **headers,
                                                  **({"Content-Type": "application/json"} if data else {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read(1_000_000)
        except urllib.error.HTTPError as error:
            error.close()
            return None  # this server has no such endpoint
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise _Unreachable(str(reason) or type(error).__name__) from None
        try:
            return json.loads(raw)
        except ValueError:
            return None

    return fetch


def probe_server(root: str, model: str, *, timeout: float = PROBE_TIMEOUT_S,
                 headers: Mapping[str, str] | None = None, fetch: Fetch | None = None) -> ProbeAnswer:
    """Ask the server at ``root`` for its window, trying each kind's endpoint in turn,
    all within ``timeout`` seconds."""
    get = fetch or _make_fetch(headers or {})
    deadline = time.monotonic() + timeout
    model_path = quote(model, safe="/")  # LM Studio keys are "publisher/name"
    steps: tuple[tuple[str, str, bytes | None, Callable[[object], WindowFact | None]], ...] = (
        ("GET", "/props", None,
         lambda body: WindowFact(n, "llama.cpp (GET /props)") if (n := llama_cpp_props(body)) else None),
        ("GET", "/v1/models", None, lambda body: models_list(body, model)),
        ("POST", "/api/show", json.dumps({"model": model}).encode(), ollama_show),
        ("GET", f"/api/v0/models/{model_path}", None, lm_studio_model),
    )
    for method, path, data, read in steps:
        left = deadline - time.monotonic()
        if left <= 0:
            return ProbeAnswer(None, f"{root} did not say its window within {timeout:g}s")
        try:
            body = get(method, root + path, data, left)
        except _Unreachable as error:
            return ProbeAnswer(None, f"no answer from {root} ({error})")
        fact = read(body)
        if fact is not None and path == "/api/show" and "num_ctx" not in fact.source:
            # Ollama without num_ctx: a loaded model's real window beats its trained one.
            fact = _ollama_loaded(get, root, model, deadline) or fact
        if fact is not None:
            return ProbeAnswer(WindowFact(fact.tokens, f"{fact.source} at {root}"))
    return ProbeAnswer(None, f"{root} does not say its window (not llama.cpp, Ollama, vLLM or LM Studio)")


def _ollama_loaded(get: Fetch, root: str, model: str, deadline: float) -> WindowFact | None:
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    try:
        tokens = ollama_running(get("GET", root + "/api/ps", None, left), model)
    except _Unreachable:
        return None
    return WindowFact(tokens, "Ollama (GET /api/ps context_length of the loaded model)") if tokens else None


class ServerWindows:
    """The windows a custom server runs its models with: probed in a background thread
    (one probe per model), or learned from an overflow error (which wins: it is what the
    server enforces). Reading never blocks; until an answer is in, there is none."""

    def __init__(self, root: str | None, *, headers: Mapping[str, str] | None = None,
                 timeout: float = PROBE_TIMEOUT_S, fetch: Fetch | None = None) -> None:
        self.root = root
        self._headers = dict(headers or {})
        self._timeout = timeout
        self._fetch = fetch
        self._lock = threading.Lock()
        self._probed: dict[str, ProbeAnswer] = {}
        self._learned: dict[str, WindowFact] = {}
        self._probes: dict[str, threading.Event] = {}

    def ensure(self, model: str) -> None:
        """Start probing for ``model`` (once; nothing when there is no server to ask)."""
        if self.root is None or not model:
            return
        with self._lock:
            if model in self._probes:
                return
            done = self._probes[model] = threading.Event()
        root = self.root

        def run() -> None:
            try:
                answer = probe_server(root, model, timeout=self._timeout, headers=self._headers,
                                      fetch=self._fetch)
            except Exception as error:  # a probe must never take Loom down
                answer = ProbeAnswer(None, f"asking {root} for its window failed ({error})")
            with self._lock:
                self._probed[model] = answer
            done.set()

        threading.Thread(target=run, name=f"loom-window-probe-{model}", daemon=True).start()

    def wait(self, model: str, timeout: float | None = None) -> bool:
        """Wait for ``model``'s probe (tests, ``loom config``); True when it has finished."""
        with self._lock:
            done = self._probes.get(model)
        return done is None or done.wait(timeout)

    def learn(self, model: str, tokens: int, source: str) -> None:
        with self._lock:
            self._learned[model] = WindowFact(tokens, source)

    def fact(self, model: str) -> WindowFact | None:
        with self._lock:
            learned = self._learned.get(model)
            probed = self._probed.get(model)
        return learned or (probed.fact if probed is not None else None)

    def note(self, model: str) -> str:
        """Why the server's window is unknown ("" when it is known or not yet asked)."""
        with self._lock:
            probed = self._probed.get(model)
            asking = model in self._probes
        if probed is not None:
            return probed.note
        return f"still asking {self.root}" if asking else ""


def choose_window(model: str, setting: int | None, server: ServerWindows | None) -> WindowFact:
    """The window a model client uses, and why: the ``context_window`` setting, else what
    the server said, else Loom's model table (an assumed default for unknown models)."""
    if setting:
        return WindowFact(setting, "the context_window setting")
    fact = server.fact(model) if server is not None else None
    if fact is not None:
        return fact
    from .models import lookup

    info = lookup(model)
    if info.known:
        return WindowFact(info.context_window, "Loom's model table")
    note = server.note(model) if server is not None else ""
    return WindowFact(info.context_window, UNKNOWN_NOTE_PREFIX + (f"; {note}" if note else ""))
