"""What a real llama-server said to Loom, replayed byte for byte (tests/fixtures/llama-server/).

The bodies were saved by ``scripts/real_server_check.py``'s proxy during a run against
llama.cpp's own server; the streams go through the real SDKs and providers via the fake
server, the window bodies through the window probe.
"""

from __future__ import annotations

from pathlib import Path

from loom_engine.providers.server_window import WindowFact, probe_server
from tests.doubles.window_servers import Answer, WindowStub

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "llama-server"


def test_the_window_from_the_servers_props() -> None:
    # Started with -c 16384 or 8192, the server caps the slot at the model's trained 8192 and
    # says so here; that is the window, not the -c the user typed.
    with WindowStub({"GET /props": Answer(body=(RECORDED / "props.json").read_bytes())}) as stub:
        answer = probe_server(stub.root, "smollm2-135m")
    assert answer.fact == WindowFact(8192, f"llama.cpp (GET /props) at {stub.root}")


def test_the_window_from_the_servers_model_list_when_props_is_gone() -> None:
    # /v1/models carries both an Ollama-style "models" list and the OpenAI "data" list with meta.
    with WindowStub({"GET /v1/models": Answer(body=(RECORDED / "v1-models.json").read_bytes())}) as stub:
        answer = probe_server(stub.root, "smollm2-135m")
    assert answer.fact is not None and answer.fact.tokens == 8192
    assert "meta.n_ctx" in answer.fact.source
