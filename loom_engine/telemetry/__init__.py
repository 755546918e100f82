"""OpenTelemetry for Loom: spans, metrics and events (logs) built from a run's event stream.

Off unless ``LOOM_ENABLE_TELEMETRY=1``; when off nothing here but :mod:`.observer` and
:mod:`.settings` is imported, and neither imports OpenTelemetry. The SDK is an optional
extra (``pip install 'loom-agent[otel]'``), imported by :mod:`.setup` only when turned on.
See docs/telemetry.md.
"""
