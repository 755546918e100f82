"""A fake LLM server that speaks the real Anthropic and OpenAI wire formats.

It binds 127.0.0.1 on a free port and serves from a background thread, so both the
test process (real SDK clients) and subprocesses such as ``loom run`` can reach it.

* ``POST /v1/messages`` - Anthropic Messages API: SSE stream (``message_start``,
  ``ping``, ``content_block_start/delta/stop`` with ``text_delta`` /
  ``thinking_delta`` + ``signature_delta`` / ``input_json_delta``, ``message_delta``,
  ``message_stop``, ``error``) or a JSON message when ``stream`` is false.
* ``POST /v1/chat/completions`` (and ``/chat/completions``) - OpenAI Chat
  Completions: ``chat.completion.chunk`` stream with ``tool_calls`` deltas by index,
  arguments split over chunks, a usage chunk when ``stream_options.include_usage``,
  then ``data: [DONE]``; or a ``chat.completion`` JSON object.
* ``POST /v1/responses`` (and ``/responses``) - OpenAI's Responses API, streamed: see
  :mod:`.responses_api` (it also checks Loom's stateless contract: ``store: false``, a
  ``prompt_cache_key``, reasoning replayed with the encrypted content it issued).
* ``POST /v1/embeddings`` - OpenAI embeddings, answered at once with a hashed bag of
  words (:mod:`.embeddings`); not queued, not in ``requests`` (``embedding_calls`` counts).

Requests are validated as strictly as the real services do (a tool_use without its
tool_result, a tool_result without its tool_use, empty text blocks, a first message
that is not from the user, assistant tool_calls without tool messages...) and rejected
with the real 400 error shapes. Tests script the answers with a queue of
:class:`Reply` values; every request is recorded for assertions.

Usage::

    server = FakeLLMServer().start()
    server.enqueue(Reply.text("hi"), Reply.tool("read_file", {"path": "a.py"}))
    AsyncAnthropic(api_key="k", base_url=server.anthropic_base_url)
    AsyncOpenAI(api_key="k", base_url=server.openai_base_url)
    server.requests[-1].body["messages"]
    server.wait_for_requests(2)        # from another thread / for a subprocess
    reply, gate = Reply.text("late").held(); ...; gate.set()
    server.client_disconnects          # answers the client hung up on
    server.stop()

Reply kinds: ``Reply.text``, ``Reply.tool`` / ``Reply.tools`` (parallel calls),
``Reply(thinking=..., signature=...)``, ``Reply.error(status, retry_after=...)``,
``Reply.prompt_too_long()``, ``Reply.broken(text, after=N)`` (connection cut after N
stream events), ``Reply(stream_error=(type, message))`` (an in-stream error event),
``Reply.raw(path_or_bytes)`` (a recorded body, byte for byte), ``Reply.silent()`` (accepts
the request and never answers), ``Reply.stall(text, after=N)`` (N stream events, then
silence), ``Reply.proxy_error(413, "Request Entity Too Large")`` (an HTML error page, as
nginx sends); ``chunk_size`` and ``chunk_delay`` shape the stream. A silent or stalled
answer hangs until the client hangs up (counted in ``client_disconnects``) or the
server stops.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .rendering import _anthropic_error_body, _openai_error_body, _Renderer, _sse
from .responses_api import ResponsesRenderer, issued_in, validate_responses
from .scenario import RecordedRequest, Reply
from .validation import validate_anthropic, validate_openai

# The keep-alive of an OpenAI-style stream, and of llama-server's on both endpoints.
_SSE_COMMENT = b": keep-alive\n\n"


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Idle keep-alive connections must not block stop().
    block_on_close = False
    fake: FakeLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up mid-stream are normal here (cancel tests); stay quiet.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakellm/1.0"
    timeout = 60
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Streams are many small writes; without this, Nagle + delayed ACK add ~40 ms each.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, False)

    # -- plumbing --

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_chunked(self, status: int, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self) -> None:
        """Drop the connection mid-body, like a proxy or a crashed upstream would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _hang(self) -> None:
        """Send nothing until the client hangs up (counted) or the server stops."""
        fake = self.server.fake
        self.close_connection = True
        while not fake._stopping.wait(0.02):
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable:
                try:
                    gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    fake._note_disconnect()
                    return
        self._cut()

    def _stream(self, events: Iterator[bytes], reply: Reply, headers: Mapping[str, str],
                keepalive: bytes = _SSE_COMMENT) -> None:
        fake = self.server.fake
        self._start_chunked(200, "text/event-stream; charset=utf-8", headers)
        for n, event in enumerate(events):
            if reply.pause is not None and n == reply.pause[0]:
                self.wfile.flush()
                until = time.monotonic() + reply.pause[1]
                step = reply.keepalive_every or reply.pause[1]
                while (left := until - time.monotonic()) > 0:
                    if fake._stopping.wait(min(step, left)):
                        self._cut()
                        return
                    if reply.keepalive_every and time.monotonic() < until:
                        self._chunk(keepalive)
                        self.wfile.flush()
            if reply.break_after is not None and n >= reply.break_after:
                self._cut()
                return
            if reply.stall_after is not None and n >= reply.stall_after:
                self.wfile.flush()
                self._hang()
                return
            if n and reply.chunk_delay and fake._stopping.wait(reply.chunk_delay):
                self._cut()
                return
            self._chunk(event)
        self._end_chunked()

    # -- requests --

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": f"no route for GET {self.path}"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        if path == "/api/show":  # Loom asking for the window (Ollama's endpoint): no model request
            self._send_json(404, {"error": f"no route for POST {path}"})
            return
        if path in ("/v1/embeddings", "/embeddings"):  # deterministic, never queued or recorded
            from .embeddings import embeddings_answer

            fake.embedding_calls += 1
            self._send_json(*embeddings_answer(json.loads(raw) if raw else None))
            return
        if path == "/v1/messages":
            api = "anthropic"
        elif path in ("/v1/chat/completions", "/chat/completions"):
            api = "openai"
        elif path in ("/v1/responses", "/responses"):
            api = "responses"
        else:
            api = "unknown"
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        rejected = self._reject_reason(api, body, raw, headers)
        recorded = RecordedRequest(index=0, method="POST", path=path, api=api, headers=headers, raw=raw, body=body,
                                   rejected=rejected[1] if rejected else None)
        serial = fake._record(recorded)
        try:
            if rejected:
                status, message, param = rejected
                self._error(api, status, None, message, None, serial, param=param, body=body)
                return
            reply = fake._next_reply(recorded)
            if reply is None:
                message = (f"fake LLM server: no reply queued for request #{serial} (POST {path}); "
                           "enqueue a Reply before calling the model")
                self._error(api, 500, None, message, None, serial, body=body)
                return
            if reply.silent:
                self._hang()
                return
            if reply.gate is not None:
                while not reply.gate.wait(0.05):
                    if fake._stopping.is_set():
                        self._cut()
                        return
            self._answer(api, reply, body, raw, serial)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # The client hung up mid-answer (an aborted stream).
            self.close_connection = True
            fake._note_disconnect()

    def _reject_reason(self, api: str, body: Any, raw: bytes,
                       headers: Mapping[str, str]) -> tuple[int, str, str | None] | None:
        if api == "unknown":
            return 404, f"Not Found: {self.path}", None
        if body is None:
            return 400, "There was an error parsing the body of your request as JSON.", None
        if api == "anthropic":
            if not headers.get("x-api-key") and not headers.get("authorization"):
                return 401, "x-api-key header is required", None
            if not headers.get("anthropic-version"):
                return 400, "anthropic-version: header is required", None
            msg = validate_anthropic(body)
            return (400, msg, None) if msg else None
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            return 401, "You didn't provide an API key.", None
        if api == "responses":
            return validate_responses(body, self.server.fake._issued_reasoning())
        found = validate_openai(body)
        return (400, found[0], found[1]) if found else None

    def _error(self, api: str, status: int, kind: str | None, message: str | None, code: str | None,
               serial: int, *, param: str | None = None, body: Any = None,
               retry_after: str | None = None, extra: Mapping[str, str] | None = None) -> None:
        headers = dict(extra or {})
        if retry_after is not None:
            headers["retry-after"] = retry_after
        model = str(body.get("model", "")) if isinstance(body, dict) else ""
        if api in ("openai", "responses"):
            headers.setdefault("x-request-id", f"req_fake{serial:06d}")
            self._send_json(status, _openai_error_body(status, kind, message, code, param, model), headers)
        else:
            headers.setdefault("request-id", f"req_fake{serial:06d}")
            if status == 404 and message is None and kind is None:
                message = f"model: {model}"
            self._send_json(status, _anthropic_error_body(status, kind, message, serial), headers)

    def _answer(self, api: str, reply: Reply, body: Any, raw: bytes, serial: int) -> None:
        headers = dict(reply.headers)
        if reply.raw_body is not None and reply.status != 200:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.raw_body)))
            self.end_headers()
            self.wfile.write(reply.raw_body)
            return
        if reply.status != 200 or reply.error_type or reply.context_too_long:
            kind, message, code = reply.error_type, reply.error_message, reply.error_code
            if reply.context_too_long:
                if api in ("openai", "responses"):
                    message = message or ("This model's maximum context length is 128000 tokens. However, "
                                          "your messages resulted in 210000 tokens. Please reduce the length "
                                          "of the messages.")
                    code = code or "context_length_exceeded"
                else:
                    message = message or "prompt is too long: 210000 tokens > 200000 maximum"
            self._error(api, reply.status if reply.status != 200 else 400, kind, message, code, serial,
                        body=body, retry_after=reply.retry_after, extra=headers)
            return
        if reply.raw_body is not None:
            if api == "responses":
                self.server.fake._issue_reasoning(issued_in(reply.raw_body))
            if reply.content_type.startswith("text/event-stream"):
                self._stream(iter(_pieces_bytes(reply.raw_body, reply.chunk_size)), reply, headers)
            else:
                self.send_response(200)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.raw_body)))
                self.end_headers()
                self.wfile.write(reply.raw_body)
            return
        streaming = bool(body.get("stream"))
        if api == "responses":
            if not streaming:
                self._error(api, 400, None, "fake LLM server: only streamed responses are rendered", None, serial)
                return
            responses = ResponsesRenderer(reply, body, raw, serial)
            headers.setdefault("x-request-id", f"req_fake{serial:06d}")
            self._stream(self._issuing(responses), reply, headers)
            return
        renderer = _Renderer(reply, body, raw, serial)
        if api == "anthropic":
            headers.setdefault("request-id", f"req_fake{serial:06d}")
            if streaming:
                ping = _SSE_COMMENT if reply.keepalive_comment else _sse("ping", {"type": "ping"})
                self._stream(renderer.anthropic_events(), reply, headers, keepalive=ping)
            else:
                self._send_json(200, renderer.anthropic_json(), headers)
        else:
            headers.setdefault("x-request-id", f"req_fake{serial:06d}")
            if streaming:
                self._stream(renderer.openai_events(), reply, headers)
            else:
                self._send_json(200, renderer.openai_json(), headers)


    def _issuing(self, responses: ResponsesRenderer) -> Iterator[bytes]:
        """``responses``' events; what encrypted reasoning it hands out is issued as it goes."""
        for event in responses.events():
            self.server.fake._issue_reasoning(responses.issued)
            yield event


