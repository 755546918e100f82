"""A fake LLM server for the test suite: real Anthropic and OpenAI wire formats on 127.0.0.1."""

from .server import FakeLLMServer, RecordedRequest, Reply, ToolCall

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "ToolCall"]
