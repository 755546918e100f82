"""Asking a local server for its context window: each server's endpoint, and the fallbacks."""

from __future__ import annotations

import pytest

from loom_engine.providers.server_window import (
    UNKNOWN_NOTE_PREFIX,
    ServerWindows,
    WindowFact,
    choose_window,
    probe_server,
    probe_target,
    window_in_error,
)
from tests.doubles.fake_llm.server import free_port
from tests.doubles.window_servers import Answer, WindowStub, llama_cpp, lm_studio, ollama, vllm


@pytest.mark.parametrize(("url", "root"), [
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
    ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
    ("http://localhost:11434", "http://localhost:11434"),
    ("https://user:secret@gpu.example:8000/proxy/v1", "https://gpu.example:8000/proxy"),
])
def test_a_custom_base_url_is_probed_at_its_root(url: str, root: str) -> None:
    assert probe_target(url) == root


@pytest.mark.parametrize("url", [None, "", "https://api.openai.com/v1", "https://api.anthropic.com",
                                 "ftp://host/v1", "not a url"])
def test_official_apis_and_non_urls_are_never_probed(url: str | None) -> None:
    assert probe_target(url) is None


def test_llama_cpp_props() -> None:
    with WindowStub(llama_cpp(n_ctx=4096)) as stub:
        answer = probe_server(stub.root, "anything")
    assert answer.fact == WindowFact(4096, f"llama.cpp (GET /props) at {stub.root}")
    assert [a.path for a in stub.asked] == ["/props"]


def test_llama_cpp_models_meta_when_props_is_missing() -> None:
    routes = dict(llama_cpp(n_ctx=8192))
    del routes["GET /props"]
    with WindowStub(routes) as stub:
        answer = probe_server(stub.root, "whatever-the-user-typed")
    assert answer.fact is not None and answer.fact.tokens == 8192  # n_ctx, not the trained 131072
    assert "meta.n_ctx" in answer.fact.source


def test_vllm_max_model_len_of_the_served_model() -> None:
    with WindowStub(vllm("Qwen/Qwen2.5-7B-Instruct", 32768)) as stub:
        answer = probe_server(stub.root, "Qwen/Qwen2.5-7B-Instruct")
    assert answer.fact is not None and answer.fact.tokens == 32768
    assert answer.fact.source.startswith("vLLM (GET /v1/models max_model_len)")


def test_ollama_num_ctx_parameter_wins_over_the_trained_length() -> None:
    with WindowStub(ollama(context_length=32768, num_ctx=8192)) as stub:
        answer = probe_server(stub.root, "qwen2.5-coder:7b")
    assert answer.fact is not None and answer.fact.tokens == 8192
    assert "num_ctx" in answer.fact.source
    show = [a for a in stub.asked if a.path == "/api/show"]
    assert show and show[0].method == "POST" and show[0].body == {"model": "qwen2.5-coder:7b"}


def test_ollama_model_info_context_length() -> None:
    with WindowStub(ollama(context_length=32768)) as stub:
        answer = probe_server(stub.root, "qwen2.5-coder:7b")
    assert answer.fact is not None and answer.fact.tokens == 32768
    assert "qwen2.context_length" in answer.fact.source


def test_ollama_a_loaded_models_window_beats_the_trained_length() -> None:
    with WindowStub(ollama(context_length=32768, loaded=("qwen2.5-coder:7b", 4096))) as stub:
        answer = probe_server(stub.root, "qwen2.5-coder:7b")
    assert answer.fact is not None and answer.fact.tokens == 4096
    assert "GET /api/ps" in answer.fact.source


@pytest.mark.parametrize(("loaded", "expected", "field"), [(16384, 16384, "loaded_context_length"),
                                                           (None, 131072, "max_context_length")])
def test_lm_studio_model(loaded: int | None, expected: int, field: str) -> None:
    with WindowStub(lm_studio("qwen/qwen3-8b", 131072, loaded)) as stub:
        answer = probe_server(stub.root, "qwen/qwen3-8b")
    assert answer.fact is not None and answer.fact.tokens == expected and field in answer.fact.source
    assert "/api/v0/models/qwen/qwen3-8b" in [a.path for a in stub.asked]


