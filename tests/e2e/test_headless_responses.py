"""`loom run` on OpenAI's own API speaks the Responses API, statelessly, end to end: the
installed command against the fake server standing in for api.openai.com (see
tests/doubles/official_openai.py). A session it leaves continues over Chat Completions
against a custom URL, and a reply cut at the length limit exits 4 on this wire too."""

from __future__ import annotations

import json
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall
from tests.doubles.loom_command import loom, loom_env
from tests.doubles.official_openai import official_openai_env


def test_a_run_on_the_official_api_goes_over_responses_and_continues_over_chat(
        workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    official = loom_env(tmp_path, fake_llm, **official_openai_env(tmp_path, fake_llm))
    fake_llm.enqueue(Reply(thinking="Read the README first.",
                           tool_calls=(ToolCall("read_file", {"path": "README.md"}, "call_readme"),)),
                     Reply.text("The README says hello."))
    done = loom(["run", "--model", "gpt-5-codex", "-o", "json", "what does the README say?"], workspace, official)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "The README says hello."

    first, second = fake_llm.requests
    assert [first.path, second.path] == ["/v1/responses", "/v1/responses"]
    assert first.rejected is None and second.rejected is None, (first.rejected, second.rejected)
    assert first.body["store"] is False and first.body["include"] == ["reasoning.encrypted_content"]
    assert first.body["prompt_cache_key"] == second.body["prompt_cache_key"] == result["session_id"]
    reasoning = [item for item in second.body["input"] if item["type"] == "reasoning"]
    assert len(reasoning) == 1 and reasoning[0]["summary"][0]["text"] == "Read the README first."
    assert [i["type"] for i in second.body["input"]] == ["message", "reasoning", "function_call",
                                                         "function_call_output"]
    # The fake accepts only encrypted reasoning it issued, byte for byte; the session keeps it.
    (session_file,) = (tmp_path / "data" / "sessions").rglob("*.jsonl")
    kept = [part["provider_data"]["item"] for line in session_file.read_text().splitlines()
            if json.loads(line)["type"] == "message"
            for part in json.loads(line)["message"]["parts"] if part["type"] == "thinking"]
    assert [item["encrypted_content"] for item in kept] == [reasoning[0]["encrypted_content"]]

    # The same session, continued against a custom URL: Chat Completions, every call
    # still paired with its result, the encrypted reasoning left behind.
    fake_llm.enqueue(Reply.text("Nothing else."))
    custom = loom_env(tmp_path, fake_llm, LOOM_PROVIDER="openai", OPENAI_BASE_URL=fake_llm.openai_base_url)
    more = loom(["run", "--continue", "--model", "gpt-5-codex", "anything else?"], workspace, custom)
    assert more.returncode == 0, more.stderr
    third = fake_llm.last_request
    assert third.path == "/v1/chat/completions" and third.rejected is None, third.rejected
    assert reasoning[0]["encrypted_content"] not in third.raw.decode()
    calls = [c["id"] for m in third.body["messages"] for c in m.get("tool_calls") or ()]
    assert calls == ["call_readme"]


def test_a_reply_cut_at_the_length_limit_exits_4(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply(text="half an answer", stop_reason="max_tokens"))
    done = loom(["run", "--model", "gpt-5-codex", "write a lot"], workspace,
                loom_env(tmp_path, fake_llm, **official_openai_env(tmp_path, fake_llm)))
    assert fake_llm.last_request.path == "/v1/responses"
    assert done.returncode == 4, done.stderr
    assert done.stdout == "half an answer\n"
    assert "cut off at the output limit" in done.stderr