def _pieces_bytes(data: bytes, size: int) -> list[bytes]:
    if size <= 0:
        return [data]
    return [data[i:i + size] for i in range(0, len(data), size)]


class FakeLLMServer:
    """The fake server; ``start()`` it, script it with ``enqueue``, ``stop()`` it."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._host = host
        self._lock = threading.Condition()
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._disconnects = 0
        self._reasoning: set[str] = set()  # encrypted reasoning handed out (Responses API)
        self._stopping = threading.Event()
        self._responder: Callable[[RecordedRequest], Reply | None] | None = None
        self.embedding_calls = 0  # POST /v1/embeddings answered
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self._host, 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._stopping.clear()
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fakellm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses --

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake LLM server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def env(self, provider: str = "anthropic") -> dict[str, str]:
        """Environment variables pointing a ``loom`` subprocess at this server."""
        if provider == "openai":
            return {"OPENAI_BASE_URL": self.openai_base_url, "OPENAI_API_KEY": "sk-fake-test-key",
                    "LOOM_PROVIDER": "openai"}
        return {"ANTHROPIC_BASE_URL": self.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-fake-test-key",
                "LOOM_PROVIDER": "anthropic"}

    # -- scripting --

    def respond_with(self, responder: Callable[[RecordedRequest], Reply | None] | None) -> None:
        """Answer each request with ``responder(request)`` instead of the queue (None: the
        queue again): for clients that send at once (several processes), whose requests
        arrive in no set order, the answer can follow from what the request says."""
        self._responder = responder

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self._requests.clear()
            self._disconnects = 0

    # -- recording --

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self._requests:
                raise AssertionError("the fake LLM server has received no request")
            return self._requests[-1]

    def wait_for_requests(self, count: int, timeout: float = 60.0) -> bool:
        """Block until ``count`` requests have arrived (for subprocess tests)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    @property
    def client_disconnects(self) -> int:
        """How many answers were cut short because the client closed the connection."""
        with self._lock:
            return self._disconnects

    def wait_for_disconnects(self, count: int, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._disconnects < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    # -- used by the handler --

    def _note_disconnect(self) -> None:
        with self._lock:
            self._disconnects += 1
            self._lock.notify_all()

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            serial = len(self._requests) + 1
            self._requests.append(replace(request, index=serial))
            self._lock.notify_all()
            return serial

    def _next_reply(self, request: RecordedRequest) -> Reply | None:
        responder = self._responder
        if responder is not None:  # called outside the lock: it may block (a held answer)
            return responder(request)
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def _issue_reasoning(self, values: list[str]) -> None:
        with self._lock:
            self._reasoning.update(values)

    def _issued_reasoning(self) -> set[str]:
        with self._lock:
            return set(self._reasoning)

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def free_port() -> int:
    """A port with nothing listening on it (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


__all__ = ["FakeLLMServer", "free_port"]
