"""Building the exporters from the OTEL_* variables: Prometheus serves what was counted;
bad values are named; the resource takes the user's attributes over Loom's defaults."""

from __future__ import annotations

import socket
import urllib.request

import pytest

from loom_engine.events import UsageUpdated
from loom_engine.redact import Redactor
from loom_engine.telemetry.settings import TelemetryConfigError, TelemetrySettings, exporters_for, protocol_for
from loom_engine.telemetry.setup import start_telemetry
from loom_engine.usage import Usage


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_prometheus_serves_the_token_counts_for_scraping() -> None:
    port = _free_port()
    environ = {"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1",
               "OTEL_EXPORTER_PROMETHEUS_PORT": str(port)}
    telemetry = start_telemetry(TelemetrySettings(enabled=True), environ, version="9.9")
    try:
        recorder = telemetry.recorder(session_id="s-2", redactor=Redactor())
        recorder.request_started({"agent_id": "a"}, model="claude-sonnet-4-6", provider="anthropic")
        recorder.observe(UsageUpdated(usage=Usage(100, 7), total=Usage(100, 7), cost_usd=0.25, total_cost_usd=0.25,
                                      agent_id="a"))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            page = response.read().decode()
    finally:
        telemetry.shutdown()
    output = next(line for line in page.splitlines() if line.startswith("loom_token_usage") and 'type="output"' in line)
    assert 'model="claude-sonnet-4-6"' in output and 'session_id="s-2"' in output and output.endswith(" 7.0")
    assert "loom_cost_usage_USD_total" in page and "loom_session_count" in page


@pytest.mark.parametrize("environ,said", [
    ({"OTEL_LOGS_EXPORTER": "prometheus"}, "OTEL_LOGS_EXPORTER: unknown exporter 'prometheus'"),
    ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: unsupported"),
    ({"OTEL_LOGS_EXPORT_INTERVAL": "soon"}, "OTEL_LOGS_EXPORT_INTERVAL: expected a positive number"),
])
def test_a_bad_value_is_named(environ: dict[str, str], said: str) -> None:
    environ = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp", **environ}
    with pytest.raises(TelemetryConfigError, match=said):
        start_telemetry(TelemetrySettings(enabled=True), environ, version="1")


def test_exporters_and_protocols_per_signal() -> None:
    environ = {"OTEL_TRACES_EXPORTER": "otlp, console", "OTEL_METRICS_EXPORTER": "none",
               "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf"}
    assert exporters_for(environ, "traces") == ("otlp", "console")
    assert exporters_for(environ, "metrics") == () and exporters_for(environ, "logs") == ()
    assert protocol_for(environ, "traces") == "grpc" and protocol_for(environ, "logs") == "http/protobuf"
    assert protocol_for({}, "metrics") == "http/protobuf"


def test_the_switch_and_the_content_flags() -> None:
    assert TelemetrySettings.from_env({}) == TelemetrySettings()
    on = TelemetrySettings.from_env({"LOOM_ENABLE_TELEMETRY": "1", "OTEL_LOG_USER_PROMPTS": "true"})
    assert on.enabled and on.log_user_prompts and not on.log_tool_details
