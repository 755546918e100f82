"""A real OTLP/HTTP receiver for tests: accepts the protobuf POSTs an OpenTelemetry exporter
sends to /v1/traces, /v1/metrics and /v1/logs, decodes them with opentelemetry-proto and
keeps what arrived, flattened for asserting (spans with their parent links, metric names
and points, log records with their attributes).

    with OtlpReceiver() as receiver:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        ...
        receiver.wait_for(lambda r: len(r.spans) >= 4)
"""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def plain(value: AnyValue) -> Any:
    """An OTLP attribute value as the Python value it carries."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [plain(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: plain(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root
    attributes: dict[str, Any]
    status_code: int  # 0 unset, 1 ok, 2 error
    start_ns: int
    resource: dict[str, Any]


@dataclass(frozen=True)
class ReceivedLog:
    event_name: str
    body: Any
    attributes: dict[str, Any]


@dataclass
class OtlpReceiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    metrics: dict[str, list[tuple[dict[str, Any], float]]] = field(default_factory=dict)  # name -> points
    logs: list[ReceivedLog] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                answer = receiver.take(self.path, body)
                if answer is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def take(self, path: str, body: bytes) -> bytes | None:
        """Decode one export request; the response's bytes, or None for an unknown path."""
        with self._changed:
            self.paths.append(path)
            if path == "/v1/traces":
                self._take_traces(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
            elif path == "/v1/metrics":
                self._take_metrics(ExportMetricsServiceRequest.FromString(body))
                answer = ExportMetricsServiceResponse().SerializeToString()
            elif path == "/v1/logs":
                self._take_logs(ExportLogsServiceRequest.FromString(body))
                answer = ExportLogsServiceResponse().SerializeToString()
            else:
                return None
            self._changed.notify_all()
            return answer

    def _take_traces(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(ReceivedSpan(span.name, span.trace_id.hex(), span.span_id.hex(),
                                                   span.parent_span_id.hex(), attributes(span.attributes),
                                                   span.status.code, span.start_time_unix_nano, resource))

    def _take_metrics(self, request: ExportMetricsServiceRequest) -> None:
        for resource_metrics in request.resource_metrics:
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    points = getattr(metric, kind).data_points if kind in ("sum", "gauge") else ()
                    self.metrics.setdefault(metric.name, []).extend(
                        (attributes(p.attributes), p.as_double if p.WhichOneof("value") == "as_double" else p.as_int)
                        for p in points)

    def _take_logs(self, request: ExportLogsServiceRequest) -> None:
        for resource_logs in request.resource_logs:
            for scope in resource_logs.scope_logs:
                for record in scope.log_records:
                    self.logs.append(ReceivedLog(record.event_name, plain(record.body), attributes(record.attributes)))

    def wait_for(self, ready: Callable[[OtlpReceiver], bool], timeout: float = 30) -> None:
        """Until ``ready(self)`` holds (checked at each export received)."""
        with self._changed:
            if not self._changed.wait_for(lambda: ready(self), timeout=timeout):
                raise AssertionError(f"the receiver did not get what was expected; paths so far: {self.paths}")

    def tree(self) -> str:
        """The spans as the receiver got them: indented under their parents, with key attributes."""
        by_parent: dict[str, list[ReceivedSpan]] = {}
        ids = {s.span_id for s in self.spans}
        for span in sorted(self.spans, key=lambda s: s.start_ns):
            by_parent.setdefault(span.parent_span_id if span.parent_span_id in ids else "", []).append(span)
        keys = ("gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                "gen_ai.usage.cache_read.input_tokens", "gen_ai.response.finish_reasons", "gen_ai.tool.name",
                "gen_ai.tool.call.id", "gen_ai.agent.name", "loom.tool.decision", "loom.tool.decision_source",
                "loom.tool.user_answer", "error.type")
        lines: list[str] = []

        def walk(parent: str, depth: int) -> None:
            for span in by_parent.get(parent, []):
                shown = ", ".join(f"{k}={span.attributes[k]}" for k in keys if k in span.attributes)
                lines.append(f"{'  ' * depth}{span.name}  [span {span.span_id}]  {shown}")
                walk(span.span_id, depth + 1)

        walk("", 0)
        return "\n".join(lines)


class GrpcOtlpReceiver(OtlpReceiver):
    """The same receiver over OTLP/gRPC (the collector's TraceService, MetricsService and LogsService)."""

    _grpc_server: Any = None
    _port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def __enter__(self) -> GrpcOtlpReceiver:
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        receiver = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                receiver.take("/v1/traces", request.SerializeToString())
                return ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                receiver.take("/v1/metrics", request.SerializeToString())
                return ExportMetricsServiceResponse()

        class Logs(logs_service_pb2_grpc.LogsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                receiver.take("/v1/logs", request.SerializeToString())
                return ExportLogsServiceResponse()

        self._grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self._grpc_server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self._grpc_server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), self._grpc_server)
        self._port = self._grpc_server.add_insecure_port("127.0.0.1:0")
        self._grpc_server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=None)
