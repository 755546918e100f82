"""Stubs of the endpoints local model servers say their context window on.

One tiny HTTP server on 127.0.0.1 answers fixed JSON per route and records what it was
asked; the constructors below give each real server's endpoint in its own shape (the
field names of llama.cpp's ``/props`` and ``/v1/models``, vLLM's ``/v1/models``, Ollama's
``/api/show``, LM Studio's ``/api/v0/models/<model>``). A route may also hang (a server
that accepts and never answers) until the stub stops.

    with WindowStub(llama_cpp(n_ctx=4096)) as stub:
        probe_server(stub.root, "smollm2")
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: Any = None  # JSON-encoded; bytes are sent as they are
    hang: bool = False


@dataclass(frozen=True)
class Asked:
    method: str
    path: str
    body: Any
    headers: Mapping[str, str]


Routes = Mapping[str, Answer]  # "GET /props" -> Answer


def llama_cpp(n_ctx: int, n_ctx_train: int = 131_072) -> Routes:
    return {"GET /props": Answer(body={"default_generation_settings": {"n_ctx": n_ctx, "params": {}},
                                       "total_slots": 1, "model_path": "smollm2.gguf"}),
            "GET /v1/models": Answer(body={"object": "list", "data": [
                {"id": "smollm2.gguf", "object": "model", "owned_by": "llamacpp",
                 "meta": {"n_ctx": n_ctx, "n_ctx_train": n_ctx_train, "n_vocab": 49152}}]})}


def vllm(model: str, max_model_len: int) -> Routes:
    return {"GET /v1/models": Answer(body={"object": "list", "data": [
        {"id": "other-model", "object": "model", "max_model_len": 999},
        {"id": model, "object": "model", "owned_by": "vllm", "root": model, "max_model_len": max_model_len}]})}


def ollama(context_length: int, num_ctx: int | None = None, *, loaded: tuple[str, int] | None = None) -> Routes:
    """``loaded``: (model, window) of a model loaded in memory, as ``GET /api/ps`` lists it."""
    parameters = 'stop "<|im_end|>"\ntemperature 0.7' + (f"\nnum_ctx {num_ctx}" if num_ctx else "")
    running = [{"name": loaded[0], "model": loaded[0], "size": 6591830464, "size_vram": 5333539264,
                "expires_at": "2026-11-26T18:30:00Z", "context_length": loaded[1]}] if loaded else []
    return {"GET /api/ps": Answer(body={"models": running}), "POST /api/show": Answer(body={
        "modelfile": "FROM qwen", "parameters": parameters, "template": "{{ .Prompt }}",
        "details": {"family": "qwen2", "parameter_size": "7.6B"},
        "model_info": {"general.architecture": "qwen2", "general.parameter_count": 7615616512,
                       "qwen2.context_length": context_length, "qwen2.embedding_length": 3584}})}


def lm_studio(model: str, max_context_length: int, loaded_context_length: int | None = None) -> Routes:
    entry: dict[str, Any] = {"id": model, "object": "model", "type": "llm", "arch": "qwen2",
                             "state": "loaded" if loaded_context_length else "not-loaded",
                             "max_context_length": max_context_length}
    if loaded_context_length:
        entry["loaded_context_length"] = loaded_context_length
    return {f"GET /api/v0/models/{model}": Answer(body=entry),
            # LM Studio's OpenAI-compatible list says nothing about windows.
            "GET /v1/models": Answer(body={"object": "list", "data": [{"id": model, "object": "model"}]})}


class WindowStub:
    """A local HTTP server answering ``routes``; anything else is a 404."""

    def __init__(self, routes: Routes) -> None:
        self.routes = dict(routes)
        self.asked: list[Asked] = []
        self._stopping = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._reply("GET")

            def do_POST(self) -> None:
                self._reply("POST")

            def _reply(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                stub.asked.append(Asked(method, self.path, body, dict(self.headers.items())))
                answer = stub.routes.get(f"{method} {self.path}", Answer(404, {"error": "Not Found"}))
                if answer.hang:
                    stub._stopping.wait()
                    return
                data = answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> WindowStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WindowStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
