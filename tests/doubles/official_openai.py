"""Makes a `loom` subprocess take the fake server for OpenAI's own service, so that its
official-URL path (the Responses API) can be run end to end.

A ``sitecustomize`` on the subprocess's ``PYTHONPATH`` adds the fake server's host to
what :func:`loom_engine.providers.endpoints.is_vendor_url` counts as OpenAI's, when
``LOOM_TEST_OPENAI_HOST`` names it. Nothing in Loom reads that variable: only this file,
which exists only in the test suite and is loaded only when a test puts it on the path,
so a project (its settings, its files) has no way to use it.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]
HOST_VARIABLE = "LOOM_TEST_OPENAI_HOST"

_HOOK = f'''
import os
_host = os.environ.get({HOST_VARIABLE!r})
if _host:
    from loom_engine.providers import endpoints
    endpoints.VENDOR_DOMAINS["openai"] = _host
'''


def official_openai_env(tmp_path: Path, server: FakeLLMServer) -> dict[str, str]:
    """Environment for `loom` in which ``server`` is OpenAI's own API (OPENAI_BASE_URL
    points at it, and its host counts as openai.com's)."""
    hook = tmp_path / "official-openai-hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(_HOOK)
    code = os.environ.get("PYTHONPATH") or str(ROOT)
    return {HOST_VARIABLE: "127.0.0.1", "PYTHONPATH": os.pathsep.join((str(hook), code)),
            "OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "sk-official-test-key",
            "LOOM_PROVIDER": "openai",
            "LOOM_WARM": "0"}  # the hook works in a fresh interpreter only, not in a warm child
