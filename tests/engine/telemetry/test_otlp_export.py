"""`loom run` with telemetry on, against a real OTLP receiver: the trace tree of a two-tool
run, the metrics and events, privacy by default; and with it off, nothing sent or imported."""

from __future__ import annotations

import re
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.fake_llm.scenario import ToolCall
from tests.doubles.loom_command import LOOM, loom, loom_env
from tests.doubles.otlp_receiver import GrpcOtlpReceiver, OtlpReceiver, ReceivedSpan

PROMPT = "look at notes.txt and print the trace parent"
SECRET = "sk-ant-api03-" + "A" * 90  # a key shape the redactor knows


def _two_tool_run(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(
        Reply(tool_calls=(ToolCall("read_file", {"path": "notes.txt"}, id="toolu_read"),),
              usage={"input_tokens": 120, "output_tokens": 10, "cache_read_input_tokens": 40}),
        Reply(tool_calls=(ToolCall("bash", {"command": "printenv TRACEPARENT"}, id="toolu_bash"),),
              usage={"input_tokens": 150, "output_tokens": 12}),
        Reply(text="Done.", usage={"input_tokens": 30, "output_tokens": 5}))


def _telemetry_env(tmp_path: Path, fake_llm: FakeLLMServer, receiver: OtlpReceiver, **extra: str) -> dict[str, str]:
    telemetry = {"LOOM_ENABLE_TELEMETRY": "1", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
                 "OTEL_LOGS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                 "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_RESOURCE_ATTRIBUTES": "team=platform",
                 "NO_PROXY": "127.0.0.1"}
    return loom_env(tmp_path, fake_llm, **(telemetry | extra))


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    return workspace


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, f"{name}: {[s.name for s in spans]}"
    return found[0]


def test_a_two_tool_run_exports_its_trace_tree_metrics_and_events(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    _two_tool_run(fake_llm)
    with OtlpReceiver() as receiver:
        done = loom(["run", PROMPT + " " + SECRET, "--allow", "bash(printenv:*)"], _workspace(tmp_path),
                    _telemetry_env(tmp_path, fake_llm, receiver))
        assert done.returncode == 0, done.stderr
        # Everything was flushed before the process ended: no waiting for an interval.
        spans = receiver.spans
        Path("/tmp/otel-trace-tree.txt").write_text(receiver.tree() + "\n")

    agent = _one(spans, "invoke_agent loom")
    chats = sorted((s for s in spans if s.name == "chat claude-sonnet-4-6"), key=lambda s: s.start_ns)
    read, bash = _one(spans, "execute_tool read_file"), _one(spans, "execute_tool bash")
    assert len(chats) == 3 and len(spans) == 6
    assert agent.parent_span_id == "" and agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert {s.parent_span_id for s in [*chats, read, bash]} == {agent.span_id}
    assert {s.trace_id for s in spans} == {agent.trace_id}
    assert chats[0].start_ns < read.start_ns < chats[1].start_ns < bash.start_ns < chats[2].start_ns
    first = chats[0].attributes
    assert first["gen_ai.operation.name"] == "chat" and first["gen_ai.provider.name"] == "anthropic"
    assert first["gen_ai.request.model"] == "claude-sonnet-4-6"
    assert first["gen_ai.usage.input_tokens"] == 160 and first["gen_ai.usage.output_tokens"] == 10
    assert first["gen_ai.usage.cache_read.input_tokens"] == 40
    assert first["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert chats[2].attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert read.attributes["gen_ai.tool.call.id"] == "toolu_read"
    assert {"gen_ai.tool.name": "bash", "loom.tool.decision": "accept", "loom.tool.decision_source": "config",
            "loom.tool.success": True}.items() <= bash.attributes.items()
    assert "gen_ai.tool.call.arguments" not in bash.attributes  # no tool details unless asked
    assert agent.resource["service.name"] == "loom" and agent.resource["team"] == "platform"

    # The command ran inside the bash span's trace context (its output went back to the model).
    sent = str(fake_llm.requests[2].body["messages"])
    seen = re.search(rf"00-{agent.trace_id}-{bash.span_id}-0[13]\b", sent)  # sampled (+ random id)
    assert seen, sent[-400:]
    with Path("/tmp/otel-trace-tree.txt").open("a") as tree:
        tree.write(f"(the bash command printed TRACEPARENT={seen[0]})\n")

    tokens = receiver.metrics["loom.token.usage"]
    assert any({"type": "cacheRead", "model": "claude-sonnet-4-6"}.items() <= point.items() for point, _ in tokens)
    assert sum(v for a, v in tokens if a["type"] == "input") == 300
    assert {"loom.session.count", "loom.tool.decision", "loom.active_time.total"} <= receiver.metrics.keys()
    names = [log.event_name for log in receiver.logs]
    assert names.count("loom.api_request") == 3 and names.count("loom.tool_result") == 2
    prompt = next(log for log in receiver.logs if log.event_name == "loom.user_prompt")
    assert "prompt" not in prompt.attributes and prompt.attributes["prompt_length"] == len(PROMPT) + 1 + len(SECRET)
    assert all("printenv" not in str(log.attributes) for log in receiver.logs)


def test_prompts_and_tool_details_are_sent_only_when_asked_and_redacted(tmp_path: Path,
                                                                        fake_llm: FakeLLMServer) -> None:
    _two_tool_run(fake_llm)
    with OtlpReceiver() as receiver:
        env = _telemetry_env(tmp_path, fake_llm, receiver, OTEL_LOG_USER_PROMPTS="1", OTEL_LOG_TOOL_DETAILS="1",
                             OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none")
        done = loom(["run", PROMPT + " " + SECRET, "--allow", "bash(printenv:*)"], _workspace(tmp_path), env)
        assert done.returncode == 0, done.stderr
        assert receiver.spans == [] and receiver.metrics == {}  # "none" sends nothing of those
    prompt = next(log for log in receiver.logs if log.event_name == "loom.user_prompt")
    assert prompt.attributes["prompt"].startswith(PROMPT) and SECRET not in prompt.attributes["prompt"]
    bash = next(log for log in receiver.logs if log.event_name == "loom.tool_result"
                and log.attributes["tool_name"] == "bash")
    assert "printenv TRACEPARENT" in bash.attributes["tool_parameters"]
    assert bash.attributes["tool_result"].startswith("00-")


def test_with_telemetry_off_nothing_is_sent_and_the_sdk_is_not_imported(tmp_path: Path,
                                                                         fake_llm: FakeLLMServer) -> None:
    _two_tool_run(fake_llm)
    with OtlpReceiver() as receiver:
        env = _telemetry_env(tmp_path, fake_llm, receiver)
        env.pop("LOOM_ENABLE_TELEMETRY")
        # -X importtime lists on stderr every module the process imported.
        import subprocess

        done = subprocess.run([*LOOM[:1], "-X", "importtime", *LOOM[1:], "run", PROMPT, "--allow",
                               "bash(printenv:*)"], cwd=_workspace(tmp_path), env=env, capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "import time:" in done.stderr and "loom_engine.agent" in done.stderr
        # The anthropic SDK imports opentelemetry-api itself (a dependency of its own);
        # Loom's telemetry, the OpenTelemetry SDK and its exporters stay unloaded.
        imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
        assert not [m for m in imported if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter",
                                                         "opentelemetry.proto", "loom_engine.telemetry.setup",
                                                         "loom_engine.telemetry.recorder", "prometheus_client"))]
        assert receiver.paths == []
    # No TRACEPARENT of Loom's reached the command either.
    assert "00-" not in str(fake_llm.requests[2].body["messages"][-1])


def test_a_bad_variable_is_named_and_the_run_goes_on(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    # (the other bad values: tests/engine/telemetry/test_setup.py)
    fake_llm.enqueue(Reply.text("Fine."))
    with OtlpReceiver() as receiver:
        env = _telemetry_env(tmp_path, fake_llm, receiver, OTEL_TRACES_EXPORTER="zipkin")
        done = loom(["run", "hi"], _workspace(tmp_path), env)
        assert receiver.paths == []
    assert done.returncode == 0 and "Fine." in done.stdout
    assert "loom: warning: telemetry off: OTEL_TRACES_EXPORTER: unknown exporter 'zipkin'" in done.stderr


def test_traces_go_over_grpc_when_the_protocol_says(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("Fine."))
    with GrpcOtlpReceiver() as receiver:
        env = _telemetry_env(tmp_path, fake_llm, receiver, OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
                             OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none", OTEL_SERVICE_NAME="ci-agent")
        done = loom(["run", "hi"], _workspace(tmp_path), env)
        assert done.returncode == 0, done.stderr
    assert sorted(s.name for s in receiver.spans) == ["chat claude-sonnet-4-6", "invoke_agent loom"]
    assert receiver.paths == ["/v1/traces"] and receiver.spans[0].resource["service.name"] == "ci-agent"


def test_ctrl_c_mid_request_still_sends_the_spans(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    import signal
    import subprocess

    fake_llm.enqueue(Reply(text="x" * 200, stall_after=3))  # the answer starts, then nothing more comes
    with OtlpReceiver() as receiver:
        process = subprocess.Popen([*LOOM, "run", "hi"], cwd=_workspace(tmp_path),
                                   env=_telemetry_env(tmp_path, fake_llm, receiver), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert fake_llm.wait_for_requests(1, timeout=60)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 130, err
    agent, chat = _one(receiver.spans, "invoke_agent loom"), _one(receiver.spans, "chat claude-sonnet-4-6")
    assert agent.attributes["error.type"] == chat.attributes["error.type"] == "aborted"
    assert chat.parent_span_id == agent.span_id and agent.status_code == 2
