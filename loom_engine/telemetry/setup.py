"""Building the OpenTelemetry SDK's providers from the environment (only when telemetry is on).

Loom writes only the glue: which exporter each signal goes to (``OTEL_*_EXPORTER``) and
over which protocol. The SDK's own code reads the rest — endpoints, headers, timeouts,
certificates (``OTEL_EXPORTER_OTLP_*``), the metric interval
(``OTEL_METRIC_EXPORT_INTERVAL``), resource attributes and service name — except
``OTEL_LOGS_EXPORT_INTERVAL`` (Claude Code's name for the log batch delay), mapped here.

Every OpenTelemetry import is inside a function: the engine must not load the SDK at
start-up, and with telemetry off nothing calls these.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .settings import TelemetryConfigError, TelemetrySettings, exporters_for, milliseconds, protocol_for

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import LogRecordExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from ..redact import Redactor
    from .recorder import TelemetryRecorder

DEFAULT_PROMETHEUS_PORT = 9464
DEFAULT_LOGS_EXPORT_INTERVAL_MS = 5000


@dataclass
class Telemetry:
    """The SDK's three providers for this process and the recorders made from them."""

    settings: TelemetrySettings
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    logger_provider: LoggerProvider
    version: str
    recorders: list[TelemetryRecorder] = field(default_factory=list)
    _closed: bool = False

    def recorder(self, *, session_id: str | None, redactor: Redactor) -> TelemetryRecorder:
        """An observer for one agent tree (its sub-agents share it)."""
        from .recorder import TelemetryRecorder

        made = TelemetryRecorder(self, session_id=session_id, redactor=redactor)
        self.recorders.append(made)
        return made

    def shutdown(self) -> None:
        """End what is still open (a run cut short) and send everything buffered; once."""
        if self._closed:
            return
        self._closed = True
        for recorder in self.recorders:
            recorder.close_open("the process ended before the run did")
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()
        self.meter_provider.shutdown()


def start_telemetry(settings: TelemetrySettings, environ: Mapping[str, str], *, version: str) -> Telemetry:
    """The providers ``environ`` asks for; TelemetryConfigError names a bad variable, and
    says so when the optional extra is not installed."""
    try:
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        raise TelemetryConfigError("LOOM_ENABLE_TELEMETRY is set but OpenTelemetry is not installed "
                                   "(pip install 'loom-agent[otel]')") from None
    resource = _resource(version)
    tracer_provider = TracerProvider(resource=resource)
    for name in exporters_for(environ, "traces"):
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        tracer_provider.add_span_processor(BatchSpanProcessor(_span_exporter(name, environ)))
    readers = [_metric_reader(name, environ) for name in exporters_for(environ, "metrics")]
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    logger_provider = LoggerProvider(resource=resource)
    # Claude Code's 5 s unless set (the SDK's own OTEL_BLRP_SCHEDULE_DELAY is honoured too).
    delay = milliseconds(environ, "OTEL_LOGS_EXPORT_INTERVAL") or \
        (None if environ.get("OTEL_BLRP_SCHEDULE_DELAY") else DEFAULT_LOGS_EXPORT_INTERVAL_MS)
    for name in exporters_for(environ, "logs"):
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        exporter = _log_exporter(name, environ)
        processor = BatchLogRecordProcessor(exporter, schedule_delay_millis=delay) if delay else \
            BatchLogRecordProcessor(exporter)
        logger_provider.add_log_record_processor(processor)
    # An unreachable collector is the SDK's to retry and log; never a traceback on the user's screen.
    logging.getLogger("opentelemetry").setLevel(logging.ERROR)
    return Telemetry(settings, tracer_provider, meter_provider, logger_provider, version)


def _resource(version: str) -> Resource:
    """OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (read by the SDK) over Loom's defaults."""
    from opentelemetry.sdk.resources import Resource

    detected = Resource.create({})
    resource = Resource({"service.version": version}).merge(detected)
    if str(detected.attributes.get("service.name", "")).startswith("unknown_service"):  # the SDK's default
        resource = resource.merge(Resource({"service.name": "loom"}))
    return resource


def _span_exporter(name: str, environ: Mapping[str, str]) -> SpanExporter:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if protocol_for(environ, "traces") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

        return GrpcSpans()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def _log_exporter(name: str, environ: Mapping[str, str]) -> LogRecordExporter:
    if name == "console":
        from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter

        return ConsoleLogRecordExporter()
    if protocol_for(environ, "logs") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs

        return GrpcLogs()
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    return OTLPLogExporter()


def _metric_reader(name: str, environ: Mapping[str, str]) -> MetricReader:
    if name == "prometheus":
        return _prometheus_reader(environ)
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader

    if name == "console":
        return PeriodicExportingMetricReader(ConsoleMetricExporter())
    if protocol_for(environ, "metrics") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics

        return PeriodicExportingMetricReader(GrpcMetrics())
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return PeriodicExportingMetricReader(OTLPMetricExporter())


def _prometheus_reader(environ: Mapping[str, str]) -> MetricReader:
    """Metrics served for scraping on OTEL_EXPORTER_PROMETHEUS_HOST:PORT (localhost:9464)."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import start_http_server

    port_text = environ.get("OTEL_EXPORTER_PROMETHEUS_PORT", "").strip() or str(DEFAULT_PROMETHEUS_PORT)
    if not port_text.isdigit() or not 0 <= int(port_text) < 65536:
        raise TelemetryConfigError(f"OTEL_EXPORTER_PROMETHEUS_PORT: not a port: {port_text!r}")
    host = environ.get("OTEL_EXPORTER_PROMETHEUS_HOST", "").strip() or "localhost"
    try:
        start_http_server(int(port_text), addr=host)
    except OSError as error:
        raise TelemetryConfigError(f"cannot serve Prometheus metrics on {host}:{port_text}: "
                                   f"{error.strerror or error}") from None
    return PrometheusMetricReader()