def test_a_dead_server_gives_a_note_and_the_default() -> None:
    root = f"http://127.0.0.1:{free_port()}"
    answer = probe_server(root, "local")
    assert answer.fact is None and answer.note.startswith(f"no answer from {root}")
    windows = ServerWindows(root)
    windows.ensure("local")
    assert windows.wait("local", 10)
    chosen = choose_window("local", None, windows)
    assert chosen.tokens == 128_000
    assert chosen.source.startswith(UNKNOWN_NOTE_PREFIX) and f"no answer from {root}" in chosen.source


def test_an_odd_server_gives_a_note() -> None:
    routes = {"GET /props": Answer(body=b"<html>hello</html>"),
              "GET /v1/models": Answer(body={"data": "not a list"}),
              "POST /api/show": Answer(body={"model_info": {"general.architecture": "x", "x.context_length": -1}})}
    with WindowStub(routes) as stub:
        answer = probe_server(stub.root, "m")
    assert answer.fact is None and "does not say its window" in answer.note
    assert len(stub.asked) == 4  # every kind was tried


def test_a_hanging_server_gives_up_at_the_deadline() -> None:
    with WindowStub({"GET /props": Answer(hang=True)}) as stub:
        answer = probe_server(stub.root, "m", timeout=0.3)
    assert answer.fact is None and stub.root in answer.note


def test_the_setting_wins_and_known_models_use_the_table() -> None:
    windows = ServerWindows(None)
    windows.learn("local", 4096, "the server's context-overflow error")
    assert choose_window("local", 50_000, windows) == WindowFact(50_000, "the context_window setting")
    assert choose_window("local", None, windows) == WindowFact(4096, "the server's context-overflow error")
    assert choose_window("claude-sonnet-4-5", None, None) == WindowFact(200_000, "Loom's model table")


def test_a_learned_window_beats_the_probed_one() -> None:
    with WindowStub(ollama(context_length=32768)) as stub:
        windows = ServerWindows(stub.root)
        windows.ensure("m")
        assert windows.wait("m", 10)
    assert choose_window("m", None, windows).tokens == 32768
    windows.learn("m", 2048, "the server's context-overflow error")
    assert choose_window("m", None, windows).tokens == 2048
    assert choose_window("other", None, windows).tokens == 128_000  # asked about one model only


def test_the_window_an_overflow_error_names() -> None:
    llama = {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                       "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}
    assert window_in_error(llama) == 4096
    assert window_in_error(llama["error"]) == 4096  # the OpenAI SDK unwraps "error"
    assert window_in_error(None, "request (5000 tokens) exceeds the available context size (4096 tokens)") == 4096
    assert window_in_error({}, "This model's maximum context length is 32768 tokens. However, ...") == 32768
    assert window_in_error({"error": {"message": "prompt is too long"}}, "prompt is too long") is None


def test_a_model_client_asks_about_its_own_model_and_a_switched_one() -> None:
    from loom_engine.config import AgentConfig
    from loom_engine.model_client import ModelClient
    from loom_engine.providers.scripted import ScriptedProvider

    with WindowStub(ollama(context_length=32768, num_ctx=8192)) as stub:
        windows = ServerWindows(stub.root)
        client = ModelClient(ScriptedProvider([]), AgentConfig(model="sub-model"), system="", tools=(),
                             server_windows=windows)
        assert windows.wait("sub-model", 10)
        client.set_model("other:7b")
        assert windows.wait("other:7b", 10)
        pinned = ModelClient(ScriptedProvider([]), AgentConfig(model="pinned", context_window=2048), system="",
                             tools=(), server_windows=windows)
    assert client.context_window == 8192 and "num_ctx" in client.window.source
    shown = [a.body["model"] for a in stub.asked if a.path == "/api/show"]
    assert shown == ["sub-model", "other:7b"]  # the pinned model's setting decides: not asked
    assert pinned.context_window == 2048
