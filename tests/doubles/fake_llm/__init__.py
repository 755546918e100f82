"""A fake LLM server for the test suite: real Anthropic and OpenAI wire formats on 127.0.0.1.

``scenario`` is what a scripted answer is (:class:`Reply`, :class:`ToolCall`), ``validation``
rejects malformed requests as the real APIs do, ``rendering`` turns a reply into the wire
format, ``responses_api`` does both for OpenAI's Responses API, ``server`` is the HTTP
server, ``fixtures`` the ``fake_llm`` pytest fixture.
"""

from .scenario import RecordedRequest, Reply, ToolCall, without_cache_control
from .server import FakeLLMServer, free_port
from .validation import validate_anthropic, validate_openai

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "ToolCall", "free_port", "validate_anthropic",
           "validate_openai", "without_cache_control"]
