"""create_provider: names, keys and base URLs from the environment, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loom_engine.providers.anthropic_provider import AnthropicProvider
from loom_engine.providers.base import Provider, ProviderError
from loom_engine.providers.factory import create_provider
from loom_engine.providers.openai_provider import PLACEHOLDER_KEY, OpenAIProvider
from loom_engine.providers.scripted import ScriptedProvider

ROOT = Path(__file__).resolve().parents[3]


def config_error(name: str, **kw: object) -> str:
    with pytest.raises(ProviderError) as info:
        create_provider(name, **kw)  # type: ignore[arg-type]
    assert info.value.kind == "config"
    assert "\n" not in info.value.message
    return info.value.message


def test_unknown_provider() -> None:
    assert config_error("gemini", env={}) == "unknown provider 'gemini' (choose anthropic, openai, scripted)"


def test_anthropic_from_environment() -> None:
    provider = create_provider("Anthropic", env={"ANTHROPIC_API_KEY": "sk-ant-1",
                                                 "ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"})
    assert isinstance(provider, AnthropicProvider) and isinstance(provider, Provider)
    assert provider.base_url == "http://127.0.0.1:8080"


def test_explicit_arguments_beat_the_environment() -> None:
    provider = create_provider("anthropic", api_key="explicit", base_url="https://proxy.example/anthropic",
                               env={"ANTHROPIC_BASE_URL": "http://ignored:1"})
    assert isinstance(provider, AnthropicProvider)
    assert provider.base_url == "https://proxy.example/anthropic"


def test_missing_anthropic_key_names_the_variable() -> None:
    message = config_error("anthropic", env={})
    assert message.startswith("ANTHROPIC_API_KEY is not set; export it")


def test_missing_anthropic_key_for_anthropic_itself_even_when_named() -> None:
    message = config_error("anthropic", env={"ANTHROPIC_BASE_URL": "https://api.anthropic.com"})
    assert message.startswith("ANTHROPIC_API_KEY is not set") and "ANTHROPIC_BASE_URL" in message


def test_custom_anthropic_endpoint_needs_no_key() -> None:
    provider = create_provider("anthropic", env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"})
    assert isinstance(provider, AnthropicProvider)
    assert provider.base_url == "http://127.0.0.1:8080" and provider._api_key == PLACEHOLDER_KEY


def test_missing_openai_key_for_openai_itself() -> None:
    message = config_error("openai", env={})
    assert message.startswith("OPENAI_API_KEY is not set") and "OPENAI_BASE_URL" in message


def test_local_openai_compatible_server_needs_no_key() -> None:
    provider = create_provider("openai", env={"OPENAI_BASE_URL": "http://localhost:11434/v1"})
    assert isinstance(provider, OpenAIProvider)
    assert provider.base_url == "http://localhost:11434/v1" and not provider.official
    assert provider._api_key == PLACEHOLDER_KEY


@pytest.mark.parametrize(("url", "source"), [
    ("localhost:11434/v1", "OPENAI_BASE_URL"),
    ("ftp://example.com", "OPENAI_BASE_URL"),
    ("http://", "OPENAI_BASE_URL"),
    ("http://host:notaport/v1", "OPENAI_BASE_URL"),
])
def test_bad_base_url_from_environment(url: str, source: str) -> None:
    message = config_error("openai", env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k"})
    assert url in message and source in message


def test_bad_explicit_base_url() -> None:
    message = config_error("anthropic", api_key="k", base_url="api.anthropic.com", env={})
    assert "'api.anthropic.com'" in message and "base_url setting" in message


def test_scripted_needs_a_script(tmp_path: Path) -> None:
    assert "LOOM_SCRIPT" in config_error("scripted", env={})
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    assert isinstance(create_provider("scripted", env={"LOOM_SCRIPT": str(script)}), ScriptedProvider)
    assert isinstance(create_provider("scripted", script=[{"text": "hi"}], env={}), ScriptedProvider)
    assert "cannot read script" in config_error("scripted", script=str(tmp_path / "missing.json"), env={})


def test_sdks_are_imported_lazily() -> None:
    """Importing and building providers must not load the SDKs (the TUI's first frame waits for nothing)."""
    code = (
        "import sys\n"
        "import loom_engine\n"
        "import loom_engine.providers.factory as factory\n"
        "import loom_engine.providers.anthropic_provider, loom_engine.providers.openai_provider\n"
        "import loom_engine.providers.scripted, loom_engine.providers.retry, loom_engine.providers.models\n"
        "factory.create_provider('anthropic', api_key='k')\n"
        "factory.create_provider('openai', api_key='k')\n"
        "factory.create_provider('scripted', script=[{'text': 'x'}])\n"
        "print(sorted(m for m in ('anthropic', 'openai', 'httpx2', 'httpx') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
